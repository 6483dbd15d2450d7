"""The install cell that lets a chapter or an exercise run where attnlib is missing.

Colab (and any Jupyter without the course's environment) opens a notebook on its
own, without the repository around it. So the first code cell of every chapter
and every exercise installs the course package from git when ``import attnlib``
fails, and does nothing where it is installed (the website's build, Binder, a
local ``make book``). This module holds that cell's one template,
:func:`install_cell`, and the repository it installs from, :func:`repository`
(``repository.url`` and ``repository.branch`` in ``_config.yml``).

In a chapter the install cell is a code cell of its own, first of all code
cells and tagged ``remove-cell``: it runs when the book executes, but the
website does not show it. ``python -m attnlib.colab`` (``make chapters``)
writes it into every ``chapters/*.ipynb``; a second run changes nothing.
The exercises get their variant from ``make exercises``
(:func:`attnlib.grading.build`).

Examples
--------
>>> from attnlib import colab
>>> print(colab.install_cell(url="https://github.com/o/r", branch="main"))
# Where the course package is missing (on Colab, say), this installs it first, with myst-nb.
try:
    import attnlib
except ModuleNotFoundError:
    %pip install --quiet myst-nb "attnlib @ git+https://github.com/o/r@main"

See Also
--------
The README's set-up; :func:`attnlib.grading.build` for the exercises.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["CELL_ID", "CELL_TAG", "install_cell", "repository", "write_chapters"]

_ROOT = Path(__file__).resolve().parents[1]

CELL_ID = "install-attnlib"
"""The nbformat id of the install cell in every chapter (ids are unique per notebook)."""

CELL_TAG = "remove-cell"
"""The myst-nb tag that keeps the install cell off the website; it still runs."""

_TEMPLATE = """\
{comment}
try:
{imports}
except ModuleNotFoundError:
    %pip install --quiet {others}"attnlib{extras} @ git+{url}@{branch}"{after}"""

_CHAPTER_COMMENT = (
    "# Where the course package is missing (on Colab, say), this installs it first, with myst-nb."
)

_EXERCISE_COMMENT = """\
# Set up the checks. Where the course package or otter-grader is missing (on Colab, say),
# this installs them first; it takes about a minute the first time."""

_EXERCISE_AFTER = """
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


def install_cell(
    exercise: str | None = None, *, url: str | None = None, branch: str | None = None
) -> str:
    """The source of the first code cell: a chapter's, or exercise ``exercise``'s.

    The cell imports what the notebook needs from the course package and, where
    that raises ``ModuleNotFoundError``, installs the package from git with
    IPython's ``%pip``. A chapter's cell also installs myst-nb (the chapters
    ``glue`` their numbers into the prose); an exercise's installs
    ``attnlib[exercises]`` (otter-grader) and then makes the exercise's ``grader``.

    Parameters
    ----------
    exercise : str, optional
        The exercise's notebook name without ``.ipynb`` (e.g. ``"01_masked_softmax"``);
        ``None`` (default) for the chapters' cell.
    url, branch : str, optional
        Where to install from (default: :func:`repository`).

    Returns
    -------
    str
        IPython source, without a trailing newline.
    """
    if url is None or branch is None:
        config_url, config_branch = repository()
        url, branch = url or config_url, branch or config_branch
    if exercise is None:
        comment, modules, after = _CHAPTER_COMMENT, ["attnlib"], ""
        others, extras = "myst-nb ", ""
    else:
        comment, modules = _EXERCISE_COMMENT, ["attnlib.grading", "otter"]
        others, extras = "", "[exercises]"
        after = _EXERCISE_AFTER.format(name=exercise)
    return _TEMPLATE.format(
        comment=comment,
        imports="\n".join(f"    import {module}" for module in modules),
        others=others,
        extras=extras,
        url=url,
        branch=branch,
        after=after,
    )


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


def write_chapters(
    chapters: Path | None = None, *, url: str | None = None, branch: str | None = None
) -> list[Path]:
    """Put the install cell first among the code cells of every chapter notebook.

    A cell with id :data:`CELL_ID` is replaced wherever it is; otherwise the
    cell goes in front of the first code cell. The JSON keeps the layout the
    notebooks are committed in (indent 1, UTF-8 as is, trailing newline), and a
    file is written only when its text changes, so a second run changes nothing.

    Parameters
    ----------
    chapters : Path, optional
        Folder of chapter notebooks (default ``chapters/``).
    url, branch : str, optional
        Where to install from (default: :func:`repository`).

    Returns
    -------
    list of Path
        The notebooks that changed.

    Raises
    ------
    ValueError
        If a notebook has no code cell to put the install cell before.
    """
    source = install_cell(url=url, branch=branch)
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
