"""The ``grader`` of each exercise notebook, where the notebook is and where it is not (Colab).

Learner side: imported by the first code cell of every exercise notebook. It needs
otter-grader (``attnlib[exercises]``) for ``grader.check``, and nothing of the
instructor's side.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["CHECKS_DIR", "public_checks", "student_notebook"]

CHECKS_DIR = Path(__file__).resolve().parents[1] / "exercise_checks"
"""Where ``make exercises`` puts each exercise's public tests (package data, committed)."""


def public_checks(name: str) -> dict[str, str]:
    """The public tests of exercise ``name``, as shipped inside attnlib.

    Parameters
    ----------
    name : str
        The exercise's notebook name, with or without ``.ipynb``
        (e.g. ``"01_masked_softmax"``).

    Returns
    -------
    dict
        Question name → otter test file source (public test cases only).

    Raises
    ------
    ValueError
        If there is no exercise of that name.
    """
    stem = Path(name).stem
    path = CHECKS_DIR / f"{stem}.json"
    if not path.is_file():
        known = sorted(p.stem for p in CHECKS_DIR.glob("*.json"))
        raise ValueError(f"there is no exercise named {stem!r}; the exercises are {known}")
    import json

    return json.loads(path.read_text())["tests"]


def _notebook_has_tests(path: Path) -> bool:
    import json

    try:
        meta = json.loads(path.read_text()).get("metadata", {})
    except (OSError, ValueError, AttributeError):
        return False
    return bool(meta.get("otter", {}).get("tests"))


def student_notebook(name: str) -> Any:
    """The ``grader`` of an exercise notebook: ``grader.check("q1")`` runs q1's public tests.

    Where the notebook is saved under its own name (Binder, a local Jupyter,
    grading), this is ``otter.Notebook(name)``, which reads the public tests
    from the notebook file. Where it is not (Colab opens a notebook without
    saving it beside the kernel; a downloaded copy may be renamed), the same
    public tests come from the copy shipped in attnlib
    (``attnlib/exercise_checks/NAME.json``) and are written to a temporary
    folder for otter to read. Either way the checks are the same.

    Parameters
    ----------
    name : str
        The exercise's file name, e.g. ``"01_masked_softmax.ipynb"``.

    Returns
    -------
    otter.Notebook

    Raises
    ------
    ModuleNotFoundError
        If otter-grader is not installed (with the command that installs it).
    ValueError
        If ``name`` is not one of the course's exercises.
    """
    try:
        import otter
        from otter.check.utils import IPythonInterpreter
    except ModuleNotFoundError as err:
        raise ModuleNotFoundError(
            'the checks need otter-grader: run `pip install "attnlib[exercises]"` '
            "(or the README's set-up) and restart the kernel"
        ) from err
    tests = public_checks(name)
    if otter.Notebook._grading_mode:
        return otter.Notebook(name)
    on_colab = IPythonInterpreter.COLAB.value.running()
    if not on_colab and _notebook_has_tests(Path(name)):
        return otter.Notebook(name)
    import json
    import tempfile

    stem = Path(name).stem
    folder = Path(tempfile.mkdtemp(prefix=f"attnlib-checks-{stem}-"))
    for question, source in tests.items():
        (folder / f"{question}.py").write_text(source)
    stub = folder / f"{stem}.ipynb"  # an empty notebook carrying otter's settings
    stub.write_text(
        json.dumps(
            {
                "cells": [],
                "metadata": {"otter": {"assignment_name": stem}},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )
    return otter.Notebook(str(stub), tests_dir=str(folder))
