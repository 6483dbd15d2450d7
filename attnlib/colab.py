"""The install cell: the first code cell of every chapter and exercise.

A notebook is used in two flavours. The **source** flavour is what the repository commits
and what the website's build executes: attnlib is installed there (``make book``), so its
first code cell only imports it (and, in an exercise, makes the ``grader``). The **live**
flavour is what a learner opens from the website's Binder and Colab buttons or the
notebooks' zip (``_ext/live_notebooks.py`` writes it at build time): there the course package
may be missing, so the same cell installs it with IPython's ``%pip``, from the repository the
course is published from, at the commit the website was built from, and never touches a
package that is already installed (Colab's ipywidgets stays as it is).

This module holds both flavours of that cell, :func:`source_cell` and :func:`install_cell`,
and the repository named in ``_config.yml``, :func:`repository`. In a chapter the cell is a
code cell of its own, first of all code cells and tagged ``remove-cell``: it runs when the
book executes, but the website does not show it. ``python -m attnlib.colab``
(``make chapters``) writes the source flavour into every ``chapters/*.ipynb``; a second run
changes nothing. The exercises get theirs from ``make exercises``
(:func:`attnlib.grading.build`).

Examples
--------
>>> from attnlib import colab
>>> print(colab.install_cell(url="https://github.com/o/r", ref="v1.0"))
# Where the course package is missing (on Colab, say), this installs it first (about a minute).
try:
    import attnlib
except ModuleNotFoundError:
    %pip install --quiet "attnlib @ git+https://github.com/o/r@v1.0"

See Also
--------
The README's set-up; :func:`attnlib.grading.build` for the exercises.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["CELL_ID", "CELL_TAG", "install_cell", "repository", "source_cell", "write_chapters"]

_ROOT = Path(__file__).resolve().parents[1]

CELL_ID = "install-attnlib"
"""The nbformat id of the install cell in every chapter (ids are unique per notebook)."""

CELL_TAG = "remove-cell"
"""The myst-nb tag that keeps the install cell off the website; it still runs."""

_SOURCE_CHAPTER = """\
# The course package (installed by the README's set-up). The copies of this notebook that the
# website's Binder and Colab buttons open install it here where it is missing.
import attnlib"""

_SOURCE_EXERCISE = """\
# Set up the checks. The copies of this notebook that the website's Binder and Colab buttons
# open first install the course package here where it is missing.
from attnlib.grading import student_notebook

grader = student_notebook("{name}.ipynb")"""

_LIVE = """\
{comment}
try:
    import attnlib
except ModuleNotFoundError:
    %pip install --quiet "attnlib @ git+{url}@{ref}"{after}"""

_LIVE_CHAPTER = (
    "# Where the course package is missing (on Colab, say), this installs it first (about a minute)."
)

_LIVE_EXERCISE = """\
# Set up the checks. Where the course package is missing (on Colab, say), this installs it
# first; it takes about a minute the first time."""

_LIVE_AFTER = """
from attnlib.grading import student_notebook

grader = student_notebook("{name}.ipynb")"""


def repository(config: Path | None = None) -> tuple[str, str]:
    """The course repository's URL and branch, as ``_config.yml`` names them.

    Parameters
    ----------
    config : Path, optional
        The Jupyter Book configuration (default: the repository's ``_config.yml``).

    Returns
    -------
    url : str
        ``repository.url``, e.g. ``"https://github.com/attention-course/attention-course"``.
    branch : str
        ``repository.branch`` (``"main"`` where it is not set).
    """
    import yaml

    data = yaml.safe_load(Path(config or _ROOT / "_config.yml").read_text())
    return data["repository"]["url"], data["repository"].get("branch", "main")


def source_cell(exercise: str | None = None) -> str:
    """The first code cell as the repository commits it: import, no install.

    Parameters
    ----------
    exercise : str, optional
        The exercise's notebook name without ``.ipynb`` (e.g. ``"01_masked_softmax"``);
        ``None`` (default) for the chapters' cell.

    Returns
    -------
    str
        Python source, without a trailing newline.
    """
    if exercise is None:
        return _SOURCE_CHAPTER
    return _SOURCE_EXERCISE.format(name=exercise)


def install_cell(exercise: str | None = None, *, url: str, ref: str) -> str:
    """The first code cell of a live notebook: install the course where it is missing.

    The cell imports attnlib and, only where that raises ``ModuleNotFoundError``,
    installs it with IPython's ``%pip`` from ``url`` at ``ref``. pip leaves every
    dependency that is already installed as it is (no ``--upgrade``), and attnlib's
    ranges admit what Colab ships, so nothing is replaced under a running kernel.
    An exercise's cell then makes the exercise's ``grader``.

    Parameters
    ----------
    exercise : str, optional
        The exercise's notebook name without ``.ipynb``; ``None`` (default) for a chapter.
    url : str
        The repository the course is published from, e.g. ``"https://github.com/o/r"``.
    ref : str
        The tag or commit the website was built from.

    Returns
    -------
    str
        IPython source, without a trailing newline.

    Raises
    ------
    ValueError
        If ``url`` or ``ref`` is empty or holds a quote or white space.
    """
    for what, value in (("url", url), ("ref", ref)):
        if not value or any(ch.isspace() or ch in "\"'" for ch in value):
            raise ValueError(f"the install cell needs a plain {what}, got {value!r}")
    if exercise is None:
        comment, after = _LIVE_CHAPTER, ""
    else:
        comment, after = _LIVE_EXERCISE, _LIVE_AFTER.format(name=exercise)
    return _LIVE.format(comment=comment, url=url.rstrip("/"), ref=ref, after=after)


def _code_cell(source: str) -> dict:
    """A code cell as nbformat stores it (keys sorted, no outputs)."""
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": CELL_ID,
        "metadata": {"tags": [CELL_TAG]},
        "outputs": [],
        "source": source.splitlines(keepends=True),
    }


def write_chapters(chapters: Path | None = None) -> list[Path]:
    """Put the install cell's source flavour first among the code cells of every chapter.

    A cell with id :data:`CELL_ID` is replaced wherever it is; otherwise the
    cell goes in front of the first code cell. The JSON keeps the layout the
    notebooks are committed in (indent 1, UTF-8 as is, trailing newline), and a
    file is written only when its text changes, so a second run changes nothing.

    Parameters
    ----------
    chapters : Path, optional
        Folder of chapter notebooks (default ``chapters/``).

    Returns
    -------
    list of Path
        The notebooks that changed.

    Raises
    ------
    ValueError
        If a notebook has no code cell to put the install cell before.
    """
    source = source_cell()
    changed = []
    for path in sorted(Path(chapters or _ROOT / "chapters").glob("*.ipynb")):
        text = path.read_text(encoding="utf-8")
        nb = json.loads(text)
        cells = [c for c in nb["cells"] if c.get("id") != CELL_ID]
        first = next((k for k, c in enumerate(cells) if c["cell_type"] == "code"), None)
        if first is None:
            raise ValueError(f"{path.name} has no code cell to put the install cell before")
        cells.insert(first, _code_cell(source))
        nb["cells"] = cells
        new = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m attnlib.colab [CHAPTERS]`` (``make chapters``)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m attnlib.colab",
        description="Write the install cell, from its one template, into every chapter.",
    )
    parser.add_argument("chapters", nargs="?", type=Path, help="folder (default: chapters/)")
    args = parser.parse_args(argv)
    changed = write_chapters(args.chapters)
    for path in changed:
        sys.stdout.write(f"wrote {path}\n")
    if not changed:
        sys.stdout.write("every chapter's install cell is up to date\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
