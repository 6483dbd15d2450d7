"""attnlib.alignment: the two numbers that describe a heatmap's shape."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnlib import alignment


def test_diagonal_mass_by_hand():
    eye = np.eye(4)  # 3 letters + <eos>: a perfect copy
    assert alignment.diagonal_mass(eye, width=0) == 1.0
    assert alignment.diagonal_mass(eye, width=0, anti=True) == pytest.approx(1 / 3)  # only t=2 hits
    rev = np.array([[0, 0, 1, 0], [0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1]], dtype=float)
    assert alignment.diagonal_mass(rev, width=0, anti=True) == 1.0
    half = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
    assert alignment.diagonal_mass(half, width=0) == pytest.approx(0.5)
    assert alignment.diagonal_mass(half, width=1) == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"shape \(T_y, T_x\)"):
        alignment.diagonal_mass(np.ones(3))


def test_argmax_moves_reads_diagonals() -> None:
    eye = np.eye(4)
    assert alignment.argmax_moves([eye]) == alignment.Moves(1.0, 0.0, 0.0, 3)
    assert alignment.argmax_moves([eye[::-1], eye]) == alignment.Moves(0.5, 0.5, 0.0, 6)
    stuck = np.array([[0.1, 0.9], [0.2, 0.8], [0.7, 0.3]])
    assert alignment.argmax_moves([stuck]) == alignment.Moves(0.0, 0.5, 0.5, 2)
    with pytest.raises(ValueError, match="T_y ≥ 2"):
        alignment.argmax_moves([np.ones((1, 3)) / 3])


@given(
    T_y=st.integers(1, 8),
    T_x=st.integers(2, 9),
    seed=st.integers(0, 2**16),
    width=st.integers(0, 3),
)
def test_diagonal_mass_is_a_share_and_grows_with_the_band(T_y, T_x, seed, width) -> None:
    a = np.random.default_rng(seed).dirichlet(np.ones(T_x), size=T_y)
    for anti in (False, True):
        narrow = alignment.diagonal_mass(a, width=width, anti=anti)
        wide = alignment.diagonal_mass(a, width=width + 1, anti=anti)
        assert 0.0 <= narrow <= wide <= 1.0 + 1e-12


@given(T_y=st.integers(2, 8), T_x=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_argmax_moves_are_shares_of_the_step_pairs(T_y, T_x, seed) -> None:
    a = np.random.default_rng(seed).dirichlet(np.ones(T_x), size=T_y)
    m = alignment.argmax_moves([a])
    assert m.n == T_y - 1
    assert m.forward + m.backward + m.stay == pytest.approx(1.0)
    flipped = alignment.argmax_moves([a[:, ::-1]])  # mirrored: forward and backward swap
    assert (flipped.forward, flipped.backward) == pytest.approx((m.backward, m.forward))
