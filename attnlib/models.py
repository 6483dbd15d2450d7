"""A Bahdanau seq2seq in torch, built from parts the course names one by one.

The parts, in the course's notation:

* :class:`AdditiveAttention` — e_ti = v_a^T tanh(W_a s_{t-1} + U_a h_i),
  α_t = softmax(e_t), c_t = Σ_i α_ti h_i. The keys U_a h_i do not depend on t:
  :meth:`AdditiveAttention.precompute` computes them once per source batch and
  every decoder step reuses them.
* :class:`MultiplicativeAttention` — Luong's e_ti = s^T W_a h_i ("general") or
  s^T h_i ("dot"), with the same interface.
* :class:`BiGRUEncoder` — h_i = [→h_i; ←h_i] from a bidirectional GRU, so
  d_h = 2 × ``hidden``; padding never reaches h_i or the final state.
  :class:`EmbeddingEncoder` is the ablation without a recurrent layer.
* Decoders: :class:`BahdanauDecoder` (scores from s_{t-1}; c_t enters the state
  update s_t = f(s_{t-1}, y_{t-1}, c_t) and the output ỹ_t = g(s_t, c_t, y_{t-1})),
  :class:`LuongDecoder` (scores from s_t) and :class:`NoAttentionDecoder` (the
  vanilla RNN encoder–decoder: one fixed vector c built from the final encoder
  state stands in for every c_t). All build s_0 = tanh(W_s h_final + b_s) from
  the final encoder state h_final = [→h_L; ←h_1] (``s0="final"``), or, as
  Bahdanau et al. do, from the backward half only: s_0 = tanh(W_s ←h_1 + b_s)
  (``s0="backward"``).
* :class:`Seq2Seq` joins an encoder and a decoder; :func:`make_seq2seq` builds
  one from a few keywords (and a seed) and is what the chapters call.
* :func:`greedy_steps` is the course's one greedy decoding loop, behind
  :meth:`Seq2Seq.greedy` and :func:`attnlib.decoding.greedy`.

It is one module, not one per part, because the attention modules, the decoders and the
model hold on to each other: the decoders call the attention modules, :func:`make_seq2seq`
builds the decoders, and the graded exercises switch off the attention step and
:meth:`Seq2Seq.greedy` by their place in this file (``attnlib.grading``).

Shapes use B for the batch, T_x source positions (``<eos>`` included), T_y
target positions. Token ids 0, 1, 2 are ``<pad>``, ``<bos>``, ``<eos>`` (see
:mod:`attnlib.vocab`). Masks are boolean with True = a real token.

To change what attention sees (an intervention, a probe), pass a
:class:`ScoreEdit` as ``edit=`` to :meth:`Seq2Seq.forward`,
:meth:`Seq2Seq.greedy` or :meth:`Decoder.memory`: it is carried with the
source through every decoder step and rewrites the scores e_t before the
mask and the softmax. Nothing in a model is ever replaced at run time.

Examples
--------
>>> from attnlib.tasks import make_task
>>> task = make_task("reverse", n_train=100, n_valid=10, n_test=10)
>>> model = make_seq2seq(task.src_vocab, task.tgt_vocab, decoder="bahdanau", seed=0)
>>> src = torch.tensor([task.src_vocab.encode("abc")])
>>> tokens, alpha = model.greedy(src, max_len=5)   # alpha: (1, T_y, T_x)

See Also
--------
The chapter "A Bahdanau seq2seq, built from parts" (chapters/seq2seq).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence, Sized
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from attnlib.vocab import BOS_ID, EOS_ID, PAD_ID

__all__ = [
    "AdditiveAttention",
    "BahdanauDecoder",
    "BiGRUEncoder",
    "Decoder",
    "EmbeddingEncoder",
    "Greedy",
    "LuongDecoder",
    "ModelConfig",
    "MultiplicativeAttention",
    "NoAttentionDecoder",
    "ScoreEdit",
    "Seq2Seq",
    "SourceMemory",
    "greedy_steps",
    "make_attention",
    "make_seq2seq",
    "reverse_within",
]

ContextIn = Literal["both", "state", "output"]
Score = Literal["additive", "general", "dot"]
S0 = Literal["final", "backward"]


# Ids below this (<pad> 0, <bos> 1) are never generated; <eos> (2) and all others may be.
_FIRST_OUTPUT_ID = 2
if (PAD_ID, BOS_ID, EOS_ID) != (0, 1, _FIRST_OUTPUT_ID):  # pragma: no cover - see attnlib.vocab
    raise ImportError("attnlib.models expects <pad>, <bos>, <eos> to have ids 0, 1, 2")


# --------------------------------------------------------------------------- checks
def _need(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


def _check_query(who: str, name: str, s: Tensor, d_s: int) -> None:
    # Every check is a plain comparison first; the message is only built when one fails
    # (these run at every decoder step, where formatting costs more than the arithmetic).
    if not isinstance(s, Tensor):
        raise TypeError(f"{who} expects {name} to be a torch.Tensor, got {type(s).__name__}")
    if s.dim() != 2:
        raise ValueError(
            f"{who} expects {name} of shape (B, d_s={d_s}), got shape {tuple(s.shape)}"
        )
    if s.shape[1] != d_s:
        raise ValueError(f"{who} expects d_s={d_s} components in {name}, got {s.shape[1]}")


def _check_states(who: str, h: Tensor, d_h: int, batch: int | None = None) -> None:
    if not isinstance(h, Tensor):
        raise TypeError(f"{who} expects h to be a torch.Tensor, got {type(h).__name__}")
    if h.dim() != 3:
        raise ValueError(
            f"{who} expects h of shape (B, T_x, d_h={d_h}), got shape {tuple(h.shape)}"
        )
    if h.shape[1] < 1:
        raise ValueError(f"{who} got h with T_x = 0 encoder states; attention needs T_x ≥ 1")
    if h.shape[2] != d_h:
        raise ValueError(f"{who} expects d_h={d_h} components in h, got {h.shape[2]}")
    if batch is not None and h.shape[0] != batch:
        raise ValueError(
            f"{who}: the batch sizes differ: {batch} decoder states but {h.shape[0]} sources in h"
        )


def _check_mask(who: str, mask: Tensor | None, B: int, T_x: int) -> bool:
    """Check a mask; True if it has padding (some False), False if every position is real."""
    if mask is None:
        return False
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        raise TypeError(
            f"{who} expects mask to be a bool tensor (True = real token, False = padding), "
            f"got {getattr(mask, 'dtype', type(mask).__name__)}"
        )
    if mask.shape != (B, T_x):
        raise ValueError(
            f"{who} expects mask of shape (B, T_x) = ({B}, {T_x}), got {tuple(mask.shape)}"
        )
    if bool(mask.all()):  # no padding (always so for one sentence): nothing more to check
        return False
    empty = ~mask.any(dim=1)
    if bool(empty.any()):
        row = int(torch.nonzero(empty)[0, 0])
        raise ValueError(
            f"{who}: the mask leaves no position to attend to in {int(empty.sum())} "
            f"sequence(s) (the first is batch index {row}); every source needs T_x ≥ 1 real token"
        )
    return True


def _mask_bias(mask: Tensor | None, like: Tensor) -> Tensor | None:
    """0 where mask is True, -inf where it is False: added to e_ti, it gives α_ti = 0."""
    if mask is None:
        return None
    return torch.zeros(mask.shape, dtype=like.dtype).masked_fill_(~mask, float("-inf"))


def _gru_cell(cell: nn.GRUCell, x: Tensor, s_prev: Tensor) -> Tensor:
    """``cell(x, s_prev)`` for 2-D inputs: the same kernel, without the module call's overhead."""
    return torch.gru_cell(x, s_prev, cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)


def _softmax_context(e: Tensor, h: Tensor, bias: Tensor | None) -> tuple[Tensor, Tensor]:
    if bias is not None:
        e = e + bias  # exp(-inf) = 0: a pad gets weight exactly 0
    alpha = torch.softmax(e, dim=-1)  # (B, T_x)
    # c_t = Σ_i α_ti h_i. A broadcast product and a sum: on a CPU its backward pass
    # is much cheaper than that of the equivalent batched matmul (B, 1, T_x) @ (B, T_x, d_h).
    c = (alpha.unsqueeze(-1) * h).sum(dim=1)  # (B, d_h)
    return c, alpha


# --------------------------------------------------------------------------- attention
class _Attention(nn.Module):
    """The step both score functions share: check, get the keys, score, mask, softmax, mix.

    A subclass sets ``d_s``, ``d_h``, the names below, and defines
    ``precompute(h)`` and ``scores(query, keys)``.
    """

    d_s: int  # the query's size
    d_h: int  # an encoder state's size
    query_name = "s"  # the query's symbol in error messages
    keys_name = "keys"  # how error messages describe the keys
    keys_size = "d_s"  # the attribute holding the keys' last size

    def _attend(
        self, query: Tensor, h: Tensor, mask: Tensor | None, keys: Tensor | None
    ) -> tuple[Tensor, Tensor]:
        who = type(self).__name__
        _check_query(who, self.query_name, query, self.d_s)
        _check_states(who, h, self.d_h, query.shape[0])
        B, T_x, _ = h.shape
        padded = _check_mask(who, mask, B, T_x)
        if keys is None:
            keys = self.precompute(h)
        else:
            d = getattr(self, self.keys_size)
            if keys.shape != (B, T_x, d):
                raise ValueError(
                    f"{who} expects {self.keys_name} of shape (B, T_x, {self.keys_size}) = "
                    f"({B}, {T_x}, {d}), got {tuple(keys.shape)}"
                )
        # Without padding the bias would be all zeros: adding it changes no e_ti, so skip it.
        bias = _mask_bias(mask, h) if padded else None
        return _softmax_context(self.scores(query, keys), h, bias)

    def precompute(self, h: Tensor) -> Tensor:
        """The keys of every position, (B, T_x, keys_size): defined by each subclass."""
        raise NotImplementedError

    def scores(self, query: Tensor, keys: Tensor) -> Tensor:
        """Raw scores (B, T_x) of ``query`` against ``keys``: defined by each subclass."""
        raise NotImplementedError


class AdditiveAttention(_Attention):
    """Bahdanau's additive attention: e_ti = v_a^T tanh(W_a s_{t-1} + U_a h_i).

    The three maps are bias-free ``nn.Linear`` layers, so their ``.weight``
    tensors are the course's matrices: ``W_a.weight`` is (d_a, d_s),
    ``U_a.weight`` is (d_a, d_h) and ``v_a.weight[0]`` is v_a (d_a,), exactly
    the arguments of :func:`attnlib.additive_scores`.

    Parameters
    ----------
    d_s : int
        Size of the decoder state s_{t-1}.
    d_h : int
        Size of an encoder state h_i.
    d_a : int
        Size of the shared space in which the two meet.

    See Also
    --------
    attnlib.core.attend : the same step in numpy.
    The chapter "A Bahdanau seq2seq, built from parts" (chapters/seq2seq).
    """

    query_name, keys_name, keys_size = "s_prev", "keys = U_a h", "d_a"

    def __init__(self, d_s: int, d_h: int, d_a: int) -> None:
        super().__init__()
        for name, d in (("d_s", d_s), ("d_h", d_h), ("d_a", d_a)):
            _need(
                isinstance(d, int) and d >= 1,
                f"AdditiveAttention needs {name} ≥ 1, got {d!r}",
            )
        self.d_s, self.d_h, self.d_a = d_s, d_h, d_a
        self.W_a = nn.Linear(d_s, d_a, bias=False)
        self.U_a = nn.Linear(d_h, d_a, bias=False)
        self.v_a = nn.Linear(d_a, 1, bias=False)

    def extra_repr(self) -> str:
        return f"d_s={self.d_s}, d_h={self.d_h}, d_a={self.d_a}"

    def precompute(self, h: Tensor) -> Tensor:
        """The keys U_a h_i for every position: computed once per source batch.

        Parameters
        ----------
        h : (B, T_x, d_h)

        Returns
        -------
        keys : (B, T_x, d_a)
            Pass them as ``keys=`` to :meth:`forward` at every decoder step.
        """
        _check_states("AdditiveAttention", h, self.d_h)
        return F.linear(h, self.U_a.weight)

    def scores(self, s_prev: Tensor, keys: Tensor) -> Tensor:
        """Raw scores e_ti = v_a^T tanh(W_a s_{t-1} + keys_i) (no mask, no softmax).

        Parameters
        ----------
        s_prev : (B, d_s)
        keys : (B, T_x, d_a)
            From :meth:`precompute`.

        Returns
        -------
        e : (B, T_x)
        """
        # F.linear with the layers' own weights: what calling the layers does, minus the
        # module-call overhead (the layers stay nn.Linear, so .weight is still W_a, v_a).
        q = F.linear(s_prev, self.W_a.weight).unsqueeze(1)  # (B, 1, d_a)
        return F.linear(torch.tanh(q + keys), self.v_a.weight).squeeze(-1)

    def forward(
        self,
        s_prev: Tensor,
        h: Tensor,
        mask: Tensor | None = None,
        *,
        keys: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """One attention step: the context c_t and the weights α_t.

        Parameters
        ----------
        s_prev : (B, d_s)
            The previous decoder state s_{t-1}.
        h : (B, T_x, d_h)
            Encoder states.
        mask : (B, T_x) bool, optional
            True = a real token; padding gets α exactly 0.
        keys : (B, T_x, d_a), optional
            U_a h from :meth:`precompute`; computed here if not given.

        Returns
        -------
        c : (B, d_h)
            The context vector c_t = Σ_i α_ti h_i.
        alpha : (B, T_x)
            The attention weights α_ti.
        """
        return self._attend(s_prev, h, mask, keys)


class MultiplicativeAttention(_Attention):
    """Luong's multiplicative attention: e_ti = s^T W_a h_i, or s^T h_i (``kind="dot"``).

    Same interface as :class:`AdditiveAttention`. ``W_a.weight`` is (d_s, d_h),
    the argument of :func:`attnlib.multiplicative_scores`. The keys W_a h_i do
    not depend on the decoder step and are precomputed the same way.

    Parameters
    ----------
    d_s : int
        Size of the decoder state (Luong scores with the current state s_t).
    d_h : int
        Size of an encoder state h_i.
    kind : {"general", "dot"}
        "dot" has no parameters and needs d_s == d_h.

    See Also
    --------
    attnlib.core.multiplicative_scores, attnlib.core.dot_scores
    The chapter "A Bahdanau seq2seq, built from parts" (chapters/seq2seq).
    """

    def __init__(self, d_s: int, d_h: int, kind: Literal["general", "dot"] = "general") -> None:
        super().__init__()
        for name, d in (("d_s", d_s), ("d_h", d_h)):
            _need(
                isinstance(d, int) and d >= 1,
                f"MultiplicativeAttention needs {name} ≥ 1, got {d!r}",
            )
        _need(kind in ("general", "dot"), f"kind must be 'general' or 'dot', got {kind!r}")
        if kind == "dot" and d_s != d_h:
            raise ValueError(
                f"the dot score needs d_s = d_h, but d_s={d_s} and d_h={d_h}; "
                "use kind='general', whose W_a maps h_i to d_s components"
            )
        self.d_s, self.d_h, self.kind = d_s, d_h, kind
        self.W_a = nn.Linear(d_h, d_s, bias=False) if kind == "general" else None

    def extra_repr(self) -> str:
        return f"d_s={self.d_s}, d_h={self.d_h}, kind={self.kind!r}"

    def precompute(self, h: Tensor) -> Tensor:
        """The keys W_a h_i (or h_i for "dot"): (B, T_x, d_s), once per source batch."""
        _check_states("MultiplicativeAttention", h, self.d_h)
        return h if self.W_a is None else F.linear(h, self.W_a.weight)

    def scores(self, s: Tensor, keys: Tensor) -> Tensor:
        """Raw scores e_ti = keys_i · s: (B, T_x)."""
        return (keys * s.unsqueeze(1)).sum(dim=-1)

    def forward(
        self,
        s: Tensor,
        h: Tensor,
        mask: Tensor | None = None,
        *,
        keys: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """One attention step; see :meth:`AdditiveAttention.forward`.

        Parameters
        ----------
        s : (B, d_s)
            The decoder state used as the query (s_t in Luong's decoder).
        h : (B, T_x, d_h)
        mask : (B, T_x) bool, optional
        keys : (B, T_x, d_s), optional

        Returns
        -------
        c : (B, d_h)
        alpha : (B, T_x)
        """
        return self._attend(s, h, mask, keys)


def make_attention(score: Score, d_s: int, d_h: int, d_a: int) -> _Attention:
    """An attention module by score name: "additive", "general" or "dot"."""
    if score == "additive":
        return AdditiveAttention(d_s, d_h, d_a)
    if score in ("general", "dot"):
        return MultiplicativeAttention(d_s, d_h, kind=score)
    raise ValueError(f"score must be 'additive', 'general' or 'dot', got {score!r}")


# --------------------------------------------------------------------------- encoders
def reverse_within(x: Tensor, lengths: Tensor) -> Tensor:
    """Reverse the first ``lengths[b]`` steps of each row of ``x``; padding stays at the end.

    Parameters
    ----------
    x : (B, T, ...)
    lengths : (B,) long

    Returns
    -------
    Tensor of the shape of ``x``. Applying it twice gives ``x`` back.
    """
    B, T = x.shape[:2]
    t = torch.arange(T).unsqueeze(0)  # (1, T)
    L = lengths.unsqueeze(1)  # (B, 1)
    idx = torch.where(t < L, L - 1 - t, t)  # (B, T)
    return x[torch.arange(B).unsqueeze(1), idx]


class BiGRUEncoder(nn.Module):
    """Embedding + bidirectional GRU: h_i = [→h_i; ←h_i], so d_h = 2 × ``hidden``.

    Padding never reaches h_i or the final state. The forward GRU reads
    x_1 … x_L and only then the pads; the backward GRU reads each sequence
    reversed within its own length (x_L … x_1, then the pads). States computed
    after a pad are discarded: h_i is exactly zero on pad positions, and the
    final state is [→h_L; ←h_1], taken where each direction has read the whole
    sequence and nothing else.

    Parameters
    ----------
    vocab_size : int
    emb : int
        Embedding size.
    hidden : int
        GRU size per direction.

    See Also
    --------
    The chapter "A Bahdanau seq2seq, built from parts" (chapters/seq2seq).
    """

    def __init__(self, vocab_size: int, emb: int, hidden: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb, padding_idx=PAD_ID)
        self.gru_forward = nn.GRU(emb, hidden, batch_first=True)
        self.gru_backward = nn.GRU(emb, hidden, batch_first=True)
        self.d_h = 2 * hidden
        self.d_final = 2 * hidden

    def forward(self, src: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
        """Encode a padded batch.

        Parameters
        ----------
        src : (B, T_x) long
            Real tokens first, then ``<pad>``.
        lengths : (B,) long
            Real tokens per row.

        Returns
        -------
        h : (B, T_x, d_h)
            Encoder states [→h_i; ←h_i]; exactly zero on pad positions.
        final : (B, d_h)
            [→h_L; ←h_1], the summary from which s_0 is built.
        """
        x = self.embedding(src)  # (B, T_x, emb)
        fwd, _ = self.gru_forward(x)  # (B, T_x, hidden)
        T_x = src.shape[1]
        if not torch.is_grad_enabled() and src.shape[0] and int(lengths.min()) == T_x:
            # No padding (one sentence, say): reversing within the lengths is a flip, and
            # no position needs zeroing. The same numbers as below, in a few operations.
            bwd = self.gru_backward(x.flip(1))[0].flip(1)
            return torch.cat([fwd, bwd], dim=-1), torch.cat([fwd[:, -1], bwd[:, 0]], dim=-1)
        bwd = reverse_within(self.gru_backward(reverse_within(x, lengths))[0], lengths)
        real = (torch.arange(src.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)).unsqueeze(-1)
        h = torch.cat([fwd, bwd], dim=-1).masked_fill(~real, 0.0)
        last = fwd[torch.arange(src.shape[0]), lengths - 1]  # →h_L of each row
        return h, torch.cat([last, bwd[:, 0]], dim=-1)


class EmbeddingEncoder(nn.Module):
    """The ablation without an encoder RNN: h_i = E x_i, so d_h = ``emb``.

    Each h_i knows its own token and nothing about its neighbours or its
    position. The "final" state is the mean of the real h_i.

    See Also
    --------
    The chapter "Looked at is not caused by" (chapters/interpretability).
    """

    def __init__(self, vocab_size: int, emb: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb, padding_idx=PAD_ID)
        self.d_h = emb
        self.d_final = emb

    def forward(self, src: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
        """h : (B, T_x, emb), exactly zero on pads; final : (B, emb), the mean of the real h_i."""
        real = (torch.arange(src.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)).unsqueeze(-1)
        h = self.embedding(src).masked_fill(~real, 0.0)
        final = h.sum(dim=1) / lengths.to(h.dtype).unsqueeze(1)
        return h, final


# --------------------------------------------------------------------------- decoders
class ScoreEdit(Protocol):
    """A change to the raw scores e_t of every decoder step: the seam for interventions.

    Called once per step, after the score function and before the mask and
    the softmax, so α_t and c_t follow from what it returns::

        e = edit(e, query=s, mask=mask)     # e, returned: (B, T_x)

    Parameters
    ----------
    e : (B, T_x)
        The scores e_ti the model computed.
    query : (B, d_s)
        The decoder state that asked (s_{t-1} for Bahdanau, s_t for Luong).
    mask : (B, T_x) bool
        True on real tokens; whatever a pad's score becomes, its weight stays 0.

    See Also
    --------
    attnlib.importance.attention_intervention : the uniform and permuted α of
        the chapter "Looked at is not caused by" (chapters/interpretability).
    """

    def __call__(self, e: Tensor, *, query: Tensor, mask: Tensor) -> Tensor: ...


@dataclass(frozen=True)
class SourceMemory:
    """What every decoder step needs from the source, computed once per batch.

    Attributes
    ----------
    h : (B, T_x, d_h)
        Encoder states (for :class:`NoAttentionDecoder`: the fixed vector c, (B, d_h)).
    keys : (B, T_x, d_a) or None
        U_a h (or W_a h for Luong), precomputed; None recomputes them at every
        step (what a decoder without the precomputation would do; the
        benchmark compares the two with ``dataclasses.replace(mem, keys=None)``).
    bias : (B, T_x) or None
        0 on real tokens and -inf on pads, added to the scores e_ti.
    mask : (B, T_x) bool or None
        True on real tokens.
    edit : ScoreEdit or None
        Applied to the scores of every step (see :class:`ScoreEdit`).
    """

    h: Tensor
    keys: Tensor | None
    bias: Tensor | None
    mask: Tensor | None = None
    edit: ScoreEdit | None = None


class Decoder(nn.Module):
    """What all decoders share: target embedding, s_0 = tanh(W_s final + b_s), a GRU cell.

    Decoding by hand, one step at a time (what :meth:`Seq2Seq.greedy` does)::

        h, final, mask = model.encode(src)
        mem = model.decoder.memory(h, final, mask)   # U_a h computed here, once
        s = model.decoder.init_state(final)          # s_0
        logits, s, alpha = model.decoder.step(y_prev, s, mem)
    """

    has_attention = True
    # Set by the subclasses that have them (NoAttentionDecoder has no ``attention``
    # and overrides ``memory``; LuongDecoder has no ``W_o`` and overrides ``readout``).
    attention: _Attention
    W_o: nn.Linear
    W_y: nn.Linear

    def __init__(
        self,
        vocab_size: int,
        emb: int,
        d_s: int,
        d_h: int,
        d_final: int,
        rnn_input: int,
        s0: S0 = "final",
    ) -> None:
        super().__init__()
        _need(s0 in ("final", "backward"), f"s0 must be 'final' or 'backward', got {s0!r}")
        self.vocab_size, self.emb, self.d_s, self.d_h = vocab_size, emb, d_s, d_h
        self.s0 = s0
        self.embedding = nn.Embedding(vocab_size, emb, padding_idx=PAD_ID)
        # s_0 = tanh(W_s final + b_s), or tanh(W_s ←h_1 + b_s) from the backward half
        self.W_s = nn.Linear(d_final if s0 == "final" else d_final // 2, d_s)
        self.cell = nn.GRUCell(rnn_input, d_s)

    def s0_input(self, final: Tensor) -> Tensor:
        """What W_s reads: final = [→h_L; ←h_1] (s0="final") or its backward half ←h_1."""
        return final if self.s0 == "final" else final[..., final.shape[-1] // 2 :]

    def init_state(self, final: Tensor) -> Tensor:
        """s_0 = tanh(W_s final + b_s) (or tanh(W_s ←h_1 + b_s)): (B, d_s)."""
        return torch.tanh(self.W_s(self.s0_input(final)))

    def memory(
        self, h: Tensor, final: Tensor, mask: Tensor, *, edit: ScoreEdit | None = None
    ) -> SourceMemory:
        """Everything fixed for the whole output sequence: h, the keys U_a h (once), the mask.

        Parameters
        ----------
        h : (B, T_x, d_h)
        final : (B, d_final)
        mask : (B, T_x) bool
        edit : ScoreEdit, optional
            Rewrites the scores of every step (an intervention on α).
        """
        keys = self.attention.precompute(h)
        return SourceMemory(h, keys, _mask_bias(mask, h), mask, edit)

    def _attend(self, query: Tensor, mem: SourceMemory) -> tuple[Tensor, Tensor]:
        attn = self.attention
        keys = mem.keys if mem.keys is not None else attn.precompute(mem.h)
        e = attn.scores(query, keys)  # (B, T_x)
        if mem.edit is not None:
            if mem.mask is None:
                raise ValueError("a score edit needs the source mask in SourceMemory")
            e = mem.edit(e, query=query, mask=mem.mask)
        return _softmax_context(e, mem.h, mem.bias)

    def step(
        self, y_prev: Tensor, s_prev: Tensor, mem: SourceMemory
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """One decoder step from ids y_{t-1} (B,): logits (B, V), s_t, α_t (B, T_x) or None."""
        y_emb = F.embedding(y_prev, self.embedding.weight, self.embedding.padding_idx)
        parts, s, alpha = self._step(y_emb, s_prev, mem)
        return self.readout(parts, y_emb), s, alpha

    def forward(
        self, y_in: Tensor, s0: Tensor, mem: SourceMemory, keep: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """Teacher forcing: logits (B, T_y, V) and α (B, T_y, T_x) (None without attention).

        With ``keep`` ((B, T_y) bool), the output layer runs only where it is True and the
        logits are (N, V), one row per kept position in row-major order (N = keep.sum()).
        """
        ys = self.embedding(y_in)  # (B, T_y, emb), all inputs known in advance
        s, parts, alphas = s0, [], []
        for t in range(y_in.shape[1]):
            p, s, alpha = self._step(ys[:, t], s, mem)
            parts.append(p)
            alphas.append(alpha)
        # The output layer does not feed back: run it once, on all T_y steps together
        # (or only on the kept ones: a padded target position needs no logits).
        stacked = tuple(torch.stack(k, dim=1) for k in zip(*parts, strict=True))
        if keep is not None:
            stacked, ys = tuple(k[keep] for k in stacked), ys[keep]
        logits = self.readout(stacked, ys)
        if alphas[0] is None:
            return logits, None
        return logits, torch.stack([a for a in alphas if a is not None], dim=1)

    def _step(
        self, y_emb: Tensor, s_prev: Tensor, mem: SourceMemory
    ) -> tuple[tuple[Tensor, ...], Tensor, Tensor | None]:
        """(what the output layer needs besides y_{t-1}, the state carried on, α_t)."""
        raise NotImplementedError

    def readout(self, parts: tuple[Tensor, ...], y_emb: Tensor) -> Tensor:
        """Logits ỹ_t = W_y tanh(W_o [*parts; E y_{t-1}] + b_o), for one step or all at once."""
        W_o, W_y = self.W_o, self.W_y
        o = torch.tanh(F.linear(torch.cat([*parts, y_emb], dim=-1), W_o.weight, W_o.bias))
        return F.linear(o, W_y.weight, W_y.bias)


class _ContextDecoder(Decoder):
    """A decoder whose context vector enters the state update, the output, or both.

    ``context_in`` says where (Bahdanau: "both"); ``d_c`` is the context's
    size. The state update and the output layer are wired here once for
    :class:`BahdanauDecoder` (c = c_t) and :class:`NoAttentionDecoder`
    (c = the fixed vector)::

        s_t = GRU([E y_{t-1}; c], s_{t-1})          # c left out for "output"
        ỹ_t = W_y tanh(W_o [s_t; c; E y_{t-1}] + b_o)  # c left out for "state"
    """

    def __init__(
        self,
        vocab_size: int,
        emb: int,
        d_s: int,
        d_h: int,
        d_final: int,
        d_c: int,
        context_in: ContextIn,
        s0: S0 = "final",
    ) -> None:
        _need(
            context_in in ("both", "state", "output"),
            f"context_in must be 'both', 'state' or 'output', got {context_in!r}",
        )
        c_state = context_in in ("both", "state")
        super().__init__(vocab_size, emb, d_s, d_h, d_final, emb + (d_c if c_state else 0), s0)
        self.context_in, self.d_c = context_in, d_c

    def _output_layers(self) -> None:
        """W_o and W_y; a subclass calls this after its own layers (the seeds draw in order)."""
        c_out = self.context_in in ("both", "output")
        self.W_o = nn.Linear(self.d_s + (self.d_c if c_out else 0) + self.emb, self.d_s)
        self.W_y = nn.Linear(self.d_s, self.vocab_size)

    def _advance(
        self, y_emb: Tensor, c: Tensor, s_prev: Tensor
    ) -> tuple[tuple[Tensor, ...], Tensor]:
        """s_t = f(s_{t-1}, y_{t-1}, c) and what the output layer g(s_t, c, y_{t-1}) needs."""
        x = y_emb if self.context_in == "output" else torch.cat([y_emb, c], dim=-1)
        s = _gru_cell(self.cell, x, s_prev)
        return ((s,) if self.context_in == "state" else (s, c)), s


class BahdanauDecoder(_ContextDecoder):
    """Bahdanau's decoder: attention queried with the previous state s_{t-1}.

    At step t::

        α_t, c_t = attention(s_{t-1}, h)
        s_t = GRU([E y_{t-1}; c_t], s_{t-1})               # f(s_{t-1}, y_{t-1}, c_t)
        ỹ_t = W_y tanh(W_o [s_t; c_t; E y_{t-1}] + b_o)     # g(s_t, c_t, y_{t-1})

    Parameters
    ----------
    vocab_size : int
        Target vocabulary size.
    emb : int
        Target embedding size.
    d_s : int
        Decoder state size.
    d_h : int
        Encoder state size (columns of h).
    d_final : int
        Size of the encoder summary that s_0 is built from.
    d_a : int
        Attention size (additive score only).
    context_in : {"both", "state", "output"}
        Where c_t enters: the state update and the output (Bahdanau), or only
        one of them (ablations). In "output" the state never sees c_t.
    score : {"additive", "general", "dot"}
        The score function (Bahdanau's is "additive").

    See Also
    --------
    The chapter "A Bahdanau seq2seq, built from parts" (chapters/seq2seq).
    """

    def __init__(
        self,
        vocab_size: int,
        emb: int,
        d_s: int,
        d_h: int,
        d_final: int,
        d_a: int,
        context_in: ContextIn = "both",
        score: Score = "additive",
        s0: S0 = "final",
    ) -> None:
        super().__init__(vocab_size, emb, d_s, d_h, d_final, d_h, context_in, s0)
        self.attention = make_attention(score, d_s, d_h, d_a)
        self._output_layers()

    def _step(
        self, y_emb: Tensor, s_prev: Tensor, mem: SourceMemory
    ) -> tuple[tuple[Tensor, ...], Tensor, Tensor | None]:
        c, alpha = self._attend(s_prev, mem)  # scores use s_{t-1}
        parts, s = self._advance(y_emb, c, s_prev)  # s_t = f(s_{t-1}, y_{t-1}, c_t)
        return parts, s, alpha


class LuongDecoder(Decoder):
    """Luong's decoder: the state is updated first, then attention is queried with s_t.

    At step t::

        s_t = GRU([E y_{t-1}; h̃_{t-1}], s_{t-1})   # h̃_{t-1} only with input feeding
        α_t, c_t = attention(s_t, h)
        h̃_t = tanh(W_c [c_t; s_t] + b_c)
        ỹ_t = W_y h̃_t

    Parameters
    ----------
    vocab_size, emb, d_s, d_h, d_final, d_a : int
        As for :class:`BahdanauDecoder`.
    score : {"general", "dot", "additive"}
        Luong's "general" by default; "dot" needs d_s == d_h.
    input_feeding : bool
        Feed h̃_{t-1} into the next state update (Luong et al. 2015, §3.3), so
        the state learns where it attended before.

    See Also
    --------
    The chapter "A Bahdanau seq2seq, built from parts" (chapters/seq2seq).

    Notes
    -----
    With input feeding the recurrent state carried from step to step is
    [s_t; h̃_t], of size 2 d_s (``init_state`` returns [s_0; 0]).
    """

    def __init__(
        self,
        vocab_size: int,
        emb: int,
        d_s: int,
        d_h: int,
        d_final: int,
        d_a: int,
        score: Score = "general",
        input_feeding: bool = True,
        s0: S0 = "final",
    ) -> None:
        super().__init__(
            vocab_size, emb, d_s, d_h, d_final, emb + (d_s if input_feeding else 0), s0
        )
        self.input_feeding = input_feeding
        self.attention = make_attention(score, d_s, d_h, d_a)
        self.W_c = nn.Linear(d_h + d_s, d_s)
        self.W_y = nn.Linear(d_s, vocab_size)

    def init_state(self, final: Tensor) -> Tensor:
        s0 = torch.tanh(self.W_s(self.s0_input(final)))
        # The attentional vector h̃_0 of input feeding starts at zero.
        return torch.cat([s0, torch.zeros_like(s0)], dim=-1) if self.input_feeding else s0

    def _step(
        self, y_emb: Tensor, s_prev: Tensor, mem: SourceMemory
    ) -> tuple[tuple[Tensor, ...], Tensor, Tensor | None]:
        if self.input_feeding:
            s_prev, h_tilde_prev = s_prev[:, : self.d_s], s_prev[:, self.d_s :]
            s = _gru_cell(self.cell, torch.cat([y_emb, h_tilde_prev], dim=-1), s_prev)
        else:
            s = _gru_cell(self.cell, y_emb, s_prev)
        c, alpha = self._attend(s, mem)  # scores use s_t
        h_tilde = torch.tanh(F.linear(torch.cat([c, s], dim=-1), self.W_c.weight, self.W_c.bias))
        carry = torch.cat([s, h_tilde], dim=-1) if self.input_feeding else s
        return (h_tilde,), carry, alpha

    def readout(self, parts: tuple[Tensor, ...], y_emb: Tensor) -> Tensor:
        """Logits ỹ_t = W_y h̃_t."""
        return F.linear(parts[0], self.W_y.weight, self.W_y.bias)


class NoAttentionDecoder(_ContextDecoder):
    """The vanilla RNN encoder–decoder (Cho et al. 2014): no attention.

    Its only view of the source is one fixed vector c = h_final (the final
    encoder states), which stands in for c_t at every step, in the same places
    as in :class:`BahdanauDecoder` (``context_in``). Whatever the source length,
    the decoder sees d_h numbers: the fixed-length bottleneck.

    See Also
    --------
    The chapter "The fixed-length bottleneck" (chapters/bottleneck).
    """

    has_attention = False

    def __init__(
        self,
        vocab_size: int,
        emb: int,
        d_s: int,
        d_h: int,
        d_final: int,
        context_in: ContextIn = "both",
        s0: S0 = "final",
    ) -> None:
        super().__init__(vocab_size, emb, d_s, d_h, d_final, d_final, context_in, s0)
        self._output_layers()

    def memory(
        self, h: Tensor, final: Tensor, mask: Tensor, *, edit: ScoreEdit | None = None
    ) -> SourceMemory:
        """The fixed vector c = final; h is never looked at, so there are no scores to edit."""
        _need(edit is None, "this model has no attention to intervene on (decoder='none')")
        return SourceMemory(final, None, None)

    def _step(
        self, y_emb: Tensor, s_prev: Tensor, mem: SourceMemory
    ) -> tuple[tuple[Tensor, ...], Tensor, Tensor | None]:
        parts, s = self._advance(y_emb, mem.h, s_prev)  # the same c at every step
        return parts, s, None


def _unpadded_memory(mem: SourceMemory) -> SourceMemory:
    """``mem`` without its bias if no source has padding (for decoding; same α, one add less).

    The bias is 0 on real tokens and -inf on pads; with no pad it is all zeros, and
    adding it to e_t changes nothing. :meth:`Decoder.memory` always returns it (it is
    part of what a learner inspects); decoding loops drop it here, once per batch.
    """
    if mem.bias is None or mem.mask is None or not bool(mem.mask.all()):
        return mem
    return dataclasses.replace(mem, bias=None)


# --------------------------------------------------------------------------- greedy decoding
class Greedy(NamedTuple):
    """What :func:`greedy_steps` wrote: one column per decoder step, one row per sentence.

    Attributes
    ----------
    tokens : (B, T_y) long
        Each row's outputs, its ``<eos>`` included, then ``<pad>``: a row writes ``<pad>``
        once it has written ``<eos>`` or reached its limit.
    alpha : (B, T_y, T_x) or None
        α_t of every step; zero rows where ``tokens`` is ``<pad>``. None without attention.
    top : (B, T_y) float32
        The logit of each written token (the largest of its step); 0 where ``<pad>``.
    log_p : (B, T_y) float32
        The log-probability of each written token, from a softmax over the whole target
        vocabulary; 0 where ``<pad>``.
    """

    tokens: Tensor
    alpha: Tensor | None
    top: Tensor
    log_p: Tensor


@torch.no_grad()
def greedy_steps(decoder: Decoder, mem: SourceMemory, s: Tensor, limits: Sequence[int]) -> Greedy:
    """Greedy decoding: at every step the most probable output is fed back as y_{t-1}.

    The one greedy loop of the course: :meth:`Seq2Seq.greedy` and
    :func:`attnlib.decoding.greedy` run it. Every step is one ``decoder.step`` on all the
    rows; ``<pad>`` and ``<bos>`` are never written (they are not outputs), so the argmax
    runs over ``<eos>`` and the tokens. A row ends when it writes ``<eos>`` or when it has
    written ``limits[b]`` tokens; the loop ends when every row has.

    Parameters
    ----------
    decoder : Decoder
        Anything with ``step(y_prev, s_prev, mem) → (logits, s_t, α_t)``.
    mem : SourceMemory
        From ``decoder.memory(h, final, mask)``.
    s : (B, ·)
        The first decoder state s_0 (``decoder.init_state(final)``, or one of the caller's).
    limits : sequence of int
        Most tokens each row may write, ``<eos>`` included (≥ 1).

    Returns
    -------
    Greedy
    """
    _need(
        len(limits) >= 1 and all(isinstance(n, int) and n >= 1 for n in limits),
        f"greedy decoding needs a limit ≥ 1 per row, got {list(limits)!r}",
    )
    B = len(limits)
    limit = torch.tensor(limits)
    y = torch.full((B,), BOS_ID, dtype=torch.long)  # y_0 = <bos>
    done = torch.zeros(B, dtype=torch.bool)  # rows that have ended
    tokens, alphas, tops, log_ps = [], [], [], []
    for t in range(1, max(limits) + 1):
        logits, s, alpha = decoder.step(y, s, mem)
        logits = logits.float()
        top, y = logits[:, _FIRST_OUTPUT_ID:].max(dim=-1)  # the first largest, as argmax
        y = y + _FIRST_OUTPUT_ID
        log_p = torch.log_softmax(logits, dim=-1).gather(1, y.unsqueeze(1)).squeeze(1)
        y = y.masked_fill(done, PAD_ID)  # an ended row writes <pad> (and reads it next)
        tokens.append(y)
        tops.append(top.masked_fill(done, 0.0))
        log_ps.append(log_p.masked_fill(done, 0.0))
        if alpha is not None:
            alphas.append(alpha.masked_fill(done.unsqueeze(1), 0.0))
        done = done | (y == EOS_ID) | (limit <= t)
        if bool(done.all()):
            break
    return Greedy(
        torch.stack(tokens, dim=1),
        torch.stack(alphas, dim=1) if alphas else None,
        torch.stack(tops, dim=1),
        torch.stack(log_ps, dim=1),
    )


# --------------------------------------------------------------------------- Seq2Seq
class Seq2Seq(nn.Module):
    """An encoder and a decoder, joined: the model the chapters train and read.

    Parameters
    ----------
    encoder : BiGRUEncoder or EmbeddingEncoder
    decoder : BahdanauDecoder, LuongDecoder or NoAttentionDecoder
    src_vocab_size, tgt_vocab_size : int
        For the id checks.
    config : ModelConfig, optional
        The :func:`make_seq2seq` keywords, kept so that a checkpoint can
        rebuild the model (:meth:`from_config`).

    Notes
    -----
    Sources are padded batches ``src : (B, T_x)`` of ids, each row a sequence
    followed by ``<eos>`` and then only ``<pad>`` (id 0). Targets for teacher
    forcing are ``tgt_in : (B, T_y)``, starting with ``<bos>``.

    See Also
    --------
    The chapter "A Bahdanau seq2seq, built from parts" (chapters/seq2seq).
    """

    def __init__(
        self,
        encoder: nn.Module,
        decoder: Decoder,
        src_vocab_size: int,
        tgt_vocab_size: int,
        config: ModelConfig | None = None,
    ) -> None:
        super().__init__()
        _need(
            bool(encoder.d_h == decoder.d_h),
            f"the decoder expects d_h={decoder.d_h} components in h but the encoder "
            f"produces {encoder.d_h}",
        )
        self.encoder, self.decoder = encoder, decoder
        self.src_vocab_size, self.tgt_vocab_size = src_vocab_size, tgt_vocab_size
        self.config = config

    @property
    def has_attention(self) -> bool:
        """False for the no-attention baseline (its α is None)."""
        return self.decoder.has_attention

    @property
    def attention(self) -> nn.Module | None:
        """The decoder's attention module (None for the baseline)."""
        return getattr(self.decoder, "attention", None)

    @classmethod
    def from_config(cls, config: ModelConfig | Mapping[str, Any]) -> Seq2Seq:
        """Rebuild an untrained model from :attr:`config` (or its dict); load its weights next."""
        if isinstance(config, ModelConfig):
            config = config.as_dict()
        return make_seq2seq(**config)

    # -- checks
    def _check_ids(self, x: Tensor, name: str, vocab_size: int) -> None:
        if not isinstance(x, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(x).__name__}")
        if x.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
            raise TypeError(f"{name} must hold integer token ids, got dtype {x.dtype}")
        if x.dim() != 2:
            raise ValueError(f"{name} must have shape (B, T), got shape {tuple(x.shape)}")
        if x.shape[0] < 1 or x.shape[1] < 1:
            raise ValueError(
                f"{name} is empty (shape {tuple(x.shape)}); each sequence needs at least one token"
            )
        lo, hi = torch.aminmax(x)
        if int(lo) < 0 or int(hi) >= vocab_size:
            bad = (x < 0) | (x >= vocab_size)
            b, t = (int(k) for k in torch.nonzero(bad)[0])
            raise ValueError(
                f"{name} has token id {int(x[b, t])} at (batch {b}, position {t}), outside "
                f"the vocabulary of {vocab_size} ids (0 … {vocab_size - 1})"
            )

    def source_mask(self, src: Tensor) -> Tensor:
        """mask : (B, T_x) bool, True on real tokens; checks the ids and the padding.

        Raises
        ------
        ValueError
            For ids outside the source vocabulary, an empty sequence (a row of
            only ``<pad>``) or ``<pad>`` in the middle of a sequence.
        """
        self._check_ids(src, "src", self.src_vocab_size)
        mask = src != PAD_ID
        if bool(mask.all()):  # no <pad> at all (one sentence, say): nothing more to check
            return mask
        lengths = mask.sum(dim=1)
        empty = lengths == 0
        if bool(empty.any()):
            raise ValueError(
                f"src row {int(torch.nonzero(empty)[0, 0])} is empty (only <pad>); "
                "each source needs T_x ≥ 1 real token"
            )
        prefix = torch.arange(src.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)
        if not torch.equal(mask, prefix):
            row = int(torch.nonzero((mask != prefix).any(dim=1))[0, 0])
            raise ValueError(
                f"src row {row} has <pad> (id {PAD_ID}) before a real token; "
                "padding must come after the sequence"
            )
        return mask

    # -- running
    def encode(self, src: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Run the encoder: h (B, T_x, d_h), final (B, d_final), mask (B, T_x)."""
        mask = self.source_mask(src)
        h, final = self.encoder(src.long(), mask.sum(dim=1))
        return h, final, mask

    def forward(
        self,
        src: Tensor,
        tgt_in: Tensor,
        *,
        edit: ScoreEdit | None = None,
        keep: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Teacher forcing.

        Parameters
        ----------
        src : (B, T_x) long
        tgt_in : (B, T_y) long
            ``<bos>`` y_1 … y_{T_y-1}: the previous target token at every step.
        edit : ScoreEdit, optional
            Rewrites the scores of every decoder step (see :class:`ScoreEdit`).
        keep : (B, T_y) bool, optional
            Where logits are wanted, e.g. ``tgt_out != PAD_ID``: the output layer (the
            largest cost on a real vocabulary) then skips the padded target positions.

        Returns
        -------
        logits : (B, T_y, V_tgt), or (N, V_tgt) with ``keep``: the kept positions in
            row-major order, N = keep.sum() (the same numbers as ``logits[keep]``)
        alpha : (B, T_y, T_x), or None without attention
        """
        self._check_ids(tgt_in, "tgt_in", self.tgt_vocab_size)
        _need(
            tgt_in.shape[0] == src.shape[0],
            f"src has {src.shape[0]} sequences but tgt_in has {tgt_in.shape[0]}",
        )
        if keep is not None:
            _need(
                isinstance(keep, Tensor)
                and keep.dtype == torch.bool
                and tuple(keep.shape) == tuple(tgt_in.shape),
                "keep must be a bool mask of shape (B, T_y) = "
                f"{tuple(tgt_in.shape)}, like tgt_in; got "
                + (
                    f"{keep.dtype} of shape {tuple(keep.shape)}"
                    if isinstance(keep, Tensor)
                    else type(keep).__name__
                ),
            )
        h, final, mask = self.encode(src)
        mem = self.decoder.memory(h, final, mask, edit=edit)
        return self.decoder(tgt_in.long(), self.decoder.init_state(final), mem, keep)

    @torch.no_grad()
    def greedy(
        self, src: Tensor, max_len: int | None = None, *, edit: ScoreEdit | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """Greedy decoding: at every step the most probable token is fed back.

        Parameters
        ----------
        src : (B, T_x) long
        max_len : int, optional
            Most output tokens per sequence (``<eos>`` included); default
            2 T_x + 2. Decoding stops early once every row has produced ``<eos>``.
        edit : ScoreEdit, optional
            Rewrites the scores of every decoder step (see :class:`ScoreEdit`).

        Returns
        -------
        tokens : (B, T_y) long
            Output ids (never ``<pad>`` or ``<bos>``); after a row's ``<eos>``
            come ``<pad>`` ids.
        alpha : (B, T_y, T_x) or None
            α_ti for every output step (zero rows after ``<eos>``).

        See Also
        --------
        greedy_steps : the loop.
        attnlib.decoding.greedy : the same outputs, with their log-probabilities.
        """
        h, final, mask = self.encode(src)
        B, T_x = src.shape
        if max_len is None:
            max_len = 2 * T_x + 2
        _need(isinstance(max_len, int) and max_len >= 1, f"max_len must be ≥ 1, got {max_len!r}")
        mem = _unpadded_memory(self.decoder.memory(h, final, mask, edit=edit))
        run = greedy_steps(self.decoder, mem, self.decoder.init_state(final), [max_len] * B)
        return run.tokens, run.alpha


@dataclass(frozen=True)
class ModelConfig:
    """The keywords :func:`make_seq2seq` built a model from, with the defaults filled in.

    ``make_seq2seq(**config.as_dict())`` (or :meth:`Seq2Seq.from_config`)
    builds the same untrained model again. The fields are those of
    :func:`make_seq2seq`, with the vocabularies as sizes.
    """

    src_vocab: int
    tgt_vocab: int
    decoder: Literal["bahdanau", "luong", "none"]
    encoder: Literal["birnn", "embedding"]
    emb: int
    hidden: int
    d_s: int
    d_a: int
    score: Score
    context_in: ContextIn
    input_feeding: bool
    seed: int
    s0: S0 = "final"

    def as_dict(self) -> dict[str, Any]:
        """The fields as plain keywords (for a checkpoint or a JSON file)."""
        return dataclasses.asdict(self)


def _size(v: int | Sized, name: str) -> int:
    n = v if isinstance(v, int) else len(v)
    _need(n > EOS_ID + 1, f"{name} must have more than 3 ids (<pad> <bos> <eos> + tokens), got {n}")
    return n


def make_seq2seq(
    src_vocab: int | Sized,
    tgt_vocab: int | Sized,
    *,
    decoder: Literal["bahdanau", "luong", "none"] = "bahdanau",
    encoder: Literal["birnn", "embedding"] = "birnn",
    emb: int = 16,
    hidden: int = 32,
    d_s: int = 48,
    d_a: int = 16,
    score: Score | None = None,
    context_in: ContextIn = "both",
    input_feeding: bool = True,
    seed: int = 0,
    s0: S0 = "final",
) -> Seq2Seq:
    """Build a seq2seq model; the one constructor the chapters need.

    Parameters
    ----------
    src_vocab, tgt_vocab : int or Vocab
        Vocabulary sizes (or the vocabularies of a :class:`attnlib.tasks.Task`).
    decoder : {"bahdanau", "luong", "none"}
        Which decoder; "none" is the no-attention baseline.
    encoder : {"birnn", "embedding"}
        A bidirectional GRU (d_h = 2 × ``hidden``) or bare embeddings
        (d_h = ``emb``, the ablation).
    emb : int
        Embedding size on both sides.
    hidden : int
        Encoder GRU size per direction (d_h = 2 × ``hidden``).
    d_s : int
        Decoder state size.
    d_a : int
        Attention size (additive score).

        The defaults (16, 32 → d_h = 64, 48, 16) are the course's small models,
        those of :mod:`attnlib.pretrained`: three different sizes d_h, d_s, d_a,
        so that a shape error cannot hide.
    score : {"additive", "general", "dot"}, optional
        Default "additive" for Bahdanau, "general" for Luong.
    context_in : {"both", "state", "output"}
        Where c_t enters the Bahdanau (or baseline) decoder.
    input_feeding : bool
        Luong decoder only.
    seed : int
        Seeds the initial weights (the global torch RNG is left untouched).
    s0 : {"final", "backward"}
        What the first decoder state is built from: s_0 = tanh(W_s [→h_L; ←h_1] + b_s)
        ("final", the course's default), or, as in Bahdanau et al. (2015),
        s_0 = tanh(W_s ←h_1 + b_s) from the backward encoder state alone
        ("backward"; needs the bidirectional encoder).

    Returns
    -------
    Seq2Seq

    See Also
    --------
    The chapter "A Bahdanau seq2seq, built from parts" (chapters/seq2seq).
    """
    n_src, n_tgt = _size(src_vocab, "src_vocab"), _size(tgt_vocab, "tgt_vocab")
    _need(
        decoder in ("bahdanau", "luong", "none"),
        f"decoder must be 'bahdanau', 'luong' or 'none', got {decoder!r}",
    )
    _need(
        encoder in ("birnn", "embedding"),
        f"encoder must be 'birnn' or 'embedding', got {encoder!r}",
    )
    for name, d in (("emb", emb), ("hidden", hidden), ("d_s", d_s), ("d_a", d_a)):
        _need(
            isinstance(d, int) and not isinstance(d, bool) and d >= 1,
            f"{name} must be a whole number ≥ 1, got {d!r}",
        )
    _need(s0 in ("final", "backward"), f"s0 must be 'final' or 'backward', got {s0!r}")
    _need(
        s0 == "final" or encoder == "birnn",
        "s0='backward' builds s_0 from ←h_1, which only the bidirectional encoder "
        "(encoder='birnn') has",
    )
    if score is None:
        score = "general" if decoder == "luong" else "additive"
    config = ModelConfig(
        src_vocab=n_src, tgt_vocab=n_tgt, decoder=decoder, encoder=encoder, emb=emb,
        hidden=hidden, d_s=d_s, d_a=d_a, score=score, context_in=context_in,
        input_feeding=input_feeding, seed=seed, s0=s0,
    )  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        enc: nn.Module
        if encoder == "birnn":
            enc = BiGRUEncoder(n_src, emb, hidden)
        else:
            enc = EmbeddingEncoder(n_src, emb)
        d_h, d_final = enc.d_h, enc.d_final
        dec: Decoder
        if decoder == "bahdanau":
            dec = BahdanauDecoder(n_tgt, emb, d_s, d_h, d_final, d_a, context_in, score, s0)
        elif decoder == "luong":
            dec = LuongDecoder(n_tgt, emb, d_s, d_h, d_final, d_a, score, input_feeding, s0)
        else:
            dec = NoAttentionDecoder(n_tgt, emb, d_s, d_h, d_final, context_in, s0)
    return Seq2Seq(enc, dec, n_src, n_tgt, config)
