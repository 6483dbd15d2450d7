"""The course as one download (attnlib.bundle): the zip a learner gets from the introduction.

Fast tests zip a small live tree written here by hand; the slow ones zip the live copies the
website's build wrote (``_build/live``, ``make book``), read the zip back as a learner would, and
follow the link of the built introduction page (``make book`` puts the zip in the site).
``$SITE_DIR`` checks another build, as in ``tests/site/test_site.py``.
"""

from __future__ import annotations

import html.parser
import json
import os
import re
import zipfile
from pathlib import Path

import pytest

from attnlib import bundle
from conftest import ROOT, toc_pages

SITE = Path(os.environ.get("SITE_DIR", ROOT / "_build" / "html")).resolve()
LIVE = SITE.parent / "live"


#: Every notebook page of _toc.yml, read independently of attnlib.bundle (conftest.toc_pages).
TOC_NOTEBOOKS = [f"{f}.ipynb" for f in toc_pages() if (ROOT / f"{f}.ipynb").is_file()]
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


def _record() -> dict:
    path = LIVE / bundle.MANIFEST
    if not path.is_file():
        pytest.fail(f"no live notebooks in {LIVE}: run `make book` first")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def zipped(tmp_path_factory) -> zipfile.ZipFile:
    _record()
    out = tmp_path_factory.mktemp("bundle") / bundle.NAME
    bundle.build(out, LIVE)
    return zipfile.ZipFile(out)


def members(zf: zipfile.ZipFile) -> dict[str, str]:
    """The zip's files as text, by path inside the one top folder."""
    out = {}
    for name in zf.namelist():
        top, _, rest = name.partition("/")
        assert top == "attention-course", f"{name} lies outside the zip's one folder"
        out[rest] = zf.read(name).decode("utf-8")
    return out


@pytest.mark.slow  # the live tree of the built site
def test_every_notebook_of_the_toc_is_in_the_zip_and_nothing_else_but_the_readme(zipped):
    # every chapter and exercise notebook on disk is a page of the book, so the zip holds them all
    on_disk = sorted(
        p.relative_to(ROOT).as_posix()
        for pattern in ("chapters/*.ipynb", "exercises/[0-9]*.ipynb")
        for p in ROOT.glob(pattern)
    )
    assert sorted(TOC_NOTEBOOKS) == on_disk
    files = members(zipped)
    assert sorted(files) == sorted([*TOC_NOTEBOOKS, "README.md"])


@pytest.mark.slow
def test_the_notebooks_are_the_live_copies_without_outputs(zipped):
    files = members(zipped)
    for path in TOC_NOTEBOOKS:
        nb = json.loads(files[path])
        live = json.loads((LIVE / path).read_text(encoding="utf-8"))
        assert [c["source"] for c in nb["cells"]] == [c["source"] for c in live["cells"]], path
        assert [c["id"] for c in nb["cells"]] == [c["id"] for c in live["cells"]], path
        first = next(c for c in nb["cells"] if c["cell_type"] == "code")
        assert "%pip install" in "".join(first["source"]), f"{path}: not the live install cell"
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [], f"{path}: {cell['id']} has outputs"
                assert cell["execution_count"] is None, f"{path}: {cell['id']} has a count"


@pytest.mark.slow
def test_no_file_of_the_zip_names_a_path_of_this_machine(zipped):
    for path, text in members(zipped).items():
        found = MACHINE_PATH.search(text)
        assert not found, (
            f"{path} names a machine path: ...{text[found.start() - 40 : found.end() + 40]}"
        )


@pytest.mark.slow
def test_the_readme_installs_jupyterlab_and_the_package_at_the_ref_of_the_site(zipped):
    readme = members(zipped)["README.md"]
    record = _record()
    lines = [ln for ln in readme.splitlines() if ln.startswith("pip install")]
    # the same package, source and version as the notebooks' install cells; nothing else: the
    # chapters glue without myst-nb and the exercises check without otter
    assert lines == [
        f'pip install jupyterlab "attnlib @ git+{record["repository"]}@{record["ref"]}"'
    ]
    assert record["site"] in readme
    for path in TOC_NOTEBOOKS:  # and it names every notebook, in the order of the book
        assert f"`{path}`" in readme
    order = [readme.index(f"`{path}`") for path in TOC_NOTEBOOKS]
    assert order == sorted(order)


def _live_tree(root: Path, notebooks: dict[str, dict]) -> Path:
    """A live tree as the build writes one: notebooks and the build's record."""
    for rel, nb in notebooks.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(json.dumps(nb))
    record = {
        "repository": "https://github.com/ana/attn",
        "ref": "v1.2",
        "site": "https://ana.github.io/attn/",
        "notebooks": list(notebooks),
    }
    (root / bundle.MANIFEST).write_text(json.dumps(record))
    return root


def test_the_notebooks_of_the_toc_are_its_files_and_what_its_globs_match(tmp_path):
    # a glob entry stands for every notebook it matches, in name order, where it stands; a
    # Markdown page and a notebook outside the pattern (an instructor source) are left out
    for rel in ("intro.md", "chapters/b.ipynb", "ex/index.md", "ex/02_y.ipynb", "ex/01_x.ipynb"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    (tmp_path / "ex" / "source").mkdir()
    (tmp_path / "ex" / "source" / "01_x.ipynb").write_text("{}")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nparts:\n"
        "  - caption: A\n    chapters:\n      - file: chapters/b\n"
        "  - caption: B\n    chapters:\n      - file: ex/index\n"
        "        sections:\n          - glob: ex/[0-9]*\n"
    )
    got = [p.as_posix() for p in bundle.toc_notebooks(tmp_path)]
    assert got == ["chapters/b.ipynb", "ex/01_x.ipynb", "ex/02_y.ipynb"]
    assert got == [f"{p}.ipynb" for p in toc_pages(tmp_path) if p != "intro" and "index" not in p]
    # and on the course's own table of contents
    assert [p.as_posix() for p in bundle.toc_notebooks(ROOT)] == TOC_NOTEBOOKS


def test_outputs_and_widget_state_are_stripped_and_machine_paths_in_them_go_with_them(tmp_path):
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
    live = _live_tree(tmp_path / "live", {"chapters/a.ipynb": nb})
    out = bundle.build(tmp_path / "out" / "x.zip", live)
    files = members(zipfile.ZipFile(out))
    assert sorted(files) == ["README.md", "chapters/a.ipynb"]
    got = json.loads(files["chapters/a.ipynb"])
    assert got["cells"][1]["outputs"] == []
    assert got["cells"][1]["execution_count"] is None
    assert got["cells"][1]["source"] == "import torch"
    assert "widgets" not in got["metadata"]
    assert "/home/ana" not in files["chapters/a.ipynb"]
    assert "- `chapters/a.ipynb`: A notebook" in files["README.md"]
    setup = [ln for ln in files["README.md"].splitlines() if ln.startswith("pip ")]
    assert setup == ['pip install jupyterlab "attnlib @ git+https://github.com/ana/attn@v1.2"']
    assert "https://ana.github.io/attn/" in files["README.md"]


def test_without_the_build_s_live_tree_the_zip_says_to_build_the_site(tmp_path):
    with pytest.raises(FileNotFoundError, match="run `make book` first"):
        bundle.build(tmp_path / "x.zip", tmp_path / "no-live-tree")


@pytest.mark.parametrize(
    ("url", "ref"),
    [("", "v1"), ("https://github.com/a/b", ""), ('https://x/"y', "v1"), ("u", "v 1")],
)
def test_the_set_up_line_refuses_what_would_break_the_command(url, ref):
    with pytest.raises(ValueError, match="plain"):
        bundle.setup_line(url=url, ref=ref)


def test_the_zip_is_the_same_bytes_when_built_again(tmp_path):
    nb = {"cells": [{"cell_type": "markdown", "id": "m", "metadata": {}, "source": "# A"}]}
    live = _live_tree(tmp_path / "live", {"chapters/a.ipynb": nb, "exercises/b.ipynb": nb})
    first = bundle.build(tmp_path / "1.zip", live).read_bytes()
    again = bundle.build(tmp_path / "2.zip", live).read_bytes()
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
    assert intro.is_file(), f"no built site in {SITE}: run `make book` first"
    parser = _Links()
    parser.feed(intro.read_text(encoding="utf-8"))
    zips = [h for h in parser.hrefs if h.split("#")[0].endswith(".zip")]
    assert len(zips) == 1, f"intro.html should link one zip, links {zips}"
    target = (intro.parent / zips[0]).resolve()
    assert target.is_relative_to(SITE.resolve()), f"{zips[0]} points outside the site"
    assert target.is_file(), f"intro.html links {zips[0]}, which the site lacks: run `make book`"
    served = zipfile.ZipFile(target)
    assert sorted(members(served)) == sorted([*TOC_NOTEBOOKS, "README.md"])
    fresh = bundle.build(tmp_path / bundle.NAME, LIVE).read_bytes()
    assert target.read_bytes() == fresh, "the site serves an old zip: run `make book` again"
