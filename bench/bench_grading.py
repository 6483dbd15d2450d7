"""Grading throughput: a class of 300 × 7 exercises at ``--jobs 2``, quiet and under load.

A batch of ``STUDENTS`` students, each handing in the solution notebook of every
exercise (70 notebooks by default), is graded by the real grader
(:func:`attnlib.grading.grader.grade`), sandbox and all, at ``--jobs 2``, twice: as the
machine is, and with two busy processes (an endless loop each) running beside it. Each
run reads the grader's journal for every notebook's wall-clock seconds and CPU seconds
(the sandboxed workers', the grader's own), which gives:

* the seconds per notebook of each exercise (wall clock, the other job running beside);
* the class estimate from the batch's own wall clock, ``batch seconds / STUDENTS × 300``;
* the class estimate from CPU time, ``300 × CPU seconds per student / 2 cores``: what the
  class costs a quiet 2-core machine, whatever else the machine is doing while the bench runs
  (the machine's load average is printed beside every row).

The target: the class in ≤ 45 minutes on a quiet 2-core machine. Also measured: the
grader's peak memory (its own process and a job process, not the reader's or the workers')
on the largest notebook it accepts, 128 MB of which 127 MB are a saved output.

Run: ``.venv/bin/python bench/run.py bench_grading`` (about 5 minutes on a quiet machine).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attnlib.grading import grader, reader
from attnlib.grading.questions import EXERCISES

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "exercises" / "_build" / "solutions"
STUDENTS = 10
JOBS = 2
CLASS = 300
GOAL_MINUTES = 45.0
SEED = "bench-grading-3f8a2c6e1d9b7054"


def _load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def _batch(tmp: Path, label: str) -> dict:
    folder = tmp / label / "submissions"
    for k in range(STUDENTS):
        student = folder / f"student{k:03d}"
        student.mkdir(parents=True)
        for name in EXERCISES:
            shutil.copyfile(SOLUTIONS / f"{name}.ipynb", student / f"{name}.ipynb")
    gradebook = tmp / label / "gradebook.csv"
    load_before = _load()
    start = time.perf_counter()
    out = grader.grade(folder, gradebook, seed=SEED, jobs=JOBS)
    batch = time.perf_counter() - start
    per: dict[str, list[tuple[float, float]]] = {}
    for _student, ex, wall, grader_cpu, worker_cpu in grader.timings(gradebook):
        per.setdefault(ex, []).append((wall, grader_cpu + worker_cpu))
    journal = gradebook.with_name(gradebook.name + ".journal")
    items = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    readers = sum(float(i.get("children_cpu", 0.0)) for i in items)
    cpu = sum(c for v in per.values() for _, c in v) + readers
    return dict(
        batch=batch,
        per=per,
        cpu_per_student=cpu / STUDENTS,
        full=sum(r["score"] for r in out) == sum(r["total"] for r in out),
        load=f"{load_before}, after: {_load()}",
        job_rss_mb=max(int(i.get("maxrss_kb", 0)) for i in items) / 1024,
    )


def _rows(label: str, b: dict) -> list[dict]:
    rows = []
    for name in EXERCISES:
        walls = [w for w, _ in b["per"][name]]
        cpus = [c for _, c in b["per"][name]]
        rows.append(
            dict(
                name=f"grading ({label}): {name}, seconds per notebook "
                f"(CPU {sum(cpus) / len(cpus):.1f} s)",
                value=sum(walls) / len(walls),
                unit="s",
                target="",
                ok=None,
            )
        )
    from_wall = b["batch"] / STUDENTS * CLASS / 60
    from_cpu = b["cpu_per_student"] * CLASS / JOBS / 60
    rows += [
        dict(
            name=f"grading ({label}): a batch of {STUDENTS} × {len(EXERCISES)} at --jobs {JOBS} "
            f"({b['load']})",
            value=b["batch"],
            unit="s",
            target="",
            ok=None,
        ),
        dict(
            name=f"grading ({label}): every notebook of the batch gets full marks",
            value="yes" if b["full"] else "no",
            unit="",
            target="yes",
            ok=b["full"],
        ),
        dict(
            name=f"grading ({label}): a class of {CLASS} × {len(EXERCISES)} at --jobs {JOBS}, "
            "from the batch's wall clock",
            value=from_wall,
            unit="min",
            target=f"≤ {GOAL_MINUTES:g} min quiet" if label == "as the machine is" else "",
            ok=(from_wall <= GOAL_MINUTES) if label == "as the machine is" else None,
        ),
        dict(
            name=f"grading ({label}): the same class on a quiet 2-core machine, from CPU time "
            f"({b['cpu_per_student']:.1f} CPU s per student of {len(EXERCISES)} notebooks)",
            value=from_cpu,
            unit="min",
            target=f"≤ {GOAL_MINUTES:g} min",
            ok=from_cpu <= GOAL_MINUTES,
        ),
        dict(
            name=f"grading ({label}): a job process's peak memory",
            value=b["job_rss_mb"],
            unit="MB",
            target="",
            ok=None,
        ),
    ]
    return rows


_PEAK = """
import json, resource, sys
from pathlib import Path
from attnlib.grading import grader
rows = grader.grade(Path(sys.argv[1]), Path(sys.argv[2]), seed=sys.argv[3], jobs=1)
journal = Path(sys.argv[2] + ".journal").read_text().splitlines()
print(json.dumps({
    "score": sum(r["score"] for r in rows),
    "grader_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    "job_kb": json.loads(journal[1])["maxrss_kb"],
}))
"""


def _largest(tmp: Path) -> dict:
    """The solution of exercise 1 with a saved output that takes it to the reader's limit."""
    nb = json.loads((SOLUTIONS / "01_masked_softmax.ipynb").read_text())
    base = len(json.dumps(nb).encode())
    line = "0.123456789 " * 8 + "\n"
    room = reader.MAX_NOTEBOOK - base - 2**16
    first = next(c for c in nb["cells"] if c["cell_type"] == "code")
    first["outputs"] = [
        {"name": "stdout", "output_type": "stream", "text": line * (room // len(line))}
    ]
    folder = tmp / "largest" / "submissions" / "ana"
    folder.mkdir(parents=True)
    path = folder / "01_masked_softmax.ipynb"
    path.write_text(json.dumps(nb))
    proc = subprocess.run(
        [sys.executable, "-c", _PEAK, str(folder.parent), str(tmp / "largest" / "g.csv"), SEED],
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(proc.stdout)
    got["size_mb"] = path.stat().st_size / 2**20
    return got


def _busy(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True:\n    pass"]) for _ in range(n)]


def rows() -> list[dict]:
    if not SOLUTIONS.is_dir():
        raise FileNotFoundError("run `make exercises` first (it builds the solution notebooks)")
    out: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        quiet = _batch(Path(tmp), "quiet")
        out += _rows("as the machine is", quiet)
        busy = _busy(2)
        try:
            loaded = _batch(Path(tmp), "busy")
        finally:
            for p in busy:
                p.kill()
                p.wait()
        out += _rows("two busy processes beside it", loaded)
        peak = _largest(Path(tmp))
    out += [
        dict(
            name=f"grading: the largest notebook accepted ({peak['size_mb']:.0f} MB, a saved "
            f"output), graded to {peak['score']:g}/8; the grader's own peak memory",
            value=peak["grader_kb"] / 1024,
            unit="MB",
            target="",
            ok=None,
        ),
        dict(
            name="grading: ... and its job process's peak memory (the reader parses it, in a "
            "process of its own)",
            value=peak["job_kb"] / 1024,
            unit="MB",
            target="",
            ok=None,
        ),
    ]
    out.append(
        dict(
            name="grading: the bench's own peak memory",
            value=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            unit="MB",
            target="",
            ok=None,
        )
    )
    return out


if __name__ == "__main__":
    for row in rows():
        print(row)
