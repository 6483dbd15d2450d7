"""Training, greedy decoding and held-out metrics for :class:`attnlib.models.Seq2Seq`.

Quick start::

    from attnlib.tasks import make_task
    from attnlib.models import make_seq2seq
    from attnlib.train import train, evaluate, translate

    task = make_task("reverse")
    model = make_seq2seq(task.src_vocab, task.tgt_vocab, seed=0)
    history = train(model, task, steps=1500, target=0.995)   # stops early on valid
    metrics = evaluate(model, task, "test")                   # held-out numbers
    metrics.exact_match, metrics.by_length                    # overall, per length bucket
    [tr] = translate(model, task, ["abcde"])                  # tokens + α (T_y, T_x)

Training is teacher-forced cross-entropy with Adam and gradient-norm clipping;
every ``eval_every`` steps the model decodes the ``valid`` split greedily and
training stops once its exact match reaches ``target``. Nothing here touches
``test``, so :func:`evaluate` on ``"test"`` is an honest held-out number.

:func:`evaluate` and :func:`translate` speak the vocabulary of :mod:`attnlib.trained`,
shared with the English–French models: ``metrics.by_length`` is a list of
:class:`attnlib.trained.Bucket` and ``translate`` returns :class:`attnlib.trained.Translation`
records; :mod:`attnlib.pretrained` binds both to each shipped model.

Determinism: the data order comes from ``seed``, the weights from the seed given
to :func:`attnlib.models.make_seq2seq`, and training runs with a fixed number
of torch threads (``n_threads``, default 1). Same seeds on the same machine give
bit-identical weights. A ``time_limit`` makes the number of steps, and so the
weights, depend on the machine's speed.

See Also
--------
The chapter "A Bahdanau seq2seq, built from parts" (chapters/seq2seq).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from attnlib.models import ScoreEdit, Seq2Seq
from attnlib.progress import Bar
from attnlib.runtime import eval_mode, torch_threads
from attnlib.tasks import Task
from attnlib.trained import Bucket, Translation
from attnlib.vocab import BOS_ID, EOS_ID, PAD_ID, Pair

__all__ = [
    "Batch",
    "Bucket",
    "History",
    "Metrics",
    "Translation",
    "encode_pairs",
    "evaluate",
    "predict",
    "train",
    "translate",
]


# --------------------------------------------------------------------------- batches
@dataclass(frozen=True)
class Batch:
    """A padded batch of id tensors: what :meth:`attnlib.models.Seq2Seq.forward` and the loss take.

    Attributes
    ----------
    src : (B, T_x) long
        Source ids, ``<eos>`` appended, then ``<pad>``.
    tgt_in : (B, T_y) long
        ``<bos>`` y_1 … y_{n}: the decoder inputs under teacher forcing.
    tgt_out : (B, T_y) long
        y_1 … y_n ``<eos>``: what each step must predict (``<pad>`` is ignored).
    index : (B,) long or None
        Where the rows came from: their positions in the list of pairs a batch was cut
        from (:func:`attnlib.mt.tatoeba.batches`); None when the batch is the whole list.
    """

    src: Tensor
    tgt_in: Tensor
    tgt_out: Tensor
    index: Tensor | None = None

    @classmethod
    def of(
        cls,
        src_ids: Sequence[Sequence[int]],
        tgt_ids: Sequence[Sequence[int]],
        index: Tensor | None = None,
    ) -> Batch:
        """Pad encoded pairs into a batch: ``tgt_ids`` are y_1 … y_n ``<eos>``, as ``tgt_out``.

        ``tgt_in`` is ``tgt_out`` moved one step right behind ``<bos>``, with the ``<eos>``
        dropped (it is never an input).
        """
        tgt_out = _pad(tgt_ids)
        tgt_in = torch.cat([torch.full((len(tgt_ids), 1), BOS_ID), tgt_out[:, :-1]], dim=1)
        tgt_in = tgt_in.masked_fill(tgt_in == EOS_ID, PAD_ID)  # <eos> is never an input
        return cls(_pad(src_ids), tgt_in, tgt_out, index)

    @property
    def mask(self) -> Tensor:
        """(B, T_x) bool: True on the real source positions (``<eos>`` included), False on pads.

        The attention mask, equal to ``Seq2Seq.source_mask(src)``.
        """
        return self.src != PAD_ID

    def __len__(self) -> int:
        return self.src.shape[0]

    def __getitem__(self, idx: Tensor) -> Batch:
        """Rows ``idx``, trimmed to the longest source and target among them."""
        src, tgt_in, tgt_out = self.src[idx], self.tgt_in[idx], self.tgt_out[idx]
        T_x = int((src != PAD_ID).sum(dim=1).max())
        T_y = int((tgt_out != PAD_ID).sum(dim=1).max())
        index = None if self.index is None else self.index[idx]
        return Batch(src[:, :T_x], tgt_in[:, :T_y], tgt_out[:, :T_y], index)


def _pad(rows: Sequence[Sequence[int]]) -> Tensor:
    out = np.full((len(rows), max(len(r) for r in rows)), PAD_ID, dtype=np.int64)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return torch.from_numpy(out)


def encode_pairs(task: Task, pairs: Sequence[Pair]) -> Batch:
    """Encode ``(src_tokens, tgt_tokens)`` pairs into one padded :class:`Batch`.

    Raises
    ------
    ValueError
        For an empty list, an empty source, or a token not in the vocabularies.
    """
    if len(pairs) == 0:
        raise ValueError("encode_pairs needs at least one pair")
    srcs, tgts = [], []
    for k, (src, tgt) in enumerate(pairs):
        if len(src) == 0:
            raise ValueError(f"pair {k} has an empty source; each source needs T_x ≥ 1 token")
        srcs.append(task.src_vocab.encode(src))
        tgts.append(task.tgt_vocab.encode(tgt))
    return Batch.of(srcs, tgts)


def _epoch(n: int, batch_size: int, gen: torch.Generator) -> list[Tensor]:
    """One epoch of random index batches (the last, smaller one dropped), to be popped."""
    batch_size = min(batch_size, n)
    order = torch.randperm(n, generator=gen)
    batches = [order[j : j + batch_size] for j in range(0, n - batch_size + 1, batch_size)]
    return batches[::-1]


# --------------------------------------------------------------------------- history
@dataclass
class History:
    """What happened during :func:`train`.

    Attributes
    ----------
    step, loss, token_accuracy : list
        One entry per training step: the batch's teacher-forced cross-entropy
        (nats per token) and token accuracy.
    eval_step, valid_exact_match, valid_token_accuracy : list
        One entry per evaluation of the ``valid`` split (greedy decoding).
    seconds : float
        Wall-clock time of the whole run: encoding the data, the steps, the evaluations.
    stopped_early : bool
        True if ``target`` was reached before ``steps``.
    """

    step: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    token_accuracy: list[float] = field(default_factory=list)
    eval_step: list[int] = field(default_factory=list)
    valid_exact_match: list[float] = field(default_factory=list)
    valid_token_accuracy: list[float] = field(default_factory=list)
    seconds: float = 0.0
    stopped_early: bool = False

    @property
    def steps(self) -> int:
        """Number of optimisation steps taken."""
        return len(self.step)

    def as_dict(self) -> dict[str, Any]:
        """Plain lists and numbers (JSON- and checkpoint-friendly)."""
        return asdict(self)


def train(
    model: Seq2Seq,
    task: Task,
    *,
    steps: int = 400,
    batch_size: int = 128,
    lr: float = 5e-3,
    decay: bool = True,
    clip: float = 1.0,
    target: float | None = None,
    eval_every: int = 50,
    seed: int = 0,
    time_limit: float | None = None,
    stop_after: int | None = None,
    n_threads: int | None = 1,
    progress: bool = True,
    edit: ScoreEdit | None = None,
) -> History:
    """Train ``model`` on ``task.train`` with teacher forcing.

    Each step draws a random batch (without replacement within an epoch),
    minimises the cross-entropy of the next target token given the true
    previous one (teacher forcing), clips the gradient norm and takes an Adam
    step. The defaults suit the course's small models on the 5–15 token tasks.

    Parameters
    ----------
    model : Seq2Seq
        Trained in place.
    task : Task
    steps : int
        Most optimisation steps (batches).
    batch_size : int
    lr : float
        Adam learning rate (at the start, with ``decay``).
    decay : bool
        Decay the learning rate linearly towards 0 at step ``steps``: the last
        steps take small, precise updates, which is what pushes exact match
        from 95 % to 99.9 %. With ``decay``, ``steps`` is part of the recipe
        even when ``target`` stops training earlier.
    clip : float
        Largest gradient norm (``clip_grad_norm_``); ``inf`` disables it.
    target : float, optional
        Stop as soon as greedy exact match on ``task.valid`` reaches this
        fraction (checked every ``eval_every`` steps).
    eval_every : int
        Steps between evaluations of ``valid`` (0: never evaluate).
    seed : int
        Seeds the order of the training batches.
    time_limit : float, optional
        Stop after this many seconds (the result then depends on the machine).
    stop_after : int, optional
        Stop after this many steps, as if the run of ``steps`` steps were
        interrupted: the learning-rate schedule still follows ``steps``, so the
        first ``stop_after`` losses equal those of the full run.
    n_threads : int or None
        torch threads while training (1 is fastest for these small models and
        keeps runs bit-identical); None leaves the setting alone.
    progress : bool
        Show a progress bar (:class:`attnlib.progress.Bar`) with the loss and the latest valid
        exact match.
    edit : ScoreEdit, optional
        Train (and validate) with the scores of every step rewritten, e.g. a
        model trained with frozen uniform attention
        (``attnlib.importance.attention_intervention("uniform")``).

    Returns
    -------
    History

    See Also
    --------
    The chapter "A Bahdanau seq2seq, built from parts" (chapters/seq2seq).
    """
    if not isinstance(model, Seq2Seq):
        raise TypeError(f"train expects a Seq2Seq model, got {type(model).__name__}")
    if model.src_vocab_size != len(task.src_vocab) or model.tgt_vocab_size != len(task.tgt_vocab):
        raise ValueError(
            f"the model was built for vocabularies of {model.src_vocab_size} → "
            f"{model.tgt_vocab_size} ids but task {task.name!r} has "
            f"{len(task.src_vocab)} → {len(task.tgt_vocab)}"
        )
    if not (isinstance(steps, int) and steps >= 1):
        raise ValueError(f"steps must be a whole number ≥ 1, got {steps!r}")
    if not (isinstance(batch_size, int) and batch_size >= 1):
        raise ValueError(f"batch_size must be a whole number ≥ 1, got {batch_size!r}")
    if stop_after is not None and not (isinstance(stop_after, int) and stop_after >= 1):
        raise ValueError(f"stop_after must be a whole number ≥ 1, got {stop_after!r}")
    if target is not None and not 0 < target <= 1:
        raise ValueError(f"target is an exact-match fraction in (0, 1], got {target!r}")

    start = time.perf_counter()  # the clock includes preparing the data
    data = encode_pairs(task, task.train)
    valid = encode_pairs(task, task.valid) if task.valid and eval_every else None
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, fused=True)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, (lambda k: 1.0 - k / (steps + 1)) if decay else (lambda k: 1.0)
    )
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD_ID)
    hist = History()
    epoch: list[Tensor] = []
    last = steps if stop_after is None else min(steps, stop_after)
    with torch_threads(n_threads), Bar(max(last, 1), task.name, progress) as bar:
        for step in range(1, last + 1):
            if not epoch:
                epoch = _epoch(len(data), batch_size, gen)
            batch = data[epoch.pop()]
            model.train()
            logits, _ = model(batch.src, batch.tgt_in, edit=edit)
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), batch.tgt_out.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            sched.step()
            with torch.no_grad():
                real = batch.tgt_out != PAD_ID
                acc = float(((logits.argmax(-1) == batch.tgt_out) & real).sum() / real.sum())
            hist.step.append(step)
            hist.loss.append(float(loss.detach()))
            hist.token_accuracy.append(acc)
            bar.update(1)
            if valid is not None and (step % eval_every == 0 or step == last):
                tok, exact = _score(model, valid, edit)
                hist.eval_step.append(step)
                hist.valid_token_accuracy.append(tok)
                hist.valid_exact_match.append(exact)
                bar.set_postfix(loss=f"{float(loss.detach()):.3f}", valid_exact=f"{exact:.3f}")
                if target is not None and exact >= target:
                    hist.stopped_early = step < steps
                    break
            if time_limit is not None and time.perf_counter() - start > time_limit:
                break
    model.eval()
    hist.seconds = time.perf_counter() - start
    return hist


# --------------------------------------------------------------------------- decoding
def _decode_batches(
    model: Seq2Seq,
    src: Tensor,
    max_len: int | None,
    batch_size: int = 500,
    edit: ScoreEdit | None = None,
) -> tuple[Tensor, list[Tensor | None]]:
    """Greedy outputs (N, L) padded with <pad>, and α per row (trimmed to real T_x)."""
    lengths = (src != PAD_ID).sum(dim=1)
    order = torch.argsort(lengths, stable=True)  # similar lengths together: less padding
    outs: list[Tensor] = [torch.empty(0, dtype=torch.long)] * len(src)
    alphas: list[Tensor | None] = [None] * len(src)
    with eval_mode(model):
        for k in range(0, len(src), batch_size):
            idx = order[k : k + batch_size]
            T_x = int(lengths[idx].max())
            tokens, alpha = model.greedy(src[idx, :T_x], max_len=max_len, edit=edit)
            for j, i in enumerate(idx.tolist()):
                n = int((tokens[j] != PAD_ID).sum())  # output length, <eos> included
                outs[i] = tokens[j, :n]
                if alpha is not None:
                    alphas[i] = alpha[j, :n, : int(lengths[i])]
    L = max(len(o) for o in outs)
    padded = torch.full((len(src), L), PAD_ID, dtype=torch.long)
    for i, o in enumerate(outs):
        padded[i, : len(o)] = o
    return padded, alphas


def _match(pred: Tensor, tgt: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Per row: correct target positions, target length (with <eos>), exact match."""
    L = max(pred.shape[1], tgt.shape[1])
    p = torch.nn.functional.pad(pred, (0, L - pred.shape[1]), value=PAD_ID)
    g = torch.nn.functional.pad(tgt, (0, L - tgt.shape[1]), value=PAD_ID)
    real = g != PAD_ID
    correct = ((p == g) & real).sum(dim=1)
    n = real.sum(dim=1)
    # Exact: every target position right and nothing after the target's <eos>.
    exact = (correct == n) & ((p != PAD_ID) == real).all(dim=1)
    return correct, n, exact


def _score(model: Seq2Seq, data: Batch, edit: ScoreEdit | None = None) -> tuple[float, float]:
    max_len = int((data.tgt_out != PAD_ID).sum(dim=1).max())
    pred, _ = _decode_batches(model, data.src, max_len, edit=edit)
    correct, n, exact = _match(pred, data.tgt_out)
    return float(correct.sum() / n.sum()), float(exact.float().mean())


# --------------------------------------------------------------------------- metrics
@dataclass(frozen=True)
class Metrics:
    """Greedy-decoding metrics on one split.

    Attributes
    ----------
    split : str
    n : int
        Number of examples.
    token_accuracy : float
        Fraction of target tokens (``<eos>`` included) predicted at the right
        position.
    exact_match : float
        Fraction of outputs equal to the target, ``<eos>`` included.
    by_length : list of Bucket
        The same per source-length bucket, shortest first: each with the scores
        ``token_accuracy`` and ``exact_match``.
    """

    split: str
    n: int
    token_accuracy: float
    exact_match: float
    by_length: list[Bucket]

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers (JSON- and checkpoint-friendly); :meth:`from_dict` reads them back."""
        return {
            "split": self.split,
            "n": self.n,
            "token_accuracy": self.token_accuracy,
            "exact_match": self.exact_match,
            "by_length": [b.as_dict() for b in self.by_length],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Metrics:
        """The metrics :meth:`as_dict` wrote (as a checkpoint stores them)."""
        return cls(**{**d, "by_length": [Bucket.from_dict(b) for b in d["by_length"]]})

    def table(self) -> str:
        """A small text table: one line per length bucket, then the total."""
        lines = [f"{'length':>8} {'n':>6} {'token acc':>10} {'exact':>8}"]
        for b in self.by_length:
            lines.append(f"{b.label:>8} {b.n:>6} {b.token_accuracy:>10.4f} {b.exact_match:>8.4f}")
        lines.append(
            f"{'all':>8} {self.n:>6} {self.token_accuracy:>10.4f} {self.exact_match:>8.4f}"
        )
        return "\n".join(lines)


def evaluate(
    model: Seq2Seq,
    task: Task,
    split: str = "test",
    *,
    buckets: int | Sequence[int] = 5,
    n_threads: int | None = 1,
    edit: ScoreEdit | None = None,
) -> Metrics:
    """Token accuracy and exact match of greedy decoding, overall and per length.

    Parameters
    ----------
    model : Seq2Seq
    task : Task
    split : {"test", "valid", "train"}
    buckets : int or sequence of int
        Width of the source-length buckets, starting at the shortest source;
        or the lower edges of the buckets (e.g. ``[5, 10, 20]``).
    n_threads : int or None
        torch threads while decoding.
    edit : ScoreEdit, optional
        Decode with the scores of every step rewritten (an intervention on α,
        e.g. :func:`attnlib.importance.attention_intervention`).

    Returns
    -------
    Metrics

    See Also
    --------
    The chapter "The fixed-length bottleneck" (chapters/bottleneck).
    """
    pairs = task.split(split)
    data = encode_pairs(task, pairs)
    src_len = np.array([len(s) for s, _ in pairs])
    if isinstance(buckets, int):
        if buckets < 1:
            raise ValueError(f"bucket width must be ≥ 1, got {buckets}")
        edges = list(range(int(src_len.min()), int(src_len.max()) + 1, buckets))
    else:
        edges = sorted(int(b) for b in buckets)
        if not edges or edges[0] > src_len.min():
            raise ValueError(
                f"the first bucket edge must be ≤ the shortest source ({src_len.min()}), "
                f"got {edges}"
            )
    with torch_threads(n_threads):
        max_len = int((data.tgt_out != PAD_ID).sum(dim=1).max())
        pred, _ = _decode_batches(model, data.src, max_len, edit=edit)
    correct, n, exact = (x.numpy() for x in _match(pred, data.tgt_out))
    his = [*(e - 1 for e in edges[1:]), int(src_len.max())]
    by_length = []
    for lo, hi in zip(edges, his, strict=True):
        sel = (src_len >= lo) & (src_len <= hi)
        if sel.any():
            scores = {
                "token_accuracy": float(correct[sel].sum() / n[sel].sum()),
                "exact_match": float(exact[sel].mean()),
            }
            by_length.append(Bucket(lo, hi, int(sel.sum()), scores))
    return Metrics(
        split=split,
        n=len(pairs),
        token_accuracy=float(correct.sum() / n.sum()),
        exact_match=float(exact.mean()),
        by_length=by_length,
    )


def translate(
    model: Seq2Seq,
    task: Task,
    sources: Sequence[str | Sequence[str]],
    *,
    max_len: int | None = None,
    edit: ScoreEdit | None = None,
) -> list[Translation]:
    """Greedy-decode sources given as text or tokens; return tokens and α per example.

    Parameters
    ----------
    model : Seq2Seq
    task : Task
        For the vocabularies and the tokenizer.
    sources : list of str or list of token sequences
        Text is split with :meth:`attnlib.tasks.Task.tokenize`.
    max_len : int, optional
        Most output tokens (default 2 T_x + 2).
    edit : ScoreEdit, optional
        Decode with the scores of every step rewritten (an intervention on α).

    Returns
    -------
    list of Translation

    See Also
    --------
    The chapter "Reading alignment heatmaps" (chapters/heatmaps).
    """
    if isinstance(sources, str):
        raise TypeError("translate expects a list of sources; wrap a single one in [...]")
    toks = [task.tokenize(s) if isinstance(s, str) else tuple(s) for s in sources]
    for k, t in enumerate(toks):
        if len(t) == 0:
            raise ValueError(f"source {k} is empty; each source needs T_x ≥ 1 token")
    src = _pad([task.src_vocab.encode(t) for t in toks])
    with torch_threads(1):
        pred, alphas = _decode_batches(model, src, max_len, edit=edit)
    out = []
    for k, t in enumerate(toks):
        ids = [int(i) for i in pred[k] if int(i) != PAD_ID]
        words = task.tgt_vocab.decode(ids, strip=False)
        a = alphas[k]
        out.append(
            Translation(
                src=[*t, task.src_vocab.itos[EOS_ID]],
                out=words,
                alpha=None if a is None else a.numpy().copy(),
                text=task.tgt_text(task.tgt_vocab.decode(ids)),
            )
        )
    return out


def predict(model: Seq2Seq, task: Task, split: str = "test") -> list[tuple[str, ...]]:
    """Greedy outputs (tokens, without ``<eos>``) for every pair of a split."""
    data = encode_pairs(task, task.split(split))
    with torch_threads(1):
        pred, _ = _decode_batches(model, data.src, None)
    return [tuple(task.tgt_vocab.decode(row)) for row in pred]
