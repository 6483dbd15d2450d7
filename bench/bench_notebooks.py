"""Chapter notebooks: wall time and peak memory of a run on a fresh kernel (targets ≤ 30 s, ≤ 1 GB).

Every ``chapters/*.ipynb`` is executed top to bottom in its own subprocess,
which starts a fresh kernel (nbclient, working directory ``chapters/``, as
Jupyter Book and nbmake run it), executes every cell and shuts the kernel
down. The wall time covers all of it, kernel start-up and imports included.
The peak memory is the largest resident set of any process the subprocess
waited for, i.e. the kernel (``getrusage(RUSAGE_CHILDREN).ru_maxrss``).

Run on its own with ``python bench/bench_notebooks.py [NAME ...]`` (e.g.
``seq2seq``); ``bench/run.py`` collects :func:`rows` into the benchmark
table. The numbers depend on the machine and on how busy it is.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
TARGET_SECONDS = 30.0
TARGET_MB = 1024.0
TIMEOUT = 600  # seconds per notebook before the run is abandoned


def notebooks() -> list[Path]:
    """Every chapter notebook, in file-name (chapter) order."""
    return sorted(p for p in CHAPTERS.glob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def _execute(path: Path) -> dict:
    """Child side: run one notebook on a fresh kernel; return seconds and peak kernel RSS."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    resources = {"metadata": {"path": str(path.parent)}}
    client = NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3", resources=resources)
    client.execute()
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the kernel, once shut down
    return {
        "seconds": seconds,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024,  # Linux reports kilobytes
    }


def _failed(start: float, error: str) -> dict:
    nan = float("nan")
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "cpu_seconds": nan, "peak_mb": nan, "error": error}


def measure(path: Path) -> dict:
    """Run ``path`` in a fresh subprocess.

    Returns
    -------
    dict
        ``seconds`` (wall), ``cpu_seconds`` and ``peak_mb`` of the kernel, and
        ``error`` (None, or the last line of the failure).
    """
    cmd = [sys.executable, __file__, "--one", str(path)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=TIMEOUT + 60, check=False
        )
    except subprocess.TimeoutExpired:
        return _failed(start, "timeout")
    if proc.returncode != 0:
        return _failed(start, (proc.stderr.strip().splitlines() or ["failed"])[-1])
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["error"] = None
    return out


def rows(names: list[str] | None = None) -> list[dict]:
    """Three rows per chapter notebook: wall time (s), kernel CPU time (s), peak kernel memory (MB).

    The CPU time has no target: it is the part of the wall time that does not
    depend on how busy the machine is (on an idle machine the wall time is
    about the CPU time plus the kernel start-up).

    Parameters
    ----------
    names : list of str, optional
        Notebook stems to run (e.g. ``["seq2seq"]``); default: every chapter.

    Returns
    -------
    list of dict
        Keys ``name``, ``value``, ``unit``, ``target``, ``ok``. A notebook that
        fails or times out gets ``ok = False`` and its error in the name.
    """
    out = []
    for path in notebooks():
        if names and path.stem not in names:
            continue
        r = measure(path)
        failed = f" (FAILED: {r['error']})" if r["error"] else ""
        out.append({
            "name": f"notebook {path.stem}: fresh-kernel run, wall time{failed}",
            "value": round(r["seconds"], 1),
            "unit": "s",
            "target": f"≤ {TARGET_SECONDS:g} s",
            "ok": r["error"] is None and r["seconds"] <= TARGET_SECONDS,
        })  # fmt: skip
        out.append({
            "name": f"notebook {path.stem}: kernel CPU time (user + system){failed}",
            "value": round(r["cpu_seconds"], 1),
            "unit": "s",
            "target": "–",
            "ok": None,
        })  # fmt: skip
        out.append({
            "name": f"notebook {path.stem}: peak kernel memory{failed}",
            "value": round(r["peak_mb"], 1),
            "unit": "MB",
            "target": "≤ 1 GB",
            "ok": r["error"] is None and r["peak_mb"] <= TARGET_MB,
        })  # fmt: skip
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"]:
        print(json.dumps(_execute(Path(argv[1]))))
        return 0
    table = rows(argv or None)
    for r in table:
        verdict = {True: "ok", False: "NO", None: "–"}[r["ok"]]
        print(f"{r['name']:<70} {r['value']:>8} {r['unit']:<3} {r['target']:<8} {verdict}")
    return 0 if all(r["ok"] is not False for r in table) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
