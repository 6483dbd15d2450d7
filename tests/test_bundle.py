"""The course as one download (attnlib.bundle): the zip a learner gets from the introduction.

Fast tests build the zip into a temporary folder and read it back as a learner would; the slow
one follows the link of the built introduction page (``make book`` puts the zip in the site).
"""

from __future__ import annotations

import html.parser
import json
import re
import zipfile

import pytest
import yaml

from attnlib import bundle, colab
from conftest import ROOT

SITE = ROOT / "_build" / "html"


def toc_files() -> list[str]:
    """Every page of _toc.yml, read here independently of attnlib.bundle."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]
    stack = list(toc["parts"])
    while stack:
        entry = stack.pop(0)
        if "file" in entry:
            files.append(entry["file"])
        stack[:0] = entry.get("chapters", []) + entry.get("sections", [])
    return files


TOC_NOTEBOOKS = [f"{f}.ipynb" for f in toc_files() if (ROOT / f"{f}.ipynb").is_file()]
#: Absolute paths of a machine: this repository's, and the usual homes and scratch folders.
MACHINE_PATH = re.compile(
    "|".join(
        [
            re.escape(str(ROOT)),
            r"/(?:home|Users|root|tmp|work|opt|usr|var)/",
            r"\b[A-Z]:\\+(?:Users|Windows)\b",  # C:\Users, escaped or not
        ]
    )
)


@pytest.fixture(scope="module")
def zipped(tmp_path_factory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("bundle") / bundle.NAME
    bundle.build(out)
    return zipfile.ZipFile(out)


def members(zf: zipfile.ZipFile) -> dict[str, str]:
    """The zip's files as text, by path inside the one top folder."""
    out = {}
    for name in zf.namelist():
        top, _, rest = name.partition("/")
        assert top == "attention-course", f"{name} lies outside the zip's one folder"
        out[rest] = zf.read(name).decode("utf-8")
    return out


def test_every_notebook_of_the_toc_is_in_the_zip_and_nothing_else_but_the_readme(zipped):
    assert len(TOC_NOTEBOOKS) >= 17 + 6, TOC_NOTEBOOKS  # the chapters and the six exercises
    files = members(zipped)
    assert sorted(files) == sorted([*TOC_NOTEBOOKS, "README.md"])


def test_the_notebooks_are_the_repositorys_without_outputs(zipped):
    files = members(zipped)
    for path in TOC_NOTEBOOKS:
        nb = json.loads(files[path])
        repo = json.loads((ROOT / path).read_text(encoding="utf-8"))
        assert [c["source"] for c in nb["cells"]] == [c["source"] for c in repo["cells"]], path
        assert [c["id"] for c in nb["cells"]] == [c["id"] for c in repo["cells"]], path
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [], f"{path}: {cell['id']} has outputs"
                assert cell["execution_count"] is None, f"{path}: {cell['id']} has a count"


def test_no_file_of_the_zip_names_a_path_of_this_machine(zipped):
    for path, text in members(zipped).items():
        found = MACHINE_PATH.search(text)
        assert not found, (
            f"{path} names a machine path: ...{text[found.start() - 40 : found.end() + 40]}"
        )


def test_the_readme_sets_up_with_one_line_that_installs_the_package_from_the_repository(zipped):
    readme = members(zipped)["README.md"]
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]
    url, branch = config["url"], config["branch"]
    lines = [ln for ln in readme.splitlines() if ln.startswith("pip install")]
    assert len(lines) == 1, lines
    (line,) = lines
    # the same package and source as the chapters' Colab install cell, plus the exercises' extra
    assert f'"attnlib @ git+{url}@{branch}"' in colab.install_cell()
    assert f'"attnlib[exercises] @ git+{url}@{branch}"' in line
    for needed in ("jupyterlab", "myst-nb"):  # to open the notebooks; the chapters glue with it
        assert f" {needed} " in line, line
    for path in TOC_NOTEBOOKS:  # and it names every notebook, in the order of the book
        assert f"`{path}`" in readme
    order = [readme.index(f"`{path}`") for path in TOC_NOTEBOOKS]
    assert order == sorted(order)


def test_outputs_and_widget_state_are_stripped_and_machine_paths_in_them_go_with_them(tmp_path):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nchapters:\n  - file: chapters/a\n  - file: chapters/b\n"
    )
    (tmp_path / "intro.md").write_text("# Intro\n")
    (tmp_path / "chapters" / "b.md").write_text("# A page, not a notebook\n")
    warning = {"name": "stderr", "output_type": "stream", "text": "/home/ana/.venv/torch warns"}
    nb = {
        "cells": [
            {"cell_type": "markdown", "id": "m", "metadata": {}, "source": "# A notebook"},
            {
                "cell_type": "code",
                "id": "c",
                "metadata": {},
                "execution_count": 7,
                "outputs": [warning],
                "source": "import torch",
            },
        ],
        "metadata": {"widgets": {"state": {"/home/ana": 1}}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "chapters" / "a.ipynb").write_text(json.dumps(nb))
    out = bundle.build(tmp_path / "out" / "x.zip", tmp_path, line="pip install attnlib")
    files = members(zipfile.ZipFile(out))
    assert sorted(files) == ["README.md", "chapters/a.ipynb"]
    got = json.loads(files["chapters/a.ipynb"])
    assert got["cells"][1]["outputs"] == []
    assert got["cells"][1]["execution_count"] is None
    assert got["cells"][1]["source"] == "import torch"
    assert "widgets" not in got["metadata"]
    assert "/home/ana" not in files["chapters/a.ipynb"]
    assert "- `chapters/a.ipynb`: A notebook" in files["README.md"]


def test_the_zip_is_the_same_bytes_when_built_again(tmp_path):
    first = bundle.build(tmp_path / "1.zip").read_bytes()
    again = bundle.build(tmp_path / "2.zip").read_bytes()
    assert first == again, "two builds of the zip differ: it cannot be checked against the site"


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href" and v]


@pytest.mark.slow  # needs the built site (make book)
def test_the_introduction_page_links_the_zip_the_site_serves(tmp_path):
    intro = SITE / "intro.html"
    if not intro.is_file():
        pytest.skip("no built site: run `make book` first")
    parser = _Links()
    parser.feed(intro.read_text(encoding="utf-8"))
    zips = [h for h in parser.hrefs if h.split("#")[0].endswith(".zip")]
    assert len(zips) == 1, f"intro.html should link one zip, links {zips}"
    target = (intro.parent / zips[0]).resolve()
    assert target.is_relative_to(SITE.resolve()), f"{zips[0]} points outside the site"
    assert target.is_file(), f"intro.html links {zips[0]}, which the site lacks: run `make book`"
    served = zipfile.ZipFile(target)
    assert sorted(members(served)) == sorted([*TOC_NOTEBOOKS, "README.md"])
    fresh = bundle.build(tmp_path / bundle.NAME).read_bytes()
    assert target.read_bytes() == fresh, "the site serves an old zip: run `make book` again"
