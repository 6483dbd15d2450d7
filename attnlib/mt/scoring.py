"""Scoring translations: corpus BLEU and chrF with sacrebleu, BLEU per source length.

Everything here takes **detokenised strings** (what a reader would see: ``"L'homme est là."``)
and lets sacrebleu tokenise them itself with its default ``13a`` tokeniser, the one of the
WMT ``mteval-v13a.pl`` script. We do not score our own tokens: BLEU depends on how text is
cut into words, and a number is only comparable with a published one when both were computed
from the same tokenisation. That is also why every result carries sacrebleu's **signature**
(``nrefs:var|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0``): printed beside the score,
it says exactly how the score was computed.

Several references per source
-----------------------------
A Tatoeba English sentence often has several French translations, and the test set keeps all
of them. Here ``references[i]`` is the list of reference strings of source ``i``; sources may
have different numbers of references. sacrebleu wants the transpose, reference *streams*
(stream ``k`` holds the ``k``-th reference of every source), all of the same length, and it
drops a ``None`` entry of a stream. So the streams are padded with ``None``:

- not with ``""``: sacrebleu keeps an empty string as a reference of length 0, which can
  become the "closest reference length" and hide the brevity penalty, and the signature then
  claims a fixed number of references;
- not truncated with ``zip(*references)``: that keeps only as many references per source as
  the poorest source has, and silently throws the others away;
- not left ragged: sacrebleu zips the streams, so every source after the end of the shortest
  stream would silently drop out of the score.

With the padding right, the signature says ``nrefs:var`` when the counts differ (``nrefs:2``
when every source has two).

See Also
--------
Part IV, "Attention on real sentences": decoding and scoring, and the reproduction of
Bahdanau et al.'s Fig. 2 (BLEU against source length).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal, cast

from sacrebleu.metrics import BLEU, CHRF

from attnlib.trained import Bucket

__all__ = [
    "BleuResult",
    "ChrfResult",
    "bleu_by_bucket",
    "corpus_bleu",
    "corpus_chrf",
    "reference_streams",
    "sentence_bleu",
]

Smoothing = Literal["exp", "none"]


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class BleuResult:
    """A BLEU score with the statistics it is made of.

    Attributes
    ----------
    score : float
        BLEU in [0, 100]: ``bp * exp(mean_n log p_n)``, n = 1..4.
    precisions : tuple of float
        The four n-gram precisions p_1..p_4 in percent, as they enter the score (after
        smoothing; ``matches[n] / totals[n]`` are the plain ratios).
    matches, totals : tuple of int
        Per order n = 1..4: hypothesis n-grams also found in a reference (clipped to the
        largest count in any one reference), and all hypothesis n-grams.
    brevity_penalty : float
        ``exp(1 - ref_len / hyp_len)`` if the hypotheses are shorter than the references, else 1.
    hyp_len, ref_len : int
        Total hypothesis tokens, and total length of the reference closest in length to each
        hypothesis (the shorter one on a tie).
    n_sentences : int
        How many hypotheses were scored.
    signature : str
        sacrebleu's signature, to print beside the score.
    """

    score: float
    precisions: tuple[float, ...]
    matches: tuple[int, ...]
    totals: tuple[int, ...]
    brevity_penalty: float
    hyp_len: int
    ref_len: int
    n_sentences: int
    signature: str

    def __str__(self) -> str:
        p = "/".join(f"{x:.1f}" for x in self.precisions)
        return (
            f"BLEU = {self.score:.2f} ({p}, BP = {self.brevity_penalty:.3f}, "
            f"hyp_len = {self.hyp_len}, ref_len = {self.ref_len}) {self.signature}"
        )


@dataclass(frozen=True)
class ChrfResult:
    """A chrF score (character n-gram F-score, beta = 2, n = 1..6) and its signature."""

    score: float
    n_sentences: int
    signature: str

    def __str__(self) -> str:
        return f"chrF2 = {self.score:.2f} {self.signature}"


# --------------------------------------------------------------------------- checks
def _check_inputs(hypotheses: Sequence[str], references: Sequence[Sequence[str]], who: str) -> None:
    """Raise a clear error for inputs sacrebleu would reject cryptically, or accept wrongly."""
    if isinstance(hypotheses, str):
        raise TypeError(
            f"{who}: hypotheses must be a list of strings, one per source, not a string"
        )
    if isinstance(references, str):
        raise TypeError(
            f"{who}: references must be a list, per source, of its reference strings, not a string"
        )
    if len(hypotheses) == 0:
        raise ValueError(f"{who}: no hypotheses to score (the test set is empty)")
    if len(hypotheses) != len(references):
        raise ValueError(
            f"{who}: {len(hypotheses)} hypotheses but {len(references)} reference lists; "
            "give one translation per source sentence, in the order of the test set"
        )
    for i, hyp in enumerate(hypotheses):
        if not isinstance(hyp, str):
            raise TypeError(
                f"{who}: hypothesis {i} is {type(hyp).__name__}, not a string; "
                "detokenise the decoder's output tokens first"
            )
    for i, refs in enumerate(references):
        if isinstance(refs, str):
            raise TypeError(
                f"{who}: references[{i}] is a string; references must be a list, per source, "
                "of its reference strings (with one reference each: [[r] for r in refs])"
            )
        if len(refs) == 0:
            raise ValueError(
                f"{who}: source {i} has no reference translation; every source needs at least one"
            )
        for k, ref in enumerate(refs):
            if not isinstance(ref, str):
                raise TypeError(
                    f"{who}: reference {k} of source {i} is {type(ref).__name__}, not a string"
                )
            if ref.strip() == "":
                raise ValueError(f"{who}: reference {k} of source {i} is empty")


def reference_streams(references: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """Transpose per-source reference lists into sacrebleu's streams, padded with ``None``.

    >>> reference_streams([["a", "b"], ["c"]])
    [['a', 'c'], ['b', None]]
    """
    n_streams = max(len(refs) for refs in references)
    return [[refs[k] if k < len(refs) else None for refs in references] for k in range(n_streams)]


def _bleu_result(
    metric: BLEU, hypotheses: Sequence[str], references: Sequence[Sequence[str]]
) -> BleuResult:
    # sacrebleu's hints say str, but its streams may hold None for a missing reference.
    streams = cast(list[list[str]], reference_streams(references))
    s = metric.corpus_score(list(hypotheses), streams)
    return BleuResult(
        score=float(s.score),
        precisions=tuple(float(p) for p in s.precisions),
        matches=tuple(int(c) for c in s.counts),
        totals=tuple(int(t) for t in s.totals),
        brevity_penalty=float(s.bp),
        hyp_len=int(s.sys_len),
        ref_len=int(s.ref_len),
        n_sentences=len(hypotheses),
        signature=str(metric.get_signature()),
    )


# --------------------------------------------------------------------------- metrics
def corpus_bleu(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    smooth: Smoothing = "exp",
) -> BleuResult:
    """Corpus BLEU of detokenised hypotheses against several references per source.

    Parameters
    ----------
    hypotheses : sequence of str
        One detokenised translation per source sentence.
    references : sequence of sequence of str
        ``references[i]``: the reference translations of source ``i`` (one or more; the
        number may differ from source to source).
    smooth : {"exp", "none"}
        ``"exp"`` (sacrebleu's default, so the signature matches published sacrebleu scores)
        only matters when some order n has no matching n-gram in the whole corpus: that p_n
        is then taken as ``1 / (2 * totals[n])`` (halved again for each further such order)
        instead of 0. ``"none"`` is the definition of Papineni et al. used by Bahdanau et al.:
        a corpus with no matching 4-gram scores 0. On a test set of thousands of sentences the
        two agree.

    Returns
    -------
    BleuResult

    Examples
    --------
    >>> r = corpus_bleu(["Il pleut des cordes."], [["Il pleut fort.", "Il pleut des cordes."]])
    >>> round(r.score, 2), r.hyp_len  # 13a splits the full stop off: five tokens
    (100.0, 5)
    """
    _check_inputs(hypotheses, references, "corpus_bleu")
    return _bleu_result(BLEU(tokenize="13a", smooth_method=smooth), hypotheses, references)


def corpus_chrf(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> ChrfResult:
    """Corpus chrF (sacrebleu's default chrF2: character n-grams up to 6, beta = 2).

    chrF matches character n-grams, so it gives partial credit for a right stem with a wrong
    ending (``"rouges"`` for ``"rouge"``), which BLEU's whole-word n-grams do not. With several
    references, each hypothesis is scored against its best one. Arguments as in
    :func:`corpus_bleu`.
    """
    _check_inputs(hypotheses, references, "corpus_chrf")
    metric = CHRF()
    streams = cast(list[list[str]], reference_streams(references))
    s = metric.corpus_score(list(hypotheses), streams)
    return ChrfResult(
        score=float(s.score), n_sentences=len(hypotheses), signature=str(metric.get_signature())
    )


def sentence_bleu(hypothesis: str, references: Sequence[str]) -> BleuResult:
    """Smoothed BLEU of one translation, for a table of examples.

    BLEU is a corpus statistic: one short sentence often has no matching 4-gram, or no
    4-gram at all, and its plain BLEU would be 0. As sacrebleu's ``sentence_bleu`` does, this
    uses ``exp`` smoothing (method 3 of Chen and Cherry, 2014, from NIST's ``mteval-v13a``:
    the k-th order with no match gets p_n = 1 / (2^k * totals[n])) and the *effective order*
    (orders longer than the hypothesis are left out of the mean, so ``"Merci !"`` against
    itself scores 100). Do not average these numbers into a corpus score.
    """
    if not isinstance(hypothesis, str):
        raise TypeError(
            f"sentence_bleu: the hypothesis is {type(hypothesis).__name__}, not a string"
        )
    if isinstance(references, str):
        raise TypeError("sentence_bleu: give a list of reference strings, e.g. [reference]")
    _check_inputs([hypothesis], [references], "sentence_bleu")
    metric = BLEU(tokenize="13a", smooth_method="exp", effective_order=True)
    return _bleu_result(metric, [hypothesis], [references])


def bleu_by_bucket(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str]],
    source_lengths: Sequence[int],
    edges: Sequence[int],
    *,
    smooth: Smoothing = "exp",
) -> list[Bucket]:
    """Corpus BLEU per bucket of source length, the analogue of Bahdanau et al.'s Fig. 2.

    Bucket ``j`` holds the sources with ``edges[j] <= source_lengths[i] < edges[j + 1]``
    (``lo = edges[j]``, ``hi = edges[j + 1] - 1``, both included); every length must fall in
    some bucket. Each bucket has its corpus BLEU as ``bucket.bleu``; a bucket no source falls
    in is returned with ``n == 0`` and no score (there is nothing to score, which is not a
    score of 0). Labels are written with a hyphen, ``"4-5"``.

    Note that corpus BLEU uses 4-grams: a bucket whose hypotheses all have fewer than four
    tokens (13a counts punctuation: ``"Va !"`` is two) has ``totals[3] == 0`` and BLEU 0
    whatever the translations; look at :func:`corpus_bleu`'s ``totals`` of its sentences
    before reading a short bucket.

    Parameters
    ----------
    hypotheses, references
        As in :func:`corpus_bleu`.
    source_lengths : sequence of int
        Length T_x of each source sentence (the unit is the caller's, e.g. English words).
    edges : sequence of int
        Strictly increasing bucket edges, at least two.
    smooth
        As in :func:`corpus_bleu`.
    """
    _check_inputs(hypotheses, references, "bleu_by_bucket")
    if isinstance(edges, str) or len(edges) < 2:
        raise ValueError("bleu_by_bucket: edges needs at least two numbers, e.g. [1, 3, 5, 9]")
    try:
        bounds = [operator.index(e) for e in edges]
        lengths = [operator.index(n) for n in source_lengths]
    except TypeError:
        raise TypeError("bleu_by_bucket: edges and source_lengths must be integers") from None
    if any(a >= b for a, b in pairwise(bounds)):
        raise ValueError(f"bleu_by_bucket: edges must be strictly increasing, got {bounds}")
    if len(lengths) != len(hypotheses):
        raise ValueError(
            f"bleu_by_bucket: {len(lengths)} source lengths but {len(hypotheses)} hypotheses; "
            "give the length T_x of every source"
        )
    outside = [n for n in lengths if not bounds[0] <= n < bounds[-1]]
    if outside:
        raise ValueError(
            f"bleu_by_bucket: {len(outside)} source(s) have a length outside "
            f"[{bounds[0]}, {bounds[-1]}), e.g. T_x = {outside[0]}; widen the edges"
        )
    buckets = []
    for lo, hi in pairwise(bounds):
        idx = [i for i, n in enumerate(lengths) if lo <= n < hi]
        scores = {}
        if idx:
            hyps, refs = [hypotheses[i] for i in idx], [references[i] for i in idx]
            scores["bleu"] = corpus_bleu(hyps, refs, smooth=smooth).score
        buckets.append(Bucket(lo, hi - 1, len(idx), scores, dash="-"))
    return buckets
