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
* **Adversarial weights** (:func:`adversarial_attention`): per decoder step,
  search for α' as far from α as possible (Jensen–Shannon divergence) while
  the step's output distribution stays within a tolerance (Jain & Wallace's
  key test, moved from a classifier to a decoder step).

Around them: :meth:`Explanation.content` (the maps without ``<eos>``),
:func:`blanking_effect` (what blanking ``<eos>`` does to h and to the output),
:func:`swap_s0` (does an answer reach the decoder through s_0 or through the
c_t?). :func:`attnlib.evidence.interpretability.check_claims` computes and checks
every claim of the chapter for one training seed. Models trained with frozen
uniform attention, Wiegreffe & Pinter's baseline, are recipes of
:mod:`attnlib.pretrained` (``pretrained.score_edit`` gives their edit).

It is one module of over a thousand lines because it is one chapter's question asked
four ways on the same :class:`Explanation`: the measures share its bookkeeping (the
real positions, the ``<eos>`` column, the decoded output they all explain), and a
reader compares them best side by side.

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
The chapter "Looked at is not caused by" (chapters/interpretability).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, cast

import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray
from torch import Tensor

from attnlib._adam import Adam
from attnlib.core import FloatArray
from attnlib.models import ScoreEdit, Seq2Seq, SourceMemory
from attnlib.runtime import eval_mode, torch_threads
from attnlib.tasks import Task
from attnlib.train import encode_pairs, evaluate, translate
from attnlib.vocab import BOS_ID, EOS_ID, PAD_ID, SPECIALS

__all__ = [
    "MEASURES",
    "Adversarial",
    "Agreement",
    "Blanking",
    "Explanation",
    "FixedScores",
    "Intervention",
    "Swap",
    "adversarial_attention",
    "agreement",
    "agreement_table",
    "attention_intervention",
    "blanking_effect",
    "explain",
    "grad_times_input",
    "intervention_effect",
    "jensen_shannon",
    "leave_one_out",
    "most_disagreeing",
    "normalise_rows",
    "rank_correlation",
    "special_top_share",
    "swap_s0",
    "target_log_probs",
]

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
    The chapter "Looked at is not caused by" (chapters/interpretability).
    """
    logits, _ = model(src, _teacher_inputs(tgt_out))
    logp = torch.log_softmax(logits, dim=-1)
    return logp.gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1)


@contextlib.contextmanager
def _embedding_hook(model: Seq2Seq, edit: Callable[[Tensor], Tensor]) -> Iterator[None]:
    """Pass the encoder's input embeddings x (B, T_x, emb) through ``edit`` while active."""
    embedding = cast(torch.nn.Module, model.encoder.embedding)
    handle = embedding.register_forward_hook(lambda _module, _inputs, out: edit(out))
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
    The chapter "Looked at is not caused by" (chapters/interpretability).
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
    The chapter "Looked at is not caused by" (chapters/interpretability).
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

    def content(self) -> Explanation:
        """The same maps on content tokens only: no ``<eos>`` column, no ``<eos>`` output step.

        The source's ``<eos>`` is special for leave-one-out: blanking it, the
        first input the backward GRU reads, perturbs every h_i (see
        :func:`blanking_effect`). Restricting the maps to the content tokens
        asks which *word* mattered most.

        Returns
        -------
        Explanation
            Rows and columns of special tokens (:data:`attnlib.vocab.SPECIALS`)
            removed; the values themselves are unchanged (computed on the whole input).
        """
        rows = [t for t, tok in enumerate(self.out) if tok not in SPECIALS]
        cols = [i for i, tok in enumerate(self.src) if tok not in SPECIALS]
        if not rows or not cols:
            raise ValueError("this explanation has no content token to keep")
        pick = np.ix_(rows, cols)
        return Explanation(
            src=[self.src[i] for i in cols],
            out=[self.out[t] for t in rows],
            alpha=self.alpha[pick],
            loo=self.loo[pick],
            grad_input=self.grad_input[pick],
        )


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
    The chapter "Looked at is not caused by" (chapters/interpretability).
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
    The chapter "Looked at is not caused by" (chapters/interpretability).
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
    The chapter "Looked at is not caused by" (chapters/interpretability).
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
    The chapter "Looked at is not caused by" (chapters/interpretability).
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
    The chapter "Looked at is not caused by" (chapters/interpretability).
    """
    task = _first(task, split, n)
    pairs = task.split(split)
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


def _first(task: Task, split: str, n: int | None) -> Task:
    """``task`` with split ``split`` cut to its first ``n`` pairs (all of them for None)."""
    if n is None:
        return task
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f"n must be a whole number ≥ 1, got {n!r}")
    cut: dict[str, Any] = {split: task.split(split)[:n]}
    return dataclasses.replace(task, **cut)


def _source_batch(task: Task, sources: Sequence[str | Sequence[str]]) -> Tensor:
    """Padded source ids (B, T_x), ``<eos>`` appended, from texts or token sequences."""
    if isinstance(sources, str) or len(sources) == 0:
        raise ValueError("sources must be a non-empty list of texts or token sequences")
    ids = [task.src_vocab.encode(task.tokenize(s) if isinstance(s, str) else s) for s in sources]
    src = torch.full((len(ids), max(len(i) for i in ids)), PAD_ID, dtype=torch.long)
    for b, row in enumerate(ids):
        src[b, : len(row)] = torch.tensor(row)
    return src


# --------------------------------------------------------------------------- special tokens
def special_top_share(explanations: Sequence[Explanation], name: str = "loo") -> float:
    """Fraction of decoder steps whose most important source position, by ``name``, is ``<eos>``.

    Parameters
    ----------
    explanations : sequence of Explanation
    name : {"alpha", "loo", "grad_input"}

    Returns
    -------
    float
        Pooled over every step of every example (steps weighted equally).

    See Also
    --------
    The chapter "Looked at is not caused by" (chapters/interpretability).
    """
    if len(explanations) == 0:
        raise ValueError("special_top_share needs at least one Explanation")
    hits = [
        np.isin(
            np.abs(ex.measure(name)).argmax(axis=1),
            [k for k, tok in enumerate(ex.src) if tok in SPECIALS],
        )
        for ex in explanations
    ]
    return float(np.mean(np.concatenate(hits)))


class Blanking(NamedTuple):
    """What blanking one source position does to the encoder states and to the output.

    Attributes
    ----------
    where : str
        "eos" (the ``<eos>`` at the end of each source) or "middle" (its middle word).
    h_change : float
        Mean relative change ‖h_i' − h_i‖ / ‖h_i‖ of the encoder states at every
        *other* real position i, pooled over the sources.
    h_change_forward, h_change_backward : float
        The same for the forward half →h_i and the backward half ←h_i.
    extra_tokens : float
        Mean number of tokens by which the greedy output with the position
        blanked is longer than the output without (``<eos>`` included; negative
        if shorter).
    n : int
        Number of sources.
    """

    where: str
    h_change: float
    h_change_forward: float
    h_change_backward: float
    extra_tokens: float
    n: int


def blanking_effect(
    model: Seq2Seq,
    task: Task,
    sources: Sequence[str | Sequence[str]],
    where: Literal["eos", "middle"] = "eos",
) -> Blanking:
    """Blank one position of every source, as leave-one-out does, and measure what changes.

    The position's input embedding is set to zeros (as in :func:`leave_one_out`).
    ``"eos"`` blanks the end marker, the *first* input the backward GRU reads
    (so every ←h_i can change) and the *last* one the forward GRU reads (so
    →h_i of every word stays exactly as it was); ``"middle"`` blanks the
    middle word, for comparison.

    Parameters
    ----------
    model : Seq2Seq
        With a :class:`~attnlib.models.BiGRUEncoder` (h_i = [→h_i; ←h_i]).
    task : Task
    sources : list of str or token sequences
    where : {"eos", "middle"}

    Returns
    -------
    Blanking

    See Also
    --------
    The chapter "Looked at is not caused by" (chapters/interpretability).
    """
    if where not in ("eos", "middle"):
        raise ValueError(f"where must be 'eos' or 'middle', got {where!r}")
    if not hasattr(model.encoder, "gru_backward"):
        raise ValueError("blanking_effect compares →h_i and ←h_i: it needs a BiGRUEncoder")
    src = _source_batch(task, sources)
    B, T_x = src.shape
    rows = torch.arange(B)
    lengths = (src != PAD_ID).sum(dim=1)  # words + <eos>
    pos = lengths - 1 if where == "eos" else (lengths - 2) // 2
    keep = torch.ones(B, T_x, 1)
    keep[rows, pos] = 0.0
    with eval_mode(model), torch_threads(1), torch.no_grad():
        h, _, mask = model.encode(src)
        plain, _ = model.greedy(src)
        with _embedding_hook(model, lambda out: out * keep):
            h_blank, _, _ = model.encode(src)
            blanked, _ = model.greedy(src)
    other = mask.clone()
    other[rows, pos] = False
    half = h.shape[-1] // 2

    def change(part: slice) -> float:
        d = (h_blank[..., part] - h[..., part]).norm(dim=-1)
        return float((d / h[..., part].norm(dim=-1).clamp_min(1e-12))[other].mean())

    extra = (blanked != PAD_ID).sum(dim=1) - (plain != PAD_ID).sum(dim=1)
    return Blanking(
        where=where,
        h_change=change(slice(None)),
        h_change_forward=change(slice(0, half)),
        h_change_backward=change(slice(half, None)),
        extra_tokens=float(extra.double().mean()),
        n=B,
    )


# --------------------------------------------------------------------------- adversarial weights
class FixedScores:
    """A :class:`~attnlib.models.ScoreEdit` that replaces the scores by given ones.

    ``FixedScores(z)`` makes every step it is applied to use the scores
    ``z : (B, T_x)`` (so α = softmax(z) on the real positions, 0 on pads),
    whatever the model computed. :func:`adversarial_attention` optimises
    ``z`` through it.
    """

    def __init__(self, scores: Tensor) -> None:
        self.scores = scores

    def __repr__(self) -> str:
        return f"FixedScores(shape={tuple(self.scores.shape)})"

    def __call__(self, e: Tensor, *, query: Tensor, mask: Tensor) -> Tensor:
        if self.scores.shape != e.shape:
            raise ValueError(
                f"FixedScores holds scores of shape {tuple(self.scores.shape)} but the step "
                f"computed e of shape {tuple(e.shape)} (B, T_x)"
            )
        return self.scores


def jensen_shannon(p: Tensor, q: Tensor) -> Tensor:
    """Jensen–Shannon divergence in bits between distributions over the last axis.

    JSD(p, q) = ½ KL(p ‖ m) + ½ KL(q ‖ m) with m = ½ (p + q): 0 for equal
    distributions, 1 bit for distributions with disjoint supports.

    Parameters
    ----------
    p, q : (..., T_x) tensors of probabilities

    Returns
    -------
    (...) tensor, in [0, 1]
    """
    m = 0.5 * (p + q)

    def kl(a: Tensor) -> Tensor:
        ratio = torch.log2(a.clamp_min(1e-30)) - torch.log2(m.clamp_min(1e-30))
        return torch.where(a > 0, a * ratio, torch.zeros_like(a)).sum(dim=-1)

    return 0.5 * kl(p) + 0.5 * kl(q)


@dataclass(frozen=True)
class Adversarial:
    """Adversarial weights α' for decoder steps, found by :func:`adversarial_attention`.

    One row per decoder step searched (the steps that write a content token).

    Attributes
    ----------
    example, step : (n,) int arrays
        Which source (index into ``src``) and which output step (0-based).
    token : list of str
        The token each step writes.
    src : list of list of str
        The source tokens of each example, ``<eos>`` included.
    alpha, alpha_adv : (n, T_x) arrays
        The model's weights and the adversarial ones (zero beyond each source).
    jsd : (n,) array
        JSD(α, α') in bits (0 where no α' other than α met the tolerance).
    tvd : (n,) array
        Total variation distance between the output distributions with α and with α'.
    eps : float
        The tolerance every α' meets: ``tvd ≤ eps``.
    iters, restarts : int
        Optimiser steps, and random starts per decoder step.
    """

    example: NDArray[np.int64]
    step: NDArray[np.int64]
    token: list[str]
    src: list[list[str]]
    alpha: FloatArray
    alpha_adv: FloatArray
    jsd: FloatArray
    tvd: FloatArray
    eps: float
    iters: int
    restarts: int

    def median_jsd(self) -> float:
        """Median over the steps of JSD(α, α'), in bits."""
        return float(np.median(self.jsd))

    def moved(self) -> FloatArray:
        """Share of the weight α' puts elsewhere than α: ½ Σ_i |α_ti − α'_ti| per step, (n,)."""
        return 0.5 * np.abs(self.alpha - self.alpha_adv).sum(axis=1)

    def token_weight(self) -> tuple[FloatArray, FloatArray]:
        """Weight that α and α' put on source positions holding the token the step writes.

        Meaningful for tasks whose output tokens are source tokens (copy, reverse).

        Returns
        -------
        (n,) arrays, for α and for α'
        """
        hold = np.zeros_like(self.alpha, dtype=bool)
        for r, (k, tok) in enumerate(zip(self.example, self.token, strict=True)):
            hold[r, : len(self.src[k])] = [s == tok for s in self.src[k]]
        return (self.alpha * hold).sum(axis=1), (self.alpha_adv * hold).sum(axis=1)

    def copy_weight(self) -> FloatArray:
        """Weight α' puts on *other* copies of the token the step writes, (n,).

        Positions holding that token, except the one where α is largest.
        """
        out = np.zeros(len(self.token))
        for r, (k, tok) in enumerate(zip(self.example, self.token, strict=True)):
            top = int(self.alpha[r].argmax())
            out[r] = sum(
                self.alpha_adv[r, i] for i, s in enumerate(self.src[k]) if s == tok and i != top
            )
        return out

    def repeated(self) -> NDArray[np.bool_]:
        """Whether the token each step writes occurs more than once in its source."""
        return np.array(
            [self.src[k].count(tok) > 1 for k, tok in zip(self.example, self.token, strict=True)]
        )


def adversarial_attention(
    model: Seq2Seq,
    task: Task,
    sources: Sequence[str | Sequence[str]],
    *,
    eps: float = 0.01,
    iters: int = 200,
    restarts: int = 4,
    lr: float = 0.3,
    penalty: float = 100.0,
    seed: int = 0,
) -> Adversarial:
    """Search, step by step, for weights α' far from α that leave the output unchanged.

    After Jain & Wallace (2019), who search one α' per classified text: here
    one per decoder step. The model decodes each source greedily; then, for
    every step t that writes a content token, with the past fixed (teacher
    forcing on the model's own output, so s_{t-1} and y_{t-1} are those it
    had), free scores z replace e_t through :class:`FixedScores`, and Adam
    maximises

        JSD(α_t, softmax(z)) − penalty · max(0, TVD(p_t, q_t) − eps / 2),

    where p_t and q_t are the output distributions ỹ_t with α_t and with
    softmax(z). Among all iterates of ``restarts`` random starts (drawn from
    ``seed``), the α' with the largest JSD whose TVD is at most ``eps`` is
    kept; α itself (JSD 0) always qualifies. All steps are optimised together
    as one batch of single decoder steps.

    Parameters
    ----------
    model : Seq2Seq
        A model with attention.
    task : Task
    sources : list of str or token sequences
    eps : float
        Largest change of the step's output distribution (total variation).
    iters, restarts : int
        Adam steps, and random starts per decoder step.
    lr, penalty : float
        Adam's learning rate; the weight of the tolerance penalty.
    seed : int
        Seeds the random starts.

    Returns
    -------
    Adversarial

    See Also
    --------
    The chapter "Looked at is not caused by" (chapters/interpretability).
    """
    if not model.has_attention:
        raise ValueError("this model has no attention to search over (decoder='none')")
    for name, v in (("iters", iters), ("restarts", restarts)):
        if not (isinstance(v, int) and v >= 1):
            raise ValueError(f"{name} must be a whole number ≥ 1, got {v!r}")
    if not 0 < eps < 1:
        raise ValueError(f"eps is a total variation distance in (0, 1), got {eps!r}")
    trs = translate(model, task, sources)
    src = _source_batch(task, [tr.src[:-1] for tr in trs])
    outs = [task.tgt_vocab.encode(tr.out, eos=False) for tr in trs]
    tgt_in = torch.full((len(outs), max(len(o) for o in outs)), PAD_ID, dtype=torch.long)
    for b, o in enumerate(outs):
        tgt_in[b, : len(o)] = torch.tensor([BOS_ID, *o[:-1]])
    rows = [
        (b, t) for b, tr in enumerate(trs) for t, tok in enumerate(tr.out) if tok not in SPECIALS
    ]
    if not rows:
        raise ValueError("the outputs have no content token to explain")
    dec = model.decoder
    with eval_mode(model), torch_threads(1):
        with torch.no_grad():  # the model's own steps: s_{t-1}, p_t, α_t for every t
            h, final, mask = model.encode(src)
            mem = dec.memory(h, final, mask)
            s, carries, probs, alphas = dec.init_state(final), [], [], []
            for t in range(tgt_in.shape[1]):
                carries.append(s)
                logits, s, a = dec.step(tgt_in[:, t], s, mem)
                assert a is not None  # a decoder with attention
                probs.append(torch.softmax(logits, dim=-1))
                alphas.append(a)
        b_idx = torch.tensor([b for b, _ in rows]).repeat(restarts)
        t_idx = torch.tensor([t for _, t in rows]).repeat(restarts)
        carry = torch.stack(carries, 1)[b_idx, t_idx]
        p = torch.stack(probs, 1)[b_idx, t_idx]
        alpha = torch.stack(alphas, 1)[b_idx, t_idx]
        y_prev = tgt_in[b_idx, t_idx]
        assert mem.keys is not None
        assert mem.bias is not None
        assert mem.mask is not None
        base = SourceMemory(mem.h[b_idx], mem.keys[b_idx], mem.bias[b_idx], mem.mask[b_idx])
        gen = torch.Generator().manual_seed(seed)
        z = (3.0 * torch.randn(alpha.shape, generator=gen)).requires_grad_(True)
        adam = Adam([z], lr)
        best_jsd, best_tvd = torch.zeros(len(b_idx)), torch.zeros(len(b_idx))
        best_alpha = alpha.clone()
        with torch.enable_grad():
            for _ in range(iters):
                logits, _, a2 = dec.step(
                    y_prev, carry, dataclasses.replace(base, edit=FixedScores(z))
                )
                assert a2 is not None
                tvd = 0.5 * (p - torch.softmax(logits, dim=-1)).abs().sum(dim=-1)
                jsd = jensen_shannon(alpha, a2)
                with torch.no_grad():
                    better = (tvd <= eps) & (jsd > best_jsd)
                    best_jsd = torch.where(better, jsd, best_jsd)
                    best_tvd = torch.where(better, tvd, best_tvd)
                    best_alpha[better] = a2[better]
                loss = (-jsd + penalty * torch.relu(tvd - eps / 2)).sum()
                adam.step(torch.autograd.grad(loss, [z]))
    n = len(rows)
    pick = best_jsd.view(restarts, n).argmax(dim=0)  # the best start of every step
    every = torch.arange(n)
    return Adversarial(
        example=np.array([b for b, _ in rows]),
        step=np.array([t for _, t in rows]),
        token=[trs[b].out[t] for b, t in rows],
        src=[tr.src for tr in trs],
        alpha=alpha[:n].double().numpy(),
        alpha_adv=best_alpha.view(restarts, n, -1)[pick, every].double().numpy(),
        jsd=best_jsd.view(restarts, n)[pick, every].double().numpy(),
        tvd=best_tvd.view(restarts, n)[pick, every].double().numpy(),
        eps=eps,
        iters=iters,
        restarts=restarts,
    )


# --------------------------------------------------------------------------- s_0 or c_t
class Swap(NamedTuple):
    """Which source the first output token follows when s_0 and h come from different sources.

    Attributes
    ----------
    follows_h : float
        Share of the first output tokens equal to the first target token of
        the source whose encoder states h_i (so every c_t) the decoder read.
    follows_s0 : float
        Share equal to the first target token of the source its s_0 came from.
    n : int
        Number of pairs compared: those whose two first target tokens differ.
    """

    follows_h: float
    follows_s0: float
    n: int


def swap_s0(
    model: Seq2Seq,
    task: Task,
    *,
    split: str = "test",
    n: int | None = None,
    edit: ScoreEdit | None = None,
    seed: int = 0,
) -> Swap:
    """Decode the first output token with s_0 from one source and h_i from another.

    Every source b is paired with another source π(b) (a random permutation
    drawn from ``seed``): the decoder starts from s_0 = tanh(W_s final_b + b_s)
    of source b but attends over the encoder states h of source π(b). If the
    first output token follows π(b), what the decoder needs reached it through
    the context vectors c_t; if it follows b, through s_0. Only the public
    decoding steps are used: :meth:`~attnlib.models.Decoder.forward` takes s_0
    as an explicit argument.

    Parameters
    ----------
    model : Seq2Seq
        A model with attention.
    task : Task
    split : {"test", "valid", "train"}
    n : int, optional
        Use the first ``n`` pairs of the split (default: all of them).
    edit : ScoreEdit, optional
        Applied to the scores (e.g. uniform attention, for a model trained with it).
    seed : int
        Seeds the pairing.

    Returns
    -------
    Swap

    See Also
    --------
    The chapter "Looked at is not caused by" (chapters/interpretability).
    """
    if not model.has_attention:
        raise ValueError("swap_s0 needs a model with attention (decoder='none' has no h to swap)")
    data = encode_pairs(task, _first(task, split, n).split(split))
    perm = torch.randperm(len(data), generator=torch.Generator().manual_seed(seed))
    with eval_mode(model), torch_threads(1), torch.no_grad():
        h, final, mask = model.encode(data.src)
        mem = model.decoder.memory(h[perm], final[perm], mask[perm], edit=edit)
        logits, _ = model.decoder(data.tgt_in[:, :1], model.decoder.init_state(final), mem)
    logits[..., [PAD_ID, BOS_ID]] = float("-inf")  # never generated, as in greedy decoding
    first = logits[:, 0].argmax(dim=-1)
    y = data.tgt_out[:, 0]
    differ = y != y[perm]
    if not bool(differ.any()):
        raise ValueError("every pair has the same first target token: nothing to tell apart")
    return Swap(
        follows_h=float((first == y[perm])[differ].double().mean()),
        follows_s0=float((first == y)[differ].double().mean()),
        n=int(differ.sum()),
    )
