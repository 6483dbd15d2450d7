"""The pure-Python references the checks compare with: no numpy, nothing a learner can replace.

Used on both sides: by the public checks that run in a learner's kernel
(:mod:`.checks`) and by the trusted grader (:mod:`.cases`). Written with
:mod:`math` only, so they do not share a single line with what they check.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["py_additive_scores", "py_context", "py_entropy", "py_softmax"]


def _vec(x: Any) -> list[float]:
    return [float(v) for v in x]


def py_softmax(e: Sequence[float], mask: Sequence[bool] | None = None) -> list[float]:
    """α_ti = exp(e_ti − max_j e_tj) / Σ_j exp(e_tj − max_j e_tj), in pure Python.

    Parameters
    ----------
    e : (T_x,)
        Raw scores e_ti for one decoder step, as a list of numbers.
    mask : (T_x,) of bool, optional
        True for a real position; masked positions get α exactly 0.

    Returns
    -------
    alpha : list of T_x floats

    See Also
    --------
    The chapter "Why the softmax denominator is not optional" (chapters/softmax).
    """
    e = _vec(e)
    keep = [True] * len(e) if mask is None else [bool(m) for m in mask]
    if len(keep) != len(e) or not any(keep):
        raise ValueError("mask must have one entry per score and keep at least one position")
    top = max(v for v, k in zip(e, keep, strict=True) if k)
    z = [math.exp(v - top) if k else 0.0 for v, k in zip(e, keep, strict=True)]
    total = math.fsum(z)
    return [v / total for v in z]


def _matvec(M: Sequence[Sequence[float]], x: Sequence[float]) -> list[float]:
    return [math.fsum(float(m) * float(v) for m, v in zip(row, x, strict=True)) for row in M]


def py_additive_scores(
    s_prev: Sequence[float],
    h: Sequence[Sequence[float]],
    W_a: Sequence[Sequence[float]],
    U_a: Sequence[Sequence[float]],
    v_a: Sequence[float],
) -> list[float]:
    """e_ti = v_a^T tanh(W_a s_{t-1} + U_a h_i) for every i, in pure Python.

    Parameters
    ----------
    s_prev : (d_s,)
    h : (T_x, d_h)
    W_a : (d_a, d_s)
    U_a : (d_a, d_h)
    v_a : (d_a,)

    Returns
    -------
    e : list of T_x floats

    See Also
    --------
    The chapter "Score functions" (chapters/score_functions).
    """
    query = _matvec(W_a, s_prev)
    out = []
    for h_i in h:
        key = _matvec(U_a, h_i)
        out.append(
            math.fsum(float(v) * math.tanh(q + k) for v, q, k in zip(v_a, query, key, strict=True))
        )
    return out


def py_context(alpha: Sequence[float], h: Sequence[Sequence[float]]) -> list[float]:
    """c_t = Σ_i α_ti h_i, in pure Python.

    Parameters
    ----------
    alpha : (T_x,)
    h : (T_x, d_h)

    Returns
    -------
    c : list of d_h floats

    See Also
    --------
    The chapter "The attention step, pictured" (chapters/attention_step).
    """
    d_h = len(h[0])
    return [
        math.fsum(float(a) * float(h_i[k]) for a, h_i in zip(alpha, h, strict=True))
        for k in range(d_h)
    ]


def py_entropy(alpha: Sequence[float], base: float = math.e) -> float:
    """H = −Σ_i α_ti log α_ti (0 log 0 = 0), in pure Python.

    Parameters
    ----------
    alpha : (T_x,)
    base : float
        e for nats, 2 for bits.

    Returns
    -------
    H : float

    See Also
    --------
    The chapter "Attention entropy" (chapters/entropy).
    """
    return -math.fsum(a * math.log(a) for a in _vec(alpha) if a > 0) / math.log(base)
