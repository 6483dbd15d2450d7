"""Binder's environment: installed size and cold install time, learner-only pins against old.

Two environments, each in a fresh venv (this Python, 3.11) with an empty pip cache of its own
(a cold install: every wheel downloaded, none reused), installed as repo2docker installs
``binder/requirements.txt``:

* **before**: ``binder/requirements.txt`` as committed in e5f6837, ``-r ../requirements.txt``:
  every pin of the repository (the book, the tests, the linters, otter-grader);
* **learner-only**: the work tree's ``binder/requirements.txt`` (``binder/learner_pins.py``).

Rows: the wall-clock time of ``pip install -r binder/requirements.txt``, the installed size of
the venv (``du``-like: the bytes of every file under it), and the number of distributions.
Neither includes what repo2docker's image brings anyway (JupyterLab 4, the notebook server).
torch's CPU wheel comes from this machine's wheel folder (``/opt/wheels``, pip's find-links)
in both, so neither time includes its download (about 190 MB); everything else comes from PyPI,
so the times depend on the network as well as on the load.

``.venv/bin/python bench/bench_binder.py`` prints the rows; ``bench/run.py bench_binder`` adds
them to the table. About 5-10 minutes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "e5f6837"  # the last commit whose binder/requirements.txt was `-r ../requirements.txt`
COUNT = "import importlib.metadata as md; print(len(list(md.distributions())))"


def _tree_at(commit: str, dest: Path) -> Path:
    """``binder/requirements.txt`` and ``requirements.txt`` as they were at ``commit``."""
    for rel in ("binder/requirements.txt", "requirements.txt"):
        text = subprocess.run(
            ["git", "show", f"{commit}:{rel}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(text)
    return dest


def _size(folder: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            path = Path(dirpath) / name
            if not path.is_symlink():
                total += path.stat().st_size
    return total


def measure(tree: Path, work: Path) -> dict[str, float]:
    """Cold-install ``tree/binder/requirements.txt`` into a fresh venv under ``work``."""
    venv, cache = work / "venv", work / "pip-cache"
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env |= {"PIP_CACHE_DIR": str(cache), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env["PIP_RETRIES"] = "0"  # PyTorch's CPU index is unreachable here: do not wait for it
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
    python = str(venv / "bin" / "python")
    empty = _size(venv)
    start = time.perf_counter()
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "-r", "binder/requirements.txt"],
        cwd=tree,
        env=env,
        check=True,
    )
    seconds = time.perf_counter() - start
    count = subprocess.run([python, "-c", COUNT], env=env, capture_output=True, text=True)
    return {
        "seconds": seconds,
        "megabytes": (_size(venv) - empty) / 1e6,
        "distributions": float(count.stdout.strip() or "nan"),
    }


def rows() -> list[dict]:
    """Size, cold install time and count of both environments, and the learner-only ratios."""
    with tempfile.TemporaryDirectory(prefix="bench-binder-") as tmp:
        before = measure(_tree_at(BEFORE, Path(tmp) / "before"), Path(tmp) / "before")
        after = measure(ROOT, Path(tmp) / "after")
    out = []
    for label, m in (
        (f"before ({BEFORE}, -r ../requirements.txt)", before),
        ("learner-only", after),
    ):
        out += [
            {"name": f"binder {label}: installed size", "value": m["megabytes"], "unit": "MB",
             "target": "", "ok": None},
            {"name": f"binder {label}: cold pip install", "value": m["seconds"], "unit": "s",
             "target": "", "ok": None},
            {"name": f"binder {label}: distributions", "value": m["distributions"], "unit": "",
             "target": "", "ok": None},
        ]  # fmt: skip
    size, secs = after["megabytes"] / before["megabytes"], after["seconds"] / before["seconds"]
    out += [
        {"name": "binder learner-only / before: installed size", "value": size, "unit": "×",
         "target": "< 1", "ok": size < 1},
        {"name": "binder learner-only / before: cold install time", "value": secs, "unit": "×",
         "target": "< 1", "ok": secs < 1},
    ]  # fmt: skip
    return out


if __name__ == "__main__":
    print(json.dumps(rows(), indent=1, ensure_ascii=False))
