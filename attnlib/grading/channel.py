"""The one channel between the trusted grader and the untrusted worker: its messages, defined once.

The grader never runs a student's code, and the worker never sees a test, an
expected value or the gradebook. They talk over two pipes, one JSON object per
line, and a message carries **plain data only**: ``null``, booleans, numbers,
strings, lists and string-keyed objects. Nothing is pickled, and nothing that
arrives is ever called, imported or evaluated: a reply can say what a value *is*
(its numbers, its shape), never what to *do*.

Values that are not JSON by themselves are wrapped in a one-key object:

* ``{"array": {"shape": [2, 3], "dtype": "float64", "data": [...]}}`` — a numpy
  array or a torch tensor, its entries flat in C order; ``dtype`` is the kind the
  learner's code returned (``float32`` stays visible, so a message can name it);
* ``{"tuple": [...]}`` — a tuple (a function returning ``(c, alpha)``);
* ``{"object": "TypeName"}`` — anything else, reported by its type's name only;
* ``{"error": {"type": "ValueError", "message": "...", "types": [...]}}`` — what
  the learner's code raised instead of returning; ``types`` are the built-in
  exception classes it is an instance of (``["ValueError", "Exception",
  "BaseException"]``).
* ``{"handle": "_h1"}`` — in a request's arguments only: the object an
  earlier ``new`` made under that name (a model the grader had built, handed
  to the learner's function). The worker looks the name up among its own
  handles; the grader never receives an object.

Non-finite floats travel as the strings ``"nan"``, ``"inf"`` and ``"-inf"`` in
an array's ``data`` (JSON has no such numbers), so a NaN the learner's softmax
returned reaches the grader as a NaN.

Requests (grader → worker), each with an ``id`` the reply repeats:

==========  ================================================================
``cell``    run one notebook cell: ``source``, ``seconds``
``call``    call ``target`` (a name, or ``handle.method``) with ``args`` and ``kwargs``
``new``     ``handle = target(*args)``, then copy ``weights`` into its parameters
``state``   the parameters of ``target`` (a torch module) as arrays, and its parts' types
``bye``     end the worker
==========  ================================================================

Replies (worker → grader): ``{"id": n, "ok": true, "value": ...}`` or
``{"id": n, "ok": false, "error": {...}}``; a ``cell`` reply also says how long
the cell ran.

This module imports nothing beyond the standard library, so the worker and the
grader read it the same way. See the page "Exercises" (exercises/index) and the
README's "For instructors".
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = [
    "MAX_ELEMENTS",
    "MAX_MESSAGE",
    "OPS",
    "ChannelError",
    "array",
    "error",
    "from_line",
    "is_array",
    "read_array",
    "to_line",
]

MAX_MESSAGE = 8 * 2**20
"""The longest message either side reads (bytes); a longer one is a protocol error."""

MAX_ELEMENTS = 1_000_000
"""The most entries one array may carry; a larger result is reported as an object."""

OPS = ("cell", "call", "new", "state", "bye")
"""The requests the worker answers."""

_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class ChannelError(ValueError):
    """A message that is not valid plain data in this format."""


def _float_out(v: float) -> float | str:
    if math.isfinite(v):
        return v
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def array(shape: list[int] | tuple[int, ...], dtype: str, data: list[Any]) -> dict[str, Any]:
    """Wrap flat entries as an array value (non-finite floats become strings)."""
    out = [_float_out(v) if isinstance(v, float) else v for v in data]
    return {"array": {"shape": [int(d) for d in shape], "dtype": str(dtype), "data": out}}


def error(kind: str, message: str, types: list[str] | None = None) -> dict[str, Any]:
    """The value that stands for an exception the learner's code raised."""
    body = {"type": str(kind)[:100], "message": str(message)[:2000]}
    return {"error": {**body, "types": [str(t)[:100] for t in (types or [kind])][:20]}}


def is_array(value: Any) -> bool:
    """Whether a decoded value is a wrapped array."""
    return isinstance(value, dict) and set(value) == {"array"}


def read_array(value: Any) -> tuple[tuple[int, ...], str, list[float]]:
    """(shape, dtype, entries as Python floats) of a wrapped array, checked.

    Raises
    ------
    ChannelError
        If the value is not a well-formed array: shape of non-negative ints,
        as many entries as the shape says, each a number (or bool) or a
        non-finite string.
    """
    if not is_array(value) or not isinstance(value["array"], dict):
        raise ChannelError("not an array")
    body = value["array"]
    shape, dtype, data = body.get("shape"), body.get("dtype"), body.get("data")
    if not (isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)):
        raise ChannelError("an array's shape must be a list of non-negative ints")
    if len(shape) > 32 or not isinstance(dtype, str) or not isinstance(data, list):
        raise ChannelError("an array needs a shape (at most 32 axes), a dtype and its data")
    size = math.prod(shape)
    if size != len(data) or size > MAX_ELEMENTS:
        raise ChannelError(f"an array of shape {tuple(shape)} cannot carry {len(data)} entries")
    values = []
    for v in data:
        if type(v) in (int, float, bool):
            values.append(float(v))
        elif isinstance(v, str) and v in _NONFINITE:
            values.append(_NONFINITE[v])
        else:
            raise ChannelError("an array entry must be a number")
    return tuple(shape), dtype, values


def to_line(message: dict[str, Any]) -> bytes:
    """One message as a line of JSON (strict: no NaN tokens, plain types only)."""
    line = json.dumps(message, allow_nan=False, separators=(",", ":")).encode() + b"\n"
    if len(line) > MAX_MESSAGE:
        raise ChannelError(f"a message of {len(line)} bytes is over the limit of {MAX_MESSAGE}")
    return line


def _refuse_constant(token: str) -> Any:
    raise ChannelError(f"{token} is not plain JSON")


def from_line(line: bytes) -> dict[str, Any]:
    """Read one line of the channel into a dict, or raise :class:`ChannelError`.

    Anything that is not a JSON object of plain data (NaN tokens, nesting over
    100 levels, an integer of thousands of digits, invalid UTF-8) is refused.
    """
    if len(line) > MAX_MESSAGE:
        raise ChannelError("message over the size limit")
    try:
        message = json.loads(line.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ChannelError(f"not a JSON message: {str(err)[:200]}") from None
    if not isinstance(message, dict):
        raise ChannelError("a message must be a JSON object")
    if _depth(message) > 100:
        raise ChannelError("a message nested over 100 levels deep")
    return message


def _depth(value: Any) -> int:
    stack, deepest = [(value, 1)], 1
    while stack:
        item, d = stack.pop()
        deepest = max(deepest, d)
        if d > 100:
            return d
        if isinstance(item, dict):
            stack.extend((v, d + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, d + 1) for v in item)
    return deepest
