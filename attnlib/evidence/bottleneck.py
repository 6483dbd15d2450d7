"""The claims of the chapter "The fixed-length bottleneck", for any training seed.

Three models copy strings of 5–20 letters (:data:`LONG_COPY`): attention and the
no-attention baseline with one budget, and the baseline with four times that budget. What
the chapter states about them (accuracy by length at either budget, on strings longer than
any they trained on, and the attention map of the longest test string) is checked here, and
every one of these claims varies with the training seed: seeds 1 and 2 retrain the three
recipes with that seed (:func:`attnlib.evidence._shared.trained_model`).

The chapter's own check under its argument (two sets of states with one mean give one c_t
under uniform weights) is arithmetic on given arrays and stays in the chapter. Its statement
in "True or false" (statement 6) is checked by :mod:`attnlib.evidence.true_or_false`.

See Also
--------
The chapter "The fixed-length bottleneck" (chapters/bottleneck).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnlib import claims
from attnlib.evidence._shared import (
    LONG_COPY,
    LONGER_BUCKETS,
    LONGER_MAX,
    Checks,
    alpha_of,
    longer_copy_task,
    trained_model,
    with_checks,
)
from attnlib.experiments import FloatArray
from attnlib.train import evaluate, predict, translate

__all__ = [
    "AT_LEAST",
    "GROUPS",
    "LONGER_BUCKETS",
    "LONGER_MAX",
    "LONG_COPY",
    "check_claims",
    "longer_copy_task",
]

#: The groups of checks the chapter displays, each under its own sentence.
GROUPS = ("budget", "longer_budget", "beyond", "heatmap")
#: Fewest claims :func:`check_claims` must check (what the chapter shows).
AT_LEAST = 18


def _band(alpha: FloatArray, steps: int) -> FloatArray:
    """Per step t (0-based), the weight within one position of source position t."""
    return np.array([alpha[t, max(t - 1, 0) : t + 2].sum() for t in range(steps)])


def check_claims(seed: int = 0, *, retrain: bool | None = None) -> dict[str, Any]:
    """The chapter's claims, checked for training seed ``seed``.

    Three models copy strings of 5–20 letters (:data:`LONG_COPY`): attention
    and the no-attention baseline with the same budget, and the baseline with
    four times that budget. Their held-out metrics per length bucket, their
    accuracy on longer strings than any they trained on
    (:func:`longer_copy_task`), and the attention map of the longest in-range
    test string.

    Parameters
    ----------
    seed : int
        Training seed; 0 reads the shipped checkpoints, others retrain the
        recipes (see :func:`attnlib.evidence._shared.trained_model`).
    retrain : bool, optional
        Seed 0 only: train the three recipes live instead of loading them
        (as in :func:`attnlib.pretrained.load`).

    Returns
    -------
    dict
        ``runs`` (role → the :class:`attnlib.pretrained.Pretrained` model),
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
        ``checks`` (by group: "budget", "longer_budget", "beyond", "heatmap").
    """
    runs = {role: trained_model(name, seed, retrain=retrain) for role, name in LONG_COPY.items()}
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
    alpha = alpha_of(tr)
    n = min(len(source), len(alpha))
    band = _band(alpha, n)
    right = sum(a == b for a, b in zip(tr.out, source, strict=False))

    b_near, b_far = beyond["attention"].by_length
    n_near, n_far = beyond["none_4x"].by_length
    checks: Checks = {
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
    numbers = {
        "runs": runs,
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
    }
    return with_checks(numbers, checks)
