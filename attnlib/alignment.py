"""The shape of an alignment heatmap, in one number: how diagonal it is, how its focus moves.

A heatmap α (T_y, T_x) of a copy should be a diagonal, of a reversal an
anti-diagonal, of a reordering a mix. Two summaries say which, so that a
chapter can state it and check it:

* :func:`diagonal_mass`: the share of the weight within a band around the
  (anti-)diagonal;
* :func:`argmax_moves`: how the most-attended position moves from one step to
  the next (forward, backward, or staying).

See Also
--------
The chapter "Reading alignment heatmaps" (chapters/heatmaps).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["Moves", "argmax_moves", "diagonal_mass"]


def diagonal_mass(alpha: ArrayLike, *, width: int = 1, anti: bool = False) -> float:
    """Share of the attention weight that lies near the diagonal of a heatmap.

    Looks at the first T steps, where T = min(T_y, T_x - 1) (the last source
    position is ``<eos>``): step t (1-based) counts the weight on positions i
    with |i - t| ≤ ``width``, or |i - (T + 1 - t)| ≤ ``width`` if ``anti``.

    Parameters
    ----------
    alpha : (T_y, T_x)
        One heatmap, rows summing to 1.
    width : int
        How far from the (anti-)diagonal still counts (0: the diagonal only).
    anti : bool
        Measure the anti-diagonal (a reversal) instead of the diagonal (a copy).

    Returns
    -------
    share : float
        Mean over the T steps of the weight within the band, in [0, 1].

    See Also
    --------
    The chapters "Spot the error" (chapters/spot_the_error), error 5, and
    "Edge cases" (chapters/edge_cases), case 6.
    """
    a = np.asarray(alpha, dtype=float)
    if a.ndim != 2 or a.shape[1] < 2 or a.shape[0] < 1:
        raise ValueError(f"alpha must have shape (T_y, T_x) with T_x ≥ 2, got {a.shape}")
    T = min(a.shape[0], a.shape[1] - 1)
    t = np.arange(T)
    centre = (T - 1 - t) if anti else t
    i = np.arange(a.shape[1])
    band = np.abs(i[None, :] - centre[:, None]) <= width
    return float(np.mean(np.sum(a[:T] * band, axis=1)))


class Moves(NamedTuple):
    """How the most-attended position moves from one decoder step to the next.

    Attributes
    ----------
    forward : float
        Fraction of consecutive step pairs whose argmax_i α_ti moves right.
    backward : float
        Fraction that moves left.
    stay : float
        Fraction that stays on the same position.
    n : int
        Number of consecutive step pairs counted.
    """

    forward: float
    backward: float
    stay: float
    n: int


def argmax_moves(alphas: Sequence[ArrayLike]) -> Moves:
    """Summarise the shape of heatmaps by the moves of their most-attended position.

    A clean diagonal moves forward at every step, an anti-diagonal backward;
    reordering shows a mix.

    Parameters
    ----------
    alphas : sequence of (T_y, T_x) arrays
        One heatmap per example (T_y ≥ 2 to contribute).

    Returns
    -------
    Moves
        Pooled over all examples.

    See Also
    --------
    The chapter "Reading alignment heatmaps" (chapters/heatmaps).
    """
    fwd = back = stay = 0
    for a in alphas:
        m = np.asarray(a, dtype=float)
        if m.ndim != 2:
            raise ValueError(f"each heatmap must have shape (T_y, T_x), got shape {m.shape}")
        step = np.diff(m.argmax(axis=1))
        fwd += int((step > 0).sum())
        back += int((step < 0).sum())
        stay += int((step == 0).sum())
    n = fwd + back + stay
    if n == 0:
        raise ValueError("argmax_moves needs at least one heatmap with T_y ≥ 2 steps")
    return Moves(fwd / n, back / n, stay / n, n)
