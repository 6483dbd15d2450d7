"""The notebook cache follows the library the notebooks import, and takes nbmake's runs.

Two rules for the book's executed notebooks (``execute_notebooks: cache``, jupyter-cache in
``_build/.jupyter_cache``):

1. **No stale page.** jupyter-cache keys a notebook on its code cells only, so an edit to
   ``attnlib/`` alone would leave every page with the numbers, figures and checked claims of
   the old library. This extension fingerprints the packages named in
   ``notebook_cache_packages`` (every file under them but byte-code caches) and keeps the
   fingerprint beside the cache (``attnlib.fingerprint``). When it changes, every cached
   notebook is dropped, and the fingerprint is also a config value that tells Sphinx to read
   every page again, so each notebook is executed against the library as it is now.
   The deploy workflow caches the same folder, so the same rule holds there.
2. **Executed once per test run.** ``make test`` executes every notebook once, with nbmake;
   the pytest plugin ``tests/executed_notebooks.py`` writes each notebook it ran without an
   error to ``_build/.executed/<path>`` with the fingerprint it ran against. Before the book
   reads its sources, this extension moves every such notebook whose fingerprint is current
   into the cache, keyed exactly as myst-nb will look it up (its code cells and their
   metadata, as the source holds them now), so the build renders nbmake's outputs and executes
   nothing; each such page is read again, since what it is built from changed. A notebook whose
   code changed since nbmake ran it is not matched, and the build executes it as usual.

The fingerprint and the executed-notebook format are defined once, in
:func:`fingerprint` and :func:`executed_path`, which the pytest plugin imports.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: The folder nbmake's executed notebooks go to, relative to the book's root.
EXECUTED = Path("_build") / ".executed"
#: The metadata key of an executed notebook that holds the fingerprint it ran against.
FINGERPRINT_KEY = "attnlib_fingerprint"
#: The file beside the jupyter-cache that holds the fingerprint its entries ran against.
STAMP = "attnlib.fingerprint"

#: The notebook metadata of an execution that the build reads from the cache: the kernel's
#: language and the saved state of every widget (without it a widget's output has no model).
MERGED_METADATA = ("language_info", "widgets")

_SKIP_DIRS = {"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
_SKIP_SUFFIXES = {".pyc", ".pyo", ".lock"}


def _package_files(folder: Path) -> Iterable[Path]:
    for path in sorted(folder.rglob("*")):
        skipped = _SKIP_DIRS & set(path.relative_to(folder).parts)
        if path.is_file() and not skipped and path.suffix not in _SKIP_SUFFIXES:
            yield path


def fingerprint(root: Path, packages: Iterable[str] = ("attnlib",)) -> str:
    """A SHA-256 over the path and bytes of every file of ``packages`` under ``root``.

    Parameters
    ----------
    root : Path
        The book's folder.
    packages : iterable of str
        Folders relative to ``root`` (default: ``attnlib``).

    Returns
    -------
    str
        64 hexadecimal digits; any change to a file's content, name or presence changes it.

    Raises
    ------
    FileNotFoundError
        If a package folder does not exist.
    """
    digest = hashlib.sha256()
    for name in packages:
        folder = Path(root) / name
        if not folder.is_dir():
            raise FileNotFoundError(f"notebook_cache_packages names {name!r}: no such folder")
        for path in _package_files(folder):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def executed_path(root: Path, notebook: Path) -> Path:
    """Where nbmake's executed copy of ``notebook`` (a path inside ``root``) is written."""
    return Path(root) / EXECUTED / Path(notebook).resolve().relative_to(Path(root).resolve())


def _adopt_executed(root: Path, cache_path: Path, current: str) -> dict[str, list[str]]:
    """Move every executed notebook that ran against ``current`` into the cache.

    Returns the notebooks by what became of them: ``"adopted"``, or left to the build
    because the library changed since they ran (``"library changed"``), or their code did
    (``"code changed"``). The folder of executed copies is removed either way.
    """
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    fate: dict[str, list[str]] = {"adopted": [], "library changed": [], "code changed": []}
    folder = Path(root) / EXECUTED
    if not folder.is_dir():
        return fate
    cache = get_cache(str(cache_path))
    for path in sorted(folder.rglob("*.ipynb")):
        rel = path.relative_to(folder)
        source = Path(root) / rel
        executed = nbformat.read(path, as_version=4)
        if executed.metadata.get(FINGERPRINT_KEY) != current:
            fate["library changed"].append(rel.as_posix())
            continue
        nb = nbformat.read(source, as_version=4) if source.is_file() else None
        code = [c for c in nb.cells if c.cell_type == "code"] if nb else []
        ran = [c for c in executed.cells if c.cell_type == "code"]
        if nb is None or [c.source for c in code] != [c.source for c in ran]:
            fate["code changed"].append(rel.as_posix())
            continue
        for cell, done in zip(code, ran, strict=True):
            cell.outputs = done.outputs
            cell.execution_count = done.execution_count
        for key in MERGED_METADATA:  # what myst-nb takes from a cached notebook besides outputs
            if key in executed.metadata:
                nb.metadata[key] = executed.metadata[key]
        cache.cache_notebook_bundle(
            CacheBundleIn(nb, str(source)), check_validity=False, overwrite=True
        )
        fate["adopted"].append(rel.as_posix())
    shutil.rmtree(folder)
    return fate


def _on_config_inited(app: Any, config: Any) -> None:
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    root = Path(app.confdir)
    current = fingerprint(root, config.notebook_cache_packages)
    config.notebook_cache_fingerprint = current
    cache_path = Path(config.nb_execution_cache_path or root / "_build" / ".jupyter_cache")
    cache_path = cache_path if cache_path.is_absolute() else root / cache_path
    if config.nb_execution_mode != "cache":
        return
    cache_path.mkdir(parents=True, exist_ok=True)
    stamp = cache_path / STAMP
    before = stamp.read_text().strip() if stamp.is_file() else None
    if before != current:
        from jupyter_cache import get_cache

        cache = get_cache(str(cache_path))
        dropped = len(cache.list_cache_records())
        cache.clear_cache()  # removes the folder
        cache_path.mkdir(parents=True, exist_ok=True)
        stamp.write_text(current + "\n")
        what = "new" if before is None else "changed"
        logger.info(
            f"notebook_cache: {'/'.join(config.notebook_cache_packages)} {what}; "
            f"{dropped} cached notebooks dropped"
        )
    fate = _adopt_executed(root, cache_path, current)
    # Sphinx reads a page again only when its source changed; an adopted run replaces what
    # the page was built from, so its page is read again (env-get-outdated below).
    app.notebook_cache_adopted = [str(Path(rel).with_suffix("")) for rel in fate["adopted"]]
    if any(fate.values()):
        left = "; ".join(
            f"left to the build ({why}): {', '.join(names)}"
            for why, names in fate.items()
            if why != "adopted" and names
        )
        logger.info(
            f"notebook_cache: {len(fate['adopted'])} notebooks executed by nbmake taken into "
            f"the cache" + (f"; {left}" if left else "")
        )


def _adopted_pages(
    app: Any, env: Any, added: set[str], changed: set[str], removed: set[str]
) -> list[str]:
    """The pages whose notebook nbmake ran in this session: read again, from the new run."""
    adopted = getattr(app, "notebook_cache_adopted", [])
    return [doc for doc in adopted if doc in env.found_docs and doc not in added | changed]


def setup(app: Any) -> dict[str, Any]:
    """Register the two config values and the hook (runs after myst-nb's config is set)."""
    app.add_config_value("notebook_cache_packages", ["attnlib"], "env")
    # Set from the files at every build: a change makes Sphinx read every page again.
    app.add_config_value("notebook_cache_fingerprint", "", "env")
    app.connect("config-inited", _on_config_inited, priority=900)
    app.connect("env-get-outdated", _adopted_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}


if __name__ == "__main__":  # python _ext/notebook_cache.py: print the fingerprint
    print(json.dumps({"attnlib": fingerprint(Path(os.getcwd()))}))
