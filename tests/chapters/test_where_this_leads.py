"""Every chapter ends with a "Where this leads" block: the source's related notes, and where to go next."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import ROOT, TOC_CHAPTERS

#: Every chapter, in the order the site numbers them.
CHAPTERS = TOC_CHAPTERS
HEADING = "## Where this leads"
#: the six notes the source's question bank links to ("See …")
NOTES = (
    "RNN and LSTM fundamentals",
    "Information bottleneck",
    "Gradient flow in deep networks",
    "Neural machine translation",
    "Seq2seq models",
    "Transformers and self-attention",
)
DOC = re.compile(r"\{doc\}`([^`]+)`")


def _last_markdown(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    text = [c for c in cells if c["cell_type"] == "markdown"][-1]["source"]
    return "".join(text)


def test_the_chapters_are_there() -> None:
    # every chapter notebook is in the table of contents, and the book has its 20 chapters
    assert sorted(CHAPTERS) == sorted((ROOT / "chapters").glob("*.ipynb"))
    assert len(CHAPTERS) >= 20, [p.stem for p in CHAPTERS]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_a_chapter_ends_with_where_this_leads(path: Path) -> None:
    block = _last_markdown(path)
    assert block.startswith(HEADING), f"{path.name}: the last markdown cell is not {HEADING!r}"
    bullets = [line for line in block.splitlines() if line.startswith("- ")]
    assert 2 <= len(bullets) <= 4, f"{path.name}: {len(bullets)} bullets, expected 2 to 4"
    links = DOC.findall(block)
    assert len(links) >= 2, f"{path.name}: {len(links)} {{doc}} links, expected at least 2"
    assert any(note in block for note in NOTES), f"{path.name}: names none of the source's notes"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_its_links_point_at_pages_that_exist(path: Path) -> None:
    for target in DOC.findall(_last_markdown(path)):
        page = (path.parent / target).resolve()
        assert any(page.with_suffix(s).is_file() for s in (".ipynb", ".md")), (path.name, target)
        assert page.with_suffix("").name != path.stem, f"{path.name} links to itself"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_its_citations_are_in_the_bibliography(path: Path) -> None:
    bib = (ROOT / "references.bib").read_text()
    keys = set(re.findall(r"@\w+\{([^,]+),", bib))
    for group in re.findall(r"\{cite:[pt]\}`([^`]+)`", _last_markdown(path)):
        for key in group.split(","):
            assert key.strip() in keys, f"{path.name} cites {key!r}, not in references.bib"


def test_every_related_note_is_covered_somewhere() -> None:
    text = "\n".join(_last_markdown(p) for p in CHAPTERS)
    missing = [note for note in NOTES if note not in text]
    assert not missing, missing
