"""The trusted grader: a folder of submissions → a CSV gradebook, student code never in its process.

For each submission the grader reads the notebook as data (JSON, never run
here), starts a sandboxed worker (:mod:`.sandbox`, :mod:`.session`), sends it
the notebook's code cells one by one, and right after a question's answer cell
runs that question's checks (:mod:`.cases`): it draws the inputs from the
private seed, has the worker call the learner's function on them, and compares
the plain values that come back with its own reference. Only those values can
move a score.

Rules (README, "For instructors"):

* **Which definition is graded.** A question is graded right after its answer
  cell: the last code cell that defines the question's name (``softmax``,
  ``MyAdditiveAttention``, ``model``) above the question's ``grader.check``
  cell, or the first cell that defines it where there is no check cell. A later
  scratch cell that reuses the name changes nothing.
* **Cells that fail.** A cell that raises is noted and the notebook goes on (the
  first cell may fail in the sandbox without losing anything). A cell that
  overruns its time limit is stopped; one that will not stop, or that ends the
  worker, is skipped: the worker is restarted and the cells before it replayed.
* **Time is CPU time.** A cell's limit (``Exercise.cell_seconds``), a call's
  (``call_seconds``) and a submission's (``Limits.cpu_seconds``, all its workers
  together) count the CPU time of the sandbox's processes, so a grade does not
  depend on how busy the grading machine is. A submission that waits without
  computing is ended by wall-clock backstops (:mod:`.session`), and the whole
  submission by ``timeout``.
* **The folder is input.** ``SUBMISSIONS/<student>/<anything>.ipynb`` or
  ``SUBMISSIONS/<student>.ipynb``; only regular files are read, never through
  a symbolic link; links, FIFOs, devices, sockets and folders named ``*.ipynb``
  are skipped with a note. Nothing in the folder is ever written.
* **Which exercise.** The notebook's metadata, else its file name, else its
  title ("Exercise 2: ..."), else the names it defines.
* **Two notebooks for one exercise.** The one named exactly like the exercise
  (``02_additive_score.ipynb``) is graded, else the last by name; the others
  are listed in the note.
* **One row per student and question** for every exercise handed in by anyone
  in the batch (or named with ``--exercise``), 0 with a note where there is
  nothing to grade. Every text cell is written so that a spreadsheet never
  reads it as a formula. The gradebook is written once, atomically, after every
  worker has ended.
"""

from __future__ import annotations

import ast
import contextlib
import csv
import json
import os
import re
import stat
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from attnlib.grading import cases, channel, sandbox
from attnlib.grading.questions import EXERCISES
from attnlib.grading.session import Session, WorkerGone

__all__ = [
    "GRADEBOOK_COLUMNS",
    "SEED_ENV",
    "SandboxUnavailable",
    "Submission",
    "grade",
    "grade_notebook",
    "scan",
]

GRADEBOOK_COLUMNS = ("student", "question", "score", "total", "note")
SEED_ENV = "ATTNLIB_GRADING_SEED"
MAX_NOTEBOOK = 32 * 2**20


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run here, and the instructor did not ask to grade without it."""


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
    """:class:`attnlib.grading.cases.Probe` over a :class:`Session`."""

    def __init__(self, session: Session, call_seconds: float) -> None:
        self.session = session
        self.call_seconds = call_seconds
        self._handles = 0

    def _ask(self, message: dict[str, Any], seconds: float, label: str) -> Any:
        try:
            reply = self.session.request(message, seconds)
        except WorkerGone as gone:
            raise cases.Fail(f"{label}: {gone}") from None
        if reply["ok"]:
            return reply.get("value")
        err = reply.get("error")
        if isinstance(err, dict):
            kind, text = str(err.get("type", "Error"))[:100], str(err.get("message", ""))[:500]
        else:
            kind, text = "Error", ""
        raise cases.Fail(f"{label} raised {kind}: {text}")

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
            raise cases.Fail(f"{target}: the worker's answer is not a module's state")
        return value


# =========================================================================== one notebook
_CHECK_CALL = re.compile(r"""grader\.check\(\s*["'](\w+)["']\s*\)""")
_ONLY_CHECKS = re.compile(r"""^\s*(?:#.*|grader\.(?:check|check_all|export)\(.*\)\s*)?$""")


def code_cells(nb: Any) -> list[str]:
    """The sources of a notebook's code cells (a list of lines joined), in order."""
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ValueError("it has no list of cells")
    out = []
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            src = cell.get("source", "")
            if isinstance(src, list):
                src = "".join(s for s in src if isinstance(s, str))
            out.append(src if isinstance(src, str) else "")
    return out


def _defines(source: str) -> set[str]:
    """Top-level names a cell binds: def, class, assignment, import (without running it)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # magics, broken code, or nesting deeper than the parser goes: a plain look at line starts
        names = re.findall(r"^(?:def|class)\s+(\w+)|^(\w+)\s*=", source, re.M)
        return {a or b for a, b in names}
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        found.add(n.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return found


def answer_cells(sources: Sequence[str], exercise: cases.Exercise) -> dict[int, list[str]]:
    """Cell index → the questions graded right after it (the rule in the module docstring)."""
    plan: dict[int, list[str]] = {}
    for q in exercise.questions:
        check_at = next(
            (k for k, s in enumerate(sources) if q.name in _CHECK_CALL.findall(s)), None
        )
        defining = [k for k, s in enumerate(sources) if q.defines in _defines(s)]
        if check_at is not None and any(k < check_at for k in defining):
            at = max(k for k in defining if k < check_at)
        elif defining:
            at = defining[0]
        else:
            at = len(sources) - 1  # never defined by name: graded after the last cell
        plan.setdefault(max(at, 0), []).append(q.name)
    return plan


@dataclass
class Result:
    """One question's outcome."""

    score: float = 0.0
    notes: list[str] = field(default_factory=list)


def grade_notebook(
    notebook: bytes,
    exercise: cases.Exercise,
    seed: str,
    stage_dir: Path,
    *,
    limits: sandbox.Limits | None = None,
    isolate: bool = True,
    timeout: float = 300.0,
    call_seconds: float = 10.0,
    max_starts: int = 4,
) -> dict[str, Result]:
    """Grade one notebook (bytes) of ``exercise``; question name → :class:`Result`.

    ``timeout`` is the submission's wall-clock backstop; ``call_seconds`` the CPU time of
    one call of the learner's code, ``exercise.cell_seconds`` of one cell, and
    ``limits.cpu_seconds`` of the whole submission (see :mod:`.session`).
    """
    results = {q.name: Result() for q in exercise.questions}
    try:
        sources = code_cells(json.loads(notebook.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        for r in results.values():
            r.notes.append(f"not a readable notebook ({str(err)[:100]})")
        return results
    plan = answer_cells(sources, exercise)
    questions = {q.name: q for q in exercise.questions}
    session = Session(
        stage_dir,
        notebook,
        f"{exercise.name}.ipynb",
        limits or sandbox.Limits(),
        isolate=isolate,
        wall_seconds=timeout,
        max_starts=max_starts,
    )
    probe = _Probe(session, call_seconds)
    cell_errors: dict[int, str] = {}
    stopped = ""
    try:
        for k, source in enumerate(sources):
            if stopped:
                break
            if source.strip() and not all(_ONLY_CHECKS.match(ln) for ln in source.splitlines()):
                try:
                    reply = session.cell(source, exercise.cell_seconds)
                    if not reply["ok"]:
                        raised = reply.get("error")
                        raised = raised if isinstance(raised, dict) else {}
                        cell_errors[k] = (
                            f"{raised.get('type', 'Error')}: {raised.get('message', '')}"[:300]
                        )
                except channel.ChannelError as err:  # never sent: the worker goes on without it
                    cell_errors[k] = f"skipped (the cell cannot be sent: {err})"
                except WorkerGone as gone:
                    cell_errors[k] = f"skipped ({gone})"
                    spent = session.spent()
                    if spent:
                        stopped = f"stopped at {spent}"
            for name in plan.get(k, []):
                q, res = questions[name], results[name]
                if k in cell_errors:
                    res.notes.append(f"its answer cell raised {cell_errors[k][:200]}")
                for check in q.checks:
                    spent = None if stopped else session.spent()
                    if spent:
                        stopped = f"stopped at {spent}"
                    if stopped:
                        res.notes.append(f"{check.name}: {stopped}")
                        continue
                    rng = cases.rng_for(seed, exercise.name, q.name, check.name)
                    try:
                        check.run(probe, rng)
                    except cases.Fail as fail:
                        res.notes.append(f"{check.name}: {fail} ({check.hint})")
                    except WorkerGone as gone:
                        res.notes.append(f"{check.name}: {gone}")
                    except Exception as err:  # a value the check could not use: it fails
                        res.notes.append(f"{check.name}: {type(err).__name__}: {err}"[:300])
                    else:
                        res.score += check.points
    finally:
        session.close()
    if stopped:
        for name, res in results.items():
            if not any(stopped in n for n in res.notes) and res.score < questions[name].total:
                res.notes.append(stopped)
    return results


# =========================================================================== the folder
@dataclass
class Submission:
    """A notebook found in the folder, read once (the folder is never opened again)."""

    student: str
    path: str
    data: bytes


@dataclass
class Scan:
    """What a submissions folder holds: notebooks, and per student the entries skipped."""

    students: list[str] = field(default_factory=list)
    notebooks: list[Submission] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)


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


def _read_regular(dir_fd: int, name: str) -> bytes | str:
    """The bytes of a regular file (no link followed, no FIFO opened), or why not."""
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except OSError as err:
        return f"could not be opened ({err.strerror})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return _kind(st.st_mode)
        if st.st_size > MAX_NOTEBOOK:
            return f"larger than {MAX_NOTEBOOK // 2**20} MB"
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_NOTEBOOK:
                return f"larger than {MAX_NOTEBOOK // 2**20} MB"
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def scan(folder: Path) -> Scan:
    """Every student and notebook in ``folder`` (the rules in the module docstring)."""
    out = Scan()
    top = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        entries = sorted(os.scandir(top), key=lambda e: e.name)
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            mode = entry.stat(follow_symlinks=False).st_mode
            student = (
                name[: -len(".ipynb")]
                if name.endswith(".ipynb") and not stat.S_ISDIR(mode)
                else name
            )
            if student not in out.students:
                out.students.append(student)
            if stat.S_ISDIR(mode):
                sub = os.open(
                    name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=top
                )
                try:
                    for inner in sorted(os.scandir(sub), key=lambda e: e.name):
                        if inner.name.startswith("."):
                            continue
                        imode = inner.stat(follow_symlinks=False).st_mode
                        if not inner.name.endswith(".ipynb"):
                            if not stat.S_ISREG(imode) and not stat.S_ISDIR(imode):
                                out.skipped.setdefault(student, []).append(
                                    f"{inner.name}: {_kind(imode)}"
                                )
                            continue
                        data = (
                            _read_regular(sub, inner.name) if stat.S_ISREG(imode) else _kind(imode)
                        )
                        if isinstance(data, str):
                            out.skipped.setdefault(student, []).append(f"{inner.name}: {data}")
                        else:
                            out.notebooks.append(Submission(student, f"{name}/{inner.name}", data))
                finally:
                    os.close(sub)
            elif name.endswith(".ipynb") and stat.S_ISREG(mode):
                data = _read_regular(top, name)
                if isinstance(data, str):
                    out.skipped.setdefault(student, []).append(f"{name}: {data}")
                else:
                    out.notebooks.append(Submission(student, name, data))
            elif not stat.S_ISREG(mode):
                out.skipped.setdefault(student, []).append(f"{name}: {_kind(mode)}")
            else:
                out.skipped.setdefault(student, []).append(f"{name}: not a notebook")
    finally:
        os.close(top)
    return out


def identify(sub: Submission, known: dict[str, cases.Exercise]) -> str | None:
    """The exercise a notebook belongs to (metadata, file name, title, defined names)."""
    try:
        nb = json.loads(sub.data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(nb, dict):
        return None
    meta = nb.get("metadata")
    otter = meta.get("otter") if isinstance(meta, dict) else None
    name = otter.get("assignment_name") if isinstance(otter, dict) else None
    if isinstance(name, str) and name in known:
        return name
    stem = Path(sub.path).name[: -len(".ipynb")]
    for ex_name in known:
        if ex_name in stem:
            return ex_name
    cells = nb.get("cells")
    texts = []
    for c in cells if isinstance(cells, list) else []:
        if isinstance(c, dict) and c.get("cell_type") == "markdown":
            src = c.get("source", "")
            texts.append("".join(map(str, src)) if isinstance(src, list) else str(src))
    text = "\n".join(texts)
    for exercise in known.values():
        if re.search(rf"^#\s*Exercise\s+{exercise.number}\b", text, re.M):
            return exercise.name
    try:
        defined = set().union(*(_defines(s) for s in code_cells(nb)))
    except ValueError:
        return None
    for exercise in known.values():
        if all(q.defines in defined for q in exercise.questions):
            return exercise.name
    return None


def _safe(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: no formula, no control character."""
    text = "".join(ch if ch.isprintable() else "?" for ch in str(text))
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def _write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=GRADEBOOK_COLUMNS)
            writer.writeheader()
            for row in rows:
                writer.writerow(
                    {k: (_safe(v) if isinstance(v, str) else v) for k, v in row.items()}
                )
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def private_seed(seed: str | None) -> str:
    """The seed the hidden cases are drawn from: ``seed``, else ``$ATTNLIB_GRADING_SEED``."""
    seed = seed if seed is not None else os.environ.get(SEED_ENV)
    if not seed:
        raise ValueError(
            f"no grading seed: pass --seed or set {SEED_ENV}. The hidden cases are drawn from "
            "it, so keep it private (anyone who knows it can predict them)"
        )
    return seed


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
) -> list[dict[str, Any]]:
    """Grade a folder of submissions into a CSV gradebook (the rules in the module docstring).

    Parameters
    ----------
    submissions : Path
        The folder handed in (read only, never written).
    gradebook : Path
        The CSV to write: student, question (``exercise:question``), score, total, note.
    seed : str, optional
        The private seed of the hidden cases (default: ``$ATTNLIB_GRADING_SEED``).
    jobs : int
        Submissions graded at once (one sandboxed worker each).
    exercises : sequence of str, optional
        The exercises to have a row for (default: every exercise handed in by anyone).
    isolate : bool
        False grades without the OS sandbox (``--no-sandbox``): only for work you trust.
    timeout : float
        Wall-clock seconds per submission, everything included: a backstop for a
        submission that waits without computing (the CPU time limits stop one that
        computes, whatever the machine's load).
    limits : Limits, optional
        Memory, file and scratch limits of each worker, and the CPU time of each
        submission (all its workers together).

    Returns
    -------
    list of dict
        The gradebook rows.

    Raises
    ------
    SandboxUnavailable
        If the sandbox cannot run here and ``isolate`` is True (with why).
    """
    seed = private_seed(seed)
    if isolate:
        reason = sandbox.problem()
        if reason:
            raise SandboxUnavailable(
                f"refusing to grade untrusted work without the sandbox: {reason}. Pass "
                "--no-sandbox to grade anyway (a submission could then read or change "
                "anything this user can)"
            )
    known = EXERCISES
    if exercises:
        unknown = sorted(set(exercises) - set(known))
        if unknown:
            raise ValueError(f"no exercise named {unknown}; the exercises are {sorted(known)}")
    found = scan(Path(submissions))
    chosen: dict[tuple[str, str], Submission] = {}
    extra: dict[tuple[str, str], list[str]] = {}
    for sub in found.notebooks:
        ex = identify(sub, known)
        if ex is None:
            found.skipped.setdefault(sub.student, []).append(
                f"{Path(sub.path).name}: not one of the exercises"
            )
            continue
        key = (sub.student, ex)
        if key in chosen:
            a, b = chosen[key], sub
            keep, drop = (a, b) if _preferred(a, ex) >= _preferred(b, ex) else (b, a)
            chosen[key] = keep
            extra.setdefault(key, []).append(Path(drop.path).name)
        else:
            chosen[key] = sub
    names = list(exercises) if exercises else sorted({ex for _, ex in chosen})
    with tempfile.TemporaryDirectory(prefix="attnlib-stage-") as tmp:
        stages = {ex: sandbox.stage(Path(tmp) / ex, ex, known[ex].switched_off) for ex in names}

        def work(key: tuple[str, str]) -> dict[str, Result]:
            sub = chosen[key]
            try:
                return grade_notebook(
                    sub.data,
                    known[key[1]],
                    seed,
                    stages[key[1]],
                    limits=limits,
                    isolate=isolate,
                    timeout=timeout,
                )
            except Exception as err:  # one notebook never stops the batch: it scores 0, and why
                why = f"could not be graded ({type(err).__name__}: {str(err)[:200]})"
                return {q.name: Result(notes=[why]) for q in known[key[1]].questions}

        keys = [k for k in sorted(chosen) if k[1] in names]
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            graded = dict(zip(keys, pool.map(work, keys), strict=True))
    rows = []
    for student in found.students:
        skipped = found.skipped.get(student, [])
        for ex in names:
            key = (student, ex)
            for q in known[ex].questions:
                if key in graded:
                    res = graded[key][q.name]
                    notes = list(res.notes)
                    if key in extra:
                        notes.append(
                            f"graded {Path(chosen[key].path).name}; also handed in, "
                            f"not graded: {', '.join(extra[key])}"
                        )
                    score = res.score
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
    _write_csv(rows, Path(gradebook))
    return rows


def _preferred(sub: Submission, exercise: str) -> tuple[bool, str]:
    name = Path(sub.path).name
    return (name == f"{exercise}.ipynb", name)
