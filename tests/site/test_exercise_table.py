"""The table of exercises on ``exercises/index`` (``_ext/exercise_table.py``), made, not typed.

The table is held to what the exercises state on their own, not to the code that makes it:
its rows to the instructor sources, the points of each question to the prompt's "**Question 1
(4 points).**" (``fixtures.submissions.POINTS``), its chapters to the links of the exercise's
introduction. A small book built here shows the directive renders as a table of links; the
slow test reads the course's built page.
"""

from __future__ import annotations

import html
import importlib
import json
import re
import sys
from types import ModuleType

import pytest

from conftest import EXERCISES, ROOT
from fixtures import submissions as fx

SITE = ROOT / "_build" / "html"


def _ext() -> ModuleType:
    sys.path.insert(0, str(ROOT / "_ext"))
    try:
        return importlib.import_module("exercise_table")
    finally:
        sys.path.remove(str(ROOT / "_ext"))


SOURCES = sorted(p.stem for p in (EXERCISES / "source").glob("*.ipynb"))


def test_one_row_per_source_in_number_order_with_the_points_its_prompts_state() -> None:
    rows = _ext().rows(ROOT)
    assert [r.name for r in rows] == SOURCES
    for row in rows:
        assert [p for _, p in row.questions] == list(fx.POINTS[row.name].values()), row.name
        assert row.points == sum(fx.POINTS[row.name].values())


def test_each_row_names_the_chapters_its_introduction_links_and_they_are_pages() -> None:
    for row in _ext().rows(ROOT):
        assert row.chapters, f"{row.name}: its introduction links no chapter"
        cells = json.loads((EXERCISES / f"{row.name}.ipynb").read_text())["cells"]
        intro = "".join(next(c for c in cells if c["cell_type"] == "markdown")["source"])
        assert [c for c in row.chapters if f"{{doc}}`../chapters/{c}`" not in intro] == []
        assert all((ROOT / "chapters" / f"{c}.ipynb").is_file() for c in row.chapters), row


def test_the_markdown_links_each_exercise_and_chapter_from_any_page() -> None:
    ext = _ext()
    row = ext.Row("09_x", (("f", 2.0), ("g", 1.5)), ("softmax", "masking"))
    lines = ext.markdown([row]).splitlines()
    assert lines[0] == "| exercise | you write (points) | points | chapters |"
    assert lines[2] == (
        "| {doc}`/exercises/09_x` | `f` (2), `g` (1.5) | 3.5 "
        "| {doc}`/chapters/softmax`, {doc}`/chapters/masking` |"
    )


def test_an_exercise_the_grader_knows_without_its_notebook_stops_the_build(tmp_path) -> None:
    (tmp_path / "exercises").mkdir()
    with pytest.raises(
        FileNotFoundError, match=r"exercises/01_masked_softmax\.ipynb.*make exercises"
    ):
        _ext().rows(tmp_path)


@pytest.mark.slow  # a Sphinx build (~2 s)
def test_a_page_with_the_directive_shows_the_table_with_its_links(tmp_path) -> None:
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    (src / "exercises").mkdir(parents=True)
    (src / "chapters").mkdir()
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / '_ext')!r})\n"
        "extensions = ['myst_parser', 'exercise_table']\nroot_doc = 'index'\n"
    )
    (src / "index.md").write_text("# Exercises\n\n```{exercise-table}\n```\n")
    rows = _ext().rows(ROOT)
    pages = {f"exercises/{r.name}" for r in rows} | {
        f"chapters/{c}" for r in rows for c in r.chapters
    }
    for page in pages:  # a stand-in page for each exercise and chapter, titled by its name
        (src / f"{page}.md").write_text(f"# Title of {page}\n")
    for r in rows:  # the extension reads the exercise's introduction from its notebook
        (src / "exercises" / f"{r.name}.ipynb").write_bytes(
            (EXERCISES / f"{r.name}.ipynb").read_bytes()
        )
    app = Sphinx(src, src, tmp_path / "out", tmp_path / "doctrees", "html", status=None)
    app.build()
    page = (tmp_path / "out" / "index.html").read_text()
    assert "<tbody>" in page, "the directive made no table"
    body = page[page.index("<tbody>") : page.index("</tbody>")]
    cells = [
        [
            html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<td>(.*?)</td>", tr, re.S)
        ]
        for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    ]
    assert [c[0] for c in cells] == [f"Title of exercises/{r.name}" for r in rows]
    assert [c[2] for c in cells] == [f"{sum(fx.POINTS[r.name].values()):g}" for r in rows]
    for r in rows:
        assert f'href="exercises/{r.name}.html"' in body
        assert all(f'href="chapters/{c}.html"' in body for c in r.chapters)


@pytest.mark.slow  # needs the built site (make book)
def test_the_built_exercises_page_states_the_points_the_prompts_state() -> None:
    index = SITE / "exercises" / "index.html"
    assert index.is_file(), f"no built site in {SITE}: run `make book` first"
    page = index.read_text(encoding="utf-8")
    assert "<tbody>" in page, (
        "exercises/index.html shows no table: build the site again (make book)"
    )
    body = page[page.index("<tbody>") : page.index("</tbody>")]
    shown = {}
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S):
        link = re.search(r'href="(\w+)\.html"', tr)
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td>(.*?)</td>", tr, re.S)]
        shown[link.group(1)] = cells[2]
    assert shown == {name: f"{sum(pts.values()):g}" for name, pts in fx.POINTS.items()}
