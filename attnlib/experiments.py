"""Small, reproducible experiments behind the answers of the question bank.

Each function here settles one claim of Part III by running something: a
count of the matrix products a computation runs (:func:`count_products`; a
timing, :func:`time_call`, is for display and benchmarks only, never a check:
it depends on what else the machine runs), a fitted growth exponent, a search
for the score gap at which a
float softmax returns exactly 0 and 1, gradients through a soft and a hard
selection, a fit of a tanh and a linear score, weights that differ but give
the same c_t. They use the numpy reference in :mod:`attnlib.core` (and torch
only where a score function is trained), take a ``seed`` where anything is
random, and return plain numbers or named tuples that a chapter glues into its
prose and :mod:`tests.test_claims` checks.

See Also
--------
The chapters "True or false" (chapters/true_or_false), "Spot the error"
(chapters/spot_the_error), "Why?" (chapters/why) and "Edge cases"
(chapters/edge_cases).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from attnlib.core import FloatArray, additive_scores, context, softmax

__all__ = [
    "GrowthFit",
    "PointerFit",
    "Products",
    "SelectionRun",
    "all_scores",
    "count_products",
    "exact_gap",
    "exact_gap_at",
    "fit_growth",
    "fit_pointer_scores",
    "linear_scores",
    "numeric_gradient",
    "random_encoder",
    "same_context_weights",
    "selection_loss",
    "time_call",
    "time_rnn",
    "time_scores",
    "train_selection",
]


# --------------------------------------------------------------------------- growth and timing
class GrowthFit(NamedTuple):
    """A power law ``y ≈ prefactor · x ** exponent`` fitted on log–log axes.

    Attributes
    ----------
    exponent : float
        The slope of log y against log x.
    prefactor : float
        exp of the intercept.
    """

    exponent: float
    prefactor: float

    def predict(self, x: ArrayLike) -> FloatArray:
        """The fitted ``prefactor · x ** exponent`` at ``x``."""
        return self.prefactor * np.asarray(x, dtype=float) ** self.exponent


def fit_growth(x: ArrayLike, y: ArrayLike) -> GrowthFit:
    """Fit ``y ≈ a · x**b`` by least squares on log–log axes.

    Parameters
    ----------
    x, y : (n,)
        Positive sizes and measurements (n ≥ 2, at least two distinct x).

    Returns
    -------
    GrowthFit

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 8.
    """
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    if xa.shape != ya.shape or xa.ndim != 1:
        raise ValueError(
            f"x and y must be two vectors of one length, got shapes {xa.shape} and {ya.shape}"
        )
    if np.any(xa <= 0) or np.any(ya <= 0):
        raise ValueError("a power-law fit needs positive x and y")
    if np.unique(xa).size < 2:
        raise ValueError("a power-law fit needs at least two distinct sizes x")
    b, log_a = np.polyfit(np.log(xa), np.log(ya), 1)
    return GrowthFit(exponent=float(b), prefactor=float(np.exp(log_a)))


def all_scores(
    T_x: int, T_y: int, *, d_s: int = 16, d_h: int = 16, d_a: int = 16, seed: int = 0
) -> FloatArray:
    """Every score e_ti of a decoding: T_y decoder states against T_x encoder states.

    Random s_{t-1} (one row per step t), h and parameters; the call to
    :func:`attnlib.additive_scores` is the work attention adds to a seq2seq.

    Returns
    -------
    e : (T_y, T_x)

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 8.
    """
    rng = np.random.default_rng(seed)
    s_prev = rng.normal(size=(T_y, d_s))
    h = rng.normal(size=(T_x, d_h))
    W_a, U_a, v_a = rng.normal(size=(d_a, d_s)), rng.normal(size=(d_a, d_h)), rng.normal(size=d_a)
    return np.asarray(additive_scores(s_prev, h, W_a, U_a, v_a), dtype=np.float64)


class Products(NamedTuple):
    """The matrix products a computation ran, counted as it ran them.

    Attributes
    ----------
    calls : int
        Matrix products run (matrix–matrix, matrix–vector, batched, vector dot).
    multiply_adds : int
        Their multiply-adds: for each, the entries of its result times the length of
        the sums that make them.
    """

    calls: int
    multiply_adds: int


#: torch's matrix products, and the argument whose last dimension is the length of their sums.
_PRODUCTS = {
    "mm": 0,
    "mv": 0,
    "bmm": 0,
    "dot": 0,
    "vdot": 0,
    "addmm": 1,
    "addmv": 1,
    "baddbmm": 1,
    "addbmm": 1,
}


def count_products(fn: Callable[[], object]) -> Products:
    """Run ``fn()`` and count the matrix products torch runs in it, and their multiply-adds.

    Every operation torch executes passes through a dispatch mode here (below
    ``nn.Linear``, ``@`` or a GRU, which all end in these products), so the
    count is what the code runs, not a formula of it; elementwise work (sums,
    ``tanh``, the softmax) is not counted. A count is the same on every run and
    every machine, however busy: what a claim about cost can rest on, where a
    clock (:func:`time_call`) cannot.

    Parameters
    ----------
    fn : callable
        Runs the computation (its result is discarded).

    Returns
    -------
    Products

    See Also
    --------
    The chapters "True or false" (chapters/true_or_false), statement 8, and
    "Gradient flow and cost" (chapters/gradient_flow_and_cost).
    """
    import math

    from torch.utils._python_dispatch import TorchDispatchMode

    class Counter(TorchDispatchMode):
        calls = 0
        multiply_adds = 0

        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            if name in _PRODUCTS:
                summed = args[_PRODUCTS[name]].shape[-1]
                self.calls += 1
                self.multiply_adds += math.prod(out.shape) * int(summed)
            return out

    with Counter() as counter:
        fn()
    return Products(counter.calls, counter.multiply_adds)


def time_call(fn: Callable[[], object], repeats: int = 5) -> float:
    """The fastest of ``repeats`` wall-clock runs of ``fn()``, in seconds.

    The minimum is the measurement least disturbed by other processes. For display
    and benchmarks (``bench/``): a time depends on what else the machine runs, so no
    check rests on it; :func:`count_products` counts what the same call computes.
    """
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def time_scores(
    sizes: Sequence[tuple[int, int]], *, d_a: int = 16, repeats: int = 5, seed: int = 0
) -> FloatArray:
    """Seconds to compute all T_y × T_x additive scores, for each ``(T_x, T_y)``.

    Inputs are drawn once per size, outside the timed region; the time covers
    :func:`attnlib.additive_scores` on ``s_prev : (T_y, d_s)`` and ``h : (T_x, d_h)``.

    Returns
    -------
    seconds : (len(sizes),)

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 8.
    """
    rng = np.random.default_rng(seed)
    out = []
    for T_x, T_y in sizes:
        s_prev, h = rng.normal(size=(T_y, d_a)), rng.normal(size=(T_x, d_a))
        W_a, U_a = rng.normal(size=(d_a, d_a)), rng.normal(size=(d_a, d_a))
        v_a = rng.normal(size=d_a)
        out.append(time_call(lambda: additive_scores(s_prev, h, W_a, U_a, v_a), repeats))  # noqa: B023
    return np.array(out)


def _rnn_run(x: FloatArray, W: FloatArray, U: FloatArray) -> FloatArray:
    s = np.zeros(W.shape[0])
    for x_t in x:
        s = np.tanh(W @ s + U @ x_t)
    return s


def time_rnn(lengths: Sequence[int], *, d: int = 16, repeats: int = 5, seed: int = 0) -> FloatArray:
    """Seconds for a plain tanh RNN of size ``d`` to read ``n`` inputs, for each ``n``.

    Encoding T_x tokens and decoding T_y of them costs T_x + T_y such steps.

    Returns
    -------
    seconds : (len(lengths),)

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 8.
    """
    rng = np.random.default_rng(seed)
    W, U = rng.normal(size=(d, d)) / np.sqrt(d), rng.normal(size=(d, d)) / np.sqrt(d)
    out = []
    for n in lengths:
        x = rng.normal(size=(n, d))
        out.append(time_call(lambda: _rnn_run(x, W, U), repeats))  # noqa: B023
    return np.array(out)


# --------------------------------------------------------------------------- floating point
def exact_gap(
    dtype: type[np.floating] | np.dtype, which: Literal["one", "zero"], *, tol: float = 1e-6
) -> float:
    """The smallest score gap at which a two-position softmax gives exactly 1 or 0.

    For scores ``e = (0, -g)`` the exact weights are 1/(1 + e^{-g}) and
    e^{-g}/(1 + e^{-g}), strictly inside (0, 1) for every finite g. In floating
    point the first rounds to exactly 1.0 once e^{-g} is below half a unit in
    the last place, and the second becomes exactly 0.0 once e^{-g} underflows.
    This bisects on g with :func:`attnlib.softmax` itself.

    Parameters
    ----------
    dtype : numpy floating type
        ``np.float32`` or ``np.float64`` (the scores are cast to it).
    which : {"one", "zero"}
        Search for α_t1 == 1.0 exactly, or for α_t2 == 0.0 exactly.
    tol : float
        Width of the final bracket.

    Returns
    -------
    g : float
        The upper end of the final bracket: at this gap the event happens, at
        ``g - tol`` it does not.

    See Also
    --------
    The chapter "Edge cases" (chapters/edge_cases), case 4.
    """
    return exact_gap_at(2, which, dtype=dtype, tol=tol)


def exact_gap_at(
    T_x: int,
    which: Literal["one", "zero"] = "one",
    *,
    dtype: type[np.floating] | np.dtype = np.float64,
    tol: float = 1e-6,
) -> float:
    """The smallest gap g at which a softmax of the T_x scores (0, −g, …, −g) is exactly 1 or 0.

    The generalisation of :func:`exact_gap` (which is ``T_x = 2``) to more
    positions. The weight of the top position, 1 / (1 + (T_x − 1) e^{−g}),
    reads exactly 1.0 once the other T_x − 1 exponentials, *added up*, no
    longer change the denominator's 1, so the gap it needs grows with T_x
    (roughly like 36.7 + ln(T_x − 1) in float64; the exact step depends on the
    order in which the sum is taken). A low weight e^{−g} / (1 + …) is exactly
    0.0 once e^{−g} underflows, at the same gap for every T_x.

    Parameters
    ----------
    T_x : int
        Number of positions (≥ 2).
    which : {"one", "zero"}
        Search for α_t1 == 1.0 exactly, or for α_t2 == 0.0 exactly.
    dtype : numpy floating type
    tol : float
        Width of the final bracket.

    Returns
    -------
    g : float
        The upper end of the final bracket: at this gap the event happens, at
        ``g - tol`` it does not.

    See Also
    --------
    The chapter "Why the softmax denominator is not optional" (chapters/softmax).
    """
    dt = np.dtype(dtype)
    if dt.kind != "f":
        raise TypeError(f"dtype must be a floating type, got {dt}")
    if which not in ("one", "zero"):
        raise ValueError(f"which must be 'one' or 'zero', got {which!r}")
    if isinstance(T_x, bool) or not isinstance(T_x, int | np.integer) or T_x < 2:
        raise ValueError(f"T_x must be a whole number ≥ 2, got {T_x!r}")

    def happens(g: float) -> bool:
        e = np.full(int(T_x), -g, dtype=dt)
        e[0] = 0.0
        alpha = softmax(e)
        return bool(alpha[0] == 1.0) if which == "one" else bool(alpha[1] == 0.0)

    lo, hi = 0.0, 1.0
    while not happens(hi):
        lo, hi = hi, 2 * hi
        if hi > 1e6:
            raise RuntimeError(f"no gap below 1e6 makes the weight exactly {which} in {dt}")
    while hi - lo > tol:
        mid = (lo + hi) / 2
        if happens(mid):
            hi = mid
        else:
            lo = mid
    return hi


# --------------------------------------------------------------------------- soft vs hard selection
def selection_loss(
    e: ArrayLike, h: ArrayLike, target: ArrayLike, kind: Literal["soft", "hard"]
) -> float:
    """Squared distance between c_t and a target vector, with soft or hard weights.

    ``kind="soft"`` uses α = softmax(e); ``kind="hard"`` puts all weight on
    argmax_i e_ti (a one-hot α), which is what "just pick the best h_i" means.

    See Also
    --------
    The chapter "Why?" (chapters/why), question 3.
    """
    e = np.asarray(e, dtype=float)
    if kind == "soft":
        alpha = softmax(e)
    elif kind == "hard":
        alpha = np.zeros_like(e)
        alpha[int(np.argmax(e))] = 1.0
    else:
        raise ValueError(f"kind must be 'soft' or 'hard', got {kind!r}")
    c = context(alpha, h)
    return float(np.sum((c - np.asarray(target, dtype=float)) ** 2))


def numeric_gradient(
    f: Callable[[FloatArray], float], x: ArrayLike, step: float = 1e-5
) -> FloatArray:
    """Central finite differences of a scalar function: nudge each entry of ``x``.

    See Also
    --------
    The chapter "Why?" (chapters/why), question 3.
    """
    x = np.array(x, dtype=float)
    grad = np.zeros_like(x)
    for k in range(x.size):
        up, down = x.copy(), x.copy()
        up.flat[k] += step
        down.flat[k] -= step
        grad.flat[k] = (f(up) - f(down)) / (2 * step)
    return grad


class SelectionRun(NamedTuple):
    """The history of :func:`train_selection`.

    Attributes
    ----------
    loss : (steps + 1,)
        Loss before each update and after the last one.
    alpha : (T_x,)
        The final weights (soft, or one-hot for ``kind="hard"``).
    grad_norm : (steps,)
        Size of the gradient each update used.
    """

    loss: FloatArray
    alpha: FloatArray
    grad_norm: FloatArray


def train_selection(
    h: ArrayLike,
    target_index: int,
    kind: Literal["soft", "hard"],
    *,
    steps: int = 100,
    lr: float = 1.0,
    e0: ArrayLike | None = None,
) -> SelectionRun:
    """Learn the scores e_t by gradient descent so that c_t matches h_target.

    The gradient is measured by finite differences (:func:`numeric_gradient`),
    the same way for both kinds, so nothing but the selection rule differs.

    Parameters
    ----------
    h : (T_x, d_h)
    target_index : int
        The position whose h_i the context vector should reproduce.
    kind : {"soft", "hard"}
    steps, lr : int, float
    e0 : (T_x,), optional
        Starting scores (default: all zero).

    See Also
    --------
    The chapter "Why?" (chapters/why), question 3.
    """
    h = np.asarray(h, dtype=float)
    target = h[target_index]
    e = np.zeros(h.shape[0]) if e0 is None else np.array(e0, dtype=float)

    def loss(scores: FloatArray) -> float:
        return selection_loss(scores, h, target, kind)

    losses, norms = [loss(e)], []
    for _ in range(steps):
        g = numeric_gradient(loss, e)
        norms.append(float(np.linalg.norm(g)))
        e = e - lr * g
        losses.append(loss(e))
    if kind == "soft":
        alpha = softmax(e)
    else:
        alpha = np.zeros_like(e)
        alpha[int(np.argmax(e))] = 1.0
    return SelectionRun(np.array(losses), np.asarray(alpha, dtype=np.float64), np.array(norms))


# --------------------------------------------------------------------------- tanh vs linear
def linear_scores(
    s_prev: ArrayLike, h: ArrayLike, W_a: ArrayLike, U_a: ArrayLike, v_a: ArrayLike
) -> FloatArray:
    """The additive score without its tanh: e_ti = v_a^T (W_a s_{t-1} + U_a h_i).

    Shapes as in :func:`attnlib.additive_scores`. The term v_a^T W_a s_{t-1} is
    the same for every position i, so softmax removes it: the weights cannot
    depend on the decoder state at all.

    See Also
    --------
    The chapter "Why?" (chapters/why), question 2.
    """
    s_prev, h = np.asarray(s_prev, dtype=float), np.asarray(h, dtype=float)
    W_a, U_a, v_a = (np.asarray(a, dtype=float) for a in (W_a, U_a, v_a))
    additive_scores(s_prev, h, W_a, U_a, v_a)  # the same shape checks and messages
    return ((s_prev @ W_a.T)[..., None, :] + h @ U_a.T) @ v_a


class PointerFit(NamedTuple):
    """Result of :func:`fit_pointer_scores`.

    Attributes
    ----------
    train_accuracy, test_accuracy : float
        Fraction of examples whose largest α_ti sits on the correct position,
        on the training batches of the last quarter of training and on
        held-out sequences.
    loss : (steps,)
        Training cross-entropy.
    """

    train_accuracy: float
    test_accuracy: float
    loss: FloatArray


def _pointer_batch(
    rng: np.random.Generator, E_h: FloatArray, E_s: FloatArray, n: int, T_x: int
) -> tuple[FloatArray, FloatArray, NDArray[np.int64]]:
    vocab = E_h.shape[0]
    tokens = np.stack([rng.choice(vocab, size=T_x, replace=False) for _ in range(n)])
    where = rng.integers(0, T_x, size=n)
    query = tokens[np.arange(n), where]
    return E_h[tokens], E_s[query], where


def fit_pointer_scores(
    kind: Literal["tanh", "linear"],
    *,
    T_x: int = 6,
    vocab: int = 12,
    d: int = 8,
    d_a: int = 16,
    steps: int = 100,
    batch: int = 64,
    n_test: int = 2000,
    lr: float = 0.1,
    seed: int = 0,
) -> PointerFit:
    """Train a score function on a lookup task and report held-out accuracy.

    Each example is T_x distinct tokens (h_i = a fixed random embedding of the
    token at i) and a query token s_{t-1} (another fixed embedding of one of
    them). The correct α puts its weight where the token matches the query, so
    the score must let s_{t-1} and h_i interact. Only the score parameters
    W_a, U_a, v_a are trained (Adam, cross-entropy on α).

    Parameters
    ----------
    kind : {"tanh", "linear"}
        v_a^T tanh(W_a s_{t-1} + U_a h_i), or the same without the tanh.
    T_x, vocab, d, d_a : int
        Positions, distinct tokens, size of h_i and s_{t-1}, shared space.
    steps, batch, n_test, lr, seed :
        Training length, batch size, held-out examples, Adam step, seed.

    Returns
    -------
    PointerFit
        Chance level is 1/T_x.

    See Also
    --------
    The chapter "Why?" (chapters/why), question 2.
    """
    import torch

    from attnlib._adam import Adam
    from attnlib.runtime import torch_threads

    if kind not in ("tanh", "linear"):
        raise ValueError(f"kind must be 'tanh' or 'linear', got {kind!r}")
    rng = np.random.default_rng(seed)
    E_h = rng.normal(size=(vocab, d))
    E_s = rng.normal(size=(vocab, d))
    test_rng = np.random.default_rng(seed + 10_000)
    with torch_threads(1):
        gen = torch.Generator().manual_seed(seed)
        W_a = torch.nn.Parameter(torch.randn(d_a, d, generator=gen, dtype=torch.float64) / d**0.5)
        U_a = torch.nn.Parameter(torch.randn(d_a, d, generator=gen, dtype=torch.float64) / d**0.5)
        v_a = torch.nn.Parameter(torch.randn(d_a, generator=gen, dtype=torch.float64) / d_a**0.5)
        params: list[torch.Tensor] = [W_a, U_a, v_a]
        adam = Adam(params, lr)
        act = torch.tanh if kind == "tanh" else (lambda z: z)

        def scores(h: FloatArray, s: FloatArray) -> torch.Tensor:
            ht, st = torch.from_numpy(h), torch.from_numpy(s)
            return act((st @ W_a.T)[:, None, :] + ht @ U_a.T) @ v_a  # (n, T_x)

        losses: list[float] = []
        correct, seen = 0, 0
        for _ in range(steps):
            h, s, where = _pointer_batch(rng, E_h, E_s, batch, T_x)
            e = scores(h, s)
            target = torch.from_numpy(where)
            loss = torch.nn.functional.cross_entropy(e, target)
            adam.step(torch.autograd.grad(loss, params))
            losses.append(loss.item())
            if len(losses) > 3 * steps // 4:
                correct += int((e.argmax(dim=1) == target).sum())
                seen += batch
        with torch.no_grad():
            h, s, where = _pointer_batch(test_rng, E_h, E_s, n_test, T_x)
            test_acc = float((scores(h, s).argmax(dim=1).numpy() == where).mean())
    return PointerFit(correct / max(seen, 1), test_acc, np.array(losses))


# --------------------------------------------------------------------------- weights are not proof
def same_context_weights(
    alpha: ArrayLike, h: ArrayLike, away_from: int | None = None, *, iters: int = 50
) -> FloatArray:
    """Different attention weights that give exactly the same c_t.

    Moves weight off position ``away_from`` (default: the largest α_ti) along
    directions that change neither c_t = Σ_i α_ti h_i nor Σ_i α_ti, as far as
    the weights stay non-negative. Such directions exist whenever the vectors
    (h_i, 1) are linearly dependent, e.g. when T_x > d_h + 1.

    Parameters
    ----------
    alpha : (T_x,)
        A distribution over the positions.
    h : (T_x, d_h)
    away_from : int, optional
    iters : int
        Rounds of "move until a weight hits 0, then continue on the rest".

    Returns
    -------
    alpha2 : (T_x,)
        Non-negative, sums to 1, ``context(alpha2, h) == context(alpha, h)`` up
        to rounding, with less weight (often none) on ``away_from``.

    Raises
    ------
    ValueError
        If no such direction exists for these h_i.

    See Also
    --------
    The chapter "Why?" (chapters/why), question 6.
    """
    a = np.array(alpha, dtype=float)
    H = np.asarray(h, dtype=float)
    context(a, H)  # checks the shapes and that alpha is a distribution
    k = int(np.argmax(a)) if away_from is None else int(away_from)
    constraints = np.vstack([H.T, np.ones(H.shape[0])])  # (d_h + 1, T_x)
    moved = False
    for _ in range(iters):
        free = a > 1e-15
        if a[k] <= 1e-15 or free.sum() < 2:
            break
        A = constraints[:, free]
        _, sv, Vt = np.linalg.svd(A)
        rank = int(np.sum(sv > 1e-10 * max(1.0, sv[0])))
        N = Vt[rank:].T  # null space of A, (n_free, n_null)
        if N.shape[1] == 0:
            break
        unit = (np.flatnonzero(free) == k).astype(float)
        d = -(N @ (N.T @ unit))
        if np.linalg.norm(d) < 1e-12:
            break
        full = np.zeros_like(a)
        full[free] = d
        neg = full < -1e-15
        step = float(np.min(a[neg] / -full[neg]))
        a = np.maximum(a + step * full, 0.0)
        a /= a.sum()
        moved = True
    if not moved:
        raise ValueError(
            "no weights other than alpha give this c_t: the h_i (with a 1 appended) are "
            f"linearly independent (T_x={H.shape[0]}, d_h={H.shape[1]}); it needs T_x > d_h + 1 "
            "or repeated states"
        )
    return a


# --------------------------------------------------------------------------- encoders and decoders
def random_encoder(
    tokens: Sequence[int],
    kind: Literal["rnn", "embedding"],
    *,
    vocab: int = 20,
    d_h: int = 8,
    seed: int = 0,
) -> FloatArray:
    """Encoder states h_i of an untrained encoder with fixed random weights.

    ``"embedding"`` returns the bare word embedding of each token (no context);
    ``"rnn"`` reads them with h_i = tanh(W h_{i-1} + U x_i), so every h_i
    depends on the tokens before it. Same seed, same weights.

    Returns
    -------
    h : (T_x, d_h)

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statements 1 and 9.
    """
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(vocab, d_h))
    W = rng.normal(size=(d_h, d_h)) / np.sqrt(d_h)
    U = rng.normal(size=(d_h, d_h)) / np.sqrt(d_h)
    ids = np.asarray(tokens, dtype=int)
    if ids.ndim != 1 or ids.size == 0 or ids.min() < 0 or ids.max() >= vocab:
        raise ValueError(
            f"tokens must be a non-empty list of ids in 0 … {vocab - 1}, got {tokens!r}"
        )
    x = E[ids]
    if kind == "embedding":
        return x
    if kind != "rnn":
        raise ValueError(f"kind must be 'rnn' or 'embedding', got {kind!r}")
    out, state = [], np.zeros(d_h)
    for x_i in x:
        state = np.tanh(W @ state + U @ x_i)
        out.append(state)
    return np.array(out)
