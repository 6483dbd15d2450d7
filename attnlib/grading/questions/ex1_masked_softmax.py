"""Exercise 1, a stable masked softmax: the grader's checks (public and hidden)."""

from __future__ import annotations

import numpy as np

from attnlib.grading.cases import (
    Check,
    Exercise,
    Probe,
    Question,
    as_array,
    expect_close,
    f32,
    softmax_rows,
)


def _softmax_case(probe: Probe, e: np.ndarray, label: str) -> None:
    got = as_array(probe.call("softmax", e), f"softmax({label})")
    expect_close(got, softmax_rows(e), f"softmax({label})")


def _q1_small(probe: Probe, rng: np.random.Generator) -> None:
    _softmax_case(probe, np.array([2.0, 1.0, 0.1]), "[2.0, 1.0, 0.1]")


def _q1_rows(probe: Probe, rng: np.random.Generator) -> None:
    rows, cols = int(rng.integers(3, 6)), int(rng.integers(4, 8))
    e = rng.normal(size=(rows, cols))
    e[1] += rng.uniform(800, 1200)  # rows far apart: one maximum for the whole batch fails
    _softmax_case(probe, f32(e), f"a ({rows}, {cols}) batch, each row its own distribution")
    e3 = rng.normal(size=(2, 3, cols))
    _softmax_case(probe, e3, f"a (2, 3, {cols}) batch")


def _q1_large(probe: Probe, rng: np.random.Generator) -> None:
    _softmax_case(probe, np.array([0.0, 1500.0]), "[0, 1500]")
    e = f32(rng.uniform(1000, 1010, size=int(rng.integers(3, 7))))
    _softmax_case(probe, e, "scores between 1000 and 1010")


def _q1_negative(probe: Probe, rng: np.random.Generator) -> None:
    e = f32(-1000.0 - rng.uniform(0, 5, size=int(rng.integers(3, 7))))
    _softmax_case(probe, e, "scores between -1005 and -1000")
    _softmax_case(probe, np.array([-1500.0, 0.0, -3.0]), "[-1500, 0, -3]")


def _masked_case(probe: Probe, e: np.ndarray, mask: np.ndarray, label: str) -> None:
    got = as_array(probe.call("masked_softmax", e, mask), f"masked_softmax({label})")
    expect_close(got, softmax_rows(e, mask), f"masked_softmax({label})", exact_zeros=True)


def _random_mask(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    mask = rng.random((rows, cols)) < 0.6
    for r in range(rows):
        if not mask[r].any():
            mask[r, rng.integers(cols)] = True
    mask[0] = False
    mask[0, rng.integers(cols)] = True  # a row with one real position
    return mask


def _q2_padding(probe: Probe, rng: np.random.Generator) -> None:
    _masked_case(
        probe,
        np.array([1.0, 2.0, 3.0, 4.0]),
        np.array([True, True, False, False]),
        "[1, 2, 3, 4], mask [T, T, F, F]",
    )


def _q2_nothing_masked(probe: Probe, rng: np.random.Generator) -> None:
    e = rng.normal(size=int(rng.integers(3, 8))) * 2
    _masked_case(probe, e, np.ones(e.shape, dtype=bool), "nothing masked")


def _q2_huge_padding(probe: Probe, rng: np.random.Generator) -> None:
    cols = int(rng.integers(4, 8))
    e = rng.normal(size=cols)
    mask = np.ones(cols, dtype=bool)
    mask[-2:] = False
    e[-1] = 1000.0 + rng.uniform(0, 500)  # the largest score sits on padding
    e[-2] = -1000.0
    _masked_case(probe, e, mask, "a score of 1000 or more on padding")


def _q2_batch(probe: Probe, rng: np.random.Generator) -> None:
    rows, cols = int(rng.integers(3, 6)), int(rng.integers(4, 8))
    e = rng.normal(size=(rows, cols)) * 3
    e[1] += 1500.0  # a row of large real scores: subtract the (masked) maximum
    _masked_case(
        probe, f32(e), _random_mask(rng, rows, cols), f"a ({rows}, {cols}) batch, own masks"
    )


_Q1 = Question(
    "q1_softmax",
    "softmax",
    (
        Check(
            "small scores",
            1,
            "for e = [2.0, 1.0, 0.1] each weight is exp(e_i) divided by the sum of all exp(e_j)",
            _q1_small,
            public=True,
        ),
        Check(
            "rows",
            1,
            "the softmax runs over the last axis only: each row is its own distribution",
            _q1_rows,
        ),
        Check(
            "large scores",
            1,
            "exp(1000) overflows: subtract the largest score of the row first",
            _q1_large,
        ),
        Check(
            "very negative scores",
            1,
            "exp(-1000) underflows to 0, and 0 / 0 is NaN: subtract the largest score first",
            _q1_negative,
        ),
    ),
)
_Q2 = Question(
    "q2_masked_softmax",
    "masked_softmax",
    (
        Check(
            "padding gets zero",
            1,
            "padding positions need weight exactly 0, and the real positions must sum to 1",
            _q2_padding,
            public=True,
        ),
        Check(
            "nothing masked",
            1,
            "with every position real, masked_softmax equals the plain softmax",
            _q2_nothing_masked,
        ),
        Check(
            "huge score on padding",
            1,
            "a padding position must count neither in the maximum m_t nor in the denominator",
            _q2_huge_padding,
        ),
        Check(
            "batch of masks",
            1,
            "each row has its own mask; a row with one real position puts all its weight there",
            _q2_batch,
        ),
    ),
)

EXERCISE = Exercise("01_masked_softmax", 1, (_Q1, _Q2))
