"""The trusted side of the channel: one sandboxed worker, driven request by request.

A :class:`Session` starts the worker (:mod:`.sandbox`, :mod:`.worker`), sends it
the notebook's cells one at a time and the grader's calls, and reads each reply
within its limits. A worker that overruns a limit, dies, or replies with
anything but the plain data the channel defines (:mod:`.channel`) is killed;
the session can start a fresh one and replay the cells that ran before, so a
hang in one place costs the points of that place only.

The limits are **CPU time**, so a grade does not depend on how busy the grading
machine is: a request may use ``seconds`` of the worker's CPU time (the worker
stops it itself at ``seconds``; the grader, which reads the CPU time of the
sandbox's processes from ``/proc``, kills it at ``seconds + CPU_SLACK``), and a
submission's workers together (every session of its :class:`Budget`) may use
``Budget.cpu_seconds`` (each worker also gets what is left as its ``RLIMIT_CPU``,
which the kernel enforces). A worker that waits without computing (a sleep, a
blocked read) uses no CPU time: a wall-clock backstop, :data:`WALL_PER_CPU` times
a request's CPU limit plus :data:`SLACK`, and the submission's deadline end it.
A reply that has arrived is always read before any limit is judged, so a grader
slowed down by other work never declares late an answer it already has.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from attnlib.grading import channel, sandbox

__all__ = ["Budget", "Session", "WorkerGone", "cpu_seconds", "tree"]

SLACK = 5.0  # wall-clock seconds added to a request's backstop
CPU_SLACK = 2.0  # CPU seconds a request may use beyond the worker's own limit before it is killed
WALL_PER_CPU = 10.0  # a request's wall-clock backstop, in units of its CPU limit (plus SLACK)
START_SECONDS = 60.0  # CPU seconds a fresh worker may take to start and answer its first request
POLL = 0.25  # seconds between two readings of the worker's CPU time while a reply is awaited
MIN_START_CPU = 1.0  # CPU seconds a fresh worker needs at least: with less left, none starts
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> tuple[int, float] | None:
    """A process's parent and CPU seconds (user and system, every thread, and its reaped
    children's), from ``/proc/<pid>/stat``; None once it has ended."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[1]), sum(int(x) for x in fields[11:15]) / _TICKS


def tree(root: int) -> list[int]:
    """Process ``root`` and all its descendants (one pass over ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))) is not None:
            children.setdefault(st[0], []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def cpu_seconds(pids: list[int]) -> float:
    """CPU seconds the processes ``pids`` have used so far (an ended one counts 0)."""
    return sum(st[1] for pid in pids if (st := _stat(pid)) is not None)


@dataclass(frozen=True)
class _Limits:
    """What one request may use: wall-clock and CPU readings past which the worker is killed."""

    wall: float  # time.monotonic() value
    cpu: float  # the current worker's CPU seconds
    cpu_left: float  # the current worker's CPU seconds at which the submission's are used up
    seconds: float  # the request's CPU limit, as asked


class WorkerGone(Exception):
    """The worker overran a limit, died, or broke the channel's format (it has been killed)."""


@dataclass
class Budget:
    """What one submission's workers may use together: CPU seconds and a wall-clock deadline.

    Every :class:`Session` of one submission shares it (a notebook graded in two
    environments has two workers, one after the other).
    """

    cpu_seconds: float
    wall_seconds: float
    deadline: float = field(init=False)
    sessions: list[Session] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.wall_seconds

    def used(self) -> float:
        """CPU seconds every worker of the submission has used, the running ones included."""
        return sum(s.own_cpu() for s in self.sessions)

    def spent(self) -> str | None:
        """Which of the submission's limits is used up (a phrase for the note), or None."""
        if self.cpu_seconds - self.used() < MIN_START_CPU:
            return f"the submission's CPU time limit of {self.cpu_seconds:g} s"
        if time.monotonic() >= self.deadline:
            return f"the submission's wall-clock limit of {self.wall_seconds:g} s"
        return None


@dataclass
class Session:
    """One worker of a submission, and the cells it has run.

    ``budget`` is the submission's (default: one of its own, ``limits.cpu_seconds`` of CPU
    time and ``wall_seconds`` of wall clock from now).
    """

    stage: sandbox.Stage
    notebook: bytes
    notebook_name: str
    limits: sandbox.Limits
    isolate: bool = True
    wall_seconds: float = 600.0
    budget: Budget | None = None
    ran: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    max_starts: int = 4
    _next_id: int = 0
    _buf: bytearray = field(default_factory=bytearray)
    _scratch: str | None = None
    _to_worker: int = -1
    _from_worker: int = -1
    cpu_before: float = 0.0  # CPU seconds of this session's workers that have ended
    _cpu_seen: float = 0.0  # the current worker's CPU seconds at the last reading
    _pids: list[int] = field(default_factory=list)  # the current worker's sandbox processes

    def __post_init__(self) -> None:
        if self.budget is None:
            self.budget = Budget(self.limits.cpu_seconds, self.wall_seconds)
        self.budget.sessions.append(self)

    @property
    def _budget(self) -> Budget:
        assert self.budget is not None
        return self.budget

    @property
    def deadline(self) -> float:
        """The submission's wall-clock deadline (a ``time.monotonic()`` value)."""
        return self._budget.deadline

    # -- what the submission has used --------------------------------------------------
    def worker_cpu(self, *, look: bool = False) -> float:
        """CPU seconds the current worker's sandbox has used (0 without a worker).

        Its processes are listed once it has answered its first request (the sandbox can
        start no process), before that at every reading, and again when ``look`` is set, as
        it is every ``POLL`` seconds while a reply is awaited.
        """
        if self.proc is not None:
            if look and self._pids:
                self._pids = tree(self.proc.pid)
            pids = self._pids or tree(self.proc.pid)
            self._cpu_seen = max(self._cpu_seen, cpu_seconds(pids))
        return self._cpu_seen

    def own_cpu(self) -> float:
        """CPU seconds this session's workers have used, the current one included."""
        return self.cpu_before + self.worker_cpu()

    def cpu_used(self) -> float:
        """CPU seconds the submission's workers have used (every session of its budget)."""
        return self._budget.used()

    def spent(self) -> str | None:
        """Which of the submission's limits is used up (a phrase for the note), or None."""
        return self._budget.spent()

    # -- life cycle --------------------------------------------------------------------
    def _command(self, fds: list[int]) -> tuple[list[str], str]:
        """The worker's argv (descriptors it needs appended to ``fds``) and working folder."""
        if not self.isolate:  # --no-sandbox: a separate process with limits, no OS boundary
            if self._scratch is None:  # its own folder, its own copies of attnlib and notebook
                self._scratch = sandbox.unsandboxed_scratch()
                self.stage.write(Path(self._scratch) / "attnlib.zip")
                (Path(self._scratch) / self.notebook_name).write_bytes(self.notebook)
            return [sys.executable, "-I", str(Path(self._scratch) / "attnlib.zip")], self._scratch
        cmd = sandbox.command(
            self.stage.data,
            self.notebook,
            self.notebook_name,
            sandbox.seccomp_filter(),
            self.limits,
        )
        data_fds = [sandbox.memfd("data", d) for d in cmd.data]
        fds += data_fds
        args_fd = sandbox.memfd("args", cmd.options_bytes(data_fds))
        fds.append(args_fd)
        return cmd.resolve(args_fd), "/"

    def start(self) -> None:
        """Start a fresh worker and replay the cells that ran before (their failures ignored)."""
        self.close()
        if self.starts >= self.max_starts:
            raise WorkerGone(f"the worker was restarted {self.max_starts - 1} times; no more")
        spent = self.spent()
        if spent:
            raise WorkerGone(f"no answer within {spent}")
        left = self._budget.cpu_seconds - self.cpu_used()
        self.starts += 1
        to_worker_r, self._to_worker = map(_high, os.pipe())
        self._from_worker, from_worker_w = map(_high, os.pipe())
        fds = [to_worker_r, from_worker_w]
        try:
            argv, cwd = self._command(fds)
            # The channel keeps its descriptors' numbers (all above 9) and the worker is told
            # them: pass_fds may only name descriptors open in this process when it forks.
            argv = [*argv, str(to_worker_r), str(from_worker_w)]
            # the kernel's own stop, just past the grader's: what is left of the submission's
            own = replace(self.limits, cpu_seconds=max(1, math.ceil(left + CPU_SLACK)))

            def preexec() -> None:
                sandbox.rlimits(own)()
                os.setsid()

            self.proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=sandbox.environment(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=preexec,
                pass_fds=tuple(fds),
                close_fds=True,
            )
        finally:
            for fd in fds:
                os.close(fd)
        self._cpu_seen, self._pids = 0.0, []
        # ready: an empty cell answered (the start-up's imports are not a request's CPU time)
        self.request({"op": "cell", "source": "", "seconds": START_SECONDS}, START_SECONDS)
        self._pids = tree(self.proc.pid)  # complete now: the worker is up
        for source in list(self.ran):
            self.request({"op": "cell", "source": source, "seconds": 60.0}, 60.0)

    def close(self) -> None:
        """End the worker (and with it, its whole PID namespace)."""
        if self.proc is not None:
            self.cpu_before += self.worker_cpu()
            self._cpu_seen, self._pids = 0.0, []
        proc, self.proc = self.proc, None
        for fd in (self._to_worker, self._from_worker):
            if fd >= 0:
                os.close(fd)
        self._to_worker = self._from_worker = -1
        self._buf = bytearray()
        if proc is not None:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    # -- requests ----------------------------------------------------------------------
    def request(self, message: dict[str, Any], seconds: float) -> dict[str, Any]:
        """Send one request and return its reply; :class:`WorkerGone` if none comes in time.

        ``seconds`` is the request's CPU time limit (the worker's own, which it is also sent);
        the worker is killed past ``seconds + CPU_SLACK`` of CPU time, past the submission's
        CPU time, or past the wall-clock backstop ``WALL_PER_CPU * seconds + SLACK`` or the
        submission's deadline, whichever comes first.
        """
        if self.proc is None:
            self.start()
        self._next_id += 1
        ident = self._next_id
        data = channel.to_line({**message, "id": ident})
        cpu_at_start = self.worker_cpu()
        try:
            view = memoryview(data)
            while view:
                n = os.write(self._to_worker, view)
                view = view[n:]
        except OSError:
            self.close()
            raise WorkerGone("the worker ended before it could be asked") from None
        limits = _Limits(
            wall=min(time.monotonic() + WALL_PER_CPU * seconds + SLACK, self.deadline),
            cpu=cpu_at_start + seconds + CPU_SLACK,
            cpu_left=self._budget.cpu_seconds - (self.cpu_used() - cpu_at_start),
            seconds=seconds,
        )
        reply = self._read_line(limits)
        try:
            decoded = channel.from_line(reply)
        except channel.ChannelError:
            self.close()
            raise WorkerGone("the worker's reply broke the channel's format") from None
        if decoded.get("id") != ident or not isinstance(decoded.get("ok"), bool):
            self.close()
            raise WorkerGone("the worker's reply did not answer the request")
        return decoded

    def _past(self, limits: _Limits, *, look: bool) -> str | None:
        """The limit the worker is past while it has not answered, or None."""
        cpu = self.worker_cpu(look=look)
        if cpu >= limits.cpu_left:
            return f"the submission's CPU time limit of {self._budget.cpu_seconds:g} s"
        if cpu >= limits.cpu:
            return f"the request's CPU time limit of {limits.seconds:g} s"
        if time.monotonic() >= limits.wall:
            if limits.wall >= self.deadline:
                return f"the submission's wall-clock limit of {self._budget.wall_seconds:g} s"
            backstop = WALL_PER_CPU * limits.seconds + SLACK
            return f"the request's wall-clock backstop of {backstop:g} s (it computed nothing)"
        return None

    def _read_line(self, limits: _Limits) -> bytes:
        scanned = 0  # the buffer grows in place and is searched once: linear in what arrives
        waited = False
        while (end := self._buf.find(b"\n", scanned)) < 0:
            scanned = len(self._buf)
            # what has arrived is read first: a limit is judged only when nothing is waiting
            ready, _, _ = select.select([self._from_worker], [], [], 0)
            if not ready:
                past = self._past(limits, look=waited)
                if past:
                    self.close()
                    raise WorkerGone(f"no answer within {past}")
                left = limits.wall - time.monotonic()
                wait = max(0.0, min(left, POLL))
                ready, _, _ = select.select([self._from_worker], [], [], wait)
                waited = not ready
                if not ready:
                    if self.proc is not None and self.proc.poll() is not None:
                        self.close()
                        raise WorkerGone("the worker ended")
                    continue
            chunk = os.read(self._from_worker, 1 << 20)
            if not chunk:
                self.close()
                raise WorkerGone("the worker ended")
            self._buf += chunk
            if len(self._buf) > channel.MAX_MESSAGE:
                self.close()
                raise WorkerGone("the worker sent more than the channel's message limit")
        line = bytes(self._buf[:end])
        del self._buf[: end + 1]
        return line

    def cell(self, source: str, seconds: float) -> dict[str, Any]:
        """Run one cell; once it has answered, it is replayed after a restart."""
        reply = self.request({"op": "cell", "source": source, "seconds": seconds}, seconds)
        self.ran.append(source)  # a cell that hung or killed the worker is not replayed
        return reply


def _high(fd: int) -> int:
    """The same open file on a descriptor above 9, clear of the standard streams."""
    import fcntl

    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new
