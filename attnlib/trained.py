"""One vocabulary for trained models, shared by the toy tasks and the English–French pairs.

The course trains seq2seq models in two places: the small models of the toy tasks
(:mod:`attnlib.pretrained`, trained by :mod:`attnlib.train`) and the English–French models
(:mod:`attnlib.mt.translation`). Both speak the same words, with the same meaning:

``Recipe``
    Every choice that decides one trained model, frozen. ``recipe.as_dict()`` is what the
    model's checkpoint stores, so a checkpoint made by another recipe is refused.
``RECIPES``
    The shipped recipes by name; their checkpoints live in ``CHECKPOINT_DIR``
    (``checkpoint_path(name)``).
``load(name, *, retrain=None, progress=True, directory=None)``
    The shipped model: its checkpoint, or, with ``retrain=True`` or ``ATTNLIB_RETRAIN=1``
    (:func:`attnlib.runtime.want_retrain`), the same recipe trained live.
``retrain(name, *, seed=0, progress=True)``
    The recipe trained live, with training seed ``seed``: other initial weights and
    batch order, the same data (seed 0 is the shipped model).
``evaluate(model, …, split)``
    Held-out scores of a model on a split: overall, and ``by_length``, one :class:`Bucket`
    per range of source lengths.
``translate(model, …, sources)``
    One :class:`Translation` per source: its tokens, the output's tokens, the weights α and
    the output as text.

What ``load`` and ``retrain`` return is a :class:`TrainedModel`: its ``model``, ``recipe``,
``history`` and the two verbs bound to it, ``evaluate(split)`` and ``translate(sources)``.
The protocols here (:class:`Recipe`, :class:`TrainedModel`, :class:`Scores`, :class:`Stack`)
say this once; ``tests/test_trained.py`` holds both stacks to them.

See Also
--------
The chapters "A Bahdanau seq2seq, built from parts" (chapters/seq2seq) and "Training,
decoding and scoring an English→French model" (chapters/training_and_decoding).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np
import torch
from torch import nn

__all__ = [
    "Bucket",
    "Recipe",
    "Scores",
    "Stack",
    "TrainedModel",
    "Translation",
    "bucket_spans",
    "check_seed",
    "read_checkpoint",
    "recipe_named",
]


# --------------------------------------------------------------------------- records
@dataclass(frozen=True)
class Bucket:
    """The sources whose length lies in ``lo … hi`` (both included), and their scores.

    A held-out split is cut by source length so that a claim like "attention holds on the
    long sentences" can be read off one bucket. The scores are those of the stack that
    measured them, read as attributes: ``b.exact_match`` and ``b.token_accuracy`` (the toy
    tasks, :func:`attnlib.train.evaluate`); ``b.bleu`` (:func:`attnlib.mt.translation.evaluate`),
    with ``b.low`` and ``b.high`` where a bootstrap interval was drawn
    (:func:`attnlib.mt.alignments.bleu_table`).

    Attributes
    ----------
    lo, hi : int
        The shortest and the longest source length in the bucket (tokens for the toy
        tasks, English words for the English–French pairs).
    n : int
        Sources in the bucket; 0 for a bucket that no source falls in, which has no scores.
    scores : dict of str to float
        The scores by name.
    dash : str
        What :attr:`label` writes between ``lo`` and ``hi``: an en dash (``"5–9"``) on the
        toy tasks, a hyphen (``"1-3"``) in the English–French tables.
    """

    lo: int
    hi: int
    n: int
    scores: Mapping[str, float] = field(default_factory=dict)
    dash: str = field(default="–", repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.hi < self.lo:
            raise ValueError(f"a bucket needs lo ≤ hi, got lo = {self.lo} and hi = {self.hi}")
        if self.n < 0:
            raise ValueError(f"a bucket holds n ≥ 0 sources, got n = {self.n}")

    def __getattr__(self, name: str) -> float:
        # Called only for a name that is not a field or a property: one of the scores.
        if name.startswith("_") or name in ("scores", "lo", "hi", "n", "dash"):
            raise AttributeError(name)
        scores = self.__dict__.get("scores", {})
        if name in scores:
            return scores[name]
        if self.n == 0:
            raise AttributeError(f"no source has a length in {self.label}: no {name} to read")
        raise AttributeError(f"bucket {self.label} has no score {name!r}; it has {sorted(scores)}")

    @property
    def label(self) -> str:
        """``"5–9"`` (or ``"1-3"``), or ``"7"`` for a bucket of one length."""
        return str(self.lo) if self.lo == self.hi else f"{self.lo}{self.dash}{self.hi}"

    @property
    def end(self) -> int:
        """``hi + 1``: where the next bucket starts (the bucket is ``lo ≤ length < end``)."""
        return self.hi + 1

    def as_dict(self) -> dict[str, Any]:
        """``{"lo", "hi", "n", <scores>}``: plain numbers, as a checkpoint stores them."""
        return {"lo": self.lo, "hi": self.hi, "n": self.n, **self.scores}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], dash: str = "–") -> Bucket:
        """The bucket :meth:`as_dict` wrote."""
        scores = {k: float(v) for k, v in d.items() if k not in ("lo", "hi", "n")}
        return cls(int(d["lo"]), int(d["hi"]), int(d["n"]), scores, dash)


def bucket_spans(edges: Sequence[int]) -> list[tuple[int, int]]:
    """``(lo, hi)`` of each bucket ``edges[j] ≤ length < edges[j + 1]``, both ends included.

    >>> bucket_spans([1, 4, 5, 7])
    [(1, 3), (4, 4), (5, 6)]
    """
    bounds = [int(e) for e in edges]
    if len(bounds) < 2 or any(a >= b for a, b in pairwise(bounds)):
        raise ValueError(f"edges must be at least two strictly increasing numbers, got {bounds}")
    return [(a, b - 1) for a, b in pairwise(bounds)]


@dataclass(frozen=True)
class Translation:
    """One decoded source with its attention map, ready for a heatmap.

    Attributes
    ----------
    src : list of str
        Source tokens, ``<eos>`` included: the T_x column labels.
    out : list of str
        Output tokens, ``<eos>`` included if produced: the T_y row labels.
    alpha : (T_y, T_x) ndarray or None
        α_ti; None for the no-attention baseline (or when not asked for).
    text : str
        The output as readable text (without ``<eos>``).
    score : float or None
        What the search ranked the output by, log p(y | x) / lp(|y|)
        (:func:`attnlib.decoding.beam_search`); None where the decoder does not give it.
    """

    src: list[str]
    out: list[str]
    alpha: np.ndarray | None
    text: str
    score: float | None = None


# --------------------------------------------------------------------------- protocols
@runtime_checkable
class Recipe(Protocol):
    """Every choice that decides one trained model; frozen, so a checkpoint can store it."""

    def as_dict(self) -> dict[str, Any]:
        """The recipe as plain data: what the model's checkpoint stores."""
        ...


class Scores(Protocol):
    """What ``evaluate`` returns: scores on one split, overall and per source length."""

    @property
    def split(self) -> str: ...
    @property
    def n(self) -> int: ...
    @property
    def by_length(self) -> Sequence[Bucket]: ...


@runtime_checkable
class TrainedModel(Protocol):
    """What ``load`` and ``retrain`` return: a trained model, how it was made, and its verbs."""

    @property
    def name(self) -> str: ...
    @property
    def recipe(self) -> Recipe: ...
    @property
    def model(self) -> nn.Module: ...
    @property
    def history(self) -> Any: ...

    def evaluate(self, split: str = "test") -> Scores:
        """Held-out scores of the model on ``split``."""
        ...

    def translate(self, sources: Sequence[str]) -> list[Translation]:
        """One :class:`Translation` per source."""
        ...


class Stack(Protocol):
    """A module that ships trained models: attnlib.pretrained and attnlib.mt.translation."""

    RECIPES: Mapping[str, Recipe]
    CHECKPOINT_DIR: Path

    def checkpoint_path(self, name: str, directory: str | Path | None = None) -> Path: ...

    def load(
        self,
        name: str,
        *,
        retrain: bool | None = None,
        progress: bool = True,
        directory: str | Path | None = None,
    ) -> TrainedModel: ...

    def retrain(self, name: str, *, seed: int = 0, progress: bool = True) -> TrainedModel: ...


# --------------------------------------------------------------------------- checkpoints
R = TypeVar("R")


def recipe_named(recipes: Mapping[str, R], name: str, what: str) -> R:
    """``recipes[name]``, or a ValueError that lists the names there are.

    ``what`` names the kind of recipe in the message ("pretrained model").
    """
    if not isinstance(name, str) or name not in recipes:
        raise ValueError(f"no {what} {name!r}; choose one of {', '.join(recipes)}")
    return recipes[name]


def check_seed(seed: Any) -> int:
    """``seed`` as a training seed: a whole number ≥ 0 (0 is the shipped model's)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a whole number ≥ 0, got {seed!r}")
    return seed


def read_checkpoint(
    path: Path, *, form: object, recipe: Recipe, name: str, command: str
) -> dict[str, Any]:
    """Read the checkpoint of ``name`` at ``path``, made by ``recipe`` in format ``form``.

    It is read with ``torch.load(..., weights_only=True)``: tensors, numbers, strings, lists
    and dicts, never pickled code.

    Raises
    ------
    FileNotFoundError
        If there is no file at ``path``.
    ValueError
        If the file was written in another format or by another recipe (``command`` is what
        makes it again).
    """
    if not path.exists():
        raise FileNotFoundError(
            f"no checkpoint {path}; make it with `{command} {name}` or pass retrain=True"
        )
    ckpt: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=True)
    if ckpt.get("format") != form or ckpt.get("recipe") != recipe.as_dict():
        raise ValueError(
            f"checkpoint {path} was made by a different recipe than RECIPES[{name!r}]; "
            f"make it again with `{command} {name}` or pass retrain=True"
        )
    return ckpt
