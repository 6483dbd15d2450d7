"""The OS sandbox a submission's worker runs in: bubblewrap, a seccomp filter and resource limits.

Each submission gets its own ``bwrap`` (Debian's ``bubblewrap``) with

* every namespace of its own (``--unshare-all``): no network (a loopback of its
  own, with nothing listening), a PID namespace whose processes all die with it,
  its own IPC, hostname and user (uid 65534 inside);
* a read-only view of the system and of the Python environment, and nothing
  else of the machine: no home, no repository, no other submission, no
  instructor source, no gradebook, no seed;
* a private, size-limited scratch (``/submission``, ``/tmp``, ``/dev/shm`` are
  tmpfs) holding only its own copy of its notebook, read-only;
* a seccomp filter that refuses to create processes (threads are allowed:
  numpy and torch need them), so no fork bomb and no child outlives it;
* limits on address space (memory), CPU time, file size and open files
  (``setrlimit``, inherited by the sandbox; the CPU time is what is left of the
  submission's, :mod:`.session`), and wall-clock backstops the grader enforces by
  killing it.

:func:`problem` says why the sandbox cannot run here (bubblewrap missing, user
namespaces refused); the grader then refuses to grade untrusted work unless the
instructor passes ``--no-sandbox``. :func:`stage` prepares the read-only copy of
attnlib the worker imports, in which the course's own reference for what an
exercise asks the learner to write is switched off (see
:data:`attnlib.grading.cases.EXERCISES` and the README).
"""

from __future__ import annotations

import ast
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Limits", "command", "problem", "seccomp_filter", "stage"]

PACKAGE = Path(__file__).resolve().parents[1]
WORK = "/submission"
STAGE = "/opt/attnlib"
VENV = "/opt/venv"
UID = 65534


@dataclass(frozen=True)
class Limits:
    """What one worker may use (``cpu_seconds``: one submission, all its workers together)."""

    memory_bytes: int = 3 * 2**30
    cpu_seconds: int = 300
    file_bytes: int = 16 * 2**20
    open_files: int = 256
    scratch_bytes: int = 64 * 2**20


# --------------------------------------------------------------------------- seccomp
_SYSCALLS = {  # (audit arch, clone, clone3, fork, vfork) per machine
    "x86_64": (0xC000003E, 56, 435, 57, 58),
    "aarch64": (0xC00000B7, 220, 435, None, None),
}
_CLONE_THREAD = 0x00010000


def seccomp_filter(machine: str | None = None) -> bytes | None:
    """A classic-BPF seccomp program that lets threads start but no process.

    ``clone`` without ``CLONE_THREAD``, ``fork`` and ``vfork`` fail with EPERM;
    ``clone3`` fails with ENOSYS (its flags cannot be read by a filter, and the
    C library then falls back to ``clone``); any other architecture's calls kill
    the process. None where this machine's numbers are not known.
    """
    spec = _SYSCALLS.get(machine or platform.machine())
    if spec is None:
        return None
    arch, clone, clone3, fork, vfork = spec
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, kill, errno = 0x7FFF0000, 0x80000000, 0x00050000
    eperm, enosys = errno | 1, errno | 38

    def op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
        return struct.pack("=HBBI", code, jt, jf, k)

    prog = [op(ld, 4), op(jeq, arch, 1, 0), op(ret, kill), op(ld, 0)]
    prog += [op(jge, 0x40000000, 0, 1), op(ret, eperm)]  # x32 system calls
    prog += [op(jeq, clone3, 0, 1), op(ret, enosys)]
    for nr in (fork, vfork):
        if nr is not None:
            prog += [op(jeq, nr, 0, 1), op(ret, eperm)]
    prog += [op(jeq, clone, 0, 3), op(ld, 16), op(jset, _CLONE_THREAD, 1, 0), op(ret, eperm)]
    prog += [op(ret, allow)]
    return b"".join(prog)


# --------------------------------------------------------------------------- the staged package
_OFF = """raise NotImplementedError(
    "attnlib's {name} is switched off while {exercise} is graded: this exercise asks "
    "you to write it yourself (README, 'What using attnlib earns')"
)"""


def _switch_off(source: str, names: Sequence[str], exercise: str) -> str:
    """The module's source with the bodies of ``names`` (``f`` or ``Class.method``) raising."""
    tree = ast.parse(source)
    wanted = set(names)
    found: set[str] = set()

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + node.name
                if name in wanted:
                    stub = ast.parse(_OFF.format(name=name, exercise=exercise)).body
                    node.body = stub
                    found.add(name)
            elif isinstance(node, ast.ClassDef):
                visit(node.body, prefix + node.name + ".")

    visit(tree.body, "")
    missing = wanted - found
    if missing:
        raise ValueError(f"cannot switch off {sorted(missing)}: not defined in the module")
    return ast.unparse(tree) + "\n"


_GRADING_INIT = '''"""The sandbox's attnlib.grading: channel, worker, checks that do nothing."""


def student_notebook(name):
    """While grading, the notebook's own checks do nothing: the grader runs its own."""
    from attnlib.grading.worker import _NoChecks

    return _NoChecks()
'''


def _split_qualified(qualified: str) -> tuple[str, str]:
    """``"transformer.qkv.f"`` → ``("transformer.qkv", "f")``: the longest module prefix.

    Raises
    ------
    ValueError
        If no prefix of ``qualified`` names a module of attnlib.
    """
    parts = qualified.split(".")
    for k in range(len(parts) - 1, 0, -1):
        if (PACKAGE.joinpath(*parts[:k]).with_suffix(".py")).is_file():
            return ".".join(parts[:k]), ".".join(parts[k:])
    raise ValueError(f"no attnlib module named in {qualified!r}")


def stage(dest: Path, exercise: str, switched_off: Sequence[str]) -> Path:
    """Write the attnlib the worker imports into ``dest`` and return ``dest``.

    The copy holds the package's modules, its wings' included, and its ``grading``
    channel and worker, never the trusted side (cases, grader, build) nor the public
    checks; in it every name of ``switched_off`` (``"core.softmax"``,
    ``"models.AdditiveAttention.scores"``, ``"transformer.qkv.scaled_dot_product_attention"``)
    raises a NotImplementedError that says why.
    """
    pkg = dest / "attnlib"
    (pkg / "grading").mkdir(parents=True, exist_ok=True)
    by_module: dict[str, list[str]] = {}
    for qualified in switched_off:
        module, name = _split_qualified(qualified)
        by_module.setdefault(module, []).append(name)
    for src in sorted(PACKAGE.rglob("*.py")):
        rel = src.relative_to(PACKAGE)
        if rel.parts[0] == "grading":
            continue
        text = src.read_text()
        module = ".".join(rel.with_suffix("").parts)
        if module in by_module:
            text = _switch_off(text, by_module.pop(module), exercise)
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    if by_module:
        raise ValueError(f"no attnlib module named {sorted(by_module)}")
    for name in ("channel.py", "worker.py"):
        shutil.copyfile(PACKAGE / "grading" / name, pkg / "grading" / name)
    (pkg / "grading" / "__init__.py").write_text(_GRADING_INIT)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dest


# --------------------------------------------------------------------------- bwrap
def _system_binds() -> list[str]:
    """Read-only binds of the system and of this Python, and nothing else of the host."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / top
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for etc in ("/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives"):
        args += ["--ro-bind-try", etc, etc]
    if _in_venv():  # the environment at a fixed path, wherever the host keeps it (/tmp...)
        args += ["--ro-bind", sys.prefix, VENV]
    seen: set[str] = set()
    for prefix in (sys.base_prefix, sys.base_exec_prefix):
        real = os.path.realpath(prefix)
        for p in {prefix, real}:
            if p not in seen and not p.startswith("/usr"):
                seen.add(p)
                args += ["--ro-bind", p, p]
    return args


def _in_venv() -> bool:
    return sys.prefix != sys.base_prefix


def python() -> str:
    """The interpreter the worker runs with, as the sandbox sees it: this one.

    A virtual environment is bound at :data:`VENV`, and its interpreter is started from
    there, so Python finds the environment's packages by its own ``pyvenv.cfg``.
    """
    if _in_venv():
        return f"{VENV}/bin/{Path(sys.executable).name}"
    return sys.executable


def command(
    stage_dir: Path, notebook_fd: int, notebook_name: str, seccomp_fd: int | None, limits: Limits
) -> list[str]:
    """The ``bwrap`` command line of one worker (see the module docstring)."""
    size = str(limits.scratch_bytes)
    cmd = [
        "bwrap",
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--uid",
        str(UID),
        "--gid",
        str(UID),
        "--hostname",
        "sandbox",
        # the scratch first: a host path below one of them (a venv in /tmp) is bound over it
        "--size",
        size,
        "--tmpfs",
        "/tmp",
        "--size",
        size,
        "--tmpfs",
        WORK,
        *_system_binds(),
        "--ro-bind",
        str(stage_dir),
        STAGE,
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        size,
        "--tmpfs",
        "/dev/shm",
        "--ro-bind-data",
        str(notebook_fd),
        f"{WORK}/{notebook_name}",
        "--remount-ro",
        "/dev",
        "--remount-ro",
        "/",
        "--chdir",
        WORK,
        "--cap-drop",
        "ALL",
        "--clearenv",
        *_env_args(),
    ]
    if seccomp_fd is not None:
        cmd += ["--seccomp", str(seccomp_fd)]
    return [*cmd, python(), "-I", f"{STAGE}/attnlib/grading/worker.py", STAGE]


def environment() -> dict[str, str]:
    """The worker's whole environment (nothing of the grader's: no seed, no paths)."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": WORK,
        "TMPDIR": "/tmp",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": "/tmp/mpl",
        "IPYTHONDIR": "/tmp/ipython",
        "XDG_CACHE_HOME": "/tmp/cache",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "LANG": "C.UTF-8",
    }


def _env_args() -> list[str]:
    return [a for k, v in environment().items() for a in ("--setenv", k, v)]


def rlimits(limits: Limits) -> Callable[[], None]:
    """A ``preexec_fn`` setting the limits the sandbox inherits."""

    def apply() -> None:
        import resource

        for what, value in (
            (resource.RLIMIT_AS, limits.memory_bytes),
            (resource.RLIMIT_CPU, limits.cpu_seconds),
            (resource.RLIMIT_FSIZE, limits.file_bytes),
            (resource.RLIMIT_NOFILE, limits.open_files),
            (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_NPROC, 64),  # not enforced for root; the seccomp filter is
        ):
            resource.setrlimit(what, (value, value))

    return apply


_PROBLEM: list[str | None] = []


def problem() -> str | None:
    """Why the sandbox cannot run on this machine, or None when it can (checked once).

    It starts a real sandbox with this module's own options and asks it to
    print its user id.
    """
    if _PROBLEM:
        return _PROBLEM[0]
    reason: str | None = None
    if shutil.which("bwrap") is None:
        reason = (
            "bubblewrap is not installed (`apt-get install bubblewrap`; `make test` installs it)"
        )
    else:
        with tempfile.TemporaryDirectory(prefix="attnlib-probe-") as tmp:
            stage_dir = Path(tmp)
            (stage_dir / "attnlib" / "grading").mkdir(parents=True)
            r, w = os.pipe()
            os.write(w, b"{}")
            os.close(w)
            cmd = command(stage_dir, r, "probe.ipynb", None, Limits())
            cmd = [*cmd[: cmd.index(python()) + 1], "-I", "-c", "import os; print(os.getuid())"]
            try:
                proc = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=300, pass_fds=(r,), check=False
                )
                out, err, code = proc.stdout.strip(), proc.stderr.strip(), proc.returncode
            except (OSError, subprocess.TimeoutExpired) as exc:
                out, err, code = "", str(exc), -1
            finally:
                os.close(r)
            if code != 0 or out != str(UID):
                reason = f"bubblewrap cannot create the sandbox here: {err[-300:] or out[-300:]}"
    _PROBLEM.append(reason)
    return reason
