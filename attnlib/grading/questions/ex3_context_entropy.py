"""Exercise 3, the context vector and the attention entropy: the grader's checks.

Questions 1 and 3 ask the learner to write ``context`` and ``entropy``: they are graded
where attnlib holds none of its modules. Question 2 tells the learner to use attnlib's
additive scores and softmax: it is graded where all of attnlib is there.
"""

from __future__ import annotations

import math

import numpy as np

from attnlib.grading.cases import (
    FLOAT32_ATOL,
    Check,
    Exercise,
    Probe,
    Question,
    as_array,
    as_tuple,
    expect_close,
    expect_shape,
    public_params,
)
from attnlib.grading.reference import py_additive_scores, py_context, py_entropy, py_softmax


def _weights(rng: np.random.Generator, T_x: int) -> np.ndarray:
    """Attention weights over T_x positions: a softmax of random scores, none of them 0."""
    return np.array(py_softmax((rng.normal(size=T_x) * 1.5).tolist()))


def _two_sizes(rng: np.random.Generator) -> tuple[int, int]:
    a, b = (int(k) for k in rng.choice(np.arange(2, 9), size=2, replace=False))
    return a, b


# --------------------------------------------------------------------------- question 1
def _context_case(probe: Probe, alpha: np.ndarray, h: np.ndarray, want: list[float]) -> None:
    T_x, d_h = h.shape
    name = f"c_t (T_x={T_x}, d_h={d_h})"
    expect_close(as_array(probe.call("context", alpha, h), name), want, name, atol=FLOAT32_ATOL)


def _q1_small(probe: Probe, rng: np.random.Generator) -> None:
    alpha, h = [0.5, 0.25, 0.25], [[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]]
    got = as_array(probe.call("context", np.array(alpha), np.array(h)), "c_t")
    expect_close(got, py_context(alpha, h), "c_t")


def _q1_uniform(probe: Probe, rng: np.random.Generator) -> None:
    T_x, d_h = _two_sizes(rng)
    for rows, cols in ((T_x, d_h), (T_x, T_x)):  # the square h: a sum over d_h keeps the shape
        h = rng.normal(size=(rows, cols)) * 2
        mean = [math.fsum(col) / rows for col in h.T.tolist()]
        _context_case(probe, np.full(rows, 1.0 / rows), h, mean)


def _q1_weighted(probe: Probe, rng: np.random.Generator) -> None:
    T_x, d_h = _two_sizes(rng)
    for rows, cols in ((T_x, d_h), (d_h, d_h)):
        alpha, h = _weights(rng, rows), rng.normal(size=(rows, cols))
        _context_case(probe, alpha, h, py_context(alpha.tolist(), h.tolist()))


# --------------------------------------------------------------------------- question 2
def _q2_shapes(probe: Probe, rng: np.random.Generator) -> None:
    # the inputs of the notebook's public test
    args = public_params(6, d_s=2, d_h=3, d_a=4, T_x=5)
    out = as_tuple(probe.call("attention_context", *args), 2, "attention_context")
    expect_shape(as_array(out[0], "alpha"), (5,), "alpha (T_x = 5)")
    expect_shape(as_array(out[1], "c"), (3,), "c_t (d_h = 3, while d_s = 2)")


def _q2_values(probe: Probe, rng: np.random.Generator) -> None:
    distinct = tuple(int(x) for x in rng.choice(np.arange(2, 9), size=4, replace=False))
    n, m, k = (int(x) for x in rng.choice(np.arange(2, 9), size=3, replace=False))
    # all sizes different; then d_s = d_h, where a mix of s_{t-1} has the shape of c_t;
    # then T_x = d_h, where a sum over the wrong axis of h has it
    for d_s, d_h, d_a, T_x in (distinct, (n, n, m, k), (m, n, k, n)):
        s_prev = rng.uniform(-1, 1, size=d_s)
        h = rng.uniform(-2, 2, size=(T_x, d_h))
        W_a = rng.uniform(-1, 1, size=(d_a, d_s))
        U_a = rng.uniform(-1, 1, size=(d_a, d_h))
        v_a = rng.uniform(-2, 2, size=d_a)
        label = f"d_s={d_s}, d_h={d_h}, d_a={d_a}, T_x={T_x}"
        out = probe.call("attention_context", s_prev, h, W_a, U_a, v_a)
        alpha, c = as_tuple(out, 2, "attention_context")
        e = py_additive_scores(
            s_prev.tolist(), h.tolist(), W_a.tolist(), U_a.tolist(), v_a.tolist()
        )
        want = py_softmax(e)
        expect_close(as_array(alpha, "alpha"), want, f"alpha ({label})")
        expect_close(
            as_array(c, "c_t"), py_context(want, h.tolist()), f"c_t ({label})", atol=FLOAT32_ATOL
        )


# --------------------------------------------------------------------------- question 3
def _entropy_case(probe: Probe, alpha: np.ndarray, label: str, **kwargs: float) -> None:
    base = kwargs.get("base", math.e)
    rows = alpha.reshape(-1, alpha.shape[-1]).tolist()
    want = np.array([py_entropy(r, base) for r in rows]).reshape(alpha.shape[:-1])
    got = as_array(probe.call("entropy", alpha, **kwargs), f"H ({label})")
    expect_close(got, want, f"H ({label})")


def _q3_uniform(probe: Probe, rng: np.random.Generator) -> None:
    got = as_array(probe.call("entropy", np.full(4, 0.25)), "H")
    expect_close(got, math.log(4), "H of uniform weights over T_x = 4")


def _q3_one_hot(probe: Probe, rng: np.random.Generator) -> None:
    _entropy_case(probe, np.array([0.0, 1.0, 0.0]), "one-hot weights [0, 1, 0]")
    T_x = int(rng.integers(4, 9))
    one_hot = np.zeros(T_x)
    one_hot[rng.integers(T_x)] = 1.0
    _entropy_case(probe, one_hot, f"one-hot weights over T_x = {T_x}")
    alpha = _weights(rng, T_x)
    alpha[rng.choice(T_x, size=2, replace=False)] = 0.0
    _entropy_case(probe, alpha / alpha.sum(), f"weights over T_x = {T_x} with two zeros")


def _q3_bits(probe: Probe, rng: np.random.Generator) -> None:
    T_x = int(rng.integers(3, 9))
    _entropy_case(probe, _weights(rng, T_x), f"in bits, base=2, T_x = {T_x}", base=2)


def _q3_rows(probe: Probe, rng: np.random.Generator) -> None:
    T_y, T_x = _two_sizes(rng)
    # (T_y, T_x), then square (an entropy over axis 0 keeps the shape), then (2, 3, T_x)
    for shape in ((T_y, T_x), (T_x, T_x), (2, 3, T_x)):
        alpha = np.array([_weights(rng, T_x) for _ in range(math.prod(shape[:-1]))])
        _entropy_case(probe, alpha.reshape(shape), f"one H per decoder step, alpha {shape}")


_Q1 = Question(
    "q1_context",
    "context",
    (
        Check(
            "small",
            1,
            "for alpha = [0.5, 0.25, 0.25] the context is 0.5 h_1 + 0.25 h_2 + 0.25 h_3",
            _q1_small,
            public=True,
        ),
        Check(
            "uniform is mean",
            1,
            "with uniform weights 1/T_x, c_t is the plain average of the h_i "
            "(one number per column of h)",
            _q1_uniform,
        ),
        Check(
            "sum over positions",
            1,
            "c_t has d_h entries: sum over the T_x positions, the first axis of h",
            _q1_weighted,
        ),
    ),
)
_Q2 = Question(
    "q2_attention_context",
    "attention_context",
    (
        Check(
            "shapes",
            1,
            "here d_s = 2 and d_h = 3: c_t must have d_h = 3 entries, because it mixes the h_i",
            _q2_shapes,
            public=True,
        ),
        Check(
            "values",
            2,
            "alpha should be the softmax of the additive scores and c_t the alpha-weighted "
            "sum of the h_i",
            _q2_values,
        ),
    ),
    uses_attnlib=True,  # "use attnlib": graded where all of attnlib is there
)
_Q3 = Question(
    "q3_entropy",
    "entropy",
    (
        Check(
            "uniform",
            1,
            "for alpha = [1/4, 1/4, 1/4, 1/4], H = log 4 (about 1.386 nats); mind the minus sign",
            _q3_uniform,
            public=True,
        ),
        Check(
            "one-hot",
            1,
            "one-hot weights have H = 0 exactly; log 0 gives -inf and 0 * -inf is NaN, "
            "so leave the zeros out",
            _q3_one_hot,
        ),
        Check(
            "bits",
            1,
            "with base=2 the entropy is in bits: divide the natural log by log 2",
            _q3_bits,
        ),
        Check(
            "rows",
            1,
            "alpha of shape (T_y, T_x) has one entropy per decoder step: sum over the last "
            "axis only",
            _q3_rows,
        ),
    ),
)

EXERCISE = Exercise("03_context_entropy", 3, (_Q1, _Q2, _Q3))
