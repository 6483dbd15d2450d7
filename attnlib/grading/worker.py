"""The untrusted worker: runs one student's notebook and answers the grader's calls with plain data.

This file runs **inside the sandbox** (:mod:`attnlib.grading.sandbox`), from the
staged zip of attnlib, as ``python -I attnlib.zip IN OUT``, with the channel on the
file descriptors IN (requests) and OUT (replies). It shares its process with the student's code, so
nothing here is trusted: whatever it replies is treated by the grader as the
student's answer and nothing more. It knows no test, no expected value and no
seed; it runs the cells it is sent, calls the functions it is asked to call, and
turns what they return into the channel's plain data (:mod:`.channel`).

The learner's cells run in an IPython shell (so ``%matplotlib`` and the install
cell's ``%pip`` line parse as they do in Jupyter). ``grader.check(...)`` cells
do nothing here: the grader runs its own checks.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any

MAX_LIST = 100_000


class _NoChecks:
    """Stands in for the notebook's ``grader`` while grading: every check is a no-op."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


class _TimeUp(BaseException):  # not caught by a cell's own `except Exception`
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _TimeUp


def _timed(seconds: float, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, stopped after ``seconds`` of this process's CPU time.

    CPU time (``ITIMER_PROF``: every thread, user and system), not wall-clock time, so a
    busy grading machine does not stop a learner's code early; a wait that computes nothing
    is the grader's to end (:mod:`attnlib.grading.session`).
    """
    signal.signal(signal.SIGPROF, _alarm)
    signal.setitimer(signal.ITIMER_PROF, max(0.001, float(seconds)))
    try:
        return fn(*args, **kwargs)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)


def _describe_error(err: BaseException) -> dict[str, Any]:
    """What the learner's code raised: its type's name, its message, and the built-in
    exception types it is (``ValueError`` for a subclass of ValueError, not for a class of the
    notebook's own that is merely called so)."""
    if isinstance(err, _TimeUp):
        return {
            "type": "TimeoutError",
            "message": "ran longer than its time limit; is there an endless loop?",
            "types": ["TimeoutError"],
        }
    try:
        message = str(err)
    except BaseException:  # a __str__ that raises: the type is all there is to say
        message = ""
    kinds = [c.__name__ for c in type(err).__mro__ if c.__module__ == "builtins"]
    return {"type": type(err).__name__[:100], "message": message[:2000], "types": kinds[:20]}


def to_plain(x: Any, channel: Any, depth: int = 0) -> Any:
    """What the learner returned, as the channel's plain data (never the object itself)."""
    import numpy as np

    if depth > 20:
        return {"object": "nested too deeply"}
    if x is None or isinstance(x, bool | str):
        return x if not isinstance(x, str) else x[:10_000]
    if isinstance(x, int):
        return x if abs(x) < 2**53 else float(x)
    if isinstance(x, float):
        return channel.array((), "float", [x])
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        t = x.detach().cpu()
        if t.is_complex() or t.numel() > channel.MAX_ELEMENTS:
            return {"object": f"torch.Tensor of {t.dtype} with {t.numel()} entries"}
        flat = t.reshape(-1).tolist()
        return channel.array(tuple(t.shape), str(t.dtype), flat)
    if isinstance(x, np.ndarray | np.generic):
        arr = np.asarray(x)
        if arr.dtype.kind == "O" and arr.size <= channel.MAX_ELEMENTS:
            try:  # an object array of numbers (what np.array(list_of_floats, dtype=object) is)
                arr = arr.astype(np.float64)
            except (TypeError, ValueError):
                return {"object": "numpy array of dtype object"}
        if arr.dtype.kind not in "biuf":
            return {"object": f"numpy array of dtype {arr.dtype}"}
        if arr.size > channel.MAX_ELEMENTS:
            return {"object": f"numpy array with {arr.size} entries"}
        return channel.array(arr.shape, str(arr.dtype), arr.ravel().tolist())
    if isinstance(x, tuple):
        return {"tuple": [to_plain(v, channel, depth + 1) for v in x[:100]]}
    if isinstance(x, list):
        try:
            arr = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            return [to_plain(v, channel, depth + 1) for v in x[:MAX_LIST]]
        if arr.dtype.kind == "f" and arr.size <= channel.MAX_ELEMENTS:
            return channel.array(arr.shape, "list", arr.ravel().tolist())
        return [to_plain(v, channel, depth + 1) for v in x[:MAX_LIST]]
    return {"object": type(x).__name__[:100]}


def from_plain(v: Any) -> Any:
    """The grader's plain arguments as numpy arrays or torch tensors for the learner's code.

    A ``{"handle": name}`` comes back unchanged; :func:`with_handles` swaps it for its object.
    """
    if isinstance(v, dict) and set(v) == {"array"}:
        import numpy as np

        body = v["array"]
        data = [float(d) if isinstance(d, str) else d for d in body["data"]]
        dtype = body["dtype"]
        if dtype.startswith("torch."):
            import torch

            return torch.tensor(data, dtype=getattr(torch, dtype[6:])).reshape(body["shape"])
        return np.asarray(data, dtype=dtype).reshape(body["shape"])
    if isinstance(v, dict) and set(v) == {"tuple"}:
        return tuple(from_plain(x) for x in v["tuple"])
    if isinstance(v, list):
        return [from_plain(x) for x in v]
    return v


def with_handles(v: Any, handles: dict[str, Any]) -> Any:
    """``v`` with every ``{"handle": name}`` replaced by the object ``new`` made under that name."""
    if isinstance(v, dict) and set(v) == {"handle"}:
        name = v["handle"]
        if not isinstance(name, str) or name not in handles:
            raise NameError(f"no object was made under the handle {str(name)[:100]!r}")
        return handles[name]
    if isinstance(v, tuple):
        return tuple(with_handles(x, handles) for x in v)
    if isinstance(v, list):
        return [with_handles(x, handles) for x in v]
    return v


class Worker:
    """Runs cells in one IPython shell and serves the grader's requests."""

    def __init__(self, channel: Any) -> None:
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config

        config = Config()
        config.HistoryManager.enabled = False
        self.shell = InteractiveShell.instance(config=config)
        self.shell.user_ns["grader"] = _NoChecks()
        self.handles: dict[str, Any] = {}
        self.channel = channel

    def resolve(self, target: str) -> Any:
        head, *rest = target.split(".")
        if head in self.handles:
            obj = self.handles[head]
        elif head in self.shell.user_ns:
            obj = self.shell.user_ns[head]
        else:
            raise NameError(f"{head} is not defined: write it and run its cell")
        for part in rest:
            obj = getattr(obj, part)
        return obj

    def cell(self, msg: dict[str, Any]) -> dict[str, Any]:
        start = time.perf_counter()
        try:
            result = _timed(msg.get("seconds", 60), self.shell.run_cell, msg["source"])
            err = result.error_in_exec or result.error_before_exec
        except _TimeUp as timeout:
            err = timeout
        value = {"seconds": round(time.perf_counter() - start, 3)}
        if err is not None:
            return {"ok": False, "error": _describe_error(err), "value": value}
        return {"ok": True, "value": value}

    def call(self, msg: dict[str, Any]) -> Any:
        fn = self.resolve(msg["target"])
        if not callable(fn):
            raise TypeError(f"{msg['target']} is not a function (it is a {type(fn).__name__})")
        args = [with_handles(from_plain(a), self.handles) for a in msg.get("args", [])]
        kwargs = {
            k: with_handles(from_plain(a), self.handles) for k, a in msg.get("kwargs", {}).items()
        }
        out = _timed(msg.get("seconds", 10), fn, *args, **kwargs)
        return to_plain(out, self.channel)

    def new(self, msg: dict[str, Any]) -> Any:
        cls = self.resolve(msg["target"])
        args = [with_handles(from_plain(a), self.handles) for a in msg.get("args", [])]
        obj = _timed(msg.get("seconds", 10), cls, *args)
        weights = msg.get("weights") or {}
        if weights:
            import torch

            for name, value in weights.items():
                path, _, leaf = name.rpartition(".")
                owner = obj
                for part in path.split(".") if path else []:
                    if not hasattr(owner, part):
                        raise AttributeError(
                            f"{msg['target']} has no {part}: keep the layers the skeleton creates"
                        )
                    owner = getattr(owner, part)
                if path and not isinstance(owner, torch.nn.Linear):
                    raise TypeError(f"{path} is not an nn.Linear (it is a {type(owner).__name__})")
                param = getattr(owner, leaf, None)
                if not isinstance(param, torch.Tensor):
                    raise AttributeError(f"{name} is not a tensor of {msg['target']}")
                tensor = from_plain(value)
                if tuple(param.shape) != tuple(tensor.shape):
                    raise ValueError(
                        f"{name} has shape {tuple(param.shape)}, expected {tuple(tensor.shape)}"
                    )
                with torch.no_grad():
                    param.copy_(tensor.to(param.dtype))
        self.handles[msg["handle"]] = obj
        return msg["handle"]

    def state(self, msg: dict[str, Any]) -> Any:
        import torch

        module = self.resolve(msg["target"])
        if not isinstance(module, torch.nn.Module):
            raise TypeError(
                f"{msg['target']} is not a torch module (it is {type(module).__name__})"
            )
        params = {k: to_plain(v, self.channel) for k, v in module.state_dict().items()}
        parts = {}
        for path in msg.get("parts", []):
            obj: Any = module
            for p in path.split("."):
                obj = getattr(obj, p, None)
            parts[path] = [c.__name__ for c in type(obj).__mro__][:20]
        return {"params": params, "parts": parts}

    def serve(self, read: Any, write: Any) -> None:
        channel = self.channel
        for line in read:
            msg = channel.from_line(line)
            op, ident = msg.get("op"), msg.get("id")
            if op == "bye":
                write(channel.to_line({"id": ident, "ok": True, "value": None}))
                return
            try:
                if op == "cell":
                    reply = self.cell(msg)
                else:
                    handler = {"call": self.call, "new": self.new, "state": self.state}[op]
                    reply = {"ok": True, "value": handler(msg)}
            except BaseException as err:  # the learner's code: anything it raises is an answer
                reply = {"ok": False, "error": _describe_error(err)}
            reply["id"] = ident
            try:
                line_out = channel.to_line(reply)
            except (ValueError, TypeError) as err:
                line_out = channel.to_line(
                    {
                        "id": ident,
                        "ok": False,
                        "error": {
                            "type": "ValueError",
                            "message": f"the result could not be sent: {err}",
                        },
                    }
                )
            write(line_out)


def main(argv: list[str]) -> int:
    """Entry point in the sandbox: ``attnlib.zip IN OUT`` (the zip's ``__main__`` calls it)."""
    quiet = os.open(os.devnull, os.O_WRONLY)  # the learner's prints and warnings go nowhere
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    from attnlib.grading import channel

    in_fd, out_fd = int(argv[-2]), int(argv[-1])
    reader = os.fdopen(in_fd, "rb", buffering=0)
    out = os.fdopen(out_fd, "wb", buffering=0)

    def write(data: bytes) -> None:
        out.write(data)

    def lines() -> Any:
        buf = b""
        while True:
            chunk = reader.read(65536)
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                yield line

    Worker(channel).serve(lines(), write)
    return 0
