"""The claims of the chapter "Reading alignment heatmaps", for any training seed.

What the chapter says about the shape of each heatmap (the copy's diagonal, the reversal's
anti-diagonal, the date's blocks, the particles of SVO → SOV) and about Bahdanau's decoder
turned into Luong's one change at a time (:data:`HEATMAP_CHAIN`) rests on trained models,
and every one of those claims varies with the training seed: seeds 1 and 2 retrain every
model with that seed (the same data). The chapter's comparison of two seeds of the dates
model uses the shipped "dates_seed1" with seed 0, and the shipped "dates" with another seed.

The three measures the claims are made of, :func:`entropy_share`, :func:`top1_agreement`
and :func:`date_fields`, are defined here; they are deterministic functions of given
heatmaps.

See Also
--------
The chapter "Reading alignment heatmaps" (chapters/heatmaps).
"""

from __future__ import annotations

import datetime
import string
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from attnlib import claims, pretrained, tasks
from attnlib.alignment import argmax_moves
from attnlib.core import entropy
from attnlib.evidence._shared import Checks, trained_model, with_checks
from attnlib.experiments import FloatArray
from attnlib.models import AdditiveAttention
from attnlib.tasks import DATE_FORMATS, format_date
from attnlib.train import translate

__all__ = [
    "AT_LEAST",
    "GROUPS",
    "HEATMAP_CHAIN",
    "check_claims",
    "date_fields",
    "entropy_share",
    "top1_agreement",
]

#: The groups of checks the chapter displays, each under its own sentence.
GROUPS = ("copy", "reverse", "dates", "svo", "luong", "why", "agreement")
#: Fewest claims :func:`check_claims` must check (what the chapter shows).
AT_LEAST = 22

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


def check_claims(seed: int = 0, *, n: int = 200, retrain: bool | None = None) -> dict[str, Any]:
    """The claims of the chapter "Reading alignment heatmaps", checked for one training seed.

    Seed 0 reads the shipped checkpoints; another seed reads or retrains every model it needs
    with that seed (:func:`attnlib.evidence._shared.trained_model`, the same data). Each
    model decodes the first ``n`` held-out sources of its task.

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
    """

    def read(name: str, edit: Any = None) -> tuple[list, Any]:
        got = trained_model(name, seed, retrain=retrain)
        trs = translate(got.model, got.task, [s for s, _ in got.task.test[:n]], edit=edit)
        return trs, got

    def alphas_in(trs: list) -> list[FloatArray]:
        return [np.asarray(tr.alpha, dtype=float) for tr in trs]

    def shares(alpha: FloatArray) -> FloatArray:
        return entropy(alpha) / np.log(alpha.shape[1])

    out: dict[str, Any] = {"n": n, "seed": seed}
    checks: Checks = {}

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
    return with_checks(out, checks)
