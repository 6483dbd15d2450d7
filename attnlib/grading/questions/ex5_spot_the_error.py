"""Exercise 5, debug an attention step: the grader's checks (public and hidden).

The step has four stages, and each fixed stage earns its point even where an earlier one is
still wrong: the weights are checked against the softmax of the learner's own scores e, the
context against the sum weighted by the learner's own weights. That holds only where the
learner's value can tell a right stage from a wrong one: an e that is the same at every
position makes every softmax uniform, and a uniform alpha makes every weighted sum the mean
of the h_i. So the rule is

* the weights are judged on the learner's e where that e varies over the positions (by more
  than :data:`SPREAD`), else on the right e; in the large case on the learner's e where it
  spans :data:`OVERFLOW` or more (a softmax that subtracts no maximum overflows there), else
  that case cannot test the softmax and the normal case decides;
* the context is judged on the learner's alpha where that alpha is not uniform (its entries
  differ by more than :data:`SPREAD`), else on the right alpha.

An answer that attends to nothing (e = 0, uniform alpha, the mean of the h_i) thus earns
no point beyond the shapes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attnlib.grading.cases import (
    FLOAT32_ATOL,
    Check,
    Exercise,
    Fail,
    Params,
    Probe,
    Question,
    as_array,
    as_tuple,
    distinct_sizes,
    expect_close,
    public_params,
    sizes_label,
)
from attnlib.grading.reference import py_additive_scores, py_context, py_softmax


def _params(rng: np.random.Generator, d_s: int, d_h: int, d_a: int, T_x: int) -> Params:
    """(s_prev, h, W_a, U_a, v_a): entries uniform in [-1, 1], those of v_a in [-3, 3]."""
    return (
        rng.uniform(-1, 1, size=d_s),
        rng.uniform(-1, 1, size=(T_x, d_h)),
        rng.uniform(-1, 1, size=(d_a, d_s)),
        rng.uniform(-1, 1, size=(d_a, d_h)),
        rng.uniform(-3, 3, size=d_a),
    )


def _step(probe: Probe, params: Params) -> dict[str, Any]:
    """The learner's e, alpha and c, each read as an array only when a check asks for it."""
    out = as_tuple(probe.call("attention_step", *params), 3, "attention_step")
    return dict(zip(("e", "alpha", "c"), out, strict=True))


SPREAD = 1e-3
"""A (T_x,) value whose entries all lie within this of each other is treated as constant."""

OVERFLOW = 1000.0
"""The spread of scores at which exp of the largest overflows float64 (exp(710) does)."""


def _vector(got: np.ndarray, T_x: int, name: str) -> list[float]:
    """The entries of a (T_x,) result that the next stage is checked against, or Fail."""
    if got.shape != (T_x,):
        raise Fail(f"{name} should have shape ({T_x},), but it has shape {got.shape}", kind="shape")
    if not all(math.isfinite(v) for v in got.tolist()):
        raise Fail(f"{name} has NaN or inf entries: {got.tolist()}", kind="nan")
    return got.tolist()


def _spread(values: list[float]) -> float:
    return max(values) - min(values)


def _large_scores(rng: np.random.Generator) -> tuple[Params, tuple[int, int, int, int]]:
    """Parameters whose scores reach ±1600 or more: exp(e) overflows unless max e is subtracted.

    U_a is adjusted so that for two positions i and j, U_a h_i = -U_a h_j = k with every
    |k_a| in [6, 10], larger than the entries of W_a s_{t-1} (a few at most): tanh is close to
    ±1 there, and v_a (each entry with the sign of k_a) makes e_ti close to ||v_a||_1 and e_tj
    close to -||v_a||_1, with ||v_a||_1 between 1600 and 2080 (|e| <= ||v_a||_1 always). A
    spread of over 3000 also overflows a softmax that subtracts the smallest score.
    """
    d_s, d_h, d_a, T_x = distinct_sizes(rng, 4)
    s_prev, h, W_a, U_a, _ = _params(rng, d_s, d_h, d_a, T_x)
    i, j = (int(k) for k in rng.choice(T_x, size=2, replace=False))
    k = rng.choice([-1.0, 1.0], size=d_a) * rng.uniform(6, 10, size=d_a)
    pair, keys = h[[i, j]], np.stack([k, -k], axis=1)  # (2, d_h), (d_a, 2)
    U_a = U_a + (keys - U_a @ pair.T) @ np.linalg.solve(pair @ pair.T, pair)
    v_a = np.sign(k) * rng.uniform(1.0, 1.3, size=d_a) * 1600 / d_a
    return (s_prev, h, W_a, U_a, v_a), (d_s, d_h, d_a, T_x)


def _q1_shapes(probe: Probe, rng: np.random.Generator) -> None:
    # the inputs of the notebook's public test
    args = public_params(8, d_s=2, d_h=3, d_a=4, T_x=5)
    out = as_tuple(probe.call("attention_step", *args), 3, "attention_step")
    shapes = [as_array(x, n).shape for x, n in zip(out, ("e", "alpha", "c"), strict=True)]
    if shapes != [(5,), (5,), (3,)]:
        raise Fail(
            "with T_x = 5, d_s = 2, d_h = 3 the shapes of (e, alpha, c) should be "
            f"[(5,), (5,), (3,)], but they are {shapes}"
        )


def _q1_scores(probe: Probe, rng: np.random.Generator) -> None:
    d_s, d_h, d_a, T_x = distinct_sizes(rng, 4)
    n, m = distinct_sizes(rng, 2)
    # all sizes different; then d_s = d_h = d_a, where s_prev + h and W_a.T s_prev fit
    for sizes in ((d_s, d_h, d_a, T_x), (n, n, n, m)):
        params = _params(rng, *sizes)
        e = as_array(_step(probe, params)["e"], "e")
        want = py_additive_scores(*(p.tolist() for p in params))
        expect_close(e, want, f"e ({sizes_label(*sizes)})", atol=FLOAT32_ATOL)


def _q1_weights(probe: Probe, rng: np.random.Generator) -> None:
    sizes = tuple(distinct_sizes(rng, 4))
    large, large_sizes = _large_scores(rng)
    for params, (d_s, d_h, d_a, T_x), least in (
        (_params(rng, *sizes), sizes, SPREAD),
        (large, large_sizes, OVERFLOW),
    ):
        label = sizes_label(d_s, d_h, d_a, T_x) + (", scores near ±1600" if least > 1 else "")
        out = _step(probe, params)
        e = _vector(as_array(out["e"], "e"), T_x, f"e ({label})")
        right = py_additive_scores(*(p.tolist() for p in params))
        if _spread(e) > least:
            want, which = py_softmax(e), "your e"
        elif least > 1:
            continue  # your e never reaches the range where exp overflows: nothing to test here
        else:
            want, which = py_softmax(right), "the right e (yours is the same at every position)"
        expect_close(
            as_array(out["alpha"], "alpha"), want, f"alpha, the softmax of {which} ({label})"
        )


def _q1_context(probe: Probe, rng: np.random.Generator) -> None:
    n, m, k = distinct_sizes(rng, 3)
    # d_s = d_h, where a mix of s_{t-1} has the shape of c_t; then T_x = d_h (h @ alpha fits)
    for sizes in ((n, n, m, k), (m, n, k, n)):
        params = _params(rng, *sizes)
        out = _step(probe, params)
        label = sizes_label(*sizes)
        weights = _vector(as_array(out["alpha"], "alpha"), sizes[3], f"alpha ({label})")
        if _spread(weights) > SPREAD:
            which = "your alpha"
        else:  # uniform weights make any mix the mean of the h_i: judge on the right alpha
            weights = py_softmax(py_additive_scores(*(p.tolist() for p in params)))
            which = "the right alpha (yours is uniform)"
        want = py_context(weights, params[1].tolist())
        expect_close(
            as_array(out["c"], "c"),
            want,
            f"c, the weighted sum of h with {which} ({label})",
            atol=FLOAT32_ATOL,
        )


_Q1 = Question(
    "q1_fixed_step",
    "attention_step",
    (
        Check(
            "shapes",
            1,
            "with d_s = 2 and d_h = 3, s_prev + h cannot work: project both into d_a first",
            _q1_shapes,
            public=True,
        ),
        Check(
            "scores",
            1,
            "the score needs W_a and U_a to project, and v_a to collapse the tanh vector to "
            "one number",
            _q1_scores,
        ),
        Check(
            "weights are the softmax of the scores",
            1,
            "exp(e) alone is no distribution: divide by the sum over j of exp(e_j), after "
            "subtracting the largest e_j so that nothing overflows (judged on your own e, where "
            "it varies from position to position)",
            _q1_weights,
        ),
        Check(
            "context mixes h",
            1,
            "c_t mixes the encoder states h_i, not s_prev: c = sum_i alpha_i h_i (judged on your "
            "own alpha, where it is not uniform)",
            _q1_context,
        ),
    ),
)

EXERCISE = Exercise("05_spot_the_error", 5, (_Q1,))
