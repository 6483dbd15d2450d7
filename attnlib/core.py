"""The reference implementation of one attention step, in numpy.

Everything the course computes about a single decoder step goes through the
functions here: the score functions that produce e_ti, the softmax that turns
them into weights α_ti, the context vector c_t and the attention entropy H.
The torch models in :mod:`attnlib.models` are checked against these functions.

Conventions
-----------
* Arrays may carry any number of leading batch dimensions ``...``; encoder
  states are ``h : (..., T_x, d_h)`` and decoder states ``s_prev : (..., d_s)``.
* Integer input is promoted to float64; float input keeps its precision, so the
  course can show float32 and float64 side by side.
* Bad input raises :class:`ValueError` (:class:`TypeError` for input that is not
  real numbers) with a message written in the course's symbols. Nothing is
  silently broadcast into a wrong answer.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "AttentionStep",
    "FloatArray",
    "additive_scores",
    "attend",
    "context",
    "dot_scores",
    "entropy",
    "multiplicative_scores",
    "softmax",
]

FloatArray = NDArray[np.floating]
"""A float array of any precision: float input keeps its dtype, integer input becomes float64.

The one alias the package uses for float arrays (``from attnlib.core import FloatArray``).
"""


class AttentionStep(NamedTuple):
    """The three results of one additive attention step.

    Attributes
    ----------
    e : (..., T_x)
        Raw alignment scores e_ti.
    alpha : (..., T_x)
        Attention weights α_ti (softmax of ``e`` over i).
    c : (..., d_h)
        Context vector c_t = Σ_i α_ti h_i.
    """

    e: FloatArray
    alpha: FloatArray
    c: FloatArray


# --------------------------------------------------------------------------- checks
def _real_array(x: ArrayLike, name: str) -> FloatArray:
    """Return ``x`` as a finite float array, or raise a learner-readable error."""
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as err:  # ragged lists and the like
        raise ValueError(f"{name} could not be read as an array: {err}") from None
    if arr.dtype == bool or arr.dtype.kind not in "iuf":
        raise TypeError(
            f"{name} must hold real numbers, but it has dtype {arr.dtype}"
            + (" (booleans are for the mask)" if arr.dtype == bool else "")
        )
    if arr.dtype.kind in "iu":
        arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))
        where = tuple(int(k) for k in bad[0])
        raise ValueError(
            f"{name} contains NaN or inf ({len(bad)} entries, the first at index {where}); "
            "attention needs finite numbers"
        )
    return arr


def _need_ndim(arr: np.ndarray, name: str, ndim: int, shape: str) -> None:
    if arr.ndim < ndim:
        raise ValueError(f"{name} must have shape {shape}, but it has shape {arr.shape}")


def _need_matrix(arr: np.ndarray, name: str, shape: str) -> None:
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a matrix of shape {shape}, but it has shape {arr.shape}")


def _need_states(h: np.ndarray) -> int:
    _need_ndim(h, "h", 2, "(..., T_x, d_h)")
    T_x = h.shape[-2]
    if T_x == 0:
        raise ValueError(f"h has T_x = 0 encoder states (shape {h.shape}); attention needs T_x ≥ 1")
    return T_x


def _batch_shape(a: tuple[int, ...], b: tuple[int, ...], name_a: str, name_b: str) -> None:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        raise ValueError(
            f"the batch dimensions of {name_a} {a} and of {name_b} {b} do not match"
        ) from None


def _weight_tolerance(dtype: np.dtype) -> float:
    return max(1e-6, float(np.sqrt(np.finfo(dtype).eps)))


def _check_weights(alpha: np.ndarray, name: str = "alpha") -> None:
    """Raise unless ``alpha`` holds distributions over its last axis."""
    if np.any(alpha < 0):
        raise ValueError(
            f"{name} has negative entries (the smallest is {alpha.min():.4g}); "
            "attention weights α_ti lie in [0, 1]"
        )
    sums = alpha.sum(axis=-1)
    worst = float(np.max(np.abs(sums - 1.0)))
    if worst > _weight_tolerance(alpha.dtype):
        off = sums.flat[int(np.argmax(np.abs(sums - 1.0)))]
        raise ValueError(
            f"{name} must sum to 1 over i for every step t, but one row sums to {off:.6g}; "
            "did you forget the softmax denominator Σ_j exp(e_tj)?"
        )


# --------------------------------------------------------------------------- softmax
def softmax(e: ArrayLike, axis: int = -1, mask: ArrayLike | None = None) -> FloatArray:
    """Turn raw scores e_ti into attention weights α_ti.

    α_ti = exp(e_ti) / Σ_j exp(e_tj), computed after subtracting the largest
    score of each slice so that no exponential overflows.

    Parameters
    ----------
    e : (..., T_x, ...)
        Raw scores; finite real numbers.
    axis : int
        The axis that indexes the positions i (default: the last one).
    mask : bool array, optional
        Same shape as ``e`` (or broadcastable to it, with all T_x positions
        along ``axis``). ``True`` marks a real position; ``False`` positions get
        weight exactly 0 and do not enter the denominator.

    Returns
    -------
    alpha : same shape as ``e``
        Non-negative weights that sum to 1 along ``axis``.

    Raises
    ------
    ValueError
        If ``e`` has no positions, holds NaN/inf, the mask has the wrong shape,
        or a slice has no unmasked position.

    See Also
    --------
    The chapter "Why the softmax denominator is not optional" (chapters/softmax).
    """
    e = _real_array(e, "e")
    if e.ndim == 0:
        raise ValueError("e must have at least one axis (the T_x positions), but it is a scalar")
    if not -e.ndim <= axis < e.ndim:
        raise ValueError(f"axis={axis} is out of range for e of shape {e.shape}")
    ax = axis % e.ndim
    T_x = e.shape[ax]
    if T_x == 0:
        raise ValueError(f"e has T_x = 0 scores along axis {axis} (shape {e.shape})")
    if mask is None:
        shifted = e - e.max(axis=ax, keepdims=True)
        z = np.exp(shifted)
        return z / z.sum(axis=ax, keepdims=True)

    m = np.asarray(mask)
    if m.dtype != bool:
        raise TypeError(
            f"mask must be boolean (True = a real position, False = padding), "
            f"but it has dtype {m.dtype}"
        )
    if m.ndim > e.ndim:
        raise ValueError(f"mask has shape {m.shape} but the scores e have shape {e.shape}")
    padded = (1,) * (e.ndim - m.ndim) + m.shape
    ok = padded[ax] == T_x and all(p in (1, s) for p, s in zip(padded, e.shape, strict=True))
    if not ok:
        raise ValueError(
            f"mask has shape {m.shape} but the scores e have shape {e.shape}; "
            f"the mask needs all T_x = {T_x} positions along axis {axis}"
        )
    m = np.broadcast_to(m.reshape(padded), e.shape)
    empty = ~m.any(axis=ax)
    if np.any(empty):
        where = tuple(int(k) for k in np.argwhere(empty)[0])
        raise ValueError(
            f"the mask leaves no position to attend to in {int(empty.sum())} slice(s) "
            f"(the first at batch index {where}); softmax over zero positions is undefined"
        )
    top = np.where(m, e, -np.inf).max(axis=ax, keepdims=True)
    z = np.where(m, np.exp(np.where(m, e, top) - top), 0.0).astype(e.dtype, copy=False)
    return z / z.sum(axis=ax, keepdims=True)


# --------------------------------------------------------------------------- scores
def additive_scores(
    s_prev: ArrayLike, h: ArrayLike, W_a: ArrayLike, U_a: ArrayLike, v_a: ArrayLike
) -> FloatArray:
    """Bahdanau's additive score e_ti = v_a^T tanh(W_a s_{t-1} + U_a h_i).

    Parameters
    ----------
    s_prev : (..., d_s)
        The previous decoder state s_{t-1}.
    h : (..., T_x, d_h)
        The encoder states h_1 … h_{T_x}.
    W_a : (d_a, d_s)
        Projects s_{t-1} into the shared space of size d_a.
    U_a : (d_a, d_h)
        Projects each h_i into the same space.
    v_a : (d_a,)
        Collapses the tanh output to one number per position.

    Returns
    -------
    e : (..., T_x)
        One raw score per encoder position.

    See Also
    --------
    The chapter "Score functions" (chapters/score_functions).
    """
    s_prev = _real_array(s_prev, "s_prev")
    h = _real_array(h, "h")
    W_a = _real_array(W_a, "W_a")
    U_a = _real_array(U_a, "U_a")
    v_a = _real_array(v_a, "v_a")
    _need_ndim(s_prev, "s_prev", 1, "(..., d_s)")
    _need_states(h)
    _need_matrix(W_a, "W_a", "(d_a, d_s)")
    _need_matrix(U_a, "U_a", "(d_a, d_h)")
    d_s, d_h = s_prev.shape[-1], h.shape[-1]
    if W_a.shape[1] != d_s:
        raise ValueError(
            f"W_a expects d_s={W_a.shape[1]} components but s_prev has {d_s} "
            f"(W_a has shape {W_a.shape}, s_prev {s_prev.shape})"
        )
    if U_a.shape[1] != d_h:
        raise ValueError(
            f"U_a expects d_h={U_a.shape[1]} components but h has {d_h} "
            f"(U_a has shape {U_a.shape}, h {h.shape})"
        )
    if W_a.shape[0] != U_a.shape[0]:
        raise ValueError(
            f"W_a projects s_prev to d_a={W_a.shape[0]} but U_a projects h to "
            f"d_a={U_a.shape[0]}; both must land in the same shared space"
        )
    d_a = W_a.shape[0]
    if v_a.shape != (d_a,):
        raise ValueError(
            f"v_a must be a vector of length d_a={d_a} (shape ({d_a},)), "
            f"but it has shape {v_a.shape}"
        )
    _batch_shape(s_prev.shape[:-1], h.shape[:-2], "s_prev", "h")
    keys = h @ U_a.T  # (..., T_x, d_a)
    query = s_prev @ W_a.T  # (..., d_a)
    return np.tanh(query[..., None, :] + keys) @ v_a  # (..., T_x)


def multiplicative_scores(s: ArrayLike, h: ArrayLike, W_a: ArrayLike) -> FloatArray:
    """Luong's "general" score e_ti = s_t^T W_a h_i.

    Parameters
    ----------
    s : (..., d_s)
        The decoder state (Luong scores with the current state s_t).
    h : (..., T_x, d_h)
        The encoder states.
    W_a : (d_s, d_h)
        The bilinear form that lets d_s differ from d_h.

    Returns
    -------
    e : (..., T_x)

    See Also
    --------
    The chapter "Score functions" (chapters/score_functions).
    """
    s = _real_array(s, "s")
    h = _real_array(h, "h")
    W_a = _real_array(W_a, "W_a")
    _need_ndim(s, "s", 1, "(..., d_s)")
    _need_states(h)
    _need_matrix(W_a, "W_a", "(d_s, d_h)")
    d_s, d_h = s.shape[-1], h.shape[-1]
    if W_a.shape != (d_s, d_h):
        raise ValueError(
            f"W_a must have shape (d_s, d_h) = ({d_s}, {d_h}) for s with d_s={d_s} "
            f"and h with d_h={d_h}, but it has shape {W_a.shape}"
        )
    _batch_shape(s.shape[:-1], h.shape[:-2], "s", "h")
    return np.sum(h * (s @ W_a)[..., None, :], axis=-1)


def dot_scores(s: ArrayLike, h: ArrayLike) -> FloatArray:
    """The plain dot-product score e_ti = s_t^T h_i (needs d_s = d_h).

    Parameters
    ----------
    s : (..., d_s)
    h : (..., T_x, d_h)

    Returns
    -------
    e : (..., T_x)

    See Also
    --------
    The chapter "Score functions" (chapters/score_functions).
    """
    s = _real_array(s, "s")
    h = _real_array(h, "h")
    _need_ndim(s, "s", 1, "(..., d_s)")
    _need_states(h)
    if s.shape[-1] != h.shape[-1]:
        raise ValueError(
            f"the dot score needs d_s = d_h, but s has d_s={s.shape[-1]} and h has "
            f"d_h={h.shape[-1]}; project first (multiplicative_scores or additive_scores)"
        )
    _batch_shape(s.shape[:-1], h.shape[:-2], "s", "h")
    return np.sum(h * s[..., None, :], axis=-1)


# --------------------------------------------------------------------------- context, entropy
def context(alpha: ArrayLike, h: ArrayLike, *, check_weights: bool = True) -> FloatArray:
    """The context vector c_t = Σ_i α_ti h_i.

    Parameters
    ----------
    alpha : (..., T_x)
        Attention weights for one or more decoder steps.
    h : (..., T_x, d_h)
        Encoder states.
    check_weights : bool
        If True (default), ``alpha`` must be non-negative and sum to 1 over i;
        pass False only to show what happens with weights that are not a
        distribution.

    Returns
    -------
    c : (..., d_h)

    See Also
    --------
    The chapter "The attention step, pictured" (chapters/attention_step).
    """
    alpha = _real_array(alpha, "alpha")
    h = _real_array(h, "h")
    _need_ndim(alpha, "alpha", 1, "(..., T_x)")
    T_x = _need_states(h)
    if alpha.shape[-1] != T_x:
        raise ValueError(
            f"alpha has T_x={alpha.shape[-1]} weights per step but h has T_x={T_x} "
            f"encoder states (alpha {alpha.shape}, h {h.shape})"
        )
    _batch_shape(alpha.shape[:-1], h.shape[:-2], "alpha", "h")
    if check_weights:
        _check_weights(alpha)
    return np.sum(alpha[..., :, None] * h, axis=-2)


def entropy(alpha: ArrayLike, base: float = math.e) -> FloatArray:
    """Attention entropy H = -Σ_i α_ti log α_ti, one number per decoder step.

    Weights of exactly 0 contribute 0 (the limit of x log x), so a one-hot
    ``alpha`` has H = 0 without a NaN.

    Parameters
    ----------
    alpha : (..., T_x)
        Attention weights: non-negative, summing to 1 over the last axis.
    base : float
        Base of the logarithm: ``math.e`` (default) gives nats, 2 gives bits.

    Returns
    -------
    H : (...)
        Between 0 (all weight on one position) and log T_x (uniform weights).

    See Also
    --------
    The chapter "Attention entropy" (chapters/entropy).
    """
    alpha = _real_array(alpha, "alpha")
    _need_ndim(alpha, "alpha", 1, "(..., T_x)")
    if alpha.shape[-1] == 0:
        raise ValueError(f"alpha has T_x = 0 weights (shape {alpha.shape})")
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not base > 0 or base == 1:
        raise ValueError(f"base must be a positive number other than 1 (e or 2), got {base!r}")
    _check_weights(alpha)
    safe = np.where(alpha > 0, alpha, 1.0)
    H = -np.sum(alpha * np.log(safe), axis=-1) / math.log(base)
    return np.maximum(H, 0.0)


def attend(
    s_prev: ArrayLike,
    h: ArrayLike,
    W_a: ArrayLike,
    U_a: ArrayLike,
    v_a: ArrayLike,
    mask: ArrayLike | None = None,
) -> AttentionStep:
    """One additive (Bahdanau) attention step: scores, weights, context.

    Parameters
    ----------
    s_prev : (..., d_s)
    h : (..., T_x, d_h)
    W_a : (d_a, d_s)
    U_a : (d_a, d_h)
    v_a : (d_a,)
    mask : (..., T_x) bool, optional
        ``True`` = a real source position; padding gets α exactly 0.

    Returns
    -------
    AttentionStep
        Named tuple ``(e, alpha, c)`` with shapes ``(..., T_x)``, ``(..., T_x)``
        and ``(..., d_h)``.

    See Also
    --------
    The chapter "The attention step, pictured" (chapters/attention_step).
    """
    e = additive_scores(s_prev, h, W_a, U_a, v_a)
    alpha = softmax(e, axis=-1, mask=mask)
    return AttentionStep(e=e, alpha=alpha, c=context(alpha, h))
