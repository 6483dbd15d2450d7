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
* :func:`evaluate_bleu` — corpus BLEU (sacrebleu, all references of each
  source), chrF and BLEU per source-length bucket on a held-out split.

Quick start::

    from attnlib import translation as tr
    recipe = tr.Recipe()                         # the attention model
    data = tr.prepare(recipe)
    model, history = tr.train_model(recipe, data)
    tr.translate(model, data, ["The red car is mine."], k=5)
    print(tr.evaluate_bleu(model, data, k=5).bleu)

The baseline under the same budget is ``tr.Recipe(decoder="none")``.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import nn

from attnlib import decoding, scoring
from attnlib import tatoeba as tb
from attnlib.models import Seq2Seq, make_seq2seq
from attnlib.runtime import eval_mode, torch_threads
from attnlib.vocab import EOS_ID, PAD_ID, Vocab

__all__ = [
    "BUCKET_EDGES",
    "Data",
    "Evaluation",
    "Recipe",
    "TrainHistory",
    "evaluate_bleu",
    "prepare",
    "train_model",
    "translate",
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
        Seeds the split, the initial weights and the batch order.
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
    batch_size: int = 128
    lr: float = 3e-3
    clip: float = 1.0
    max_epochs: int = 10
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
        English sentence (:meth:`attnlib.tatoeba.Split.references`).
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


def _count_words(tokens: Sequence[str]) -> int:
    """Words among tokens: those holding a letter or a digit (punctuation is not a word)."""
    return sum(any(ch.isalnum() for ch in t) for t in tokens)


def _words(en: str) -> int:
    """English words of a sentence (see :func:`_count_words`)."""
    return _count_words(tb.tokenise(en, "en"))


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
        Default: :func:`attnlib.tatoeba.load_pairs` (the first ``recipe.limit`` of them).

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
        train_tok = [(s, t) for s, t in train_tok if _count_words(s) <= recipe.max_src_len]
    refs = {name: parts.references(name) for name in ("valid", "test")}
    return Data(
        split=parts,
        src_vocab=src_vocab,
        tgt_vocab=tgt_vocab,
        train=tb.encode_pairs(train_tok, src_vocab, tgt_vocab),
        valid=tb.encode_pairs(valid_tok, src_vocab, tgt_vocab),
        casing=build_casing(p.fr for p in parts.train),
        references=refs,
    )


# --------------------------------------------------------------------------- training
@dataclass
class TrainHistory:
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
        hidden=recipe.hidden, d_s=recipe.d_s, d_a=recipe.d_a, seed=recipe.seed,
    )  # fmt: skip


@torch.no_grad()
def validation_loss(
    model: Seq2Seq, encoded: Sequence[tb.EncodedPair], batch_size: int = 256
) -> float:
    """Teacher-forced cross-entropy on ``encoded`` pairs, nats per target token."""
    total, count = 0.0, 0
    with eval_mode(model):
        for b in tb.batches(encoded, batch_size, seed=None):
            logits, _ = model(b.src, b.tgt_in)
            total += float(
                nn.functional.cross_entropy(
                    logits.flatten(0, 1), b.tgt_out.flatten(), ignore_index=PAD_ID, reduction="sum"
                )
            )
            count += int((b.tgt_out != PAD_ID).sum())
    return total / count


def train_model(recipe: Recipe, data: Data, progress: bool = True) -> tuple[Seq2Seq, TrainHistory]:
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
        Show a tqdm bar per epoch.

    Returns
    -------
    model : Seq2Seq
        In eval mode, with the best epoch's weights.
    history : TrainHistory
    """
    from tqdm.auto import tqdm

    hist = TrainHistory()
    start = time.perf_counter()
    with torch_threads(recipe.threads), torch.random.fork_rng(devices=[]):
        torch.manual_seed(recipe.seed)
        model = build_model(recipe, data)
        opt = torch.optim.Adam(model.parameters(), lr=recipe.lr)
        best, best_state, bad = math.inf, copy.deepcopy(model.state_dict()), 0
        hist.stopped = "max_epochs"
        n_batches = math.ceil(len(data.train) / recipe.batch_size)
        for epoch in range(1, recipe.max_epochs + 1):
            model.train()
            losses = []
            bar = tqdm(
                tb.batches(data.train, recipe.batch_size, seed=recipe.seed * 1000 + epoch),
                total=n_batches, desc=f"epoch {epoch}", disable=not progress, leave=False,
            )  # fmt: skip
            for b in bar:
                logits, _ = model(b.src, b.tgt_in)
                loss = nn.functional.cross_entropy(
                    logits.flatten(0, 1), b.tgt_out.flatten(), ignore_index=PAD_ID
                )
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), recipe.clip)
                opt.step()
                losses.append(loss.item())
                hist.steps += 1
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
            if progress:
                print(
                    f"epoch {epoch}: train loss {hist.epoch_train_loss[-1]:.3f}, "
                    f"valid loss {v:.3f} ({time.perf_counter() - start:.0f} s)"
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
    """Decode English sentences (greedy for k = 1, beam search otherwise), in order."""
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
    model: Seq2Seq, data: Data, sentences: Sequence[str], k: int = 1, *, keep_unk: bool = True
) -> list[str]:
    """Translate English sentences into detokenised French.

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
        Show the ``<unk>`` the model writes (True) or leave them out (False; sacrebleu
        would count ``<unk>`` as three wrong tokens ``< unk >``).

    Returns
    -------
    list of str
        One French sentence per input, in order, with case restored
        (:attr:`Data.casing`) and a capital first letter.
    """
    if isinstance(sentences, str):
        raise TypeError("translate takes a list of sentences; wrap a single one in [ ]")
    decoded = decode(model, data, sentences, k)
    return [_to_text(d.tokens, data.tgt_vocab, data.casing, keep_unk) for d in decoded]


# --------------------------------------------------------------------------- scoring
@dataclass(frozen=True)
class Evaluation:
    """Scores of one model on one held-out split.

    Attributes
    ----------
    bleu : scoring.BleuResult
        Corpus BLEU against all references of each source (its ``signature`` included).
    chrf : scoring.ChrfResult
    buckets : list of scoring.Bucket
        BLEU per source length (English words), edges :data:`BUCKET_EDGES`.
    hypotheses : list of str
    sources : list of str
    references : list of list of str
    k : int
    seconds : float
        Decoding time.
    """

    bleu: scoring.BleuResult
    chrf: scoring.ChrfResult
    buckets: list[scoring.Bucket]
    hypotheses: list[str] = field(repr=False)
    sources: list[str] = field(repr=False)
    references: list[list[str]] = field(repr=False)
    k: int = 1
    seconds: float = 0.0


def evaluate_bleu(
    model: Seq2Seq,
    data: Data,
    split: str = "test",
    k: int = 1,
    *,
    edges: Sequence[int] = BUCKET_EDGES,
    threads: int | None = 2,
    keep_unk: bool = True,
) -> Evaluation:
    """Translate every distinct source of ``split`` and score it against all its references.

    ``keep_unk`` is passed to :func:`translate`; the default scores the output as
    shown, ``<unk>`` included.
    """
    if split not in data.references:
        raise ValueError(f"split must be one of {sorted(data.references)}, got {split!r}")
    sources = data.sources(split)
    references = [refs for _, refs in data.references[split]]
    start = time.perf_counter()
    with torch_threads(threads):
        hyps = translate(model, data, sources, k, keep_unk=keep_unk)
    seconds = time.perf_counter() - start
    lengths = [_words(s) for s in sources]
    lo, hi = min(edges[0], *lengths), max(edges[-1], max(lengths) + 1)
    edges = [lo, *edges[1:-1], hi]
    return Evaluation(
        bleu=scoring.corpus_bleu(hyps, references),
        chrf=scoring.corpus_chrf(hyps, references),
        buckets=scoring.bleu_by_bucket(hyps, references, lengths, edges),
        hypotheses=hyps,
        sources=sources,
        references=references,
        k=k,
        seconds=seconds,
    )


def n_parameters(model: nn.Module) -> int:
    """Number of trainable numbers in ``model``."""
    return sum(p.numel() for p in model.parameters())


def state_bytes(model: nn.Module) -> int:
    """Bytes of the float32 state_dict (about the size of a saved checkpoint)."""
    return sum(t.numel() * 4 for t in model.state_dict().values())
