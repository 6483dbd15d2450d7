"""The instructor's build: sources → student notebooks, solutions and the shipped public checks.

``make exercises`` (``python -m attnlib.grading build``) runs ``otter assign``
on every instructor source ``exercises/source/NN_name.ipynb``. The sources hold
the solutions and the **public** tests only: the hidden cases are drawn at
grading time from the instructor's private seed (:mod:`.cases`), so nothing in
the repository reveals them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attnlib.colab import source_cell
from attnlib.grading.notebook import CHECKS_DIR

__all__ = ["build"]


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


_OTTER_CHECK_ALL = "the cell below will rerun all of the autograder tests"
_CHECK_ALL = "the cell below reruns every check of this notebook (the public tests)"


def _normalise_student(nb: Any, name: str) -> Any:
    """Deterministic ids, no outputs: the committed student notebook is reproducible.

    Otter's "rerun all of the autograder tests" would promise more than it runs: the
    hidden cases live with the grader, so the sentence names what runs.
    """
    for k, cell in enumerate(nb.cells):
        if cell.get("cell_type") == "markdown":
            cell["source"] = cell["source"].replace(_OTTER_CHECK_ALL, _CHECK_ALL)
        cell["id"] = f"{name[:40]}-{k:03d}"
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return nb


def _set_init_cell(nb: Any, name: str) -> None:
    """Replace otter's first cell with the course's (:func:`attnlib.colab.source_cell`)."""
    first = nb.cells[0]
    if not first.source.startswith("# Initialize Otter"):
        raise RuntimeError(f"{name}: otter assign no longer starts with its init cell")
    first.source = source_cell(name)


def _title_first(nb: Any, name: str) -> None:
    """Put the title cell above otter's init cell, which stays the first code cell.

    otter assign writes its init cell at the very top, above the title: a reader of the
    website or of the notebook would meet code before knowing what the exercise is.
    The init cell still runs first: nothing before it is code.
    """
    k = next(
        (
            i
            for i, cell in enumerate(nb.cells)
            if cell.cell_type == "markdown"
            and any(line.startswith("# ") for line in cell.source.splitlines())
        ),
        None,
    )
    if k is None:
        raise RuntimeError(f"{name}: no markdown cell with a '# ' title")
    if any(cell.cell_type == "code" for cell in nb.cells[1:k]):
        raise RuntimeError(f"{name}: code other than the init cell comes before the title")
    nb.cells.insert(0, nb.cells.pop(k))


def build(
    sources: Path | None = None,
    students: Path | None = None,
    out: Path | None = None,
    names: Sequence[str] | None = None,
    checks: Path | None = None,
) -> list[Path]:
    """Turn every instructor source into a student notebook and a solution notebook.

    Parameters
    ----------
    sources : Path, optional
        Folder of instructor source notebooks (default ``exercises/source``).
    students : Path, optional
        Where the student notebooks go (default ``exercises``).
    out : Path, optional
        Build folder (default ``exercises/_build``): ``solutions/NAME.ipynb``
        (the source with otter's markers removed; otter's own autograder zip is
        not used: the grader is :mod:`attnlib.grading.grader`).
    names : sequence of str, optional
        Only these exercises (file stems).
    checks : Path, optional
        Where each exercise's public tests go for :func:`student_notebook`
        (default ``attnlib/exercise_checks``, shipped with the package).

    Returns
    -------
    list of Path
        The student notebooks written.

    See Also
    --------
    The page "Exercises" (exercises/index).
    """
    import json
    import subprocess
    import tempfile

    import nbformat

    root = _repo_root()
    sources = Path(sources or root / "exercises" / "source")
    students = Path(students or root / "exercises")
    out = Path(out or root / "exercises" / "_build")
    checks = Path(checks or CHECKS_DIR)
    written = []
    students.mkdir(parents=True, exist_ok=True)
    for src in sorted(sources.glob("*.ipynb")):
        name = src.stem
        if names and name not in names:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            dist = Path(tmp) / "dist"
            proc = subprocess.run(
                [sys.executable, "-m", "otter", "assign", str(src), str(dist)],
                capture_output=True,
                text=True,
                check=False,
                cwd=src.parent,
            )
            if proc.returncode != 0:
                raise RuntimeError(
                    f"otter assign failed on {src.name}:\n{proc.stdout}\n{proc.stderr}"
                )
            nb = nbformat.read(dist / "student" / f"{name}.ipynb", as_version=4)
            _set_init_cell(nb, name)
            _title_first(nb, name)
            student = students / f"{name}.ipynb"
            nbformat.write(_normalise_student(nb, name), student)
            checks.mkdir(parents=True, exist_ok=True)
            payload = {"assignment_name": name, "tests": dict(nb.metadata["otter"]["tests"])}
            text = json.dumps(payload, indent=1, sort_keys=True) + "\n"
            (checks / f"{name}.json").write_text(text)
            written.append(student)
            (out / "solutions").mkdir(parents=True, exist_ok=True)
            solved = nbformat.read(dist / "autograder" / f"{name}.ipynb", as_version=4)
            _set_init_cell(solved, name)
            _title_first(solved, name)
            nbformat.write(_normalise_student(solved, name), out / "solutions" / f"{name}.ipynb")
    return written
