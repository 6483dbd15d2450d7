"""Graded exercises: the checks inside them, their build and the gradebook.

The exercise notebooks under ``exercises/`` are made with otter-grader. Each
instructor source ``exercises/source/NN_name.ipynb`` holds the solutions, the
public and hidden tests and the points; ``otter assign`` turns it into the
student notebook ``exercises/NN_name.ipynb`` (committed, served by Binder and
the website) and an autograder zip (``exercises/_build/``, not committed).

This module has four parts.

* **Checks** used by the tests inside the exercises. They compare a learner's
  result with pure-Python references (:func:`py_softmax`,
  :func:`py_additive_scores`, :func:`py_context`, :func:`py_entropy`) that do
  not use numpy, call the learner's code under a time limit (:func:`call`),
  and refuse to award points when numpy, torch, math, the builtins or this
  module were replaced during grading (:func:`check_untampered`).
* :func:`student_notebook` — the ``grader`` inside each student notebook.
  It reads the public tests from the notebook file where that is on disk,
  and from the copy shipped in attnlib where it is not (Colab).
* :func:`build` — sources → student notebooks + autograder zips + the
  shipped public tests (``make exercises``).
* :func:`grade` — a folder of submissions → a CSV gradebook, one otter run per
  submission, in parallel, each in its own scratch folder, under a guard (an
  audit hook installed before the submission's first cell, see
  :func:`install_guard`) and with a time limit (``make grade``).

Command line: ``python -m attnlib.grading build`` and
``python -m attnlib.grading grade SUBMISSIONS [-o gradebook.csv]``.

See Also
--------
The page "Exercises" (exercises/index), and every exercise notebook.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from attnlib.colab import install_cell, repository

__all__ = [
    "CHECKS_DIR",
    "assert_close",
    "build",
    "call",
    "check_untampered",
    "floats",
    "grade",
    "install_guard",
    "public_checks",
    "py_additive_scores",
    "py_context",
    "py_entropy",
    "py_softmax",
    "student_notebook",
]

GUARD_EVENT = "attnlib.grading.integrity"
GRADING_ENV = "ATTNLIB_GRADING"

Nested = float | list["Nested"]


# =========================================================================== pure-Python references
def _vec(x: Any) -> list[float]:
    return [float(v) for v in x]


def py_softmax(e: Sequence[float], mask: Sequence[bool] | None = None) -> list[float]:
    """α_ti = exp(e_ti − max_j e_tj) / Σ_j exp(e_tj − max_j e_tj), in pure Python.

    Parameters
    ----------
    e : (T_x,)
        Raw scores e_ti for one decoder step, as a list of numbers.
    mask : (T_x,) of bool, optional
        True for a real position; masked positions get α exactly 0.

    Returns
    -------
    alpha : list of T_x floats

    See Also
    --------
    The chapter "Why the softmax denominator is not optional" (chapters/03_softmax).
    """
    e = _vec(e)
    keep = [True] * len(e) if mask is None else [bool(m) for m in mask]
    if len(keep) != len(e) or not any(keep):
        raise ValueError("mask must have one entry per score and keep at least one position")
    top = max(v for v, k in zip(e, keep, strict=True) if k)
    z = [math.exp(v - top) if k else 0.0 for v, k in zip(e, keep, strict=True)]
    total = math.fsum(z)
    return [v / total for v in z]


def _matvec(M: Sequence[Sequence[float]], x: Sequence[float]) -> list[float]:
    return [math.fsum(float(m) * float(v) for m, v in zip(row, x, strict=True)) for row in M]


def py_additive_scores(
    s_prev: Sequence[float],
    h: Sequence[Sequence[float]],
    W_a: Sequence[Sequence[float]],
    U_a: Sequence[Sequence[float]],
    v_a: Sequence[float],
) -> list[float]:
    """e_ti = v_a^T tanh(W_a s_{t-1} + U_a h_i) for every i, in pure Python.

    Parameters
    ----------
    s_prev : (d_s,)
    h : (T_x, d_h)
    W_a : (d_a, d_s)
    U_a : (d_a, d_h)
    v_a : (d_a,)

    Returns
    -------
    e : list of T_x floats

    See Also
    --------
    The chapter "Score functions" (chapters/04_score_functions).
    """
    query = _matvec(W_a, s_prev)
    out = []
    for h_i in h:
        key = _matvec(U_a, h_i)
        out.append(
            math.fsum(float(v) * math.tanh(q + k) for v, q, k in zip(v_a, query, key, strict=True))
        )
    return out


def py_context(alpha: Sequence[float], h: Sequence[Sequence[float]]) -> list[float]:
    """c_t = Σ_i α_ti h_i, in pure Python.

    Parameters
    ----------
    alpha : (T_x,)
    h : (T_x, d_h)

    Returns
    -------
    c : list of d_h floats

    See Also
    --------
    The chapter "The attention step, pictured" (chapters/02_attention_step).
    """
    d_h = len(h[0])
    return [
        math.fsum(float(a) * float(h_i[k]) for a, h_i in zip(alpha, h, strict=True))
        for k in range(d_h)
    ]


def py_entropy(alpha: Sequence[float], base: float = math.e) -> float:
    """H = −Σ_i α_ti log α_ti (0 log 0 = 0), in pure Python.

    Parameters
    ----------
    alpha : (T_x,)
    base : float
        e for nats, 2 for bits.

    Returns
    -------
    H : float

    See Also
    --------
    The chapter "Attention entropy" (chapters/05_entropy).
    """
    return -math.fsum(a * math.log(a) for a in _vec(alpha) if a > 0) / math.log(base)


# =========================================================================== checks
def floats(x: Any, name: str = "your result") -> tuple[tuple[int, ...], list[float]]:
    """Read a learner's result as (shape, flat list of Python floats).

    Parameters
    ----------
    x : array-like or torch tensor
        What the learner's function returned.
    name : str
        How the message names it.

    Returns
    -------
    shape : tuple of int
    values : list of float
        The entries in C order, each a genuine Python ``float``.

    Raises
    ------
    AssertionError
        If ``x`` is ``None`` (the function is not written yet) or not numbers.

    See Also
    --------
    The page "Exercises" (exercises/index).
    """
    import numpy as np

    if x is None:
        raise AssertionError(f"{name} is None: the function does not return anything yet")
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise AssertionError(f"{name} could not be read as an array of numbers: {err}") from None
    shape = tuple(int(d) for d in arr.shape)
    values = arr.ravel().tolist()
    if not all(type(v) is float for v in values):
        raise AssertionError(f"{name} did not turn into plain numbers")
    return shape, values


def _shape_of(expected: Nested) -> tuple[int, ...]:
    shape = []
    while isinstance(expected, list):
        shape.append(len(expected))
        expected = expected[0] if expected else 0.0
    return tuple(shape)


def _flatten(expected: Nested) -> list[float]:
    if isinstance(expected, list):
        return [v for item in expected for v in _flatten(item)]
    return [float(expected)]


def assert_close(
    actual: Any,
    expected: Nested,
    name: str = "your result",
    rtol: float = 1e-6,
    atol: float = 1e-9,
) -> None:
    """Assert that a learner's result has the expected shape and values.

    The comparison is done in pure Python (``math.isclose`` on floats), so it
    does not depend on numpy functions the learner's code could replace.

    Parameters
    ----------
    actual : array-like
        The learner's result.
    expected : float or nested lists of float
        The reference, e.g. from :func:`py_softmax`.
    name : str
        How the message names the result (use the course's symbols: "alpha").
    rtol, atol : float
        Tolerances.

    Raises
    ------
    AssertionError
        Naming the expected and the actual shape, or the first entry that differs.

    See Also
    --------
    The page "Exercises" (exercises/index).
    """
    check_untampered()
    want_shape = _shape_of(expected)
    shape, values = floats(actual, name)
    if shape != want_shape:
        raise AssertionError(f"{name} should have shape {want_shape}, but it has shape {shape}")
    for k, (got, want) in enumerate(zip(values, _flatten(expected), strict=True)):
        if not math.isclose(got, want, rel_tol=rtol, abs_tol=atol):
            raise AssertionError(
                f"{name} is not right yet: entry {k} (flat index) is {got:.6g}, expected {want:.6g}"
            )


class _TimeUp(Exception):
    pass


def call(fn: Any, *args: Any, name: str | None = None, seconds: float = 10.0, **kwargs: Any) -> Any:
    """Call a learner's function: time-limited, any exception becomes a failed check.

    Parameters
    ----------
    fn : callable
        The learner's function (``None`` if the cell was not run).
    *args, **kwargs
        Its arguments.
    name : str, optional
        How the message names it (default: ``fn.__name__``).
    seconds : float
        Time limit (on the main thread; elsewhere no limit is set).

    Returns
    -------
    Whatever ``fn`` returns.

    Raises
    ------
    AssertionError
        If ``fn`` is missing, raises anything (``SystemExit`` included) or runs too long.

    See Also
    --------
    The page "Exercises" (exercises/index).
    """
    check_untampered()
    label = name or getattr(fn, "__name__", "your function")
    if not callable(fn):
        raise AssertionError(f"{label} is not defined yet: write it and run its cell first")
    timed = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    old_handler = old_timer = None
    if timed:

        def _alarm(signum: int, frame: Any) -> None:
            raise _TimeUp

        old_handler = signal.signal(signal.SIGALRM, _alarm)
        old_timer = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args, **kwargs)
    except _TimeUp:
        raise AssertionError(
            f"{label} ran longer than {seconds:g} s; is there an endless loop?"
        ) from None
    except BaseException as err:  # SystemExit, KeyboardInterrupt: a failed check, not a crash
        raise AssertionError(f"{label} raised {type(err).__name__}: {err}") from None
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old_handler)
            if old_timer and old_timer[0] > 0:
                signal.setitimer(signal.ITIMER_REAL, *old_timer)


def check_untampered() -> None:
    """Refuse to award a point if the grading guard reports replaced functions.

    During ``make grade`` an audit hook (:func:`install_guard`) snapshots
    numpy, torch, math, the builtins and this module before the submission's
    first cell; here it is asked whether any of them was replaced since. On a
    learner's own machine there is no guard and the check passes.

    Raises
    ------
    AssertionError
        Naming the replaced functions.

    See Also
    --------
    The page "Exercises" (exercises/index).
    """
    audit = sys.audit
    if not (
        audit.__class__ is [].append.__class__
        and audit.__name__ == "audit"
        and audit.__self__ is sys  # type: ignore[attr-defined]  # typed as a plain function
    ):
        raise AssertionError("sys.audit was replaced; the grader cannot check this submission")
    box: list[Any] = []
    audit(GUARD_EVENT, box)
    if box == []:
        if os.environ.get(GRADING_ENV) == "1":
            raise AssertionError(
                "the grading guard did not answer; this submission was tampered with"
            )
        return
    if box[0] != ():
        names = ", ".join(box[0][:5])
        raise AssertionError(
            f"these functions were replaced, so no check can be trusted: {names}. "
            "Restore them (restart the kernel, remove the assignment) and run again"
        )


# =========================================================================== the guard
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.rename": (0, 1),
    "os.replace": (0, 1),
    "os.truncate": (0,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.link": (0, 1),
    "os.symlink": (0, 1),
    "os.utime": (0,),
    "os.mkdir": (0,),
    "os.setxattr": (0,),
    "os.removexattr": (0,),
    "shutil.rmtree": (0,),
    "shutil.move": (0, 1),
    "shutil.copyfile": (1,),
    "shutil.copytree": (1,),
}
_DENIED_EVENTS = {
    "subprocess.Popen",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.forkpty",
    "os.kill",
    "os.killpg",
    "os.chdir",
    "os.chroot",
    "pty.spawn",
}
_GUARDED_MODULES = ("builtins", "math", "numpy", "numpy.linalg", "attnlib.grading", "attnlib.core")
# Replacing any of these would let a submission forge otter's results: then they are not written.
_CRITICAL_MODULES = (
    "builtins",
    "sys",
    "pickle",
    "otter.execute",
    "otter.execute.checker",
    "otter.test_files",
    "otter.test_files.abstract_test",
    "otter.test_files.exception_test",
    "attnlib.grading",
)
_EXPORT_CELL = re.compile(
    r"from otter\.execute import Checker\n"
    r"for (t_\w+) in (\[[^\]\n]*\]):\n"
    r"    Checker\.check_if_not_already_checked\(\1\)\n\n"
    r"from otter\.test_files import GradingResults\n"
    r"results = GradingResults\(Checker\.get_results\(\)\)\n\n"
    r"import pickle\n"
    r'with open\("[^"\n]+", "wb"\) as f:\n'
    r"    pickle\.dump\(results, f\)\n?"
)


def install_guard(
    scratch: str | None = None,
    modules: Sequence[str] | None = None,
    cell_seconds: float | None = None,
) -> None:
    """Install the grading guard in the current (kernel) process.

    Run by ``make grade`` from an IPython startup file, before the
    submission's first cell. It adds an audit hook (which cannot be removed)
    that

    * denies writing, deleting or renaming files outside the submission's own
      folder, and inside its ``tests`` folder (the hidden tests);
    * denies starting processes, forking, sending signals and changing the
      working directory;
    * answers :func:`check_untampered` with the names of guarded functions
      that were replaced since the snapshot taken here;

    and stops any cell that runs longer than ``cell_seconds``.

    Parameters
    ----------
    scratch : str, optional
        The folder the grading run lives in (default: env ``ATTNLIB_GUARD_SCRATCH``).
    modules : sequence of str, optional
        Modules to snapshot (default: env ``ATTNLIB_GUARD_MODULES``, else numpy,
        math, builtins, attnlib; torch too when the env asks for it).
    cell_seconds : float, optional
        Per-cell time limit (default: env ``ATTNLIB_GUARD_CELL_SECONDS``; 0 = none).

    See Also
    --------
    The page "Exercises" (exercises/index).
    """
    import importlib

    scratch = os.path.realpath(scratch or os.environ["ATTNLIB_GUARD_SCRATCH"])
    if modules is None:
        env = os.environ.get("ATTNLIB_GUARD_MODULES", "")
        modules = [m for m in env.split(",") if m] or list(_GUARDED_MODULES)
    if cell_seconds is None:
        cell_seconds = float(os.environ.get("ATTNLIB_GUARD_CELL_SECONDS", "0"))
    if (
        "torch" in modules
    ):  # importing dynamo re-wraps torch.manual_seed & co.: do it before the snapshot
        importlib.import_module("torch._dynamo")
    mods: dict[str, Any] = {}
    for name in (*modules, *_CRITICAL_MODULES):
        try:
            mods[name] = importlib.import_module(name)
        except ImportError:  # otter missing: nothing of it to protect
            continue
    skip = {
        "exit",
        "quit",
        "get_ipython",
        "display",
        "_",
        "__",
        "___",
        "help",
        "input",
        "getpass",
        "displayhook",
        "excepthook",
        "breakpointhook",
        "settrace",
        "setprofile",
    }
    snapshot: list[tuple[bool, str, dict[str, Any], str, Any]] = []
    for name, mod in mods.items():
        critical = name in _CRITICAL_MODULES
        owners = [(name, vars(mod))]
        for value in list(vars(mod).values()):
            if isinstance(value, type) and str(getattr(value, "__module__", "")).startswith(name):
                owners.append((f"{name}.{value.__name__}", vars(value)))
        for label, namespace in owners:
            for key, value in list(namespace.items()):
                if key not in skip and (
                    callable(value) or isinstance(value, classmethod | staticmethod)
                ):
                    snapshot.append((critical, label, namespace, key, value))
    state: dict[str, Any] = {"export": False}
    tests_dir = os.sep + "tests"

    def report(critical_only: bool = False) -> tuple[str, ...]:
        bad = [
            name
            for name, mod in mods.items()
            if sys.modules.get(name) is not mod
            and not (critical_only and name not in _CRITICAL_MODULES)
        ]
        for critical, label, namespace, key, value in snapshot:
            if (critical or not critical_only) and namespace.get(key) is not value:
                bad.append(f"{label}.{key}")
        return tuple(bad)

    def may_write(path: Any) -> bool:
        if isinstance(path, int):
            return True
        try:
            real = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        if not real.startswith(scratch + os.sep):
            return False
        rel = real[len(scratch) :]
        if os.path.dirname(real) == os.path.join(scratch, "tmp"):  # otter's results pickle
            if not state["export"]:
                return False
            tampered = report(critical_only=True)
            if tampered:
                state["tampered"] = tampered
            return tampered == ()
        if "/autograder/submission/" not in rel:
            return rel.startswith(("/ipython", "/mpl", "/cache"))
        inside = rel.split("/autograder/submission", 1)[1]
        return not (inside == tests_dir or inside.startswith(tests_dir + os.sep))

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == GUARD_EVENT:
            args[0].append(report())
        elif event == "open":
            path, _mode, flags = args
            if isinstance(flags, int) and flags & _WRITE_FLAGS and not may_write(path):
                raise PermissionError(f"the grader does not let a submission write to {path}")
        elif event in _PATH_EVENTS:
            for k in _PATH_EVENTS[event]:
                if k < len(args) and not may_write(args[k]):
                    raise PermissionError(f"the grader does not let a submission change {args[k]}")
        elif event in _DENIED_EVENTS:
            raise PermissionError(f"the grader does not let a submission call {event}")
        elif event in ("os.putenv", "os.unsetenv") and str(args[0]).startswith(
            ("ATTNLIB", "b'ATTNLIB")
        ):
            raise PermissionError("the grader's settings cannot be changed")

    sys.addaudithook(hook)

    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - the guard runs inside IPython kernels
        return
    ip = get_ipython()
    if ip is None:
        return

    def _cell_timeout(signum: int, frame: Any) -> None:
        raise TimeoutError(f"the grader stopped this cell after {cell_seconds:g} s")

    def pre_run_cell(info: Any) -> None:
        raw = getattr(info, "raw_cell", "") or ""
        state["export"] = _EXPORT_CELL.fullmatch(raw) is not None
        if cell_seconds > 0:
            signal.signal(signal.SIGALRM, _cell_timeout)
            signal.setitimer(signal.ITIMER_REAL, cell_seconds)

    def post_run_cell(result: Any) -> None:
        state["export"] = False
        if cell_seconds > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def post_execute() -> None:  # tell the grader why the results were not written
        if state.get("tampered") and not state.get("told"):
            state["told"] = True
            os.write(
                2,
                (
                    "\nattnlib-guard: results withheld, replaced: "
                    + ", ".join(state["tampered"][:5])
                    + "\n"
                ).encode(),
            )

    ip.events.register("pre_run_cell", pre_run_cell)
    ip.events.register("post_execute", post_execute)
    ip.events.register("post_run_cell", post_run_cell)


# =========================================================================== build
def _repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


CHECKS_DIR = Path(__file__).resolve().parent / "exercise_checks"
"""Where ``make exercises`` puts each exercise's public tests (package data, committed)."""


def public_checks(name: str) -> dict[str, str]:
    """The public tests of exercise ``name``, as shipped inside attnlib.

    Parameters
    ----------
    name : str
        The exercise's notebook name, with or without ``.ipynb``
        (e.g. ``"01_masked_softmax"``).

    Returns
    -------
    dict
        Question name → otter test file source (public test cases only).

    Raises
    ------
    ValueError
        If there is no exercise of that name.
    """
    stem = Path(name).stem
    path = CHECKS_DIR / f"{stem}.json"
    if not path.is_file():
        known = sorted(p.stem for p in CHECKS_DIR.glob("*.json"))
        raise ValueError(f"there is no exercise named {stem!r}; the exercises are {known}")
    import json

    return json.loads(path.read_text())["tests"]


def _notebook_has_tests(path: Path) -> bool:
    import json

    try:
        meta = json.loads(path.read_text()).get("metadata", {})
    except (OSError, ValueError, AttributeError):
        return False
    return bool(meta.get("otter", {}).get("tests"))


def student_notebook(name: str) -> Any:
    """The ``grader`` of an exercise notebook: ``grader.check("q1")`` runs q1's public tests.

    Where the notebook is saved under its own name (Binder, a local Jupyter,
    grading), this is ``otter.Notebook(name)``, which reads the public tests
    from the notebook file. Where it is not (Colab opens a notebook without
    saving it beside the kernel; a downloaded copy may be renamed), the same
    public tests come from the copy shipped in attnlib
    (``attnlib/exercise_checks/NAME.json``) and are written to a temporary
    folder for otter to read. Either way the checks are the same.

    Parameters
    ----------
    name : str
        The exercise's file name, e.g. ``"01_masked_softmax.ipynb"``.

    Returns
    -------
    otter.Notebook

    Raises
    ------
    ModuleNotFoundError
        If otter-grader is not installed (with the command that installs it).
    ValueError
        If ``name`` is not one of the course's exercises.
    """
    try:
        import otter
        from otter.check.utils import IPythonInterpreter
    except ModuleNotFoundError as err:
        raise ModuleNotFoundError(
            'the checks need otter-grader: run `pip install "attnlib[grade]"` '
            "(or the README's set-up) and restart the kernel"
        ) from err
    tests = public_checks(name)
    if otter.Notebook._grading_mode:
        return otter.Notebook(name)
    on_colab = IPythonInterpreter.COLAB.value.running()
    if not on_colab and _notebook_has_tests(Path(name)):
        return otter.Notebook(name)
    import json
    import tempfile

    stem = Path(name).stem
    folder = Path(tempfile.mkdtemp(prefix=f"attnlib-checks-{stem}-"))
    for question, source in tests.items():
        (folder / f"{question}.py").write_text(source)
    stub = folder / f"{stem}.ipynb"  # an empty notebook carrying otter's settings
    stub.write_text(
        json.dumps(
            {
                "cells": [],
                "metadata": {"otter": {"assignment_name": stem}},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )
    return otter.Notebook(str(stub), tests_dir=str(folder))


def _normalise_student(nb: Any, name: str) -> Any:
    """Deterministic ids, no outputs: the committed student notebook is reproducible."""
    for k, cell in enumerate(nb.cells):
        cell["id"] = f"{name[:40]}-{k:03d}"
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return nb


def _set_init_cell(nb: Any, name: str, url: str, branch: str) -> None:
    """Replace otter's first cell with one that also works where the notebook is not on disk."""
    first = nb.cells[0]
    if not first.source.startswith("# Initialize Otter"):
        raise RuntimeError(f"{name}: otter assign no longer starts with its init cell")
    first.source = install_cell(name, url=url, branch=branch)


def build(
    sources: Path | None = None,
    students: Path | None = None,
    out: Path | None = None,
    names: Sequence[str] | None = None,
    checks: Path | None = None,
) -> list[Path]:
    """Turn every instructor source into a student notebook and an autograder zip.

    Parameters
    ----------
    sources : Path, optional
        Folder of instructor source notebooks (default ``exercises/source``).
    students : Path, optional
        Where the student notebooks go (default ``exercises``).
    out : Path, optional
        Build folder (default ``exercises/_build``): ``autograder/NAME.zip``
        and ``solutions/NAME.ipynb`` (the source with otter's markers removed).
    names : sequence of str, optional
        Only these exercises (file stems).
    checks : Path, optional
        Where each exercise's public tests go for :func:`student_notebook`
        (default ``attnlib/exercise_checks``, shipped with the package).

    Returns
    -------
    list of Path
        The student notebooks written.

    See Also
    --------
    The page "Exercises" (exercises/index).
    """
    import json
    import shutil
    import subprocess
    import tempfile

    import nbformat

    root = _repo_root()
    sources = Path(sources or root / "exercises" / "source")
    students = Path(students or root / "exercises")
    out = Path(out or root / "exercises" / "_build")
    checks = Path(checks or CHECKS_DIR)
    url, branch = repository()
    written = []
    students.mkdir(parents=True, exist_ok=True)
    for src in sorted(sources.glob("*.ipynb")):
        name = src.stem
        if names and name not in names:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            dist = Path(tmp) / "dist"
            proc = subprocess.run(
                [sys.executable, "-m", "otter", "assign", str(src), str(dist)],
                capture_output=True,
                text=True,
                check=False,
                cwd=src.parent,
            )
            if proc.returncode != 0:
                raise RuntimeError(
                    f"otter assign failed on {src.name}:\n{proc.stdout}\n{proc.stderr}"
                )
            nb = nbformat.read(dist / "student" / f"{name}.ipynb", as_version=4)
            _set_init_cell(nb, name, url, branch)
            student = students / f"{name}.ipynb"
            nbformat.write(_normalise_student(nb, name), student)
            checks.mkdir(parents=True, exist_ok=True)
            payload = {"assignment_name": name, "tests": dict(nb.metadata["otter"]["tests"])}
            text = json.dumps(payload, indent=1, sort_keys=True) + "\n"
            (checks / f"{name}.json").write_text(text)
            written.append(student)
            (zip_path,) = (dist / "autograder").glob("*.zip")
            for sub in ("autograder", "solutions"):
                (out / sub).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(zip_path, out / "autograder" / f"{name}.zip")
            solved = nbformat.read(dist / "autograder" / f"{name}.ipynb", as_version=4)
            _set_init_cell(solved, name, url, branch)
            nbformat.write(_normalise_student(solved, name), out / "solutions" / f"{name}.ipynb")
    return written


# =========================================================================== grade
GRADEBOOK_COLUMNS = ("student", "question", "score", "total", "note")


def _questions(zip_path: Path) -> dict[str, float]:
    """Question name → total points, read from an autograder zip's test files."""
    import ast
    import zipfile

    totals = {}
    with zipfile.ZipFile(zip_path) as z:
        for member in sorted(z.namelist()):
            if not (member.startswith("tests/") and member.endswith(".py")):
                continue
            tree = ast.parse(z.read(member).decode())
            points: Any = None
            name = Path(member).stem
            for node in tree.body:
                if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                    if node.targets[0].id == "points":
                        points = ast.literal_eval(node.value)
                    elif node.targets[0].id == "name":
                        name = ast.literal_eval(node.value)
            per_case = [
                ast.literal_eval(kw.value)
                for node in tree.body
                if isinstance(node, ast.FunctionDef)
                for deco in node.decorator_list
                if isinstance(deco, ast.Call)
                for kw in deco.keywords
                if kw.arg == "points"
            ]
            if isinstance(points, list):
                totals[name] = float(sum(points))
            elif points is not None:
                totals[name] = float(points)
            else:  # otter's default: 1 point per test case without its own points
                totals[name] = float(sum(1 if p is None else p for p in per_case))
    return totals


def _exercise_of(path: Path, known: Sequence[str]) -> str | None:
    """The exercise a submission belongs to: otter's metadata, else the file name."""
    import json

    try:
        meta = json.loads(path.read_text(errors="replace")).get("metadata", {})
        name = meta.get("otter", {}).get("assignment_name")
    except (ValueError, AttributeError):
        name = None
    if name in known:
        return name
    stem = path.stem
    return next((k for k in known if stem == k or stem.endswith(k) or stem.startswith(k)), None)


def _limit_resources(memory_bytes: int, file_bytes: int) -> Callable[[], None]:
    def apply() -> None:
        import resource

        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))

    return apply


def _kill_tree(pid: int) -> None:
    """Kill a process we started and every process below it."""
    import psutil

    try:
        top = psutil.Process(pid)
        procs = [*top.children(recursive=True), top]
    except psutil.NoSuchProcess:
        return
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(procs, timeout=10)


_STARTUP = "from attnlib.grading import install_guard\ninstall_guard()\ndel install_guard\n"


def grade_one(
    submission: Path,
    autograder: Path,
    *,
    timeout: float = 120.0,
    cell_seconds: float = 60.0,
    modules: Sequence[str] | None = None,
    memory_gb: float = 4.0,
) -> tuple[dict[str, float] | None, str]:
    """Grade one submission with ``otter run`` in a scratch folder, under the guard.

    Parameters
    ----------
    submission : Path
        The submitted notebook (copied; the original is never opened for writing).
    autograder : Path
        The exercise's autograder zip.
    timeout : float
        Seconds for the whole run; past it the run's process group is killed.
    cell_seconds : float
        Seconds any one cell may run before the guard stops it.
    modules : sequence of str, optional
        Modules the guard snapshots (default: numpy, math, builtins, attnlib).
    memory_gb : float
        Address-space limit of the run.

    Returns
    -------
    scores : dict or None
        Question → score, or None if the run produced no results.
    note : str
        Empty, or why the run produced no results.

    See Also
    --------
    The page "Exercises" (exercises/index).
    """
    import json
    import shutil
    import subprocess
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix="attnlib-grade-")).resolve()
    try:
        for sub in ("tmp", "ipython/profile_default/startup", "mpl", "cache", "in", "out"):
            (scratch / sub).mkdir(parents=True)
        (scratch / "ipython/profile_default/startup/00-attnlib-guard.py").write_text(_STARTUP)
        copy = scratch / "in" / "submission.ipynb"
        shutil.copyfile(submission, copy)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTNLIB", "JPY", "IPY"))}
        env.update(
            TMPDIR=str(scratch / "tmp"),
            IPYTHONDIR=str(scratch / "ipython"),
            MPLCONFIGDIR=str(scratch / "mpl"),
            XDG_CACHE_HOME=str(scratch / "cache"),
            TORCHINDUCTOR_CACHE_DIR=str(scratch / "cache" / "torchinductor"),
            TRITON_CACHE_DIR=str(scratch / "cache" / "triton"),
            MPLBACKEND="Agg",
            PYDEVD_DISABLE_FILE_VALIDATION="1",
            ATTNLIB_GRADING="1",
            ATTNLIB_GUARD_SCRATCH=str(scratch),
            ATTNLIB_GUARD_CELL_SECONDS=str(cell_seconds),
            ATTNLIB_GUARD_MODULES=",".join(modules or _GUARDED_MODULES),
        )
        cmd = [
            sys.executable,
            "-m",
            "otter",
            "run",
            "--no-logo",
            "-a",
            str(autograder),
            "-o",
            str(scratch / "out"),
            str(copy),
        ]
        with open(scratch / "log.txt", "wb") as log:
            proc = subprocess.Popen(
                cmd,
                cwd=scratch,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                preexec_fn=_limit_resources(int(memory_gb * 2**30), 64 * 2**20),
            )
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_tree(proc.pid)  # otter run and its kernel (which has a session of its own)
                proc.wait()
                return None, f"stopped after the time limit of {timeout:g} s"
        results = scratch / "out" / "results.json"
        if proc.returncode != 0 or not results.exists():
            tail = (scratch / "log.txt").read_bytes()[-300:].decode(errors="replace")
            last = [ln for ln in tail.splitlines() if ln.strip()][-1:] or [""]
            return None, f"the run failed (exit {proc.returncode}): {last[0][:200]}"
        data = json.loads(results.read_text())
        tests = data.get("tests", [])
        log_text = (scratch / "log.txt").read_bytes()[-20000:].decode(errors="replace")
        if "attnlib-guard: results withheld" in log_text:
            line = log_text.split("attnlib-guard: results withheld", 1)[1].splitlines()[0]
            names = line.split("replaced:", 1)[-1].strip()
            why = f"the grader's own functions were replaced ({names[:200]})"
            return None, f"{why}; results withheld"
        if any(t.get("name") == "Autograder Failed" for t in tests):
            out = [t.get("output", "") for t in tests if t.get("name") == "Autograder Exception"]
            last = [ln for ln in "".join(out).splitlines() if ln.strip()][-1:] or ["no results"]
            return None, f"the notebook stopped before its results were written ({last[0][:200]})"
        return {t["name"]: float(t["score"]) for t in tests if "score" in t}, ""
    finally:
        if not os.environ.get("ATTNLIB_GRADING_KEEP"):
            shutil.rmtree(scratch, ignore_errors=True)


def grade(
    submissions: Path,
    gradebook: Path,
    *,
    autograders: Path | None = None,
    jobs: int = 2,
    timeout: float = 120.0,
    cell_seconds: float = 60.0,
) -> list[dict[str, Any]]:
    """Grade a folder of submissions into a CSV gradebook.

    A submission is ``SUBMISSIONS/<student>/<exercise>.ipynb`` (one folder per
    student) or ``SUBMISSIONS/<student>.ipynb``; the exercise is read from the
    notebook's otter metadata, else from the file name. Submissions run in
    parallel (``jobs`` at a time), each with its own time limit, and a run that
    fails scores 0 on every question of its exercise.

    Parameters
    ----------
    submissions : Path
        The folder of submitted notebooks.
    gradebook : Path
        The CSV to write: student, question (``exercise:question``), score, total, note.
    autograders : Path, optional
        Folder of autograder zips (default ``exercises/_build/autograder``; ``make exercises``).
    jobs : int
        Submissions graded at once.
    timeout, cell_seconds : float
        Per-submission and per-cell time limits, in seconds.

    Returns
    -------
    list of dict
        The gradebook rows.

    See Also
    --------
    The page "Exercises" (exercises/index).
    """
    import csv
    from concurrent.futures import ThreadPoolExecutor

    submissions = Path(submissions)
    autograders = Path(autograders or _repo_root() / "exercises" / "_build" / "autograder")
    zips = {z.stem: z for z in sorted(autograders.glob("*.zip"))}
    if not zips:
        raise FileNotFoundError(f"no autograder zips in {autograders}; run `make exercises` first")
    totals = {name: _questions(z) for name, z in zips.items()}
    files = sorted(p for p in submissions.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    if not files:
        raise FileNotFoundError(f"no .ipynb submissions under {submissions}")

    def student_of(p: Path) -> str:
        rel = p.relative_to(submissions)
        return rel.parts[0] if len(rel.parts) > 1 else p.stem

    def work(p: Path) -> list[dict[str, Any]]:
        exercise = _exercise_of(p, list(zips))
        if exercise is None:
            return [
                dict(
                    student=student_of(p),
                    question=p.name,
                    score=0.0,
                    total=0.0,
                    note="not an exercise notebook",
                )
            ]
        modules = list(_GUARDED_MODULES)
        if "torch" in p.read_text(errors="replace"):
            modules += [
                "torch",
                "torch.nn.functional",
                "attnlib.models",
                "attnlib.tasks",
                "attnlib.train",
            ]
        scores, note = grade_one(
            p, zips[exercise], timeout=timeout, cell_seconds=cell_seconds, modules=modules
        )
        return [
            dict(
                student=student_of(p),
                question=f"{exercise}:{q}",
                score=(scores or {}).get(q, 0.0),
                total=total,
                note=note or ("" if scores and q in scores else "no result for this question"),
            )
            for q, total in totals[exercise].items()
        ]

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        rows = [row for rows in pool.map(work, files) for row in rows]
    gradebook = Path(gradebook)
    gradebook.parent.mkdir(parents=True, exist_ok=True)
    with open(gradebook, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=GRADEBOOK_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``build`` or ``grade SUBMISSIONS [-o CSV]`` (see the module docstring)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m attnlib.grading", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="sources -> student notebooks and autograder zips")
    b.add_argument("names", nargs="*", help="only these exercises")
    g = sub.add_parser("grade", help="a folder of submissions -> a CSV gradebook")
    g.add_argument("submissions", type=Path)
    g.add_argument("-o", "--output", type=Path, default=Path("gradebook.csv"))
    g.add_argument("-j", "--jobs", type=int, default=2)
    g.add_argument("--timeout", type=float, default=120.0, help="seconds per submission")
    g.add_argument("--cell-seconds", type=float, default=60.0, help="seconds per cell")
    args = parser.parse_args(argv)
    if args.command == "build":
        for path in build(names=args.names or None):
            sys.stdout.write(f"wrote {path}\n")
        return 0
    rows = grade(
        args.submissions,
        args.output,
        jobs=args.jobs,
        timeout=args.timeout,
        cell_seconds=args.cell_seconds,
    )
    got = sum(r["score"] for r in rows)
    sys.stdout.write(
        f"graded {len({r['student'] for r in rows})} students: {len(rows)} rows, "
        f"{got:g} points in all -> {args.output}\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
