"""A pytest plugin: every notebook nbmake runs without an error is kept for the book build.

``make test`` executes each notebook once, with nbmake, and then builds the book from those
runs: loaded with ``-p tests.executed_notebooks`` (the Makefile's pytest command, run from the
repository's root), this plugin writes each notebook nbmake executed to
``_build/.executed/<path>`` with the fingerprint of ``attnlib/`` taken as the session started,
and ``_ext/notebook_cache.py`` takes every copy whose fingerprint and code are still current
into the notebook cache, where the build finds it. nbmake's verdict is unchanged: a notebook
that fails is a failed test, and no copy of it is kept.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def notebook_cache() -> ModuleType:
    """``_ext/notebook_cache.py``: the fingerprint and where executed copies go, defined once."""
    spec = importlib.util.spec_from_file_location(
        "notebook_cache", ROOT / "_ext" / "notebook_cache.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def keep(
    result: Any, source: Path, fingerprint: str, cache: ModuleType, root: Path = ROOT
) -> Path | None:
    """Write nbmake's executed ``result.nb`` of ``source`` where the build of ``root`` looks.

    Nothing is written for a notebook that failed or that lies outside ``root``.
    """
    import nbformat

    if result.error is not None or Path(root).resolve() not in source.resolve().parents:
        return None
    target = cache.executed_path(root, source)
    target.parent.mkdir(parents=True, exist_ok=True)
    result.nb.metadata[cache.FINGERPRINT_KEY] = fingerprint
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    nbformat.write(result.nb, str(partial))
    partial.replace(target)  # atomic: the build never reads half a notebook
    return target


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    """Wrap nbmake's notebook run (when nbmake is active) so that each success is kept."""
    if not config.getoption("nbmake", default=False):
        return
    from nbmake import pytest_items

    cache = notebook_cache()
    fingerprint = cache.fingerprint(ROOT)
    base = pytest_items.NotebookRun

    class KeepingRun(base):  # type: ignore[misc, valid-type]
        def execute(self) -> Any:
            result = super().execute()
            keep(result, Path(self.filename), fingerprint, cache)
            return result

    pytest_items.NotebookRun = KeepingRun
