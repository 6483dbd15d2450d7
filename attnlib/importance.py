"""Importance measures for a trained seq2seq, to set beside the attention weights α_ti.

Attention shows where a decoder step *looked*. Whether the output *depended* on
what it looked at is a different question, and this module asks it three ways:

* **Leave-one-out** (:func:`leave_one_out`): blank source position i (its input
  embedding replaced by the ``<pad>`` embedding, a vector of zeros, so the
  length is kept) and measure how much the log-probability of output token y_t
  drops. One number per (t, i), the shape of α.
* **Gradient × input** (:func:`grad_times_input`): the first-order estimate of
  the same thing, |Σ_k ∂ log p(y_t) / ∂x_ik · x_ik| over the embedding
  components of position i.
* **Interventions on α** (:func:`attention_intervention`,
  :func:`intervention_effect`): decode with every α_t replaced by the uniform
  distribution over the real positions, or by a random permutation of itself
  (after Jain & Wallace, 2019), and measure how much the output changes. An
  intervention is a :class:`attnlib.models.ScoreEdit` passed as ``edit=``;
  the model itself is never changed.

All measures are computed on the model's *own* output (teacher-forced on what it
produced greedily), so they explain the decision the model made, right or wrong.

Examples
--------
>>> from attnlib import pretrained, importance
>>> model, task, *_ = pretrained.load("reverse")
>>> ex = importance.explain(model, task, "abcde")
>>> ex.alpha.shape == ex.loo.shape == ex.grad_input.shape   # (T_y, T_x)
True
>>> importance.intervention_effect(model, task, "uniform").exact_after   # ≈ 0

See Also
--------
The chapter "Looked at is not caused by" (chapters/09_interpretability).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray
from torch import Tensor

from attnlib.models import ScoreEdit, Seq2Seq
from attnlib.runtime import eval_mode, torch_threads
from attnlib.tasks import Task
from attnlib.train import encode_pairs, evaluate, translate
from attnlib.vocab import BOS_ID, EOS_ID, PAD_ID

__all__ = [
    "MEASURES",
    "Agreement",
    "Explanation",
    "Intervention",
    "agreement",
    "agreement_table",
    "attention_intervention",
    "explain",
    "grad_times_input",
    "intervention_effect",
    "leave_one_out",
    "most_disagreeing",
    "normalise_rows",
    "rank_correlation",
    "target_log_probs",
]

FloatArray = NDArray[np.float64]
Mode = Literal["uniform", "permute"]

#: The three maps an :class:`Explanation` holds, with the names the chapter prints.
MEASURES: dict[str, str] = {
    "alpha": "attention α",
    "loo": "leave-one-out",
    "grad_input": "gradient × input",
}


# --------------------------------------------------------------------------- inputs
def _as_row(ids: Tensor | Sequence[int], name: str) -> Tensor:
    """Token ids as a (1, T) long tensor; accepts (T,) or (1, T)."""
    x = torch.as_tensor(ids, dtype=torch.long)
    if x.dim() == 1:
        x = x.unsqueeze(0)
    if x.dim() != 2 or x.shape[0] != 1 or x.shape[1] == 0:
        raise ValueError(
            f"{name} must be the ids of one sequence, shape (T,) or (1, T) with T ≥ 1, "
            f"got shape {tuple(x.shape)}"
        )
    return x


def _teacher_inputs(tgt_out: Tensor) -> Tensor:
    """``<bos>`` y_1 … y_{T_y-1} from y_1 … y_{T_y}: the decoder inputs under teacher forcing."""
    tgt_in = torch.cat([torch.full_like(tgt_out[:, :1], BOS_ID), tgt_out[:, :-1]], dim=1)
    return tgt_in.masked_fill(tgt_in == EOS_ID, PAD_ID)


def target_log_probs(model: Seq2Seq, src: Tensor, tgt_out: Tensor) -> Tensor:
    """log p(y_t | y_<t, x) of every target token, teacher-forced.

    Parameters
    ----------
    model : Seq2Seq
    src : (B, T_x) long
        Padded source ids (``<eos>`` included).
    tgt_out : (B, T_y) long
        The tokens whose probability is wanted, y_1 … y_{T_y} (``<eos>`` last).

    Returns
    -------
    logp : (B, T_y)
        Differentiable; the caller chooses ``torch.no_grad`` or not.

    See Also
    --------
    The chapter "Looked at is not caused by" (chapters/09_interpretability).
    """
    logits, _ = model(src, _teacher_inputs(tgt_out))
    logp = torch.log_softmax(logits, dim=-1)
    return logp.gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1)


@contextlib.contextmanager
def _embedding_hook(model: Seq2Seq, edit: Callable[[Tensor], Tensor]) -> Iterator[None]:
    """Pass the encoder's input embeddings x (B, T_x, emb) through ``edit`` while active."""
    handle = model.encoder.embedding.register_forward_hook(lambda _module, _inputs, out: edit(out))
    try:
        yield
    finally:
        handle.remove()


# --------------------------------------------------------------------------- measures
def leave_one_out(
    model: Seq2Seq, src: Tensor | Sequence[int], tgt_out: Tensor | Sequence[int]
) -> FloatArray:
    """Drop in log p(y_t) when source position i is blanked: the leave-one-out map.

    Position i is blanked by replacing its input embedding x_i with zeros (the
    ``<pad>`` embedding) before the encoder reads it; every other position and
    the length T_x stay as they were. All T_x blanked copies and the original
    run as one batch.

    Parameters
    ----------
    model : Seq2Seq
    src : (T_x,) or (1, T_x) ids
        One source, ``<eos>`` included.
    tgt_out : (T_y,) or (1, T_y) ids
        The output to explain, ``<eos>`` included (usually the model's own).

    Returns
    -------
    loo : (T_y, T_x) ndarray
        ``loo[t, i] = log p(y_t | x) − log p(y_t | x without x_i)``: positive
        where position i supported output t, negative where blanking it helped.

    See Also
    --------
    The chapter "Looked at is not caused by" (chapters/09_interpretability).
    """
    x, y = _as_row(src, "src"), _as_row(tgt_out, "tgt_out")
    T_x = x.shape[1]
    keep = torch.ones(T_x + 1, T_x, 1)  # row 0: the original; row 1 + i: position i blanked
    keep[torch.arange(1, T_x + 1), torch.arange(T_x)] = 0.0
    with (
        eval_mode(model),
        torch_threads(1),
        torch.no_grad(),
        _embedding_hook(model, lambda out: out * keep),
    ):
        logp = target_log_probs(model, x.expand(T_x + 1, -1), y.expand(T_x + 1, -1))
    return (logp[0:1] - logp[1:]).T.double().numpy()  # (T_y, T_x)


def grad_times_input(
    model: Seq2Seq, src: Tensor | Sequence[int], tgt_out: Tensor | Sequence[int]
) -> FloatArray:
    """Gradient × input: |Σ_k ∂ log p(y_t)/∂x_ik · x_ik| for every (t, i).

    The first-order Taylor estimate of how much log p(y_t) would change if the
    embedding x_i of position i were set to zero, which is what
    :func:`leave_one_out` measures exactly. One backward pass serves all T_y
    steps (row t of a batch of T_y copies carries the loss of step t).

    Parameters
    ----------
    model : Seq2Seq
    src : (T_x,) or (1, T_x) ids
    tgt_out : (T_y,) or (1, T_y) ids

    Returns
    -------
    gxi : (T_y, T_x) ndarray, non-negative

    See Also
    --------
    The chapter "Looked at is not caused by" (chapters/09_interpretability).
    """
    x, y = _as_row(src, "src"), _as_row(tgt_out, "tgt_out")
    T_y = y.shape[1]
    store: dict[str, Tensor] = {}

    def leaf(out: Tensor) -> Tensor:
        store["x"] = out.detach().requires_grad_(True)  # (T_y, T_x, emb)
        return store["x"]

    with eval_mode(model), torch_threads(1), torch.enable_grad(), _embedding_hook(model, leaf):
        logp = target_log_probs(model, x.expand(T_y, -1), y.expand(T_y, -1))  # (T_y, T_y)
        (grad,) = torch.autograd.grad(logp.diagonal().sum(), store["x"])
    return (grad * store["x"].detach()).sum(-1).abs().double().numpy()  # (T_y, T_x)


@dataclass(frozen=True)
class Explanation:
    """One greedy output with three importance maps over the source, each (T_y, T_x).

    Attributes
    ----------
    src : list of str
        Source tokens, ``<eos>`` included (the T_x column labels).
    out : list of str
        Output tokens, ``<eos>`` included (the T_y row labels).
    alpha : (T_y, T_x) ndarray
        The attention weights α_ti of greedy decoding.
    loo : (T_y, T_x) ndarray
        :func:`leave_one_out` on the model's own output.
    grad_input : (T_y, T_x) ndarray
        :func:`grad_times_input` on the model's own output.
    """

    src: list[str]
    out: list[str]
    alpha: FloatArray
    loo: FloatArray
    grad_input: FloatArray

    def measure(self, name: str) -> FloatArray:
        """The map called ``name``: one of :data:`MEASURES` ("alpha", "loo", "grad_input")."""
        if name not in MEASURES:
            raise ValueError(f"measure must be one of {', '.join(MEASURES)}, got {name!r}")
        return getattr(self, name)


def explain(model: Seq2Seq, task: Task, source: str | Sequence[str]) -> Explanation:
    """Decode one source greedily and compute α, leave-one-out and gradient × input.

    Parameters
    ----------
    model : Seq2Seq
        A model with attention.
    task : Task
        For the vocabularies.
    source : str or sequence of str
        Text (split with :meth:`attnlib.tasks.Task.tokenize`) or tokens.

    Returns
    -------
    Explanation

    See Also
    --------
    The chapter "Looked at is not caused by" (chapters/09_interpretability).
    """
    if not model.has_attention:
        raise ValueError("explain needs a model with attention; this decoder has no α_ti")
    [tr] = translate(model, task, [source])
    src_ids = task.src_vocab.encode(tr.src[:-1])
    out_ids = task.tgt_vocab.encode(tr.out, eos=False)
    assert tr.alpha is not None
    return Explanation(
        src=tr.src,
        out=tr.out,
        alpha=tr.alpha.astype(np.float64),
        loo=leave_one_out(model, src_ids, out_ids),
        grad_input=grad_times_input(model, src_ids, out_ids),
    )


# --------------------------------------------------------------------------- comparing maps
def normalise_rows(m: ArrayLike) -> FloatArray:
    """|m| scaled so each row sums to 1 (an all-zero row stays zero): maps on one colour scale.

    Parameters
    ----------
    m : (T_y, T_x)

    Returns
    -------
    (T_y, T_x) ndarray
    """
    a = np.abs(np.asarray(m, dtype=float))
    if a.ndim != 2:
        raise ValueError(f"expected a map of shape (T_y, T_x), got shape {a.shape}")
    total = a.sum(axis=1, keepdims=True)
    return np.divide(a, total, out=np.zeros_like(a), where=total > 0)


def _ranks(v: FloatArray) -> FloatArray:
    """Ranks 1 … n with ties given their average rank."""
    order = np.argsort(v, kind="stable")
    ranks = np.empty(v.size)
    ranks[order] = np.arange(1, v.size + 1)
    for value in np.unique(v):
        tie = v == value
        if tie.sum() > 1:
            ranks[tie] = ranks[tie].mean()
    return ranks


def rank_correlation(a: ArrayLike, b: ArrayLike) -> float:
    """Spearman's rank correlation of two importance vectors over the same T_x positions.

    Parameters
    ----------
    a, b : (T_x,)

    Returns
    -------
    float in [-1, 1]
        1 if both rank the positions the same way, -1 if in opposite ways;
        0 if either vector is constant (no ranking to compare).
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.ndim != 1 or x.shape != y.shape or x.size < 2:
        raise ValueError(
            f"rank_correlation expects two vectors of the same length T_x ≥ 2, "
            f"got shapes {x.shape} and {y.shape}"
        )
    rx, ry = _ranks(x) - (x.size + 1) / 2, _ranks(y) - (y.size + 1) / 2
    denom = float(np.sqrt((rx**2).sum() * (ry**2).sum()))
    return float((rx * ry).sum() / denom) if denom > 0 else 0.0


class Agreement(NamedTuple):
    """How far two importance maps agree, step by step.

    Attributes
    ----------
    top1 : float
        Fraction of decoder steps t whose most important position is the same
        in both maps.
    spearman : float
        Mean over steps of the rank correlation of the two rows.
    n_steps : int
        Number of decoder steps compared.
    """

    top1: float
    spearman: float
    n_steps: int


def agreement(a: ArrayLike, b: ArrayLike) -> Agreement:
    """Compare two (T_y, T_x) importance maps row by row (magnitudes: |a| and |b|).

    Parameters
    ----------
    a, b : (T_y, T_x)
        E.g. α and the leave-one-out map of one example; several examples can
        be stacked along T_y if they share T_x, or use :func:`agreement_table`.

    Returns
    -------
    Agreement

    See Also
    --------
    The chapter "Looked at is not caused by" (chapters/09_interpretability).
    """
    x, y = np.abs(np.asarray(a, dtype=float)), np.abs(np.asarray(b, dtype=float))
    if x.ndim != 2 or x.shape != y.shape:
        raise ValueError(
            f"agreement expects two maps of the same shape (T_y, T_x), got {x.shape} and {y.shape}"
        )
    top1 = float(np.mean(x.argmax(axis=1) == y.argmax(axis=1)))
    rho = float(np.mean([rank_correlation(r, s) for r, s in zip(x, y, strict=True)]))
    return Agreement(top1, rho, x.shape[0])


def _pairs() -> list[tuple[str, str]]:
    names = list(MEASURES)
    return [(a, b) for k, a in enumerate(names) for b in names[k + 1 :]]


def agreement_table(explanations: Sequence[Explanation]) -> dict[tuple[str, str], Agreement]:
    """Agreement of every pair of measures, pooled over the steps of many examples.

    Parameters
    ----------
    explanations : sequence of Explanation

    Returns
    -------
    dict
        ``{("alpha", "loo"): Agreement, ("alpha", "grad_input"): …,
        ("loo", "grad_input"): …}``; each pools every decoder step of every
        example (steps weighted equally).

    See Also
    --------
    The chapter "Looked at is not caused by" (chapters/09_interpretability).
    """
    if len(explanations) == 0:
        raise ValueError("agreement_table needs at least one Explanation")
    table = {}
    for a, b in _pairs():
        parts = [agreement(ex.measure(a), ex.measure(b)) for ex in explanations]
        n = sum(p.n_steps for p in parts)
        table[(a, b)] = Agreement(
            top1=sum(p.top1 * p.n_steps for p in parts) / n,
            spearman=sum(p.spearman * p.n_steps for p in parts) / n,
            n_steps=n,
        )
    return table


def most_disagreeing(
    explanations: Sequence[Explanation], a: str = "alpha", b: str = "loo"
) -> tuple[int, int]:
    """The (example, step) where maps ``a`` and ``b`` disagree most.

    Among steps whose most important position differs between the two maps,
    the one with the largest share of |b| on positions that ``a`` gives less
    weight than ``b``'s top position is chosen: concretely, the largest
    ``norm(b)[t, argmax b] − norm(a)[t, argmax b]`` (row-normalised maps), i.e.
    the step where the position that mattered most was looked at least.
    Ties go to the earliest.

    Returns
    -------
    (k, t) : tuple of int
        Index into ``explanations`` and decoder step (0-based).

    Raises
    ------
    ValueError
        If the two maps pick the same top position at every step.
    """
    best, where = -np.inf, None
    for k, ex in enumerate(explanations):
        na, nb = normalise_rows(ex.measure(a)), normalise_rows(ex.measure(b))
        for t in range(na.shape[0]):
            i_b = int(nb[t].argmax())
            if int(na[t].argmax()) == i_b:
                continue
            gap = nb[t, i_b] - na[t, i_b]
            if gap > best:
                best, where = gap, (k, t)
    if where is None:
        raise ValueError(f"{a} and {b} pick the same top position at every step of every example")
    return where


# --------------------------------------------------------------------------- interventions
class AttentionIntervention:
    """The :class:`~attnlib.models.ScoreEdit` made by :func:`attention_intervention`.

    Holds its own random generator, so one object gives one reproducible
    sequence of permutations; make a new one (same seed) to repeat it.
    """

    def __init__(self, mode: Mode, seed: int = 0) -> None:
        if mode not in ("uniform", "permute"):
            raise ValueError(f"mode must be 'uniform' or 'permute', got {mode!r}")
        self.mode, self.seed = mode, seed
        self._gen = torch.Generator().manual_seed(seed)

    def __repr__(self) -> str:
        return f"attention_intervention({self.mode!r}, seed={self.seed})"

    def __call__(self, e: Tensor, *, query: Tensor, mask: Tensor) -> Tensor:
        """New scores (B, T_x): all equal (uniform α), or e permuted within each row's real part."""
        if self.mode == "uniform":
            return torch.zeros_like(e)
        out = e.clone()
        for b, L in enumerate(mask.sum(dim=1).tolist()):
            out[b, :L] = e[b, torch.randperm(L, generator=self._gen)]
        return out


def attention_intervention(mode: Mode, *, seed: int = 0) -> ScoreEdit:
    """An edit that gives every decoder step altered weights α_t; c_t follows from them.

    ``"uniform"``: α_ti = 1/T_x on every real position (all scores made equal).
    ``"permute"``: the weights of each step are shuffled among the real
    positions by a random permutation (a new one per step and example, drawn
    from ``seed``), so the same multiset of weights lands on other h_i.
    Padding keeps weight 0. The change is made on the scores e_ti and passed
    as ``edit=`` to teacher forcing (``model(src, tgt_in, edit=...)``), greedy
    decoding (``model.greedy``) or :func:`attnlib.train.evaluate`; everything
    else in the model is untouched.

    Parameters
    ----------
    mode : {"uniform", "permute"}
    seed : int
        Seeds the permutations.

    Returns
    -------
    ScoreEdit

    Examples
    --------
    >>> metrics = evaluate(model, task, "test", edit=attention_intervention("uniform"))

    See Also
    --------
    The chapter "Looked at is not caused by" (chapters/09_interpretability).
    """
    return AttentionIntervention(mode, seed)


class Intervention(NamedTuple):
    """What an intervention on α did to a model's held-out output.

    Attributes
    ----------
    mode : str
        "uniform" or "permute".
    exact_before, exact_after : float
        Greedy exact match on the split without and with the intervention.
    tvd : float
        Mean total variation distance ½ Σ_v |p(v) − q(v)| between the output
        distributions ỹ_t without (p) and with (q) the intervention, over every
        target step, teacher-forced on the reference output (0: identical, 1:
        disjoint).
    flipped : float
        Fraction of those steps whose most probable token changes.
    n : int
        Number of examples.
    """

    mode: str
    exact_before: float
    exact_after: float
    tvd: float
    flipped: float
    n: int


def intervention_effect(
    model: Seq2Seq,
    task: Task,
    mode: Mode,
    *,
    split: str = "test",
    n: int | None = None,
    seed: int = 0,
) -> Intervention:
    """Measure how much replacing α (uniform or permuted) changes the model's output.

    Parameters
    ----------
    model : Seq2Seq
    task : Task
    mode : {"uniform", "permute"}
        See :func:`attention_intervention`.
    split : {"test", "valid", "train"}
    n : int, optional
        Use only the first ``n`` pairs of the split (default: all of them).
    seed : int
        Seeds the permutations.

    Returns
    -------
    Intervention

    See Also
    --------
    The chapter "Looked at is not caused by" (chapters/09_interpretability).
    """
    pairs = task.split(split)
    if n is not None:
        if not (isinstance(n, int) and n >= 1):
            raise ValueError(f"n must be a whole number ≥ 1, got {n!r}")
        pairs = pairs[:n]
        task = dataclasses.replace(task, **{split: pairs})
    if model.attention is None:
        raise ValueError("this model has no attention to intervene on (decoder='none')")
    before = evaluate(model, task, split).exact_match
    after = evaluate(model, task, split, edit=attention_intervention(mode, seed=seed))
    data = encode_pairs(task, pairs)
    with eval_mode(model), torch_threads(1), torch.no_grad():
        p = torch.softmax(model(data.src, data.tgt_in)[0], dim=-1)
        edit = attention_intervention(mode, seed=seed)
        q = torch.softmax(model(data.src, data.tgt_in, edit=edit)[0], dim=-1)
    real = data.tgt_out != PAD_ID  # (N, T_y)
    tvd = 0.5 * (p - q).abs().sum(-1)[real]
    flipped = (p.argmax(-1) != q.argmax(-1))[real].float()
    return Intervention(
        mode=mode,
        exact_before=float(before),
        exact_after=float(after.exact_match),
        tvd=float(tvd.mean()),
        flipped=float(flipped.mean()),
        n=len(data),
    )
