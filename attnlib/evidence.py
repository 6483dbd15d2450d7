"""The chapters' claims about trained models, one function per chapter, for any training seed.

A sentence such as "the reversal model puts its largest weight on the mirror
position" rests on a trained model, and a trained model is one draw of its
initial weights and batch order. Each function here computes the numbers a
chapter states, checks its claims with :mod:`attnlib.claims`, and returns the
numbers for the chapter to glue. With ``seed=0`` it reads the shipped
checkpoints (what the chapter shows); with another seed it retrains the same
recipes (:func:`attnlib.pretrained.retrain`). ``tests/test_seeds.py`` runs
every function for three seeds, so a claim that holds for one lucky seed only
cannot stay in the course.

See Also
--------
attnlib.claims : the checks and :func:`attnlib.claims.across_seeds`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from attnlib import claims
from attnlib.alignment import diagonal_mass
from attnlib.experiments import FloatArray, Products, count_products, fit_pointer_scores
from attnlib.importance import (
    Explanation,
    _first,
    adversarial_attention,
    agreement_table,
    attention_intervention,
    blanking_effect,
    explain,
    intervention_effect,
    special_top_share,
    swap_s0,
)
from attnlib.pretrained import Pretrained
from attnlib.train import Translation, evaluate, translate
from attnlib.vocab import SPECIALS

__all__ = [
    "BOTTLENECK",
    "BY_CHAPTER",
    "CONTEXT_IN",
    "ENTROPY_PARTS",
    "HEATMAP_CHAIN",
    "LONGER_BUCKETS",
    "LONGER_MAX",
    "N_ADVERSARIAL",
    "N_EXPLAIN",
    "N_INTERVENE",
    "SEQ2SEQ_PARTS",
    "SOV_PARTICLES",
    "WHY_PARTS",
    "LearningCurve",
    "Macs",
    "PartCounts",
    "PartTimes",
    "bottleneck_claims",
    "context_claims",
    "context_curves",
    "count_parts",
    "crossover_length",
    "date_fields",
    "decode_from",
    "edge_cases_claims",
    "entropy_claims",
    "entropy_share",
    "heatmaps_claims",
    "interpretability_claims",
    "learning_curve",
    "longer_copy_task",
    "seq2seq_claims",
    "seq2seq_macs",
    "spot_the_error_claims",
    "time_parts",
    "top1_agreement",
    "trained_model",
    "true_or_false_claims",
    "why_claims",
]


def _with_checks(results: list[claims.Checked], numbers: dict[str, Any]) -> dict[str, Any]:
    """The numbers, plus the checks under ``"checks"`` for the chapter to display."""
    return {**numbers, "checks": list(results)}


def _alpha(tr: Translation) -> np.ndarray:
    """The attention map α (T_y, T_x) of a translation by a model known to have attention."""
    if tr.alpha is None:
        raise ValueError(
            "this translation has no attention map (alpha is None): "
            "it was made by the no-attention baseline"
        )
    return tr.alpha


def _first_test(p: Pretrained) -> Translation:
    model, task = p.model, p.task
    return translate(model, task, [task.test[0][0]])[0]


def spot_the_error_claims(seed: int = 0) -> dict[str, Any]:
    """Chapter 11, error 5: the copying model draws a diagonal band and copies almost everything.

    Returns
    -------
    dict
        ``band`` (share of the weight within one position of the diagonal, first
        test string), ``exact`` (held-out exact match), ``result`` (that string's
        :class:`~attnlib.train.Translation`), ``checks`` (the claims checked).

    See Also
    --------
    The chapter "Spot the error" (chapters/spot_the_error), error 5.
    """
    copy = trained_model("copy", seed)
    result = _first_test(copy)
    band = diagonal_mass(_alpha(result), width=1)
    exact = copy.metrics.exact_match
    checks = [
        claims.at_least(
            band, 0.75, "the copying model's heatmap is a diagonal band", name="weight within ±1"
        ),
        claims.at_least(
            exact, 0.98, "it copies nearly every held-out string exactly", name="exact match"
        ),
    ]
    return _with_checks(checks, {"band": band, "exact": exact, "result": result})


def edge_cases_claims(seed: int = 0) -> dict[str, Any]:
    """Chapter 13, cases 5 and 6: the first step already points right; reversed orders are read.

    Returns
    -------
    dict
        ``first_alpha`` (α_1 of the first test string of the reversal model),
        ``rev`` and ``svo`` (translations), ``rev_hits`` (letter steps whose
        largest weight is on the mirror position), ``rev_band`` (weight within
        one position of the anti-diagonal), ``verb_step`` and ``verb`` (0-based
        output step and source position of the verb), ``verb_alpha``, ``checks``.

    See Also
    --------
    The chapter "Edge cases" (chapters/edge_cases), cases 5 and 6.
    """
    import torch

    from attnlib.tasks import BOS_ID, SVO_VERBS

    rev_model = trained_model("reverse", seed)
    model, task = rev_model.model, rev_model.task
    src_tokens = task.test[0][0]
    T = len(src_tokens)
    src = torch.tensor([task.src_vocab.encode(src_tokens)])
    with torch.no_grad():
        h, final, mask = model.encode(src)
        s_0 = model.decoder.init_state(final)
        mem = model.decoder.memory(h, final, mask)
        _, _, alpha_1 = model.decoder.step(torch.tensor([BOS_ID]), s_0, mem)
    first = alpha_1[0].numpy()
    checks: list[claims.Checked] = []
    add = checks.append
    add(claims.close(first.sum(), 1.0, "the first step's weights sum to 1", tol=1e-6))
    add(
        claims.check(
            int(first.argmax()) == T - 1,
            "the first step, scored against s_0, puts its largest weight on the last letter",
            evidence=f"largest α_1i at i = {int(first.argmax()) + 1} of T_x = {T + 1}; "
            f"the last letter is i = {T}",
        )
    )
    rev = translate(model, task, [src_tokens])[0]
    rev_alpha = _alpha(rev)
    hits = int((np.argmax(rev_alpha[:T], axis=1) == T - 1 - np.arange(T)).sum())
    band = diagonal_mass(rev_alpha, width=1, anti=True)
    add(
        claims.at_least(
            hits / T,
            0.8,
            "the mirror position gets the largest weight at most letter steps",
            name="share of letter steps on the mirror",
        )
    )
    add(claims.at_least(band, 0.75, "most weight lies near the anti-diagonal", name="within ±1"))

    svo_model = trained_model("svo_sov", seed)
    en = svo_model.task.test[0][0]
    svo = translate(svo_model.model, svo_model.task, [en])[0]
    verb = next(i for i, w in enumerate(en) if w in SVO_VERBS)
    verb_step = svo.out.index(SVO_VERBS[en[verb]])
    row = _alpha(svo)[verb_step]
    add(
        claims.greater(
            verb_step,
            verb,
            "the verb is emitted later than it stands in the source",
            names=("output step", "source position"),
        )
    )
    add(
        claims.check(
            int(row.argmax()) == verb,
            "the step that emits the verb puts its largest weight on the English verb",
            evidence=f"largest weight {row.max():.3f} at i = {int(row.argmax()) + 1}; "
            f"the verb is i = {verb + 1}",
        )
    )
    numbers = {
        "first_alpha": first,
        "T": T,
        "rev": rev,
        "rev_hits": hits,
        "rev_band": band,
        "svo": svo,
        "en": en,
        "verb": verb,
        "verb_step": verb_step,
        "verb_alpha": float(row[verb]),
    }
    return _with_checks(checks, numbers)


# --------------------------------------------------------------------------- the chapter's claims
#: What :func:`interpretability_claims` computes on: held-out examples for the three maps, for
#: the interventions and the trained-uniform baselines, and sources for the adversarial search.
N_EXPLAIN, N_INTERVENE, N_ADVERSARIAL = 20, 200, {"reverse": 8, "majority": 30}


def interpretability_claims(seed: int = 0) -> dict:
    """Chapter 09's claims about trained models, computed and checked for one training seed.

    With ``seed=0`` the shipped checkpoints are read (what the chapter shows);
    with another seed the same recipes are retrained with that training seed
    (:func:`attnlib.pretrained.retrain`). Models: "reverse" and "majority",
    and the same two trained with frozen uniform attention
    ("reverse_uniform", "majority_uniform").

    Returns
    -------
    dict
        The numbers the chapter glues and the objects it draws, plus
        ``"checks"``: the :class:`~attnlib.claims.Checked` claims, grouped by
        the chapter's sections ("agreement", "disagreement", "eos",
        "interventions", "adversarial", "trained_uniform", "s0"), each a
        list to display under its sentence.

    See Also
    --------
    The chapter "Looked at is not caused by" (chapters/interpretability);
    ``tests/test_seeds.py`` runs this for three seeds.
    """
    from attnlib import claims, pretrained

    def get(name: str) -> pretrained.Pretrained:
        return pretrained.load(name) if seed == 0 else pretrained.retrain(name, seed=seed)

    rev, maj = get("reverse"), get("majority")
    rev_u, maj_u = get("reverse_uniform"), get("majority_uniform")
    uniform = attention_intervention("uniform")
    found: dict = {"seed": seed}
    checks: dict[str, list] = {}

    # -- three maps, with and without <eos>
    exs = [explain(rev.model, rev.task, src) for src, _ in rev.task.test[:N_EXPLAIN]]
    table = agreement_table(exs)
    letters = agreement_table([ex.content() for ex in exs])
    alpha_loo, alpha_loo_letters = table["alpha", "loo"], letters["alpha", "loo"]
    loo_eos = special_top_share(exs, "loo")
    loo_top = [np.abs(ex.loo).argmax(axis=1) for ex in exs]
    disagree = [  # at each step where the two top positions differ: is leave-one-out's <eos>?
        top[t] == len(ex.src) - 1
        for ex, top in zip(exs, loo_top, strict=True)
        for t in range(len(ex.out))
        if top[t] != ex.alpha[t].argmax()
    ]
    eos_of_disagree = float(np.mean(disagree))
    alpha_eos = special_top_share(
        [dataclasses.replace(ex, **_letter_rows(ex)) for ex in exs], "alpha"
    )
    found.update(
        explanations=exs,
        table=table,
        letters=letters,
        loo_eos=loo_eos,
        alpha_eos=alpha_eos,
        eos_of_disagree=eos_of_disagree,
    )
    checks["agreement"] = [
        claims.at_most(
            alpha_loo.top1,
            0.8,
            "counting <eos>, attention and leave-one-out pick different top positions at a fifth "
            "of the steps or more",
            name="top-1 agreement, <eos> included",
        ),
        claims.between(
            loo_eos,
            0.2,
            0.5,
            "blanking <eos> is leave-one-out's top position at a large share of the steps "
            "(a fifth to a half)",
            name="share of steps",
        ),
        claims.at_least(
            eos_of_disagree,
            0.5,
            "most of the steps where the two disagree are steps where leave-one-out's top is <eos>",
            name="share of the disagreeing steps",
        ),
        claims.at_most(
            alpha_eos,
            0.02,
            "attention (almost) never puts its largest weight on <eos> while writing a letter",
            name="share of letter steps",
        ),
        claims.at_least(
            alpha_loo_letters.top1,
            0.9,
            "on the letters alone, attention and leave-one-out agree at nine steps in ten or more",
            name="top-1 agreement, letters only",
        ),
        claims.greater(
            alpha_loo_letters.top1,
            letters["loo", "grad_input"].top1,
            "on the letters, gradient × input agrees with leave-one-out less often than "
            "attention does",
            names=("α vs LOO", "LOO vs G×I"),
        ),
    ]

    # -- the letter steps where attention and leave-one-out disagree
    split = [
        (ex.src[int(ex.loo[t].argmax())] == ex.out[t], abs(int(ex.loo[t].argmax()) - i_alpha) == 1)
        for ex in (e.content() for e in exs)
        for t, i_alpha in enumerate(ex.alpha.argmax(axis=1))
        if int(ex.loo[t].argmax()) != i_alpha
    ]
    pattern = float(np.mean([written and beside for written, beside in split])) if split else 1.0
    found.update(n_disagree=len(split), disagree_pattern=pattern)
    checks["disagreement"] = [
        claims.at_least(
            pattern,
            0.5,
            "at most letter steps where they disagree, leave-one-out's top position holds the "
            "letter being written and attention's top position is next to it",
            name=f"share of the {len(split)} steps",
        )
    ]

    # -- what blanking <eos> does
    sources = [src for src, _ in rev.task.test[:N_INTERVENE]]
    eos, middle = (blanking_effect(rev.model, rev.task, sources, w) for w in ("eos", "middle"))
    found.update(blank_eos=eos, blank_middle=middle)
    checks["eos"] = [
        claims.at_least(
            eos.h_change / middle.h_change,
            3.0,
            "blanking <eos> moves the other h_i several times more than blanking a letter",
            name="ratio of the mean relative changes",
        ),
        claims.at_most(
            eos.h_change_forward,
            1e-6,
            "the forward half →h_i of every letter does not change at all",
            name="mean relative change of →h_i",
        ),
        claims.at_least(
            eos.extra_tokens,
            2.0,
            "without its <eos> the model no longer finds the end: its outputs grow longer",
            name="mean extra output tokens",
        ),
        claims.between(
            middle.extra_tokens,
            -1.0,
            0.0,
            "with a blanked letter the output is shorter, by less than one token on average",
            name="mean extra output tokens",
        ),
    ]

    # -- test-time interventions (Jain & Wallace's permutation, and uniform weights)
    runs = {
        (name, mode): intervention_effect(p.model, p.task, mode, n=N_INTERVENE, seed=0)
        for name, p in (("reverse", rev), ("majority", maj))
        for mode in ("permute", "uniform")
    }
    found["interventions"] = runs
    checks["interventions"] = [
        claims.at_most(
            max(runs["reverse", m].exact_after for m in ("permute", "uniform")),
            0.05,
            "permuted or uniform weights destroy the reversal model's output",
            name="exact match after, the larger",
        ),
        claims.at_least(
            min(runs["majority", m].exact_after for m in ("permute", "uniform")),
            runs["majority", "uniform"].exact_before - 0.05,
            "the majority model barely notices permuted or uniform weights",
            name="exact match after, the smaller",
        ),
        claims.at_most(
            runs["majority", "uniform"].tvd,
            0.05,
            "uniform weights move the majority model's output distributions very little",
            name="mean TVD",
        ),
    ]

    # -- adversarial weights (Jain & Wallace's key test), one decoder step at a time
    adv = {
        name: adversarial_attention(
            p.model, p.task, [src for src, _ in p.task.test[: N_ADVERSARIAL[name]]], seed=0
        )
        for name, p in (("reverse", rev), ("majority", maj))
    }
    kept, kept_adv = adv["reverse"].token_weight()
    rep_, moved = adv["reverse"].repeated(), adv["reverse"].moved()
    found.update(
        adversarial=adv,
        jsd={name: a.median_jsd() for name, a in adv.items()},
        moved_majority=float(np.median(adv["majority"].moved())),
        moved_repeated=float(np.median(moved[rep_])),
        moved_unique=float(np.median(moved[~rep_])),
        copy_repeated=float(adv["reverse"].copy_weight()[rep_].mean()),
        letter_weight=float(kept.mean()),
        letter_weight_adv=float(kept_adv.mean()),
        letter_unique=float(kept[~rep_].mean()),
        letter_unique_adv=float(kept_adv[~rep_].mean()),
        n_repeated=int(rep_.sum()),
    )
    checks["adversarial"] = [
        claims.at_most(
            max(a.tvd.max() for a in adv.values()),
            adv["reverse"].eps,
            "every adversarial α' leaves its step's output distribution within the tolerance",
            name="largest TVD of an output",
        ),
        claims.at_least(
            found["moved_majority"],
            0.5,
            "for the majority model, α' moves more than half of the weight and the answer stays",
            name="median share of the weight moved",
        ),
        claims.at_least(
            found["letter_weight_adv"] / found["letter_weight"],
            0.95,
            "the reversal model's α' keeps as much weight on the letter being written as α, "
            "or more",
            name="ratio of the mean weights on that letter",
        ),
        claims.at_least(
            found["moved_repeated"],
            0.9,
            "when the letter occurs more than once, α' moves nearly all of the weight",
            name="median share moved",
        ),
        claims.at_least(
            found["copy_repeated"],
            0.5,
            "there, most of α' lands on another copy of the same letter",
            name="mean weight of α' on the other copies",
        ),
        claims.at_least(
            found["letter_unique_adv"] / found["letter_unique"],
            0.75,
            "when the letter occurs once, α' keeps most of α's weight on it",
            name="ratio of the mean weights on the letter",
        ),
        claims.greater(
            found["moved_majority"],
            found["moved_unique"],
            "when the letter occurs once, less weight can move than for the majority model",
            names=("majority", "reverse, unique letter"),
            by=0.1,
        ),
    ]

    # -- Wiegreffe & Pinter's baseline: trained with frozen uniform attention
    trained = {}
    for name, pu in (("reverse", rev_u), ("majority", maj_u)):
        sub = _first(pu.task, "test", N_INTERVENE)  # the examples of the interventions
        edit = pretrained.score_edit(f"{name}_uniform")  # it runs as it was trained
        trained[name] = evaluate(pu.model, sub, "test", edit=edit).exact_match
    found["trained_uniform"] = trained
    rev_runs, maj_runs = runs["reverse", "uniform"], runs["majority", "uniform"]
    checks["trained_uniform"] = [
        claims.greater(
            rev_runs.exact_before,
            trained["reverse"],
            "trained with uniform attention, the reversal model is far worse",
            names=("learned α", "trained uniform"),
            by=0.4,
        ),
        claims.close(
            trained["majority"],
            maj_runs.exact_before,
            "trained with uniform attention, the majority model does as well",
            tol=0.03,
            name="|exact match difference|",
        ),
        claims.greater(
            trained["reverse"],
            rev_runs.exact_after,
            "a model trained without attention does better than uniform weights swapped in at "
            "test time",
            names=("trained uniform", "swapped at test time"),
        ),
    ]

    # -- where the counts reach the decoder: s_0 or the c_t
    swaps = {
        "majority, uniform α": swap_s0(maj.model, maj.task, edit=uniform),
        "majority_uniform": swap_s0(
            maj_u.model, maj_u.task, edit=pretrained.score_edit("majority_uniform")
        ),
    }
    found["swaps"] = swaps
    checks["s0"] = [
        c
        for label, sw in swaps.items()
        for c in (
            claims.at_least(
                sw.follows_h,
                0.7,
                f"{label}: the answer follows the string whose h_i the decoder averages",
                name="share of answers",
            ),
            claims.at_most(
                sw.follows_s0,
                0.2,
                f"{label}: it rarely follows the string that gave s_0",
                name="share of answers",
            ),
        )
    ]
    found["checks"] = checks
    return found


def _letter_rows(ex: Explanation) -> dict:
    """The rows of ``ex`` whose output token is a content token (for dataclasses.replace)."""
    rows = [t for t, tok in enumerate(ex.out) if tok not in SPECIALS]
    return {
        "out": [ex.out[t] for t in rows],
        "alpha": ex.alpha[rows],
        "loo": ex.loo[rows],
        "grad_input": ex.grad_input[rows],
    }


# --------------------------------------------------------------------------- reading heatmaps
#: Bahdanau's decoder turned into Luong's one change at a time, every model trained on the
#: same dates with the same budget: (recipe in attnlib.pretrained, what changed from the row
#: above). See the chapter "Reading alignment heatmaps" (chapters/heatmaps).
HEATMAP_CHAIN = (
    ("dates", "Bahdanau: additive score, query s_{t-1}, c_t into the state and the output"),
    ("dates_general", "score: additive → general, s_{t-1}ᵀ W_a h_i"),
    ("dates_general_output", "c_t leaves the state update (enters the output only)"),
    ("dates_luong_nofeed", "query: s_{t-1} → s_t (Luong's order, no input feeding)"),
    ("dates_luong", "input feeding: h̃_{t-1} enters the state update (Luong)"),
)


def entropy_share(alphas: Sequence[ArrayLike]) -> float:
    """Mean of H_t / log T_x over the steps of each heatmap, averaged over the heatmaps.

    0 when every step puts all its weight on one position, 1 when every step is uniform.

    Parameters
    ----------
    alphas : sequence of (T_y, T_x) arrays

    See Also
    --------
    The chapters "Attention entropy" (chapters/entropy) and "Reading alignment
    heatmaps" (chapters/heatmaps).
    """
    from attnlib.core import entropy

    return float(np.mean([np.mean(entropy(a)) / np.log(np.shape(a)[-1]) for a in alphas]))


def top1_agreement(alphas_a: Sequence[ArrayLike], alphas_b: Sequence[ArrayLike]) -> float:
    """Share of decoder steps at which two models put their largest weight on the same position.

    Pooled over the examples whose two heatmaps have the same shape (the same output length).

    See Also
    --------
    The chapter "Reading alignment heatmaps" (chapters/heatmaps).
    """
    same = steps = 0
    for a, b in zip(alphas_a, alphas_b, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape == b.shape:
            same += int(np.sum(a.argmax(axis=-1) == b.argmax(axis=-1)))
            steps += a.shape[0]
    if steps == 0:
        raise ValueError("no pair of heatmaps with the same shape to compare")
    return same / steps


def date_fields(src: Sequence[str], out: Sequence[str]) -> list[frozenset[int]] | None:
    """For each output step of a date, the source positions that spell its field.

    The year digits of ``YYYY-MM-DD`` get the positions of the year in the source,
    the month digits those of the month (its digits or its name), the day digits
    those of the day; ``-`` and ``<eos>`` get the empty set.

    Returns
    -------
    list of frozenset, one per output token, or None
        None if ``out`` is not the date of ``src`` written in one of
        :data:`attnlib.tasks.DATE_FORMATS`.

    See Also
    --------
    The chapter "Reading alignment heatmaps" (chapters/heatmaps).
    """
    import datetime
    import string

    from attnlib.tasks import DATE_FORMATS, format_date

    text = "".join(tok for tok in src if tok != "<eos>")
    try:
        date = datetime.date.fromisoformat("".join(out[:10]))
    except ValueError:
        return None
    fmt = next((f for f in DATE_FORMATS if format_date(date, f) == text), None)
    if fmt is None:
        return None
    spans: dict[str, frozenset[int]] = {}
    pos = 0
    for literal, field, _, _ in string.Formatter().parse(fmt):
        pos += len(literal)
        if field:
            width = len(format_date(date, "{" + field + "}"))
            kind = {"Y": "year", "D": "day", "DD": "day"}.get(field, "month")
            spans[kind] = frozenset(range(pos, pos + width))
            pos += width
    kinds = ["year"] * 4 + [""] + ["month"] * 2 + [""] + ["day"] * 2
    return [spans.get(k, frozenset()) for k in kinds] + [frozenset()] * (len(out) - 10)


class _ScoreSpread:
    """A pass-through score edit that keeps max_i e_ti − min_i e_ti of every step."""

    def __init__(self) -> None:
        self.spread: list[float] = []

    def __call__(self, e: Any, *, query: Any, mask: Any) -> Any:
        hi = e.masked_fill(~mask, float("-inf")).amax(dim=1)
        lo = e.masked_fill(~mask, float("inf")).amin(dim=1)
        self.spread += (hi - lo).tolist()
        return e


def _near_and_beside(alphas: Sequence[FloatArray], target: Callable[[int, int], int]) -> tuple:
    """Share of letter steps whose argmax lies within 1 of ``target(t, T)``, and the mean share
    of 1 − max_i α_ti that sits on the two neighbours of the argmax."""
    near, beside = [], []
    for a in alphas:
        letters = a.shape[1] - 1  # the last source position is <eos>
        for t in range(min(letters, a.shape[0])):
            k = int(a[t].argmax())
            near.append(abs(k - target(t, letters)) <= 1)
            rest = 1.0 - a[t, k]
            if rest > 1e-9:
                beside.append(sum(a[t, j] for j in (k - 1, k + 1) if 0 <= j < a.shape[1]) / rest)
    return float(np.mean(near)), float(np.mean(beside))


def heatmaps_claims(seed: int = 0, *, n: int = 200, retrain: bool | None = None) -> dict:
    """The claims of the chapter "Reading alignment heatmaps", checked for one training seed.

    Seed 0 reads the shipped checkpoints (:func:`attnlib.pretrained.load`); another
    seed retrains every model it needs with that seed (:func:`attnlib.pretrained.retrain`,
    the same data). Each model decodes the first ``n`` held-out sources of its task.

    Parameters
    ----------
    seed : int
        Training seed; 0 is the shipped models.
    n : int
        Held-out examples per task.
    retrain : bool, optional
        Seed 0 only: train from the recipes instead of loading (as in
        :func:`attnlib.pretrained.load`).

    Returns
    -------
    dict
        The numbers, by section (``"copy"``, ``"reverse"``, ``"dates"``, ``"svo"``,
        ``"chain"``: one row per model of :data:`HEATMAP_CHAIN`, ``"luong"``), and
        ``"checks"``: for each section, the :class:`attnlib.claims.Checked` the chapter
        shows under its sentences.

    See Also
    --------
    The chapter "Reading alignment heatmaps" (chapters/heatmaps);
    ``tests/test_seeds.py`` runs it for seeds 0, 1 and 2.
    """
    from attnlib import claims, pretrained, tasks
    from attnlib.alignment import argmax_moves
    from attnlib.core import entropy
    from attnlib.models import AdditiveAttention
    from attnlib.train import translate

    def read(name: str, edit: Any = None) -> tuple[list, Any]:
        if seed == 0:
            got = pretrained.load(name, retrain=retrain, progress=False)
        else:
            got = pretrained.retrain(name, seed=seed)
        trs = translate(got.model, got.task, [s for s, _ in got.task.test[:n]], edit=edit)
        return trs, got

    def alphas_in(trs: list) -> list[FloatArray]:
        return [np.asarray(tr.alpha, dtype=float) for tr in trs]

    def shares(alpha: FloatArray) -> FloatArray:
        return entropy(alpha) / np.log(alpha.shape[1])

    out: dict[str, Any] = {"n": n, "seed": seed}
    checks: dict[str, list[claims.Checked]] = {}

    # Diagonal and anti-diagonal.
    for name, target in (("copy", lambda t, T: t), ("reverse", lambda t, T: T - 1 - t)):
        alphas = alphas_in(read(name)[0])
        moves = argmax_moves(alphas)
        near, beside = _near_and_beside(alphas, target)
        out[name] = {
            "share": entropy_share(alphas),
            "forward": moves.forward,
            "backward": moves.backward,
            "near": near,
            "beside": beside,
            "peak": float(np.mean([a[:-1].max(axis=1).mean() for a in alphas])),
        }
    c, r = out["copy"], out["reverse"]
    checks["copy"] = [
        claims.at_least(
            c["near"],
            0.95,
            "copy: step t puts its largest weight on letter t or a neighbour of it",
            name="share of steps with the argmax at t ± 1",
        ),
        claims.check(
            c["forward"] >= 0.7 and c["backward"] <= 0.02,
            "copy: the most-attended position moves forward or stays, almost never back",
            evidence=f"forward {c['forward']:.3f}, needs ≥ 0.7; "
            f"backward {c['backward']:.3f}, needs ≤ 0.02",
        ),
        claims.between(
            c["share"],
            0.25,
            0.75,
            "copy: a step shares its weight among a few letters: neither one letter nor all",
            name="mean H_t / log T_x",
        ),
        claims.at_least(
            c["beside"],
            0.5,
            "copy: most of what the largest weight leaves goes to its two neighbours",
            name="neighbours' share of 1 − max_i α_ti",
        ),
    ]
    checks["reverse"] = [
        claims.at_least(
            r["near"],
            0.95,
            "reverse: step t puts its largest weight on the mirrored letter or a neighbour of it",
            name="share of steps with the argmax at T − 1 − t ± 1",
        ),
        claims.check(
            r["backward"] >= 0.7 and r["forward"] <= 0.02,
            "reverse: the most-attended position moves backward or stays, almost never forward",
            evidence=f"backward {r['backward']:.3f}, needs ≥ 0.7; "
            f"forward {r['forward']:.3f}, needs ≤ 0.02",
        ),
        claims.at_least(
            r["beside"],
            0.5,
            "reverse: most of what the largest weight leaves goes to its two neighbours",
            name="neighbours' share of 1 − max_i α_ti",
        ),
    ]

    # Bahdanau → Luong on dates, one change at a time; 'dates' also gives the blocks.
    chain: list[dict[str, Any]] = []
    alphas_of: dict[str, list[FloatArray]] = {}
    trs_of: dict[str, list] = {}
    for name, change in HEATMAP_CHAIN:
        spread = _ScoreSpread()
        trs, got = read(name, edit=spread)
        trs_of[name], alphas_of[name] = trs, alphas_in(trs)
        row = {
            "name": name,
            "change": change,
            "exact": float(got.metrics.exact_match),
            "share": entropy_share(alphas_of[name]),
            "spread": float(np.mean(spread.spread)),
        }
        if name == "dates":
            attention = got.model.attention
            assert isinstance(attention, AdditiveAttention)
            out["v_a_l1"] = float(attention.v_a.weight.detach().abs().sum())
        if chain:
            row["agreement"] = top1_agreement(alphas_of[chain[-1]["name"]], alphas_of[name])
            row["d_share"] = row["share"] - chain[-1]["share"]
        chain.append(row)
    out["chain"] = chain

    # Blocks: each digit of YYYY-MM-DD looks at its field of the source.
    hits: dict[str, list[bool]] = {"year": [], "month": [], "day": []}
    at_digits, at_dashes = [], []
    for tr in trs_of["dates"]:
        fields = date_fields(tr.src, tr.out)
        if fields is None:
            continue
        h = shares(tr.alpha)
        for t, tok in enumerate(tr.out[:10]):
            if tok == "-":
                at_dashes.append(h[t])
                continue
            at_digits.append(h[t])
            hits["year" if t < 4 else "month" if t < 7 else "day"].append(
                int(tr.alpha[t].argmax()) in fields[t]
            )
    moves = argmax_moves(alphas_of["dates"])
    d = {k: float(np.mean(v)) for k, v in hits.items()}
    d.update(
        share=chain[0]["share"],
        forward=moves.forward,
        backward=moves.backward,
        share_digits=float(np.mean(at_digits)),
        share_dashes=float(np.mean(at_dashes)),
    )
    out["dates"] = d
    checks["dates"] = [
        claims.at_least(
            min(d["year"], d["month"], d["day"]),
            0.8,
            "dates: the year, month and day digits each look mostly at their own field of the "
            "source",
            name="lowest share of digit steps with the argmax in the field",
        ),
        claims.greater(
            d["share_dashes"],
            d["share_digits"],
            "dates: the steps that write '-' spread their weight more than the digit steps",
            names=("H share at '-'", "H share at digits"),
            by=0.1,
        ),
        claims.check(
            min(d["forward"], d["backward"]) >= 0.1,
            "dates: the most-attended position moves both ways, as the blocks jump",
            evidence=f"forward {d['forward']:.3f}, backward {d['backward']:.3f}; needs both ≥ 0.1",
        ),
    ]

    # SVO → SOV: content words look at their English word; particles have none.
    lexicons = (
        tasks.SVO_NOUNS,
        tasks.SVO_ADJECTIVES,
        tasks.SVO_VERBS,
        tasks.SVO_ADVERBS,
        tasks.SVO_PLACES,
    )
    english = {ja: en for lex in lexicons for en, ja in lex.items()}
    verbs = set(tasks.SVO_VERBS.values())
    on_word, on_verb, particle_on, h_words, h_particles = [], [], [], [], []
    trs, _ = read("svo_sov")
    for tr in trs:
        h = shares(tr.alpha)
        for t, word in enumerate(tr.out[:-1]):
            looked = tr.src[int(tr.alpha[t].argmax())]
            if word in english:
                on_word.append(looked == english[word])
                h_words.append(h[t])
                if word in verbs:
                    on_verb.append(looked == english[word])
            else:  # ga, o, de: the word they mark is written just before them
                h_particles.append(h[t])
                marked, following = english.get(tr.out[t - 1]), english.get(tr.out[t + 1])
                particle_on.append(looked in (marked, following))
    moves = argmax_moves(alphas_in(trs))
    s = {
        "words": float(np.mean(on_word)),
        "verb": float(np.mean(on_verb)),
        "particles_on_neighbour_word": float(np.mean(particle_on)),
        "share_words": float(np.mean(h_words)),
        "share_particles": float(np.mean(h_particles)),
        "share": entropy_share(alphas_in(trs)),
        "forward": moves.forward,
        "backward": moves.backward,
    }
    out["svo"] = s
    checks["svo"] = [
        claims.at_least(
            s["words"],
            0.75,
            "SVO → SOV: most content words look at the English word they translate",
            name="share of content-word steps",
        ),
        claims.at_least(
            s["verb"],
            0.95,
            "SVO → SOV: the verb, written last, looks back at the English verb",
            name="share of verb steps",
        ),
        claims.at_least(
            s["particles_on_neighbour_word"],
            0.6,
            "SVO → SOV: a particle mostly looks at the word it marks or at the word written next",
            name="share of particle steps",
        ),
        claims.greater(
            s["share_particles"],
            s["share_words"],
            "SVO → SOV: particles spread their weight more than content words",
            names=("H share, particles", "H share, content words"),
            by=0.05,
        ),
    ]

    # The chain: what each change does to the entropy and to the alignment.
    other = pretrained.load("dates_seed1" if seed == 0 else "dates", progress=False)
    trs_other = translate(other.model, other.task, [s for s, _ in other.task.test[:n]])
    general = [row["spread"] for row in chain[1:]]
    bahdanau_luong = top1_agreement(alphas_of["dates"], alphas_of["dates_luong"])
    two_seeds = top1_agreement(alphas_of["dates"], alphas_in(trs_other))
    luong = {
        "bahdanau_luong": bahdanau_luong,
        "two_seeds": two_seeds,
        "score_drop": chain[0]["share"] - chain[1]["share"],
        "largest_other_change": max(abs(row["d_share"]) for row in chain[2:]),
        "spread_ratio": min(general) / chain[0]["spread"],
        "ceiling_used": chain[0]["spread"] / (2 * out["v_a_l1"]),
        "most_agreement": max(row["agreement"] for row in chain[1:]),
        "seed_ratio": (1 - two_seeds) / max(1 - bahdanau_luong, 1e-12),
    }
    out["luong"] = luong
    checks["luong"] = [
        claims.at_least(
            min(row["exact"] for row in chain),
            0.99,
            "all five models solve the task",
            name="lowest held-out exact match",
        ),
        claims.at_least(
            luong["score_drop"],
            0.3,
            "changing the score alone (additive → general) makes the weights far sharper",
            name="drop of the H share",
        ),
        claims.at_most(
            luong["largest_other_change"],
            0.1,
            "none of the three other changes moves the entropy share by more than a few points",
            name="largest change of the H share, up or down",
        ),
    ]
    checks["why"] = [
        claims.at_least(
            luong["spread_ratio"],
            3.0,
            "the general score spreads its scores over a "
            "range several times wider than the additive one",
            name="smallest ratio of mean (max_i e_ti − min_i e_ti), general ÷ additive",
        ),
        claims.at_most(
            luong["ceiling_used"],
            0.5,
            "the additive scores use less than half of the range 2‖v_a‖₁ that bounds them",
            name="mean (max_i e_ti − min_i e_ti) ÷ 2‖v_a‖₁",
        ),
    ]
    checks["agreement"] = [
        claims.at_most(
            luong["most_agreement"],
            0.9,
            "every single change moves the most-attended position at a tenth of the steps or more",
            name="highest top-1 agreement of a pair",
        ),
        claims.at_least(
            1 - luong["two_seeds"],
            0.3,
            "two training seeds of the same Bahdanau recipe disagree at a third of the steps or "
            "more",
            name="share of steps with different top positions, seed vs seed",
        ),
        claims.at_least(
            luong["seed_ratio"],
            0.5,
            "a second training seed alone makes at least half as many disagreements as the switch "
            "from Bahdanau to Luong",
            name="disagreement seed–seed ÷ disagreement Bahdanau–Luong",
        ),
    ]
    out["checks"] = checks
    return out


# ------------------------------------------------------------------- chapters 03, 05, 06 and 12


_TRAINED: dict[tuple[str, int, bool | None], Any] = {}


def trained_model(name: str, seed: int = 0, *, retrain: bool | None = None) -> Any:
    """Pretrained model ``name`` with training seed ``seed``, made once per process.

    Seed 0 is the shipped checkpoint (or, with ``retrain``, the recipe trained
    live, as in :func:`attnlib.pretrained.load`). Another seed reads the shipped
    checkpoint ``<name>_seed<seed>`` if that recipe exists (it must be
    :func:`attnlib.pretrained.reseeded` ``(name, seed)`` under its own name), and
    retrains the recipe with that seed otherwise. Models are kept, so the claim
    functions below share them.

    Returns
    -------
    attnlib.pretrained.Pretrained

    See Also
    --------
    :func:`why_claims`, :func:`entropy_claims`, :func:`seq2seq_claims`.
    """
    from attnlib import pretrained

    key = (name, int(seed), retrain if seed == 0 else None)
    if key not in _TRAINED:
        twin = f"{name}_seed{seed}"
        if seed == 0:
            _TRAINED[key] = pretrained.load(name, retrain=retrain, progress=False)
        elif twin in pretrained.RECIPES:
            want = {**pretrained.reseeded(name, seed).as_dict(), "name": twin}
            if pretrained.RECIPES[twin].as_dict() != want:
                raise ValueError(
                    f"recipe {twin!r} is not recipe {name!r} with training seed {seed}"
                )
            _TRAINED[key] = pretrained.load(twin, progress=False)
        else:
            _TRAINED[key] = pretrained.retrain(name, seed=seed)
    return _TRAINED[key]


def _parts(parts: Sequence[str] | None, known: Sequence[str]) -> set[str]:
    """The sections of a claim function to run (None: all of them)."""
    chosen = set(known if parts is None else parts)
    if not chosen <= set(known):
        raise ValueError(f"parts must be among {list(known)}, got {sorted(chosen - set(known))}")
    return chosen


def _shown(groups: dict[str, list]) -> list:
    """Every check of a claim function, in order (for :func:`attnlib.claims.across_seeds`)."""
    return [c for checks in groups.values() for c in checks]


# ---- chapter 12, question 1: where c_t enters the decoder
#: The three decoders of the date task that differ only in where c_t enters, by recipe.
CONTEXT_IN = {"state": "dates_ctx_state", "output": "dates_ctx_output", "both": "dates"}


class LearningCurve(NamedTuple):
    """Held-out validation exact match during training, on the recipe's evaluation grid.

    Attributes
    ----------
    step : list of int
        Every ``eval_every`` steps up to the recipe's budget of steps.
    valid_exact : list of float
        Greedy exact match on the validation split; after an early stop (the
        target was reached) the last value is carried forward.
    steps_to : int or None
        The first evaluation step at which it reached ``level``.
    area : float
        Mean of ``valid_exact`` over the grid: the area under the learning curve
        as a share of a perfect one (1.0 would be exact from the first evaluation).
    test_exact : float
        Exact match of the final model on the test split.
    """

    step: list[int]
    valid_exact: list[float]
    steps_to: int | None
    area: float
    test_exact: float


def learning_curve(name: str, seed: int = 0, *, level: float = 0.99) -> LearningCurve:
    """The validation learning curve of pretrained model ``name`` for training seed ``seed``.

    See Also
    --------
    The chapter "Why?" (chapters/why), question 1.
    """
    from attnlib import pretrained

    p = trained_model(name, seed)
    fit = pretrained.RECIPES[name].fit
    grid = list(range(fit["eval_every"], fit["steps"] + 1, fit["eval_every"]))
    seen = dict(zip(p.history.eval_step, p.history.valid_exact_match, strict=True))
    values, last = [], 0.0
    for s in grid:
        last = float(seen.get(s, last))
        values.append(last)
    steps_to = next((s for s, v in zip(grid, values, strict=True) if v >= level), None)
    return LearningCurve(grid, values, steps_to, float(np.mean(values)), p.metrics.exact_match)


def context_curves(
    seeds: Sequence[int] = (0, 1, 2), *, level: float = 0.99
) -> dict[str, list[LearningCurve]]:
    """The learning curves of the three placements of c_t (:data:`CONTEXT_IN`), one per seed.

    For seeds 1 and 2 these come from shipped checkpoints (recipes
    ``dates_seed1``, ``dates_ctx_state_seed1``, …), so a chapter reads all
    nine without training.

    See Also
    --------
    The chapter "Why?" (chapters/why), question 1.
    """
    return {
        where: [learning_curve(name, s, level=level) for s in seeds]
        for where, name in CONTEXT_IN.items()
    }


def _step_entropy(alpha: ArrayLike) -> FloatArray:
    """H_t of every step of one heatmap α : (T_y, T_x), in nats (float64)."""
    from attnlib.core import entropy

    return np.asarray(entropy(np.asarray(alpha, dtype=np.float64)), dtype=np.float64)


def context_claims(seeds: Sequence[int] = (0, 1, 2), *, level: float = 0.99) -> dict[str, Any]:
    """Chapter 12, question 1, over several training seeds: does any placement of c_t learn faster?

    Two measures of speed, each per seed: the training steps until validation
    exact match first reaches ``level``, and the area under the learning curve
    (:class:`LearningCurve`).

    Returns
    -------
    dict
        ``curves`` (:func:`context_curves`), ``steps`` and ``area`` (per placement,
        one value per seed), ``mean_steps`` and ``mean_area`` (their means),
        ``firsts`` (per placement, the number of seeds in which it reached
        ``level`` first, ties counting for each), ``best`` (the placement with
        the fewest mean steps), ``spread`` (the largest range
        of steps between the seeds of one placement), ``gap`` (the range of the
        mean steps between placements), ``area_spread`` and ``area_gap`` (the
        same for the area), ``lowest_test`` (the lowest test exact
        match of all runs), ``checks`` (a list of Checked).

    See Also
    --------
    The chapter "Why?" (chapters/why), question 1.
    """
    from attnlib import claims

    curves = context_curves(seeds, level=level)
    steps: dict[str, list[int]] = {}
    for w, cs in curves.items():
        steps[w] = []
        for c in cs:
            if c.steps_to is None:
                raise ValueError(f"a run never reached {level}: its steps to {level} are undefined")
            steps[w].append(c.steps_to)
    area = {w: [c.area for c in cs] for w, cs in curves.items()}
    mean_steps = {w: float(np.mean(v)) for w, v in steps.items()}
    mean_area = {w: float(np.mean(v)) for w, v in area.items()}
    fewest = [min(steps[w][k] for w in steps) for k in range(len(seeds))]  # per seed
    firsts = {w: sum(v == b for v, b in zip(steps[w], fewest, strict=True)) for w in steps}
    spread = max(max(v) - min(v) for v in steps.values())
    gap = max(mean_steps.values()) - min(mean_steps.values())
    area_spread = max(max(v) - min(v) for v in area.values())
    area_gap = max(mean_area.values()) - min(mean_area.values())
    lowest = min(c.test_exact for cs in curves.values() for c in cs)
    others = [w for w in curves if w != "both"]
    best = min(mean_steps, key=lambda w: mean_steps[w])
    n = len(seeds)
    checks = [
        claims.at_least(
            lowest, 0.99, f"all {3 * n} runs learn the date task", name="lowest test exact match"
        ),
        claims.check(
            max(firsts.values()) < n,
            f"no placement reaches {level} first with every seed",
            evidence="seeds in which each is first: "
            + ", ".join(f"{w} {k}" for w, k in firsts.items()),
        ),
        claims.greater(
            spread,
            gap,
            "in steps, the seeds of one placement differ by more than the placements' averages do",
            names=("largest range between seeds", "range between the averages"),
        ),
        claims.greater(
            area_spread,
            area_gap,
            "so they do in area",
            names=("largest range between seeds", "range between the averages"),
        ),
        claims.check(
            max(mean_area, key=lambda w: mean_area[w]) == best,
            f"c_t in {best if best == 'both' else best + ' only'} has the best average "
            "by both measures",
            evidence=f"fewest mean steps: {best}; "
            f"largest mean area: {max(mean_area, key=lambda w: mean_area[w])}",
        ),
        claims.check(
            mean_steps["both"] > min(mean_steps[w] for w in others)
            and mean_area["both"] < max(mean_area[w] for w in others),
            "feeding c_t to both places is not the fastest by either measure",
            evidence="mean steps "
            + ", ".join(f"{w} {v:.0f}" for w, v in mean_steps.items())
            + "; mean area "
            + ", ".join(f"{w} {v:.3f}" for w, v in mean_area.items()),
        ),
    ]
    return {
        "curves": curves,
        "steps": steps,
        "area": area,
        "mean_steps": mean_steps,
        "mean_area": mean_area,
        "firsts": firsts,
        "best": best,
        "spread": spread,
        "gap": gap,
        "area_spread": area_spread,
        "area_gap": area_gap,
        "lowest_test": lowest,
        "checks": checks,
    }


#: The sections of :func:`why_claims`, by the question of chapter 12 they back.
WHY_PARTS = ("context", "pointer", "length", "entropy")


def why_claims(seed: int = 0, *, parts: Sequence[str] | None = None) -> dict[str, Any]:
    """The claims of chapter 12 that rest on trained models, checked for training seed ``seed``.

    Parameters
    ----------
    seed : int
        Training seed; 0 is the shipped models.
    parts : sequence of str, optional
        Which sections of :data:`WHY_PARTS` to run (default: all).

    Returns
    -------
    dict
        By section: ``context`` (question 1: a LearningCurve per placement of
        c_t), ``pointer`` (question 2: the tanh and the linear score's
        :class:`PointerFit` and the chance level), ``length`` (question 4: the
        length buckets of the models of :data:`BOTTLENECK` by role, the token
        accuracy gap per bucket between attention and the baseline of the same
        budget, and that baseline's validation curve), ``entropy`` (question 5:
        H, log T_x, H / log T_x and exact match of reverse and majority, and the
        reversal's weight near the anti-diagonal); ``checks`` (a dict of lists of
        Checked, by section) and ``checked`` (all of them, in order).

    See Also
    --------
    The chapter "Why?" (chapters/why); ``tests/test_seeds.py`` runs it
    for three seeds.
    """
    from attnlib import claims
    from attnlib.alignment import diagonal_mass
    from attnlib.train import translate

    run = _parts(parts, WHY_PARTS)
    out: dict[str, Any] = {}
    checks: dict[str, list] = {}

    if "context" in run:  # 1. c_t in the state, in the output, or both
        ctx = {where: learning_curve(name, seed) for where, name in CONTEXT_IN.items()}
        out["context"] = ctx
        budget = max(c.step[-1] for c in ctx.values())
        checks["context"] = [
            claims.at_least(
                min(c.test_exact for c in ctx.values()),
                0.99,
                "every placement of c_t learns the date task",
                name="lowest test exact match of the three",
            ),
            claims.check(
                all(c.steps_to is not None for c in ctx.values()),
                f"each reaches 0.99 validation exact match within the budget of {budget} steps",
                evidence="steps to 0.99: " + ", ".join(f"{w} {c.steps_to}" for w, c in ctx.items()),
            ),
        ]

    if "pointer" in run:  # 2. a tanh or a linear score, trained on a lookup task
        T_x = 6
        fits = {k: fit_pointer_scores(k, T_x=T_x, seed=seed) for k in ("tanh", "linear")}
        chance = 1 / T_x
        out["pointer"] = {"fits": fits, "chance": chance, "T_x": T_x}
        checks["pointer"] = [
            claims.at_least(
                fits["tanh"].test_accuracy,
                0.95,
                "the tanh score learns the lookup",
                name="held-out accuracy",
            ),
            claims.between(
                fits["linear"].test_accuracy,
                chance - 0.05,
                chance + 0.05,
                "the linear score stays at chance level",
                name=f"held-out accuracy (chance {chance:.3f})",
            ),
        ]

    if "length" in run:  # 4. the models of chapter 07 (BOTTLENECK), by source length
        runs = {role: trained_model(name, seed) for role, name in BOTTLENECK.items()}
        by = {role: r.metrics.by_length for role, r in runs.items()}
        none, attn, more = by["none"], by["attention"], by["none_4x"]
        gap = [a.token_accuracy - b.token_accuracy for a, b in zip(attn, none, strict=True)]
        valid = runs["none"].history.valid_exact_match
        out["length"] = {**by, "gap": gap, "none_valid": valid}
        checks["length"] = [
            claims.at_least(
                attn[0].exact_match - none[0].exact_match,
                0.2,
                "with the same budget, the baseline is well behind even on the shortest sources",
                name="exact match, attention − none, shortest bucket",
            ),
            claims.greater(
                valid[-1],
                valid[-2],
                "the baseline was still improving when its budget ran out",
                names=("last validation exact match", "the one before"),
            ),
            claims.at_most(
                attn[0].token_accuracy - more[0].token_accuracy,
                0.05,
                "trained four times as long, it nearly catches up on the shortest sources",
                name="token accuracy, attention − none ×4, shortest bucket",
            ),
            claims.at_least(
                attn[-1].token_accuracy - more[-1].token_accuracy,
                0.3,
                "but not on the longest",
                name="token accuracy, attention − none ×4, longest bucket",
            ),
            claims.check(
                bool(np.all(np.diff([b.token_accuracy for b in none]) < 0))
                and bool(np.all(np.diff([b.token_accuracy for b in more]) < 0)),
                "without attention, accuracy falls with every longer bucket, at either budget",
                evidence="token accuracy "
                + ", ".join(f"{b.token_accuracy:.3f}" for b in none)
                + " (×4: "
                + ", ".join(f"{b.token_accuracy:.3f}" for b in more)
                + ")",
            ),
            claims.greater(
                gap[-1],
                gap[0],
                "at the same budget, the gap grows with the length",
                by=0.3,
                names=("gap on the longest", "gap on the shortest"),
            ),
            claims.at_least(
                attn[-1].token_accuracy,
                0.95,
                "with attention, the longest sources are still copied",
                name="token accuracy, longest bucket",
            ),
        ]

    if "entropy" in run:  # 5. focused and diffuse: reverse and majority
        ent: dict[str, dict[str, float]] = {}
        for name in ("reverse", "majority"):
            p = trained_model(name, seed)
            trs = translate(p.model, p.task, [src for src, _ in p.task.test[:200]])
            H = [float(_step_entropy(_alpha(t)).mean()) for t in trs]  # mean over the steps t
            H_max = [float(np.log(len(t.src))) for t in trs]  # log T_x, <eos> included
            ent[name] = {
                "H": float(np.mean(H)),
                "H_max": float(np.mean(H_max)),
                "share": float(np.mean(np.divide(H, H_max))),
                "exact": p.metrics.exact_match,
                "n": len(trs),
            }
            if name == "reverse":
                band = [diagonal_mass(_alpha(t), anti=True) for t in trs]
                ent[name]["band"] = float(np.mean(band))
        out["entropy"] = ent
        checks["entropy"] = [
            claims.at_most(
                ent["reverse"]["share"],
                0.7,
                "the reversal model's entropy is well below the ceiling",
                name="mean H_t / log T_x",
            ),
            claims.at_least(
                ent["reverse"]["band"],
                0.75,
                "its weight sits on the mirror position and its neighbours",
                name="weight within ±1 of the anti-diagonal",
            ),
            claims.at_least(
                ent["majority"]["share"],
                0.9,
                "the majority model spreads its weights nearly uniformly",
                name="mean H_t / log T_x",
            ),
            claims.at_least(
                min(ent["reverse"]["exact"], ent["majority"]["exact"]),
                0.95,
                "both get nearly every held-out example right",
                name="lower test exact match",
            ),
        ]
    out["checks"] = checks
    out["checked"] = _shown(checks)
    return out


#: Output words of the SVO → SOV toy language that have no counterpart in the English source.
SOV_PARTICLES = ("ga", "o", "de")
#: The sections of :func:`entropy_claims`.
ENTROPY_PARTS = ("svo", "focus")


def entropy_claims(
    seed: int = 0, *, n: int = 200, parts: Sequence[str] | None = None
) -> dict[str, Any]:
    """The claims of chapter 05 that rest on trained models, checked for training seed ``seed``.

    Parameters
    ----------
    seed : int
        Training seed; 0 is the shipped models.
    n : int
        Held-out sentences to average over.
    parts : sequence of str, optional
        Which sections of :data:`ENTROPY_PARTS` to run (default: both).

    Returns
    -------
    dict
        ``svo``: for the particles, ``<eos>`` and the content words, the mean
        H_t / log T_x of the steps that emit them and the number of such steps;
        ``focus``: for reverse and majority, the mean H_t / log T_x over the
        word steps and the test exact match, for reverse also the mean largest
        weight (``top``), the share of letter steps whose largest weight is on
        the mirror position (``on_mirror``) and the mean weight within one
        position of it (``near``); ``n``; ``checks`` (a dict of lists of Checked, by
        section) and ``checked`` (all of them, in order).

    See Also
    --------
    The chapter "Attention entropy" (chapters/entropy); ``tests/test_seeds.py``
    runs it for three seeds.
    """
    from attnlib import claims
    from attnlib.train import translate

    run = _parts(parts, ENTROPY_PARTS)
    out: dict[str, Any] = {"n": n}
    checks: dict[str, list] = {}

    if "svo" in run:  # per-step entropy of the SVO → SOV model, by the word each step emits
        p = trained_model("svo_sov", seed)
        kinds = (*SOV_PARTICLES, "<eos>", "content words")
        shares: dict[str, list[float]] = {k: [] for k in kinds}
        for t in translate(p.model, p.task, [src for src, _ in p.task.test[:n]]):
            for word, H in zip(t.out, _step_entropy(_alpha(t)) / np.log(len(t.src)), strict=True):
                shares[word if word in shares else "content words"].append(float(H))
        svo = {k: (float(np.mean(v)), len(v)) for k, v in shares.items() if v}
        out["svo"] = svo
        content = svo["content words"][0]
        checks["svo"] = [
            claims.greater(
                svo["ga"][0],
                content,
                "the steps that emit the subject particle ga spread clearly more "
                "than the steps that emit content words",
                by=0.1,
                names=("H_t / log T_x at ga", "at content words"),
            ),
            claims.greater(
                svo["<eos>"][0],
                content,
                "so do the steps that emit <eos>",
                names=("H_t / log T_x at <eos>", "at content words"),
            ),
            claims.greater(
                svo["ga"][0],
                svo["o"][0],
                "the object particle o is far more focused than ga",
                by=0.1,
                names=("H_t / log T_x at ga", "at o"),
            ),
        ]

    if "focus" in run:  # reverse (focused) and majority (diffuse), <eos> step left out
        focus: dict[str, dict[str, float]] = {}
        for name in ("reverse", "majority"):
            p = trained_model(name, seed)
            trs = translate(p.model, p.task, [src for src, _ in p.task.test[:n]])
            word_steps = [_step_entropy(_alpha(t)[:-1]).mean() / np.log(len(t.src)) for t in trs]
            focus[name] = {"share": float(np.mean(word_steps)), "exact": p.metrics.exact_match}
            if name == "reverse":  # letter k (0-based) of n letters is written from n − 1 − k
                rows = [
                    (_alpha(t)[k], len(t.src) - 2 - k) for t in trs for k in range(len(t.src) - 1)
                ]
                focus[name]["top"] = float(np.mean([row.max() for row, _ in rows]))
                focus[name]["on_mirror"] = float(np.mean([row.argmax() == i for row, i in rows]))
                focus[name]["near"] = float(
                    np.mean([row[max(i - 1, 0) : i + 2].sum() for row, i in rows])
                )
        out["focus"] = focus
        rev, maj = focus["reverse"], focus["majority"]
        checks["focus"] = [
            claims.at_least(
                rev["on_mirror"],
                0.9,
                "each reversal step puts its largest weight on the mirror position",
                name="share of letter steps",
            ),
            claims.at_least(
                (rev["near"] - rev["top"]) / (1 - rev["top"]),
                0.5,
                "most of the rest of its weight lies on the mirror position's two neighbours",
                name="(weight within ±1 of the mirror − largest weight) ÷ (1 − largest weight)",
            ),
            claims.between(
                rev["share"],
                1 / 3,
                2 / 3,
                "yet its H_t is far from 0: between a third and two thirds of log T_x",
                name="mean H_t / log T_x",
            ),
            claims.at_least(
                maj["share"],
                0.9,
                "the majority model's single answer step spreads its weight close to uniformly",
                name="mean H_t / log T_x",
            ),
            claims.at_least(
                min(rev["exact"], maj["exact"]),
                0.95,
                "both models get nearly every held-out example right",
                name="lower test exact match",
            ),
        ]
    out["checks"] = checks
    out["checked"] = _shown(checks)
    return out


#: The sections of :func:`seq2seq_claims`.
SEQ2SEQ_PARTS = ("reverse", "ablation")


def seq2seq_claims(
    seed: int = 0,
    *,
    models: dict[str, Any] | None = None,
    parts: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The claims of chapter 06 that rest on trained models, checked for training seed ``seed``.

    Parameters
    ----------
    seed : int
        Training seed; 0 is the shipped models.
    models : dict, optional
        Pretrained models by recipe name (``"reverse"``, ``"copy"``,
        ``"copy_embedding"``) to use instead of :func:`trained_model`: the chapter
        passes the ones it loaded or retrained.
    parts : sequence of str, optional
        Which sections of :data:`SEQ2SEQ_PARTS` to run (default: both).

    Returns
    -------
    dict
        ``reverse``: the final validation exact match, the share of the letter
        steps (first 200 test strings) whose largest weight is on the mirror
        position, and the number of strings; ``ablation``: the test Metrics of
        ``copy`` and ``copy_embedding``, and a test string with a repeated
        letter, the letter, its first two positions and the largest gap between
        their columns of α under the embedding encoder; ``checks`` (a dict of
        lists of Checked, by section) and ``checked`` (all of them, in order).

    See Also
    --------
    The chapter "A Bahdanau seq2seq, built from parts" (chapters/seq2seq);
    ``tests/test_seeds.py`` runs it for three seeds.
    """
    from attnlib import claims
    from attnlib.train import evaluate, translate

    run = _parts(parts, SEQ2SEQ_PARTS)
    given = dict(models or {})
    out: dict[str, Any] = {}
    checks: dict[str, list] = {}

    def model(name: str) -> Any:
        return given[name] if name in given else trained_model(name, seed)

    if "reverse" in run:
        rev = model("reverse")
        trs = translate(rev.model, rev.task, [s for s, _ in rev.task.test[:200]])
        # the step writing letter t (1-based) of n letters looks at letter n + 1 − t; 0-based,
        # with <eos> last among the len(src) = n + 1 source positions: position n − 1 − k
        hits = [
            int(np.argmax(_alpha(t)[k])) == len(t.src) - 2 - k
            for t in trs
            for k in range(min(len(t.src) - 1, len(_alpha(t))))
        ]
        valid = float(rev.history.valid_exact_match[-1])
        out["reverse"] = {"valid": valid, "antidiag": float(np.mean(hits)), "n": len(trs)}
        checks["reverse"] = [
            claims.at_least(
                valid,
                0.99,
                "training ends with nearly every validation string exactly reversed",
                name="last validation exact match",
            ),
            claims.at_least(
                out["reverse"]["antidiag"],
                0.9,
                "the model has found the anti-diagonal without being told",
                name="letter steps whose largest weight is on letter n + 1 − t",
            ),
        ]

    if "ablation" in run:
        cp, emb = model("copy"), model("copy_embedding")
        m_rnn, m_emb = evaluate(cp.model, cp.task), evaluate(emb.model, emb.task)
        source = next(s for s, _ in cp.task.test if len(set(s)) < len(s))
        letter = next(ch for ch in source if source.count(ch) > 1)
        i, j = [k for k, ch in enumerate(source) if ch == letter][:2]
        [tr_emb] = translate(emb.model, emb.task, [source])
        emb_alpha = _alpha(tr_emb)
        out["ablation"] = {
            "copy": m_rnn,
            "copy_embedding": m_emb,
            "source": source,
            "letter": letter,
            "positions": (i, j),
            "gap": float(np.abs(emb_alpha[:, i] - emb_alpha[:, j]).max()),
        }
        checks["ablation"] = [
            claims.at_least(
                m_rnn.exact_match, 0.98, "with the encoder RNN, copying works", name="exact match"
            ),
            claims.at_most(
                m_emb.exact_match,
                0.05,
                "with bare embeddings, attention alone cannot even copy",
                name="exact match",
            ),
            claims.close(
                emb_alpha[:, i],
                emb_alpha[:, j],
                "two positions with the same letter get the same weight at every step",
                tol=1e-6,
                name=f"largest gap between the columns of '{letter}'",
            ),
        ]
    out["checks"] = checks
    out["checked"] = _shown(checks)
    return out


# --------------------------------------------------------------------------- the bottleneck
#: The three models of chapter 07 by role: one budget with and without attention, and the
#: baseline again with four times that budget. All copy strings of 5–20 letters.
BOTTLENECK = {
    "attention": "long_copy_attention",
    "none": "long_copy_none",
    "none_4x": "long_copy_none_4x",
}
#: Copy strings longer than any the models of :data:`BOTTLENECK` trained on (they saw 5–20),
#: in two buckets: 1–5 and 6–10 letters beyond the longest training string.
LONGER_BUCKETS = (21, 26)
LONGER_MAX = 30


def longer_copy_task(n_test: int = 500) -> Any:
    """Held-out copy strings of 21–30 letters: longer than any the bottleneck models saw.

    The same alphabet and token ids as the models' own task (copy 5–20); only
    the ``test`` split is meant to be used (``train`` holds one string).

    Returns
    -------
    attnlib.tasks.Task

    See Also
    --------
    The chapter "The fixed-length bottleneck" (chapters/bottleneck).
    """
    from attnlib.tasks import make_task

    return make_task(
        "copy", min_len=LONGER_BUCKETS[0], max_len=LONGER_MAX, n_train=1, n_valid=0,
        n_test=n_test, seed=0,
    )  # fmt: skip


def _band(alpha: FloatArray, steps: int) -> FloatArray:
    """Per step t (0-based), the weight within one position of source position t."""
    return np.array([alpha[t, max(t - 1, 0) : t + 2].sum() for t in range(steps)])


def bottleneck_claims(seed: int = 0, *, retrain: bool | None = None) -> dict[str, Any]:
    """The claims of chapter 07 (and statement 6 of chapter 10), checked for training seed ``seed``.

    Three models copy strings of 5–20 letters (:data:`BOTTLENECK`): attention
    and the no-attention baseline with the same budget, and the baseline with
    four times that budget. Their held-out metrics per length bucket, their
    accuracy on longer strings than any they trained on
    (:func:`longer_copy_task`), and the attention map of the longest in-range
    test string.

    Parameters
    ----------
    seed : int
        Training seed; 0 reads the shipped checkpoints, others retrain the
        recipes (see :func:`trained_model`).
    retrain : bool, optional
        Seed 0 only: train the three recipes live instead of loading them
        (as in :func:`attnlib.pretrained.load`).

    Returns
    -------
    dict
        ``metrics`` (role → held-out :class:`attnlib.train.Metrics`), ``beyond``
        (role → Metrics on the longer strings, for "attention" and "none_4x"),
        ``gap`` and ``gap_4x`` (exact match, attention − baseline, per bucket),
        ``closed`` (share of the gap that four times the budget closed, on the
        shortest and the longest bucket), ``valid_4x`` (the 4× baseline's
        validation exact match at 3/4 of its budget and at the end),
        ``dropped`` (letters the attention model leaves out, on average, on
        the longest strings beyond its training range), ``longest`` (the
        longest in-range test string, its translation, the letters right and
        the weight near the diagonal per step), ``longer`` (the task of longer
        strings, the longest of them and the attention model's translation),
        ``checks`` (lists of Checked by group: "budget", "longer_budget",
        "beyond", "statement_6" (what chapter 10 states), "heatmap") and
        ``checked`` (all of them, in order).

    See Also
    --------
    The chapters "The fixed-length bottleneck" (chapters/bottleneck) and
    "True or false" (chapters/true_or_false), statement 6;
    ``tests/test_seeds.py`` runs it for three seeds.
    """
    from attnlib import claims
    from attnlib.train import evaluate, predict, translate

    runs = {role: trained_model(name, seed, retrain=retrain) for role, name in BOTTLENECK.items()}
    task = runs["attention"].task
    metrics = {role: run.metrics for role, run in runs.items()}
    exact = {role: [b.exact_match for b in m.by_length] for role, m in metrics.items()}
    token = {role: [b.token_accuracy for b in m.by_length] for role, m in metrics.items()}
    labels = [b.label for b in metrics["attention"].by_length]
    gap = [a - b for a, b in zip(exact["attention"], exact["none"], strict=True)]
    gap_4x = [a - b for a, b in zip(exact["attention"], exact["none_4x"], strict=True)]
    closed = {k: 1 - gap_4x[i] / max(gap[i], 1e-9) for k, i in (("short", 0), ("long", -1))}

    hist = runs["none_4x"].history
    k = int(np.searchsorted(hist.eval_step, 3 * hist.eval_step[-1] // 4))
    valid_4x = (hist.eval_step[k], hist.valid_exact_match[k], hist.valid_exact_match[-1])

    longer = longer_copy_task()
    beyond = {
        role: evaluate(runs[role].model, longer, "test", buckets=list(LONGER_BUCKETS))
        for role in ("attention", "none_4x")
    }
    src_len = np.array([len(s) for s, _ in longer.test])
    out_len = np.array([len(o) for o in predict(runs["attention"].model, longer, "test")])
    far = src_len >= LONGER_BUCKETS[1]
    dropped = float(np.mean(src_len[far] - out_len[far]))
    far_source = max((s for s, _ in longer.test), key=len)
    [far_tr] = translate(runs["attention"].model, longer, [far_source])

    source = max((s for s, _ in task.test), key=len)
    [tr] = translate(runs["attention"].model, task, [source])
    alpha = _alpha(tr)
    n = min(len(source), len(alpha))
    band = _band(alpha, n)
    right = sum(a == b for a, b in zip(tr.out, source, strict=False))

    b_near, b_far = beyond["attention"].by_length
    n_near, n_far = beyond["none_4x"].by_length
    checks = {
        "budget": [
            claims.at_least(
                min(exact["attention"]),
                0.9,
                "with attention, at least 90 % of the strings of every length are copied exactly",
                name="lowest bucket exact match, attention",
            ),
            claims.greater(
                exact["attention"][0],
                exact["none"][0],
                "even on the shortest strings the baseline with the same budget is far behind",
                names=(f"exact match {labels[0]}, attention", "baseline"),
                by=0.2,
            ),
            claims.at_most(
                exact["none"][-1],
                0.05,
                "the same-budget baseline copies almost none of the longest strings",
                name=f"exact match {labels[-1]}, baseline",
            ),
            claims.check(
                bool(np.all(np.diff(token["none"]) < 0)),
                "without attention, token accuracy falls with every longer bucket",
                evidence="token accuracy " + ", ".join(f"{v:.3f}" for v in token["none"]),
            ),
            claims.greater(
                gap[-1],
                gap[0],
                "the gap between the two grows with the length",
                names=(f"exact-match gap {labels[-1]}", f"gap {labels[0]}"),
            ),
        ],
        "longer_budget": [
            claims.at_least(
                exact["none_4x"][0],
                0.9,
                "with four times the budget, the baseline copies over 90 % of the shortest strings",
                name=f"exact match {labels[0]}, baseline 4×",
            ),
            claims.at_most(
                exact["none_4x"][-1],
                0.05,
                "with four times the budget, it still copies almost none of the longest",
                name=f"exact match {labels[-1]}, baseline 4×",
            ),
            claims.at_least(
                closed["short"],
                0.5,
                "four times the training closes most of the gap on the shortest strings",
                name=f"share of the {labels[0]} gap closed",
            ),
            claims.at_most(
                closed["long"],
                0.2,
                "and little of it on the longest",
                name=f"share of the {labels[-1]} gap closed",
            ),
            claims.greater(
                token["none_4x"][-1],
                token["none"][-1],
                "more training does raise the baseline's token accuracy on the longest strings",
                names=("token accuracy 4×", "1×"),
            ),
            claims.greater(
                valid_4x[2],
                valid_4x[1],
                "the 4× baseline was still improving when its budget ran out",
                names=("validation exact match at the end", f"at step {valid_4x[0]}"),
            ),
        ],
        "beyond": [
            claims.greater(
                min(exact["attention"]),
                b_near.exact_match,
                "attention loses much of its accuracy on strings 1–5 letters longer than any "
                "it trained on",
                names=("lowest exact match in range", f"exact match {b_near.label}"),
                by=0.3,
            ),
            claims.at_most(
                b_far.exact_match,
                0.05,
                "6–10 letters beyond, it copies almost none exactly",
                name=f"exact match {b_far.label}, attention",
            ),
            claims.greater(
                b_near.exact_match,
                n_near.exact_match,
                "just beyond the training lengths attention still beats the 4× baseline",
                names=(f"exact match {b_near.label}, attention", "baseline 4×"),
                by=0.1,
            ),
            claims.at_most(
                max(n_near.exact_match, n_far.exact_match),
                0.02,
                "the baseline copies (almost) none of the longer strings",
                name="exact match 21–30, baseline 4×",
            ),
            claims.at_least(
                dropped,
                1.0,
                "beyond its training lengths the attention model's outputs are too short: "
                "it drops letters",
                name=f"letters missing per string, {b_far.label}",
            ),
        ],
        "statement_6": [
            claims.greater(
                token["attention"][-1],
                token["none"][-1],
                "on the longest sources attention gets far more letters right than the "
                "baseline with the same budget",
                names=(f"token accuracy {labels[-1]}, attention", "baseline"),
                by=0.3,
            ),
            claims.at_most(
                exact["none_4x"][-1],
                0.05,
                "four times the training does not rescue the baseline on them",
                name=f"exact match {labels[-1]}, baseline 4×",
            ),
            claims.at_most(
                b_far.exact_match,
                0.05,
                "trained on 5–20 letters, attention too fails on strings of 26–30",
                name=f"exact match {b_far.label}, attention",
            ),
        ],
        "heatmap": [
            claims.at_least(
                float(band.mean()),
                0.5,
                "on the longest test string, most of each step's weight lies within one "
                "position of the letter it writes",
                name="mean weight within ±1 of the diagonal",
            ),
            claims.at_least(
                float(band[-max(n // 4, 1) :].mean()),
                0.5,
                "and it stays there up to the last letters",
                name="the same over the last quarter of the steps",
            ),
        ],
    }
    return {
        "metrics": metrics,
        "beyond": beyond,
        "labels": labels,
        "gap": gap,
        "gap_4x": gap_4x,
        "closed": closed,
        "valid_4x": valid_4x,
        "dropped": dropped,
        "longer": {"task": longer, "source": far_source, "translation": far_tr},
        "longest": {"source": source, "translation": tr, "right": right, "band": band},
        "checks": checks,
        "checked": _shown(checks),
    }


# --------------------------------------------------------------------------- statement 9
def decode_from(
    model: Any, h: Any, final: Any, mask: Any, *, max_len: int, s_0: Any = None
) -> tuple[Any, Any]:
    """Greedy decoding from given encoder outputs, through the decoder's public steps.

    What :meth:`attnlib.models.Seq2Seq.greedy` does after ``model.encode``, but
    with h, the mask and s_0 chosen by the caller, so that an experiment can
    hand the decoder permuted encoder states. Every row runs ``max_len`` steps
    (nothing is masked after ``<eos>``).

    Parameters
    ----------
    model : Seq2Seq
    h : (B, T_x, d_h) tensor
    final : (B, d_final) tensor
        The encoder summary (s_0 is built from it unless ``s_0`` is given).
    mask : (B, T_x) bool tensor
    max_len : int
    s_0 : (B, d_s) tensor, optional

    Returns
    -------
    tokens : (B, max_len) long tensor
    alpha : (B, max_len, T_x) tensor, or None without attention

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 9.
    """
    import torch

    from attnlib.vocab import BOS_ID, PAD_ID

    with torch.no_grad():
        mem = model.decoder.memory(h, final, mask)
        s = model.decoder.init_state(final) if s_0 is None else s_0
        y = torch.full((h.shape[0],), BOS_ID, dtype=torch.long)
        never = torch.zeros(model.tgt_vocab_size)
        never[[PAD_ID, BOS_ID]] = float("-inf")
        tokens, alphas = [], []
        for _ in range(max_len):
            logits, s, alpha = model.decoder.step(y, s, mem)
            y = (logits + never).argmax(dim=-1)
            tokens.append(y)
            alphas.append(alpha)
    out = torch.stack(tokens, dim=1)
    return out, (None if alphas[0] is None else torch.stack(alphas, dim=1))


def _until_eos(tokens: Any) -> list[tuple[int, ...]]:
    """Each row's ids up to and including its first ``<eos>``."""
    from attnlib.vocab import EOS_ID

    rows = []
    for row in tokens.tolist():
        rows.append(tuple(row[: row.index(EOS_ID) + 1] if EOS_ID in row else row))
    return rows


def _swap_subject_object(src: Sequence[str], tgt: Sequence[str]) -> tuple[tuple, tuple] | None:
    """For a plain "S V O" sentence: "O V S" and its translation if that differs, else None."""
    from attnlib.tasks import SVO_NOUNS, SVO_VERBS

    if "in" in src or "o" not in tgt or len([w for w in src if w in SVO_VERBS]) != 1:
        return None
    v = next(i for i, w in enumerate(src) if w in SVO_VERBS)
    if v + 1 == len(src) or src[-1] not in SVO_NOUNS:
        return None  # an adverb after the object
    ga, o = tgt.index("ga"), tgt.index("o")
    new_tgt = (*tgt[ga + 1 : o], "ga", *tgt[:ga], "o", *tgt[o + 1 :])
    if new_tgt == tuple(tgt):
        return None  # the same noun phrase twice (up to "the"/"a"): the meaning is unchanged
    return (*src[v + 1 :], src[v], *src[:v]), new_tgt


def true_or_false_claims(seed: int = 0) -> dict[str, Any]:
    """Statement 9 of chapter 10 on the trained SVO → SOV model, for training seed ``seed``.

    Three experiments on every held-out sentence, all through the model's
    public pieces (``model.encode``, ``model.decoder.memory/init_state/step``,
    see :func:`decode_from`):

    * **permute h**: each row's encoder states h_i and its mask are permuted
      (padding positions too) and s_0 is built from the unchanged summary, as
      the encoder made it: the scores permute with the h_i, so every output
      should be the same and every α_t the same weights, permuted;
    * **reorder the words**: plain "S V O" sentences with subject and object
      swapped ("O V S", the same words): the encoder writes new states, and
      the model translates the new sentence;
    * **s_0 from permuted h**: the h_i permuted within each sentence and s_0
      recomputed from them the way the encoder builds its summary
      ([→h at the last position; ←h at the first]): now s_0 changes.

    Returns
    -------
    dict
        ``n`` (sentences), ``permute`` (outputs unchanged, largest |Δα| after
        undoing the permutation), ``reorder`` (sentences, outputs changed,
        outputs equal to the swapped sentence's translation, the
        share of new h_i far from every old h_j and the median distance, in
        units of the median ‖h_j‖, one example), ``s_0`` (outputs changed, the
        check that the summary is [→h_L; ←h_1]), ``checks`` (lists of Checked by group: "permute",
        "reorder", "s_0") and ``checked``.

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 9;
    ``tests/test_seeds.py`` runs it for three seeds.
    """
    import torch

    from attnlib import claims
    from attnlib.runtime import torch_threads
    from attnlib.train import encode_pairs, translate

    model, task, _, _ = trained_model("svo_sov", seed)
    pairs = task.test
    data = encode_pairs(task, pairs)
    max_len = int(data.tgt_out.shape[1]) + 2
    gen = torch.Generator().manual_seed(1000 + seed)
    out: dict[str, Any] = {"n": len(pairs)}
    with torch_threads(1), torch.no_grad():
        h, final, mask = model.encode(data.src)
        B, T_x, _ = h.shape
        rows = torch.arange(B).unsqueeze(1)
        ref_tok, ref_alpha = decode_from(model, h, final, mask, max_len=max_len)
        ref = _until_eos(ref_tok)

        # (a) permute every row's T_x positions, pads included; the mask moves with them
        perm = torch.stack([torch.randperm(T_x, generator=gen) for _ in range(B)])
        tok_p, alpha_p = decode_from(model, h[rows, perm], final, mask[rows, perm], max_len=max_len)
        same = sum(a == b for a, b in zip(_until_eos(tok_p), ref, strict=True))
        steps = torch.tensor([len(r) for r in ref])
        live = (torch.arange(max_len).unsqueeze(0) < steps.unsqueeze(1)).unsqueeze(-1)
        undone = torch.gather(ref_alpha, 2, perm.unsqueeze(1).expand(-1, max_len, -1))
        d_alpha = float(((alpha_p - undone).abs() * live).max())
        out["permute"] = {"same": same, "d_alpha": d_alpha}

        # (c) permute within each sentence and rebuild s_0 from the permuted states
        lengths = mask.sum(dim=1)
        hid = h.shape[2] // 2
        summary = torch.cat([h[torch.arange(B), lengths - 1, :hid], h[:, 0, hid:]], dim=-1)
        inner = torch.stack(
            [
                torch.cat([torch.randperm(int(n), generator=gen), torch.arange(int(n), T_x)])
                for n in lengths
            ]
        )
        h_q = h[rows, inner]
        final_q = torch.cat([h_q[torch.arange(B), lengths - 1, :hid], h_q[:, 0, hid:]], dim=-1)
        tok_q, _ = decode_from(model, h_q, final_q, mask, max_len=max_len)
        changed_s0 = sum(a != b for a, b in zip(_until_eos(tok_q), ref, strict=True))
        moved = inner[:, :1] != 0  # rows whose first position moved: their s_0 changes
        out["s_0"] = {
            "changed": changed_s0,
            "summary_gap": float((summary - final).abs().max()),
            "moved": int(moved.sum()),
        }

    # (b) the same words in another order: subject and object swapped
    swaps = [(src, sw) for src, tgt in pairs if (sw := _swap_subject_object(src, tgt))]
    sources = [src for src, _ in swaps]
    new_sources = [sw[0] for _, sw in swaps]
    before = translate(model, task, sources)
    after = translate(model, task, new_sources)
    changed = sum(a.text != b.text for a, b in zip(before, after, strict=True))
    correct = sum(b.text == task.tgt_text(sw[1]) for (_, sw), b in zip(swaps, after, strict=True))
    with torch_threads(1), torch.no_grad():
        nearest = []  # per new h_i: distance to the closest old h_j, over the median ‖h_j‖
        for src, new in zip(sources, new_sources, strict=True):
            h_old = model.encode(torch.tensor([task.src_vocab.encode(src)]))[0][0]
            h_new = model.encode(torch.tensor([task.src_vocab.encode(new)]))[0][0]
            scale = h_old.norm(dim=-1).median()
            nearest.extend((torch.cdist(h_new, h_old).min(dim=1).values / scale).tolist())
    far = float(np.mean(np.array(nearest) > 0.1))
    example = 0
    out["reorder"] = {
        "n": len(swaps),
        "changed": changed,
        "correct": correct,
        "far": far,
        "nearest": float(np.median(nearest)),
        "example": (sources[example], new_sources[example], before[example], after[example]),
    }

    n = len(pairs)
    checks = {
        "permute": [
            claims.check(
                same == n,
                "permuting h_i (and the mask) leaves every output unchanged",
                evidence=f"{same} of {n} held-out sentences",
            ),
            claims.at_most(
                d_alpha,
                1e-5,
                "the weights permute with the h_i",
                name="largest difference from the old α, permuted",
            ),
        ],
        "reorder": [
            claims.check(
                changed == len(swaps),
                "swapping subject and object changes the output",
                evidence=f"{changed} of {len(swaps)} sentences",
            ),
            claims.at_least(
                correct / len(swaps),
                0.95,
                "the new output is the translation of the reordered sentence",
                name="share of swapped sentences translated exactly",
            ),
            claims.at_least(
                far,
                0.9,
                "the encoder writes new states, not the old ones reordered",
                name="share of new h_i farther than 0.1 median ‖h‖ from every old h_j",
            ),
        ],
        "s_0": [
            claims.close(
                summary,
                final,
                "the encoder's summary is [→h at the last position; ←h at the first]",
                tol=0.0,
                name="largest difference",
            ),
            claims.at_least(
                changed_s0 / n,
                0.5,
                "rebuilding s_0 from the permuted states changes most outputs",
                name="share of outputs changed",
            ),
        ],
    }
    out["checks"] = checks
    out["checked"] = _shown(checks)
    return out


# --------------------------------------------------------------------------- statement 8
class Macs(NamedTuple):
    """Multiply-adds of one sentence through a seq2seq model, by part.

    Counted in the matrix and vector products only (one multiply-add per
    weight a product uses, plus the score and context sums of attention);
    elementwise work (gates, tanh, exp) and the embedding lookups are left out.

    Attributes
    ----------
    encoder : int
        The recurrent encoder: T_x steps (both directions).
    decoder : int
        s_0 and the recurrent state updates: T_y steps.
    readout : int
        The output layer: T_y steps.
    attention : int
        The keys U_a h_i (T_x of them, once), the query W_a s_{t-1} (T_y of them)
        and, for each of the T_x · T_y pairs, the score's v_a^T (d_a) and the
        context's α_ti h_i (d_h).
    """

    encoder: int
    decoder: int
    readout: int
    attention: int

    @property
    def total(self) -> int:
        """All four parts."""
        return self.encoder + self.decoder + self.readout + self.attention

    @property
    def attention_share(self) -> float:
        """attention / total."""
        return self.attention / self.total


def seq2seq_macs(model: Any, T_x: int, T_y: int) -> Macs:
    """Count the multiply-adds of one sentence (T_x source and T_y target steps) through ``model``.

    Each weight matrix of a recurrent step or of the output layer is used once
    per step, so a step costs as many multiply-adds as those matrices have
    weights; the counts are read off the model's own parameters. Attention
    adds, besides its projections, (d_a + d_h) per pair (t, i): the only
    term that grows with T_x · T_y.

    Parameters
    ----------
    model : Seq2Seq
        A Bahdanau model or a no-attention baseline (``decoder="bahdanau"``
        or ``"none"``) with the recurrent encoder.
    T_x, T_y : int
        Source positions (``<eos>`` included) and output steps.

    Returns
    -------
    Macs

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 8.
    """
    from attnlib.models import AdditiveAttention, BahdanauDecoder, BiGRUEncoder, NoAttentionDecoder

    enc, dec = model.encoder, model.decoder
    if not isinstance(enc, BiGRUEncoder) or not isinstance(
        dec, BahdanauDecoder | NoAttentionDecoder
    ):
        raise TypeError(
            "seq2seq_macs counts a recurrent encoder with a Bahdanau or no-attention decoder"
        )
    if not (isinstance(T_x, int) and isinstance(T_y, int) and T_x >= 1 and T_y >= 1):
        raise ValueError(f"T_x and T_y must be whole numbers ≥ 1, got {T_x!r} and {T_y!r}")

    def weights(*modules: Any) -> int:
        return sum(p.numel() for m in modules for n, p in m.named_parameters() if "weight" in n)

    encoder = T_x * weights(enc.gru_forward, enc.gru_backward)
    decoder = weights(dec.W_s) + T_y * weights(dec.cell)
    readout = T_y * weights(dec.W_o, dec.W_y)
    attention = 0
    if isinstance(dec, BahdanauDecoder):
        attn = dec.attention
        if not isinstance(attn, AdditiveAttention):
            raise TypeError("seq2seq_macs counts the additive score")
        pair = attn.d_a + attn.d_h  # v_a^T tanh(…) and α_ti h_i
        attention = T_x * weights(attn.U_a) + T_y * weights(attn.W_a) + T_x * T_y * pair
    return Macs(encoder, decoder, readout, attention)


def crossover_length(model: Any) -> float:
    """The length T = T_x = T_y at which attention's multiply-adds equal the rest's.

    With T_x = T_y = T the rest of the model costs R_0 + r·T (:func:`seq2seq_macs`:
    R_0 builds s_0 once) and attention b·T + c·T²; this solves
    c·T² + (b − r)·T − R_0 = 0 for its positive root. For state size d and
    attention size d_a it is of the order of d² / d_a.

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 8.
    """
    one, two = seq2seq_macs(model, 1, 1), seq2seq_macs(model, 2, 2)
    if one.attention == 0:
        raise ValueError("a model without attention has no crossover")
    rest_1, rest_2 = one.total - one.attention, two.total - two.attention
    r = rest_2 - rest_1
    r_0 = rest_1 - r
    c = (two.attention - 2 * one.attention) / 2
    b = one.attention - c
    return float(((r - b) + np.sqrt((r - b) ** 2 + 4 * c * r_0)) / (2 * c))


class PartCounts(NamedTuple):
    """The matrix products of one sentence through a model, and of its attention alone.

    Counted as they run (:func:`attnlib.experiments.count_products`): the same on
    every run and every machine.

    Attributes
    ----------
    forward : Products
        One teacher-forced forward pass (encoder, T_y decoder steps, output layer).
    attention : Products
        The attention of the same pass on its own: the keys U_a h_i once, then T_y
        steps of scores, softmax and context.
    """

    forward: Products
    attention: Products

    @property
    def attention_share(self) -> float:
        """Attention's share of the multiply-adds of the pass's matrix products."""
        return self.attention.multiply_adds / self.forward.multiply_adds


class PartTimes(NamedTuple):
    """Wall-clock seconds of one sentence through a model, and of its attention alone.

    For display and benchmarks (``bench/bench_cost.py``) only: a time depends on what
    else the machine runs, so no claim rests on it (:class:`PartCounts` counts).

    Attributes
    ----------
    forward : float
        Median time of one teacher-forced forward pass (encoder, T_y decoder
        steps, output layer).
    attention : float
        Median time of the attention of the same pass on its own: the keys
        U_a h_i once, then T_y steps of scores, softmax and context.
    attention_share : float
        Median over the repeats of attention / forward, each ratio taken from
        two runs made one right after the other.
    """

    forward: float
    attention: float
    attention_share: float


def _one_sentence(
    model: Any, T_x: int, T_y: int, seed: int
) -> tuple[Callable[[], None], Callable[[], None]]:
    """A forward pass of one random sentence through ``model``, and its attention alone."""
    import torch

    from attnlib.vocab import EOS_ID

    attn = model.decoder.attention
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(EOS_ID + 1, model.src_vocab_size, (1, T_x), generator=gen)
    src[0, -1] = EOS_ID
    tgt = torch.randint(EOS_ID + 1, model.tgt_vocab_size, (1, T_y), generator=gen)
    h = torch.randn(1, T_x, attn.d_h, generator=gen)
    s_prev = torch.randn(T_y, 1, attn.d_s, generator=gen)

    def forward() -> None:
        model(src, tgt)

    def attention() -> None:
        keys = attn.precompute(h)
        for t in range(T_y):
            attn(s_prev[t], h, keys=keys)

    return forward, attention


def count_parts(model: Any, T_x: int, T_y: int, *, seed: int = 0) -> PartCounts:
    """Count the matrix products of a forward pass of one random sentence, and of its attention.

    Parameters
    ----------
    model : Seq2Seq
        With the Bahdanau decoder.
    T_x, T_y : int
        Source positions (``<eos>`` included) and output steps.
    seed : int
        For the random sentence and states (the counts do not depend on it).

    Returns
    -------
    PartCounts

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 8.
    """
    import torch

    forward, attention = _one_sentence(model, T_x, T_y, seed)
    with torch.no_grad():
        return PartCounts(count_products(forward), count_products(attention))


def time_parts(model: Any, T_x: int, T_y: int, *, repeats: int = 5, seed: int = 0) -> PartTimes:
    """Time a forward pass of one random sentence and its attention alone, on one thread.

    The two are timed in alternation, ``repeats`` times each. A share is the
    median of the ratios of runs made one right after the other: another
    process that slows the machine for a while slows both runs of a pair
    alike, and a few disturbed pairs do not move a median. No time is a
    difference of two others. For display and benchmarks only
    (``bench/bench_cost.py``); :func:`count_parts` counts the same two runs.

    Parameters
    ----------
    model : Seq2Seq
        With the Bahdanau decoder.
    T_x, T_y : int
        Source positions (``<eos>`` included) and output steps.
    repeats : int
    seed : int
        For the random sentence and states.

    Returns
    -------
    PartTimes

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 8.
    """
    import torch

    from attnlib.runtime import torch_threads

    forward, attention = _one_sentence(model, T_x, T_y, seed)
    times: dict[str, list[float]] = {"forward": [], "attention": []}
    with torch_threads(1), torch.no_grad():
        forward()  # warm-up
        attention()
        for _ in range(repeats):
            for name, fn in (("forward", forward), ("attention", attention)):
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    ratios = np.array(times["attention"]) / np.array(times["forward"])
    return PartTimes(
        float(np.median(times["forward"])),
        float(np.median(times["attention"])),
        float(np.median(ratios)),
    )


#: Every claim function, by the chapter that shows its checks (``tests/test_seeds.py`` runs each
#: for three seeds).
BY_CHAPTER: dict[str, Callable[..., dict[str, Any]]] = {
    "entropy": entropy_claims,
    "seq2seq": seq2seq_claims,
    "bottleneck": bottleneck_claims,
    "heatmaps": heatmaps_claims,
    "interpretability": interpretability_claims,
    "true_or_false": true_or_false_claims,
    "spot_the_error": spot_the_error_claims,
    "why": why_claims,
    "edge_cases": edge_cases_claims,
}
