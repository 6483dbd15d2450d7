"""Self-attention and positional encodings, in numpy: the reference for chapters/self_attention.

In Bahdanau's step one query s_{t-1} attends over the encoder states h_i. In
self-attention every position of a sequence attends over the same sequence: row
x_i of ``X`` is projected to a query q_i = x_i W_q, a key k_i = x_i W_k and a
value v_i = x_i W_v, the scores are e_ij = q_i · k_j / √d_k, the weights
α_ij = softmax_j(e_ij) and the output z_i = Σ_j α_ij v_j. Nothing in this
computation knows where x_j stands, so permuting the rows of ``X`` permutes the
rows of the output and nothing else; :func:`positional_encoding` gives the
sinusoidal vectors of Vaswani et al. (2017) that are added to ``X`` to fix that.

The torch model of the chapter (:mod:`attnlib.transformer.selfattn_models`) is checked
against :func:`self_attention`; this module imports no torch.

See Also
--------
The chapter "Self-attention, position and heads" (chapters/self_attention).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from attnlib.core import FloatArray, _real_array, softmax

__all__ = [
    "SelfAttention",
    "permute_rows",
    "positional_encoding",
    "self_attention",
]


class SelfAttention(NamedTuple):
    """What :func:`self_attention` computes for one sequence (or a batch of them).

    Attributes
    ----------
    q, k : (..., T, d_k)
        Queries q_i = x_i W_q and keys k_j = x_j W_k.
    v : (..., T, d_v)
        Values v_j = x_j W_v.
    e : (..., T, T)
        Scores e_ij = q_i · k_j / √d_k (row i: the position that asks).
    alpha : (..., T, T)
        Weights α_ij, a softmax over j in every row.
    z : (..., T, d_v)
        Outputs z_i = Σ_j α_ij v_j.
    """

    q: FloatArray
    k: FloatArray
    v: FloatArray
    e: FloatArray
    alpha: FloatArray
    z: FloatArray


def _projection(W: ArrayLike, name: str, d_x: int, out: str) -> FloatArray:
    W = _real_array(W, name)
    if W.ndim != 2:
        raise ValueError(
            f"{name} must be a matrix of shape (d_x, {out}), but it has shape {W.shape}"
        )
    if W.shape[0] != d_x:
        raise ValueError(
            f"{name} expects rows x_i of d_x = {W.shape[0]} components, but X has d_x = {d_x}"
        )
    if W.shape[1] == 0:
        raise ValueError(f"{name} has shape {W.shape}: {out} must be at least 1")
    return W


def self_attention(
    X: ArrayLike,
    W_q: ArrayLike,
    W_k: ArrayLike,
    W_v: ArrayLike,
    mask: ArrayLike | None = None,
) -> SelfAttention:
    """Scaled dot-product self-attention of the sequence ``X`` over itself.

    Parameters
    ----------
    X : (..., T, d_x)
        The sequence, one row x_i per position (embeddings, possibly with a
        positional encoding added).
    W_q, W_k : (d_x, d_k)
        Query and key projections.
    W_v : (d_x, d_v)
        Value projection.
    mask : bool array, optional
        Broadcastable to ``(..., T, T)``; ``mask[..., i, j]`` is True where
        position i may attend to j (False: α_ij is exactly 0). A lower
        triangle gives the causal self-attention of a decoder.

    Returns
    -------
    SelfAttention
        ``q, k, v, e, alpha, z``.

    Raises
    ------
    ValueError
        If ``X`` is not a (batch of) sequence(s) with at least one position,
        the projections do not fit ``d_x`` or each other, or a row of the mask
        leaves no position to attend to.

    See Also
    --------
    attnlib.core.softmax : the softmax (and its mask) used for α_ij.
    The chapter "Self-attention, position and heads" (chapters/self_attention).
    """
    X = _real_array(X, "X")
    if X.ndim < 2:
        raise ValueError(
            f"X must have shape (..., T, d_x), one row x_i per position, but it has shape {X.shape}"
        )
    T, d_x = X.shape[-2], X.shape[-1]
    if T == 0:
        raise ValueError(f"X has T = 0 positions (shape {X.shape}); self-attention needs T ≥ 1")
    W_q = _projection(W_q, "W_q", d_x, "d_k")
    W_k = _projection(W_k, "W_k", d_x, "d_k")
    W_v = _projection(W_v, "W_v", d_x, "d_v")
    if W_q.shape[1] != W_k.shape[1]:
        raise ValueError(
            f"queries and keys must have the same size d_k to be compared, but W_q gives "
            f"{W_q.shape[1]} and W_k gives {W_k.shape[1]}"
        )
    q, k, v = X @ W_q, X @ W_k, X @ W_v
    e = q @ np.swapaxes(k, -1, -2) / np.sqrt(W_q.shape[1])
    if mask is not None:
        m = np.asarray(mask)
        if m.ndim < 2 or m.shape[-2:] != (T, T):
            raise ValueError(
                f"mask must have shape (..., T, T) = (..., {T}, {T}) (row i: who position i "
                f"may attend to), but it has shape {m.shape}"
            )
    alpha = softmax(e, axis=-1, mask=mask)
    return SelfAttention(q=q, k=k, v=v, e=e, alpha=alpha, z=alpha @ v)


def positional_encoding(T: int, d: int, base: float = 10000.0) -> FloatArray:
    """The sinusoidal positional encodings of Vaswani et al. (2017).

    Row i (position i = 0, 1, ..., T-1) holds, for every pair of components
    m = 0, 1, ..., the pair sin(i ω_m), cos(i ω_m) with ω_m = base^(-2m/d):
    fast turns in the first components, slow ones in the last.

    Parameters
    ----------
    T : int
        Number of positions (≥ 1).
    d : int
        Number of components, even, the size of the vectors it is added to.
    base : float
        The longest wavelength is 2π · base (10000 in the paper).

    Returns
    -------
    P : (T, d)
        ``P[i, 2m] = sin(i ω_m)``, ``P[i, 2m+1] = cos(i ω_m)``. Every row has
        norm √(d/2); the dot product P[i] · P[j] depends only on i − j.

    See Also
    --------
    The chapter "Self-attention, position and heads" (chapters/self_attention).
    """
    if isinstance(T, bool) or not isinstance(T, int | np.integer) or T < 1:
        raise ValueError(f"T must be a whole number of positions ≥ 1, not {T!r}")
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 2 or d % 2:
        raise ValueError(
            f"d must be an even whole number ≥ 2 (sin and cos come in pairs), not {d!r}"
        )
    if not base > 1:
        raise ValueError(f"base must be larger than 1, not {base!r}")
    omega = base ** (-np.arange(0, d, 2) / d)  # (d/2,)
    angle = np.arange(T)[:, None] * omega[None, :]  # (T, d/2)
    P = np.empty((T, d))
    P[:, 0::2] = np.sin(angle)
    P[:, 1::2] = np.cos(angle)
    return P


def permute_rows(X: ArrayLike, perm: ArrayLike) -> FloatArray:
    """Rows of ``X`` reordered by ``perm`` (row i of the result is row perm[i] of X).

    Parameters
    ----------
    X : (..., T, d)
    perm : (T,) a permutation of 0, ..., T-1

    Raises
    ------
    ValueError
        If ``perm`` is not a permutation of the T positions of ``X``.
    """
    X = _real_array(X, "X")
    p = np.asarray(perm)
    if X.ndim < 2:
        raise ValueError(f"X must have shape (..., T, d), but it has shape {X.shape}")
    T = X.shape[-2]
    if p.shape != (T,) or p.dtype.kind not in "iu" or sorted(p.tolist()) != list(range(T)):
        raise ValueError(f"perm must be a permutation of the T = {T} positions 0..{T - 1}, not {p}")
    return X[..., p, :]
