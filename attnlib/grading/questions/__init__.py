"""The grader's checks of every exercise, one module each, gathered in :data:`EXERCISES`.

Trusted side (see :mod:`attnlib.grading.cases` for how a check works). Each module of this
package defines ``EXERCISE``; :data:`EXERCISES` is built from the modules found here, so a new
exercise is one more module (beside its source notebook ``exercises/source/NN_name.ipynb``) and
nothing else to list.
"""

from __future__ import annotations

import importlib
import pkgutil

from attnlib.grading.cases import Exercise

__all__ = ["EXERCISES"]


def _discover() -> dict[str, Exercise]:
    """Every module's ``EXERCISE``, by exercise name (``"01_masked_softmax"``), in name order."""
    found: dict[str, Exercise] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        exercise = importlib.import_module(f"{__name__}.{info.name}").EXERCISE
        if exercise.name in found:
            raise ValueError(f"two question modules define the exercise {exercise.name!r}")
        found[exercise.name] = exercise
    return dict(sorted(found.items()))


EXERCISES: dict[str, Exercise] = _discover()
