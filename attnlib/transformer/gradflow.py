"""Gradient flow and cost: how far a source word is from an output, and what a layer costs.

Two measurements for the chapter "Gradient flow and cost" (chapters/gradient_flow_and_cost):

* **Gradient flow.** :func:`source_gradients` measures G_ti = ‖∂ỹ_t[y_t]/∂x_i‖, the size
  of the gradient of output step t's logit for its correct token with respect to the
  embedding x_i of source word i, for every pair (t, i) of a teacher-forced batch.
  :func:`by_distance` averages it over the pairs at one distance |t − i|,
  :func:`by_source_position` over the output steps for each source position, and
  :func:`recurrent_steps` counts the GRU steps between x_i and the encoder's final
  states (the only way into the no-attention baseline).
* **Cost of a layer.** One recurrent layer (:func:`rnn_layer`) against one self-attention
  layer (:func:`self_attention_layer`) on n positions of size d: their multiply-adds
  (:func:`multiply_adds`), the matrix products a layer runs and their multiply-adds,
  counted as it runs (:func:`products`), the operations that must run one after
  another and the longest input-to-output path, both read off the autograd graph
  (:func:`graph_depth`, :func:`graph_distance`), and a clock (:func:`time_layer`,
  for display only: a time depends on what else the machine runs).

See Also
--------
The chapter "Gradient flow and cost" (chapters/gradient_flow_and_cost); the
bottleneck it explains, "The fixed-length bottleneck" (chapters/bottleneck).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from attnlib.experiments import Products, count_products
from attnlib.models import Seq2Seq
from attnlib.runtime import eval_mode, torch_threads
from attnlib.vocab import PAD_ID

__all__ = [
    "LAYERS",
    "by_distance",
    "by_source_position",
    "decay_per_step",
    "graph_depth",
    "graph_distance",
    "layer_weights",
    "multiply_adds",
    "products",
    "recurrent_steps",
    "rnn_layer",
    "self_attention_layer",
    "source_gradients",
    "structure",
    "time_layer",
]

Of = Literal["logit", "loss"]
Layer = Literal["rnn", "self-attention"]
LAYERS: tuple[Layer, ...] = ("rnn", "self-attention")


# --------------------------------------------------------------------------- gradient flow
def source_gradients(
    model: Seq2Seq,
    src: Tensor,
    tgt_in: Tensor,
    tgt_out: Tensor,
    *,
    of: Of = "logit",
    chunk: int = 512,
) -> np.ndarray:
    """G[b, t, i] = ‖∂ỹ_t[y_t] / ∂x_i‖₂ for every output step t and source position i.

    x_i is the source embedding the encoder reads at position i (``<eos>``
    included); ỹ_t[y_t] is output step t's logit for its correct token (with
    ``of="loss"``, the cross-entropy of step t instead). Each output step is
    differentiated on its own: the batch is repeated once per step, and one
    backward pass gives all of them, since the rows do not interact.

    Parameters
    ----------
    model : Seq2Seq
        Run in eval mode (and handed back in the mode it was in).
    src : (B, T_x) long
    tgt_in, tgt_out : (B, T_y) long
        Teacher forcing, as :func:`attnlib.train.encode_pairs` builds them.
    of : {"logit", "loss"}
        What is differentiated. The logit does not shrink as the model grows
        confident; the loss does (its gradient is 1 − p for the correct token).
    chunk : int
        Rows per backward pass (memory).

    Returns
    -------
    G : (B, T_y, T_x) float64
        NaN where t is a padded target step or i a padded source position.
    """
    if of not in ("logit", "loss"):
        raise ValueError(f"of must be 'logit' or 'loss', got {of!r}")
    if src.dim() != 2 or tgt_in.shape != tgt_out.shape or tgt_in.shape[0] != src.shape[0]:
        raise ValueError(
            f"expected src (B, T_x) and tgt_in, tgt_out (B, T_y) with one B; got "
            f"{tuple(src.shape)}, {tuple(tgt_in.shape)}, {tuple(tgt_out.shape)}"
        )
    B, T_x = src.shape
    T_y = tgt_out.shape[1]
    rows = torch.arange(B).repeat_interleave(T_y)  # (B T_y,): sentence of each row
    steps = torch.arange(T_y).repeat(B)  # (B T_y,): the step each row differentiates
    norms = torch.zeros(B * T_y, T_x, dtype=torch.float64)
    store: dict[str, Tensor] = {}

    def leaf(_module: torch.nn.Module, _inputs: object, out: Tensor) -> Tensor:
        x = out.detach().requires_grad_(True)  # the x_i become leaves of the graph
        store["x"] = x
        return x

    embedding: torch.nn.Module = getattr(model.encoder, "embedding")  # noqa: B009 (typed as Module)
    with eval_mode(model), torch.enable_grad():
        handle = embedding.register_forward_hook(leaf)
        try:
            for lo in range(0, B * T_y, chunk):
                r, t = rows[lo : lo + chunk], steps[lo : lo + chunk]
                logits, _ = model(src[r], tgt_in[r])  # (n, T_y, V)
                y = tgt_out[r, t]  # (n,) the correct token of each row's step
                out = logits[torch.arange(len(r)), t]  # (n, V)
                if of == "logit":
                    picked = out.gather(1, y.unsqueeze(1)).squeeze(1)
                else:
                    picked = F.cross_entropy(out, y, reduction="none")
                picked = picked.masked_fill(y == PAD_ID, 0.0)
                (g,) = torch.autograd.grad(picked.sum(), store["x"])  # (n, T_x, emb)
                norms[lo : lo + len(r)] = g.double().norm(dim=-1)
        finally:
            handle.remove()
    G = norms.reshape(B, T_y, T_x).numpy()
    G[(tgt_out == PAD_ID).numpy()] = np.nan  # steps beyond a target
    G.transpose(0, 2, 1)[(src == PAD_ID).numpy()] = np.nan  # positions beyond a source
    return G


def by_distance(G: np.ndarray) -> np.ndarray:
    """The mean of G[b, t, i] over all (b, t, i) with |t − i| = k, for k = 0 … max.

    Parameters
    ----------
    G : (B, T_y, T_x) or (T_y, T_x)
        NaN entries (padding) are left out.

    Returns
    -------
    profile : (max(T_y, T_x),)
        NaN for a distance with no entry.
    """
    G3 = np.asarray(G, dtype=float)
    if G3.ndim == 2:
        G3 = G3[None]
    if G3.ndim != 3:
        raise ValueError(f"G must be (B, T_y, T_x) or (T_y, T_x), got shape {G3.shape}")
    _, T_y, T_x = G3.shape
    d = np.abs(np.arange(T_y)[:, None] - np.arange(T_x)[None, :])  # (T_y, T_x)
    out = np.full(max(T_y, T_x), np.nan)
    for k in range(out.size):
        vals = G3[:, d == k]
        vals = vals[~np.isnan(vals)]
        if vals.size:
            out[k] = vals.mean()
    return out


def by_source_position(G: np.ndarray) -> np.ndarray:
    """The mean of G[b, t, i] over sentences b and output steps t, for each source position i.

    Returns
    -------
    profile : (T_x,)
    """
    G3 = np.asarray(G, dtype=float)
    if G3.ndim != 3:
        raise ValueError(f"G must be (B, T_y, T_x), got shape {G3.shape}")
    with np.errstate(invalid="ignore"):
        return np.nanmean(G3, axis=(0, 1))


def recurrent_steps(T_x: int) -> np.ndarray:
    """GRU steps between x_i and the nearer of the encoder's final states, i = 0 … T_x − 1.

    The bidirectional encoder's summary is [→h at the last position; ←h at the
    first]: x_i reaches the first after T_x − 1 − i steps of the forward GRU and the
    second after i steps of the backward one. The no-attention baseline sees the
    source only through that summary; an attention model also reads h_i itself,
    zero steps away.

    Returns
    -------
    k : (T_x,) int
    """
    if T_x < 1:
        raise ValueError(f"T_x must be at least 1, got {T_x}")
    i = np.arange(T_x)
    return np.minimum(i, T_x - 1 - i)


def decay_per_step(steps: np.ndarray, values: np.ndarray) -> float:
    """The factor by which ``values`` shrink per step: exp(slope of log values against steps).

    A least-squares line through (steps, log values); 1 means no decay.
    """
    k = np.asarray(steps, dtype=float)
    v = np.asarray(values, dtype=float)
    if k.shape != v.shape or k.ndim != 1 or np.unique(k).size < 2:
        raise ValueError("steps and values must be vectors of one length with two distinct steps")
    if np.any(v <= 0):
        raise ValueError("a decay factor needs positive values")
    slope = np.polyfit(k, np.log(v), 1)[0]
    return float(np.exp(slope))


# --------------------------------------------------------------------------- cost of a layer
def layer_weights(d: int, *, seed: int = 0) -> dict[str, Tensor]:
    """Random (d, d) weights of both layers: W, U (recurrence); W_q, W_k, W_v (attention)."""
    if d < 1:
        raise ValueError(f"d must be at least 1, got {d}")
    gen = torch.Generator().manual_seed(seed)
    names = ("W", "U", "W_q", "W_k", "W_v")
    return {k: torch.randn(d, d, generator=gen) / math.sqrt(d) for k in names}


def _rnn_steps(xs: Sequence[Tensor], W: Tensor, U: Tensor) -> list[Tensor]:
    """h_1 … h_n of :func:`rnn_layer`, one tensor per position (each from its own x_j)."""
    h = xs[0].new_zeros(U.shape[0])
    out = []
    for x_j in xs:  # n steps, each waiting for the last
        h = torch.tanh(W @ x_j + U @ h)
        out.append(h)
    return out


def rnn_layer(x: Tensor | Sequence[Tensor], W: Tensor, U: Tensor) -> Tensor:
    """A recurrent layer: h_j = tanh(W x_j + U h_{j−1}), h_0 = 0, one position after another.

    Parameters
    ----------
    x : (n, d), or a sequence of n vectors (d,)
    W, U : (d, d)

    Returns
    -------
    h : (n, d)
    """
    return torch.stack(_rnn_steps(list(x), W, U))


def self_attention_layer(
    x: Tensor | Sequence[Tensor], W_q: Tensor, W_k: Tensor, W_v: Tensor
) -> Tensor:
    """A self-attention layer: every position attends to every position, all at once.

    y_j = Σ_m softmax_m(q_j · k_m / √d) v_m with q = W_q x, k = W_k x, v = W_v x.

    Parameters
    ----------
    x : (n, d), or a sequence of n vectors (d,)
    W_q, W_k, W_v : (d, d)

    Returns
    -------
    y : (n, d)
    """
    X = x if isinstance(x, Tensor) else torch.stack(list(x))
    q, k, v = X @ W_q.T, X @ W_k.T, X @ W_v.T  # (n, d) each
    weights = torch.softmax(q @ k.T / math.sqrt(X.shape[1]), dim=-1)  # (n, n)
    return weights @ v


def _outputs(kind: str, xs: Sequence[Tensor], w: dict[str, Tensor]) -> list[Tensor]:
    """The layer's n outputs, one tensor each, so that each one's graph is its own."""
    if kind == "rnn":
        return _rnn_steps(xs, w["W"], w["U"])
    return list(self_attention_layer(xs, w["W_q"], w["W_k"], w["W_v"]).unbind(0))


def _layer(kind: str) -> Callable[..., Tensor]:
    if kind == "rnn":
        return lambda x, w: rnn_layer(x, w["W"], w["U"])
    if kind == "self-attention":
        return lambda x, w: self_attention_layer(x, w["W_q"], w["W_k"], w["W_v"])
    raise ValueError(f"kind must be one of {LAYERS}, got {kind!r}")


def structure(kind: str, n: int, d: int = 8, *, seed: int = 0) -> tuple[int, int]:
    """(sequential operations, path length) of one layer on n positions, read off autograd.

    The layer runs on n separate input vectors x_1 … x_n (leaves of the graph).
    Sequential operations: :func:`graph_depth` of the whole output. Path length:
    :func:`graph_distance` from x_1 to the last output y_n, the longest of the
    first-to-last paths (a word at one end, an output at the other).
    """
    _layer(kind)
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    w = layer_weights(d, seed=seed)
    gen = torch.Generator().manual_seed(seed + 1)
    xs = [torch.randn(d, generator=gen).requires_grad_(True) for _ in range(n)]
    ys = _outputs(kind, xs, w)
    return graph_depth(torch.stack(ys)), graph_distance(ys[-1], xs[0])


def multiply_adds(kind: str, n: int, d: int) -> int:
    """Multiply-adds of one layer on n positions of size d (softmax and tanh not counted).

    Recurrent: W x_j and U h_{j−1} at each of n positions, 2 n d². Self-attention: three
    projections, 3 n d², then n² scores of d products and n² weighted terms of d
    numbers, 2 n² d.
    """
    _layer(kind)
    if kind == "rnn":
        return 2 * n * d * d
    return 3 * n * d * d + 2 * n * n * d


def products(kind: str, n: int, d: int, *, seed: int = 0) -> Products:
    """The matrix products one forward pass of the layer runs on n positions of size d.

    Counted as they run (:func:`attnlib.experiments.count_products`), no autograd:
    the recurrent layer runs 2 n matrix–vector products of d² multiply-adds each,
    one step after another; self-attention five large ones (three projections, the
    scores, the weighted sum), whatever n. Their multiply-adds are
    :func:`multiply_adds`'s. A count is the same on any machine, however busy.

    Returns
    -------
    Products
        ``calls`` and ``multiply_adds``.
    """
    layer = _layer(kind)
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    w = layer_weights(d, seed=seed)
    x = torch.randn(n, d, generator=torch.Generator().manual_seed(seed + 1))
    with torch.no_grad():
        return count_products(lambda: layer(x, w))


def _node_graph(out: Tensor) -> dict[Any, list[Any]]:
    """The autograd graph below ``out``: each node and the nodes it reads."""
    graph: dict[Any, list[Any]] = {}
    todo: list[Any] = [out.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in graph:
            continue
        nexts = [f for f, _ in node.next_functions if f is not None]
        graph[node] = nexts
        todo.extend(nexts)
    return graph


def graph_depth(out: Tensor) -> int:
    """Operations on the longest chain of the autograd graph below ``out``.

    Operations on one chain must run one after another, whatever the hardware:
    the depth counts the sequential operations of the computation.
    """
    if out.grad_fn is None:
        raise ValueError("out has no autograd graph: compute it from a tensor with requires_grad")
    graph = _node_graph(out)
    depth: dict[Any, int] = {}
    order: list[Any] = []
    seen: set[Any] = set()
    stack: list[tuple[Any, bool]] = [(out.grad_fn, False)]
    while stack:  # iterative post-order: the graph of a long recurrence is deep
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        stack.extend((f, False) for f in graph[node] if f not in seen)
    for node in order:
        depth[node] = 1 + max((depth[f] for f in graph[node]), default=0)
    return depth[out.grad_fn]


def graph_distance(out: Tensor, leaf: Tensor) -> int:
    """Operations on the shortest chain from ``leaf`` (a tensor with requires_grad) to ``out``.

    The path length of the complexity table: how many operations a signal from
    ``leaf`` passes through before it reaches ``out`` (and the gradient, back).

    Raises
    ------
    ValueError
        If ``out`` does not depend on ``leaf``.
    """
    if out.grad_fn is None or not leaf.requires_grad or leaf.grad_fn is not None:
        raise ValueError("out needs an autograd graph and leaf must be a leaf with requires_grad")
    graph = _node_graph(out)
    frontier: list[Any] = [out.grad_fn]
    dist, seen = 0, {out.grad_fn}
    while frontier:
        nxt: list[Any] = []
        for node in frontier:
            if getattr(node, "variable", None) is leaf:
                return dist
            for f in graph[node]:
                if f not in seen:
                    seen.add(f)
                    nxt.append(f)
        frontier, dist = nxt, dist + 1
    raise ValueError("out does not depend on leaf")


def time_layer(kind: str, n: int, d: int, *, repeats: int = 7, seed: int = 0) -> float:
    """Median seconds of one forward pass of the layer on n positions of size d (no autograd).

    The median of ``repeats`` runs after one warm-up run; one thread, so that
    another process on the machine changes the time less. A time is for display
    (and ``bench/bench_cost.py``), never a check: it depends on the machine and on
    what else runs on it. :func:`products` counts what the same pass computes.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    layer = _layer(kind)
    w = layer_weights(d, seed=seed)
    x = torch.randn(n, d, generator=torch.Generator().manual_seed(seed + 1))
    times = []
    with torch_threads(1), torch.no_grad():
        layer(x, w)  # warm-up
        for _ in range(repeats):
            start = time.perf_counter()
            layer(x, w)
            times.append(time.perf_counter() - start)
    return statistics.median(times)
