"""The trusted side of the channel: one sandboxed worker, driven request by request.

A :class:`Session` starts the worker (:mod:`.sandbox`, :mod:`.worker`), sends it
the notebook's cells one at a time and the grader's calls, and reads each reply
with a deadline. A worker that overruns a deadline, dies, or replies with
anything but the plain data the channel defines (:mod:`.channel`) is killed;
the session can start a fresh one and replay the cells that ran before, so a
hang in one place costs the points of that place only.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnlib.grading import channel, sandbox

__all__ = ["Session", "WorkerGone"]

SLACK = 5.0  # seconds the grader waits beyond the worker's own time limit


def _high(fd: int) -> int:
    """The same open file on a descriptor above 9, clear of the standard streams."""
    import fcntl

    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


class WorkerGone(Exception):
    """The worker overran its deadline, died, or broke the channel's format (it has been killed)."""


@dataclass
class Session:
    """One submission's worker and the cells it has run."""

    stage_dir: Path
    notebook: bytes
    notebook_name: str
    limits: sandbox.Limits
    isolate: bool = True
    deadline: float = field(default_factory=lambda: time.monotonic() + 600.0)
    ran: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    max_starts: int = 4
    _next_id: int = 0
    _buf: bytearray = field(default_factory=bytearray)
    _scratch: str | None = None
    _to_worker: int = -1
    _from_worker: int = -1

    # -- life cycle --------------------------------------------------------------------
    def start(self) -> None:
        """Start a fresh worker and replay the cells that ran before (their failures ignored)."""
        self.close()
        if self.starts >= self.max_starts:
            raise WorkerGone(f"the worker was restarted {self.max_starts - 1} times; no more")
        if time.monotonic() >= self.deadline:
            raise WorkerGone("no answer within the submission's time limit")
        self.starts += 1
        nb_fd = _high(os.memfd_create("notebook"))
        os.write(nb_fd, self.notebook)
        os.lseek(nb_fd, 0, os.SEEK_SET)
        to_worker_r, self._to_worker = map(_high, os.pipe())
        self._from_worker, from_worker_w = map(_high, os.pipe())
        fds = [nb_fd, to_worker_r, from_worker_w]
        if self.isolate:
            bpf = sandbox.seccomp_filter()
            seccomp_fd = None
            if bpf is not None:
                seccomp_fd = _high(os.memfd_create("seccomp"))
                os.write(seccomp_fd, bpf)
                os.lseek(seccomp_fd, 0, os.SEEK_SET)
                fds.append(seccomp_fd)
            cmd = sandbox.command(
                self.stage_dir, nb_fd, self.notebook_name, seccomp_fd, self.limits
            )
            cwd = "/"
        else:  # --no-sandbox: a separate process with limits, but no OS boundary
            cmd = [
                sys.executable,
                "-I",
                str(self.stage_dir / "attnlib/grading/worker.py"),
                str(self.stage_dir),
            ]
            if self._scratch is None:  # its own folder with its own copy of the notebook
                self._scratch = tempfile.mkdtemp(prefix="attnlib-unsandboxed-")
                (Path(self._scratch) / self.notebook_name).write_bytes(self.notebook)
            cwd = self._scratch
        env = sandbox.environment()
        # The channel keeps its descriptors' numbers (all above 9) and the worker is told them:
        # pass_fds may only name descriptors open in this process when it forks, and with
        # jobs > 1 another session's temporary descriptors come and go at any moment.
        cmd = [*cmd, str(to_worker_r), str(from_worker_w)]

        def preexec() -> None:
            sandbox.rlimits(self.limits)()
            os.setsid()

        keep = tuple(fds)
        try:
            self.proc = subprocess.Popen(
                cmd,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=preexec,
                pass_fds=keep,
                close_fds=True,
            )
        finally:
            for fd in fds:
                os.close(fd)
        for source in list(self.ran):
            self.request({"op": "cell", "source": source, "seconds": 60.0}, 60.0)

    def close(self) -> None:
        """End the worker (and with it, its whole PID namespace)."""
        proc, self.proc = self.proc, None
        for fd in (self._to_worker, self._from_worker):
            if fd >= 0:
                os.close(fd)
        self._to_worker = self._from_worker = -1
        self._buf = bytearray()
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    # -- requests ----------------------------------------------------------------------
    def request(self, message: dict[str, Any], seconds: float) -> dict[str, Any]:
        """Send one request and return its reply; :class:`WorkerGone` if none comes in time."""
        if self.proc is None:
            self.start()
        self._next_id += 1
        ident = self._next_id
        data = channel.encode({**message, "id": ident})
        try:
            view = memoryview(data)
            while view:
                n = os.write(self._to_worker, view)
                view = view[n:]
        except OSError:
            self._fail()
            raise WorkerGone("the worker ended before it could be asked") from None
        limit = min(time.monotonic() + seconds + SLACK, self.deadline)
        reply = self._read_line(limit)
        try:
            decoded = channel.decode(reply)
        except channel.ChannelError as err:
            self._fail()
            raise WorkerGone(f"the worker's reply broke the channel's format ({err})") from None
        if decoded.get("id") != ident or not isinstance(decoded.get("ok"), bool):
            self._fail()
            raise WorkerGone("the worker's reply did not answer the request")
        return decoded

    def _fail(self) -> None:
        self.close()

    def _read_line(self, limit: float) -> bytes:
        scanned = 0  # the buffer grows in place and is searched once: linear in what arrives
        while (end := self._buf.find(b"\n", scanned)) < 0:
            scanned = len(self._buf)
            left = limit - time.monotonic()
            if left <= 0:
                self._fail()
                past = "submission's" if limit >= self.deadline else "request's"
                raise WorkerGone(f"no answer within the {past} time limit")
            ready, _, _ = select.select([self._from_worker], [], [], min(left, 1.0))
            if not ready:
                if self.proc is not None and self.proc.poll() is not None:
                    self._fail()
                    raise WorkerGone("the worker ended")
                continue
            chunk = os.read(self._from_worker, 1 << 20)
            if not chunk:
                self._fail()
                raise WorkerGone("the worker ended")
            self._buf += chunk
            if len(self._buf) > channel.MAX_MESSAGE:
                self._fail()
                raise WorkerGone("the worker sent more than the channel's message limit")
        line = bytes(self._buf[:end])
        del self._buf[: end + 1]
        return line

    def cell(self, source: str, seconds: float) -> dict[str, Any]:
        """Run one cell; once it has answered, it is replayed after a restart."""
        reply = self.request({"op": "cell", "source": source, "seconds": seconds}, seconds)
        self.ran.append(source)  # a cell that hung or killed the worker is not replayed
        return reply
