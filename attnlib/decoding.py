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
* **k = 1 is greedy decoding.** A batch without padding (one sentence always)
  skips the all-zero mask bias; with k = 1 the course's one greedy loop runs
  (:func:`attnlib.models.greedy_steps`), which takes the argmax at every step and
  does none of the beam bookkeeping (tests check that it returns what the general
  search with k = 1 returns). One sentence of the course's own Bahdanau model
  with k = 1 (the translate widget's path) goes further: a private module,
  :mod:`attnlib._decoding_fast`, rearranges the model's arithmetic for a single
  sentence, with the same tokens and the numbers equal up to float32 rounding
  (``tests/test_decoding_fast.py`` holds it to this module). The input checks
  run once per call, not once per step.
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
The chapter "Training, decoding and scoring an English→French model"
(chapters/training_and_decoding).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attnlib import _decoding_fast
from attnlib.models import (
    _FIRST_OUTPUT_ID,
    AdditiveAttention,
    BahdanauDecoder,
    BiGRUEncoder,
    SourceMemory,
    _unpadded_memory,
    greedy_steps,
)
from attnlib.runtime import eval_mode
from attnlib.vocab import BOS_ID, EOS_ID, PAD_ID

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
        logits, s, alpha = model.decoder.step(y, s, mem)  # (N, V), state, (N, T_x) or None
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
    """:func:`_search` with k = 1: the greedy loop, without the beam bookkeeping.

    One lane per sentence (:func:`attnlib.models.greedy_steps`): each step feeds back the
    argmax (``<pad>`` and ``<bos>`` excluded) and records its logit and its log-probability;
    after the loop they become the float64 log-probabilities :func:`_search` computes (the
    same operations, on all steps at once), summed in step order.
    """
    h, final, mask = model.encode(src)
    lengths = [int(n) for n in mask.sum(dim=1).tolist()]  # each source's T_x, <eos> included
    limits = [2 * n + 2 for n in lengths] if max_len is None else [max_len] * len(lengths)
    mem = _unpadded_memory(model.decoder.memory(h, final, mask))
    run = greedy_steps(model.decoder, mem, model.decoder.init_state(final), limits)
    top = run.top.double()
    lse = top - run.log_p.double()  # what _log_normaliser gives
    logp = (top - lse).tolist()  # as in _search: logit - lse, in float64
    alpha = run.alpha if return_attention else None
    found: list[list[tuple[float, tuple[int, ...], bool, Tensor | None]]] = []
    for b, row in enumerate(run.tokens.tolist()):
        n = sum(tok != PAD_ID for tok in row)  # the scored steps, its <eos> included
        finished = row[n - 1] == EOS_ID
        total = 0.0
        for v in logp[b][:n]:  # in step order, as the beam adds them
            total += v
        a = None if alpha is None else alpha[b, :n, : lengths[b]]
        found.append([(total, tuple(row[: n - finished]), finished, a)])
    return _results(found, 1, length_alpha)


# --------------------------------------------------------------------------- one sentence, k = 1
#: Methods whose replacement (on the instance) sends decoding back to the general path.
_FAST_PATCHABLE = {"step", "_step", "_advance", "_attend", "readout"}


def _fast_applies(model: Any, src: Tensor) -> bool:
    """True if ``src`` is one sentence and ``model`` the course's additive Bahdanau seq2seq:
    then :func:`attnlib._decoding_fast.greedy_one` decodes it.

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


def _one_sentence(
    model: Any, src: Tensor, max_len: int | None, length_alpha: float, return_attention: bool
) -> Decoded:
    """:func:`_search_k1` for one sentence, through :func:`attnlib._decoding_fast.greedy_one`."""
    tokens, log_ps, finished, alphas = _decoding_fast.greedy_one(
        model, src, max_len, return_attention
    )
    # stacked here, outside inference mode: an ordinary tensor the caller may change
    alpha = torch.stack(alphas) if alphas else None
    total = 0.0
    for v in log_ps:  # in step order, as the other paths add them
        total += v
    steps = len(tokens) + int(finished)
    score = total / length_penalty(steps, length_alpha)
    return Decoded((Hypothesis(tokens, total, score, finished, alpha),))
