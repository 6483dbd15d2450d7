"""Reads one submitted notebook, in a process of its own with limits: the grader never parses one.

Trusted code, untrusted bytes. The grader (:mod:`.grader`) streams the file into
this program's standard input and reads back one line of JSON: what it needs to
grade the notebook and nothing more, every part of it bounded. The parsing itself
(``json``, ``ast``) happens here, under the limits :func:`run` sets (address
space :data:`MEMORY`, CPU time :data:`CPU_SECONDS`), so a notebook built to
exhaust a parser (a code cell of millions of statements, JSON nested or
repeated without end) costs this process, never the grader's.

What is read:

* at most :data:`MAX_NOTEBOOK` bytes (saved outputs included: they are read and
  dropped; outputs are not code);
* every code cell's source, up to :data:`MAX_CELL` characters per cell and
  :data:`MAX_CODE` in all; a longer cell is not run, and the note says so;
* per code cell, the names it binds at the top level of the notebook (``def``,
  ``class``, assignment, import, in any ``if``/``try``/``with``/``for`` block,
  ``globals()["name"] = ...``) and the questions its ``grader.check("...")`` calls
  name;
* the exercise the notebook says it is: otter's ``assignment_name`` in its
  metadata, and the numbers of its "# Exercise N" titles.

It imports nothing beyond the standard library: ``python -I reader.py`` starts in
a few tens of milliseconds.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "CPU_SECONDS",
    "MAX_CELL",
    "MAX_CODE",
    "MAX_NOTEBOOK",
    "MEMORY",
    "ReadError",
    "read",
    "run",
    "summary",
]

MAX_NOTEBOOK = 128 * 2**20
"""The largest notebook file read (bytes, saved outputs included)."""

MAX_CELL = 2**20
"""The longest code cell run (characters); a longer one is skipped with a note."""

MAX_CODE = 4 * 2**20
"""The most code read from one notebook (characters, every code cell together)."""

MEMORY = 2 * 2**30
"""The reader's address space: a 128 MB notebook of outputs parses in a third of it."""

CPU_SECONDS = 60
"""The reader's CPU time."""

MAX_REPLY = 12 * MAX_CODE
"""The longest reply the grader reads back: the sources (JSON may escape a character in 6)
and the names each cell binds (a part of its source each)."""

_CHECK_CALL = re.compile(r"""grader\.check\(\s*["'](\w+)["']\s*\)""")
_ONLY_CHECKS = re.compile(r"""^\s*(?:#.*|grader\.(?:check|check_all|export)\(.*\)\s*)?$""")
_TITLE = re.compile(r"^#\s*Exercise\s+(\d{1,3})\b", re.M)
_ZIP = b"PK\x03\x04"


class ReadError(ValueError):
    """A file the reader could not read as a notebook (the message says why, in a phrase)."""


# =========================================================================== what a cell binds
def _bound(target: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _globals_key(node: ast.expr) -> str | None:
    """``name`` for ``globals()["name"]``."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "globals"
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return node.slice.value
    return None


def _binds(body: Iterable[ast.stmt]) -> set[str]:
    """Names a block binds in the notebook's namespace (not inside a def or a class)."""
    found: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                key = _globals_key(t)
                found |= {key} if key else _bound(t)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value  # globals().update(name=...) or globals().update({"name": ...})
            func = call.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "update"
                and isinstance(func.value, ast.Call)
                and isinstance(func.value.func, ast.Name)
                and func.value.func.id == "globals"
            ):
                found |= {k.arg for k in call.keywords if k.arg}
                for a in call.args:
                    if isinstance(a, ast.Dict):
                        found |= {
                            k.value
                            for k in a.keys
                            if isinstance(k, ast.Constant) and isinstance(k.value, str)
                        }
        if isinstance(node, ast.For | ast.AsyncFor):
            found |= _bound(node.target)
        if isinstance(node, ast.With | ast.AsyncWith):
            found |= {
                n for item in node.items if item.optional_vars for n in _bound(item.optional_vars)
            }
        for name in ("body", "orelse", "finalbody"):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found |= _binds(getattr(node, name, []) or [])
        if isinstance(node, ast.Try):
            found |= {h.name for h in node.handlers if h.name}
            for handler in node.handlers:
                found |= _binds(handler.body)
    return found


def defines(source: str) -> set[str]:
    """Names a cell binds in the notebook's namespace, read without running it.

    A cell Python cannot parse (a magic line, broken code, nesting deeper than the parser
    goes, a parse that runs out of memory) is read line by line for ``def``, ``class`` and
    ``name =`` at its left margin.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        names = re.findall(r"^(?:def|class)\s+(\w+)|^(\w+)\s*=", source, re.M)
        return {a or b for a, b in names}
    return _binds(tree.body)


# =========================================================================== one notebook
def _text(src: Any) -> str:
    if isinstance(src, list):
        return "".join(s for s in src if isinstance(s, str))
    return src if isinstance(src, str) else ""


def read(data: bytes, *, sources: bool = True) -> dict[str, Any]:
    """What the grader needs of a notebook's bytes (see the module docstring).

    Raises
    ------
    ReadError
        If the bytes are not a notebook: a zip, not UTF-8, not JSON, no list of cells.
    """
    if data.startswith(_ZIP):
        raise ReadError("a zip archive, not a notebook: unzip it and hand in the .ipynb inside")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ReadError("not a notebook: its bytes are not UTF-8 text") from None
    del data
    try:
        nb = json.loads(text)
    except RecursionError:
        raise ReadError("not a notebook: its JSON is nested too deeply") from None
    except ValueError:
        raise ReadError("not a notebook: it is not valid JSON") from None
    del text
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ReadError("not a notebook: it has no list of cells")
    meta = nb.get("metadata")
    otter = meta.get("otter") if isinstance(meta, dict) else None
    name = otter.get("assignment_name") if isinstance(otter, dict) else None
    titles: list[int] = []
    code: list[dict[str, Any]] = []
    total = 0
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type")
        if kind == "markdown" and len(titles) < 20:
            titles += [int(n) for n in _TITLE.findall(_text(cell.get("source", ""))[:100_000])]
        if kind != "code":
            continue
        src = _text(cell.get("source", ""))
        entry: dict[str, Any] = {"skipped": None}
        if len(src) > MAX_CELL:
            entry["skipped"] = f"a code cell of {len(src) // 2**20} MB, over {MAX_CELL // 2**20} MB"
            src = ""
        elif total + len(src) > MAX_CODE:
            entry["skipped"] = f"the notebook's code is over {MAX_CODE // 2**20} MB in all"
            src = ""
        total += len(src)
        entry["defines"] = sorted(defines(src)) if src else []
        entry["checks"] = _CHECK_CALL.findall(src)
        entry["only_checks"] = all(_ONLY_CHECKS.match(ln) for ln in src.splitlines())
        if sources:
            entry["source"] = src
        code.append(entry)
    return {
        "otter": name[:200] if isinstance(name, str) else None,
        "titles": titles[:20],
        "cells": code,
    }


# =========================================================================== the child process
def _limit() -> None:
    import resource

    for what, value in (
        (resource.RLIMIT_AS, MEMORY),
        (resource.RLIMIT_CPU, CPU_SECONDS),
        (resource.RLIMIT_FSIZE, 0),
        (resource.RLIMIT_NOFILE, 16),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(what, (value, value))


def run(feed: Callable[[Callable[[bytes], Any]], None], *, sources: bool = True) -> dict[str, Any]:
    """Read a notebook in a child process with limits; the grader's side of this module.

    Parameters
    ----------
    feed : callable
        Called with a ``write(chunk)`` function; it writes the notebook's bytes in chunks
        (the grader streams the file: it never holds it).
    sources : bool
        Whether to read back the code cells' sources (False: only what identifies it).

    Returns
    -------
    dict
        :func:`read`'s result plus ``sha256`` and ``size`` of the bytes read, or
        ``{"error": phrase}`` (and, where the bytes were read, ``sha256`` and ``size``) for a
        file that is not a notebook or that the reader could not read within its limits.
    """
    proc = subprocess.Popen(
        [sys.executable, "-I", __file__, "sources" if sources else "summary"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        preexec_fn=_limit,
        close_fds=True,
        env={"LANG": "C.UTF-8", "PYTHONHASHSEED": "0"},
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    reply = b""
    try:
        try:
            feed(proc.stdin.write)
        except BrokenPipeError:  # the reader stopped reading (a file over the size limit)
            pass
        finally:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        reply = proc.stdout.read(MAX_REPLY + 1)
    finally:
        proc.stdout.close()
        if len(reply) > MAX_REPLY:
            proc.kill()
        proc.wait()  # it has written its one line, or it is killed
    if len(reply) > MAX_REPLY or proc.returncode != 0 or not reply.endswith(b"\n"):
        return {"error": "not readable within the reader's limits (memory, CPU time or size)"}
    out = json.loads(reply)
    if not isinstance(out, dict):  # pragma: no cover - the reader writes one object
        return {"error": "not readable"}
    return out


def summary(feed: Callable[[Callable[[bytes], None]], None]) -> dict[str, Any]:
    """:func:`run` without the sources: what identifies the notebook."""
    return run(feed, sources=False)


def main(argv: list[str]) -> int:
    """The child: a notebook on standard input, one line of JSON on standard output."""
    sources = len(argv) < 2 or argv[1] != "summary"
    digest = hashlib.sha256()
    chunks, size = [], 0
    stdin = sys.stdin.buffer
    while True:
        chunk = stdin.read(1 << 20)
        if not chunk:
            break
        size += len(chunk)
        if size > MAX_NOTEBOOK:
            out: dict[str, Any] = {
                "error": f"larger than {MAX_NOTEBOOK // 2**20} MB, saved outputs included"
            }
            sys.stdout.write(json.dumps(out) + "\n")
            return 0
        digest.update(chunk)
        chunks.append(chunk)
    data = b"".join(chunks)
    del chunks
    try:
        out = read(data, sources=sources)
    except ReadError as err:
        out = {"error": str(err)}
    except MemoryError:
        out = {"error": "not readable within the reader's limits (memory)"}
    out.update(sha256=digest.hexdigest(), size=size)
    line = json.dumps(out, ensure_ascii=False) + "\n"  # a lone surrogate becomes its escape
    sys.stdout.buffer.write(line.encode("utf-8", "backslashreplace"))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.setrecursionlimit(10_000)
    os.environ.pop("PYTHONPATH", None)
    raise SystemExit(main(sys.argv))
