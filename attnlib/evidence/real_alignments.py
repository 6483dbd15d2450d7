"""The claims of the chapter "Bahdanau et al.'s two figures on real data", for any seed.

Four English–French models (:data:`attnlib.mt.translation.RECIPES`: attention and the
no-attention baseline, each also trained on short sources only) decode the 2,000 test
sentences greedily, and the chapter's claims about them are checked here, by group:

* "fig2": attention beats the baseline in every length bucket, in ≥ 95 % of the paired
  bootstrap resamples; "short": trained on short sources, each model loses more on the
  longer ones, and attention still beats the baseline;
* "crossing": where the reference puts an adjective after its noun, the model seldom does so
  itself; forced through the reference (:func:`attnlib.mt.alignments.forced_swaps`), α crosses
  on some pairs, on the English words themselves, not on all, and seldom keeps the English
  order; "crossing_shown": the forced heatmap shown crosses (the example the rule picks);
* "form": article and subject-pronoun rows peak on the word after *the* / *I*;
  "elision": the rows of the elided words shown peak with the word after them;
* "negation": *ne … pas* rarely peaks twice on the English negation, and the two examples
  shown (one word for two, two for one) do what the page says;
* "features": what the least monotonic translations have in common, counted.

Every one of these claims varies with the training seed. The examples the page shows are
picked from the model's own translations by rules that live here (:func:`check_claims`), so
for another seed the same rules pick other sentences: those claims name their example, and
the seed table shows their words for each seed.

Seeds 1 and 2 retrain all four models with that training seed on the same data
(:func:`attnlib.evidence._shared.translation_model`: about 7 minutes each on two cores,
half that for the short ones). That is too long for ``make test``, so its seed cases read
seeds 1 and 2 from the table ``make seeds`` wrote by retraining them in full
(:data:`RECORDED_SEEDS`), and check that the table is current: its seed-0 column must be
what ``make test`` computes live, claim for claim and number for number.

What stays in the chapter: that the four models share their vocabularies (they share the
recipe's split and cut-off, whatever the seed), and the adjective-noun sentence it shows
first ("The red car is mine."), which is an illustration, not a claim.

See Also
--------
The chapter "Bahdanau et al.'s two figures on real data" (chapters/real_alignments).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from attnlib import claims
from attnlib.alignment import argmax_moves
from attnlib.evidence._shared import Checks, translation_model, with_checks
from attnlib.mt import alignments as ma
from attnlib.mt import translation as tr

__all__ = [
    "AT_LEAST",
    "CUTS",
    "DOES_NOT_HOLD",
    "GROUPS",
    "MIN_STEPS",
    "NEGATION",
    "RECORDED_SEEDS",
    "REORDER",
    "SPLIT_MIN",
    "check_claims",
]

#: The groups of checks the chapter displays, each under its sentence.
GROUPS = (
    "fig2", "short", "crossing", "crossing_shown", "form", "elision", "negation", "features",
)  # fmt: skip
#: Fewest claims :func:`check_claims` must check (what the chapter shows).
AT_LEAST = 39
#: Seeds whose four models take too long to retrain in ``make test``: it reads them from the
#: table ``make seeds`` wrote (see the module's docstring).
RECORDED_SEEDS = (1, 2)
#: Claims about the shipped model (seed 0) that the models of seeds 1 and 2 do not bear out, by
#: those seeds (``make seeds`` retrains them; ``tests/seeds.md`` shows what each wrote). They
#: describe single sentences picked by rule, or patterns of this one model: where the rows of
#: je / j' peak, which features the least monotonic sentences share. The chapter says so where
#: it shows them: another training seed of the same recipe aligns its words otherwise, and only
#: what holds for every seed is the recipe's.
DOES_NOT_HOLD = {
    "more than half of the rows of je / j' peak on the word after 'I'": (1, 2),
    "in “I love summer.”, the row of l' peaks where the row of été after it does": (1,),
    "an object pronoun is over-represented at every cut, beyond chance (p ≤ 0.05)": (2,),
    "a question is more common at every cut, but not beyond chance at every cut": (1, 2),
    (
        "a negation is over-represented at the very top, but not at every cut, and at no cut "
        "beyond chance"
    ): (1,),
    "more rows of je / j' peak on the word after 'I' than on 'I'": (2,),
    "in “The water is warm.”, the row of l' peaks where the row of eau after it does": (2,),
}

#: Greedy decoding, for every score and every heatmap.
K = 1
#: English words that negate: the rows of *ne … pas* on one of them both peak on the negation.
NEGATION = frozenset({"not", "'t", "never", "no"})
#: A row "shares" its weight between two source words that get at least this much each.
SPLIT_MIN = 0.3
#: Heatmaps with fewer output steps (``<eos>`` included) are left out of the ranking.
MIN_STEPS = 5
#: The tops of the ranking by non-monotonicity that are counted: 2.5 %, 5 % and 10 % of the test.
CUTS = (50, 100, 200)
#: The features that reorder words between English and French.
REORDER = ("question", "negation", "object pronoun", "noun–adjective")
#: A feature's excess at a cut is "beyond chance" when its one-sided hypergeometric p
#: (:attr:`attnlib.mt.alignments.FeatureRow.p_over`) is at most this.
ALPHA = 0.05


def _peak(it: ma.Aligned, t: int) -> str:
    """Row t of a heatmap: the token it writes, the source token it peaks on, and that weight."""
    i = it.peaks[t]
    return f"'{it.out[t]}' on '{it.src[i]}' (position {i}, α = {it.alpha[t, i]:.2f})"


def _step(t: int | None) -> int:
    """The output step of a swap or a pair that the model did write."""
    if t is None:
        raise ValueError("a picked example must hold the words it was picked for")
    return t


def _correct(it: ma.Aligned) -> bool:
    """The translation is one of the references, token for token."""
    return not ma.FEATURES["not a reference"][1](it)


def _ahead(it: ma.Aligned, token: str, anchor: str) -> bool:
    """The row writing ``token`` (its first) peaks on the word right after ``anchor``."""
    return (
        token in it.out
        and it.src.count(anchor) == 1
        and it.peaks[it.out.index(token)] == it.src.index(anchor) + 1
    )


#: The evidence of a claim about an example when no test sentence matches the rule that picks it.
NO_EXAMPLE = "no correctly translated test sentence matches the rule that picks the example"


def _first(found: Any, keep: Any) -> Any:
    """The first of ``found`` that ``keep`` accepts, or None."""
    return next((x for x in found if keep(x)), None)


def _elision(it: ma.Aligned | None, token: str) -> claims.Checked:
    """The row writing ``token`` (an elided word) peaks where the row after it does."""
    if it is None:
        return claims.check(
            False,
            f"in an example, the row of {token} peaks where the row after it does",
            evidence=NO_EXAMPLE,
        )
    t = it.out.index(token)
    return claims.check(
        it.peaks[t] == it.peaks[t + 1],
        f"in “{it.source}”, the row of {it.out[t]} peaks where "
        f"the row of {it.out[t + 1]} after it does",
        evidence=f"{_peak(it, t)}; {_peak(it, t + 1)}",
    )


def _both_on_negation(p: Any) -> claims.Checked:
    """Both rows of the left heatmap's ne … pas peak on the English negation."""
    if p is None:
        return claims.check(
            False,
            "in the left heatmap, both rows of ne … pas peak on the English negation",
            evidence=NO_EXAMPLE,
        )
    first, second = _step(p.t_first), _step(p.t_second)
    return claims.check(
        p.same and set(p.words) <= NEGATION,
        f"in the left heatmap, the rows of '{p.item.out[first]}' "
        f"and '{p.item.out[second]}' both peak on the English negation",
        evidence=f"{_peak(p.item, first)}; {_peak(p.item, second)}",
    )


def _shared_row(many_one: ma.Aligned | None, hyphen: Any) -> claims.Checked:
    """The right heatmap's hyphenated word takes at least SPLIT_MIN from each of two words."""
    if many_one is None or hyphen is None:
        return claims.check(
            False,
            f"in the right heatmap, the row of a hyphenated word gives each of two English words "
            f"at least {SPLIT_MIN:.0%} of its weight",
            evidence=NO_EXAMPLE,
        )
    _, t, i, j = hyphen
    return claims.at_least(
        many_one.alpha[t, j],
        SPLIT_MIN,
        f"in the right heatmap, the row of '{many_one.out[t]}' "
        f"gives each of '{many_one.src[i]}' and '{many_one.src[j]}' at least {SPLIT_MIN:.0%} "
        f"of its weight",
        name=f"the smaller of α = {many_one.alpha[t, i]:.2f}, {many_one.alpha[t, j]:.2f}",
    )


def _hyphenated(it: ma.Aligned) -> tuple[float, int, int, int] | None:
    """Its most evenly shared row that writes one hyphenated French word: (α_tj, t, i, j)."""
    return max(
        (
            (float(it.alpha[t, j]), t, i, j)
            for t, i, j in ma.split_rows(it, SPLIT_MIN, exclusive=True)
            if "-" in it.out[t]
        ),
        default=None,
    )


def check_claims(seed: int = 0, *, retrain: bool | None = None) -> dict[str, Any]:
    """Fig. 2 and Fig. 3 of Bahdanau et al. on the four models of training seed ``seed``.

    Parameters
    ----------
    seed : int
        Training seed; 0 is the shipped models.
    retrain : bool, optional
        Seed 0 only: train the four recipes instead of loading them.

    Returns
    -------
    dict
        ``models`` and ``evals`` (by recipe name; greedy, test split), ``table`` (BLEU by
        length bucket with bootstrap intervals, :func:`attnlib.mt.alignments.bleu_table`),
        ``items`` (the attention model's test translations with α), ``drops`` ((kind,
        "short" or "long") → BLEU lost by training on short sources), ``swaps``
        (adjective–noun swaps whose reference writes the noun first), ``forced`` (the same,
        forced through that reference), ``kept_order`` (the forced ones whose adjective row
        peaks right of the noun's) and ``shown`` (a forced one where α crosses, drawn),
        ``articles`` and ``subjects`` (peak offsets from *the* and *I*), ``copied`` (peak
        offsets of the rows that write a source word as it is,
        :func:`attnlib.mt.alignments.copied_offsets`), ``elide_left`` and ``elide_right``,
        ``negations``, ``one_many``, ``many_one``, ``hyphen`` (the shared row of
        ``many_one``: α_tj, t, i, j), ``split_n``, ``ranked`` (the least monotonic
        translations), ``eligible`` (the translations long enough to rank, the base the
        counts compare with), ``by_cut`` (feature counts at each cut), ``reorder`` and
        ``reorder_all``; ``checks`` (by group).
    """
    models = {name: translation_model(name, seed, retrain=retrain) for name in tr.RECIPES}
    # one torch thread: decoding short sentences gains little from two
    evals = {name: m.evaluate("test", k=K, threads=1) for name, m in models.items()}
    buckets = evals["attention"].by_length  # the length buckets of evaluate (English words)
    table = ma.bleu_table(evals, [b.lo for b in buckets] + [buckets[-1].end], n_boot=1000, seed=0)
    items = ma.align(models["attention"], k=K)  # the same greedy translations, with α
    out: dict[str, Any] = {"seed": seed, "models": models, "evals": evals, "table": table}
    out["items"] = items
    checks: Checks = {}

    # Fig. 2: BLEU by length, and the models trained on short sources
    wins = table.wins("attention", "baseline")
    checks["fig2"] = [
        *[
            claims.greater(
                a,
                b,
                f"attention beats the baseline on the sources of {lab} words",
                names=("BLEU attention", "BLEU baseline"),
            )
            for lab, a, b in zip(
                table.labels, table.bleu("attention"), table.bleu("baseline"), strict=True
            )
        ],
        claims.at_least(
            min(wins),
            0.95,
            "in every bucket attention is ahead in at least 95 % of the paired resamples",
            name="smallest share of resamples",
        ),
    ]
    short = table.lengths <= tr.SHORT_WORDS
    drops: dict[tuple[str, str], float] = {}
    checks["short"] = []
    for kind in ("attention", "baseline"):
        drops[kind, "short"] = table.bleu_where(kind, short) - table.bleu_where(
            f"{kind}_short", short
        )
        drops[kind, "long"] = table.bleu_where(kind, ~short) - table.bleu_where(
            f"{kind}_short", ~short
        )
        checks["short"].append(
            claims.greater(
                drops[kind, "long"],
                drops[kind, "short"],
                f"trained on short sources, the {kind} model loses "
                f"more on the longer sources than on the short ones",
                names=(
                    f"drop on ≥ {tr.SHORT_WORDS + 1} words",
                    f"drop on ≤ {tr.SHORT_WORDS} words",
                ),
            )
        )
    checks["short"] += [
        claims.greater(
            a,
            b,
            f"trained on short sources, attention still beats the baseline on {lab} words",
            names=("attention_short", "baseline_short"),
        )
        for lab, a, b in zip(
            table.labels, table.bleu("attention_short"), table.bleu("baseline_short"), strict=True
        )
    ]
    out["drops"] = drops

    # Fig. 3: the adjective after its noun. The model's own outputs write the noun first for
    # too few candidates to count on, so each reference that does is forced through the model.
    swaps = [s for s in ma.adjective_noun_swaps(items) if s.in_reference]
    forced = ma.forced_swaps(models["attention"], swaps)
    crossing = [s for s in forced if s.crossing]
    kept_order = [s for s in forced if s.item.peaks[_step(s.t)] > s.item.peaks[_step(s.t) - 1]]
    # one crossing example, one whose source the model reads without <unk> first
    shown = sorted(crossing, key=lambda s: "<unk>" in s.item.src)[:1]
    out.update(swaps=swaps, forced=forced, kept_order=kept_order, shown=shown)
    n = len(forced)
    checks["crossing"] = [
        claims.greater(
            0.5,
            sum(s.in_output for s in swaps) / max(len(swaps), 1),
            "on its own, the model writes the noun first for fewer than half of the pairs "
            "whose reference does",
            names=("half", "share written noun first"),
        ),
        claims.at_least(
            n,
            5,
            "forced alignment answers for every pair whose reference writes the noun first",
            name="pairs forced",
        ),
        claims.at_least(
            len(crossing),
            1,
            "forced through the reference, α crosses on some of them",
            name="pairs where α crosses",
        ),
        claims.greater(
            n,
            len(crossing),
            "but not on all: crossing is not a rule this model follows",
            names=("pairs", "pairs where α crosses"),
        ),
        claims.check(
            bool(crossing) and all(s.on_words for s in crossing),
            "every crossing lands on the English adjective and noun themselves",
            evidence=f"{sum(s.on_words for s in crossing)} of {len(crossing)} crossings",
        ),
        claims.at_least(
            1 - len(kept_order) / max(n, 1),
            0.75,
            "the adjective's row seldom keeps the English order: it peaks on or left of the "
            "noun's row in at least three pairs of four",
            name="share of pairs not in the English order",
        ),
    ]
    checks["crossing_shown"] = [
        claims.check(
            s.crossing,
            f"forced through “{s.item.references[0]}”, the row of '{s.item.out[t]}' peaks left "
            f"of the row of '{s.item.out[t - 1]}' before it",
            evidence=f"{_peak(s.item, t - 1)}, then {_peak(s.item, t)}",
        )
        for s, t in ((s, _step(s.t)) for s in shown)
    ] + [
        claims.check(
            False,
            "in an example written noun first, the noun's row peaks left of the row before it",
            evidence=NO_EXAMPLE,
        )
        for _ in range(len(shown), 1)  # the page shows one
    ]

    # The word that decides the form: articles and subject pronouns
    def pooled(tokens: Sequence[str], anchor: str) -> Counter[int]:
        total: Counter[int] = Counter()
        for token in tokens:
            total.update(ma.peak_offsets(items, token, anchor))
        return total

    articles, subjects = pooled(("le", "la", "l'", "les"), "the"), pooled(("je", "j'"), "i")
    # the control: rows that write a word as the source has it (Tom, radio) translate that word
    copied = Counter(ma.copied_offsets(items))
    out.update(articles=articles, subjects=subjects, copied=copied)
    checks["form"] = [
        claims.greater(
            articles[1],
            articles[0],
            "most article rows peak on the word after 'the' rather than on 'the'",
            names=("rows on the next word", "rows on 'the'"),
        ),
        claims.greater(
            articles[1] / sum(articles.values()),
            0.5,
            "more than half of the article rows peak on the word after 'the'",
            names=("share on the next word", "half"),
        ),
        claims.greater(
            subjects[1],
            subjects[0],
            "more rows of je / j' peak on the word after 'I' than on 'I'",
            names=("rows on the next word", "rows on 'I'"),
        ),
        claims.greater(
            subjects[1] / sum(subjects.values()),
            0.5,
            "more than half of the rows of je / j' peak on the word after 'I'",
            names=("share on the next word", "half"),
        ),
        claims.at_least(
            copied[0] / sum(copied.values()),
            0.8,
            "the control: rows that write a word as the source has it (a name, a word spelt "
            "alike) peak on that word itself",
            name="share of those rows on the word itself",
        ),
        claims.at_most(
            copied[1] / sum(copied.values()),
            0.1,
            "the control: few of them peak on the word after it",
            name="share on the next word",
        ),
    ]
    # The examples are picked by rule among the test sentences; another seed's model may leave
    # a rule with no sentence, and then the claims about its example fail (NO_EXAMPLE).
    elide_left = _first(items, lambda it: _correct(it) and _ahead(it, "l'", "the"))
    elide_right = _first(items, lambda it: _correct(it) and "j'" in it.out and "l'" in it.out)
    out.update(elide_left=elide_left, elide_right=elide_right)
    checks["elision"] = [
        _elision(it, token)
        for it, token in ((elide_left, "l'"), (elide_right, "j'"), (elide_right, "l'"))
    ]

    # One word for two, two words for one
    negations = ma.pair_peaks(items, ("ne", "n'"), ("pas",))
    split_n = sum(bool(ma.split_rows(it, SPLIT_MIN, exclusive=True)) for it in items)
    one_many = _first(negations, lambda p: p.same and set(p.words) <= NEGATION and _correct(p.item))
    many_one = max(
        (it for it in items if _correct(it) and _hyphenated(it)),
        key=lambda it: _hyphenated(it) or (0.0, 0, 0, 0),
        default=None,
    )
    hyphen = None if many_one is None else _hyphenated(many_one)
    out.update(
        negations=negations, split_n=split_n, one_many=one_many, many_one=many_one, hyphen=hyphen
    )
    checks["negation"] = [
        claims.greater(
            0.5,
            sum(set(q.words) <= NEGATION for q in negations) / len(negations),
            "both rows of ne … pas peak on the English negation in a minority of the negations",
            names=("half", "share of the negations"),
        ),
        _both_on_negation(one_many),
        _shared_row(many_one, hyphen),
    ]

    # Where attention is least monotonic, and what those sentences have in common
    ranked = [it for it, _ in ma.least_monotonic(items, max(CUTS), min_steps=MIN_STEPS)]
    # the tops are drawn from the sentences that could be ranked, so they are the base rate
    eligible = [it for it in items if len(it.out) >= MIN_STEPS]
    by_cut = ma.feature_cuts(ranked, eligible, CUTS)
    reorder = {n: float(np.mean([ma.any_feature(it, REORDER) for it in ranked[:n]])) for n in CUTS}
    reorder_all = float(np.mean([ma.any_feature(it, REORDER) for it in eligible]))
    out.update(
        ranked=ranked,
        eligible=eligible,
        by_cut=by_cut,
        reorder=reorder,
        reorder_all=reorder_all,
        back_all=argmax_moves([it.alpha for it in items]).backward,
    )
    cuts = ", ".join(map(str, CUTS))

    def across(name: str) -> str:
        """The ratio top / overall of a feature at each cut, as evidence."""
        return ", ".join(f"{by_cut[n][name].ratio:.2f}" for n in CUTS) + f" for the top {cuts}"

    def chance(name: str) -> str:
        """The one-sided hypergeometric p of a feature at each cut, as evidence."""
        return ", ".join(f"{by_cut[n][name].p_over:.2g}" for n in CUTS)

    def beyond_chance(name: str) -> int:
        """At how many cuts the excess of a feature is beyond chance (p ≤ ALPHA)."""
        return sum(by_cut[n][name].p_over <= ALPHA for n in CUTS)

    checks["features"] = [
        claims.check(
            all(by_cut[n]["object pronoun"].ratio > 1 for n in CUTS)
            and beyond_chance("object pronoun") == len(CUTS),
            f"an object pronoun is over-represented at every cut, beyond chance (p ≤ {ALPHA})",
            evidence=f"ratios {across('object pronoun')}; p {chance('object pronoun')}",
        ),
        claims.check(
            all(by_cut[n]["question"].ratio > 1 for n in CUTS)
            and beyond_chance("question") < len(CUTS),
            "a question is more common at every cut, but not beyond chance at every cut",
            evidence=f"ratios {across('question')}; p {chance('question')}",
        ),
        claims.check(
            by_cut[CUTS[0]]["negation"].ratio > 1
            and any(by_cut[n]["negation"].ratio <= 1 for n in CUTS)
            and beyond_chance("negation") == 0,
            "a negation is over-represented at the very top, but not at every cut, and at no "
            "cut beyond chance",
            evidence=f"ratios {across('negation')}; p {chance('negation')}",
        ),
        claims.check(
            all(reorder[n] > reorder_all for n in CUTS),
            "the four reorderings together are more common at the top than overall, at every cut",
            evidence=", ".join(f"{reorder[n]:.2f}" for n in CUTS)
            + f" for the top {cuts} against {reorder_all:.2f} overall; each needs more",
        ),
        claims.greater(
            min(by_cut[n]["object pronoun"].ratio for n in CUTS),
            max(by_cut[n]["question"].ratio for n in CUTS),
            "an object pronoun is over-represented more strongly than a question, at every cut",
            names=("smallest ratio, object pronoun", "largest ratio, question"),
        ),
        *[
            claims.check(
                all(0.8 <= by_cut[n][name].ratio <= 1.25 for n in CUTS),
                f"'{name}' is about as common at the top as overall, at every cut",
                evidence=f"ratios {across(name)}; each needs 0.8 … 1.25",
            )
            for name in ("unknown word", "not a reference")
        ],
    ]
    return with_checks(out, checks)
