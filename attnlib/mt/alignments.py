"""Bahdanau et al.'s two figures on real sentences: BLEU against length, and alignments.

Bahdanau et al. (2015) back their model with two pictures: BLEU against the
length of the source sentence (their Fig. 2) and the weights α_ti of four
translated sentences (their Fig. 3). This module computes both for the
English→French models of :mod:`attnlib.mt.translation`:

* :func:`sentence_stats`, :func:`bleu_from_stats` and :func:`bleu_table`:
  corpus BLEU per bucket of source length, with the number of sentences in
  each bucket and a bootstrap interval (the sentences of a bucket resampled
  with replacement, the same resamples for every model, so that two models
  can be compared resample by resample);
* :func:`align` and :class:`Aligned`: decoded sentences with their α
  (T_y, T_x), the source and output tokens that label its columns and rows,
  and :func:`draw_alignments` to draw them with the entropy H_t of each step;
* :func:`adjective_noun_swaps`: test sentences with an English adjective–noun
  pair whose French reference puts the noun first (``red car`` → ``voiture
  rouge``), and whether the model's output and its α cross the same way;
* :func:`peak_offsets`, :func:`copied_offsets`, :func:`pair_peaks` and
  :func:`split_rows`: where the rows of given French words put their largest
  weight (one word ahead, for an article? on the word itself, for a copied
  name?), two French words fed by one English word (``ne … pas`` from ``n't``),
  one French word fed by two English ones (``dis-moi`` from ``tell me``);
* :func:`backward_share`, :func:`crossing` and :func:`least_monotonic`: how
  often the most-attended position arg max_i α_ti moves backward from one step
  to the next (:func:`attnlib.alignment.argmax_moves`, one sentence at a time),
  and the sentences where it does so most;
* :data:`FEATURES`, :func:`feature_table` and :func:`feature_cuts`: what a group
  of sentences has in common, counted (a question, a negation ne … pas, an
  object pronoun before the verb, an adjective after its noun, an unknown word,
  a translation that matches no reference), against the rate of the whole split.

Everything here reads lower-case tokens as :func:`attnlib.mt.tatoeba.tokenise`
makes them (``l'homme`` → ``l' homme``, ``don't`` → ``don 't``).

It is one module of over a thousand lines because it is one chapter's study: every
measure reads the same decoded sentences (:class:`Aligned`) and the same buckets, and
the chapter calls them in this order.

See Also
--------
The chapter "Bahdanau et al.'s two figures on real data" (chapters/real_alignments);
"The fixed-length bottleneck" (chapters/bottleneck) for the same figure on a toy task,
"Reading alignment heatmaps" (chapters/heatmaps) for the moves of arg max_i α_ti.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from attnlib import plots
from attnlib.alignment import argmax_moves
from attnlib.core import FloatArray, entropy
from attnlib.mt import scoring
from attnlib.mt import tatoeba as tb
from attnlib.trained import Bucket

if TYPE_CHECKING:  # the models are only needed to decode; the counting runs without torch
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from attnlib.mt.translation import Evaluation, Trained

__all__ = [
    "ADJECTIVES",
    "FEATURES",
    "AdjectiveNounSwap",
    "Aligned",
    "BleuTable",
    "FeatureRow",
    "PairPeaks",
    "adjective_noun_swaps",
    "align",
    "any_feature",
    "backward_share",
    "bleu_from_stats",
    "bleu_table",
    "copied_offsets",
    "crossing",
    "draw_alignments",
    "feature_cuts",
    "feature_markdown",
    "feature_table",
    "forced_align",
    "forced_swaps",
    "least_monotonic",
    "pair_peaks",
    "peak_offsets",
    "plot_bleu_by_length",
    "row_peaks",
    "sentence_stats",
    "split_rows",
    "without_unknown",
]

# --------------------------------------------------------------------------- BLEU per bucket
N_STATS = 10
"""Columns of :func:`sentence_stats`: matches n = 1..4, totals n = 1..4, hyp_len, ref_len."""


def sentence_stats(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> FloatArray:
    """The statistics corpus BLEU adds up, one row per sentence.

    Corpus BLEU is computed from sums over the sentences of the clipped n-gram
    matches, the hypothesis n-grams, the hypothesis length and the closest
    reference length; so the BLEU of any subset of sentences (a bucket, a
    bootstrap resample) is :func:`bleu_from_stats` of the sum of their rows.

    Parameters
    ----------
    hypotheses : sequence of str
        Detokenised translations, one per source.
    references : sequence of sequence of str
        The reference translations of each source.

    Returns
    -------
    stats : (N, 10)
        matches_1..4, totals_1..4, hyp_len, ref_len (sacrebleu's ``13a`` tokens).
    """
    if isinstance(hypotheses, str):
        raise TypeError("hypotheses must be a list of strings, one per source, not a string")
    if len(hypotheses) != len(references):
        raise ValueError(
            f"{len(hypotheses)} hypotheses but {len(references)} reference lists; "
            "give one translation per source"
        )
    rows = []
    for hyp, refs in zip(hypotheses, references, strict=True):
        r = scoring.sentence_bleu(tb.unk_as_word(hyp), list(refs))  # <unk>: one wrong word
        rows.append([*r.matches, *r.totals, r.hyp_len, r.ref_len])
    return np.asarray(rows, dtype=float).reshape(len(rows), N_STATS)


def bleu_from_stats(stats: ArrayLike) -> FloatArray | float:
    """Corpus BLEU (sacrebleu's ``exp`` smoothing, no effective order) from summed statistics.

    BLEU = BP · exp(¼ Σ_n log p_n) · 100, with p_n = matches_n / totals_n; an
    order with no match gets p_n = 1 / (2^k totals_n) for the k-th such order;
    BLEU is 0 if nothing matches or some order has no n-gram at all; and
    BP = exp(1 − ref_len / hyp_len) when the hypotheses are the shorter.

    Parameters
    ----------
    stats : (..., 10)
        Sums of rows of :func:`sentence_stats`.

    Returns
    -------
    bleu : (...) or float
        In [0, 100]; a float for a single row of statistics.
    """
    s = np.asarray(stats, dtype=float)
    if s.ndim < 1 or s.shape[-1] != N_STATS:
        raise ValueError(f"stats must have shape (..., {N_STATS}), got {s.shape}")
    match, total = s[..., :4], s[..., 4:8]
    hyp_len, ref_len = s[..., 8], s[..., 9]
    zero = match == 0
    k = np.cumsum(zero, axis=-1)  # the k-th order without a match is smoothed by 2^k
    safe_total = np.where(total > 0, total, 1.0)
    p = np.where(zero, 1.0 / (2.0**k * safe_total), match / safe_total)
    with np.errstate(divide="ignore"):
        bp = np.where(
            hyp_len >= ref_len, 1.0, np.exp(1.0 - ref_len / np.where(hyp_len > 0, hyp_len, 1.0))
        )
    bp = np.where(hyp_len > 0, bp, 0.0)
    score = 100.0 * bp * np.exp(np.mean(np.log(p), axis=-1))
    dead = (match.sum(axis=-1) == 0) | (total == 0).any(axis=-1)
    out = np.where(dead, 0.0, score)
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class BleuTable:
    """BLEU per source-length bucket for several models, with shared bootstrap resamples.

    Attributes
    ----------
    edges : tuple of int
        Bucket ``j`` holds the sources of ``edges[j]`` ≤ words < ``edges[j + 1]``.
    buckets : dict of str to list of Bucket
        Per model, one entry per non-empty bucket, shortest first: its ``n`` sources, its
        ``bleu`` and the bootstrap interval ``low`` … ``high`` (labels with a hyphen, ``1-3``).
    overall : dict of str to float
        Corpus BLEU of each model on all the sources.
    samples : dict of str to (n_buckets, n_boot) array
        The resampled BLEU of each bucket; column b of every model comes from the
        same resample of sentences.
    stats : dict of str to (N, 10) array
        :func:`sentence_stats` of each model's translations, in the order of the sources.
    lengths : (N,) array of int
        English words of each source.
    level : float
        Coverage of the intervals (0.95: the 2.5th to the 97.5th percentile).
    """

    edges: tuple[int, ...]
    buckets: dict[str, list[Bucket]]
    overall: dict[str, float]
    samples: dict[str, FloatArray] = field(repr=False)
    stats: dict[str, FloatArray] = field(repr=False)
    lengths: NDArray[np.int_] = field(repr=False)
    level: float = 0.95

    @property
    def labels(self) -> list[str]:
        """The bucket labels, shortest first."""
        return [b.label for b in next(iter(self.buckets.values()))]

    @property
    def counts(self) -> list[int]:
        """Sources per bucket."""
        return [b.n for b in next(iter(self.buckets.values()))]

    def bleu(self, name: str) -> list[float]:
        """BLEU of model ``name`` per bucket."""
        return [b.bleu for b in self._model(name)]

    def gaps(self, a: str, b: str) -> list[float]:
        """BLEU of ``a`` minus BLEU of ``b``, per bucket."""
        return [x - y for x, y in zip(self.bleu(a), self.bleu(b), strict=True)]

    def wins(self, a: str, b: str) -> list[float]:
        """Per bucket, the share of bootstrap resamples in which ``a`` scores above ``b``.

        The two models are scored on the same resampled sentences, so this is the
        paired bootstrap of Koehn (2004): near 1 means the gap is not an accident of
        which sentences the bucket happens to hold.
        """
        sa, sb = self._samples(a), self._samples(b)
        return [float(x) for x in np.mean(sa > sb, axis=1)]

    def bleu_where(self, name: str, keep: ArrayLike) -> float:
        """Corpus BLEU of model ``name`` on the sources where ``keep`` is true.

        ``table.bleu_where("attention", table.lengths >= 6)``: the BLEU of the sources of
        six words or more, as one corpus.
        """
        mask = np.asarray(keep, dtype=bool)
        self._model(name)
        st = self.stats[name]
        if mask.shape != (st.shape[0],):
            raise ValueError(
                f"keep must have one entry per source ({st.shape[0]}), got {mask.shape}"
            )
        if not mask.any():
            raise ValueError("keep selects no source: there is nothing to score")
        return float(bleu_from_stats(st[mask].sum(axis=0)))

    def markdown(self) -> str:
        """A table: one row per bucket, the count, and each model's BLEU with its interval."""
        names = list(self.buckets)
        pct = round(100 * self.level)
        head = "| words | sources | " + " | ".join(f"{n} (BLEU, {pct} % interval)" for n in names)
        rule = "|---|---|" + "---|" * len(names)
        rows = [
            f"| {lab} | {cnt} | "
            + " | ".join(
                f"{self.buckets[n][j].bleu:.1f} ({self.buckets[n][j].low:.1f}–"
                f"{self.buckets[n][j].high:.1f})"
                for n in names
            )
            + " |"
            for j, (lab, cnt) in enumerate(zip(self.labels, self.counts, strict=True))
        ]
        return "\n".join([head + " |", rule, *rows])

    def _model(self, name: str) -> list[Bucket]:
        if name not in self.buckets:
            raise ValueError(f"no model {name!r} in the table; it has {list(self.buckets)}")
        return self.buckets[name]

    def _samples(self, name: str) -> FloatArray:
        self._model(name)
        return self.samples[name]


def bleu_table(
    evaluations: Mapping[str, Evaluation],
    edges: Sequence[int],
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> BleuTable:
    """Corpus BLEU per bucket of source length for several models, with bootstrap intervals.

    Parameters
    ----------
    evaluations : dict of str to Evaluation
        From :func:`attnlib.mt.translation.evaluate`, all on the same split (the same
        sources in the same order).
    edges : sequence of int
        Strictly increasing; bucket ``j`` holds the sources of ``edges[j]`` ≤ words
        < ``edges[j + 1]``. Every source must fall in a bucket; empty buckets are left out.
    n_boot : int
        Bootstrap resamples per bucket (≥ 1).
    level : float
        Coverage of the percentile intervals, in (0, 1).
    seed : int
        Seeds the resampling; every model is scored on the same resamples.

    Returns
    -------
    BleuTable

    Raises
    ------
    ValueError
        For no models, models evaluated on different sources, bad edges, a source
        outside the edges, ``n_boot`` < 1 or ``level`` outside (0, 1).
    """
    if not evaluations:
        raise ValueError("bleu_table needs at least one model's Evaluation")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 1:
        raise ValueError(f"n_boot must be a whole number ≥ 1, got {n_boot!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level!r}")
    bounds = tuple(int(e) for e in edges)
    if len(bounds) < 2 or any(a >= b for a, b in itertools.pairwise(bounds)):
        raise ValueError(f"edges must be at least two strictly increasing numbers, got {bounds}")
    first = next(iter(evaluations.values()))
    for name, ev in evaluations.items():
        if list(ev.sources) != list(first.sources):
            raise ValueError(
                f"model {name!r} was evaluated on other sources than the first model; "
                "evaluate every model on the same split"
            )
    lengths = np.asarray([tb.words(s) for s in first.sources])
    outside = lengths[(lengths < bounds[0]) | (lengths >= bounds[-1])]
    if outside.size:
        raise ValueError(
            f"{outside.size} source(s) lie outside the edges {bounds}, e.g. one of "
            f"{int(outside[0])} words; widen the edges"
        )
    stats = {n: sentence_stats(ev.hypotheses, ev.references) for n, ev in evaluations.items()}
    rng = np.random.default_rng(seed)
    q = (1 - level) / 2
    buckets: dict[str, list[Bucket]] = {n: [] for n in evaluations}
    samples: dict[str, list[FloatArray]] = {n: [] for n in evaluations}
    for lo, hi in itertools.pairwise(bounds):
        idx = np.flatnonzero((lengths >= lo) & (lengths < hi))
        if idx.size == 0:
            continue
        # how often each sentence of the bucket is drawn, per resample: (n_boot, n)
        weights = rng.multinomial(idx.size, np.full(idx.size, 1 / idx.size), size=n_boot)
        for name, st in stats.items():
            boot = np.asarray(bleu_from_stats(weights @ st[idx]))
            point = float(bleu_from_stats(st[idx].sum(axis=0)))
            lo_q, hi_q = np.quantile(boot, [q, 1 - q])
            scores = {"bleu": point, "low": float(lo_q), "high": float(hi_q)}
            buckets[name].append(Bucket(int(lo), int(hi) - 1, int(idx.size), scores, dash="-"))
            samples[name].append(boot)
    overall = {n: float(bleu_from_stats(st.sum(axis=0))) for n, st in stats.items()}
    return BleuTable(
        edges=bounds,
        buckets=buckets,
        overall=overall,
        samples={n: np.vstack(s) for n, s in samples.items()},
        stats=stats,
        lengths=lengths,
        level=level,
    )


def without_unknown(trained: Trained, split: str = "test") -> NDArray[np.bool_]:
    """Which sources of ``split`` have no unknown word, in them or in any of their references.

    The subset on which Bahdanau et al. report their second column of BLEU ("No UNK"):
    every English token is in the model's English vocabulary and every French token of
    every reference in its French vocabulary.
    """
    data = trained.data
    if split not in data.references:
        raise ValueError(f"split must be one of {sorted(data.references)}, got {split!r}")
    en_ok, fr_ok = data.src_vocab.stoi, data.tgt_vocab.stoi
    return np.array(
        [
            all(t in en_ok for t in tb.tokenise(en, "en"))
            and all(t in fr_ok for r in refs for t in tb.tokenise(r, "fr"))
            for en, refs in data.references[split]
        ],
        dtype=bool,
    )


def plot_bleu_by_length(
    table: BleuTable,
    ax: Axes | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    trained_up_to: float | None = None,
) -> Axes:
    """BLEU per bucket of source length, one line per model, with its bootstrap interval.

    Parameters
    ----------
    table : BleuTable
    ax : Axes, optional
    labels : dict of str to str, optional
        Legend text per model name (default: the names).
    trained_up_to : float, optional
        Draw a dotted line after this many words (the longest source the
        train-on-short models saw).

    Returns
    -------
    Axes
    """
    ax = plots.new_axes(ax, figsize=(6.0, 3.6))
    labels = dict(labels or {})
    series = {labels.get(n, n): b for n, b in table.buckets.items()}
    top = max(b.high for bs in table.buckets.values() for b in bs)
    lines = plots.by_length(
        series, ax=ax, metric="bleu", ylabel="BLEU (test)", ylim=(0, 5 * math.ceil(top / 5) + 5),
        xlabel="source length (English words)",
    )  # fmt: skip
    n = len(lines)
    for k, (line, bs) in enumerate(zip(lines, series.values(), strict=True)):
        dx = 0.08 * (k - (n - 1) / 2)  # nudge the lines apart so the intervals stay readable
        x = np.asarray(line.get_xdata(), dtype=float) + dx
        line.set_xdata(x)
        y = np.array([b.bleu for b in bs])
        err = np.array([[b.bleu - b.low for b in bs], [b.high - b.bleu for b in bs]])
        ax.errorbar(x, y, yerr=err, fmt="none", ecolor=line.get_color(), capsize=3, lw=1)
    if trained_up_to is not None:
        ax.axvline(trained_up_to, color="0.4", linestyle=":", linewidth=1)
    return ax


# --------------------------------------------------------------------------- alignments
@dataclass(frozen=True)
class Aligned:
    """One source sentence, the model's translation and the weights α_ti behind it.

    Attributes
    ----------
    index : int
        Position in the split (-1 for a sentence that is not in it).
    source : str
        The English sentence as written.
    references : tuple of str
        Its French references (empty outside the split).
    src : tuple of str
        The T_x source tokens as the model reads them (lower case; a word outside the
        English vocabulary is ``<unk>``), then ``<eos>``: the columns of ``alpha``.
    out : tuple of str
        The model's output tokens, then ``<eos>`` if it finished: the T_y rows.
    alpha : (T_y, T_x) array
        α_ti, each row summing to 1.
    """

    index: int
    source: str
    references: tuple[str, ...]
    src: tuple[str, ...]
    out: tuple[str, ...]
    alpha: FloatArray = field(repr=False)

    @property
    def words(self) -> tuple[str, ...]:
        """The English tokens as written (lower case), without ``<eos>``; unknown ones kept."""
        return tb.tokenise(self.source, "en")

    @property
    def peaks(self) -> list[int]:
        """arg max_i α_ti for every output step t."""
        return [int(i) for i in np.argmax(self.alpha, axis=1)]

    @property
    def entropy(self) -> FloatArray:
        """H_t of every output step, in nats."""
        return np.asarray(entropy(self.alpha), dtype=float)

    @property
    def text(self) -> str:
        """The output as one line of tokens (without ``<eos>``)."""
        return " ".join(t for t in self.out if t != "<eos>")

    @property
    def french(self) -> str:
        """The output as French text (detokenised, lower case): ``l' homme`` → ``l'homme``."""
        return tb.detokenise([t for t in self.out if t != "<eos>"], "fr")


def align(
    trained: Trained,
    sentences: Sequence[str] | None = None,
    *,
    split: str = "test",
    k: int = 1,
    threads: int | None = 1,
) -> list[Aligned]:
    """Decode sentences with an attention model and keep α for every output step.

    Parameters
    ----------
    trained : Trained
        An attention model (:func:`attnlib.mt.translation.load`).
    sentences : sequence of str, optional
        English sentences to translate; default every distinct source of ``split``,
        with its references.
    split : {"test", "valid"}
    k : int
        1 for greedy decoding, more for beam search (α of the best hypothesis).
    threads : int or None
        torch threads while decoding (None: leave as is). One thread is the default:
        decoding short sentences gains little from a second, and on a busy machine
        threads that wait for each other make it several times slower.

    Returns
    -------
    list of Aligned
        In the order of the sentences.

    Raises
    ------
    ValueError
        If the model has no attention (its decoder has no α_ti to return).
    """
    from attnlib.mt.translation import translate
    from attnlib.runtime import torch_threads

    if trained.recipe.decoder == "none":
        raise ValueError(
            f"model {trained.name!r} has no attention: its decoder reads one fixed c, "
            "so there are no α_ti to draw; use an attention model"
        )
    data = trained.data
    if sentences is None:
        if split not in data.references:
            raise ValueError(f"split must be one of {sorted(data.references)}, got {split!r}")
        pairs = [(en, tuple(refs)) for en, refs in data.references[split]]
        indices = list(range(len(pairs)))
    else:
        if isinstance(sentences, str):
            raise TypeError("sentences must be a list of strings; wrap a single one in [ ]")
        pairs = [(s, ()) for s in sentences]
        indices = [-1] * len(pairs)
    with torch_threads(threads):
        translated = translate(trained.model, data, [en for en, _ in pairs], k)
    out = []
    for index, (en, refs), t in zip(indices, pairs, translated, strict=True):
        if t.alpha is None:  # pragma: no cover - an attention decoder always returns α
            raise ValueError(f"decoding {en!r} returned no α")
        alpha = t.alpha.astype(np.float64)
        out.append(Aligned(index, en, refs, tuple(t.src), tuple(t.out), alpha))
    return out


def forced_align(
    trained: Trained,
    pairs: Sequence[tuple[str, str]],
    *,
    indices: Sequence[int] | None = None,
    threads: int | None = 1,
) -> list[Aligned]:
    """α for a translation given in advance: the model teacher-forced through it.

    Decoding shows where the model looks while writing *its own* output; forcing a
    reference shows where it looks while writing *that* reference, word by word (the
    decoder reads the reference's previous word at every step, as in training). This
    is the forced alignment: it asks how the model aligns a translation that has a
    property (an adjective after its noun) whether or not the model would have
    written it.

    Parameters
    ----------
    trained : Trained
        An attention model.
    pairs : sequence of (str, str)
        English sentence and the French translation to force, as written.
    indices : sequence of int, optional
        Each pair's position in its split (default -1: not in one).
    threads : int or None
        torch threads (None: leave as is).

    Returns
    -------
    list of Aligned
        One per pair: ``out`` is the French tokens, then ``<eos>``. A French word
        the vocabulary lacks keeps its row under its own name (the decoder read
        ``<unk>`` for it); ``references`` holds the forced translation.
    """
    import torch

    from attnlib.runtime import eval_mode, torch_threads
    from attnlib.vocab import BOS_ID

    if trained.recipe.decoder == "none":
        raise ValueError(
            f"model {trained.name!r} has no attention: there are no α_ti to force; "
            "use an attention model"
        )
    if isinstance(pairs, str) or any(
        not (isinstance(p, tuple) and len(p) == 2 and all(isinstance(x, str) for x in p))
        for p in pairs
    ):
        raise TypeError("pairs must be a list of (English, French) string pairs")
    indices = [-1] * len(pairs) if indices is None else list(indices)
    if len(indices) != len(pairs):
        raise ValueError(f"{len(indices)} indices for {len(pairs)} pairs")
    data = trained.data
    out = []
    with torch_threads(threads), eval_mode(trained.model), torch.no_grad():
        for index, (en, fr) in zip(indices, pairs, strict=True):
            src_ids = tb.encode(tb.tokenise(en, "en"), data.src_vocab)
            fr_tokens = tb.tokenise(fr, "fr")
            if not fr_tokens:
                raise ValueError(f"the French of {en!r} has no token to force")
            tgt_ids = tb.encode(fr_tokens, data.tgt_vocab)  # y_1 … y_T, <eos>
            _, alpha = trained.model(
                torch.tensor([src_ids]), torch.tensor([[BOS_ID, *tgt_ids[:-1]]])
            )
            assert alpha is not None  # an attention decoder returns α
            out.append(
                Aligned(
                    index,
                    en,
                    (fr,),
                    tuple(data.src_vocab.itos[i] for i in src_ids),
                    (*fr_tokens, "<eos>"),
                    alpha[0].double().numpy().copy(),
                )
            )
    return out


def row_peaks(item: Aligned, token: str) -> list[tuple[int, str, float]]:
    """Where the output steps writing ``token`` look: (t, source token at arg max, its α).

    ``row_peaks(item, "rouge")`` says which source word each ``rouge`` row puts
    most weight on, and how much.
    """
    return [
        (t, item.src[i], float(item.alpha[t, i]))
        for t, i in enumerate(item.peaks)
        if item.out[t] == token
    ]


def peak_offsets(items: Sequence[Aligned], token: str, anchor: str) -> dict[int, int]:
    """Where the rows writing ``token`` peak, counted from the English word ``anchor``.

    For every output step writing ``token`` in a sentence whose source holds
    ``anchor`` exactly once: the position of arg max_i α_ti minus the position of
    ``anchor`` (a sentence with two ``the`` would leave it unclear which one an
    article translates, so it is left out). ``peak_offsets(items, "j'", "i")`` counts
    the rows of ``j'`` that look at ``I`` (offset 0) and at the word after it (offset 1).

    Returns
    -------
    dict of int to int
        Offset → number of rows, largest count first.
    """
    return _by_count(
        i - it.src.index(anchor)
        for it in items
        if it.src.count(anchor) == 1
        for t, i in enumerate(it.peaks)
        if it.out[t] == token
    )


def _by_count(offsets: Iterable[int]) -> dict[int, int]:
    """Offset → how often it occurs, largest count first (ties: the smaller offset)."""
    counts = Counter(offsets)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def copied_offsets(items: Sequence[Aligned], min_letters: int = 3) -> dict[int, int]:
    """Where the rows that write a word as the source has it peak, counted from that word.

    The control for :func:`peak_offsets`: a name (*Tom*, *Boston*) or a word French spells
    as English does (*question*, *radio*) translates the source word it copies, so a row
    writing it should peak on that word (offset 0) unless the model's rows look one word
    ahead in general. Counted: every output step whose token is made of at least
    ``min_letters`` letters (which leaves out *a*, *de* and other short words the two
    languages share by chance) and occurs exactly once in the source.

    Returns
    -------
    dict of int to int
        Offset → number of rows, largest count first.
    """
    return _by_count(
        i - it.src.index(word)
        for it in items
        for word, i in zip(it.out, it.peaks, strict=False)
        if len(word) >= min_letters and word.isalpha() and it.src.count(word) == 1
    )


@dataclass(frozen=True)
class PairPeaks:
    """Where two output words of one sentence look (e.g. ``ne`` and ``pas``).

    Attributes
    ----------
    item : Aligned
    t_first, t_second : int
        The output steps of the first occurrence of each word.
    i_first, i_second : int
        arg max_i α_ti at those steps.
    """

    item: Aligned
    t_first: int
    t_second: int
    i_first: int
    i_second: int

    @property
    def same(self) -> bool:
        """Both rows peak on the same source position: one source word, two output words."""
        return self.i_first == self.i_second

    @property
    def words(self) -> tuple[str, str]:
        """The source tokens the two rows peak on."""
        return self.item.src[self.i_first], self.item.src[self.i_second]


def pair_peaks(
    items: Sequence[Aligned], first: Sequence[str], second: Sequence[str]
) -> list[PairPeaks]:
    """For every output holding a word of ``first`` and, later, one of ``second``: their peaks.

    ``pair_peaks(items, ("ne", "n'"), ("pas",))`` finds the negations ne … pas and
    says where each half looks; when both look at ``n't``, one English token became
    two French words (a one-to-many alignment).
    """
    if isinstance(first, str) or isinstance(second, str):
        raise TypeError("first and second must be lists of tokens, e.g. ('ne', \"n'\")")
    found = []
    for it in items:
        t1 = next((t for t, w in enumerate(it.out) if w in first), None)
        if t1 is None:
            continue
        t2 = next((t for t in range(t1 + 1, len(it.out)) if it.out[t] in second), None)
        if t2 is None:
            continue
        p = it.peaks
        found.append(PairPeaks(it, t1, t2, p[t1], p[t2]))
    return found


def split_rows(
    item: Aligned, min_second: float = 0.3, *, exclusive: bool = False
) -> list[tuple[int, int, int]]:
    """Output words whose weight is shared by two source words (a many-to-one alignment).

    A row t counts when it writes a word (not punctuation, not ``<eos>``), its two
    largest weights α_ti, α_tj lie on two source words (not punctuation, not
    ``<eos>``), and the smaller of the two is at least ``min_second``. With
    ``exclusive``, neither i nor j may be the peak of another output word: the two
    English words feed this French word only (``hold on`` → ``attendez``), rather
    than one of them having a French word of its own that this row also consults
    (``bad boy`` → ``mauvais garçon``, where ``mauvais`` also looks at ``boy``).

    Returns
    -------
    list of (t, i, j)
        The step and the two source positions, the larger first.
    """
    if not 0 < min_second <= 0.5:
        raise ValueError(f"min_second must lie in (0, 0.5], got {min_second!r}")
    rows = []
    peaks = item.peaks
    for t, row in enumerate(item.alpha):
        if not _is_word(item.out[t]) or item.out[t] == "<eos>":
            continue
        i, j = (int(x) for x in np.argsort(row)[::-1][:2])
        words_ij = all(_is_word(item.src[x]) and item.src[x] != "<eos>" for x in (i, j))
        if not words_ij or row[j] < min_second:
            continue
        others = {p for u, p in enumerate(peaks) if u != t and _is_word(item.out[u])}
        if exclusive and others & {i, j}:
            continue
        rows.append((t, i, j))
    return rows


# --------------------------------------------------------------------------- monotonicity
def backward_share(item: Aligned | ArrayLike) -> float:
    """Share of consecutive output steps at which arg max_i α_ti moves backward (to the left).

    0 for a heatmap whose peak never moves left (a diagonal, steps that stay),
    1 for an anti-diagonal. It is the ``backward`` of
    :func:`attnlib.alignment.argmax_moves` for one sentence. An output of one step
    has no move: its share is 0.
    """
    alpha = item.alpha if isinstance(item, Aligned) else np.asarray(item, dtype=float)
    if np.ndim(alpha) != 2:
        raise ValueError(f"alpha must have shape (T_y, T_x), got shape {np.shape(alpha)}")
    if np.shape(alpha)[0] < 2:
        return 0.0
    return argmax_moves([alpha]).backward


def crossing(item: Aligned | ArrayLike) -> float:
    """Share of pairs of output steps t < u whose peaks are in the opposite order.

    A pair crosses when arg max_i α_ti > arg max_i α_ui: the later word looks
    further left than the earlier one. 0 for a monotonic heatmap, 1 for a
    reversal; unlike :func:`backward_share` it also counts how far a word
    reaches back. 0 for fewer than two steps.
    """
    alpha = item.alpha if isinstance(item, Aligned) else np.asarray(item, dtype=float)
    if np.ndim(alpha) != 2:
        raise ValueError(f"alpha must have shape (T_y, T_x), got shape {np.shape(alpha)}")
    p = np.argmax(alpha, axis=1)
    n = p.size
    if n < 2:
        return 0.0
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    return float(np.sum((p[:, None] > p[None, :]) & upper) / (n * (n - 1) / 2))


def least_monotonic(
    items: Sequence[Aligned], n: int, *, min_steps: int = 3
) -> list[tuple[Aligned, float]]:
    """The ``n`` sentences whose peak moves backward most often.

    Ranked by :func:`backward_share`; ties by :func:`crossing` (the one that
    reaches further back first), then by the split's order.

    Parameters
    ----------
    items : sequence of Aligned
    n : int
        How many to return (fewer if fewer qualify).
    min_steps : int
        Leave out outputs of fewer steps (T_y, ``<eos>`` included): with two steps the
        share is 0 or 1 on a single move.

    Returns
    -------
    list of (Aligned, share)
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a whole number ≥ 1, got {n!r}")
    scored = [
        (it, backward_share(it), crossing(it), k)
        for k, it in enumerate(items)
        if len(it.out) >= min_steps
    ]
    scored.sort(key=lambda r: (-r[1], -r[2], r[3]))
    return [(it, share) for it, share, _, _ in scored[:n]]


# --------------------------------------------------------------------------- features
ADJECTIVES: dict[str, tuple[str, ...]] = {
    **tb.COLOURS,
    # nationalities
    "french": ("français", "française", "françaises"),
    "english": ("anglais", "anglaise", "anglaises"),
    "american": ("américain", "américaine", "américains", "américaines"),
    "japanese": ("japonais", "japonaise", "japonaises"),
    "german": ("allemand", "allemande", "allemands", "allemandes"),
    "chinese": ("chinois", "chinoise", "chinoises"),
    "italian": ("italien", "italienne", "italiens", "italiennes"),
    "spanish": ("espagnol", "espagnole", "espagnols", "espagnoles"),
    "russian": ("russe", "russes"),
    "canadian": ("canadien", "canadienne", "canadiens", "canadiennes"),
    # others that follow their noun in French
    "interesting": ("intéressant", "intéressante", "intéressants", "intéressantes"),
    "difficult": ("difficile", "difficiles"),
    "easy": ("facile", "faciles"),
    "expensive": ("cher", "chère", "chers", "chères", "coûteux", "coûteuse", "coûteuses"),
    "important": ("important", "importante", "importants", "importantes"),
    "hot": ("chaud", "chaude", "chauds", "chaudes"),
    "cold": ("froid", "froide", "froids", "froides"),
    "delicious": ("délicieux", "délicieuse", "délicieuses"),
    "dangerous": ("dangereux", "dangereuse", "dangereuses"),
    "strange": ("étrange", "étranges"),
    "famous": ("célèbre", "célèbres"),
    "favorite": ("préféré", "préférée", "préférés", "préférées"),
    "favourite": ("préféré", "préférée", "préférés", "préférées"),
    "funny": ("drôle", "drôles"),
    "stupid": ("stupide", "stupides"),
    "intelligent": ("intelligent", "intelligente", "intelligents", "intelligentes"),
    "smart": ("intelligent", "intelligente", "intelligents", "intelligentes"),
    "rich": ("riche", "riches"),
    "sick": ("malade", "malades"),
    "tired": ("fatigué", "fatiguée", "fatigués", "fatiguées"),
    "empty": ("vide", "vides"),
    "free": ("libre", "libres", "gratuit", "gratuite", "gratuits", "gratuites"),
    "private": ("privé", "privée", "privés", "privées"),
    "public": ("public", "publique", "publics", "publiques"),
    "dead": ("mort", "morte", "morts", "mortes"),
    "serious": ("sérieux", "sérieuse", "sérieuses"),
    "happy": ("heureux", "heureuse", "heureuses"),
    "sad": ("triste", "tristes"),
    "fresh": ("frais", "fraîche", "fraîches"),
    "modern": ("moderne", "modernes"),
    "popular": ("populaire", "populaires"),
    "useful": ("utile", "utiles"),
    "useless": ("inutile", "inutiles"),
    "honest": ("honnête", "honnêtes"),
    "foreign": ("étranger", "étrangère", "étrangers", "étrangères"),
}
"""English adjectives whose usual French translations follow the noun, with their French forms.

Colours, nationalities and a few common others; adjectives that usually come before
the noun in French (``petit``, ``grand``, ``bon``, ``vieux``, ``beau`` …) are left out.
"""

_FRENCH_ADJECTIVES: dict[str, set[str]] = {}
for _en, _forms in ADJECTIVES.items():
    for _f in _forms:
        _FRENCH_ADJECTIVES.setdefault(_f, set()).add(_en)

# An English adjective is attributive (before its noun) if the next token is a word that is
# none of these: punctuation, a conjunction, a preposition, an adverb, a verb form, a pronoun.
# fmt: off
_EN_NOT_NOUN = frozenset({
    "and", "or", "but", "nor", "to", "of", "in", "on", "at", "for", "with", "from", "by", "about",
    "than", "as", "too", "enough", "now", "today", "tonight", "again", "here", "there", "yet",
    "already", "very", "well", "really", "so", "then", "is", "are", "was", "were", "'s", "'re",
    "'m", "be", "been", "being", "has", "have", "had", "will", "would", "can", "could", "should",
    "must", "do", "does", "did", "n't", "not", "that", "this", "these", "those", "it", "me", "you",
    "him", "her", "us", "them", "a", "an", "the", "my", "your", "his", "its", "our", "their", "i",
    "he", "she", "we", "they", "one", "ones", "inside", "outside", "out", "up", "down", "all",
    "if", "when", "because", "while", "after", "before", "also", "just", "still"
})
# fmt: on

# A French adjective follows a noun if the token before it is a word that is none of these:
# a copula or common verb, an adverb of degree, a determiner, a preposition, a conjunction.
# fmt: off
_FR_NOT_NOUN = frozenset({
    "est", "sont", "était", "étaient", "es", "suis", "sommes", "êtes", "être", "été", "sera",
    "seront", "serait", "fut", "semble", "semblait", "semblent", "devient", "devenu", "air",
    "très", "trop", "si", "plus", "moins", "tout", "toute", "tous", "toutes", "bien", "assez",
    "vraiment", "en", "de", "d'", "du", "des", "et", "ou", "mais", "le", "la", "les", "l'", "un",
    "une", "au", "aux", "ce", "cet", "cette", "ces", "mon", "ma", "mes", "ton", "ta", "tes", "son",
    "sa", "ses", "notre", "nos", "votre", "vos", "leur", "leurs", "c'", "pas", "jamais", "ne",
    "n'", "parle", "parles", "parlez", "parlons", "parlent", "parlait", "parla", "parler",
    "étudie", "étudies", "étudiez", "étudier", "apprends", "apprend", "apprendre", "peint",
    "peinte", "peints", "peintes", "reste", "restent", "rester"
})
# fmt: on


def _is_word(token: str) -> bool:
    return any(ch.isalpha() for ch in token)


def _attributive(tokens: Sequence[str]) -> list[int]:
    """Positions q of English adjectives of :data:`ADJECTIVES` followed by a noun-like word."""
    return [
        q
        for q in range(len(tokens) - 1)
        if tokens[q] in ADJECTIVES
        and _is_word(tokens[q + 1])
        and tokens[q + 1] not in _EN_NOT_NOUN
        and tokens[q + 1] not in ADJECTIVES
    ]


def _postnominal(tokens: Sequence[str], english: str) -> list[int]:
    """Positions p of French forms of ``english`` that follow a noun-like word."""
    return [
        p
        for p in range(1, len(tokens))
        if english in _FRENCH_ADJECTIVES.get(tokens[p], ())
        and _is_word(tokens[p - 1])
        and tokens[p - 1] not in _FR_NOT_NOUN
        and tokens[p - 1] not in _FRENCH_ADJECTIVES
    ]


@dataclass(frozen=True)
class AdjectiveNounSwap:
    """An English adjective–noun pair that French writes noun first, and what the model did.

    Attributes
    ----------
    item : Aligned
    adjective, noun : str
        The English pair (lower case).
    q : int
        Source position of the adjective (the noun is at q + 1).
    in_reference : bool
        Some reference puts a French form of the adjective right after a noun.
    in_output : bool
        The model's output does.
    t : int or None
        The output step writing that adjective (its first such step), if ``in_output``.
    crossing : bool
        The row of the adjective (step t) peaks further left than the row before it
        (step t − 1, the noun): arg max_i α_ti < arg max_i α_(t-1)i, so α crosses the
        way the words do.
    on_words : bool
        More exactly, the adjective's row peaks on the English adjective (q) and the
        noun's row on the English noun (q + 1).
    """

    item: Aligned
    adjective: str
    noun: str
    q: int
    in_reference: bool
    in_output: bool
    t: int | None
    crossing: bool
    on_words: bool


def adjective_noun_swaps(items: Sequence[Aligned]) -> list[AdjectiveNounSwap]:
    """Find English adjective–noun pairs whose French puts the noun first.

    For each sentence and each English adjective of :data:`ADJECTIVES` directly
    followed by a noun-like word, look in the references and in the model's
    output for a French form of that adjective directly after a noun-like word
    (``voiture rouge``), and check whether α crosses: the row writing the French
    adjective peaks left of the row before it (the noun's), and whether those two
    peaks are the English adjective and noun themselves.

    Returns
    -------
    list of AdjectiveNounSwap
        One per such English pair that the references or the output (or both) write
        noun first, in the order of ``items``.
    """
    found = []
    for it in items:
        toks = it.words
        refs = [tb.tokenise(r, "fr") for r in it.references]
        for q in _attributive(toks):
            adj = toks[q]
            in_ref = any(_postnominal(r, adj) for r in refs)
            in_out_at = _postnominal(it.out, adj)
            if not (in_ref or in_out_at):
                continue
            t = in_out_at[0] if in_out_at else None
            crosses = on_words = False
            if t is not None:
                peaks = it.peaks
                crosses = peaks[t] < peaks[t - 1]
                on_words = peaks[t] == q and peaks[t - 1] == q + 1
            found.append(
                AdjectiveNounSwap(
                    it, adj, toks[q + 1], q, in_ref, bool(in_out_at), t, crosses, on_words
                )
            )
    return found


def forced_swaps(trained: Trained, swaps: Sequence[AdjectiveNounSwap]) -> list[AdjectiveNounSwap]:
    """Each swap a reference writes noun first, re-read on that reference by forced alignment.

    For every pair of ``swaps`` (from :func:`adjective_noun_swaps`) whose references
    put the adjective after its noun, the first such reference is forced through the
    model (:func:`forced_align`), and the pair is checked on it: ``in_output`` is then
    True by construction, and ``crossing`` says whether the model's α crosses when it
    writes the noun first, whatever it would have written itself. Every candidate
    gets an answer, where the model's own outputs answer only for the few it writes
    noun first.
    """
    picked = []
    for s in swaps:
        if not s.in_reference:
            continue
        ref = next(r for r in s.item.references if _postnominal(tb.tokenise(r, "fr"), s.adjective))
        picked.append((s, ref))
    forced = forced_align(
        trained,
        [(s.item.source, ref) for s, ref in picked],
        indices=[s.item.index for s, _ in picked],
    )
    out = []
    for (s, _), item in zip(picked, forced, strict=True):
        [again] = [f for f in adjective_noun_swaps([item]) if f.q == s.q]
        out.append(again)
    return out


_SUBJECTS = frozenset(
    {"je", "j'", "tu", "il", "elle", "on", "nous", "vous", "ils", "elles", "ne", "n'"}
)
_OBJECTS = frozenset({"le", "la", "les", "l'", "lui", "leur"})


def _question(it: Aligned) -> bool:
    return it.source.rstrip().endswith("?")


def _negation(it: Aligned) -> bool:
    return any(t in ("ne", "n'") for t in it.out)


def _object_pronoun(it: Aligned) -> bool:
    return any(a in _SUBJECTS and b in _OBJECTS for a, b in zip(it.out, it.out[1:], strict=False))


def _noun_adjective(it: Aligned) -> bool:
    toks = it.words
    return any(_postnominal(it.out, toks[q]) for q in _attributive(toks))


def _unknown(it: Aligned) -> bool:
    return tb.UNK in it.src or tb.UNK in it.out


def _no_reference(it: Aligned) -> bool:
    words_out = tuple(t for t in it.out if t != "<eos>")  # no references: nothing to miss
    return bool(it.references) and all(tb.tokenise(r, "fr") != words_out for r in it.references)


FEATURES: dict[str, tuple[str, Callable[[Aligned], bool]]] = {
    "question": ("the English is a question (ends with ?)", _question),
    "negation": ("the output negates with ne / n' (ne … pas, ne … jamais …)", _negation),
    "object pronoun": (
        "the output puts an object pronoun before the verb (je le vois, il ne l'a pas)",
        _object_pronoun,
    ),
    "noun–adjective": (
        "an English adjective–noun pair comes out noun first (voiture rouge)",
        _noun_adjective,
    ),
    "unknown word": ("the source or the output holds <unk>", _unknown),
    "not a reference": ("the output is none of the references, token for token", _no_reference),
}
"""Name → (what it means, test on one :class:`Aligned`).

Four things that make French order its words differently from English, and two signs of
trouble: an unknown word, and an output that matches no reference.
"""


@dataclass(frozen=True)
class FeatureRow:
    """How common one feature is in a group of sentences and in all of them.

    Attributes
    ----------
    name, meaning : str
    in_group, in_all : int
        Sentences with the feature, in the group and in the whole split (or whatever the
        group was drawn from).
    n_group, n_all : int
        Sizes of the group and of the split.

    ``ratio`` says how much more common the feature is in the group; ``p_over`` whether
    that excess could be luck.
    """

    name: str
    meaning: str
    in_group: int
    in_all: int
    n_group: int
    n_all: int

    @property
    def group_share(self) -> float:
        """Share of the group with the feature."""
        return self.in_group / self.n_group

    @property
    def all_share(self) -> float:
        """Share of the split with the feature."""
        return self.in_all / self.n_all

    @property
    def ratio(self) -> float:
        """How many times more common the feature is in the group than in the split.

        ``inf`` if the split never has it.
        """
        return self.group_share / self.all_share if self.in_all else math.inf

    @property
    def p_over(self) -> float:
        """How likely a group this large, drawn at random from the split, would have the
        feature at least ``in_group`` times: the one-sided hypergeometric test of "the group
        has more of it than chance would give". Small: the excess is unlikely to be luck."""
        n_all, in_all, n_group = self.n_all, self.in_all, self.n_group
        total = math.comb(n_all, n_group)
        hits = range(self.in_group, min(in_all, n_group) + 1)
        return (
            sum(math.comb(in_all, k) * math.comb(n_all - in_all, n_group - k) for k in hits) / total
        )


def feature_table(
    group: Sequence[Aligned],
    everything: Sequence[Aligned],
    features: Mapping[str, tuple[str, Callable[[Aligned], bool]]] | None = None,
) -> list[FeatureRow]:
    """Count each feature in a group of sentences and in the whole split.

    Parameters
    ----------
    group : sequence of Aligned
        E.g. the least monotonic sentences (:func:`least_monotonic`).
    everything : sequence of Aligned
        The split the group was drawn from.
    features : dict, optional
        Name → (meaning, test); default :data:`FEATURES`.

    Returns
    -------
    list of FeatureRow
        In the order of ``features``.
    """
    if not group or not everything:
        raise ValueError("feature_table needs a non-empty group and a non-empty split")
    feats = FEATURES if features is None else features
    rows = []
    for name, (meaning, test) in feats.items():
        hits_group, hits_all = sum(map(test, group)), sum(map(test, everything))
        rows.append(FeatureRow(name, meaning, hits_group, hits_all, len(group), len(everything)))
    return rows


def any_feature(item: Aligned, names: Sequence[str] | None = None) -> bool:
    """Whether ``item`` has at least one of the features ``names`` (default: all of them)."""
    chosen = list(FEATURES) if names is None else list(names)
    unknown = [n for n in chosen if n not in FEATURES]
    if unknown:
        raise ValueError(f"no feature {unknown[0]!r}; choose among {list(FEATURES)}")
    return any(FEATURES[n][1](item) for n in chosen)


def feature_cuts(
    ranked: Sequence[Aligned], everything: Sequence[Aligned], cuts: Sequence[int]
) -> dict[int, dict[str, FeatureRow]]:
    """:func:`feature_table` for the top ``n`` of a ranking, for each ``n`` in ``cuts``.

    A feature that matters should stay over-represented wherever the top of the ranking
    is cut; one that is over-represented at one cut only is noise.

    Returns
    -------
    dict of int to dict of str to FeatureRow
        ``result[n][name]``.
    """
    if any(n < 1 or n > len(ranked) for n in cuts):
        raise ValueError(f"every cut must lie in 1 … {len(ranked)} (the ranked ones), got {cuts}")
    return {n: {r.name: r for r in feature_table(ranked[:n], everything)} for n in cuts}


def feature_markdown(
    by_cut: Mapping[int, Mapping[str, FeatureRow]], base: str = "all test sentences"
) -> str:
    """A Markdown table of :func:`feature_cuts`: each feature's share in ``base`` (what the
    tops were drawn from) and at each cut, with its ratio to the base and its ``p_over``."""
    cuts = list(by_cut)
    names = list(by_cut[cuts[0]])
    head = f"| feature | {base} | " + " | ".join(f"top {n}" for n in cuts) + " |"
    rule = "|---|---|" + "---|" * len(cuts)
    lines = [head, rule]
    for name in names:
        first = by_cut[cuts[0]][name]
        cells = " | ".join(
            f"{by_cut[n][name].group_share:.0%} (×{by_cut[n][name].ratio:.1f}, "
            f"p {by_cut[n][name].p_over:.2g})"
            for n in cuts
        )
        lines.append(f"| {first.meaning} | {first.all_share:.1%} | {cells} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- figures
def draw_alignments(items: Sequence[Aligned], *, ncols: int = 2) -> Figure:
    """Heatmaps of α with the entropy H_t beside each, ``ncols`` sentences to a row.

    Every heatmap shares the colour scale [0, 1], read off one colour bar under the figure;
    the bars are H_t in nats with the ceiling log T_x dashed
    (:func:`attnlib.plots.heatmap_entropy`). The figure is at most ``plots.MAX_SCALED_WIDTH``
    wide, so its text stays readable on the website.
    """
    import matplotlib.pyplot as plt

    if not items:
        raise ValueError("draw_alignments needs at least one sentence")
    ncols = max(1, min(ncols, len(items)))
    nrows = math.ceil(len(items) / ncols)
    T_x = max(len(it.src) for it in items)
    T_y = max(len(it.out) for it in items)
    # no wider than the website's column can show with its 8 pt labels still >= 9 px
    width = min(plots.MAX_SCALED_WIDTH, ncols * (2.8 + 0.5 * T_x))
    fig, axes = plt.subplots(
        nrows, 2 * ncols, layout="constrained", squeeze=False,
        figsize=(width, nrows * (1.4 + 0.42 * T_y)),
        width_ratios=[max(T_x, 3), 2.5] * ncols,
    )  # fmt: skip
    image = None
    for k in range(nrows * ncols):
        r, c = divmod(k, ncols)
        ax_map, ax_h = axes[r, 2 * c], axes[r, 2 * c + 1]
        if k >= len(items):
            ax_map.set_visible(False)
            ax_h.set_visible(False)
            continue
        it = items[k]
        image, _ = plots.heatmap_entropy(
            it.alpha, it.src, it.out, axes=(ax_map, ax_h), colorbar=False
        )
    assert image is not None  # items is not empty
    bar = fig.colorbar(image, ax=axes, location="bottom", shrink=0.5, aspect=30)
    bar.set_label("$\\alpha_{ti}$ (the same scale in every heatmap)")
    return fig
