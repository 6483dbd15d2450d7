"""Graded exercises: the learner's checks, the sandboxed worker and the trusted grader.

The package is split by where its code runs:

* **the learner's side**, imported by the exercise notebooks in a student's
  kernel (Binder, Colab, a laptop), with nothing beyond attnlib's own
  dependencies: :mod:`.reference` (pure-Python references),
  :mod:`.checks` (what the public tests call) and :mod:`.notebook` (the
  notebook's ``grader``, which runs the public tests without otter-grader).
  Their names are re-exported here.
* **the channel** between the two other sides, defined once: :mod:`.channel`.
* **the untrusted worker**, which runs inside the sandbox in the same process as
  a student's code: :mod:`.worker`.
* **the trusted instructor's side**: :mod:`.reader` (a submitted notebook, read in
  a child process with limits), :mod:`.sandbox` (bubblewrap, seccomp, limits, the
  staged attnlib), :mod:`.session` (one worker, driven over the channel),
  :mod:`.cases` (the checks and the hidden cases drawn from a private seed and the
  student's name), :mod:`.grader` (folder → gradebook, a process per job, a journal)
  and :mod:`.assign` (sources → student notebooks, :func:`build`).
  :func:`build` and :func:`grade` are loaded from there on first use.

Command line: ``python -m attnlib.grading build`` and
``python -m attnlib.grading grade SUBMISSIONS -o gradebook.csv --seed SECRET --wide``
(README, "For instructors").
"""

from __future__ import annotations

from typing import Any

from attnlib.grading.checks import assert_close, call, floats
from attnlib.grading.notebook import CHECKS_DIR, public_checks, student_notebook
from attnlib.grading.reference import py_additive_scores, py_context, py_entropy, py_softmax

__all__ = [
    "CHECKS_DIR",
    "assert_close",
    "build",
    "call",
    "floats",
    "grade",
    "public_checks",
    "py_additive_scores",
    "py_context",
    "py_entropy",
    "py_softmax",
    "student_notebook",
]


def __getattr__(name: str) -> Any:
    """The instructor's :func:`build` and :func:`grade`, imported only when asked for."""
    if name == "build":
        from attnlib.grading.assign import build

        return build
    if name == "grade":
        from attnlib.grading.grader import grade

        return grade
    raise AttributeError(f"module 'attnlib.grading' has no attribute {name!r}")
