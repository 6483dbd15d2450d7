"""How long the README's test command takes: fresh clone, second run, and `make check`.

The targets are the contributors' (CONTRIBUTING.md, "The two loops"): on a quiet 2-core machine a
fresh clone's ``make test``, set-up included, in ≤ 15 min; a second run in ≤ 8 min; ``make
check`` in ≤ 60 s. Each is a wall-clock time, so it depends on what else runs: the row says
the load average at its start and end, and ``make test-under-load`` is how the suite's
verdicts are checked on a busy machine (they must not change).

``make check`` is timed in this work tree (its second run: the type checker's cache warm).
The fresh-clone rows clone this repository's HEAD into a temporary folder and run
``make test`` there twice; they take tens of minutes, so they run only when asked:
``BENCH_FRESH_CLONE=1 .venv/bin/python bench/run.py bench_test_run``.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load() -> str:
    return open("/proc/loadavg").read().split()[0]


def _timed(cmd: list[str], cwd: Path) -> tuple[float, int, str]:
    start_load = _load()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-2000:]
        raise RuntimeError(f"`{' '.join(cmd)}` in {cwd} exited {proc.returncode}:\n{tail}")
    return seconds, proc.returncode, f"load {start_load} → {_load()}"


def _row(name: str, seconds: float | None, limit: float, note: str) -> dict:
    return {
        "name": f"{name} ({note})",
        "value": None if seconds is None else round(seconds / 60, 2),
        "unit": "min",
        "target": f"≤ {limit / 60:g} min",
        "ok": None if seconds is None else seconds <= limit,
    }


def rows() -> list[dict]:
    """`make check` here; a fresh clone's `make test`, twice, when BENCH_FRESH_CLONE=1."""
    _timed(["make", "check"], ROOT)  # warms mypy's cache: the row is a developer's usual run
    check, _, note = _timed(["make", "check"], ROOT)
    out = [_row("make check, this work tree", check, 60, note)]
    if os.environ.get("BENCH_FRESH_CLONE") != "1":
        out.append(_row("make test, fresh clone", None, 15 * 60, "set BENCH_FRESH_CLONE=1"))
        out.append(_row("make test, second run", None, 8 * 60, "set BENCH_FRESH_CLONE=1"))
        return out
    with tempfile.TemporaryDirectory(prefix="attention-course-") as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        first, _, note = _timed(["make", "test"], clone)
        out.append(_row("make test, fresh clone, set-up included", first, 15 * 60, note))
        second, _, note = _timed(["make", "test"], clone)
        out.append(_row("make test, second run", second, 8 * 60, note))
    return out
