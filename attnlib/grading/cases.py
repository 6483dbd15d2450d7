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
instructor has (``--seed`` or ``ATTNLIB_GRADING_SEED``, at least 64 bits:
:func:`seed_bits`) and on the student's name, so knowing *how* the cases are made
does not tell anyone *which* inputs a grading run uses, and two students never
share their hidden cases. The fixed structure every draw keeps (a score of 1500
beside a 0, padding with the largest score, one real position in a row, d_s ≠ d_h)
is what the exercise text asks for anyway.

**What a note may say.** A failed check raises :class:`Fail`, whose message (for
the instructor's ``--details`` file) may name drawn inputs and what the learner's
code returned; the gradebook's note says only :meth:`Fail.phrase`, words of the
grader's own (the kind of failure, the name of a built-in exception), never a
value, a shape or a text that came from the worker or from a draw. A learner's
function could otherwise hand its hidden inputs back through the note.

The exercises' checks live in :mod:`attnlib.grading.questions`, one module
per exercise. A question that asks the learner to write something is graded in a
worker whose attnlib holds only the modules the exercise's notebook needs
(:attr:`Exercise.modules`, none for most), so the course's reference is not
there to call; one that tells the learner to use attnlib
(:attr:`Question.uses_attnlib`) in a worker that has all of it
(:func:`attnlib.grading.sandbox.stage`; README, "What using attnlib earns").
"""

from __future__ import annotations

import builtins
import hashlib
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from attnlib.grading import channel
from attnlib.grading.reference import py_softmax

__all__ = [
    "BUILTIN_ERRORS",
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
    "seed_bits",
    "sizes_label",
    "softmax_rows",
]


#: The exceptions a note may name: Python's own, never a class the learner's code defines.
BUILTIN_ERRORS = frozenset(
    n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)
)

_PHRASES = {
    "values": "the values are not right",
    "shape": "the result has the wrong shape",
    "type": "the result is not what the question asks for (its type, or its parts)",
    "none": "the function returns None: it does not return anything yet",
    "nan": "the result holds NaN or inf",
    "not_raised": "it should raise ValueError here, and it did not",
}


class Fail(AssertionError):
    """A check that did not pass.

    The message says why, in the course's notation, for the instructor (it may name drawn
    inputs and the learner's values); :meth:`phrase` is what the gradebook's note says.

    Parameters
    ----------
    message : str
    kind : str
        ``"values"``, ``"shape"``, ``"type"``, ``"none"``, ``"nan"``, ``"not_raised"``
        or ``"raised"`` (the learner's code raised: ``raised`` lists the built-in exception
        classes it is an instance of, as the worker reported them).
    note : str, optional
        The note's words instead of the kind's, written by the grader (never a value or a
        text from the worker or a draw).
    """

    def __init__(
        self,
        message: str = "",
        *,
        kind: str = "values",
        note: str | None = None,
        raised: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.note = note
        self.raised = tuple(str(t) for t in raised)

    @property
    def error(self) -> str | None:
        """The most specific built-in exception the learner's code raised (None: not one)."""
        return next((t for t in self.raised if t in BUILTIN_ERRORS), None)

    def raised_a(self, kind: str) -> bool:
        """Whether the learner's code raised an instance of the built-in exception ``kind``."""
        return self.kind == "raised" and kind in self.raised and kind in BUILTIN_ERRORS

    def phrase(self) -> str:
        """What the gradebook's note says of this failure: the grader's words only."""
        if self.note:
            return self.note
        if self.kind == "raised":
            return f"the function raised {self.error or 'an exception'}"
        return _PHRASES.get(self.kind, _PHRASES["values"])


class Probe(Protocol):
    """The grader's handle on the worker (implemented in :mod:`attnlib.grading.grader`)."""

    def own(self) -> Probe:
        """The probe of the worker in which the learner's own code runs without attnlib
        (the questions that ask the learner to write something are graded there); itself,
        for such a question."""

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
    """A graded question: the name its answer cell defines, and its checks.

    ``uses_attnlib``: the question tells the learner to use attnlib, and is graded in a
    worker that has all of it; otherwise the learner writes the answer, and it is graded in
    a worker whose attnlib holds only :attr:`Exercise.modules`.
    """

    name: str
    defines: str
    checks: tuple[Check, ...]
    uses_attnlib: bool = False

    @property
    def total(self) -> float:
        return float(sum(c.points for c in self.checks))


@dataclass(frozen=True)
class Exercise:
    """An exercise notebook: its questions, and what of attnlib its learner's code may use.

    ``modules``: the attnlib modules the notebook needs for the questions the learner
    writes (and those they import), none of which computes an answer (exercise 6's models
    and vocabulary); every other module is absent there. ``switched_off``: functions of those
    modules that would compute an answer (a model's own greedy decoder), which raise there.
    """

    name: str
    number: int
    questions: tuple[Question, ...]
    switched_off: tuple[str, ...] = ()
    cell_seconds: float = 30.0
    modules: tuple[str, ...] = ()


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
    """The generator of one check: from the private seed and the check's place, nothing else.

    The grader names the student first (``rng_for(seed, student, exercise, question,
    check)``), so every student meets hidden cases of their own.
    """
    text = "\x1f".join((str(seed), *names))
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))


_WORD_BITS = 11.0  # a word of a list of about 2000 common ones
_SEPARATOR_BITS = 2.0


def seed_bits(seed: str) -> float:
    """A cautious estimate of how many bits of randomness a seed holds.

    Runs of 8 or more hexadecimal digits count 4 bits a digit (``secrets.token_hex``);
    a run of letters whose case changes inside it 5.7 bits a letter, and of 2 or more
    digits 3.3 a digit (``secrets.token_urlsafe``); a run of letters in one case (a word,
    capitalised or not) counts at most :data:`_WORD_BITS`, as if drawn from a list of 2000
    common words, a letter alone 4.7; any other character 5 bits, a space, ``-``, ``_``
    or ``.`` between words 2. A run repeated counts once. ``python -c "import secrets;
    print(secrets.token_hex(16))"`` gives a seed of 128 bits. What no count of characters
    can tell is a phrase anyone knows (a proverb, a line of a song): draw the seed.
    """
    bits, seen = 0.0, set()
    for token in re.findall(r"[0-9a-fA-F]{8,}|[A-Za-z]+|[0-9]+|[^A-Za-z0-9]", seed):
        if token in seen:
            continue
        seen.add(token)
        if len(token) >= 8 and re.fullmatch(r"[0-9a-fA-F]+", token) and not token.isalpha():
            bits += 4.0 * len(token)
        elif token.isdigit():
            bits += math.log2(10) * len(token)
        elif token.isalpha() and token.isascii():
            one_case = token.islower() or token.isupper() or token.istitle()
            if len(token) == 1:
                bits += math.log2(26)
            elif one_case:
                bits += min(_WORD_BITS, math.log2(26) * len(token))
            else:
                bits += math.log2(52) * len(token)
        elif token in " -_.":
            bits += _SEPARATOR_BITS
        else:
            bits += 5.0
    return bits


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
        raise Fail(f"{name} is None: the function does not return anything yet", kind="none")
    if isinstance(value, bool):
        raise Fail(f"{name} is a bool, not numbers", kind="type")
    if isinstance(value, int | float):
        return np.array(float(value))
    if channel.is_array(value):
        try:
            shape, _dtype, values = channel.read_array(value)
        except channel.ChannelError as err:
            raise Fail(f"{name} could not be read: {err}", kind="type") from None
        return np.array(values, dtype=np.float64).reshape(shape)
    if isinstance(value, list) and all(isinstance(v, int | float) for v in value):
        return np.array(value, dtype=np.float64)
    raise Fail(f"{name} should be an array of numbers, but it is {_describe(value)}", kind="type")


def as_tuple(value: Any, n: int, name: str) -> list[Any]:
    """The parts of a result that should be a tuple of ``n`` (a list of ``n`` is accepted)."""
    if channel.is_array(value):  # a list of n arrays of one shape arrives as a single array
        try:
            shape, dtype, data = channel.read_array(value)
        except channel.ChannelError as err:
            raise Fail(f"{name} could not be read: {err}", kind="type") from None
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
        raise Fail(
            f"{name} should return a tuple of {n}, but it returns {_describe(value)}", kind="type"
        )
    if len(parts) != n:
        raise Fail(
            f"{name} should return a tuple of {n}, but it returns one of {len(parts)}", kind="type"
        )
    return list(parts)


def expect_shape(got: np.ndarray, want: tuple[int, ...], name: str) -> None:
    """:class:`Fail` unless ``got`` has shape ``want``."""
    if got.shape != want:
        raise Fail(f"{name} should have shape {want}, but it has shape {got.shape}", kind="shape")


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
        raise Fail(
            f"{name} should have shape {want.shape}, but it has shape {got.shape}", kind="shape"
        )
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
