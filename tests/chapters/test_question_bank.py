"""Part III's question bank ("True or false", "Spot the error"): nothing under a closed answer gives it away.

Every code cell of a numbered question, its output and its ``attnlib.claims`` checks, is folded
(myst-nb's ``hide-cell``) under a prompt that names what it holds; the checks keep cells of
their own. On the built page no output of a question shows before the reader opens it.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import ROOT

CHAPTERS = ["chapters/true_or_false.ipynb", "chapters/spot_the_error.ipynb"]


def question_cells(path: str) -> list[tuple[str, dict]]:
    """(section, cell) for every code cell between a '## N.' heading and the summary."""
    nb = json.loads((ROOT / path).read_text(encoding="utf-8"))
    out, section = [], None
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            heading = re.search(r"^## (\d+)\. ", text, re.M)
            section = heading.group(1) if heading else section
            if re.search(r"^## (Summary|Check yourself)", text, re.M):
                section = "check yourself"
        elif section is not None:
            out.append((section, cell))
    return out


@pytest.mark.parametrize("path", CHAPTERS)
def test_every_code_cell_of_a_question_is_folded_under_a_named_prompt(path):
    cells = question_cells(path)
    assert len(cells) >= 15, f"{path}: found only {len(cells)} question cells"
    for section, cell in cells:
        meta = cell["metadata"]
        assert "hide-cell" in meta.get("tags", []), f"{path} §{section}: {cell['id']} is not folded"
        prompt = meta.get("mystnb", {}).get("code_prompt_show", "")
        assert prompt.startswith("Show "), f"{path}: {cell['id']} has prompt {prompt!r}"


@pytest.mark.parametrize("path", CHAPTERS)
def test_claims_checks_stay_in_cells_of_their_own(path):
    # a check is visible (folded, never removed) and is not mixed with the code it checks
    for _, cell in question_cells(path):
        text = "".join(cell["source"])
        tags = cell["metadata"].get("tags", [])
        assert not {"remove-cell", "remove-output"} & set(tags), cell["id"]
        if re.search(r"claims\.\w+\(|\[\"checks\"\]", text) and "glue(" in text:
            pytest.fail(f"{path}: {cell['id']} glues numbers and checks them in one cell")


@pytest.mark.slow  # needs the built site (make book)
@pytest.mark.parametrize("path", CHAPTERS)
def test_on_the_page_no_output_of_a_question_shows_unopened(path):
    page = ROOT / "_build" / "html" / path.replace(".ipynb", ".html")
    assert page.is_file(), "no built site: run `make book` first"
    html = page.read_text(encoding="utf-8")
    first = (
        html.index('id="attention-removes') if "true_or_false" in path else html.index('id="feed-')
    )
    body = html[first : html.index('id="summary"')]
    # drop every folded block (myst-nb's <details class="... hide ...">), then look for outputs
    open_part = re.sub(r'<details class="[^"]*\bhide\b.*?</details>', "", body, flags=re.S)
    assert "cell_output" not in open_part, "a question shows an output without being opened"
    assert "attnlib-claim" not in open_part, "a question shows a check without being opened"
    assert body.count('<details class="admonition hide') >= 15
