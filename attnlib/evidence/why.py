"""The claims of the chapter "Why?" that rest on trained models, for any training seed.

Four of the chapter's questions are answered with trained models, each by one part of
:func:`check_claims`: question 1, where c_t enters the decoder ("context": three placements
trained on dates); question 2, the tanh in the score ("pointer": a tanh and a linear score
fitted to a lookup); question 4, attention and length ("length": the models of the chapter
"The fixed-length bottleneck"); question 5, focused and diffuse weights ("entropy": the
reversal and majority models). Every one of these claims varies with the training seed;
seeds 1 and 2 read the shipped twins of the date models (``dates_seed1``, …) and retrain the
others (:func:`attnlib.evidence._shared.trained_model`).

Question 1 is also answered across seeds by :func:`context_claims`, which compares the
learning curves of the nine shipped date models (three placements × seeds 0, 1, 2) in one
run: its claims are about the spread between seeds, so they are checked once, not per seed
(``tests/evidence/test_why.py``).

The chapter's other checks (a linear score's weights do not depend on s_{t-1}, hard choices
have no gradient, two weightings with one context vector) are arithmetic on given arrays and
stay in the chapter.

See Also
--------
The chapter "Why?" (chapters/why).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from attnlib import claims, pretrained
from attnlib.alignment import diagonal_mass
from attnlib.evidence._shared import (
    LONG_COPY,
    Checks,
    alpha_of,
    choose_parts,
    step_entropy,
    trained_model,
    with_checks,
)
from attnlib.experiments import fit_pointer_scores
from attnlib.train import translate

__all__ = [
    "AT_LEAST",
    "CONTEXT_IN",
    "GROUPS",
    "OVER_SEEDS",
    "PARTS",
    "LearningCurve",
    "check_claims",
    "context_claims",
    "context_curves",
    "learning_curve",
]

#: The groups of checks the chapter displays, each under its question: "context" from
#: :func:`context_claims`, the others from :func:`check_claims`.
GROUPS = ("context", "pointer", "length", "entropy")
#: Fewest claims :func:`check_claims` must check (what the chapter shows).
AT_LEAST = 19

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


def context_claims(seeds: Sequence[int] = (0, 1, 2), *, level: float = 0.99) -> dict[str, Any]:
    """Question 1 over several training seeds: does any placement of c_t learn faster?

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
        match of all runs), ``checks`` (group ``"context"``).

    See Also
    --------
    The chapter "Why?" (chapters/why), question 1.
    """
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
    context = [
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
        "checks": {"context": context},
    }


#: The parts of :func:`check_claims`, by the question they back (question 1's claims compare
#: seeds: :func:`context_claims`).
PARTS = ("pointer", "length", "entropy")
#: Question 1's claims, checked once over several seeds (their words are about the spread
#: between seeds); ``python -m attnlib.evidence`` and the seed test run it over seeds 0, 1, 2.
OVER_SEEDS = context_claims


def check_claims(seed: int = 0, *, parts: Sequence[str] | None = None) -> dict[str, Any]:
    """The chapter's claims that rest on trained models, checked for training seed ``seed``.

    Parameters
    ----------
    seed : int
        Training seed; 0 is the shipped models.
    parts : sequence of str, optional
        Which parts of :data:`PARTS` to run (default: all).

    Returns
    -------
    dict
        By part: ``pointer`` (question 2: the tanh and the linear score's
        :class:`PointerFit` and the chance level), ``length`` (question 4: the
        length buckets of the models of ``LONG_COPY`` by role, the token
        accuracy gap per bucket between attention and the baseline of the same
        budget, and that baseline's validation curve), ``entropy`` (question 5:
        H, log T_x, H / log T_x and exact match of reverse and majority, and the
        reversal's weight near the anti-diagonal); ``checks`` (the Checked of each part
        run, under its name).
    """
    run = choose_parts(parts, PARTS)
    out: dict[str, Any] = {}
    checks: Checks = {}

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

    if "length" in run:  # 4. the models of the chapter "The fixed-length bottleneck"
        runs = {role: trained_model(name, seed) for role, name in LONG_COPY.items()}
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
            H = [float(step_entropy(alpha_of(t)).mean()) for t in trs]  # mean over the steps t
            H_max = [float(np.log(len(t.src))) for t in trs]  # log T_x, <eos> included
            ent[name] = {
                "H": float(np.mean(H)),
                "H_max": float(np.mean(H_max)),
                "share": float(np.mean(np.divide(H, H_max))),
                "exact": p.metrics.exact_match,
                "n": len(trs),
            }
            if name == "reverse":
                band = [diagonal_mass(alpha_of(t), anti=True) for t in trs]
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
    return with_checks(out, checks)
