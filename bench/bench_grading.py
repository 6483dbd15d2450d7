"""Grading throughput: seconds per submission per exercise, and a class of 300 at ``--jobs 2``.

A batch of ``PER_EXERCISE`` correct submissions of every exercise (the solution
notebooks, each in its own student folder: 50 submissions in all by default) is
graded once by the real grader (:func:`attnlib.grading.grader.grade`), sandbox
and all, at ``--jobs 2``. Every submission is timed on its own (wall clock,
with the other job running beside it), which gives the mean seconds per
submission of each exercise; the batch's own wall clock gives the throughput.
The class estimate is 300 students × 5 exercises at that measured throughput:

    class seconds = 300 × Σ_exercises mean seconds per submission ÷ 2 jobs,

checked against the batch itself (its wall clock ÷ its submissions × 1500
gives the same figure to within the spread of the timings).

Run: ``.venv/bin/python bench/run.py bench_grading`` (about two minutes).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from attnlib.grading import grader
from attnlib.grading.questions import EXERCISES

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "exercises" / "_build" / "solutions"
PER_EXERCISE = 10
JOBS = 2
CLASS = 300
GOAL_HOURS = 1.0


def _timed_grade_notebook():
    """Wrap grade_notebook to record each submission's wall-clock seconds."""
    times: dict[str, list[float]] = {}
    original = grader.grade_notebook

    def timed(notebook, exercise, *args, **kwargs):
        start = time.perf_counter()
        try:
            return original(notebook, exercise, *args, **kwargs)
        finally:
            times.setdefault(exercise.name, []).append(time.perf_counter() - start)

    return timed, times, original


def rows() -> list[dict]:
    if not SOLUTIONS.is_dir():
        raise FileNotFoundError("run `make exercises` first (it builds the solution notebooks)")
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        folder = Path(tmp) / "submissions"
        for k in range(PER_EXERCISE):
            student = folder / f"student{k:03d}"
            student.mkdir(parents=True)
            for name in EXERCISES:
                shutil.copyfile(SOLUTIONS / f"{name}.ipynb", student / f"{name}.ipynb")
        timed, times, original = _timed_grade_notebook()
        grader.grade_notebook = timed
        try:
            start = time.perf_counter()
            out = grader.grade(folder, Path(tmp) / "gradebook.csv", seed="bench", jobs=JOBS)
            batch = time.perf_counter() - start
        finally:
            grader.grade_notebook = original
    full = sum(r["score"] for r in out) == sum(r["total"] for r in out)
    n = sum(len(v) for v in times.values())
    result = []
    for name in EXERCISES:
        mean = sum(times[name]) / len(times[name])
        result.append(
            dict(
                name=f"grading: seconds per submission, {name}",
                value=mean,
                unit="s",
                target="",
                ok=None,
            )
        )
    per_student = sum(sum(v) / len(v) for v in times.values())
    estimate = CLASS * per_student / JOBS / 3600
    from_batch = batch / n * CLASS * len(EXERCISES) / 3600
    result += [
        dict(
            name=f"grading: measured batch of {n} submissions at --jobs {JOBS}",
            value=batch,
            unit="s",
            target="",
            ok=None,
        ),
        dict(
            name="grading: the batch's correct submissions all get full marks",
            value="yes" if full else "no",
            unit="",
            target="yes",
            ok=full,
        ),
        dict(
            name=f"grading: a class of {CLASS} × {len(EXERCISES)} exercises at --jobs {JOBS}, "
            "from the mean per submission",
            value=estimate,
            unit="h",
            target=f"≤ {GOAL_HOURS:g} h",
            ok=estimate <= GOAL_HOURS,
        ),
        dict(
            name="grading: the same class, from the batch's wall clock",
            value=from_batch,
            unit="h",
            target=f"≤ {GOAL_HOURS:g} h",
            ok=from_batch <= GOAL_HOURS,
        ),
    ]
    return result


if __name__ == "__main__":
    for row in rows():
        print(row)
