"""The notebook cache follows the library, and the book is built from nbmake's runs.

``_ext/notebook_cache.py`` and the pytest plugin ``tests/executed_notebooks.py``. The slow
tests build a tiny book of one notebook that prints what a tiny library returns, with the
real extension and the real ``jupyter-book`` command, in a temporary folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import nbformat
import pytest

import executed_notebooks
from conftest import ROOT

cache = executed_notebooks.notebook_cache()
JUPYTER_BOOK = Path(sys.executable).with_name("jupyter-book")


def _write_lib(folder: Path, greeting: str) -> None:
    (folder / "mylib").mkdir(exist_ok=True)
    (folder / "mylib" / "__init__.py").write_text(
        f"def greeting():\n    return {greeting!r}\n", encoding="utf-8"
    )


def _notebook(code: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A page\n\nWhat the library says:"),
        nbformat.v4.new_code_cell(code),
    ]
    for k, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{k}"
    return nb


def _book(folder: Path, *, with_extension: bool = True) -> Path:
    """A book of one notebook, ``page.ipynb``, that prints ``mylib.greeting()`` and a marker."""
    folder.mkdir(parents=True, exist_ok=True)
    extensions = (
        "sphinx:\n"
        f"  local_extensions:\n    notebook_cache: {ROOT / '_ext'}\n"
        "  config:\n    notebook_cache_packages: [mylib]\n"
        if with_extension
        else ""
    )
    (folder / "_config.yml").write_text(
        textwrap.dedent(
            """\
            title: tiny
            only_build_toc_files: true
            execute:
              execute_notebooks: cache
            """
        )
        + extensions,
        encoding="utf-8",
    )
    (folder / "_toc.yml").write_text("format: jb-book\nroot: page\n", encoding="utf-8")
    code = (
        'import os, ipywidgets, mylib\nprint(mylib.greeting(), "run by", os.environ["RUN_BY"])\n'
        "ipywidgets.IntSlider(value=7, description='seven')"
    )
    nbformat.write(_notebook(code), folder / "page.ipynb")
    _write_lib(folder, "first")
    return folder


def _build(book: Path, run_by: str = "the book") -> tuple[str, str]:
    """Build ``book``; the page's text and the build's log."""
    env = {**os.environ, "PYTHONPATH": str(book), "RUN_BY": run_by}
    proc = subprocess.run(
        [str(JUPYTER_BOOK), "build", str(book), "-W", "-n"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=900,  # a backstop for a hung kernel: a build of one notebook takes seconds
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    page = (book / "_build" / "html" / "page.html").read_text(encoding="utf-8")
    return page, log


def _run_by_nbmake(book: Path) -> Any:
    """nbmake's run of the book's page, as ``make test`` makes it (RUN_BY says who ran it)."""
    from nbmake.nb_run import NotebookRun

    os.environ["RUN_BY"] = "nbmake"
    try:
        sys.path.insert(0, str(book))
        return NotebookRun(book / "page.ipynb", 600).execute()
    finally:
        sys.path.remove(str(book))
        del os.environ["RUN_BY"]


def test_the_fingerprint_follows_every_file_of_the_package_and_nothing_else(tmp_path):
    _write_lib(tmp_path, "first")
    before = cache.fingerprint(tmp_path, ["mylib"])
    assert cache.fingerprint(tmp_path, ["mylib"]) == before
    (tmp_path / "mylib" / "__pycache__").mkdir()
    (tmp_path / "mylib" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    assert cache.fingerprint(tmp_path, ["mylib"]) == before, "byte code is not the library"
    _write_lib(tmp_path, "second")
    edited = cache.fingerprint(tmp_path, ["mylib"])
    assert edited != before
    (tmp_path / "mylib" / "data.json").write_text("{}")
    added = cache.fingerprint(tmp_path, ["mylib"])
    assert added not in {before, edited}
    (tmp_path / "mylib" / "data.json").rename(tmp_path / "mylib" / "other.json")
    assert cache.fingerprint(tmp_path, ["mylib"]) not in {before, edited, added}


def test_a_missing_package_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="'nolib'"):
        cache.fingerprint(tmp_path, ["nolib"])


def test_the_repository_fingerprint_covers_attnlib():
    assert json.loads(
        subprocess.run(
            [sys.executable, str(ROOT / "_ext" / "notebook_cache.py")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    ) == {"attnlib": cache.fingerprint(ROOT)}


@pytest.mark.slow
def test_an_edit_to_the_library_alone_changes_the_rebuilt_page(tmp_path):
    book = _book(tmp_path / "book")
    page, _ = _build(book)
    assert "first run by the book" in page
    _write_lib(book, "second")  # the notebook is untouched: only its library changed
    page, log = _build(book)
    assert "second run by the book" in page, "the page is stale: it shows the old library's output"
    assert "first" not in page
    assert "mylib changed; 1 cached notebooks dropped" in log


@pytest.mark.slow
def test_without_the_rule_the_same_edit_leaves_a_stale_page(tmp_path):
    # The control: jupyter-cache alone keys a notebook on its code, so this is what the
    # rule above prevents (if this ever changes, the extension may no longer be needed).
    book = _book(tmp_path / "book", with_extension=False)
    assert "first run by the book" in _build(book)[0]
    _write_lib(book, "second")
    assert "first run by the book" in _build(book)[0]


@pytest.mark.slow
def test_the_book_renders_nbmakes_run_and_executes_nothing(tmp_path):
    book = _book(tmp_path / "book")
    # A build before nbmake's run: the page must still take the later run, though its source
    # did not change (Sphinx alone would keep the page it has).
    assert "first run by the book" in _build(book)[0]
    result = _run_by_nbmake(book)
    assert result.error is None
    kept = executed_notebooks.keep(
        result, book / "page.ipynb", cache.fingerprint(book, ["mylib"]), cache, root=book
    )
    assert kept == book / "_build" / ".executed" / "page.ipynb"
    page, log = _build(book, run_by="the book")
    assert "first run by nbmake" in page, "the page was not rendered from nbmake's run"
    # the run's widget state came with it: the page can draw the slider it saved
    assert "application/vnd.jupyter.widget-state+json" in page
    assert '"description": "seven"' in page
    assert "Executing notebook" not in log
    assert "1 notebooks executed by nbmake taken into the cache" in log
    assert not kept.exists(), "the executed copy is consumed by the build"


@pytest.mark.slow
def test_a_run_against_an_older_library_or_older_code_is_executed_again(tmp_path):
    book = _book(tmp_path / "book")
    result = _run_by_nbmake(book)
    fingerprint = cache.fingerprint(book, ["mylib"])
    executed_notebooks.keep(result, book / "page.ipynb", fingerprint, cache, root=book)
    _write_lib(book, "second")  # the library changed after nbmake ran
    page, log = _build(book)
    assert "second run by the book" in page
    assert "left to the build (library changed): page.ipynb" in log

    executed_notebooks.keep(
        result, book / "page.ipynb", cache.fingerprint(book, ["mylib"]), cache, root=book
    )
    nb = nbformat.read(book / "page.ipynb", as_version=4)
    nb.cells[1].source += "\nprint('and more')"  # the code changed after nbmake ran
    nbformat.write(nb, book / "page.ipynb")
    page, log = _build(book)
    assert "and more" in page
    assert "second run by the book" in page
    assert "left to the build (code changed): page.ipynb" in log
