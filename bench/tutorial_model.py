"""The PyTorch tutorial's attention model, the yardstick for the speed of the course's own.

The model is the one of the PyTorch tutorial "NLP From Scratch: Translation with a
Sequence to Sequence Network and Attention" (``EncoderRNN`` and ``AttnDecoderRNN``),
**re-implemented here from its published description**, not copied from it:

* ``EncoderRNN``: an embedding of size ``hidden``, dropout, and a unidirectional GRU of
  size ``hidden``; its outputs are the encoder states and its last state starts the
  decoder.
* ``AttnDecoderRNN``: an embedding of size ``hidden`` and dropout; Bahdanau attention
  with three linear maps (with biases): ``Wa`` on the query (the decoder's previous
  state), ``Ua`` on the keys (the encoder outputs, recomputed at every step), and ``Va``
  giving one score per position; softmax over the source, context = the weighted sum
  of the encoder outputs; a GRU whose input is ``[embedded; context]``; a linear output
  layer; log-softmax; teacher forcing in training, trained with ``NLLLoss``.

What the tutorial does not have and this benchmark needs: a padding id (0) in both
embeddings and ``ignore_index`` in the loss, so that it runs on the course's padded
Tatoeba batches. As in the tutorial, the attention has no mask: a padded source
position gets a score like any other. For the batch-1 comparison its greedy loop runs
exactly as many steps as the course's model needs for the same sentence (the
tutorial runs its maximum length and cuts at ``<eos>`` afterwards); it never
looks at a token before the loop ends, which only favours it.

Size mapping to the course's model (:class:`attnlib.mt.translation.Recipe`): the tutorial
has one size, ``hidden_size``, for the embeddings, both GRUs and the attention. It is
set to the course's decoder state size d_s (96), since the tutorial's decoder state
is its hidden size; the vocabularies and batches are the course's.

See Also
--------
bench/bench_translation.py : the throughput rows that use it.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

PAD_ID, BOS_ID = 0, 1  # the course's ids (attnlib.vocab)


class EncoderRNN(nn.Module):
    """Embedding, dropout and a unidirectional GRU, all of size ``hidden``."""

    def __init__(self, vocab_size: int, hidden: int, dropout_p: float = 0.1) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, hidden, padding_idx=PAD_ID)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """src (B, T_x) → outputs (B, T_x, hidden) and last state (1, B, hidden)."""
        out, last = self.gru(self.dropout(self.embedding(src)))
        return out, last


class BahdanauAttention(nn.Module):
    """score_i = Va tanh(Wa q + Ua k_i); weights = softmax(scores); context = Σ_i w_i k_i."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.Wa = nn.Linear(hidden, hidden)
        self.Ua = nn.Linear(hidden, hidden)
        self.Va = nn.Linear(hidden, 1)

    def forward(self, query: Tensor, keys: Tensor) -> tuple[Tensor, Tensor]:
        """query (B, 1, hidden), keys (B, T_x, hidden) → context (B, 1, hidden), α (B, 1, T_x).

        The keys are the encoder outputs themselves; ``Ua`` maps them again at every step.
        """
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))  # (B, T_x, 1)
        weights = torch.softmax(scores.transpose(1, 2), dim=-1)  # (B, 1, T_x)
        return torch.bmm(weights, keys), weights


class AttnDecoderRNN(nn.Module):
    """Embedding + dropout, Bahdanau attention, GRU on [embedded; context], linear output."""

    def __init__(self, hidden: int, vocab_size: int, dropout_p: float = 0.1) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, hidden, padding_idx=PAD_ID)
        self.attention = BahdanauAttention(hidden)
        self.gru = nn.GRU(2 * hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab_size)
        self.dropout = nn.Dropout(dropout_p)

    def forward_step(
        self, y: Tensor, state: Tensor, enc_out: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """One step: y (B, 1) ids, state (1, B, hidden) → logits (B, 1, V), new state, weights."""
        embedded = self.dropout(self.embedding(y))  # (B, 1, hidden)
        context, weights = self.attention(state.transpose(0, 1), enc_out)
        out, state = self.gru(torch.cat([embedded, context], dim=2), state)
        return self.out(out), state, weights

    def forward(self, enc_out: Tensor, enc_last: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher forcing: log-probabilities (B, T_y, V) for the inputs ``tgt_in`` (B, T_y)."""
        state, outs = enc_last, []
        for t in range(tgt_in.shape[1]):
            logits, state, _ = self.forward_step(tgt_in[:, t : t + 1], state, enc_out)
            outs.append(logits)
        return torch.log_softmax(torch.cat(outs, dim=1), dim=-1)


class TutorialSeq2Seq(nn.Module):
    """EncoderRNN + AttnDecoderRNN with the tutorial's single size ``hidden``."""

    def __init__(self, src_vocab: int, tgt_vocab: int, hidden: int, seed: int = 0) -> None:
        super().__init__()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.encoder = EncoderRNN(src_vocab, hidden)
            self.decoder = AttnDecoderRNN(hidden, tgt_vocab)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Log-probabilities (B, T_y, V), for ``nn.NLLLoss``."""
        enc_out, last = self.encoder(src)
        return self.decoder(enc_out, last, tgt_in)

    @torch.no_grad()
    def greedy(self, src: Tensor, steps: int) -> tuple[list[int], Tensor]:
        """Greedy decoding of one sentence, src (1, T_x), for exactly ``steps`` steps.

        As in the tutorial's evaluation: each step feeds back the top output (``topk(1)``),
        without looking at it; log-softmax, the ids and the attention weights are
        gathered after the loop. The caller sets ``steps`` (the benchmark: as many as
        the course's model took for the same sentence, where it stops at ``<eos>``).

        Returns
        -------
        ids : list of int
            The ``steps`` output ids (an untrained model does not stop by itself).
        weights : (steps, T_x)
        """
        enc_out, state = self.encoder(src)
        y = torch.full((1, 1), BOS_ID, dtype=torch.long)
        outs, attn = [], []
        for _ in range(steps):
            logits, state, weights = self.decoder.forward_step(y, state, enc_out)
            outs.append(logits)
            attn.append(weights)
            _, top = logits.topk(1)
            y = top.squeeze(-1).detach()
        log_p = torch.log_softmax(torch.cat(outs, dim=1), dim=-1)  # (1, steps, V)
        ids = log_p.argmax(dim=-1)[0].tolist()
        return ids, torch.cat(attn, dim=1)[0]
