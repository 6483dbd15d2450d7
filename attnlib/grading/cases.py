"""How the grader checks a question: checks, hidden cases drawn from a private seed, comparisons.

Trusted side: this module runs in the grader's process and never runs a
student's code. Each question is a list of :class:`Check` s; a check gets a
:class:`Probe` (the channel to the sandboxed worker, :mod:`.grader`) and a
random generator seeded from the instructor's private seed, the exercise, the
question and the check's name (:func:`rng_for`). It draws its inputs, asks the
worker to call the learner's function on them, and compares what comes back
with the trusted reference (:mod:`.reference`, or :mod:`attnlib.core`), here in
this process. A check is all or nothing; a question's score is the sum of the
points of its checks that pass.

Publishing this file is harmless: the draws depend on a seed only the
instructor has (``--seed`` or ``ATTNLIB_GRADING_SEED``), so knowing *how* the
cases are made does not tell anyone *which* inputs a grading run uses. The
fixed structure every draw keeps (a score of 1500 beside a 0, padding with the
largest score, one real position in a row, d_s ≠ d_h) is what the exercise text
asks for anyway.

The exercises' checks live in :mod:`attnlib.grading.questions`, one module
per exercise. Each exercise also names the parts of attnlib that are **switched off** in its
sandbox (:func:`attnlib.grading.sandbox.stage`): the course's own reference for
what the exercise asks the learner to write. An answer that calls it gets a
NotImplementedError that says why, and loses the points of every check that
needed it (README, "What using attnlib earns").
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from attnlib.grading import channel
from attnlib.grading.reference import py_softmax

__all__ = [
    "FLOAT32_ATOL",
    "Check",
    "Exercise",
    "Fail",
    "Handle",
    "Params",
    "Probe",
    "Question",
    "Torch",
    "as_array",
    "as_tuple",
    "distinct_sizes",
    "expect_close",
    "expect_shape",
    "f32",
    "public_params",
    "rng_for",
    "sizes_label",
    "softmax_rows",
]


class Fail(AssertionError):
    """A check that did not pass; the message says why, in the course's notation."""


class Probe(Protocol):
    """The grader's handle on the worker (implemented in :mod:`attnlib.grading.grader`)."""

    def call(self, target: str, *args: Any, seconds: float = 10.0, **kwargs: Any) -> Any:
        """The plain value ``target(*args, **kwargs)`` returned; :class:`Fail` if it raised."""

    def new(self, target: str, *args: Any, weights: dict[str, Any] | None = None) -> str:
        """A handle on ``target(*args)`` with ``weights`` copied in; :class:`Fail` if it raised."""

    def state(self, target: str, parts: Sequence[str] = ()) -> dict[str, Any]:
        """The parameters of a torch module as arrays, and its ``parts``' class names."""


@dataclass(frozen=True)
class Torch:
    """An argument the learner's code receives as a torch tensor (``dtype`` float32 by default)."""

    value: Any
    dtype: str = "float32"


@dataclass(frozen=True)
class Handle:
    """An argument the learner's code receives as the object :meth:`Probe.new` made under ``name``.

    Only the name travels; the object (a model the grader had the worker build) never leaves
    the worker.
    """

    name: str


@dataclass(frozen=True)
class Check:
    """One all-or-nothing test of a question."""

    name: str
    points: float
    hint: str
    run: Callable[[Probe, np.random.Generator], None]
    public: bool = False


@dataclass(frozen=True)
class Question:
    """A graded question: the name its answer cell defines, and its checks."""

    name: str
    defines: str
    checks: tuple[Check, ...]

    @property
    def total(self) -> float:
        return float(sum(c.points for c in self.checks))


@dataclass(frozen=True)
class Exercise:
    """An exercise notebook: its questions, and the attnlib references switched off while graded."""

    name: str
    number: int
    questions: tuple[Question, ...]
    switched_off: tuple[str, ...] = ()
    cell_seconds: float = 30.0


FLOAT32_ATOL = 1e-5
"""Absolute tolerance for a projection, a score or c_t: a sum of a few terms of size ~1 that can
cancel to nearly 0. An honest float32 answer is then off by a few 1e-6 (its inputs are rounded
to float32 too), which no relative tolerance covers; a mistake moves it by ~0.1."""

Params = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""(s_prev, h, W_a, U_a, v_a) of one additive attention step."""


def f32(x: Any) -> np.ndarray:
    """``x`` rounded to float32 and back: values an answer computing in float32 reads exactly.

    Near 1000 float32 keeps ~4 decimals; reading unrounded scores would move an honest float32
    answer's weights by ~3e-5 relative before it computed anything.
    """
    return np.asarray(x, dtype=np.float32).astype(np.float64)


def distinct_sizes(rng: np.random.Generator, k: int, lo: int = 2, hi: int = 8) -> list[int]:
    """``k`` different sizes in lo … hi: d_s ≠ d_h ≠ d_a ≠ T_x, so a shape mistake shows."""
    return [int(d) for d in rng.choice(np.arange(lo, hi + 1), size=k, replace=False)]


def public_params(seed: int, d_s: int, d_h: int, d_a: int, T_x: int) -> Params:
    """The (s_prev, h, W_a, U_a, v_a) a notebook's public test draws with ``default_rng(seed)``."""
    r = np.random.default_rng(seed)
    return (
        r.normal(size=d_s),
        r.normal(size=(T_x, d_h)),
        r.normal(size=(d_a, d_s)),
        r.normal(size=(d_a, d_h)),
        r.normal(size=d_a),
    )


def sizes_label(d_s: int, d_h: int, d_a: int, T_x: int) -> str:
    """How a message names the sizes of a case."""
    return f"d_s={d_s}, d_h={d_h}, d_a={d_a}, T_x={T_x}"


def rng_for(seed: str, *names: str) -> np.random.Generator:
    """The generator of one check: from the private seed and the check's place, nothing else."""
    digest = hashlib.sha256("\x1f".join((str(seed), *names)).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))


# --------------------------------------------------------------------------- reading answers
def _describe(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, dict) and "object" in value:
        return f"a {value['object']}"
    if isinstance(value, dict) and "tuple" in value:
        return f"a tuple of {len(value['tuple'])}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return f"a {type(value).__name__}"


def as_array(value: Any, name: str) -> np.ndarray:
    """The learner's result as a float64 array, or :class:`Fail` saying what it was instead."""
    if value is None:
        raise Fail(f"{name} is None: the function does not return anything yet")
    if isinstance(value, bool):
        raise Fail(f"{name} is a bool, not numbers")
    if isinstance(value, int | float):
        return np.array(float(value))
    if channel.is_array(value):
        try:
            shape, _dtype, values = channel.read_array(value)
        except channel.ChannelError as err:
            raise Fail(f"{name} could not be read: {err}") from None
        return np.array(values, dtype=np.float64).reshape(shape)
    if isinstance(value, list) and all(isinstance(v, int | float) for v in value):
        return np.array(value, dtype=np.float64)
    raise Fail(f"{name} should be an array of numbers, but it is {_describe(value)}")


def as_tuple(value: Any, n: int, name: str) -> list[Any]:
    """The parts of a result that should be a tuple of ``n`` (a list of ``n`` is accepted)."""
    if channel.is_array(value):  # a list of n arrays of one shape arrives as a single array
        try:
            shape, dtype, data = channel.read_array(value)
        except channel.ChannelError as err:
            raise Fail(f"{name} could not be read: {err}") from None
        if shape and shape[0] == n:
            size = len(data) // n
            value = [
                channel.array(shape[1:], dtype, data[k * size : (k + 1) * size]) for k in range(n)
            ]
    if isinstance(value, dict) and "tuple" in value and isinstance(value["tuple"], list):
        parts = value["tuple"]
    elif isinstance(value, list):
        parts = value
    else:
        raise Fail(f"{name} should return a tuple of {n}, but it returns {_describe(value)}")
    if len(parts) != n:
        raise Fail(f"{name} should return a tuple of {n}, but it returns one of {len(parts)}")
    return list(parts)


def expect_shape(got: np.ndarray, want: tuple[int, ...], name: str) -> None:
    """:class:`Fail` unless ``got`` has shape ``want``."""
    if got.shape != want:
        raise Fail(f"{name} should have shape {want}, but it has shape {got.shape}")


def expect_close(
    got: np.ndarray,
    want: Any,
    name: str,
    *,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    exact_zeros: bool = False,
) -> None:
    """:class:`Fail` unless ``got`` has ``want``'s shape and values (NaN never matches).

    With ``exact_zeros``, an entry the reference makes exactly 0 (a padding
    weight) must be exactly 0 in ``got`` too.
    """
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        raise Fail(f"{name} should have shape {want.shape}, but it has shape {got.shape}")
    for k, (g, w) in enumerate(zip(got.ravel().tolist(), want.ravel().tolist(), strict=True)):
        if exact_zeros and w == 0.0 and g != 0.0:
            raise Fail(f"{name}: entry {k} (flat index) should be exactly 0, but it is {g:.3g}")
        if not math.isclose(g, w, rel_tol=rtol, abs_tol=atol):
            raise Fail(
                f"{name} is not right yet: entry {k} (flat index) is {g:.6g}, expected {w:.6g}"
            )


def softmax_rows(e: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """The trusted reference, row by row, in pure Python (:func:`.reference.py_softmax`)."""
    rows = e.reshape(-1, e.shape[-1]).tolist()
    masks = [None] * len(rows) if mask is None else mask.reshape(-1, e.shape[-1]).tolist()
    return np.array([py_softmax(r, m) for r, m in zip(rows, masks, strict=True)]).reshape(e.shape)
