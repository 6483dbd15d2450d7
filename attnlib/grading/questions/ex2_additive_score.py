"""Exercise 2, the additive score with its projections: the grader's checks (public and hidden)."""

from __future__ import annotations

import math

import numpy as np

from attnlib.grading.cases import (
    FLOAT32_ATOL,
    Check,
    Exercise,
    Params,
    Probe,
    Question,
    as_array,
    as_tuple,
    expect_close,
    expect_shape,
    public_params,
    sizes_label,
)
from attnlib.grading.reference import py_additive_scores


def _matvec(M: np.ndarray, x: np.ndarray) -> list[float]:
    """M x in pure Python: the trusted value of W_a s_{t-1} and of U_a h_i."""
    return [math.fsum(m * v for m, v in zip(row, x.tolist(), strict=True)) for row in M.tolist()]


def _params(rng: np.random.Generator, d_s: int, d_h: int, d_a: int, T_x: int) -> Params:
    """(s_prev, h, W_a, U_a, v_a), normal entries; v_a is never all ones."""
    return (
        rng.normal(size=d_s),
        rng.normal(size=(T_x, d_h)),
        rng.normal(size=(d_a, d_s)),
        rng.normal(size=(d_a, d_h)),
        rng.normal(size=d_a) * 1.5,
    )


def _sizes(rng: np.random.Generator) -> list[tuple[int, int, int, int]]:
    """(d_s, d_h, d_a, T_x): all different, then square ones where a transposed product fits.

    With d_a = d_s = d_h, ``W_a.T @ s_prev`` and ``h @ U_a`` have the right shape; with
    T_x = d_a, ``U_a @ h.T`` (not transposed back) has the shape of the keys.
    """
    d_s, d_h, d_a, T_x = (int(k) for k in rng.choice(np.arange(2, 9), size=4, replace=False))
    n, m = (int(k) for k in rng.choice(np.arange(2, 9), size=2, replace=False))
    o, p = (int(k) for k in rng.choice(np.arange(2, 9), size=2, replace=False))
    return [(d_s, d_h, d_a, T_x), (n, n, n, m), (o, p, p + 1, p + 1)]


# --------------------------------------------------------------------------- question 1
def _project(probe: Probe, *args: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The learner's (query, keys) for (s_prev, h, W_a, U_a)."""
    query, keys = as_tuple(probe.call("project", *args), 2, "project")
    return as_array(query, "query"), as_array(keys, "keys")


def _q1_shapes(probe: Probe, rng: np.random.Generator) -> None:
    r = np.random.default_rng(1)  # the inputs of the notebook's public test
    s_prev, h = r.normal(size=3), r.normal(size=(6, 5))
    W_a, U_a = r.normal(size=(4, 3)), r.normal(size=(4, 5))
    query, keys = _project(probe, s_prev, h, W_a, U_a)
    expect_shape(query, (4,), "query = W_a s_prev")
    expect_shape(keys, (6, 4), "keys (row i = U_a h_i)")


def _q1_query(probe: Probe, rng: np.random.Generator) -> None:
    for sizes in _sizes(rng):
        s_prev, h, W_a, U_a, _ = _params(rng, *sizes)
        query, _ = _project(probe, s_prev, h, W_a, U_a)
        want = _matvec(W_a, s_prev)
        expect_close(query, want, f"query = W_a s_prev ({sizes_label(*sizes)})", atol=FLOAT32_ATOL)


def _q1_keys(probe: Probe, rng: np.random.Generator) -> None:
    for sizes in _sizes(rng):
        s_prev, h, W_a, U_a, _ = _params(rng, *sizes)
        _, keys = _project(probe, s_prev, h, W_a, U_a)
        want = [_matvec(U_a, h_i) for h_i in h]
        expect_close(
            keys, want, f"keys, row i = U_a h_i ({sizes_label(*sizes)})", atol=FLOAT32_ATOL
        )


# --------------------------------------------------------------------------- question 2
def _scores(probe: Probe, params: Params, label: str) -> np.ndarray:
    return as_array(probe.call("additive_scores", *params), f"e ({label})")


def _q2_one_per_position(probe: Probe, rng: np.random.Generator) -> None:
    # the inputs of the notebook's public test
    args = public_params(2, d_s=3, d_h=5, d_a=4, T_x=6)
    expect_shape(_scores(probe, args, "T_x = 6"), (6,), "e, one score per position,")


def _q2_values(probe: Probe, rng: np.random.Generator) -> None:
    for sizes in _sizes(rng):
        params = _params(rng, *sizes)
        want = py_additive_scores(*(p.tolist() for p in params))
        label = sizes_label(*sizes)
        expect_close(_scores(probe, params, label), want, f"e ({label})", atol=FLOAT32_ATOL)


def _q2_positions(probe: Probe, rng: np.random.Generator) -> None:
    # T_x = d_h = d_a: a sum or a tanh over the wrong axis keeps the shape (T_x,)
    n = int(rng.integers(3, 7))
    d_s = n + int(rng.integers(1, 3))
    s_prev, h, W_a, U_a, v_a = _params(rng, d_s, n, n, n)
    want = py_additive_scores(s_prev.tolist(), h.tolist(), W_a.tolist(), U_a.tolist(), v_a.tolist())
    label = sizes_label(d_s, n, n, n)
    expect_close(
        _scores(probe, (s_prev, h, W_a, U_a, v_a), label), want, f"e ({label})", atol=FLOAT32_ATOL
    )
    order = rng.permutation(n)
    while np.array_equal(order, np.arange(n)):
        order = rng.permutation(n)
    got = _scores(probe, (s_prev, h[order], W_a, U_a, v_a), f"{label}, h reordered")
    expect_close(got, [want[k] for k in order], "e for the reordered h", atol=FLOAT32_ATOL)


_Q1 = Question(
    "q1_project",
    "project",
    (
        Check(
            "shapes",
            1,
            "W_a is (d_a, d_s) and U_a is (d_a, d_h): which vector can each of them multiply?",
            _q1_shapes,
            public=True,
        ),
        Check(
            "query values",
            1,
            "query should be the matrix-vector product W_a s_prev",
            _q1_query,
        ),
        Check(
            "key values",
            1,
            "row i of keys should be U_a h_i, one row per encoder position",
            _q1_keys,
        ),
    ),
)
_Q2 = Question(
    "q2_additive_scores",
    "additive_scores",
    (
        Check(
            "one score per position",
            1,
            "with T_x = 6 positions there are 6 scores; v_a turns each d_a-vector into one number",
            _q2_one_per_position,
            public=True,
        ),
        Check(
            "values",
            2,
            "the values differ from v_a^T tanh(W_a s_prev + U_a h_i): check the tanh and v_a",
            _q2_values,
        ),
        Check(
            "positions are independent",
            1,
            "the score of position i should depend on h_i alone: reordering h should reorder e",
            _q2_positions,
        ),
    ),
)

EXERCISE = Exercise("02_additive_score", 2, (_Q1, _Q2))
