"""Small torch models and toy tasks for chapters/self_attention (self-attention, position, heads).

* :class:`MultiHeadSelfAttention` — scaled dot-product self-attention with
  ``n_heads`` heads, each with its own W_q, W_k, W_v (exposed per head, so a
  chapter can draw each head's α_ij); with one head and W_o = I it computes
  exactly :func:`attnlib.transformer.selfattn.self_attention`.
* :class:`Reader` — the attention step of the course with the recurrent decoder
  taken away: output step t has its own query (it knows only *which* step it
  is, as s_{t-1} does in a copying model), attends over the source states h_i
  and reads its output from c_t. What the h_i are is the experiment:
  bare embeddings, embeddings plus positions, one self-attention layer over
  them, or a bidirectional GRU.
* :class:`Tagger` — one self-attention layer over embeddings plus positions,
  one output per position: the multi-head experiment.
* :func:`make_sequences` — fixed-length toy tasks (copy, reverse, after_marker,
  prev_and_match, prev_and_first) as integer tensors; :func:`fit` and :func:`accuracy`.

Everything is seeded: the same call gives the same numbers.

See Also
--------
The chapter "Self-attention, position and heads" (chapters/self_attention).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import Tensor, nn

from attnlib.runtime import eval_mode
from attnlib.transformer.selfattn import positional_encoding

__all__ = [
    "ENCODERS",
    "SEQUENCE_TASKS",
    "MultiHeadSelfAttention",
    "Reader",
    "Sequences",
    "Tagger",
    "accuracy",
    "fit",
    "held_out",
    "make_sequences",
    "position_blind_ceiling",
]

Encoder = Literal["embedding", "embedding+position", "self-attention", "rnn"]
ENCODERS: tuple[str, ...] = ("embedding", "embedding+position", "self-attention", "rnn")
SequenceTask = Literal["copy", "reverse", "after_marker", "prev_and_match", "prev_and_first"]
SEQUENCE_TASKS: tuple[str, ...] = (
    "copy",
    "reverse",
    "after_marker",
    "prev_and_match",
    "prev_and_first",
)


# --------------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class Sequences:
    """A toy task as tensors.

    Attributes
    ----------
    x : (n, T) int64
        Source tokens: letters 0..K-1, and for ``after_marker`` the marker K.
    y : (n, T_y) int64
        Targets (``-100`` where a position has no target).
    vocab : int
        Number of source token ids.
    n_out : int
        Number of target classes.
    """

    x: Tensor
    y: Tensor
    vocab: int
    n_out: int


def make_sequences(name: SequenceTask, n: int, T: int = 8, K: int = 8, seed: int = 0) -> Sequences:
    """``n`` random sequences of ``T`` letters (from ``K``) and their targets.

    Parameters
    ----------
    name : {"copy", "reverse", "after_marker", "prev_and_match", "prev_and_first"}
        * ``copy``: y_t = x_t; ``reverse``: y_t = x_{T-1-t} (T_y = T).
        * ``after_marker``: one position holds the marker (id K), never the
          last; the single target is the letter right after it (T_y = 1).
        * ``prev_and_match``: position 0 holds a cue letter c (ids K..2K-1,
          a distinct "upper-case" copy of the letters); for each later
          position i, y_i = (x_{i-1} − c) mod K; the cue can be found by its
          content, the previous letter only by its position (y_0 = -100).
        * ``prev_and_first``: the same with the cue written as an ordinary
          letter (ids 0..K-1): it is found only by its place, position 0.
    n, T, K : int
        Number of sequences, their length, the number of letters.
    seed : int
        Seed of the generator (numpy).

    Returns
    -------
    Sequences
    """
    if name not in SEQUENCE_TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of {SEQUENCE_TASKS}")
    if T < 3 or K < 2 or n < 1:
        raise ValueError(f"need n ≥ 1, T ≥ 3 and K ≥ 2, got n={n}, T={T}, K={K}")
    rng = np.random.default_rng(seed)
    x = rng.integers(0, K, size=(n, T))
    if name == "copy":
        return Sequences(torch.from_numpy(x), torch.from_numpy(x.copy()), K, K)
    if name == "reverse":
        return Sequences(torch.from_numpy(x), torch.from_numpy(x[:, ::-1].copy()), K, K)
    rows = np.arange(n)
    if name == "after_marker":
        m = rng.integers(0, T - 1, size=n)
        x[rows, m] = K
        y = x[rows, m + 1][:, None]
        return Sequences(torch.from_numpy(x), torch.from_numpy(y), K + 1, K)
    cue = x[:, 0].copy()
    y = np.full((n, T), -100)
    y[:, 1:] = (x[:, :-1] - cue[:, None]) % K  # at i = 1 the previous letter is the cue: 0
    if name == "prev_and_first":
        return Sequences(torch.from_numpy(x), torch.from_numpy(y), K, K)
    x[:, 0] = cue + K
    return Sequences(torch.from_numpy(x), torch.from_numpy(y), 2 * K, K)


# --------------------------------------------------------------------------- layers
class MultiHeadSelfAttention(nn.Module):
    """Self-attention with ``n_heads`` heads, Z = concat_h(α^h V^h) W_o.

    Head h has its own W_q^h, W_k^h : (d_x, d_k) and W_v^h : (d_x, d_k); its
    weights α^h_ij = softmax_j(q^h_i · k^h_j / √d_k). After ``forward`` the
    attribute ``alpha`` holds the weights of the last call, ``(B, n_heads, T, T)``.

    Parameters
    ----------
    d_x : int
        Size of the rows x_i (and of the output).
    n_heads : int
    d_k : int, optional
        Size of each head's queries, keys and values (default d_x // n_heads).
    """

    def __init__(self, d_x: int, n_heads: int = 1, d_k: int | None = None) -> None:
        super().__init__()
        d_k = d_k if d_k is not None else d_x // n_heads
        if n_heads < 1 or d_k < 1:
            raise ValueError(f"need n_heads ≥ 1 and d_k ≥ 1, got n_heads={n_heads}, d_k={d_k}")
        self.d_x, self.n_heads, self.d_k = d_x, n_heads, d_k
        scale = 1 / math.sqrt(d_x)
        self.W_q = nn.Parameter(torch.randn(n_heads, d_x, d_k) * scale)
        self.W_k = nn.Parameter(torch.randn(n_heads, d_x, d_k) * scale)
        self.W_v = nn.Parameter(torch.randn(n_heads, d_x, d_k) * scale)
        self.W_o = nn.Parameter(torch.randn(n_heads * d_k, d_x) / math.sqrt(n_heads * d_k))
        self.alpha: Tensor | None = None

    def forward(self, X: Tensor, mask: Tensor | None = None) -> Tensor:
        """Z : (B, T, d_x) for X : (B, T, d_x); ``mask`` (T, T) or (B, T, T), True = may attend."""
        if X.dim() != 3 or X.shape[-1] != self.d_x:
            raise ValueError(
                f"X must have shape (B, T, d_x) with d_x = {self.d_x}, but it has shape "
                f"{tuple(X.shape)}"
            )
        B, T, _ = X.shape
        q = torch.einsum("btd,hdk->bhtk", X, self.W_q)
        k = torch.einsum("btd,hdk->bhtk", X, self.W_k)
        v = torch.einsum("btd,hdk->bhtk", X, self.W_v)
        e = q @ k.transpose(-1, -2) / math.sqrt(self.d_k)  # (B, H, T, T)
        if mask is not None:
            m = mask if mask.dim() == 2 else mask[:, None]
            e = e.masked_fill(~m, float("-inf"))
        alpha = torch.softmax(e, dim=-1)
        self.alpha = alpha.detach()
        heads = alpha @ v  # (B, H, T, d_k)
        return heads.transpose(1, 2).reshape(B, T, self.n_heads * self.d_k) @ self.W_o

    def head(self, h: int) -> dict[str, np.ndarray]:
        """Head ``h``'s W_q, W_k, W_v as float64 numpy arrays (for the numpy reference)."""
        return {
            name: getattr(self, name)[h].detach().double().numpy() for name in ("W_q", "W_k", "W_v")
        }


def _positions(T: int, d: int) -> Tensor:
    return torch.from_numpy(positional_encoding(T, d)).float()


class _Source(nn.Module):
    """The source states h_i of a :class:`Reader`, built as ``kind`` says."""

    def __init__(self, kind: Encoder, vocab: int, d: int, T: int, n_heads: int) -> None:
        super().__init__()
        if kind not in ENCODERS:
            raise ValueError(f"unknown encoder {kind!r}; choose one of {ENCODERS}")
        self.kind = kind
        self.embed = nn.Embedding(vocab, d)
        self.P: Tensor
        self.register_buffer("P", _positions(T, d))
        self.attn = MultiHeadSelfAttention(d, n_heads) if kind == "self-attention" else None
        self.rnn = (
            nn.GRU(d, d // 2, batch_first=True, bidirectional=True) if kind == "rnn" else None
        )

    def forward(self, x: Tensor) -> Tensor:
        h = self.embed(x)
        if self.kind == "rnn":
            assert self.rnn is not None
            return self.rnn(h)[0]
        if self.kind == "embedding":
            return h
        h = h + self.P[: x.shape[1]]
        if self.attn is not None:
            h = h + self.attn(h)
        return h


class Reader(nn.Module):
    """Output step t attends over the source states h_i with its own query, reads y_t from c_t.

    e_ti = q_t · (W_k h_i) / √d, α_ti = softmax_i(e_ti), c_t = Σ_i α_ti h_i,
    y_t from a small MLP of c_t. The query q_t is a learned vector per output
    step: the step knows which step it is, nothing about the source.

    Parameters
    ----------
    kind : {"embedding", "embedding+position", "self-attention", "rnn"}
        What the h_i are (see the module docstring).
    vocab, n_out : int
        Source token ids and target classes.
    T, T_y : int
        Source length and number of output steps.
    d : int
        Size of the embeddings and of h_i.
    n_heads : int
        Heads of the self-attention layer (``kind="self-attention"`` only).
    seed : int
        Seed of the initial weights.
    """

    def __init__(
        self,
        kind: Encoder,
        vocab: int,
        n_out: int,
        T: int,
        T_y: int,
        d: int = 32,
        n_heads: int = 2,
        seed: int = 0,
    ) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.source = _Source(kind, vocab, d, T, n_heads)
        self.queries = nn.Parameter(torch.randn(T_y, d))
        self.W_k = nn.Linear(d, d, bias=False)
        self.out = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, n_out))
        self.alpha: Tensor | None = None

    def forward(self, x: Tensor) -> Tensor:
        """Logits (B, T_y, n_out) for source tokens x : (B, T)."""
        h = self.source(x)  # (B, T, d)
        e = torch.einsum("td,bid->bti", self.queries, self.W_k(h)) / math.sqrt(h.shape[-1])
        alpha = torch.softmax(e, dim=-1)
        self.alpha = alpha.detach()
        return self.out(alpha @ h)


class Tagger(nn.Module):
    """One self-attention layer over embeddings plus positions, an output at every position.

    z_i = x_i + MHSA(x)_i with x_i = embedding + p_i; y_i from a small MLP of z_i.

    Parameters
    ----------
    vocab, n_out, T : int
    d : int
        Size of x_i; the heads share it (d_k = d // n_heads).
    n_heads : int
    seed : int
    """

    def __init__(
        self, vocab: int, n_out: int, T: int, d: int = 32, n_heads: int = 2, seed: int = 0
    ) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.embed = nn.Embedding(vocab, d)
        self.P: Tensor
        self.register_buffer("P", _positions(T, d))
        self.attn = MultiHeadSelfAttention(d, n_heads)
        self.out = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, n_out))

    def forward(self, x: Tensor) -> Tensor:
        """Logits (B, T, n_out)."""
        h = self.embed(x) + self.P[: x.shape[1]]
        return self.out(h + self.attn(h))


# --------------------------------------------------------------------------- training
def fit(
    model: nn.Module,
    data: Sequences,
    steps: int = 300,
    batch: int = 128,
    lr: float = 1e-2,
    seed: int = 0,
) -> list[float]:
    """Adam on the cross-entropy of ``data`` for ``steps`` minibatches; returns the losses.

    Seeded: the minibatches come from ``torch.Generator().manual_seed(seed)``.
    """
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    model.train()
    for _ in range(steps):
        idx = torch.randint(0, data.x.shape[0], (batch,), generator=gen)
        logits = model(data.x[idx])
        loss = nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), data.y[idx].reshape(-1), ignore_index=-100
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def accuracy(model: nn.Module, data: Sequences) -> float:
    """Share of target positions (those not ``-100``) predicted right."""
    with torch.no_grad(), eval_mode(model):
        pred = model(data.x).argmax(-1)
    keep = data.y != -100
    return float((pred[keep] == data.y[keep]).float().mean())


def position_blind_ceiling(data: Sequences) -> float:
    """The best held-out accuracy of a reader that sees which letters a string holds, not where.

    For the reversal task every target is one of the string's own letters, at a place such a
    reader cannot see; given the letters, the target is ``a`` with probability count(a)/T, so
    its best answer at every step is the string's most frequent letter, right count/T of the
    time. Returned: that share over ``data`` (exact, no sampling). It is the level a model
    whose states carry no position can reach, well above guessing one of K letters.

    See Also
    --------
    The chapter "Transformers and self-attention" (chapters/self_attention).
    """
    counts = torch.stack([torch.bincount(row, minlength=data.vocab) for row in data.x])
    return float((counts.max(dim=1).values / data.x.shape[1]).mean())


# --------------------------------------------------------------- the chapter's experiments
#: Sizes and budgets of the chapter's experiments (tiny: every training takes about a second).
SETUP: dict[str, dict[str, float]] = {
    "reverse": {"T": 8, "K": 8, "steps": 200, "lr": 1e-2},
    "after_marker": {"T": 6, "K": 8, "steps": 400, "lr": 1e-2},
    "prev_and_match": {"T": 6, "K": 6, "steps": 400, "lr": 1e-2},
    "prev_and_first": {"T": 6, "K": 6, "steps": 400, "lr": 5e-3},
}
N_TRAIN, N_TEST, BATCH = 2000, 500, 64


def _split(name: SequenceTask) -> tuple[Sequences, Sequences]:
    s = SETUP[name]
    train = make_sequences(name, N_TRAIN, T=int(s["T"]), K=int(s["K"]), seed=0)
    test = make_sequences(name, N_TEST, T=int(s["T"]), K=int(s["K"]), seed=1)
    return train, test


def held_out(name: SequenceTask) -> Sequences:
    """The held-out sequences of experiment ``name`` (:data:`SETUP`), which its models are
    scored on."""
    return _split(name)[1]


def run_reader(name: SequenceTask, kind: Encoder, seed: int = 0) -> tuple[Reader, float]:
    """A :class:`Reader` with source states ``kind`` trained on ``name``; (model, accuracy).

    The sizes and budget are :data:`SETUP` [name]; the held-out sequences are
    another draw (seed 1) than the training ones (seed 0).
    """
    train, test = _split(name)
    s = SETUP[name]
    model = Reader(kind, train.vocab, train.n_out, int(s["T"]), train.y.shape[1], seed=seed)
    fit(model, train, steps=int(s["steps"]), batch=BATCH, lr=s["lr"], seed=seed)
    return model, accuracy(model, test)


def run_tagger(
    n_heads: int, name: SequenceTask = "prev_and_match", seed: int = 0
) -> tuple[Tagger, float, Sequences]:
    """A :class:`Tagger` with ``n_heads`` heads trained on ``name``; (model, accuracy, test data).

    ``name`` is ``prev_and_match`` or ``prev_and_first``; the held-out accuracy
    counts the positions i ≥ 1.
    """
    if name not in ("prev_and_match", "prev_and_first"):
        raise ValueError(f"the tagger's tasks are prev_and_match and prev_and_first, not {name!r}")
    train, test = _split(name)
    s = SETUP[name]
    model = Tagger(train.vocab, train.n_out, int(s["T"]), n_heads=n_heads, seed=seed)
    fit(model, train, steps=int(s["steps"]), batch=BATCH, lr=s["lr"], seed=seed)
    return model, accuracy(model, test), test


def head_focus(model: Tagger, data: Sequences) -> np.ndarray:
    """Mean weight each head puts on the previous position and on the cue, ``(n_heads, 2)``.

    Averaged over the held-out sequences and the positions i ≥ 2 (where the
    previous position i − 1 and the cue at position 0 are different places).
    """
    with torch.no_grad(), eval_mode(model):
        model(data.x)
    alpha = model.attn.alpha
    assert alpha is not None
    T = alpha.shape[-1]
    i = torch.arange(2, T)
    prev = alpha[:, :, i, i - 1].mean(dim=(0, 2))
    cue = alpha[:, :, i, 0].mean(dim=(0, 2))
    return torch.stack([prev, cue], dim=1).double().numpy()
