"""What several chapters' evidence modules share: the trained models by seed, and small helpers.

Private to :mod:`attnlib.evidence`: a chapter calls its own module, never this one. A chapter
module re-exports what its chapter reads from here (``bottleneck.LONG_COPY``, for example).

The models of a claim are read, for every seed, through :func:`trained_model` (the small
models of :mod:`attnlib.pretrained`) or :func:`translation_model` (the English–French models
of :mod:`attnlib.mt.translation`). Seed 0 is the shipped checkpoint, the model the chapter
shows; another seed is the same recipe, on the same data, with other initial weights and
another batch order. Both keep what they made for the life of the process, so that the
chapters' modules run one after the other (``python -m attnlib.evidence``) train each model
once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike

from attnlib import claims, pretrained
from attnlib.core import entropy
from attnlib.experiments import FloatArray
from attnlib.mt import translation as tr
from attnlib.tasks import Task, make_task
from attnlib.train import Translation

__all__ = [
    "LONGER_BUCKETS",
    "LONGER_MAX",
    "LONG_COPY",
    "Checks",
    "all_checks",
    "alpha_of",
    "choose_parts",
    "longer_copy_task",
    "step_entropy",
    "trained_model",
    "translation_model",
    "with_checks",
]

#: A claim function's checks by group: the groups its chapter displays, each under its sentence.
Checks = dict[str, list[claims.Checked]]

# --------------------------------------------------------------------------- models by seed
_TRAINED: dict[tuple[str, int, bool | None], pretrained.Pretrained] = {}
_TRANSLATION: dict[tuple[str, int, bool | None], tr.Trained] = {}


def _seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"a training seed is a whole number ≥ 0, got {seed!r}")
    return seed


def trained_model(
    name: str, seed: int = 0, *, retrain: bool | None = None
) -> pretrained.Pretrained:
    """Small pretrained model ``name`` with training seed ``seed``, made once per process.

    Seed 0 is the shipped checkpoint (or, with ``retrain``, the recipe trained live, as in
    :func:`attnlib.pretrained.load`). Another seed reads the shipped checkpoint
    ``<name>_seed<seed>`` if that recipe exists (it must be
    :func:`attnlib.pretrained.reseeded` ``(name, seed)`` under its own name). Otherwise it
    retrains the recipe with that seed (the same data: only the initial weights and the batch
    order change), or, where :data:`SEED_MODELS` names a folder, reads the model ``make seeds``
    retrained and kept there (``SAVE_SEED_MODELS``: retrains it and writes it there).

    Parameters
    ----------
    name : str
        A recipe of :data:`attnlib.pretrained.RECIPES`.
    seed : int
        Training seed; 0 is the shipped model.
    retrain : bool, optional
        Seed 0 only: train from the recipe instead of loading the checkpoint.

    Returns
    -------
    attnlib.pretrained.Pretrained

    Raises
    ------
    ValueError
        If ``seed`` is not a whole number ≥ 0, or a ``<name>_seed<seed>`` recipe is not
        ``name`` reseeded.
    """
    seed = _seed(seed)
    key = (name, seed, retrain if seed == 0 else None)
    if key not in _TRAINED:
        twin = f"{name}_seed{seed}"
        if seed == 0:
            _TRAINED[key] = pretrained.load(name, retrain=retrain, progress=False)
        elif twin in pretrained.RECIPES:
            want = {**pretrained.reseeded(name, seed).as_dict(), "name": twin}
            if pretrained.RECIPES[twin].as_dict() != want:
                raise ValueError(
                    f"recipe {twin!r} is not recipe {name!r} with training seed {seed}"
                )
            _TRAINED[key] = pretrained.load(twin, progress=False)
        elif SEED_MODELS is not None and not SAVE_SEED_MODELS:
            _TRAINED[key] = pretrained.load_reseeded(name, seed, SEED_MODELS / f"{twin}.pt")
        else:
            _TRAINED[key] = pretrained.retrain(name, seed=seed, progress=False)
            if SEED_MODELS is not None:
                pretrained.save(_TRAINED[key], SEED_MODELS / f"{twin}.pt")
    return _TRAINED[key]


#: The folder of the small models of seeds 1 and 2 that :func:`trained_model` reads instead of
#: retraining them (``tests/seed_models/``, which ``make seeds`` writes and ``make test``
#: reads); None (the default): every seed other than 0 is retrained.
SEED_MODELS: Path | None = None
#: True: :func:`trained_model` retrains every model of a seed other than 0 and writes it to
#: :data:`SEED_MODELS` (``python -m attnlib.evidence --seed-models DIR``).
SAVE_SEED_MODELS = False


def translation_model(
    name: str, seed: int = 0, *, retrain: bool | None = None, progress: bool = False
) -> tr.Trained:
    """English–French model ``name`` with training seed ``seed``, made once per process.

    Seed 0 is the shipped checkpoint (:func:`attnlib.mt.translation.load`; ``retrain`` as
    there). Another seed is :func:`attnlib.mt.translation.retrain` ``(name, seed=seed)``: the
    shipped recipe's split, vocabularies and training pairs, so that every claim is checked on
    the same test sentences, with other initial weights and another batch order; about 7
    minutes on two cores.

    Parameters
    ----------
    name : str
        A recipe of :data:`attnlib.mt.translation.RECIPES`.
    seed : int
        Training seed; 0 is the shipped model.
    retrain : bool, optional
        Seed 0 only: train from the recipe instead of loading the checkpoint.
    progress : bool
        Show the training's progress bar.

    Returns
    -------
    attnlib.mt.translation.Trained
    """
    seed = _seed(seed)
    key = (name, seed, retrain if seed == 0 else None)
    if key not in _TRANSLATION:
        if seed == 0:
            _TRANSLATION[key] = tr.load(name, retrain=retrain, progress=progress)
        elif KEEP is not None and (KEEP / f"{name}_seed{seed}.pt").exists():
            _TRANSLATION[key] = _kept(name, seed, KEEP / f"{name}_seed{seed}.pt")
        else:
            _TRANSLATION[key] = tr.retrain(name, seed=seed, progress=progress)
            if KEEP is not None:
                KEEP.mkdir(parents=True, exist_ok=True)
                made = _TRANSLATION[key]
                torch.save(
                    {
                        "recipe": made.recipe.as_dict(),
                        "state_dict": made.model.state_dict(),
                        "history": dataclasses.asdict(made.history),
                    },
                    KEEP / f"{name}_seed{seed}.pt",
                )
    return _TRANSLATION[key]


#: A folder where :func:`translation_model` keeps the models of seeds other than 0 it trains,
#: and reads them back from in a later process (``python -m attnlib.evidence --keep DIR``):
#: for a rerun of the claims after a change that leaves training alone. None (the default):
#: every seed is retrained.
KEEP: Path | None = None


def _kept(name: str, seed: int, path: Path) -> tr.Trained:
    """A model :func:`translation_model` trained and kept in :data:`KEEP` in an earlier run."""
    saved = torch.load(path, map_location="cpu", weights_only=True)
    recipe = dataclasses.replace(tr.RECIPES[name], seed=tr.RECIPES[name].seed + seed)
    if saved["recipe"] != recipe.as_dict():
        raise ValueError(f"{path} was trained from another recipe than {name!r} with seed {seed}")
    data = tr.prepare(tr.RECIPES[name])
    model = tr.build_model(recipe, data)
    model.load_state_dict(saved["state_dict"])
    model.eval()
    return tr.Trained(name, recipe, model, data, tr.History(**saved["history"]))


# --------------------------------------------------------------------------- the long copy task
#: The three models of the chapter "The fixed-length bottleneck" by role: one budget with and
#: without attention, and the baseline again with four times that budget. All copy strings
#: of 5–20 letters. The chapters "True or false", "Why?" and "Gradient flow and cost" read
#: them too.
LONG_COPY = {
    "attention": "long_copy_attention",
    "none": "long_copy_none",
    "none_4x": "long_copy_none_4x",
}
#: Copy strings longer than any the models of :data:`LONG_COPY` trained on (they saw 5–20),
#: in two buckets: 1–5 and 6–10 letters beyond the longest training string.
LONGER_BUCKETS = (21, 26)
LONGER_MAX = 30


def longer_copy_task(n_test: int = 500) -> Task:
    """Held-out copy strings of 21–30 letters: longer than any the models of LONG_COPY saw.

    The same alphabet and token ids as the models' own task (copy 5–20); only the ``test``
    split is meant to be used (``train`` holds one string).

    Returns
    -------
    attnlib.tasks.Task

    See Also
    --------
    The chapters "The fixed-length bottleneck" (chapters/bottleneck) and "True or false"
    (chapters/true_or_false), statement 6.
    """
    return make_task(
        "copy", min_len=LONGER_BUCKETS[0], max_len=LONGER_MAX, n_train=1, n_valid=0,
        n_test=n_test, seed=0,
    )  # fmt: skip


# --------------------------------------------------------------------------- small helpers
def alpha_of(translation: Translation) -> FloatArray:
    """The attention map α (T_y, T_x) of a translation by a model known to have attention.

    Raises
    ------
    ValueError
        If the translation has none (it was made by the no-attention baseline).
    """
    if translation.alpha is None:
        raise ValueError(
            "this translation has no attention map (alpha is None): "
            "it was made by the no-attention baseline"
        )
    return np.asarray(translation.alpha)


def step_entropy(alpha: ArrayLike) -> FloatArray:
    """H_t of every step of one heatmap α : (T_y, T_x), in nats (float64)."""
    return np.asarray(entropy(np.asarray(alpha, dtype=np.float64)), dtype=np.float64)


def choose_parts(parts: Sequence[str] | None, known: Sequence[str]) -> set[str]:
    """The parts of a claim function to run (None: all of them).

    Raises
    ------
    ValueError
        If ``parts`` names one the function does not have.
    """
    chosen = set(known if parts is None else parts)
    if not chosen <= set(known):
        raise ValueError(f"parts must be among {list(known)}, got {sorted(chosen - set(known))}")
    return chosen


def all_checks(groups: Checks) -> list[claims.Checked]:
    """Every check of a claim function, group by group, in order."""
    return [c for checks in groups.values() for c in checks]


def with_checks(numbers: dict[str, Any], groups: Checks) -> dict[str, Any]:
    """A claim function's result: its numbers, and its checks by group under ``"checks"``."""
    return {**numbers, "checks": groups}
