"""Greedy and beam-search decoding for :class:`attnlib.models.Seq2Seq`.

Decoding turns the model's next-token distributions p(y_t | y_<t, x) into one
output sequence. Greedy decoding feeds back the single most probable token at
every step; beam search keeps the k best prefixes (by log-probability) at every
step and so can recover from a first token that looked best but leads nowhere.

Quick start::

    from attnlib.decoding import beam_search, greedy

    [g] = greedy(model, src)            # src : (1, T_x)
    [b] = beam_search(model, src, k=5)
    b.tokens, b.score, b.alpha          # ids, normalised log p, α (T_y, T_x)
    [h.tokens for h in b.kbest]         # the k best, best first

Both return one :class:`Decoded` per source row, so the two are compared
sentence by sentence.

How the search runs
-------------------
* **Batched over sentences and beams.** The B sentences and their k beams are
  B·k rows ("lanes") of one decoder state, and every step is one call of
  ``model.decoder.step`` on all of them. The source memory (h, the keys U_a h,
  the mask) is computed once per sentence and repeated over its k lanes; the
  keys are never recomputed.
* **One sentence, or k = 1.** A batch without padding (one sentence always)
  skips the all-zero mask bias; with k = 1 a lighter loop takes the argmax
  at every step and does none of the beam bookkeeping (tests check that it
  returns what the general search with k = 1 returns). One sentence of the
  course's own Bahdanau model with k = 1 (the translate widget's path) goes
  further: its arithmetic is rearranged for a single sentence (see the section
  "one sentence, k = 1" below), with the same tokens and the numbers equal up
  to float32 rounding. The input checks run once per call, not once per step.
* **Pruning by log-probability.** Each step scores the k·V continuations of a
  sentence's k prefixes by their summed log-probability and keeps the 2k best.
  Those ending in ``<eos>`` among the first k are finished hypotheses; the k
  best that do not end in ``<eos>`` go on. A sentence is done once it has k
  finished hypotheses, or at ``max_len`` steps (its live prefixes are then kept
  as unfinished hypotheses). With k = 1 this is greedy decoding, step for step.
* **Length normalisation at the end.** Summed log-probabilities favour short
  outputs (every token multiplies in a probability below 1), so the finished
  hypotheses are ranked by score = log p(y | x) / lp(|y|), with Wu et al.'s
  (2016, GNMT) penalty lp(|y|) = ((5 + |y|) / 6)^length_alpha. Why this one
  rather than |y|^length_alpha: it is 1 for a one-token output and grows almost
  linearly later, so on the course's short sentences (1 to 9 output steps) the
  step from one token to two is not the largest bonus of all, as it is with
  |y|^length_alpha (2^0.6 ≈ 1.52 against (7/6)^0.6 ≈ 1.10).
  ``length_alpha=0`` gives lp = 1: the raw log-probability.

|y| counts the scored steps: the output tokens plus the ``<eos>`` of a
finished hypothesis. ``<pad>`` and ``<bos>`` are never generated (as in
:meth:`Seq2Seq.greedy`), but the log-probabilities are the model's own, from a
softmax over the whole target vocabulary, so a score can be recomputed by
teacher forcing through ``model(src, tgt_in)``.

Beam search is a heuristic, not an exact search: a prefix it prunes might have
led to the best sequence, and on some models its best hypothesis scores lower
than greedy's (``tests/test_decoding.py`` builds one). With k at least the
number of possible prefixes it prunes nothing and is exact.

See Also
--------
attnlib.models.Seq2Seq.greedy : greedy decoding that returns padded tensors.
The Part IV chapter on decoding and scoring real translations (issue 15).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlib.models import (
    _FIRST_OUTPUT_ID,
    AdditiveAttention,
    BahdanauDecoder,
    BiGRUEncoder,
    SourceMemory,
    _unpadded_memory,
)
from attnlib.runtime import eval_mode
from attnlib.vocab import BOS_ID, EOS_ID

__all__ = ["Decoded", "Hypothesis", "beam_search", "greedy", "length_penalty"]


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Hypothesis:
    """One decoded output sequence and what the model thinks of it.

    Attributes
    ----------
    tokens : tuple of int
        Output ids, without ``<bos>`` and ``<eos>``.
    log_prob : float
        log p(y | x): the sum of the log-probabilities of the scored steps
        (the tokens, then ``<eos>`` if ``finished``).
    score : float
        ``log_prob / length_penalty(steps, length_alpha)``: what the hypotheses
        are ranked by (equal to ``log_prob`` for ``length_alpha=0``).
    finished : bool
        True if the hypothesis ended with ``<eos>``; False if ``max_len`` cut it.
    alpha : (T_y, T_x) tensor or None
        α_ti of every scored step (T_y = ``steps``, the ``<eos>`` step
        included) over the sentence's own T_x source positions (its ``<eos>``
        included, the batch's padding left out). None for a model without
        attention or with ``return_attention=False``.
    """

    tokens: tuple[int, ...]
    log_prob: float
    score: float
    finished: bool
    alpha: Tensor | None

    @property
    def steps(self) -> int:
        """|y|: the number of scored steps, ``len(tokens)`` plus the ``<eos>`` if finished."""
        return len(self.tokens) + int(self.finished)


@dataclass(frozen=True)
class Decoded:
    """The result for one source sentence: its k best hypotheses, best first.

    The attributes of the best one are repeated here (``tokens``, ``score``,
    ``log_prob``, ``finished``, ``alpha``), so ``result.tokens`` is the output.
    """

    kbest: tuple[Hypothesis, ...]

    @property
    def best(self) -> Hypothesis:
        """The hypothesis with the highest score."""
        return self.kbest[0]

    @property
    def tokens(self) -> tuple[int, ...]:
        return self.best.tokens

    @property
    def score(self) -> float:
        return self.best.score

    @property
    def log_prob(self) -> float:
        return self.best.log_prob

    @property
    def finished(self) -> bool:
        return self.best.finished

    @property
    def alpha(self) -> Tensor | None:
        return self.best.alpha


def length_penalty(steps: int, length_alpha: float) -> float:
    """GNMT's lp(|y|) = ((5 + |y|) / 6)^length_alpha; 1 for ``length_alpha=0``.

    Parameters
    ----------
    steps : int
        |y|, the scored steps (output tokens plus ``<eos>`` when finished).
    length_alpha : float
        The exponent; 0 turns length normalisation off.
    """
    return ((5.0 + steps) / 6.0) ** length_alpha


# --------------------------------------------------------------------------- checks
def _check_args(model: Any, k: Any, max_len: Any, length_alpha: Any) -> None:
    if not (isinstance(k, int) and not isinstance(k, bool)) or k < 1:
        raise ValueError(f"the beam size k must be a whole number ≥ 1, got {k!r}")
    if max_len is not None and (
        not (isinstance(max_len, int) and not isinstance(max_len, bool)) or max_len < 1
    ):
        raise ValueError(f"max_len must be a whole number ≥ 1 (or None), got {max_len!r}")
    if (
        isinstance(length_alpha, bool)
        or not isinstance(length_alpha, int | float)
        or not math.isfinite(length_alpha)
        or length_alpha < 0
    ):
        raise ValueError(
            f"length_alpha must be a finite number ≥ 0 (0 = raw log-probability), "
            f"got {length_alpha!r}"
        )
    decoder = getattr(model, "decoder", None)
    needed = ("encode", "tgt_vocab_size", "train")
    missing = [n for n in needed if not hasattr(model, n)]
    missing += [f"decoder.{n}" for n in ("memory", "init_state", "step") if not hasattr(decoder, n)]
    if missing:
        raise TypeError(
            f"decoding needs a seq2seq model (attnlib.models.Seq2Seq); "
            f"{type(model).__name__} has no {', '.join(missing)}"
        )


def _eval_mode(model: Any) -> contextlib.AbstractContextManager[Any]:
    """``eval_mode(model)``, or nothing to do if every module is in eval mode already.

    Switching modes walks the whole module tree twice; for one short sentence that
    costs about as much as a decoder step.
    """
    modules = getattr(model, "modules", None)
    if callable(modules) and not any(m.training for m in modules()):
        return contextlib.nullcontext(model)
    return eval_mode(model)


def _log_normaliser(logits: Tensor, top_logit: Tensor, top_tok: Tensor) -> Tensor:
    """log Σ_v exp(logits_v) of each row, in float64: (N, V) → (N,).

    From one fused log_softmax pass (``torch.logsumexp`` makes several passes over the
    V logits, the largest cost of a step over a batch). The row's most probable
    output, ``top_tok`` with logit ``top_logit``, has log p = logit - lse, so
    lse = logit - log p; in float64 that subtraction of two float32 numbers is exact.
    """
    return top_logit.double() - _log_p_of(logits, top_tok).double()


def _log_p_of(logits: Tensor, tok: Tensor) -> Tensor:
    """log p of one token per row, from the logits: (N, V), (N,) → (N,) float32."""
    return torch.log_softmax(logits, dim=-1).gather(1, tok.unsqueeze(1)).squeeze(1)


def _stepper(decoder: Any, mem: SourceMemory) -> Callable[..., Any]:
    """``decoder.step(·, ·, mem)``: the decoder's own closure if it has one (weights looked up
    once, see ``Decoder._stepper``), else a plain call."""
    make = getattr(decoder, "_stepper", None)
    return make(mem) if callable(make) else functools.partial(decoder.step, mem=mem)


def _repeat(x: Tensor | None, k: int) -> Tensor | None:
    """Each row of x, k times in a row: (B, ...) → (B·k, ...), sentence b in lanes b·k … b·k+k-1."""
    return None if x is None else x.repeat_interleave(k, dim=0)


# --------------------------------------------------------------------------- search
@torch.no_grad()
def beam_search(
    model: Any,
    src: Tensor,
    k: int = 5,
    max_len: int | None = None,
    length_alpha: float = 0.6,
    *,
    return_attention: bool = True,
) -> list[Decoded]:
    """Beam search over a batch of sources, all sentences and beams in one decoder call per step.

    Parameters
    ----------
    model : Seq2Seq
        Any model with ``encode``, ``decoder.memory``, ``decoder.init_state``,
        ``decoder.step`` and ``tgt_vocab_size`` (see :class:`attnlib.models.Decoder`).
        It runs in eval mode and is handed back in the mode it was in.
    src : (B, T_x) long
        Padded source ids (each row ends with ``<eos>``, then ``<pad>``), B ≥ 1.
    k : int
        Beam size, ≥ 1; k = 1 is greedy decoding.
    max_len : int, optional
        Most scored steps per output (``<eos>`` included). Default: 2 T_x + 2
        with each sentence's own T_x (``<eos>`` included), so a sentence
        decodes the same alone or in a batch.
    length_alpha : float
        Exponent of the length penalty ((5 + |y|) / 6)^length_alpha (see the
        module notes for why this form); 0 ranks by raw log-probability.
        (Not called ``alpha``: in the course α is the attention weights.)
    return_attention : bool
        Keep α for every hypothesis (a little slower); False gives ``alpha=None``.

    Returns
    -------
    list of Decoded
        One per source row, in order; each holds up to k hypotheses, best first.

    Raises
    ------
    ValueError
        For k < 1, max_len < 1, a negative length_alpha, or a malformed ``src``
        (the model's own checks: ids outside the vocabulary, empty rows,
        padding before a token).
    TypeError
        For a model without the decoder interface, or ``src`` that is not an
        integer tensor.

    See Also
    --------
    greedy : the same result type for k = 1.
    attnlib.models.Seq2Seq.greedy
    """
    _check_args(model, k, max_len, length_alpha)
    if k == 1 and _fast_applies(model, src):  # one sentence, the course's model
        return [_one_sentence(model, src, max_len, float(length_alpha), return_attention)]
    with _eval_mode(model):
        if k == 1:
            return _search_k1(model, src, max_len, float(length_alpha), return_attention)
        return _search(model, src, k, max_len, float(length_alpha), return_attention)


def greedy(
    model: Any,
    src: Tensor,
    max_len: int | None = None,
    length_alpha: float = 0.6,
    *,
    return_attention: bool = True,
) -> list[Decoded]:
    """Greedy decoding with the result type of :func:`beam_search`, for comparisons.

    The most probable token is fed back at every step; the output ids are those
    of :meth:`attnlib.models.Seq2Seq.greedy` (tested), here with their
    log-probability and score (normalised with ``length_alpha`` so that they
    can be set beside a beam's). It is :func:`beam_search` with k = 1, which
    keeps one prefix and extends it by its most probable token.

    Parameters
    ----------
    model, src, max_len, length_alpha, return_attention
        As for :func:`beam_search`.

    Returns
    -------
    list of Decoded
        One per source row, each with a single hypothesis.
    """
    return beam_search(model, src, 1, max_len, length_alpha, return_attention=return_attention)


def _search(
    model: Any,
    src: Tensor,
    k: int,
    max_len: int | None,
    length_alpha: float,
    return_attention: bool,
) -> list[Decoded]:
    h, final, mask = model.encode(src)
    B = int(mask.shape[0])
    n_real = mask.sum(dim=1)  # (B,) each source's T_x, its <eos> included
    lengths = [int(n) for n in n_real.tolist()]
    limits = [2 * n + 2 for n in lengths] if max_len is None else [max_len] * B
    V = int(model.tgt_vocab_size)
    first = _FIRST_OUTPUT_ID  # <pad> and <bos> (ids below it) are not outputs
    # A lane's candidates: the global 2k best are among them (k·per_lane ≥ 2k, as V ≥ 4).
    per_lane = min(2 * k, V - first)

    # The source memory, once per sentence, repeated over its k lanes (keys included).
    mem: SourceMemory = _unpadded_memory(model.decoder.memory(h, final, mask))
    mem = dataclasses.replace(
        mem,
        h=mem.h.repeat_interleave(k, dim=0),
        keys=_repeat(mem.keys, k),
        bias=_repeat(mem.bias, k),
        mask=_repeat(mem.mask, k),
    )
    s = _repeat(model.decoder.init_state(final), k)  # (B·k, ...)
    step = _stepper(model.decoder, mem)  # decoder.step(·, ·, mem) on the B·k lanes
    N = B * k
    y = torch.full((N,), BOS_ID, dtype=torch.long)
    # Only lane 0 of each sentence is live at the start; the others wait at -inf.
    cum = torch.full((B, k), float("-inf"), dtype=torch.float64)
    cum[:, 0] = 0.0
    cum = cum.view(N)
    base = (torch.arange(B) * k).unsqueeze(1)  # (B, 1): sentence b's first lane
    history = torch.empty((N, 0), dtype=torch.long)  # tokens of each live prefix
    alphas: Tensor | None = None  # (N, t, T_x): α of each live prefix

    found: list[list[tuple[float, tuple[int, ...], bool, Tensor | None]]] = [[] for _ in range(B)]
    done = [False] * B

    def keep(b: int, logp: float, tokens: list[int], finished: bool, a: Tensor | None) -> None:
        found[b].append((logp, tuple(tokens), finished, None if a is None else a[:, : lengths[b]]))

    for t in range(1, max(limits) + 1):
        logits, s, alpha = step(y, s)  # (N, V), state, (N, T_x) or None
        logits = logits.float()
        # Two stages keep the order exact: a lane's 2k best tokens by their logits (what
        # argmax sees), then their log-probabilities in float64, so that adding the
        # prefix's log p can merge no two candidates (k = 1 is then greedy, step for step).
        best_logit, best_tok = logits[:, first:].topk(per_lane, dim=-1)  # (N, per_lane)
        best_tok += first
        lse = _log_normaliser(logits, best_logit[:, 0], best_tok[:, 0])  # over the whole vocabulary
        logp = best_logit.double() - lse.unsqueeze(1)  # (N, per_lane)
        cand = (cum.unsqueeze(1) + logp).view(B, k * per_lane)
        top, idx = cand.topk(2 * k, dim=1)  # (B, 2k), best first
        lane = idx // per_lane + base  # the lane each candidate extends
        tok = best_tok.view(B, k * per_lane).gather(1, idx)
        is_eos = tok == EOS_ID
        use_alpha = return_attention and alpha is not None
        step_alpha = alpha.unsqueeze(1) if use_alpha and alpha is not None else None

        # Finished: an <eos> among a sentence's k best candidates.
        fin = is_eos[:, :k] & torch.isfinite(top[:, :k])
        if bool(fin.any()):
            for b, r in fin.nonzero().tolist():
                if done[b] or len(found[b]) >= k:
                    continue
                src_lane = int(lane[b, r])
                a = None
                if step_alpha is not None:
                    prev = alphas[src_lane] if alphas is not None else None
                    a = step_alpha[src_lane]
                    a = a if prev is None else torch.cat([prev, a], dim=0)
                keep(b, float(top[b, r]), history[src_lane].tolist(), True, a)

        # Live: the k best candidates that do not end in <eos> (there are at least k).
        order = torch.argsort(is_eos.to(torch.int8), dim=1, stable=True)[:, :k]
        pick = lane.gather(1, order).view(N)
        y = tok.gather(1, order).view(N)
        cum = top.gather(1, order).view(N).clone()
        s = s.index_select(0, pick)
        history = torch.cat([history.index_select(0, pick), y.unsqueeze(1)], dim=1)
        if step_alpha is not None:
            a_new = step_alpha.index_select(0, pick)
            alphas = (
                a_new if alphas is None else torch.cat([alphas.index_select(0, pick), a_new], 1)
            )

        live = torch.isfinite(cum).view(B, k).any(dim=1).tolist()
        for b in range(B):
            if done[b]:
                continue
            if len(found[b]) >= k or not live[b]:
                done[b] = True
            elif t >= limits[b]:  # cut: the live prefixes become unfinished hypotheses
                for j in range(b * k, b * k + k):
                    if math.isfinite(float(cum[j])):
                        a = alphas[j] if alphas is not None else None
                        keep(b, float(cum[j]), history[j].tolist(), False, a)
                done[b] = True
        if all(done):
            break
        # A done sentence's lanes run on with the others (its results are closed).

    return _results(found, k, length_alpha)


def _results(
    found: list[list[tuple[float, tuple[int, ...], bool, Tensor | None]]],
    k: int,
    length_alpha: float,
) -> list[Decoded]:
    """The k best of each sentence's (log p, tokens, finished, α), ranked by normalised score."""
    results = []
    for b in range(len(found)):
        if not found[b]:  # pragma: no cover - a softmax over finite logits always has mass
            raise RuntimeError(f"beam search found no hypothesis for source row {b}")
        hyps = [
            Hypothesis(
                tokens=toks,
                log_prob=logp_b,
                score=logp_b / length_penalty(len(toks) + int(fin_b), length_alpha),
                finished=fin_b,
                alpha=a_b,
            )
            for logp_b, toks, fin_b, a_b in found[b]
        ]
        hyps.sort(key=lambda hyp: -hyp.score)  # stable: ties keep the order they were found in
        results.append(Decoded(tuple(hyps[:k])))
    return results


def _search_k1(
    model: Any,
    src: Tensor,
    max_len: int | None,
    length_alpha: float,
    return_attention: bool,
) -> list[Decoded]:
    """:func:`_search` with k = 1, without the beam bookkeeping.

    One lane per sentence: each step feeds back the argmax (``<pad>`` and ``<bos>``
    excluded) and records its logit and its log-probability; after the loop they become
    the float64 log-probabilities :func:`_search` computes (the same operations, on all
    steps at once), summed in step order, and α is stacked once.
    """
    h, final, mask = model.encode(src)
    B = int(mask.shape[0])
    lengths = [int(n) for n in mask.sum(dim=1).tolist()]  # each source's T_x, <eos> included
    limits = [2 * n + 2 for n in lengths] if max_len is None else [max_len] * B
    first = _FIRST_OUTPUT_ID
    mem = _unpadded_memory(model.decoder.memory(h, final, mask))
    s = model.decoder.init_state(final)
    step = _stepper(model.decoder, mem)
    y = torch.full((B,), BOS_ID, dtype=torch.long)
    tops: list[Tensor] = []  # (B,) float32 per step: the chosen token's logit
    log_ps: list[Tensor] = []  # (B,) float32 per step: its log-probability
    alphas: list[Tensor] = []  # (B, T_x) per step
    rows: list[list[int]] = []  # the chosen ids per step
    steps = [0] * B  # scored steps of a sentence once it is done (0: still going)
    finished = [False] * B
    going = B
    for t in range(1, max(limits) + 1):
        logits, s, alpha = step(y, s)
        logits = logits.float()
        top, y = logits[:, first:].max(dim=-1)  # first index on ties, like argmax
        y += first
        tops.append(top)
        log_ps.append(_log_p_of(logits, y))
        if return_attention and alpha is not None:
            alphas.append(alpha)
        row = y.tolist()
        rows.append(row)
        for b, tok in enumerate(row):
            if steps[b]:
                continue  # done: its lane runs on with the others, its result is closed
            if tok == EOS_ID or t >= limits[b]:
                steps[b], finished[b] = t, tok == EOS_ID
                going -= 1
        if not going:
            break

    top_all = torch.stack(tops, dim=1).double()  # (B, T)
    lse = top_all - torch.stack(log_ps, dim=1).double()  # what _log_normaliser gives
    logp = (top_all - lse).tolist()  # as in _search: logit - lse, in float64
    A = torch.stack(alphas, dim=1) if alphas else None  # (B, T, T_x)
    found: list[list[tuple[float, tuple[int, ...], bool, Tensor | None]]] = []
    for b in range(B):
        n = steps[b]
        total = 0.0
        for v in logp[b][:n]:  # in step order, as the beam adds them
            total += v
        tokens = tuple(rows[j][b] for j in range(n - finished[b]))
        a = None if A is None else A[b, :n, : lengths[b]]
        found.append([(total, tokens, finished[b], a)])
    return _results(found, 1, length_alpha)


# --------------------------------------------------------------------------- one sentence, k = 1
# Greedy decoding of one sentence at a time: the translate widget's path, made fast.
#
# beam_search with k = 1 on a single source sentence (what the translate widget and a
# learner typing a sentence do) runs here when the model is the course's own Bahdanau
# seq2seq (bidirectional GRU encoder, additive attention). The arithmetic is that of
# BiGRUEncoder and BahdanauDecoder, rearranged for one sentence:
#
# * Vectors, not batches: s_{t-1}, c_t and the logits are 1-D, every product is a
#   matrix-vector product, with each weight laid out once, when the model is first used.
#   Products of the same vector are stacked into one matrix (s_t meets W_o's state block
#   now, W_hh and W_a at the next step; c_t meets W_ih's and W_o's context blocks).
# * What depends only on a token is looked up, not computed: the GRUs' input gates and
#   the output layer read E y_{t-1} (and the encoder E x_i); their token parts are
#   tables with one row per token, built once per set of weights (training writes the
#   weights in place and bumps their version counters, which the cache compares).
# * The GRU cells written out: r, z = σ(gi + gh) at once, n = tanh(gi_n + r ⊙ gh_n),
#   s_t = n + z ⊙ (s_{t-1} - n) as one lerp; the encoder's two directions run as one
#   recurrence on [→h; ←h] with a block-diagonal W_hh.
# * Intermediate vectors are written in place into buffers whose parts are views made
#   once; the log-probabilities come after the loop, from one log-softmax over all steps.
#
# The numbers are those of the batched path up to float32 rounding (sums run in another
# order): tests/test_decoding_fast.py checks the same tokens, with log p and α within
# 1e-5, on test sentences of the English-French model. The input checks are the model's
# own (Seq2Seq.source_mask). bench/bench_translation.py times it against the PyTorch
# tutorial's model.


#: Methods whose replacement (on the instance) sends decoding back to the general path.
_FAST_PATCHABLE = {"step", "_step", "_advance", "_attend", "readout", "_stepper"}


def _fast_applies(model: Any, src: Tensor) -> bool:
    """True if ``src`` is one sentence and ``model`` the course's additive Bahdanau seq2seq.

    Anything else (another decoder, a replaced method, a score edit, a batch of several
    sentences) takes the general path, which handles every case.
    """
    decoder = getattr(model, "decoder", None)
    attention = getattr(decoder, "attention", None)
    return (
        isinstance(src, Tensor)
        and src.dim() == 2
        and src.shape[0] == 1
        and type(getattr(model, "encoder", None)) is BiGRUEncoder
        and type(decoder) is BahdanauDecoder
        and decoder.context_in == "both"
        and type(attention) is AdditiveAttention
        and not (_FAST_PATCHABLE & set(vars(decoder)))
        and "scores" not in vars(attention)
    )


@dataclass(frozen=True)
class _FastWeights:
    """The model's weights, laid out for matrix-vector products on one sentence.

    Products of the same vector are stacked into one matrix: s_t meets W_o's state
    block now and W_hh and W_a at the next step.
    """

    # encoder: the two directions of the GRU as one recurrence on h = [→h; ←h] (2H,),
    # rows ordered by gate, then direction: [r→; r←; z→; z←; n→; n←]
    src_gi_f: Tensor  # (V_src, 3H): forward W_ih E_x + b_ih, gates [r; z; n]
    src_gi_b: Tensor  # (V_src, 3H): the same for the backward direction
    enc_W_hh: Tensor  # (6H, 2H): both directions' W_hh, block-diagonal
    enc_b_hh: Tensor  # (6H,)
    # decoder
    U_a: Tensor  # (d_a, d_h)
    v_a: Tensor  # (d_a,)
    W_s: Tensor  # (d_s + 3 d_s + d_a, d_s): [W_o's s-block; W_hh; W_a]
    b_s_all: Tensor  # (d_s + 3 d_s + d_a,): b_hh of the n gate in its place, else 0
    # (V, 3 d_s + d_s): [W_ih's y-block E_y + b_ih (+ b_hh on r, z); W_o's y-block E_y + b_o]
    y_tab: Tensor
    W_c: Tensor  # (3 d_s + d_s, d_h): [W_ih's c-block; W_o's c-block]
    W_yT: Tensor  # (d_s, V): W_y transposed, contiguous
    b_y: Tensor  # (V,)
    W_s0: Tensor  # (d_s, ·): s_0 = tanh(W_s0 final[s0_from:] + b_s0)
    b_s0: Tensor  # (d_s,)
    s0_from: int  # 0 (s0="final") or H (s0="backward": ←h_1 only)


def _param_slots(model: Any) -> list[tuple[dict[str, Any], str]]:
    """Where each weight the fast path reads lives: (a module's parameter dict, name)."""
    enc, dec = model.encoder, model.decoder
    att, cell = dec.attention, dec.cell
    gru_names = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")
    return [
        (enc.embedding._parameters, "weight"),
        *((g._parameters, n) for g in (enc.gru_forward, enc.gru_backward) for n in gru_names),
        (dec.embedding._parameters, "weight"),
        (att.W_a._parameters, "weight"),
        (att.U_a._parameters, "weight"),
        (att.v_a._parameters, "weight"),
        *((cell._parameters, n) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")),
        *((m._parameters, n) for m in (dec.W_o, dec.W_y, dec.W_s) for n in ("weight", "bias")),
    ]


_Key = tuple[tuple[int, int, int], ...]
_FAST_CACHE: weakref.WeakKeyDictionary[
    Any, tuple[list[tuple[dict[str, Any], str]], _Key, _FastWeights, list[Any]]
]
_FAST_CACHE = weakref.WeakKeyDictionary()


def _key(slots: list[tuple[dict[str, Any], str]]) -> _Key:
    """(object id, storage, version) of every parameter; the cache keeps the objects alive."""
    return tuple((id(p), p.data_ptr(), p._version) for p in (d[n] for d, n in slots))


def _gates_bias(b_ih: Tensor, b_hh: Tensor, size: int) -> Tensor:
    """b_ih with b_hh added on the r and z gates (there the two biases just add up)."""
    out = b_ih.clone()
    out[: 2 * size] += b_hh[: 2 * size]
    return out


def _by_gate(f: Tensor, b: Tensor, H: int) -> Tensor:
    """Rows [r; z; n] of each direction → [r→; r←; z→; z←; n→; n←] (also for 1-D biases)."""
    return torch.stack([f.reshape(3, H, -1), b.reshape(3, H, -1)], dim=1).reshape(
        6 * H, *f.shape[1:]
    )


@torch.no_grad()
def _tables(model: Any) -> _FastWeights:
    """The laid-out weights of ``model``, rebuilt whenever a weight has changed.

    The cache compares every parameter's object, storage and version counter: an
    optimiser step or ``load_state_dict`` writes the weights in place and bumps the
    counter, and a replaced parameter is another object.
    """
    hit = _FAST_CACHE.get(model)
    if hit is not None and _key(hit[0]) == hit[1]:
        return hit[2]
    slots = _param_slots(model)
    key = _key(slots)
    kept = [d[n] for d, n in slots]  # held by the cache entry, so no id is reused
    params = (p.detach() for p in kept)
    (E_x, fw_ih, fw_hh, fb_ih, fb_hh, bw_ih, bw_hh, bb_ih, bb_hh, E, W_a, U_a, v_a,
     W_ih, W_hh, b_ih, b_hh, W_o, b_o, W_y, b_y, W_s0, b_s0) = params  # fmt: skip
    H = fw_hh.shape[1]
    emb, d_s = model.decoder.emb, model.decoder.d_s
    y_cols = W_o.shape[1] - emb  # W_o reads [s_t; c_t; E y_{t-1}]
    zero = torch.zeros_like(fw_hh)
    b_s_all = torch.zeros(W_o.shape[0] + W_hh.shape[0] + W_a.shape[0])
    b_s_all[d_s + 2 * d_s : d_s + 3 * d_s] = b_hh[2 * d_s :]
    weights = _FastWeights(
        src_gi_f=F.linear(E_x, fw_ih, fb_ih).contiguous(),
        src_gi_b=F.linear(E_x, bw_ih, bb_ih).contiguous(),
        enc_W_hh=_by_gate(torch.cat([fw_hh, zero], 1), torch.cat([zero, bw_hh], 1), H),
        enc_b_hh=_by_gate(fb_hh, bb_hh, H),
        U_a=U_a.contiguous(),
        v_a=v_a[0].contiguous(),
        W_s=torch.cat([W_o[:, :d_s], W_hh, W_a]).contiguous(),
        b_s_all=b_s_all,
        y_tab=torch.cat(
            [
                F.linear(E, W_ih[:, :emb], _gates_bias(b_ih, b_hh, d_s)),
                F.linear(E, W_o[:, y_cols:], b_o),
            ],
            dim=1,
        ),
        W_c=torch.cat([W_ih[:, emb:], W_o[:, d_s:y_cols]]).contiguous(),
        W_yT=W_y.t().contiguous(),
        b_y=b_y.contiguous(),
        W_s0=W_s0.contiguous(),
        b_s0=b_s0.contiguous(),
        s0_from=0 if model.decoder.s0 == "final" else H,
    )
    _FAST_CACHE[model] = (slots, key, weights, kept)
    return weights


def _encode(w: _FastWeights, ids: Tensor) -> tuple[Tensor, Tensor]:
    """The bidirectional GRU on one sentence's real ids (T_x,): h (T_x, 2H), final (2H,).

    Both directions run as one recurrence on [→h; ←h]: at step t the forward half reads
    x_t and the backward half x_{T+1-t}, so the last state is already [→h_T; ←h_1].
    """
    T, H = ids.shape[0], w.src_gi_f.shape[1] // 3
    # the input gates of every step, both directions, in the [r→; r←; z→; z←; n→; n←] order
    G = torch.stack(
        [w.src_gi_f.index_select(0, ids).view(T, 3, H),
         w.src_gi_b.index_select(0, ids.flip(0)).view(T, 3, H)], dim=2,
    ).view(T, 6 * H)  # fmt: skip
    W_hh, b_hh = w.enc_W_hh, w.enc_b_hh
    h = torch.zeros(2 * H)
    outs = []
    # Buffers written in place every step, and their parts as views made once.
    gh, rz = torch.empty(6 * H), torch.empty(4 * H)
    gh_rz, gh_n, r, z = gh[: 4 * H], gh[4 * H :], rz[: 2 * H], rz[2 * H :]
    for gi_rz, gi_n in zip(G[:, : 4 * H].unbind(0), G[:, 4 * H :].unbind(0), strict=True):
        torch.addmv(b_hh, W_hh, h, out=gh)
        torch.sigmoid(gi_rz + gh_rz, out=rz)
        h = torch.lerp(torch.tanh(torch.addcmul(gi_n, r, gh_n)), h, z)  # n + z ⊙ (h - n)
        outs.append(h)
    hs = torch.stack(outs)  # (T, 2H): row t = [→h_t; ←h_{T+1-t}]
    return torch.cat([hs[:, :H], hs[:, H:].flip(0)], dim=1), h


@torch.inference_mode()  # as no_grad, and lighter on small tensors (no version counters)
def _decode_one(
    model: Any, src: Tensor, max_len: int | None, return_attention: bool
) -> tuple[tuple[int, ...], list[float], bool, list[Tensor]]:
    """Greedy decoding of one sentence ``src`` (1, T_x) (see :func:`_fast_applies`).

    Returns
    -------
    tokens : tuple of int
        The output ids, without ``<eos>``.
    log_ps : list of float
        log p of every scored step (the tokens, then ``<eos>`` if finished), float64 values
        of the float32 log-softmax, in step order.
    finished : bool
        True if the output ended with ``<eos>``; False if ``max_len`` cut it.
    alphas : list of (T_x,) tensors
        α_t of every scored step over the sentence's real source positions (empty
        without ``return_attention``); inference tensors, stacked by the caller.
    """
    mask = model.source_mask(src)  # the model's own checks on src
    n = int(mask.sum())
    w = _tables(model)
    H, final = _encode(w, src[0, :n].long())  # (T_x, d_h): only the real positions
    Ht = H.t()
    keys = F.linear(H, w.U_a)  # (T_x, d_a): U_a h_i, once per sentence
    s = torch.tanh(torch.addmv(w.b_s0, w.W_s0, final[w.s0_from :]))  # s_0 (d_s,)
    d_s = s.shape[0]
    limit = 2 * n + 2 if max_len is None else max_len
    first = _FIRST_OUTPUT_ID
    v_a, W_s, b_s, y_tab, W_c, W_yT, b_y = w.v_a, w.W_s, w.b_s_all, w.y_tab, w.W_c, w.W_yT, w.b_y
    mv, addmv, tanh = torch.mv, torch.addmv, torch.tanh
    # Buffers written in place every step, and their parts as views made once:
    # S = W_s s + b_s = [W_o's s-block s; W_hh s + b_hh (r, z | n); W_a s]
    # Y = W_c c + y_tab[y] = [W_ih [E y; c] + b_ih (r, z | n); W_o's (c, y)-blocks [c; E y] + b_o]
    S, Y, rz = torch.empty(W_s.shape[0]), torch.empty(W_c.shape[0]), torch.empty(2 * d_s)
    S_o, S_rz, S_n, q = S[:d_s], S[d_s : 3 * d_s], S[3 * d_s : 4 * d_s], S[4 * d_s :]
    Y_rz, Y_n, Y_o = Y[: 2 * d_s], Y[2 * d_s : 3 * d_s], Y[3 * d_s :]
    r, z = rz[:d_s], rz[d_s:]
    addmv(b_s, W_s, s, out=S)  # of s_0, for step 1
    tok = BOS_ID
    toks: list[int] = []
    logits_rows: list[Tensor] = []
    alphas: list[Tensor] = []
    finished = False
    for t in range(1, limit + 1):
        # α_t and c_t from s_{t-1}: e_ti = v_a^T tanh(W_a s_{t-1} + U_a h_i)
        alpha = torch.softmax(mv(tanh(keys + q), v_a), 0)
        c = mv(Ht, alpha)
        addmv(y_tab[tok], W_c, c, out=Y)
        # s_t = GRU([E y_{t-1}; c_t], s_{t-1}) = n + z ⊙ (s_{t-1} - n)
        torch.sigmoid(Y_rz + S_rz, out=rz)
        s = torch.lerp(tanh(torch.addcmul(Y_n, r, S_n)), s, z)
        addmv(b_s, W_s, s, out=S)
        # ỹ_t = W_y tanh(W_o [s_t; c_t; E y_{t-1}] + b_o)
        logits = torch.addmm(b_y, tanh(Y_o + S_o).unsqueeze(0), W_yT)  # (1, V)
        tok = int(logits.argmax())  # the first of the largest, as everywhere in decoding
        if tok < first:  # <pad> and <bos> are never outputs: the best of the others
            tok = int(logits[0, first:].argmax()) + first
        logits_rows.append(logits)
        if return_attention:
            alphas.append(alpha)
        if tok == EOS_ID:
            finished = True
            break
        toks.append(tok)
        if t >= limit:
            break
    chosen = torch.tensor([*toks, EOS_ID] if finished else toks)
    log_p = torch.log_softmax(torch.cat(logits_rows), dim=-1)
    log_ps = log_p.gather(1, chosen.unsqueeze(1)).squeeze(1).double().tolist()
    return tuple(toks), log_ps, finished, alphas


def _one_sentence(
    model: Any, src: Tensor, max_len: int | None, length_alpha: float, return_attention: bool
) -> Decoded:
    """:func:`_search_k1` for one sentence, through :func:`_decode_one`."""
    tokens, log_ps, finished, alphas = _decode_one(model, src, max_len, return_attention)
    # stacked here, outside inference mode: an ordinary tensor the caller may change
    alpha = torch.stack(alphas) if alphas else None
    total = 0.0
    for v in log_ps:  # in step order, as the other paths add them
        total += v
    steps = len(tokens) + int(finished)
    score = total / length_penalty(steps, length_alpha)
    return Decoded((Hypothesis(tokens, total, score, finished, alpha),))
