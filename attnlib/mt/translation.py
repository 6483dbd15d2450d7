"""Train, decode and score the real English→French model (Tatoeba), from one recipe.

Everything the Part IV chapters need to go from the shipped pairs to a BLEU score
is one call each:

* :class:`Recipe` — every choice that decides the model: vocabulary cut-off,
  sizes (emb, hidden, d_s, d_a), decoder (``"bahdanau"`` or the no-attention
  baseline ``"none"``), batch size, Adam learning rate, budget, early stopping
  and seed. Frozen, so a checkpoint can store it and rebuild the same run.
* :func:`prepare` — pairs → split by distinct English sentence → tokens →
  vocabularies built on the training split → encoded pairs (:class:`Data`).
* :func:`train_model` — teacher forcing with Adam; the validation loss is
  measured after every epoch and the weights of the best epoch are kept
  (early stopping with ``patience``).
* :func:`translate` — English sentences → detokenised French, greedy (k = 1)
  or beam search (k > 1), with α for every output token.
* :func:`evaluate` — corpus BLEU (sacrebleu, all references of each
  source), chrF and BLEU per source-length bucket on a held-out split.
* :data:`RECIPES`, :func:`load`, :func:`retrain` — the shipped models, from their
  checkpoints or trained live.

Quick start::

    from attnlib.mt import translation as tr
    recipe = tr.Recipe()                         # the attention model
    data = tr.prepare(recipe)
    model, history = tr.train_model(recipe, data)
    [out] = tr.translate(model, data, ["The red car is mine."], k=5)
    out.text, out.alpha                          # the French, α (T_y, T_x)
    print(tr.evaluate(model, data, k=5).bleu)

The baseline under the same budget is ``tr.Recipe(decoder="none")``.

These are the words of :mod:`attnlib.trained`, which the toy tasks' models
(:mod:`attnlib.pretrained`) speak too: ``load(name)`` returns a :class:`Trained` with
``evaluate`` and ``translate``, like ``pretrained.load(name)``.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import math
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn

from attnlib import decoding
from attnlib.models import Seq2Seq, make_seq2seq
from attnlib.mt import scoring
from attnlib.mt import tatoeba as tb
from attnlib.progress import Bar
from attnlib.runtime import eval_mode, torch_threads, want_retrain
from attnlib.train import Batch
from attnlib.trained import Bucket, Translation, check_seed, read_checkpoint, recipe_named
from attnlib.vocab import EOS, EOS_ID, PAD_ID, Vocab

__all__ = [
    "BUCKET_EDGES",
    "CHECKPOINT_DIR",
    "RECIPES",
    "SHORT_WORDS",
    "Data",
    "Evaluation",
    "History",
    "Recipe",
    "Trained",
    "batch_loss",
    "build_casing",
    "build_model",
    "checkpoint_path",
    "decode",
    "evaluate",
    "load",
    "n_parameters",
    "prepare",
    "retrain",
    "save",
    "train_model",
    "translate",
    "validation_loss",
]

BUCKET_EDGES = (1, 4, 5, 6, 7, 10)
"""Source-length bucket edges in English words (punctuation not counted): 1-3, 4, 5, 6, 7-9."""


# --------------------------------------------------------------------------- recipe
@dataclass(frozen=True)
class Recipe:
    """Every choice behind one trained translation model.

    Attributes
    ----------
    min_freq : int
        Keep a token seen at least this many times in training; the others become ``<unk>``.
    emb, hidden, d_s, d_a : int
        Embedding size, encoder GRU size per direction (d_h = 2 × hidden), decoder
        state size, attention size.
    decoder : {"bahdanau", "none"}
        The attention decoder or the no-attention baseline.
    s0 : {"final", "backward"}
        s_0 = tanh(W_s [→h_L; ←h_1] + b_s) (the course's default) or, as in
        Bahdanau et al., s_0 = tanh(W_s ←h_1 + b_s) from the backward state alone.
    batch_size : int
    lr : float
        Adam's learning rate.
    clip : float
        Largest gradient norm.
    max_epochs : int
        Most passes over the training pairs.
    max_steps : int or None
        Most optimisation steps (None: only ``max_epochs`` limits).
    max_seconds : float or None
        Wall-clock budget of the training loop; the epoch under way is cut short
        and validated when it runs out (None: no limit).
    patience : int
        Stop after this many epochs without a better validation loss; the weights of
        the best epoch are the ones returned.
    max_src_len : int or None
        Train only on sources of at most this many English words (tokens holding a
        letter or digit, as in the length buckets) (the analogue of
        Bahdanau et al.'s RNNsearch-30, trained on short sentences); None keeps all.
        Validation and test are never filtered.
    seed : int
        Seeds the split, the initial weights and the batch order. (``retrain(name,
        seed=k)`` keeps the shipped recipe's split and adds ``k`` to this seed for the
        weights and the batch order.)
    threads : int
        torch threads while training and evaluating.
    test_sources, valid_sources : int
        Distinct English sentences held out.
    limit : int or None
        Use only the first ``limit`` pairs of the file (for tests and quick looks).
    """

    min_freq: int = 5
    emb: int = 64
    hidden: int = 96
    d_s: int = 96
    d_a: int = 64
    decoder: Literal["bahdanau", "none"] = "bahdanau"
    s0: Literal["final", "backward"] = "final"
    batch_size: int = 128
    lr: float = 3e-3
    clip: float = 1.0
    max_epochs: int = 20
    max_steps: int | None = None
    max_seconds: float | None = None
    patience: int = 2
    max_src_len: int | None = None
    seed: int = 0
    threads: int = 2
    test_sources: int = 2000
    valid_sources: int = 1000
    limit: int | None = None

    def __post_init__(self) -> None:
        if self.decoder not in ("bahdanau", "none"):
            raise ValueError(f"decoder must be 'bahdanau' or 'none', got {self.decoder!r}")
        if self.s0 not in ("final", "backward"):
            raise ValueError(f"s0 must be 'final' or 'backward', got {self.s0!r}")
        for name in ("min_freq", "emb", "hidden", "d_s", "d_a", "batch_size", "max_epochs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a whole number ≥ 1, got {v!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if (
            isinstance(self.patience, bool)
            or not isinstance(self.patience, int)
            or self.patience < 1
        ):
            raise ValueError(f"patience must be a whole number ≥ 1, got {self.patience!r}")

    def as_dict(self) -> dict[str, Any]:
        """The fields as plain keywords (for a checkpoint)."""
        return dataclasses.asdict(self)


# --------------------------------------------------------------------------- data
@dataclass(frozen=True)
class Data:
    """The split pairs of one recipe, tokenised, with vocabularies and ids.

    Attributes
    ----------
    split : tatoeba.Split
    src_vocab, tgt_vocab : Vocab
        Built on the training pairs only (with ``<unk>``).
    train, valid : list of (src_ids, tgt_ids)
        Encoded pairs; ``train`` is filtered by ``Recipe.max_src_len``.
    casing : dict of str to str
        Lower-case French token → its most frequent spelling inside training
        sentences (not first in them): ``"tom" → "Tom"``, ``"paris" → "Paris"``.
        The model reads and writes lower case; :func:`translate` restores case with
        this table and a capital at the start, so that BLEU (case-sensitive, like
        the references) does not count every sentence-initial word as wrong.
    references : dict
        ``"valid"`` and ``"test"``: ``[(en, [fr references…]), …]`` per distinct
        English sentence (:meth:`attnlib.mt.tatoeba.Split.references`).
    """

    split: tb.Split
    src_vocab: Vocab
    tgt_vocab: Vocab
    train: list[tb.EncodedPair]
    valid: list[tb.EncodedPair]
    casing: dict[str, str] = field(repr=False)
    references: dict[str, list[tuple[str, list[str]]]] = field(repr=False)

    def sources(self, name: str) -> list[str]:
        """The distinct English sentences of split ``name``."""
        return [en for en, _ in self.references[name]]


def build_casing(french: Iterable[str]) -> dict[str, str]:
    """Lower-case token → its most frequent spelling when not sentence-initial (ties: A-Z first)."""
    forms: dict[str, Counter[str]] = {}
    for sentence in french:
        for tok in tb.tokenise(sentence, "fr", lower=False)[1:]:
            forms.setdefault(tok.lower(), Counter())[tok] += 1
    return {low: min(c, key=lambda f: (-c[f], f)) for low, c in forms.items()}


def prepare(recipe: Recipe, pairs: Sequence[tb.TextPair] | None = None) -> Data:
    """Split, tokenise, build vocabularies and encode, deterministically from ``recipe``.

    Parameters
    ----------
    recipe : Recipe
    pairs : sequence of TextPair, optional
        Default: :func:`attnlib.mt.tatoeba.load_pairs` (the first ``recipe.limit`` of them).

    Returns
    -------
    Data
    """
    if pairs is None:
        pairs = tb.load_pairs()
    if recipe.limit is not None:
        pairs = pairs[: recipe.limit]
    parts = tb.split(
        pairs,
        seed=recipe.seed,
        test_sources=recipe.test_sources,
        valid_sources=recipe.valid_sources,
    )
    train_tok = tb.tokenise_pairs(parts.train)
    valid_tok = tb.tokenise_pairs(parts.valid)
    src_vocab = tb.build_vocab(
        [s for s, _ in train_tok], recipe.min_freq, name="English vocabulary"
    )
    tgt_vocab = tb.build_vocab([t for _, t in train_tok], recipe.min_freq, name="French vocabulary")
    if recipe.max_src_len is not None:
        train_tok = [(s, t) for s, t in train_tok if tb.count_words(s) <= recipe.max_src_len]
    refs = {name: parts.references(name) for name in ("valid", "test")}
    return Data(
        split=parts,
        src_vocab=src_vocab,
        tgt_vocab=tgt_vocab,
        train=tb.encode_each(train_tok, src_vocab, tgt_vocab),
        valid=tb.encode_each(valid_tok, src_vocab, tgt_vocab),
        casing=build_casing(p.fr for p in parts.train),
        references=refs,
    )


# --------------------------------------------------------------------------- training
@dataclass
class History:
    """What happened in :func:`train_model`.

    Attributes
    ----------
    loss : list of float
        Teacher-forced cross-entropy of every training step (nats per token).
    epoch_train_loss, valid_loss : list of float
        Per epoch: mean training loss, and validation loss (nats per token).
    best_epoch : int
        The epoch (from 1) whose weights were kept.
    steps : int
    seconds : float
        Wall clock of the training loop, validation included.
    stopped : str
        Why training ended: "patience", "max_epochs" or "max_steps".
    """

    loss: list[float] = field(default_factory=list)
    epoch_train_loss: list[float] = field(default_factory=list)
    valid_loss: list[float] = field(default_factory=list)
    best_epoch: int = 0
    steps: int = 0
    seconds: float = 0.0
    stopped: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def build_model(recipe: Recipe, data: Data) -> Seq2Seq:
    """The untrained model of ``recipe`` for the vocabularies of ``data``."""
    return make_seq2seq(
        data.src_vocab, data.tgt_vocab, decoder=recipe.decoder, emb=recipe.emb,
        hidden=recipe.hidden, d_s=recipe.d_s, d_a=recipe.d_a, seed=recipe.seed, s0=recipe.s0,
    )  # fmt: skip


def batch_loss(model: Seq2Seq, batch: Batch, reduction: str = "mean") -> torch.Tensor:
    """Teacher-forced cross-entropy of one batch over its real target tokens (nats per token).

    The same number as ``cross_entropy(logits.flatten(0, 1), tgt_out.flatten(),
    ignore_index=PAD_ID)``, but the output layer and its softmax over the V French types
    run only on the real target positions (``keep=`` of :meth:`Seq2Seq.forward`): with
    length-bucketed sources, about a third of the target positions are padding.
    """
    keep = batch.tgt_out != PAD_ID
    logits, _ = model(batch.src, batch.tgt_in, keep=keep)
    return nn.functional.cross_entropy(logits, batch.tgt_out[keep], reduction=reduction)


@torch.no_grad()
def validation_loss(
    model: Seq2Seq, encoded: Sequence[tb.EncodedPair], batch_size: int = 256
) -> float:
    """Teacher-forced cross-entropy on ``encoded`` pairs, nats per target token."""
    total, count = 0.0, 0
    with eval_mode(model):
        for b in tb.batches(encoded, batch_size, seed=None):
            total += float(batch_loss(model, b, reduction="sum"))
            count += int((b.tgt_out != PAD_ID).sum())
    return total / count


def train_model(recipe: Recipe, data: Data, progress: bool = True) -> tuple[Seq2Seq, History]:
    """Train the model of ``recipe`` with teacher forcing until validation stops improving.

    Each epoch visits every training pair once, in length-bucketed batches whose order
    depends on the seed and the epoch. After each epoch the validation loss is measured;
    the weights of the best epoch are returned, and training stops after
    ``recipe.patience`` epochs without improvement (or at ``max_epochs``/``max_steps``).

    Parameters
    ----------
    recipe : Recipe
    data : Data
        From :func:`prepare` with the same recipe.
    progress : bool
        Show a progress bar (:class:`attnlib.progress.Bar`: the current epoch's batches
        and the mean loss of the last 50) and print a line per epoch.

    Returns
    -------
    model : Seq2Seq
        In eval mode, with the best epoch's weights.
    history : History
    """
    hist = History()
    start = time.perf_counter()
    with torch_threads(recipe.threads), torch.random.fork_rng(devices=[]):
        torch.manual_seed(recipe.seed)
        model = build_model(recipe, data)
        opt = torch.optim.Adam(model.parameters(), lr=recipe.lr)
        best, best_state, bad = math.inf, copy.deepcopy(model.state_dict()), 0
        hist.stopped = "max_epochs"
        n_batches = math.ceil(len(data.train) / recipe.batch_size)
        bar = Bar(total=max(n_batches, 1), desc="epoch 1", enabled=progress)
        for epoch in range(1, recipe.max_epochs + 1):
            model.train()
            losses = []
            bar.reset(desc=f"epoch {epoch}")
            for b in tb.batches(data.train, recipe.batch_size, seed=recipe.seed * 1000 + epoch):
                loss = batch_loss(model, b)
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), recipe.clip)
                opt.step()
                losses.append(loss.item())
                hist.steps += 1
                bar.update(1)
                if progress and hist.steps % 50 == 0:
                    bar.set_postfix(loss=f"{sum(losses[-50:]) / 50:.3f}")
                if recipe.max_steps is not None and hist.steps >= recipe.max_steps:
                    break
                if (
                    recipe.max_seconds is not None
                    and time.perf_counter() - start > recipe.max_seconds
                ):
                    break
            hist.loss.extend(losses)
            hist.epoch_train_loss.append(sum(losses) / max(len(losses), 1))
            v = validation_loss(model, data.valid) if data.valid else hist.epoch_train_loss[-1]
            hist.valid_loss.append(v)
            if progress:  # no clock time in the line: a page built twice shows the same text
                print(
                    f"epoch {epoch}: train loss {hist.epoch_train_loss[-1]:.3f}, "
                    f"valid loss {v:.3f} ({hist.steps} steps)"
                )
            if v < best:
                best, bad, hist.best_epoch = v, 0, epoch
                best_state = copy.deepcopy(model.state_dict())
            else:
                bad += 1
            if recipe.max_steps is not None and hist.steps >= recipe.max_steps:
                hist.stopped = "max_steps"
                break
            if recipe.max_seconds is not None and time.perf_counter() - start > recipe.max_seconds:
                hist.stopped = "max_seconds"
                break
            if bad >= recipe.patience:
                hist.stopped = "patience"
                break
        bar.close()
        model.load_state_dict(best_state)
        model.eval()
    hist.seconds = time.perf_counter() - start
    return model, hist


# --------------------------------------------------------------------------- decoding
def _encode_sources(sentences: Sequence[str], vocab: Vocab) -> list[list[int]]:
    out = []
    for k, s in enumerate(sentences):
        toks = tb.tokenise(s, "en")
        if not toks:
            raise ValueError(f"sentence {k} ({s!r}) has no tokens to translate")
        out.append(tb.encode(toks, vocab))
    return out


def _to_text(ids: Sequence[int], vocab: Vocab, casing: dict[str, str], keep_unk: bool) -> str:
    skip = {EOS_ID, PAD_ID} if keep_unk else {EOS_ID, PAD_ID, tb.UNK_ID}
    toks = [casing.get(t, t) for t in (vocab.itos[i] for i in ids if i not in skip)]
    text = tb.detokenise(toks, "fr")
    return text[:1].upper() + text[1:]


def decode(
    model: Seq2Seq,
    data: Data,
    sentences: Sequence[str],
    k: int = 1,
    *,
    batch_size: int = 256,
    return_attention: bool = False,
) -> list[decoding.Decoded]:
    """Decode English sentences (greedy for k = 1, beam search otherwise), in order.

    The sentences are decoded in batches of similar length (:func:`attnlib.decoding.beam_search`);
    each result is the one the sentence gets alone.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a whole number ≥ 1, got {k!r}")
    ids = _encode_sources(sentences, data.src_vocab)
    out: list[decoding.Decoded | None] = [None] * len(ids)
    # sort by length so a batch pads little; results go back to their places
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    for j in range(0, len(order), batch_size):
        idx = order[j : j + batch_size]
        width = max(len(ids[i]) for i in idx)
        src = torch.tensor([ids[i] + [PAD_ID] * (width - len(ids[i])) for i in idx])
        res = decoding.beam_search(model, src, k, return_attention=return_attention)
        for i, r in zip(idx, res, strict=True):
            out[i] = r
    return [r for r in out if r is not None]


def translate(
    model: Seq2Seq,
    data: Data,
    sentences: Sequence[str],
    k: int = 1,
    *,
    keep_unk: bool = True,
    return_attention: bool = True,
) -> list[Translation]:
    """Translate English sentences into French, with the attention map of each.

    Parameters
    ----------
    model : Seq2Seq
    data : Data
        For the vocabularies the model was trained with.
    sentences : sequence of str
        Raw English text (normalised and tokenised here); unknown words become ``<unk>``.
    k : int
        1 for greedy decoding, more for beam search of that width.
    keep_unk : bool
        Show the ``<unk>`` the model writes in the text (True) or leave them out (False;
        sacrebleu would count ``<unk>`` as three wrong tokens ``< unk >``).
    return_attention : bool
        Keep α (False: ``alpha`` is None, and decoding keeps no weights).

    Returns
    -------
    list of Translation
        One per input, in order: ``src``, the tokens the encoder read (``<unk>`` for a
        word the English vocabulary lacks, then ``<eos>``); ``out``, the French tokens the
        decoder wrote (lower case, ``<eos>`` last if it finished); ``alpha`` (T_y, T_x),
        None for the baseline; ``text``, the detokenised French with case restored
        (:attr:`Data.casing`) and a capital first letter.
    """
    if isinstance(sentences, str):
        raise TypeError("translate takes a list of sentences; wrap a single one in [ ]")
    decoded = decode(model, data, sentences, k, return_attention=return_attention)
    out = []
    for sentence, d in zip(sentences, decoded, strict=True):
        ids = tb.encode(tb.tokenise(sentence, "en"), data.src_vocab)
        words = [data.tgt_vocab.itos[i] for i in d.tokens] + ([EOS] if d.finished else [])
        out.append(
            Translation(
                src=[data.src_vocab.itos[i] for i in ids],
                out=words,
                alpha=None if d.alpha is None else d.alpha.numpy().copy(),
                text=_to_text(d.tokens, data.tgt_vocab, data.casing, keep_unk),
                score=d.score,
            )
        )
    return out


# --------------------------------------------------------------------------- scoring
@dataclass(frozen=True)
class Evaluation:
    """Scores of one model on one held-out split.

    Attributes
    ----------
    bleu : scoring.BleuResult
        Corpus BLEU against all references of each source (its ``signature`` included).
    chrf : scoring.ChrfResult
    by_length : list of Bucket
        BLEU per source length (English words), edges :data:`BUCKET_EDGES`: each bucket
        with its ``bleu`` (a bucket no source falls in has ``n == 0`` and no score).
    hypotheses : list of str
    sources : list of str
    references : list of list of str
    split : str
    k : int
    seconds : float
        Decoding time.
    scores : list of float
        What the search ranked each hypothesis by, log p(y | x) / lp(|y|), in the order of
        ``sources``: how highly the model rates the output it chose.
    """

    bleu: scoring.BleuResult
    chrf: scoring.ChrfResult
    by_length: list[Bucket]
    hypotheses: list[str] = field(repr=False)
    sources: list[str] = field(repr=False)
    references: list[list[str]] = field(repr=False)
    split: str = "test"
    k: int = 1
    seconds: float = 0.0
    scores: list[float] = field(default_factory=list, repr=False)

    @property
    def n(self) -> int:
        """The number of sources scored (distinct English sentences)."""
        return len(self.sources)


UnkScoring = Literal["word", "split", "drop"]
UNK_SCORINGS: tuple[str, ...] = ("word", "split", "drop")


def evaluate(
    model: Seq2Seq,
    data: Data,
    split: str = "test",
    k: int = 1,
    *,
    edges: Sequence[int] = BUCKET_EDGES,
    threads: int | None = 2,
    unk: UnkScoring = "word",
) -> Evaluation:
    """Translate every distinct source of ``split`` and score it against all its references.

    ``unk`` says how a ``<unk>`` the model writes is scored:

    - ``"word"`` (the default): as one wrong word, which is what it is (it is scored as
      :data:`attnlib.mt.tatoeba.UNK_SCORED`, a word no reference holds);
    - ``"split"``: as the text ``<unk>``, which sacrebleu's 13a tokenizer splits into three
      tokens ``<``, ``unk``, ``>``: three wrong words for one;
    - ``"drop"``: left out, so it costs no precision, only length (the brevity penalty).

    ``hypotheses`` keeps the outputs as shown, ``<unk>`` included (``"drop"``: left out).
    """
    if split not in data.references:
        raise ValueError(f"split must be one of {sorted(data.references)}, got {split!r}")
    if unk not in UNK_SCORINGS:
        raise ValueError(f"unk must be one of {UNK_SCORINGS}, got {unk!r}")
    sources = data.sources(split)
    # The references get the same normalise as the training text: one that keeps ’ or « »
    # could never match the model's ' and " (sacrebleu's 13a tokenizer leaves them as they are).
    references = [[tb.normalise(r, "fr") for r in refs] for _, refs in data.references[split]]
    start = time.perf_counter()
    with torch_threads(threads):
        outputs = translate(model, data, sources, k, keep_unk=unk != "drop", return_attention=False)
    hyps = [t.text for t in outputs]
    ranked = [float(t.score) for t in outputs if t.score is not None]
    seconds = time.perf_counter() - start
    lengths = [tb.words(s) for s in sources]
    lo, hi = min(edges[0], *lengths), max(edges[-1], max(lengths) + 1)
    edges = [lo, *edges[1:-1], hi]
    scored = [tb.unk_as_word(h) for h in hyps] if unk == "word" else hyps
    return Evaluation(
        bleu=scoring.corpus_bleu(scored, references),
        chrf=scoring.corpus_chrf(scored, references),
        by_length=scoring.bleu_by_bucket(scored, references, lengths, edges),
        hypotheses=hyps,
        sources=sources,
        references=references,
        split=split,
        k=k,
        seconds=seconds,
        scores=ranked,
    )


def n_parameters(model: nn.Module) -> int:
    """Number of trainable numbers in ``model``."""
    return sum(p.numel() for p in model.parameters())


# --------------------------------------------------------------------------- shipped checkpoints
CHECKPOINT_DIR = Path(__file__).resolve().parents[1] / "checkpoints" / "translation"
"""Where the shipped English→French checkpoints live (one ``<name>.pt`` per recipe)."""

FORMAT = "attnlib.translation/1"

SHORT_WORDS = 5
"""Train-on-short recipes see only sources of at most this many English words."""

RECIPES: dict[str, Recipe] = {
    "attention": Recipe(),
    "baseline": Recipe(decoder="none"),
    "attention_short": Recipe(max_src_len=SHORT_WORDS),
    "baseline_short": Recipe(decoder="none", max_src_len=SHORT_WORDS),
}
"""The shipped models: the Bahdanau model and the no-attention baseline under the same
recipe, each also trained on short sources only (the analogue of RNNsearch-30/RNNenc-30)."""


@dataclass(frozen=True)
class Trained:
    """A trained English→French model with everything needed to use it.

    Attributes
    ----------
    name : str
        Key of :data:`RECIPES` (or ``"custom"``).
    recipe : Recipe
    model : Seq2Seq
        In eval mode.
    data : Data
        Vocabularies, casing table and held-out references. Loaded from a checkpoint,
        ``data.train`` is empty (the training pairs are not re-tokenised); use
        :func:`prepare` for them.
    history : History

    It is a :class:`attnlib.trained.TrainedModel`, as :class:`attnlib.pretrained.Pretrained`
    is: ``evaluate`` and ``translate`` are bound to the model and its vocabularies.
    """

    name: str
    recipe: Recipe
    model: Seq2Seq = field(repr=False)
    data: Data = field(repr=False)
    history: History = field(repr=False)

    def translate(self, sentences: Sequence[str], k: int = 1, **kw: Any) -> list[Translation]:
        """:func:`translate` with this model and its vocabularies."""
        return translate(self.model, self.data, sentences, k, **kw)

    def evaluate(self, split: str = "test", k: int = 1, **kw: Any) -> Evaluation:
        """:func:`evaluate` with this model on ``split``."""
        return evaluate(self.model, self.data, split, k, **kw)


def checkpoint_path(name: str, directory: str | Path | None = None) -> Path:
    """``<directory>/<name>.pt`` (default :data:`CHECKPOINT_DIR`)."""
    _recipe_named(name)
    return Path(directory or CHECKPOINT_DIR) / f"{name}.pt"


def _recipe_named(name: str) -> Recipe:
    return recipe_named(RECIPES, name, "translation recipe")


def save(trained: Trained, path: str | Path) -> Path:
    """Write ``trained`` as a checkpoint that :func:`load` reads with ``weights_only=True``.

    It holds plain data only: the recipe, the model's keywords, the float32 weights,
    both vocabularies (their tokens in id order), the casing table (the entries that
    are not plain lower case, for tokens of the French vocabulary) and the history.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    config = trained.model.config
    ckpt = {
        "format": FORMAT,
        "recipe": trained.recipe.as_dict(),
        "model": config.as_dict() if config is not None else {},
        "state_dict": {k: v.detach().clone() for k, v in trained.model.state_dict().items()},
        "src_itos": list(trained.data.src_vocab.itos),
        "tgt_itos": list(trained.data.tgt_vocab.itos),
        # only what differs from lower case, for tokens the model can write
        "casing": {
            low: form
            for low, form in sorted(trained.data.casing.items())
            if form != low and low in trained.data.tgt_vocab.stoi
        },
        "history": trained.history.as_dict(),
    }
    tmp = path.with_suffix(".tmp")
    torch.save(ckpt, tmp)
    tmp.replace(path)
    return path


def _vocab_from(itos: Sequence[str], name: str) -> Vocab:
    vocab = Vocab(list(itos[EOS_ID + 1 :]), name=name)
    if vocab.itos != tuple(itos):
        raise ValueError(f"checkpoint {name} does not start with <pad> <bos> <eos>")
    return vocab


def _inference_data(
    recipe: Recipe, src_itos: Sequence[str], tgt_itos: Sequence[str], casing: dict[str, str]
) -> Data:
    """:class:`Data` for a trained model: the split and references, no training tokens."""
    pairs = tb.load_pairs()
    if recipe.limit is not None:
        pairs = pairs[: recipe.limit]
    parts = tb.split(
        pairs, seed=recipe.seed, test_sources=recipe.test_sources,
        valid_sources=recipe.valid_sources,
    )  # fmt: skip
    src_vocab = _vocab_from(src_itos, "English vocabulary")
    tgt_vocab = _vocab_from(tgt_itos, "French vocabulary")
    return Data(
        split=parts,
        src_vocab=src_vocab,
        tgt_vocab=tgt_vocab,
        train=[],
        valid=tb.encode_each(tb.tokenise_pairs(parts.valid), src_vocab, tgt_vocab),
        casing=dict(casing),
        references={n: parts.references(n) for n in ("valid", "test")},
    )


def load(
    name: str,
    *,
    retrain: bool | None = None,
    progress: bool = True,
    directory: str | Path | None = None,
) -> Trained:
    """A shipped English→French model, from its checkpoint or trained live.

    Parameters
    ----------
    name : str
        One of :data:`RECIPES`: ``"attention"``, ``"baseline"``, ``"attention_short"``,
        ``"baseline_short"``.
    retrain : bool, optional
        True trains from the recipe (about 7 minutes on two cores; the same seeds
        and thread count give the shipped weights on the machine that made them).
        None (default) retrains only if ``ATTNLIB_RETRAIN`` is set to 1/true/yes.
    progress : bool
        a progress bar and a line per epoch while retraining.
    directory : path, optional
        Read the checkpoint from here instead of :data:`CHECKPOINT_DIR`.

    Raises
    ------
    FileNotFoundError
        If the checkpoint is missing.
    ValueError
        If it was made by a different recipe than ``RECIPES[name]``.
    """
    recipe = _recipe_named(name)
    if want_retrain(retrain):
        return _fit(name, recipe, progress=progress)
    ckpt = read_checkpoint(
        checkpoint_path(name, directory),
        form=FORMAT,
        recipe=recipe,
        name=name,
        command="python -m attnlib.mt.translation",
    )
    data = _inference_data(recipe, ckpt["src_itos"], ckpt["tgt_itos"], ckpt["casing"])
    model = build_model(recipe, data)
    model.load_state_dict(ckpt["state_dict"])
    model.eval()
    return Trained(name, recipe, model, data, History(**ckpt["history"]))


def retrain(name: str, *, seed: int = 0, progress: bool = True) -> Trained:
    """Train the model of ``RECIPES[name]`` from scratch: the one call behind each checkpoint.

    ``save(retrain("attention"), "attention.pt")`` remakes the shipped file.

    Parameters
    ----------
    name : str
        One of :data:`RECIPES`.
    seed : int
        The training seed: 0 is the shipped recipe; ``k`` keeps its split (the same training,
        validation and test sentences) and draws other initial weights and another batch
        order (``Recipe.seed + k``, which the returned ``recipe`` holds).
    progress : bool
        A progress bar and a line per epoch.
    """
    return _fit(name, _recipe_named(name), seed=check_seed(seed), progress=progress)


def _fit(name: str, recipe: Recipe, *, seed: int = 0, progress: bool = True) -> Trained:
    """Split, tokenise and train ``recipe`` (:func:`prepare`, :func:`train_model`), as ``name``.

    ``seed`` as for :func:`retrain`: the split is always ``recipe``'s own.
    """
    data = prepare(recipe)
    if seed:
        recipe = dataclasses.replace(recipe, seed=recipe.seed + seed)
    model, history = train_model(recipe, data, progress=progress)
    return Trained(name, recipe, model, data, history)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m attnlib.mt.translation [NAME ...] [--out DIR]``: train and save checkpoints."""
    parser = argparse.ArgumentParser(
        prog="python -m attnlib.mt.translation",
        description="Train the shipped English→French models from their recipes.",
    )
    parser.add_argument("names", nargs="*", help=f"default: all of {list(RECIPES)}")
    parser.add_argument("--out", default=None, help="folder (default: the package's)")
    args = parser.parse_args(argv)
    for name in args.names or list(RECIPES):
        made = retrain(name)
        path = save(made, checkpoint_path(name, args.out))
        h = made.history
        print(
            f"{name}: {h.steps} steps, best epoch {h.best_epoch} of {len(h.valid_loss)} "
            f"({h.stopped}), {h.seconds:.0f} s → {path} ({path.stat().st_size / 1e6:.2f} MB)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
