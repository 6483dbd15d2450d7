"""The project's performance table: one command, every benchmark.

Usage::

    .venv/bin/python bench/run.py                 # every bench/bench_*.py
    .venv/bin/python bench/run.py bench_models    # only some modules (names or file names)
    .venv/bin/python bench/run.py --list          # the modules it would run

Each module ``bench/bench_<topic>.py`` exposes ``rows() -> list[dict]`` with the
keys ``name``, ``value``, ``unit``, ``target`` (text such as "≤ 20 s") and
``ok`` (True, False or None when there is no target). The table is printed
and written to ``bench/out/results.md`` and ``bench/out/results.json``
(git-ignored), together with the machine it ran on. A module that raises gets
one failing row with the error, and the others still run.

The exit status is 1 if any row has ``ok`` False, else 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
KEYS = ("name", "value", "unit", "target", "ok")


def discover() -> list[str]:
    """Names of the benchmark modules, ``bench_*.py`` next to this file, sorted."""
    return sorted(p.stem for p in HERE.glob("bench_*.py"))


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    if spec is None or spec.loader is None:  # pragma: no cover - a file we just listed
        raise ImportError(f"cannot load {name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _check_row(row: object, module: str) -> dict:
    if not isinstance(row, dict) or set(KEYS) - set(row):
        raise ValueError(f"{module}.rows() returned {row!r}; each row needs the keys {KEYS}")
    if row["ok"] not in (True, False, None):
        raise ValueError(f"{module}: 'ok' must be True, False or None, got {row['ok']!r}")
    return {k: row[k] for k in KEYS}


def run_module(name: str) -> tuple[list[dict], float]:
    """Rows of one module (a failing row if it raises) and its wall-clock seconds."""
    start = time.perf_counter()
    try:
        rows = [_check_row(r, name) for r in _load(name).rows()]
    except Exception as err:  # report, keep going with the other modules
        traceback.print_exc(file=sys.stderr)
        rows = [{"name": f"{name}: crashed", "value": type(err).__name__,
                 "unit": "", "target": "runs", "ok": False}]  # fmt: skip
    return rows, time.perf_counter() - start


def _fmt_value(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)


def table(rows: list[dict]) -> str:
    """A Markdown table (also readable as plain text)."""
    head = ["benchmark", "value", "unit", "target", "ok"]
    body = [
        [r["name"], _fmt_value(r["value"]), r["unit"], r["target"],
         {True: "yes", False: "NO", None: "–"}[r["ok"]]]
        for r in rows
    ]  # fmt: skip
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]

    def line(cells: list[str]) -> str:
        out = []
        for i, (c, w) in enumerate(zip(cells, widths, strict=True)):
            out.append(str(c).rjust(w) if i == 1 else str(c).ljust(w))
        return "| " + " | ".join(out) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(head), sep, *(line(b) for b in body)])


def machine() -> dict:
    """What the numbers were measured on."""
    try:
        load = os.getloadavg()
    except OSError:  # pragma: no cover - not on Linux
        load = (float("nan"),) * 3
    info = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load average at start (1, 5, 15 min)": [round(x, 2) for x in load],
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    try:
        import torch

        info["torch"] = torch.__version__
    except ImportError:  # pragma: no cover
        pass
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="bench_* modules to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the modules and exit")
    args = parser.parse_args(argv)
    available = discover()
    if args.list:
        print("\n".join(available))
        return 0
    chosen = []
    for m in args.modules or available:
        m = Path(m).stem
        m = m if m.startswith("bench_") else f"bench_{m}"
        if m not in available:
            parser.error(f"no module {m!r} in {HERE}; available: {', '.join(available)}")
        chosen.append(m)

    info = machine()
    load = info["load average at start (1, 5, 15 min)"]
    print(f"# benchmarks on {info['cpus']} CPUs, load average at start {load}")
    all_rows: list[dict] = []
    timings = {}
    for m in chosen:
        print(f"running {m} …", file=sys.stderr, flush=True)
        rows, seconds = run_module(m)
        timings[m] = round(seconds, 1)
        all_rows += rows
    text = table(all_rows)
    print(text)
    OUT.mkdir(exist_ok=True)
    (OUT / "results.md").write_text(
        f"# Benchmarks\n\nCommand: `python bench/run.py {' '.join(args.modules)}`".rstrip()
        + f"\n\nMachine: {json.dumps(info, ensure_ascii=False)}\n\n{text}\n",
        encoding="utf-8",
    )
    (OUT / "results.json").write_text(
        json.dumps({"machine": info, "module_seconds": timings, "rows": all_rows},
                   indent=1, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    print(f"\nwritten to {OUT / 'results.md'} and results.json", file=sys.stderr)
    return 1 if any(r["ok"] is False for r in all_rows) else 0


if __name__ == "__main__":
    sys.exit(main())
