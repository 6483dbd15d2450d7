"""Queries, keys and values: Bahdanau's step re-read, and scaled dot-product attention, in numpy.

The chapter "Queries, keys and values" (chapters/queries_keys_values) re-reads one additive
attention step as a lookup: a **query** (Bahdanau's s_{t-1}, projected by W_a) is compared with
one **key** per source position (U_a h_i, computed once per sentence) and the weights α_ti mix
the **values** (the h_i themselves). This module holds

* :func:`scaled_dot_product_attention`, the reference for Q (T_q, d_k), K (T_k, d_k),
  V (T_k, d_v), with an optional boolean keep-mask, shape-checked like :mod:`attnlib.core`;
* :func:`bahdanau_as_qkv`, the additive step split into its query, keys and values;
* the chapter's experiments: the variance of q·k against d (:func:`dot_variance`), softmax
  saturation and its vanishing Jacobian with and without 1/√d (:func:`saturation`), the
  additive score's bound |e_ti| ≤ ‖v_a‖₁ (:func:`additive_bound`), and a lookup where keys and
  values must differ (:func:`lookup`).

Everything is numpy and seeded; the experiments are small enough for a chapter's 30 s budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from attnlib.core import FloatArray, _real_array, additive_scores, softmax

__all__ = [
    "QKV",
    "AdditiveBound",
    "Attention",
    "Lookup",
    "Saturation",
    "VarianceByDim",
    "additive_bound",
    "additive_qkv_scores",
    "bahdanau_as_qkv",
    "dot_variance",
    "lookup",
    "saturation",
    "scaled_dot_product_attention",
    "softmax_jacobian_norm",
]


class Attention(NamedTuple):
    """What :func:`scaled_dot_product_attention` returns.

    Attributes
    ----------
    context : (..., T_q, d_v)
        One mixture of the values per query: context[t] = Σ_i weights[t, i] V[i].
    weights : (..., T_q, T_k)
        The attention weights α_ti: each row is a distribution over the T_k keys.
    """

    context: FloatArray
    weights: FloatArray


# --------------------------------------------------------------------------- the reference
def _matrix_like(x: ArrayLike, name: str, shape: str) -> FloatArray:
    arr = _real_array(x, name)
    if arr.ndim < 2:
        raise ValueError(f"{name} must have shape {shape}, but it has shape {arr.shape}")
    return arr


def scaled_dot_product_attention(
    Q: ArrayLike,
    K: ArrayLike,
    V: ArrayLike,
    mask: ArrayLike | None = None,
    scale: bool | float = True,
) -> Attention:
    """Scaled dot-product attention: softmax(Q K^T / √d_k) V, row by row.

    e_ti = q_t · k_i / √d_k, α_ti = softmax_i(e_ti) over the keys the mask keeps, and
    context_t = Σ_i α_ti v_i.

    Parameters
    ----------
    Q : (..., T_q, d_k)
        One query per row (a decoder state s_{t-1}, projected, is one such row).
    K : (..., T_k, d_k)
        One key per position; same d_k as the queries.
    V : (..., T_k, d_v)
        One value per position, as many as keys; d_v may differ from d_k.
    mask : bool array, optional
        Broadcastable to (..., T_q, T_k): True = query t may attend to key i. A (T_k,) mask
        (padding) applies to every query. Masked keys get weight exactly 0.
    scale : bool or float
        True (default) divides the scores by √d_k, False leaves them as they are, a positive
        number divides by that number (to show what other choices do).

    Returns
    -------
    Attention
        ``(context, weights)`` with shapes (..., T_q, d_v) and (..., T_q, T_k).

    Raises
    ------
    ValueError
        On mismatched shapes, non-finite input, a mask of the wrong shape, a query whose row
        of the mask keeps no key, or a scale that is not positive.
    TypeError
        If an input is not real numbers, or the mask is not boolean.

    See Also
    --------
    The chapter "Queries, keys and values" (chapters/queries_keys_values).
    """
    Q = _matrix_like(Q, "Q", "(T_q, d_k)")
    K = _matrix_like(K, "K", "(T_k, d_k)")
    V = _matrix_like(V, "V", "(T_k, d_v)")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    if T_k == 0:
        raise ValueError(f"K has T_k = 0 keys (shape {K.shape}); attention needs T_k ≥ 1")
    if K.shape[-1] != d_k:
        raise ValueError(
            f"the queries have d_k={d_k} components but the keys have {K.shape[-1]} "
            f"(Q {Q.shape}, K {K.shape}); a dot product needs the same d_k"
        )
    if V.shape[-2] != T_k:
        raise ValueError(
            f"there are T_k={T_k} keys but {V.shape[-2]} values (K {K.shape}, V {V.shape}); "
            "every key needs its value"
        )
    try:
        batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the batch dimensions of Q {Q.shape[:-2]}, K {K.shape[:-2]} and V {V.shape[:-2]} "
            "do not match"
        ) from None
    if isinstance(scale, bool):
        divisor = math.sqrt(d_k) if scale else 1.0
    elif isinstance(scale, int | float) and math.isfinite(scale) and scale > 0:
        divisor = float(scale)
    else:
        raise ValueError(f"scale must be True, False or a positive number, got {scale!r}")
    e = (Q @ np.swapaxes(K, -1, -2)) / divisor  # (..., T_q, T_k)
    e = np.broadcast_to(e, (*batch, T_q, T_k))
    m = None
    if mask is not None:
        m = np.asarray(mask)
        if m.dtype != bool:
            raise TypeError(
                "mask must be boolean (True = attend, False = keep out), "
                f"but it has dtype {m.dtype}"
            )
        try:
            m = np.broadcast_to(m, e.shape)
        except ValueError:
            raise ValueError(
                f"mask has shape {m.shape}, which does not broadcast to the scores' shape "
                f"(..., T_q, T_k) = {e.shape}"
            ) from None
        empty = ~m.any(axis=-1)
        if np.any(empty):
            where = tuple(int(k) for k in np.argwhere(empty)[0])
            raise ValueError(
                f"the mask keeps no key for {int(empty.sum())} query row(s) (the first at index "
                f"{where}); a softmax over zero keys is undefined"
            )
    alpha = softmax(e, axis=-1, mask=m)
    return Attention(context=alpha @ V, weights=alpha)


# --------------------------------------------------------------------------- Bahdanau, re-read
class QKV(NamedTuple):
    """One additive step's query, keys and values.

    Attributes
    ----------
    query : (..., d_a)
        W_a s_{t-1}: the only part that changes from one decoder step to the next.
    keys : (..., T_x, d_a)
        U_a h_i: fixed for the whole sentence, so computed once.
    values : (..., T_x, d_h)
        The encoder states h_i themselves: what c_t mixes.
    """

    query: FloatArray
    keys: FloatArray
    values: FloatArray


def bahdanau_as_qkv(s_prev: ArrayLike, h: ArrayLike, W_a: ArrayLike, U_a: ArrayLike) -> QKV:
    """Split Bahdanau's step into query W_a s_{t-1}, keys U_a h_i and values h_i.

    Parameters
    ----------
    s_prev : (..., d_s)
    h : (..., T_x, d_h)
    W_a : (d_a, d_s)
    U_a : (d_a, d_h)

    Returns
    -------
    QKV

    See Also
    --------
    The chapter "Queries, keys and values" (chapters/queries_keys_values);
    :meth:`attnlib.models.AdditiveAttention.precompute` computes the same keys once per batch.
    """
    s_prev = _real_array(s_prev, "s_prev")
    h = _real_array(h, "h")
    W_a = _real_array(W_a, "W_a")
    U_a = _real_array(U_a, "U_a")
    if W_a.ndim != 2 or s_prev.ndim < 1 or W_a.shape[1] != s_prev.shape[-1]:
        raise ValueError(
            f"W_a (d_a, d_s) {W_a.shape} does not fit s_prev (..., d_s) {s_prev.shape}"
        )
    if U_a.ndim != 2 or h.ndim < 2 or U_a.shape[1] != h.shape[-1]:
        raise ValueError(f"U_a (d_a, d_h) {U_a.shape} does not fit h (..., T_x, d_h) {h.shape}")
    if W_a.shape[0] != U_a.shape[0]:
        raise ValueError(f"W_a gives d_a={W_a.shape[0]} but U_a gives d_a={U_a.shape[0]}")
    return QKV(query=s_prev @ W_a.T, keys=h @ U_a.T, values=h)


def additive_qkv_scores(query: ArrayLike, keys: ArrayLike, v_a: ArrayLike) -> FloatArray:
    """e_ti = v_a^T tanh(query + key_i): Bahdanau's score from a query and precomputed keys.

    Parameters
    ----------
    query : (..., d_a)
    keys : (..., T_x, d_a)
    v_a : (d_a,)

    Returns
    -------
    e : (..., T_x)

    See Also
    --------
    The chapter "Queries, keys and values" (chapters/queries_keys_values).
    """
    query = _real_array(query, "query")
    keys = _real_array(keys, "keys")
    v_a = _real_array(v_a, "v_a")
    if keys.ndim < 2 or v_a.shape != (keys.shape[-1],) or query.shape[-1] != keys.shape[-1]:
        raise ValueError(
            f"query (..., d_a) {query.shape}, keys (..., T_x, d_a) {keys.shape} and "
            f"v_a (d_a,) {v_a.shape} must share d_a"
        )
    return np.tanh(query[..., None, :] + keys) @ v_a


# --------------------------------------------------------------------------- experiment 1
@dataclass(frozen=True)
class VarianceByDim:
    """The spread of q·k for random q, k with N(0, 1) entries, per dimension d."""

    d: FloatArray  # (n_d,)
    var_raw: FloatArray  # (n_d,) measured Var(q·k)
    var_scaled: FloatArray  # (n_d,) measured Var(q·k / √d)
    samples: int


def dot_variance(
    dims: ArrayLike = (4, 8, 16, 32, 64, 128, 256, 512), samples: int = 4000, seed: int = 0
) -> VarianceByDim:
    """Measure Var(q·k) and Var(q·k/√d) for q, k with independent N(0, 1) entries.

    Theory: q·k is a sum of d independent products of variance 1, so Var(q·k) = d, and
    Var(q·k/√d) = 1 for every d.

    See Also
    --------
    The chapter "Queries, keys and values" (chapters/queries_keys_values).
    """
    rng = np.random.default_rng(seed)
    d = np.asarray(dims, dtype=int)
    raw, scaled = [], []
    for n in d.tolist():
        q = rng.normal(size=(samples, n))
        k = rng.normal(size=(samples, n))
        dots = np.sum(q * k, axis=1)
        raw.append(float(np.var(dots)))
        scaled.append(float(np.var(dots / math.sqrt(n))))
    return VarianceByDim(d.astype(float), np.array(raw), np.array(scaled), samples)


# --------------------------------------------------------------------------- experiment 2
def softmax_jacobian_norm(alpha: ArrayLike) -> FloatArray:
    """‖∂α/∂e‖_F for α = softmax(e): the Jacobian is diag(α) − α α^T.

    Every gradient that reaches the scores (and through them Q and K) is multiplied by this
    matrix; near a one-hot α it is nearly 0.

    Parameters
    ----------
    alpha : (..., T_k)

    Returns
    -------
    norm : (...)
    """
    a = _real_array(alpha, "alpha")
    J = a[..., :, None] * np.eye(a.shape[-1]) - a[..., :, None] * a[..., None, :]
    return np.sqrt(np.sum(J * J, axis=(-2, -1)))


@dataclass(frozen=True)
class Saturation:
    """Softmax saturation against d, for scores q·k_i (raw) and q·k_i/√d (scaled)."""

    d: FloatArray  # (n_d,)
    T_k: int
    draws: int
    max_weight_raw: FloatArray  # (n_d,) mean over draws of max_i α_ti
    max_weight_scaled: FloatArray
    saturated_raw: FloatArray  # (n_d,) fraction of draws with max_i α_ti > threshold
    saturated_scaled: FloatArray
    grad_raw: FloatArray  # (n_d,) mean ‖∂α/∂e‖_F
    grad_scaled: FloatArray
    threshold: float


def saturation(
    dims: ArrayLike = (4, 8, 16, 32, 64, 128, 256, 512),
    T_k: int = 16,
    draws: int = 400,
    threshold: float = 0.99,
    seed: int = 1,
) -> Saturation:
    """Measure how one query's softmax over T_k random keys saturates as d grows.

    For each d: ``draws`` queries q and key sets K with N(0, 1) entries; α = softmax(K q) (raw)
    and α = softmax(K q / √d) (scaled). Reports the mean largest weight, the fraction of rows
    whose largest weight exceeds ``threshold`` and the mean Jacobian norm ‖∂α/∂e‖_F.

    See Also
    --------
    The chapter "Queries, keys and values" (chapters/queries_keys_values).
    """
    rng = np.random.default_rng(seed)
    d = np.asarray(dims, dtype=int)
    out: dict[str, list[float]] = {k: [] for k in ("mr", "ms", "sr", "ss", "gr", "gs")}
    for n in d.tolist():
        q = rng.normal(size=(draws, 1, n))
        K = rng.normal(size=(draws, T_k, n))
        for tag, scale in (("r", False), ("s", True)):
            alpha = scaled_dot_product_attention(q, K, K, scale=scale).weights[:, 0]  # (draws, T_k)
            top = alpha.max(axis=-1)
            out["m" + tag].append(float(top.mean()))
            out["s" + tag].append(float(np.mean(top > threshold)))
            out["g" + tag].append(float(softmax_jacobian_norm(alpha).mean()))
    arr = {k: np.array(v) for k, v in out.items()}
    return Saturation(
        d.astype(float),
        T_k,
        draws,
        arr["mr"],
        arr["ms"],
        arr["sr"],
        arr["ss"],
        arr["gr"],
        arr["gs"],
        threshold,
    )


# --------------------------------------------------------------------------- experiment 3
@dataclass(frozen=True)
class AdditiveBound:
    """Additive scores on random draws against their bound ‖v_a‖₁."""

    d_a: FloatArray  # (n,) the d_a of each row
    input_scale: FloatArray  # (n,) how large s_{t-1}, h_i were drawn
    max_abs_e: FloatArray  # (n,) max_i |e_ti| of the draw
    bound: FloatArray  # (n,) ‖v_a‖₁ of the draw

    @property
    def ratio(self) -> FloatArray:
        """max |e_ti| / ‖v_a‖₁ per draw: at most 1."""
        return self.max_abs_e / self.bound


def additive_bound(
    d_a_values: ArrayLike = (4, 16, 64, 256),
    input_scales: ArrayLike = (0.1, 1.0, 10.0, 100.0),
    repeats: int = 25,
    d_s: int = 6,
    d_h: int = 8,
    T_x: int = 10,
    seed: int = 2,
) -> AdditiveBound:
    """Draw additive steps and record max_i |e_ti| and ‖v_a‖₁ (via :func:`attnlib.additive_scores`).

    |e_ti| = |Σ_k v_a[k] tanh(·)_k| ≤ Σ_k |v_a[k]| = ‖v_a‖₁ since |tanh| ≤ 1: however large
    s_{t-1} and h_i get, the score stays bounded, unlike a dot product.

    See Also
    --------
    The chapter "Queries, keys and values" (chapters/queries_keys_values).
    """
    rng = np.random.default_rng(seed)
    rows: list[tuple[float, float, float, float]] = []
    for d_a in np.asarray(d_a_values, dtype=int).tolist():
        for sc in np.asarray(input_scales, dtype=float).tolist():
            for _ in range(repeats):
                s_prev = rng.normal(size=d_s) * sc
                h = rng.normal(size=(T_x, d_h)) * sc
                W_a = rng.normal(size=(d_a, d_s))
                U_a = rng.normal(size=(d_a, d_h))
                v_a = rng.normal(size=d_a)
                e = additive_scores(s_prev, h, W_a, U_a, v_a)
                rows.append((d_a, sc, float(np.abs(e).max()), float(np.abs(v_a).sum())))
    a = np.array(rows)
    return AdditiveBound(a[:, 0], a[:, 1], a[:, 2], a[:, 3])


# --------------------------------------------------------------------------- experiment 4
@dataclass(frozen=True)
class Lookup:
    """A key-value memory read five ways; each field is (accuracy, mean cosine to the target)."""

    separate: tuple[float, float]  # keys k_i, values v_i: attention on the keys, mix the values
    shared_values: tuple[float, float]  # one vector per slot, the value: K = V = values
    shared_keys: tuple[float, float]  # one vector per slot, the key: K = V = keys
    projected: tuple[float, float]  # one vector h_i = [k_i; v_i], keys U_a h_i = k_i, values h_i
    whole: tuple[float, float]  # one vector h_i = [k_i; v_i] as K = V, read with the query [q; 0]
    slots: int
    d: int
    queries: int
    weight_on_target: float  # separate K, V: mean α on the slot whose key was asked for


def _cosine(a: FloatArray, b: FloatArray) -> FloatArray:
    return np.sum(a * b, axis=-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def lookup(
    slots: int = 8, d: int = 32, queries: int = 500, noise: float = 0.3, seed: int = 3
) -> Lookup:
    """A lookup where keys and values must differ: fetch the value stored under a key.

    A memory holds ``slots`` pairs (k_i, v_i), both with N(0, 1) entries and drawn
    independently, so a value does not resemble its key. Each query is a stored key plus
    noise (standard deviation ``noise``); the answer should be that key's value. A read is
    correct when the context vector is closer (cosine) to the target value than to every other
    stored value. Three memories: separate keys and values; K = V = the values (the query
    must then match the values, which it does not resemble); K = V = the keys (the right slot
    is found, but what comes back is its key, not its value). A fourth memory stores one
    vector per slot, h_i = [k_i; v_i], as an encoder state could, and reads it as Bahdanau's step
    does: keys U_a h_i with U_a = [I 0] (which keeps the k_i half), values h_i (the read is
    scored on the v_i half of the context). A fifth reads that same memory with no projection,
    K = V = h_i as in Luong's dot score, and a query [q; 0] whose zeros leave the v_i half out
    of the score (scaled by √(2d), the query's own size; scored on the v_i half too): one
    vector serves as key and value when it holds both and something picks the part matched.

    See Also
    --------
    The chapter "Queries, keys and values" (chapters/queries_keys_values).
    """
    rng = np.random.default_rng(seed)
    keys = rng.normal(size=(queries, slots, d))
    values = rng.normal(size=(queries, slots, d))
    target = rng.integers(slots, size=queries)
    rows = np.arange(queries)
    q = keys[rows, target][:, None, :] + noise * rng.normal(size=(queries, 1, d))

    def read(
        K: FloatArray, V: FloatArray, part: slice = slice(None), query: FloatArray = q
    ) -> tuple[tuple[float, float], FloatArray]:
        att = scaled_dot_product_attention(query, K, V)
        c = att.context[:, 0, part]  # (queries, d)
        cos = _cosine(c[:, None, :], values)  # (queries, slots)
        acc = float(np.mean(cos.argmax(axis=1) == target))
        return (acc, float(np.mean(cos[rows, target]))), att.weights[:, 0]

    separate, w = read(keys, values)
    shared_values, _ = read(values, values)
    shared_keys, _ = read(keys, keys)
    h = np.concatenate([keys, values], axis=-1)  # (queries, slots, 2d): one vector per slot
    U_a = np.concatenate([np.eye(d), np.zeros((d, d))], axis=1)  # (d, 2d): keeps the k_i half
    projected, _ = read(h @ U_a.T, h, slice(d, None))
    padded = np.concatenate([q, np.zeros_like(q)], axis=-1)  # [q; 0]: matches the k_i half only
    whole, _ = read(h, h, slice(d, None), padded)
    return Lookup(
        separate,
        shared_values,
        shared_keys,
        projected,
        whole,
        slots,
        d,
        queries,
        float(np.mean(w[rows, target])),
    )
