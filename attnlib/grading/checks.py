"""The learner's side: what the exercise notebooks' public tests call, in the learner's kernel.

``grader.check("q1_softmax")`` in a notebook runs that question's public tests
(:mod:`.notebook`), and they call these: :func:`call` runs the learner's function
under a time limit and turns anything it raises into a failed check with a
message; :func:`floats` reads its result as plain numbers; :func:`assert_close`
compares them with a pure-Python reference (:mod:`.reference`) and names the
shape or the entry that differs. Where the function is not written yet (it is not
defined, raises ``NotImplementedError`` or returns ``None``) the failure is a
:class:`NotAnswered`, which the notebook shows as "not answered yet".

These checks give feedback; they are not the grade. The grade comes from the
trusted grader (:mod:`.grader`), which runs the notebook in a sandbox and
checks it there with hidden cases (README, "For instructors").
"""

from __future__ import annotations

import math
import signal
import threading
from typing import Any

__all__ = ["NotAnswered", "assert_close", "call", "floats"]

Nested = float | list["Nested"]


# =========================================================================== checks
class NotAnswered(AssertionError):
    """A failed check whose cause is an answer not written yet, not a wrong one.

    Raised by :func:`call` when the learner's function is not defined or raises
    ``NotImplementedError``, and by :func:`floats` when it returned ``None``. It is an
    ``AssertionError``, so a check that fails with it fails as before; the notebook's
    ``grader`` (:mod:`.notebook`) shows it as "not answered yet".
    """


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
        If ``x`` is not numbers; :class:`NotAnswered` (an ``AssertionError``) if it is
        ``None`` (the function is not written yet).

    See Also
    --------
    The page "Exercises" (exercises/index).
    """
    import numpy as np

    if x is None:
        raise NotAnswered(f"{name} is None: the function does not return anything yet")
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
        Limit on the CPU time ``fn`` may use (on the main thread; elsewhere no limit is
        set). CPU time, not the clock: a busy machine does not make a fair answer fail.

    Returns
    -------
    Whatever ``fn`` returns.

    Raises
    ------
    AssertionError
        If ``fn`` raises anything (``SystemExit`` included) or runs too long;
        :class:`NotAnswered` (an ``AssertionError``) if ``fn`` is missing or raises
        ``NotImplementedError``.

    See Also
    --------
    The page "Exercises" (exercises/index).
    """
    label = name or getattr(fn, "__name__", "your function")
    if not callable(fn):
        raise NotAnswered(f"{label} is not defined yet: write it and run its cell first")
    timed = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    old_handler = old_timer = None
    if timed:

        def _alarm(signum: int, frame: Any) -> None:
            raise _TimeUp

        old_handler = signal.signal(signal.SIGPROF, _alarm)
        old_timer = signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        return fn(*args, **kwargs)
    except _TimeUp:
        raise AssertionError(
            f"{label} used more than {seconds:g} s of CPU time; is there an endless loop?"
        ) from None
    except NotImplementedError as err:
        raise NotAnswered(
            f"{label} is not written yet (it raised NotImplementedError: {err})"
        ) from None
    except BaseException as err:  # SystemExit, KeyboardInterrupt: a failed check, not a crash
        raise AssertionError(f"{label} raised {type(err).__name__}: {err}") from None
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, old_handler)
            if old_timer and old_timer[0] > 0:
                signal.setitimer(signal.ITIMER_PROF, *old_timer)
