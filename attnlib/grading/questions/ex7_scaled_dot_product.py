"""Exercise 7, scaled dot-product attention with a mask: the grader's checks (public and hidden)."""

from __future__ import annotations

import math

import numpy as np

from attnlib.grading.cases import (
    FLOAT32_ATOL,
    Check,
    Exercise,
    Fail,
    Probe,
    Question,
    as_array,
    as_tuple,
    distinct_sizes,
    expect_close,
)
from attnlib.grading.reference import py_context, py_softmax

# the inputs of the notebook's public tests
_Q = [[1.0, 0.0, 2.0, 0.0], [0.0, 1.0, 0.0, -1.0]]
_K = [[1.0, 1.0, 1.0, 1.0], [2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 3.0]]
_V = [[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]]


def _py_scores(Q: np.ndarray, K: np.ndarray) -> list[list[float]]:
    """e_ti = q_t · k_i / √d_k in pure Python: the trusted scores."""
    root = math.sqrt(Q.shape[-1])
    return [
        [math.fsum(a * b for a, b in zip(q, k, strict=True)) / root for k in K.tolist()]
        for q in Q.tolist()
    ]


def _py_attention(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, mask: np.ndarray | None = None
) -> tuple[list[list[float]], list[list[float]]]:
    """(context, weights) in pure Python: the trusted reference."""
    e = _py_scores(Q, K)
    masks = [None] * len(e) if mask is None else mask.tolist()
    alpha = [py_softmax(row, m) for row, m in zip(e, masks, strict=True)]
    return [py_context(a, V.tolist()) for a in alpha], alpha


def _draw(
    rng: np.random.Generator, T_q: int, T_k: int, d_k: int, d_v: int, size: float = 1.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (
        rng.normal(size=(T_q, d_k)) * size,
        rng.normal(size=(T_k, d_k)) * size,
        rng.normal(size=(T_k, d_v)),
    )


def _label(T_q: int, T_k: int, d_k: int, d_v: int) -> str:
    return f"T_q={T_q}, T_k={T_k}, d_k={d_k}, d_v={d_v}"


# --------------------------------------------------------------------------- question 1
def _scores_case(probe: Probe, Q: np.ndarray, K: np.ndarray) -> None:
    name = f"e (T_q={Q.shape[0]}, T_k={K.shape[0]}, d_k={Q.shape[1]})"
    got = as_array(probe.call("attention_scores", Q, K), name)
    expect_close(got, _py_scores(Q, K), name, atol=FLOAT32_ATOL)


def _q1_small(probe: Probe, rng: np.random.Generator) -> None:
    got = as_array(probe.call("attention_scores", np.array(_Q), np.array(_K)), "e")
    expect_close(got, [[1.5, 1.0, 1.0], [0.0, 0.0, -1.5]], "e for T_q=2, T_k=3, d_k=4")


def _q1_factor(probe: Probe, rng: np.random.Generator) -> None:
    # square, T_q = T_k = 5: only the factor can be wrong; d_k ≠ T_k and d_k ≥ 9
    for d_k in (int(rng.integers(9, 17)), int(rng.integers(20, 40))):
        Q, K, _ = _draw(rng, 5, 5, d_k, 1)
        _scores_case(probe, Q, K)


def _q1_rows(probe: Probe, rng: np.random.Generator) -> None:
    T_q, T_k, d_k = distinct_sizes(rng, 3, lo=2, hi=9)
    Q, K, _ = _draw(rng, T_q, T_k, d_k, 1)
    _scores_case(probe, Q, K)


# --------------------------------------------------------------------------- question 2
def _attention_case(
    probe: Probe,
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    mask: np.ndarray | None,
    label: str,
) -> None:
    args = (Q, K, V) if mask is None else (Q, K, V, mask)
    out = probe.call("scaled_dot_product_attention", *args)
    context, weights = as_tuple(out, 2, f"scaled_dot_product_attention({label})")
    want_c, want_a = _py_attention(Q, K, V, mask)
    expect_close(
        as_array(weights, "weights"), want_a, f"weights ({label})", atol=1e-7, exact_zeros=True
    )
    expect_close(as_array(context, "context"), want_c, f"context ({label})", atol=FLOAT32_ATOL)


def _q2_public(probe: Probe, rng: np.random.Generator) -> None:
    _attention_case(
        probe, np.array(_Q), np.array(_K), np.array(_V), None, "T_q=2, T_k=3, d_k=4, d_v=2"
    )


def _q2_shapes(probe: Probe, rng: np.random.Generator) -> None:
    sizes = distinct_sizes(rng, 4, lo=2, hi=9)
    Q, K, V = _draw(rng, *sizes)
    _attention_case(probe, Q, K, V, None, _label(*sizes))


def _mask(rng: np.random.Generator, T_q: int, T_k: int) -> np.ndarray:
    """A keep-mask with every kind of row: one key kept, some kept, all kept."""
    mask = rng.random((T_q, T_k)) < 0.5
    for t in range(T_q):
        if not mask[t].any():
            mask[t, rng.integers(T_k)] = True
    mask[0] = False
    mask[0, rng.integers(T_k)] = True  # one key only
    mask[1] = True  # every key
    mask[2] = True
    mask[2, rng.integers(T_k)] = False  # all but one
    return mask


def _q2_mask(probe: Probe, rng: np.random.Generator) -> None:
    T_q, T_k = int(rng.integers(4, 7)), int(rng.integers(5, 9))
    d_k, d_v = int(rng.integers(2, 6)), int(rng.integers(2, 6))
    Q, K, V = _draw(rng, T_q, T_k, d_k, d_v, size=1.5)
    _attention_case(probe, Q, K, V, _mask(rng, T_q, T_k), f"{_label(T_q, T_k, d_k, d_v)}, masked")


def _q2_large(probe: Probe, rng: np.random.Generator) -> None:
    T_q, T_k, d_k, d_v = 4, int(rng.integers(4, 8)), 16, 3
    Q, K, V = _draw(rng, T_q, T_k, d_k, d_v, size=20.0)  # scores in the hundreds
    K[0] = Q[0]  # e_00 = |q_0|² / 4, over 1000: exp of it overflows
    Q[1] = -K[0]  # e_10 under -1000
    Q[3] = -K.sum(axis=0) * 3  # a row of large negative scores
    Q, K = np.round(Q, 3), np.round(K, 3)
    _attention_case(probe, Q, K, V, None, "scores in the hundreds")
    _attention_case(probe, Q, K, V, _mask(rng, T_q, T_k), "scores in the hundreds, masked")


def _q2_empty_row(probe: Probe, rng: np.random.Generator) -> None:
    """Right weights where every query keeps at least one key (one keeps exactly one), then a
    ValueError, and nothing else, once one query's row of the mask is all False."""
    T_q, T_k = 3, int(rng.integers(3, 7))
    Q, K, V = _draw(rng, T_q, T_k, 4, 2)
    empty = int(rng.integers(T_q))
    mask = np.ones((T_q, T_k), dtype=bool)
    mask[empty] = False
    mask[empty, rng.integers(T_k)] = True  # the same row keeping a single key: still defined
    _attention_case(probe, Q, K, V, mask, "a query that keeps one key")
    mask[empty] = False
    try:
        out = probe.call("scaled_dot_product_attention", Q, K, V, mask)
    except Fail as err:
        if err.kind == "raised" and err.raised_a("ValueError"):
            return
        done = err.phrase().removeprefix("the function ")
        raise Fail(
            f"a query with no key to attend to should raise ValueError: {err}",
            kind=err.kind,
            note=f"it should raise ValueError here, and it {done}"
            if err.kind == "raised"
            else None,
            raised=err.raised,
        ) from None
    got = ""
    try:
        _, weights = as_tuple(out, 2, "scaled_dot_product_attention")
        w = as_array(weights, "weights")
        if np.isnan(w).any():
            got = " (it returned NaN weights)"
    except Fail:
        pass
    raise Fail(
        f"a query whose row of the mask is all False should raise ValueError{got}",
        kind="not_raised",
    )


_Q1 = Question(
    "q1_scores",
    "attention_scores",
    (
        Check(
            "small scores",
            1,
            "with d_k = 4, each score is a query row dotted with a key row, divided by 2",
            _q1_small,
            public=True,
        ),
        Check(
            "the factor √d_k",
            1,
            "divide by the square root of d_k (the size of a query), not by d_k or by T_k",
            _q1_factor,
        ),
        Check(
            "rows are queries",
            1,
            "e has shape (T_q, T_k): row t holds query t's scores against every key",
            _q1_rows,
        ),
    ),
)
_Q2 = Question(
    "q2_attention",
    "scaled_dot_product_attention",
    (
        Check(
            "no mask",
            1,
            "each row of the weights is a softmax over the T_k keys; context mixes the rows of V",
            _q2_public,
            public=True,
        ),
        Check(
            "keys and values of other sizes",
            1,
            "weights is (T_q, T_k), softmax over the last axis (the keys); context is (T_q, d_v)",
            _q2_shapes,
        ),
        Check(
            "the mask",
            1,
            "True = may attend: masked keys get exactly 0 and stay out of the denominator",
            _q2_mask,
        ),
        Check(
            "large scores",
            1,
            "subtract each row's largest kept score before exp, or exp overflows",
            _q2_large,
        ),
        Check(
            "a query with no key",
            1,
            "a row of the mask that is all False must raise ValueError, not give NaN; a row "
            "keeping one key is still a softmax (all its weight on that key)",
            _q2_empty_row,
        ),
    ),
)

EXERCISE = Exercise("07_scaled_dot_product", 7, (_Q1, _Q2))
