"""The table of the graded exercises on ``exercises/index``, made from the exercises themselves.

No page lists the exercises by hand. The exercises are what the two registries hold: the
instructor sources ``exercises/source/NN_name.ipynb`` (``make exercises`` writes the student
notebook ``exercises/NN_name.ipynb`` of each, which ``_toc.yml`` takes with a glob) and the
grader's question modules ``attnlib/grading/questions/`` (one per exercise, gathered in
``attnlib.grading.questions.EXERCISES``). A page that holds

.. code-block:: md

    ```{exercise-table}
    ```

shows one row per exercise of the grader's registry, in the order of their numbers: the
exercise (a link to its page, which shows its title), the names the learner writes with the
points of each question, the exercise's points, and the chapters its introduction (the
notebook's first Markdown cell) links. An exercise of the registry with no student notebook is a
link to a page that does not exist, which fails the build (``-W``); a student notebook with no
question module fails ``tests/grading/test_exercises.py``.

The page is read again whenever a student notebook or question module changes, or one is
added or removed, so the table is never older than the exercises.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: A chapter linked from an exercise: {doc}`../chapters/softmax`.
CHAPTER_LINK = re.compile(r"\{doc\}`\.\./chapters/([\w-]+)`")


@dataclass(frozen=True)
class Row:
    """One exercise as the table shows it."""

    name: str  # "01_masked_softmax": its page is exercises/<name>
    questions: tuple[tuple[str, float], ...]  # (the name the answer cell defines, its points)
    chapters: tuple[str, ...]  # the chapter pages its introduction links ("softmax", ...)

    @property
    def points(self) -> float:
        return sum(p for _, p in self.questions)


def intro_chapters(notebook: Path) -> tuple[str, ...]:
    """The chapters the first Markdown cell of ``notebook`` links, in order, each once."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    first = next((c for c in cells if c["cell_type"] == "markdown"), None)
    if first is None:
        raise ValueError(f"{notebook.name} has no Markdown cell: an exercise opens with its title")
    source = "".join(first["source"])
    return tuple(dict.fromkeys(CHAPTER_LINK.findall(source)))


def rows(root: Path) -> list[Row]:
    """The table's rows: the grader's registry, with each exercise's student notebook.

    Parameters
    ----------
    root : Path
        The book's folder (``exercises/`` lies in it).

    Returns
    -------
    list of Row
        One per exercise of ``attnlib.grading.questions.EXERCISES``, in name order.

    Raises
    ------
    FileNotFoundError
        If an exercise of the registry has no student notebook (run ``make exercises``).
    """
    from attnlib.grading.questions import EXERCISES

    out = []
    for name, exercise in sorted(EXERCISES.items()):
        notebook = root / "exercises" / f"{name}.ipynb"
        if not notebook.is_file():
            raise FileNotFoundError(
                f"the grader knows the exercise {name}, but exercises/{name}.ipynb does not "
                "exist: add its source to exercises/source/ and run `make exercises`"
            )
        questions = tuple((q.defines, q.total) for q in exercise.questions)
        out.append(Row(name, questions, intro_chapters(notebook)))
    return out


def markdown(table: list[Row]) -> str:
    """The rows as a MyST table, with links from any page (``{doc}`/exercises/...```)."""
    lines = [
        "| exercise | you write (points) | points | chapters |",
        "|---|---|---|---|",
    ]
    for row in table:
        wrote = ", ".join(f"`{defines}` ({points:g})" for defines, points in row.questions)
        chapters = ", ".join(f"{{doc}}`/chapters/{c}`" for c in row.chapters)
        lines.append(f"| {{doc}}`/exercises/{row.name}` | {wrote} | {row.points:g} | {chapters} |")
    return "\n".join(lines)


def _watched(root: Path) -> list[str]:
    """The files the table is made from: student notebooks and question modules."""
    questions = root / "attnlib" / "grading" / "questions"
    files = [*(root / "exercises").glob("[0-9]*.ipynb"), *questions.glob("*.py")]
    return sorted(p.relative_to(root).as_posix() for p in files)


def _directive() -> Any:
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class ExerciseTable(SphinxDirective):
        """``{exercise-table}``: the table of :func:`rows`, parsed as the page's Markdown."""

        has_content = False

        def run(self) -> list[Any]:
            root = Path(self.env.srcdir)
            for rel in _watched(root):  # an edit to one of them reads the page again
                self.env.note_dependency(str(root / rel))
            tables = self.env.exercise_table_files  # type: ignore[attr-defined]
            tables[self.env.docname] = _watched(root)
            lines = StringList(markdown(rows(root)).splitlines(), source=self.env.docname)
            container = nodes.container(classes=["exercise-table"])
            self.state.nested_parse(lines, self.content_offset, container)
            return list(container.children)

    return ExerciseTable


def _init(app: Any) -> None:
    if not hasattr(app.env, "exercise_table_files"):
        app.env.exercise_table_files = {}


def _outdated(app: Any, env: Any, added: set, changed: set, removed: set) -> list[str]:
    """Pages whose table was made from another set of files than the folders hold now."""
    now = _watched(Path(env.srcdir))
    tables = getattr(env, "exercise_table_files", {})
    return [doc for doc, files in tables.items() if files != now]


def _purge(app: Any, env: Any, docname: str) -> None:
    getattr(env, "exercise_table_files", {}).pop(docname, None)


def _merge(app: Any, env: Any, docnames: set, other: Any) -> None:
    env.exercise_table_files.update(
        {d: f for d, f in getattr(other, "exercise_table_files", {}).items() if d in docnames}
    )


def setup(app: Any) -> dict[str, Any]:
    """Register the ``exercise-table`` directive and the hooks that keep it current."""
    app.add_directive("exercise-table", _directive())
    app.connect("builder-inited", _init)
    app.connect("env-get-outdated", _outdated)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
