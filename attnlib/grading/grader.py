"""The trusted grader: a folder of submissions → a CSV gradebook, student code never in its process.

For each student a grading process of its own (``--jobs`` of them at once) reads
their notebooks through :mod:`.reader` (a child process with limits: the grader
parses no notebook itself), starts sandboxed workers (:mod:`.sandbox`,
:mod:`.session`), sends them the notebook's code cells one by one, and at each
question's place runs its checks (:mod:`.cases`): it draws the inputs from the
private seed and the student's name, has the worker call the learner's function on
them, and compares the plain values that come back with its own reference. Only
those values can move a score.

Rules (README, "For instructors"):

* **Where a question is graded.** At its last ``grader.check("q...")`` cell: every
  cell above it has run, none below it. A helper defined between the answer and the
  check counts; a scratch cell below the check changes nothing; a definition fixed
  below a red check counts once a check of that question follows it (the grade is
  taken at the last check), and not otherwise, like any cell below the last check.
  A question whose check cell was deleted is graded right after the first cell
  that defines its name (``def``, ``class``, assignment, ``globals()[...]``, in any
  block), else at the end of the notebook. Cells below the last question's place
  are not run.
* **Two workers, two attnlibs.** The questions that ask the learner to write
  something are graded in a worker whose attnlib holds only what the exercise's
  notebook needs (:attr:`.cases.Exercise.modules`); those that tell the learner to
  use attnlib (:attr:`.cases.Question.uses_attnlib`) in a second worker that has all
  of it. Each runs the notebook's cells up to the last of its questions' places.
* **Cells that fail.** A cell that raises is noted and the notebook goes on (the
  first cell may fail in the sandbox without losing anything). A cell that overruns
  its time limit is stopped; one that will not stop, or that ends the worker, is
  skipped: the worker is restarted and the cells before it replayed.
* **Time is CPU time.** A cell's limit (``Exercise.cell_seconds``), a call's
  (``call_seconds``) and a submission's (``Limits.cpu_seconds``, all its workers
  together) count the CPU time of the sandbox's processes, so a grade does not depend
  on how busy the grading machine is. A submission that waits without computing is
  ended by wall-clock backstops (:mod:`.session`), the whole submission by ``timeout``.
* **Notes.** A failed check's note says which check, the kind of failure in the
  grader's words and the check's hint; never a value, a shape or a text that came
  from the learner's code or from a draw (the full messages go to the instructor's
  ``details`` file only). Hidden inputs thus never reach the gradebook.
* **The folder is input.** ``SUBMISSIONS/<student>/<any sub-folder>/<name>.ipynb``
  or ``SUBMISSIONS/<student>.ipynb``; only regular files are read, never through a
  symbolic link; links, FIFOs, devices, sockets and folders named ``*.ipynb`` are
  skipped with a note; ``__MACOSX``, hidden entries and files at the top that are not
  notebooks (an old gradebook) are not students, and a warning lists them. A notebook
  may be up to :data:`.reader.MAX_NOTEBOOK` bytes, saved outputs included. Nothing
  in the folder is ever written, and the gradebook may not be written into it.
* **Which exercise.** The notebook's metadata, else its file name, else its title
  ("Exercise 2: ..."), else the names it defines. A file named like an exercise that
  is not a readable notebook (a zip, bad JSON) gets that exercise's rows, with why.
* **Two notebooks for one exercise.** The one named exactly like the exercise
  (``02_additive_score.ipynb``) is graded, else the last by path; the others are
  listed in the note.
* **One row per student and question** for every exercise handed in by anyone in the
  batch (or named with ``--exercise``), 0 with a note where there is nothing to grade.
  A student's name is shown so that two different folder names never look alike
  (control characters escaped, names equal once Unicode-normalised marked), and no
  text cell starts like a spreadsheet formula.
* **A gradebook that survives a crash.** Each student's rows are appended to a
  journal (``<gradebook>.journal``, flushed to disk) as soon as they are graded; the
  CSV (and the ``--wide`` one: a row per student, a column per exercise and a total)
  is written atomically from the journal at the end. A rerun with the same seed,
  options and grader takes up the journal: only the students not yet graded, or
  whose notebooks changed, are graded again.

It is one module of over a thousand lines because every rule above is a decision of
the trusted side about one batch (the folder, the journal, the jobs, the rows); what
runs elsewhere is elsewhere: reading notebooks in :mod:`.reader`, the sandbox in
:mod:`.sandbox`, a worker's session in :mod:`.session`, the checks in :mod:`.cases`.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import logging
import multiprocessing
import os
import stat
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from attnlib.grading import cases, channel, reader, sandbox
from attnlib.grading.questions import EXERCISES
from attnlib.grading.session import Budget, Session, WorkerGone

__all__ = [
    "GRADEBOOK_COLUMNS",
    "MIN_SEED_BITS",
    "MIN_TIMEOUT",
    "SEED_ENV",
    "NothingToGrade",
    "SandboxUnavailable",
    "grade",
    "grade_notebook",
    "scan",
]

GRADEBOOK_COLUMNS = ("student", "question", "score", "total", "note")
SEED_ENV = "ATTNLIB_GRADING_SEED"
MIN_SEED_BITS = 64
MIN_TIMEOUT = 30.0
MAX_DEPTH = 4  # sub-folders of a student's folder searched for notebooks
MAX_ENTRIES = 2000  # entries of one student's folder looked at (more: the rest is noted)
KEEP_CODE = 256 * 2**10  # a notebook with less code than this is read once, not twice
JOURNAL_FORMAT = 1
log = logging.getLogger("attnlib.grading")


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run here, and the instructor did not ask to grade without it."""


class NothingToGrade(ValueError):
    """The folder holds no notebook (or none of the exercises asked for)."""


# =========================================================================== the probe
def _plain_arg(x: Any) -> Any:
    if isinstance(x, cases.Handle):
        return {"handle": x.name}
    if isinstance(x, cases.Torch):
        arr = np.asarray(x.value)
        return channel.array(arr.shape, f"torch.{x.dtype}", arr.ravel().tolist())
    if isinstance(x, np.ndarray):
        dtype = "bool" if x.dtype == bool else ("int64" if x.dtype.kind in "iu" else "float64")
        data = x.ravel().tolist()
        return channel.array(x.shape, dtype, data)
    if isinstance(x, tuple):
        return {"tuple": [_plain_arg(v) for v in x]}
    if isinstance(x, list):
        return [_plain_arg(v) for v in x]
    if isinstance(x, bool | int | float | str) or x is None:
        return x
    raise TypeError(f"the grader cannot send a {type(x).__name__}")


class _Probe:
    """:class:`attnlib.grading.cases.Probe` over a :class:`Session`.

    ``own``: the probe of the worker where the learner's code runs without attnlib (None:
    this one is).
    """

    def __init__(self, session: Any, call_seconds: float, own: _Probe | None = None) -> None:
        self.session = session
        self.call_seconds = call_seconds
        self._own = own
        self._handles = 0

    def own(self) -> _Probe:
        return self if self._own is None else self._own

    def _ask(self, message: dict[str, Any], seconds: float, label: str) -> Any:
        try:
            reply = self.session.request(message, seconds)
        except WorkerGone as gone:
            raise cases.Fail(f"{label}: {gone}", note=str(gone)) from None
        if reply["ok"]:
            return reply.get("value")
        err = reply.get("error")
        err = err if isinstance(err, dict) else {}
        kind, text = str(err.get("type", "Error"))[:100], str(err.get("message", ""))[:500]
        types = err.get("types")
        types = [str(t)[:100] for t in types[:20]] if isinstance(types, list) else []
        raise cases.Fail(f"{label} raised {kind}: {text}", kind="raised", raised=types)

    def call(self, target: str, *args: Any, seconds: float | None = None, **kwargs: Any) -> Any:
        seconds = self.call_seconds if seconds is None else seconds
        message = {
            "op": "call",
            "target": target,
            "args": [_plain_arg(a) for a in args],
            "kwargs": {k: _plain_arg(v) for k, v in kwargs.items()},
            "seconds": seconds,
        }
        return self._ask(message, seconds, target)

    def new(self, target: str, *args: Any, weights: dict[str, Any] | None = None) -> str:
        self._handles += 1
        handle = f"_h{self._handles}"
        message = {
            "op": "new",
            "target": target,
            "handle": handle,
            "args": [_plain_arg(a) for a in args],
            "weights": {k: _plain_arg(v) for k, v in (weights or {}).items()},
            "seconds": self.call_seconds,
        }
        self._ask(message, self.call_seconds, target)
        return handle

    def state(self, target: str, parts: Sequence[str] = ()) -> dict[str, Any]:
        value = self._ask(
            {"op": "state", "target": target, "parts": list(parts)}, self.call_seconds, target
        )
        if not isinstance(value, dict):
            raise cases.Fail(f"{target}: the worker's answer is not a module's state", kind="type")
        return value


# =========================================================================== one notebook
@dataclass
class Result:
    """One question's outcome: its score, the notes for the gradebook, the instructor's details."""

    score: float = 0.0
    notes: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    def plain(self) -> dict[str, Any]:
        return {"score": self.score, "notes": self.notes, "details": self.details}


def places(cells: Sequence[Mapping[str, Any]], exercise: cases.Exercise) -> dict[str, int]:
    """Question → k: the question is graded once cells 0 … k-1 have run (module docstring)."""
    out: dict[str, int] = {}
    for q in exercise.questions:
        checks = [k for k, c in enumerate(cells) if q.name in c.get("checks", [])]
        defining = [k for k, c in enumerate(cells) if q.defines in c.get("defines", [])]
        if checks:
            out[q.name] = checks[-1]
        elif defining:
            out[q.name] = defining[0] + 1
        else:
            out[q.name] = len(cells)
    return out


def _answer_cell(cells: Sequence[Mapping[str, Any]], name: str, at: int) -> int | None:
    """The last cell above ``at`` that defines ``name`` (its error is noted)."""
    found = [k for k in range(min(at, len(cells))) if name in cells[k].get("defines", [])]
    return found[-1] if found else None


def _notebook_copy(read: Mapping[str, Any], name: str) -> bytes:
    """The notebook the worker finds in its folder: its code cells, no output (a few MB at most)."""
    nb = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
             "source": c.get("source", "")}
            for c in read["cells"]
        ],
        "metadata": {"otter": {"assignment_name": name}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }  # fmt: skip
    return json.dumps(nb).encode()


def _builtin(kind: Any) -> str:
    return kind if isinstance(kind, str) and kind in cases.BUILTIN_ERRORS else "an exception"


def stages(exercise: cases.Exercise) -> dict[str, sandbox.Stage]:
    """The exercise's two attnlibs: ``"own"`` (its modules only) and ``"course"`` (all)."""
    key = exercise.name
    if key not in _STAGES:
        _STAGES[key] = {
            "own": sandbox.stage(exercise.name, exercise.modules, exercise.switched_off),
            "course": sandbox.stage(exercise.name),
        }
    return _STAGES[key]


_STAGES: dict[str, dict[str, sandbox.Stage]] = {}


def _feed_bytes(data: bytes) -> Callable[[Callable[[bytes], Any]], None]:
    def feed(write: Callable[[bytes], Any]) -> None:
        view = memoryview(data)
        for k in range(0, len(view), 1 << 20):
            write(bytes(view[k : k + (1 << 20)]))

    return feed


def grade_notebook(
    notebook: bytes | Mapping[str, Any],
    exercise: cases.Exercise,
    seed: str,
    stage: Mapping[str, sandbox.Stage] | None = None,
    *,
    student: str = "",
    limits: sandbox.Limits | None = None,
    isolate: bool = True,
    timeout: float = 300.0,
    call_seconds: float = 10.0,
    max_starts: int = 4,
    usage: dict[str, float] | None = None,
) -> dict[str, Result]:
    """Grade one notebook of ``exercise``; question name → :class:`Result`.

    Parameters
    ----------
    notebook : bytes or dict
        The notebook's bytes (read here through :mod:`.reader`), or what the reader made of
        them.
    exercise : Exercise
    seed : str
        The private seed; with ``student`` it seeds every hidden draw.
    stage : mapping, optional
        ``{"own": Stage, "course": Stage}`` (default: :func:`stages`).
    student : str
        The student's name (their folder's), part of every draw.
    timeout : float
        The submission's wall-clock backstop; ``call_seconds`` the CPU time of one call
        of the learner's code, ``exercise.cell_seconds`` of one cell, and
        ``limits.cpu_seconds`` of the whole submission, every worker together (see
        :mod:`.session`).
    usage : dict, optional
        Filled with ``worker_cpu``: the CPU seconds the notebook's workers used.
    """
    results = {q.name: Result() for q in exercise.questions}
    read = reader.run(_feed_bytes(notebook)) if isinstance(notebook, bytes) else notebook
    if "error" in read:
        for r in results.values():
            r.notes.append(f"not a readable notebook: {read['error']}")
        return results
    limits = limits or sandbox.Limits()
    stage = stage or stages(exercise)
    cells = read["cells"]
    at = places(cells, exercise)
    copy = _notebook_copy(read, exercise.name)
    budget = Budget(limits.cpu_seconds, timeout)
    own_questions = [q for q in exercise.questions if not q.uses_attnlib]
    course_questions = [q for q in exercise.questions if q.uses_attnlib]
    sessions: list[Session] = []
    own_probe: _Probe | None = None
    try:
        for env, questions in (("own", own_questions), ("course", course_questions)):
            if not questions:
                continue
            session = Session(
                stage[env],
                copy,
                f"{exercise.name}.ipynb",
                limits,
                isolate=isolate,
                budget=budget,
                max_starts=max_starts,
            )
            sessions.append(session)
            probe = _Probe(session, call_seconds, own=own_probe)
            _run_questions(session, probe, cells, at, questions, exercise, seed, student, results)
            if env == "own":
                own_probe = probe
    finally:
        for s in sessions:
            s.close()
        if usage is not None:
            usage["worker_cpu"] = budget.used()
    return results


def _run_questions(
    session: Session,
    probe: _Probe,
    cells: Sequence[Mapping[str, Any]],
    at: Mapping[str, int],
    questions: Sequence[cases.Question],
    exercise: cases.Exercise,
    seed: str,
    student: str,
    results: dict[str, Result],
) -> None:
    """Run the cells up to the last of ``questions``' places, grading each at its place."""
    stop = max(at[q.name] for q in questions)
    errors: dict[int, str] = {}
    not_run: list[str] = []  # cells the reader would not hand over: every later question says so
    stopped = ""
    for k in range(stop + 1):
        for q in (q for q in questions if at[q.name] == k):
            res = results[q.name]
            res.notes += [n for n in not_run if n not in res.notes]
            answer = _answer_cell(cells, q.defines, k)
            if answer is not None and answer in errors:
                res.notes.append(f"its answer cell {errors[answer]}")
            if answer is None and not any(q.name in c.get("checks", []) for c in cells):
                res.notes.append(f"no cell defines {q.defines}")
            for check in q.checks:
                spent = None if stopped else session.spent()
                if spent:
                    stopped = f"stopped at {spent}"
                if stopped:
                    res.notes.append(f"{check.name}: {stopped}")
                    continue
                rng = cases.rng_for(seed, student, exercise.name, q.name, check.name)
                try:
                    check.run(probe, rng)
                except cases.Fail as fail:
                    res.notes.append(f"{check.name}: {fail.phrase()} ({check.hint})")
                    res.details.append(f"{check.name}: {fail}"[:2000])
                except WorkerGone as gone:
                    res.notes.append(f"{check.name}: {gone}")
                except Exception as err:  # a value the check could not use: it fails
                    res.notes.append(f"{check.name}: the result could not be used ({check.hint})")
                    res.details.append(f"{check.name}: {type(err).__name__}: {err}"[:2000])
                else:
                    res.score += check.points
        if k >= stop or k >= len(cells) or stopped:
            break
        cell = cells[k]
        if cell.get("skipped"):
            errors[k] = f"was not run ({cell['skipped']})"
            not_run.append(f"code cell {k + 1} was not run ({cell['skipped']})")
            continue
        source = cell.get("source", "")
        if not source.strip() or cell.get("only_checks"):
            continue
        try:
            reply = session.cell(source, exercise.cell_seconds)
            if not reply["ok"]:
                raised = reply.get("error")
                raised = raised if isinstance(raised, dict) else {}
                types = raised.get("types")
                types = types if isinstance(types, list) else []
                name = next((t for t in types if t in cases.BUILTIN_ERRORS), None)
                errors[k] = f"raised {_builtin(name or raised.get('type'))}"
        except channel.ChannelError:  # never sent: the worker goes on without it
            errors[k] = "was not run (it cannot be sent to the worker)"
        except WorkerGone as gone:
            errors[k] = f"was skipped ({gone})"
            spent = session.spent()
            if spent:
                stopped = f"stopped at {spent}"
    if stopped:
        for q in questions:
            res = results[q.name]
            if not any(stopped in n for n in res.notes) and res.score < q.total:
                res.notes.append(stopped)


# =========================================================================== the folder
@dataclass(frozen=True)
class Entry:
    """A notebook found in the folder: where it is, and which file it was (never its bytes)."""

    student: str
    parts: tuple[str, ...]  # its path below the submissions folder
    dev: int
    ino: int
    size: int
    mtime_ns: int

    @property
    def path(self) -> str:
        return "/".join(self.parts)

    @property
    def name(self) -> str:
        return self.parts[-1]


@dataclass
class Scan:
    """What a submissions folder holds: students, notebooks, and per student the entries skipped."""

    students: list[str] = field(default_factory=list)
    notebooks: list[Entry] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)  # top-level entries that are not students

    def of(self, student: str) -> list[Entry]:
        return [e for e in self.notebooks if e.student == student]


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link (links are not followed)"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


_NOT_STUDENTS = ("__MACOSX",)  # what a zip made on a Mac adds


def _walk(out: Scan, student: str, dir_fd: int, prefix: tuple[str, ...], depth: int) -> None:
    """The notebooks in a student's folder and its sub-folders (no link followed)."""
    entries = sorted(os.scandir(dir_fd), key=lambda e: e.name)
    if len(entries) > MAX_ENTRIES:
        out.skipped.setdefault(student, []).append(
            f"{'/'.join(prefix)}: {len(entries)} entries, only the first {MAX_ENTRIES} looked at"
        )
    for entry in entries[:MAX_ENTRIES]:
        name = entry.name
        if name.startswith(".") or name in _NOT_STUDENTS:
            continue
        st = entry.stat(follow_symlinks=False)
        where = "/".join((*prefix[1:], name))
        if stat.S_ISDIR(st.st_mode) and not name.endswith(".ipynb"):
            if depth >= MAX_DEPTH:
                out.skipped.setdefault(student, []).append(f"{where}: a folder nested too deep")
                continue
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            try:
                _walk(out, student, sub, (*prefix, name), depth + 1)
            finally:
                os.close(sub)
            continue
        if not name.endswith(".ipynb"):
            if not stat.S_ISREG(st.st_mode):
                out.skipped.setdefault(student, []).append(f"{where}: {_kind(st.st_mode)}")
            continue
        if not stat.S_ISREG(st.st_mode):
            out.skipped.setdefault(student, []).append(f"{where}: {_kind(st.st_mode)}")
            continue
        out.notebooks.append(
            Entry(student, (*prefix, name), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        )


def scan(folder: Path) -> Scan:
    """Every student and notebook in ``folder`` (the rules in the module docstring)."""
    out = Scan()
    top = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for entry in sorted(os.scandir(top), key=lambda e: e.name):
            name = entry.name
            if name.startswith(".") or name in _NOT_STUDENTS:
                if name not in (".", "..") and not name.startswith(".ipynb_checkpoints"):
                    out.ignored.append(f"{name}: hidden or an archive's metadata, not a student")
                continue
            st = entry.stat(follow_symlinks=False)
            is_dir = stat.S_ISDIR(st.st_mode)
            if stat.S_ISREG(st.st_mode) and not name.endswith(".ipynb"):
                out.ignored.append(f"{name}: a file, not a student's folder or notebook")
                continue
            student = name[: -len(".ipynb")] if name.endswith(".ipynb") and not is_dir else name
            if student not in out.students:
                out.students.append(student)
            if is_dir:
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top)
                try:
                    _walk(out, student, sub, (name,), 1)
                finally:
                    os.close(sub)
            elif stat.S_ISREG(st.st_mode):
                out.notebooks.append(
                    Entry(student, (name,), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
                )
            else:
                out.skipped.setdefault(student, []).append(f"{name}: {_kind(st.st_mode)}")
    finally:
        os.close(top)
    return out


def _open_entry(folder: Path, entry: Entry) -> int:
    """A descriptor on the scanned file: no link followed on the way, the same file as scanned.

    Raises
    ------
    OSError
        If a part of the path is a link now, or the file is another one than was scanned.
    """
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in entry.parts[:-1]:
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        file_fd = os.open(entry.parts[-1], flags, dir_fd=fd)
    finally:
        os.close(fd)
    st = os.fstat(file_fd)
    if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (entry.dev, entry.ino):
        os.close(file_fd)
        raise OSError("the file changed since the folder was read")
    return file_fd


def _read_entry(folder: Path, entry: Entry, *, sources: bool) -> dict[str, Any]:
    """What :mod:`.reader` makes of one notebook, streamed from its file (never held here)."""
    try:
        fd = _open_entry(folder, entry)
    except OSError as err:
        return {"error": f"could not be opened ({err.strerror or err})"}

    def feed(write: Callable[[bytes], Any]) -> None:
        with os.fdopen(fd, "rb", closefd=False) as f:
            while chunk := f.read(1 << 20):
                write(chunk)

    try:
        return reader.run(feed, sources=sources)
    finally:
        os.close(fd)


def identify(read: Mapping[str, Any], name: str, known: Mapping[str, cases.Exercise]) -> str | None:
    """The exercise a notebook belongs to: metadata, file name, title, defined names."""
    if "error" not in read and isinstance(read.get("otter"), str) and read["otter"] in known:
        return str(read["otter"])
    stem = name[: -len(".ipynb")]
    for ex_name in known:
        if ex_name in stem:
            return ex_name
    if "error" in read:
        return None
    for exercise in known.values():
        if exercise.number in read.get("titles", []):
            return exercise.name
    defined = {n for c in read.get("cells", []) for n in c.get("defines", [])}
    for exercise in known.values():
        if all(q.defines in defined for q in exercise.questions):
            return exercise.name
    return None


def _preferred(entry: Entry, exercise: str) -> tuple[bool, str]:
    return (entry.name == f"{exercise}.ipynb", entry.path)


# =========================================================================== one student (a job)
@dataclass(frozen=True)
class _Settings:
    """What every job needs (plain data: it crosses to the job processes)."""

    folder: str
    seed: str
    names: tuple[str, ...] | None  # the exercises asked for (None: every one)
    isolate: bool
    timeout: float
    limits: sandbox.Limits


def _init_job() -> None:
    """A job process: one thread for torch and BLAS (the grader's own arithmetic is small)."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = "1"


def _children_cpu() -> float:
    import resource

    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _grade_student(settings: _Settings, student: str, entries: Sequence[Entry]) -> dict[str, Any]:
    """One student's notebooks, identified and graded: the journal's entry for them."""
    import resource

    started, cpu0, children0 = time.monotonic(), time.process_time(), _children_cpu()
    with contextlib.suppress(ImportError):  # torch threads, if torch is there (it is)
        import torch

        torch.set_num_threads(1)
    folder = Path(settings.folder)
    known = {n: e for n, e in EXERCISES.items() if settings.names is None or n in settings.names}
    skipped: list[str] = []
    chosen: dict[str, Entry] = {}
    extra: dict[str, list[str]] = {}
    unreadable: dict[str, str] = {}
    kept: dict[str, dict[str, Any]] = {}  # what was read of a small notebook, read once
    for entry in entries:
        summary = _read_entry(folder, entry, sources=True)
        code = sum(len(c.get("source", "")) for c in summary.get("cells", []))
        held = sum(len(c.get("source", "")) for r in kept.values() for c in r["cells"])
        if code <= KEEP_CODE and held + code <= 8 * KEEP_CODE and "error" not in summary:
            kept[entry.path] = summary
        else:  # a large one is read again when it is graded: this process holds one at a time
            for c in summary.get("cells", []):
                c.pop("source", None)
        ex = identify(summary, entry.name, EXERCISES)
        if ex is None:
            why = summary.get("error") or "not one of the exercises"
            skipped.append(f"{entry.path}: {why}")
            continue
        if ex not in known:
            continue
        if "error" in summary:
            unreadable[entry.path] = str(summary["error"])
        if ex in chosen:
            a, b = chosen[ex], entry
            keep, drop = (a, b) if _preferred(a, ex) >= _preferred(b, ex) else (b, a)
            chosen[ex] = keep
            extra.setdefault(ex, []).append(drop.path)
        else:
            chosen[ex] = entry
    graded: dict[str, Any] = {}
    for ex, entry in sorted(chosen.items()):
        t0, c0 = time.monotonic(), time.process_time()
        exercise = EXERCISES[ex]
        if entry.path in unreadable:
            read: dict[str, Any] = {"error": unreadable[entry.path]}
        elif entry.path in kept:
            read = kept.pop(entry.path)
        else:
            read = _read_entry(folder, entry, sources=True)
        usage: dict[str, float] = {}
        try:
            results = grade_notebook(
                read,
                exercise,
                settings.seed,
                student=student,
                limits=settings.limits,
                isolate=settings.isolate,
                timeout=settings.timeout,
                usage=usage,
            )
        except Exception as err:  # one notebook never stops the batch: it scores 0, and why
            why = f"could not be graded ({type(err).__name__})"
            results = {q.name: Result(notes=[why], details=[str(err)[:500]]) for q in
                       exercise.questions}  # fmt: skip
        graded[ex] = {
            "path": entry.path,
            "sha256": read.get("sha256"),
            "extra": extra.get(ex, []),
            "results": {q: r.plain() for q, r in results.items()},
            "seconds": round(time.monotonic() - t0, 3),
            "grader_cpu": round(time.process_time() - c0, 3),
            "worker_cpu": round(usage.get("worker_cpu", 0.0), 3),
        }
    return {
        "student": student,
        "files": [_fingerprint(e) for e in entries],
        "exercises": graded,
        "skipped": skipped,
        "seconds": round(time.monotonic() - started, 3),
        "grader_cpu": round(time.process_time() - cpu0, 3),
        "children_cpu": round(_children_cpu() - children0, 3),  # readers, bwrap (not workers)
        "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,  # this job process's
    }


def _fingerprint(entry: Entry) -> list[Any]:
    return [entry.path, entry.dev, entry.ino, entry.size, entry.mtime_ns]


# =========================================================================== the journal
class Journal:
    """The students graded so far, one JSON line each, flushed to disk as each is written.

    The first line names the run (:func:`_run_fingerprint`): a journal of another seed,
    other options or another grader is not taken up (it is moved aside).
    """

    def __init__(self, path: Path, fingerprint: str, *, restart: bool = False) -> None:
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {}
        path.parent.mkdir(parents=True, exist_ok=True)
        header = {"journal": JOURNAL_FORMAT, "run": fingerprint}
        lines = self._lines() if path.exists() and not restart else []
        if lines and lines[0] == header:
            for item in lines[1:]:
                if isinstance(item, dict) and isinstance(item.get("student"), str):
                    self.entries[item["student"]] = item
            self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
        else:
            if path.exists():
                os.replace(path, path.with_name(path.name + ".old"))
                if lines:
                    log.warning(
                        "%s was made by another run (seed, options or grader): moved aside to "
                        "%s.old, every student is graded again", path, path.name,
                    )  # fmt: skip
            self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115 - kept open
            self._write(header)

    def _lines(self) -> list[Any]:
        out = []
        with open(self.path, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:  # the line a crash cut short: that student is graded again
                    break
        return out

    def _write(self, item: Mapping[str, Any]) -> None:
        self._file.write(json.dumps(item, ensure_ascii=False) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def done(self, student: str, entries: Sequence[Entry]) -> bool:
        """Whether the student was graded, with these very files."""
        item = self.entries.get(student)
        return item is not None and item.get("files") == [_fingerprint(e) for e in entries]

    def add(self, item: Mapping[str, Any]) -> None:
        self.entries[str(item["student"])] = dict(item)
        self._write(item)

    def close(self) -> None:
        self._file.close()


def _run_fingerprint(settings: _Settings) -> str:
    """What a journal's results depend on: seed, exercises, limits, the grader's own code."""
    code = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for path in sorted(here.rglob("*.py")):
        code.update(path.read_bytes())
    for path in sorted(here.parent.rglob("*.py")):  # the staged attnlib too
        if "grading" not in path.relative_to(here.parent).parts:
            code.update(path.read_bytes())
    parts = {
        "seed": hashlib.sha256(("attnlib journal\x1f" + settings.seed).encode(
            "utf-8", "surrogatepass")).hexdigest(),
        "names": settings.names,
        "isolate": settings.isolate,
        "timeout": settings.timeout,
        "limits": [settings.limits.memory_bytes, settings.limits.cpu_seconds,
                   settings.limits.file_bytes, settings.limits.open_files,
                   settings.limits.scratch_bytes],
        "code": code.hexdigest(),
    }  # fmt: skip
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


# =========================================================================== running the jobs
def _run_jobs(
    settings: _Settings,
    todo: Mapping[str, Sequence[Entry]],
    jobs: int,
    done: Callable[[dict[str, Any]], None],
) -> None:
    """Grade every student of ``todo`` in ``jobs`` processes; ``done`` gets each one's entry.

    At most ``jobs`` students are handed out at a time. A job process that dies (a bug, the
    machine's memory) breaks the pool: it is made again and the students it was grading are
    graded again, once; a student whose grading breaks it twice gets a note instead.
    """
    pending = list(todo)
    tries: dict[str, int] = {}
    context = multiprocessing.get_context("spawn")
    while pending:
        with ProcessPoolExecutor(
            max_workers=jobs, mp_context=context, initializer=_init_job
        ) as pool:
            running: dict[Future[dict[str, Any]], str] = {}
            broken = False
            while (pending or running) and not broken:
                while pending and len(running) < jobs:
                    student = pending.pop(0)
                    fut = pool.submit(_grade_student, settings, student, list(todo[student]))
                    running[fut] = student
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    student = running.pop(fut)
                    try:
                        done(fut.result())
                    except BrokenProcessPool:
                        broken = True
                        running[fut] = student
                    except Exception as err:  # the job's own failure: the student gets a note
                        done(_failed(settings, student, todo[student], err))
            if broken:
                for student in running.values():
                    tries[student] = tries.get(student, 0) + 1
                    if tries[student] >= 2:
                        twice = RuntimeError("its grading process ended twice")
                        done(_failed(settings, student, todo[student], twice))
                    else:
                        pending.insert(0, student)


def _failed(
    settings: _Settings, student: str, entries: Sequence[Entry], err: BaseException
) -> dict[str, Any]:
    return {
        "student": student,
        "files": [_fingerprint(e) for e in entries],
        "exercises": {},
        "skipped": [],
        "failed": f"could not be graded ({type(err).__name__}: {str(err)[:200]})",
    }


# =========================================================================== the gradebook
def _escape(name: str) -> str:
    """A name with every control or invisible character written as its escape (``\\n``)."""
    out = []
    for ch in name:
        if ch.isprintable() and unicodedata.category(ch) not in ("Cf", "Zl", "Zp"):
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape", "backslashreplace").decode("ascii"))
    return "".join(out)


def display_names(students: Sequence[str]) -> dict[str, str]:
    """How the gradebook shows each folder name: two different names never look alike.

    Control characters are escaped (``ana\\r`` and ``ana\\n`` differ); names that are equal
    once Unicode-normalised (NFC and NFD forms of "José") are each followed by the code
    points that tell them apart.
    """
    shown = {s: _escape(s) for s in students}
    by_form: dict[str, list[str]] = {}
    for s in students:
        by_form.setdefault(unicodedata.normalize("NFC", shown[s]).casefold(), []).append(s)
    for group in by_form.values():
        if len(group) > 1:
            for s in group:
                shown[s] = f"{shown[s]} [{s.encode('ascii', 'backslashreplace').decode()}]"
    return shown


def _safe(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: no formula, no control character."""
    text = "".join(ch if ch.isprintable() else "?" for ch in str(text))
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def _write_atomic(path: Path, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            for row in rows:
                writer.writerow([_safe(v) if isinstance(v, str) else v for v in row])
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def private_seed(seed: str | None, *, weak_ok: bool = False) -> str:
    """The seed the hidden cases are drawn from: ``seed``, else ``$ATTNLIB_GRADING_SEED``.

    Raises
    ------
    ValueError
        If there is none, or it holds fewer than :data:`MIN_SEED_BITS` bits by
        :func:`attnlib.grading.cases.seed_bits` (unless ``weak_ok``).
    """
    seed = seed if seed is not None else os.environ.get(SEED_ENV)
    if not seed:
        raise ValueError(
            f"no grading seed: pass --seed or set {SEED_ENV}. The hidden cases are drawn from "
            "it, so keep it private (anyone who knows it can predict them)"
        )
    bits = cases.seed_bits(seed)
    if bits < MIN_SEED_BITS and not weak_ok:
        raise ValueError(
            f"the grading seed holds about {bits:.0f} bits of randomness, fewer than "
            f"{MIN_SEED_BITS}: a student who sees their notes could guess it. Make one with "
            '`python -c "import secrets; print(secrets.token_hex(16))"`, or pass '
            "--weak-seed-ok to grade with this one anyway"
        )
    return seed


def _inside(path: Path, folder: Path) -> bool:
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def grade(
    submissions: Path,
    gradebook: Path,
    *,
    seed: str | None = None,
    jobs: int = 2,
    exercises: Sequence[str] | None = None,
    isolate: bool = True,
    timeout: float = 300.0,
    limits: sandbox.Limits | None = None,
    wide: Path | None = None,
    details: Path | None = None,
    weak_seed_ok: bool = False,
    restart: bool = False,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Grade a folder of submissions into a CSV gradebook (the rules in the module docstring).

    Parameters
    ----------
    submissions : Path
        The folder handed in (read only, never written).
    gradebook : Path
        The CSV to write: student, question (``exercise:question``), score, total, note.
        Its journal is ``<gradebook>.journal``.
    seed : str, optional
        The private seed of the hidden cases (default: ``$ATTNLIB_GRADING_SEED``).
    jobs : int
        Students graded at once, each in a process of its own.
    exercises : sequence of str, optional
        The exercises to have a row for (default: every exercise handed in by anyone).
    isolate : bool
        False grades without the OS sandbox (``--no-sandbox``): only for work you trust.
    timeout : float
        Wall-clock seconds per submission, everything included (at least
        :data:`MIN_TIMEOUT`): a backstop for a submission that waits without computing
        (the CPU time limits stop one that computes, whatever the machine's load).
    limits : Limits, optional
        Memory, file and scratch limits of each worker, and the CPU time of each
        submission (all its workers together).
    wide : Path, optional
        Also write a CSV with a row per student, a column per exercise and a total.
    details : Path, optional
        Also write every failed check's full message, for the instructor only: it quotes
        what the learner's code returned and raised, and hidden inputs (never share it).
    weak_seed_ok : bool
        Grade with a seed of fewer than :data:`MIN_SEED_BITS` bits.
    restart : bool
        Ignore the journal of an earlier run: grade every student again.
    progress : callable, optional
        Called with a line for each student graded.

    Returns
    -------
    list of dict
        The gradebook rows.

    Raises
    ------
    SandboxUnavailable
        If the sandbox cannot run here and ``isolate`` is True (with why).
    NothingToGrade
        If the folder holds no notebook (of the exercises asked for).
    ValueError
        For a seed, a timeout, a number of jobs, an exercise or an output path that cannot be.
    """
    seed = private_seed(seed, weak_ok=weak_seed_ok)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"--jobs must be a whole number ≥ 1, got {jobs!r}")
    if not timeout >= MIN_TIMEOUT:  # NaN too
        raise ValueError(
            f"--timeout is the wall-clock backstop of one submission and must be at least "
            f"{MIN_TIMEOUT:g} s (got {timeout:g}); the limits that count are CPU time"
        )
    submissions = Path(submissions)
    if not submissions.exists():
        raise FileNotFoundError(f"no folder {submissions}")
    if not submissions.is_dir():
        raise NotADirectoryError(f"{submissions} is not a folder of submissions")
    outputs = [Path(gradebook), Path(gradebook).with_name(Path(gradebook).name + ".journal")]
    outputs += [p for p in (wide, details) if p is not None]
    for out in outputs:
        if _inside(out, submissions):
            raise ValueError(
                f"{out} is inside the submissions folder {submissions}: the next run would read "
                "it as a student's; write it elsewhere"
            )
    known = EXERCISES
    if exercises:
        unknown = sorted(set(exercises) - set(known))
        if unknown:
            raise ValueError(f"no exercise named {unknown}; the exercises are {sorted(known)}")
    if isolate:
        reason = sandbox.problem()
        if reason:
            raise SandboxUnavailable(
                f"refusing to grade untrusted work without the sandbox: {reason}. Pass "
                "--no-sandbox to grade anyway (a submission could then read or change "
                "anything this user can)"
            )
    found = scan(submissions)
    for line in found.ignored:
        log.warning("not graded: %s", line)
    if not found.notebooks:
        what = f"{len(found.students)} student entries" if found.students else "nothing"
        raise NothingToGrade(
            f"no notebook in {submissions} (it holds {what}): hand-ins are "
            "SUBMISSIONS/<student>/<notebook>.ipynb or SUBMISSIONS/<student>.ipynb"
        )
    settings = _Settings(
        folder=str(submissions.resolve()),
        seed=seed,
        names=tuple(sorted(exercises)) if exercises else None,
        isolate=isolate,
        timeout=float(timeout),
        limits=limits or sandbox.Limits(),
    )
    journal = Journal(outputs[1], _run_fingerprint(settings), restart=restart)
    try:
        todo = {
            s: found.of(s)
            for s in found.students
            if found.of(s) and not journal.done(s, found.of(s))
        }
        if len(todo) < sum(1 for s in found.students if found.of(s)):
            log.info("taking up %s: %d students already graded", journal.path, len(journal.entries))

        def done(item: dict[str, Any]) -> None:
            journal.add(item)
            if progress is not None:
                progress(f"graded {_escape(item['student'])}")

        _run_jobs(settings, todo, jobs, done)
    finally:
        journal.close()
    graded = {s: journal.entries[s] for s in found.students if s in journal.entries}
    names = (
        list(exercises)
        if exercises
        else sorted({ex for item in graded.values() for ex in item.get("exercises", {})})
    )
    if not names:
        raise NothingToGrade(
            f"no notebook in {submissions} is one of the exercises"
            + (f" asked for ({', '.join(exercises)})" if exercises else "")
            + "; the notes of the skipped files: "
            + "; ".join(n for item in graded.values() for n in item.get("skipped", []))[:500]
        )
    rows = _rows(found, graded, names)
    shown = display_names(found.students)
    _write_atomic(
        Path(gradebook),
        GRADEBOOK_COLUMNS,
        [[shown[r["student"]], r["question"], r["score"], r["total"], r["note"]] for r in rows],
    )
    if wide is not None:
        _write_wide(Path(wide), rows, names, found.students, shown)
    if details is not None:
        _write_details(Path(details), graded, shown)
    return rows


def _rows(
    found: Scan, graded: Mapping[str, Mapping[str, Any]], names: Sequence[str]
) -> list[dict[str, Any]]:
    rows = []
    for student in found.students:
        item = graded.get(student, {})
        skipped = found.skipped.get(student, []) + list(item.get("skipped", []))
        for ex in names:
            entry = item.get("exercises", {}).get(ex)
            for q in EXERCISES[ex].questions:
                if entry is not None:
                    res = entry["results"][q.name]
                    notes = list(res["notes"])
                    if entry.get("extra"):
                        notes.append(
                            f"graded {entry['path']}; also handed in, not graded: "
                            f"{', '.join(entry['extra'])}"
                        )
                    score = float(res["score"])
                elif item.get("failed"):
                    notes, score = [str(item["failed"])], 0.0
                else:
                    notes = ["no submission"] + [f"skipped {s}" for s in skipped]
                    score = 0.0
                rows.append(
                    dict(
                        student=student,
                        question=f"{ex}:{q.name}",
                        score=score,
                        total=q.total,
                        note="; ".join(notes)[:1000],
                    )
                )
    return rows


def _write_wide(
    path: Path,
    rows: Sequence[Mapping[str, Any]],
    names: Sequence[str],
    students: Sequence[str],
    shown: Mapping[str, str],
) -> None:
    """One row per student: a column per exercise (the sum of its questions) and the total."""
    per: dict[tuple[str, str], float] = {}
    for r in rows:
        key = (r["student"], r["question"].split(":")[0])
        per[key] = per.get(key, 0.0) + float(r["score"])
    header = ["student", *names, "total"]
    out = []
    for s in students:
        scores = [per.get((s, ex), 0.0) for ex in names]
        out.append([shown[s], *scores, sum(scores)])
    _write_atomic(path, header, out)


def _write_details(
    path: Path, graded: Mapping[str, Mapping[str, Any]], shown: Mapping[str, str]
) -> None:
    out = []
    for student, item in graded.items():
        for ex, entry in sorted(item.get("exercises", {}).items()):
            for q, res in entry["results"].items():
                out += [[shown[student], f"{ex}:{q}", d] for d in res.get("details", [])]
    _write_atomic(path, ["student", "question", "detail"], out)


def timings(gradebook: Path) -> Iterator[tuple[str, str, float, float, float]]:
    """(student, exercise, wall seconds, grader CPU seconds, workers' CPU seconds) of each
    notebook graded, from the journal of ``gradebook`` (for the throughput bench)."""
    path = Path(gradebook).with_name(Path(gradebook).name + ".journal")
    with open(path, encoding="utf-8") as f:
        for line in f:
            item = json.loads(line)
            for ex, entry in item.get("exercises", {}).items():
                yield (
                    item["student"],
                    ex,
                    float(entry["seconds"]),
                    float(entry["grader_cpu"]),
                    float(entry.get("worker_cpu", 0.0)),
                )
