"""The OS sandbox a submission's worker runs in: bubblewrap, a seccomp filter and resource limits.

Each worker gets its own ``bwrap`` (Debian's ``bubblewrap``), at least as tight as a
default Docker container:

* **every namespace of its own** (``--unshare-all``), a user namespace included
  (uid 65534 inside), in which no further user namespace can be made
  (``--disable-userns``): no network (a loopback of its own, with nothing
  listening), a PID namespace whose processes all die with it, its own IPC and
  hostname;
* **a read-only view** of the system and of the Python environment, and nothing
  else of the machine: no home, no repository, no other submission, no instructor
  source, no gradebook, no seed. A copy of attnlib installed in that environment
  (editable or not) is hidden under an empty folder: the worker imports only the
  attnlib it is given (:func:`stage`);
* **no host path in sight**: bwrap reads its options from a descriptor
  (``--args``), so the sandbox's ``/proc/1/cmdline`` names only the worker's own
  command; attnlib and the notebook are copied in (``--ro-bind-data``), not bound,
  so no path of the grading run (submissions, gradebook, staging folder) appears in
  its mount table either. What it can read of the host's layout is where the
  read-only Python environment lives;
* **a bounded scratch**: ``/submission``, ``/tmp`` and ``/dev/shm`` are tmpfs of
  ``Limits.scratch_bytes`` each; ``/`` and ``/dev`` are read-only;
* **a seccomp filter** (:func:`seccomp_filter`) that refuses to create processes
  (threads are allowed: numpy and torch need them) and refuses at least what
  Docker's default profile refuses: new namespaces (``unshare``, ``setns``,
  ``clone`` with a namespace flag), mounts of every kind, ``ptrace`` and
  ``process_vm_*``, ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring``,
  the key ring (``keyctl``, ``add_key``, ``request_key``), kernel modules,
  ``kexec``, ``reboot``, swap, clocks, NUMA policy, ``personality`` other than
  Linux's own, and any socket but Unix, IPv4 and IPv6 (no netlink, hence no
  netfilter; no packet sockets);
* **limits** on address space (memory), CPU time, file size and open files
  (``setrlimit``, inherited by the sandbox; the CPU time is what is left of the
  submission's, :mod:`.session`), and wall-clock backstops the grader enforces by
  killing it.

:func:`problem` says why the sandbox cannot run here (bubblewrap missing, user
namespaces refused); the grader then refuses to grade untrusted work unless the
instructor passes ``--no-sandbox``.

:func:`stage` makes the attnlib the worker imports, as a zip: for a question that
asks the learner to write something, only the modules the exercise's notebook needs
(:attr:`attnlib.grading.cases.Exercise.modules`, none for most) under an
``__init__`` that holds nothing; the course's reference for what the learner writes
is then not importable at all. For a question that tells the learner to use attnlib,
all of it. See the README, "What using attnlib earns".
"""

from __future__ import annotations

import ast
import io
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "DENIED",
    "Limits",
    "Stage",
    "command",
    "environment",
    "problem",
    "seccomp_filter",
    "stage",
]

PACKAGE = Path(__file__).resolve().parents[1]
WORK = "/submission"
STAGE = "/opt/attnlib.zip"
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

    def __post_init__(self) -> None:
        for name in ("memory_bytes", "cpu_seconds", "file_bytes", "open_files", "scratch_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"Limits.{name} must be a positive whole number, got {value!r}")


# --------------------------------------------------------------------------- seccomp
#: The system calls the filter refuses (EPERM), beyond process creation: Docker's default
#: profile and more. A name a machine does not have is skipped there.
DENIED = (
    # namespaces and mounts
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig",
    "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    # other processes' memory, and the kernel's own tracing and programs
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "process_madvise", "bpf", "perf_event_open", "userfaultfd", "fanotify_init",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    # the key ring
    "add_key", "keyctl", "request_key",
    # the machine: modules, kexec, reboot, swap, accounting, clocks, quotas, the kernel log
    "init_module", "finit_module", "delete_module", "create_module", "query_module",
    "get_kernel_syms", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff",
    "acct", "settimeofday", "clock_settime", "clock_adjtime", "quotactl", "quotactl_fd",
    "syslog", "vhangup", "iopl", "ioperm", "uselib", "ustat", "sysfs", "_sysctl",
    "lookup_dcookie", "nfsservctl", "name_to_handle_at", "open_by_handle_at",
    # NUMA placement
    "mbind", "set_mempolicy", "get_mempolicy", "move_pages", "migrate_pages",
    "set_mempolicy_home_node",
    # obsolete or unused
    "remap_file_pages", "memfd_secret", "landlock_create_ruleset", "tuxcall", "security",
    "afs_syscall", "getpmsg", "putpmsg", "vserver",
)  # fmt: skip

_X86_64 = {
    "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
    "chroot": 161, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "move_mount": 429, "open_tree": 428, "mount_setattr": 442, "ptrace": 101,
    "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "pidfd_getfd": 438,
    "process_madvise": 440, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
    "fanotify_init": 300, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "add_key": 248, "keyctl": 250, "request_key": 249,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "create_module": 174,
    "query_module": 178, "get_kernel_syms": 177, "kexec_load": 246, "kexec_file_load": 320,
    "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163, "settimeofday": 164,
    "clock_settime": 227, "clock_adjtime": 305, "quotactl": 179, "quotactl_fd": 443,
    "syslog": 103, "vhangup": 153, "iopl": 172, "ioperm": 173, "uselib": 134, "ustat": 136,
    "sysfs": 139, "_sysctl": 156, "lookup_dcookie": 212, "nfsservctl": 180,
    "name_to_handle_at": 303, "open_by_handle_at": 304, "mbind": 237, "set_mempolicy": 238,
    "get_mempolicy": 239, "move_pages": 279, "migrate_pages": 256,
    "set_mempolicy_home_node": 450, "remap_file_pages": 216, "memfd_secret": 447,
    "landlock_create_ruleset": 444, "tuxcall": 184, "security": 185, "afs_syscall": 183,
    "getpmsg": 181, "putpmsg": 182, "vserver": 236,
    "clone": 56, "clone3": 435, "fork": 57, "vfork": 58, "socket": 41, "personality": 135,
}  # fmt: skip
_AARCH64 = {  # asm-generic/unistd.h
    "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "move_mount": 429,
    "open_tree": 428, "mount_setattr": 442, "ptrace": 117, "process_vm_readv": 270,
    "process_vm_writev": 271, "kcmp": 272, "pidfd_getfd": 438, "process_madvise": 440,
    "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "fanotify_init": 262,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "add_key": 217,
    "keyctl": 219, "request_key": 218, "init_module": 105, "finit_module": 273,
    "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294, "reboot": 142,
    "swapon": 224, "swapoff": 225, "acct": 89, "settimeofday": 170, "clock_settime": 112,
    "clock_adjtime": 266, "quotactl": 60, "quotactl_fd": 443, "syslog": 116, "vhangup": 58,
    "lookup_dcookie": 18, "nfsservctl": 42, "name_to_handle_at": 264,
    "open_by_handle_at": 265, "mbind": 235, "set_mempolicy": 237, "get_mempolicy": 236,
    "move_pages": 239, "migrate_pages": 238, "set_mempolicy_home_node": 450,
    "remap_file_pages": 234, "memfd_secret": 447, "landlock_create_ruleset": 444,
    "clone": 220, "clone3": 435, "socket": 198, "personality": 92,
}  # fmt: skip
#: machine → (audit architecture, system call numbers)
_MACHINES = {"x86_64": (0xC000003E, _X86_64), "aarch64": (0xC00000B7, _AARCH64)}

_CLONE_THREAD = 0x00010000
#: CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
_CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000
_CLONE_NAMESPACES |= 0x20000000 | 0x40000000
#: socket families a worker may open: AF_UNIX, AF_INET, AF_INET6
_SOCKET_FAMILIES = (1, 2, 10)
#: personality values Docker allows: query (0xffffffff), PER_LINUX, UNAME26, ADDR_NO_RANDOMIZE
_PERSONALITIES = (0xFFFFFFFF, 0x0, 0x8, 0x20000, 0x20008)

_LD, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _KILL, _ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_EPERM, _ENOSYS, _EAFNOSUPPORT = 1, 38, 97


class _Program:
    """A classic-BPF program built from labelled jumps (jt/jf are 8-bit forward offsets)."""

    def __init__(self) -> None:
        self.ops: list[tuple[int, int, str | int, str | int]] = []
        self.labels: dict[str, int] = {}

    def op(self, code: int, k: int, jt: str | int = 0, jf: str | int = 0) -> None:
        self.ops.append((code, k, jt, jf))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.ops)

    def ret(self, value: int) -> None:
        self.op(_RET, value)

    def bytes(self) -> bytes:
        out = []
        for at, (code, k, jt, jf) in enumerate(self.ops):
            offsets = []
            for j in (jt, jf):
                off = j if isinstance(j, int) else self.labels[j] - at - 1
                if not 0 <= off <= 255:
                    raise ValueError(f"a seccomp jump of {off} instructions does not fit")
                offsets.append(off)
            out.append(struct.pack("=HBBI", code, offsets[0], offsets[1], k))
        return b"".join(out)


def seccomp_filter(machine: str | None = None) -> bytes | None:
    """The classic-BPF seccomp program of the sandbox (see the module docstring).

    Threads start, processes do not: ``clone`` needs ``CLONE_THREAD`` and no namespace
    flag, ``fork`` and ``vfork`` fail with EPERM, ``clone3`` with ENOSYS (its flags cannot
    be read by a filter, and the C library then falls back to ``clone``). Every call of
    :data:`DENIED` fails with EPERM; ``socket`` of a family other than Unix, IPv4 and IPv6
    with EAFNOSUPPORT; ``personality`` other than Docker's five values with EPERM. A call
    of another architecture (x86's 32-bit ones on x86-64) kills the process; an x32 call
    fails with EPERM. None where this machine's numbers are not known.
    """
    spec = _MACHINES.get(machine or platform.machine())
    if spec is None:
        return None
    arch, nr = spec
    p = _Program()
    p.op(_LD, 4)  # seccomp_data.arch
    p.op(_JEQ, arch, 1, 0)
    p.ret(_KILL)
    p.op(_LD, 0)  # seccomp_data.nr
    if "fork" in nr:  # x86-64: the x32 ABI's calls have bit 30 set
        p.op(_JGE, 0x40000000, "eperm", 0)
    for name in DENIED:
        if name in nr:
            p.op(_JEQ, nr[name], "eperm", 0)
    p.op(_JEQ, nr["clone3"], "enosys", 0)
    for name in ("fork", "vfork"):
        if name in nr:
            p.op(_JEQ, nr[name], "eperm", 0)
    p.op(_JEQ, nr["clone"], "clone", 0)
    p.op(_JEQ, nr["socket"], "socket", 0)
    p.op(_JEQ, nr["personality"], "personality", 0)
    p.ret(_ALLOW)
    p.label("clone")
    p.op(_LD, 16)  # the low 32 bits of the first argument: the flags
    p.op(_JSET, _CLONE_THREAD, 0, "eperm")
    p.op(_JSET, _CLONE_NAMESPACES, "eperm", 0)
    p.ret(_ALLOW)
    p.label("socket")
    p.op(_LD, 16)  # the family
    for family in _SOCKET_FAMILIES:
        p.op(_JEQ, family, "allow", 0)
    p.ret(_ERRNO | _EAFNOSUPPORT)
    p.label("personality")
    p.op(_LD, 16)
    for persona in _PERSONALITIES:
        p.op(_JEQ, persona, "allow", 0)
    p.label("eperm")
    p.ret(_ERRNO | _EPERM)
    p.label("enosys")
    p.ret(_ERRNO | _ENOSYS)
    p.label("allow")
    p.ret(_ALLOW)
    return p.bytes()


def syscall_numbers(machine: str | None = None) -> dict[str, int]:
    """The numbers :func:`seccomp_filter` uses on ``machine`` (empty where it knows none)."""
    spec = _MACHINES.get(machine or platform.machine())
    return dict(spec[1]) if spec else {}


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

_OWN_INIT = '''"""attnlib while {exercise} is graded: {held}.

The exercise asks you to write the course's reference yourself, so nothing else of attnlib
computes here: any other module imports, but each name in it is a stand-in that raises
NotImplementedError, saying why, when it is called or instantiated (README, "What using
attnlib earns"). A notebook's imports of attnlib thus run as they do in the learner's kernel.
"""

import importlib.abc
import importlib.machinery
import sys

_EXERCISE = {exercise!r}
_STAGED = {staged!r}
_MODULES = {every!r}


def _why(name):
    return (
        f"attnlib's {{name}} is not available while {{_EXERCISE}} is graded: this exercise "
        "asks you to write it yourself (README, 'What using attnlib earns')"
    )


def _absent(qualified):
    """A stand-in for attnlib's ``qualified``: calling it, or a class built on it, raises."""

    def __new__(cls, *args, **kwargs):
        raise NotImplementedError(_why(qualified))

    body = {{"__new__": __new__, "__doc__": _why(qualified), "__module__": "attnlib"}}
    return type(qualified.rpartition(".")[2], (), body)


def _module_getattr(prefix):
    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        if prefix + name in _MODULES:  # a module of attnlib: staged, or a stand-in
            import importlib

            return importlib.import_module("attnlib." + prefix + name)
        return _absent(prefix + name)

    return __getattr__


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__path__ = []
        module.__getattr__ = _module_getattr(module.__name__[len("attnlib.") :] + ".")


class _NotStaged(importlib.abc.MetaPathFinder):
    """Makes a stand-in module for every module of attnlib that is not staged."""

    def find_spec(self, name, path=None, target=None):
        if not name.startswith("attnlib.") or name.startswith("attnlib.grading"):
            return None
        if name[len("attnlib.") :] in _STAGED:
            return None
        return importlib.machinery.ModuleSpec(name, _Loader(), is_package=True)


sys.meta_path.insert(0, _NotStaged())
__getattr__ = _module_getattr("")
'''

_MAIN = '''"""The worker's entry point: ``python -I attnlib.zip IN OUT`` (grading/worker.py)."""

import sys

if __file__.rpartition("/")[0] not in sys.path:
    sys.path.insert(0, __file__.rpartition("/")[0])
from attnlib.grading.worker import main

raise SystemExit(main(sys.argv))
'''


def _modules() -> dict[str, Path]:
    """Every module of attnlib but grading: ``"core"``, ``"mt"`` (its package), ``"mt.data"``."""
    out = {}
    for src in sorted(PACKAGE.rglob("*.py")):
        rel = src.relative_to(PACKAGE)
        if rel.parts[0] == "grading" or "__pycache__" in rel.parts:
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts) or "__init__"] = src
    return out


def _imports(path: Path, known: Iterable[str]) -> set[str]:
    """The attnlib modules a file imports (``from attnlib.x import y``: x, and y if a module)."""
    names = set(known)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        dotted: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "attnlib" or node.module.startswith("attnlib."):
                base = node.module[len("attnlib.") :] if "." in node.module else ""
                dotted = [base] if base else []
                dotted += [f"{base}.{a.name}" if base else a.name for a in node.names]
        elif isinstance(node, ast.Import):
            dotted = [
                a.name[len("attnlib.") :] for a in node.names if a.name.startswith("attnlib.")
            ]
        for d in dotted:
            parts = d.split(".")
            found |= {".".join(parts[:k]) for k in range(1, len(parts) + 1)} & names
    return found


def closure(modules: Iterable[str]) -> list[str]:
    """``modules`` and every attnlib module they import, transitively, with their packages.

    Raises
    ------
    ValueError
        If a name is not a module of attnlib.
    """
    known = _modules()
    todo = list(modules)
    unknown = sorted(set(todo) - set(known))
    if unknown:
        raise ValueError(f"no attnlib module named {unknown}")
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:k]) for k in range(1, len(parts))]  # its packages
        todo += sorted(_imports(known[name], known) - seen)
    seen.discard("__init__")
    return sorted(seen)


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


@dataclass(frozen=True)
class Stage:
    """The attnlib a worker imports, as the bytes of a zip (see :func:`stage`)."""

    exercise: str
    modules: tuple[str, ...]  # the modules of attnlib it holds (beside grading)
    data: bytes = field(repr=False)

    def files(self) -> dict[str, str]:
        """Path in the zip → text (to read what the worker gets)."""
        with zipfile.ZipFile(io.BytesIO(self.data)) as z:
            return {n: z.read(n).decode() for n in z.namelist()}

    def write(self, dest: Path) -> Path:
        """The zip as a file ``dest`` (for a worker without the sandbox)."""
        dest.write_bytes(self.data)
        return dest


def stage(
    exercise: str, modules: Sequence[str] | None = None, switched_off: Sequence[str] = ()
) -> Stage:
    """The attnlib the worker imports while ``exercise`` is graded (a zip).

    Parameters
    ----------
    exercise : str
        Named in what a switched-off or missing part says.
    modules : sequence of str, optional
        None: all of attnlib (the course's own code, for a question that tells the
        learner to use it), with its own ``__init__``. Else only these modules and the
        attnlib modules they import, under an ``__init__`` that holds nothing: importing
        any other module of attnlib, or asking the package for a name, raises an error
        that says the exercise asks the learner to write it.
    switched_off : sequence of str
        Functions (``"models.Seq2Seq.greedy"``) whose bodies raise a NotImplementedError
        that says why, in the modules the zip holds (a name in a module it does not hold is
        absent anyway).

    Raises
    ------
    ValueError
        If a module or a switched-off name does not exist.

    The zip also holds the worker (``attnlib/grading/{channel,worker}.py``, a ``grading``
    package whose checks do nothing, and ``__main__.py``), never the trusted side (cases,
    grader, build) nor the public checks.
    """
    known = _modules()
    held = sorted(n for n in known if n != "__init__") if modules is None else closure(modules)
    by_module: dict[str, list[str]] = {}
    for qualified in switched_off:
        module, name = _split_qualified(qualified)
        by_module.setdefault(module, []).append(name)
    texts: dict[str, str] = {"__main__.py": _MAIN}
    for name in held:
        src = known[name]
        text = src.read_text()
        if name in by_module:
            text = _switch_off(text, by_module[name], exercise)
        texts[str(Path("attnlib") / src.relative_to(PACKAGE))] = text
    if modules is None:
        texts["attnlib/__init__.py"] = known["__init__"].read_text()
    else:
        what = f"only {', '.join(held)}" if held else "none of its modules"
        every = sorted(n for n in known if n != "__init__")
        texts["attnlib/__init__.py"] = _OWN_INIT.format(
            exercise=exercise, staged=sorted(held), held=what, every=every
        )
    texts["attnlib/grading/__init__.py"] = _GRADING_INIT
    for name in ("channel.py", "worker.py"):
        texts[f"attnlib/grading/{name}"] = (PACKAGE / "grading" / name).read_text()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(texts):  # fixed order and times: the same package, the same bytes
            info = zipfile.ZipInfo(path, date_time=(2000, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, texts[path])
    return Stage(exercise, tuple(held), buf.getvalue())


# --------------------------------------------------------------------------- bwrap
def _system_binds(prefix: str) -> list[str]:
    """Read-only binds of the system and of a Python, and nothing else of the host."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / top
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for etc in ("/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives"):
        args += ["--ro-bind-try", etc, etc]
    if prefix != sys.base_prefix:  # a virtual environment: at a fixed path, wherever it lives
        args += ["--ro-bind", prefix, VENV]
    seen: set[str] = set()
    for base in (sys.base_prefix, sys.base_exec_prefix):
        real = os.path.realpath(base)
        for p in {base, real}:
            if p not in seen and not p.startswith("/usr"):
                seen.add(p)
                args += ["--ro-bind", p, p]
    return args


def installed_copies(prefix: str) -> tuple[list[str], list[str]]:
    """(folders, files) of an attnlib installed in the environment ``prefix``, as the sandbox
    sees them: the package, its ``.dist-info``, an editable install's finder and ``.pth``.

    Every ``site-packages`` folder of the environment (and of the Python it is made from) is
    searched, for names that start with ``attnlib`` or ``__editable__`` and ``.pth`` files
    that mention attnlib.
    """
    folders: list[str] = []
    files: list[str] = []
    roots = [(prefix, VENV if prefix != sys.base_prefix else prefix)]
    roots += [(p, p) for p in {sys.base_prefix, os.path.realpath(sys.base_prefix)} - {prefix}]
    for host_root, inside in roots:
        for site_dir in sorted(Path(host_root).glob("lib*/python*/site-packages")):
            rel = site_dir.relative_to(host_root)
            if (Path(host_root) / rel.parts[0]).is_symlink():
                continue  # lib64 -> lib: the same folder, under its own name
            for entry in sorted(site_dir.iterdir(), key=lambda p: p.name):
                name = entry.name.lower()
                mentions = False
                if name.endswith(".pth") and entry.is_file():
                    try:
                        mentions = "attnlib" in entry.read_text(errors="replace").lower()
                    except OSError:
                        mentions = False
                if not (name.startswith(("attnlib", "__editable__")) or mentions):
                    continue
                where = str(Path(inside) / rel / entry.name)
                if entry.is_dir() and not entry.is_symlink():
                    folders.append(where)
                else:
                    files.append(where)
    return folders, files


def python(prefix: str | None = None) -> str:
    """The interpreter the worker runs with, as the sandbox sees it: this one.

    A virtual environment is bound at :data:`VENV`, and its interpreter is started from
    there, so Python finds the environment's packages by its own ``pyvenv.cfg``.
    """
    prefix = sys.prefix if prefix is None else prefix
    if prefix != sys.base_prefix:
        return f"{VENV}/bin/{Path(sys.executable).name}"
    return sys.executable


@dataclass(frozen=True)
class Command:
    """A worker's ``bwrap``: ``argv`` holds no host path; ``options`` go in through ``--args``.

    ``data`` are the contents copied into the sandbox, each on a descriptor the caller
    opens: destination → bytes (``--ro-bind-data``), in the order ``options`` name them
    (``{fd:N}`` placeholders, ``N`` the index in ``data``). :meth:`resolve` fills them in.
    """

    argv: list[str]
    options: list[str]
    data: list[bytes] = field(repr=False)

    def resolve(self, args_fd: int) -> list[str]:
        """The argv to run, ``bwrap --args ARGS_FD PYTHON -I STAGE``, once the options are open."""
        return [self.argv[0], "--args", str(args_fd), *self.argv[1:]]

    def options_bytes(self, data_fds: Sequence[int]) -> bytes:
        """The options as bwrap reads them from ``--args``: NUL-separated, descriptors filled."""
        filled = [
            str(data_fds[int(o[4:-1])]) if o.startswith("{fd:") and o.endswith("}") else o
            for o in self.options
        ]
        return b"".join(o.encode() + b"\0" for o in filled)


def command(
    stage_zip: bytes,
    notebook: bytes,
    notebook_name: str,
    seccomp: bytes | None,
    limits: Limits,
    *,
    prefix: str | None = None,
) -> Command:
    """The ``bwrap`` of one worker (see the module docstring).

    ``stage_zip`` (:func:`stage`) and ``notebook`` are copied into the sandbox at
    :data:`STAGE` and ``/submission/<notebook_name>``; ``seccomp`` is the filter's program;
    ``prefix`` the Python environment to bind (default: this one's).
    """
    prefix = sys.prefix if prefix is None else prefix
    size = str(limits.scratch_bytes)
    data: list[bytes] = [stage_zip, notebook]
    opts = [
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--assert-userns-disabled",
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
        *_system_binds(prefix),
    ]
    folders, files = installed_copies(prefix)
    for folder in folders:  # an attnlib installed in the environment: an empty folder
        opts += ["--size", "4096", "--tmpfs", folder, "--remount-ro", folder]
    for path in files:
        data.append(b"")
        opts += ["--ro-bind-data", f"{{fd:{len(data) - 1}}}", path]
    opts += [
        "--ro-bind-data",
        "{fd:0}",
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
        "{fd:1}",
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
    if seccomp is not None:
        data.append(seccomp)
        opts += ["--seccomp", f"{{fd:{len(data) - 1}}}"]
    return Command(["bwrap", python(prefix), "-I", STAGE], opts, data)


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


def memfd(name: str, data: bytes) -> int:
    """A descriptor (above 9, close-on-exec) of an anonymous file holding ``data``, at its start."""
    import fcntl

    fd = os.memfd_create(name)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


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
        probe = stage("probe", modules=())
        cmd = command(probe.data, b"{}", "probe.ipynb", seccomp_filter(), Limits())
        fds = [memfd("data", d) for d in cmd.data]
        args_fd = memfd("args", cmd.options_bytes(fds))
        argv = [*cmd.resolve(args_fd)[:-2], "-I", "-c", "import os; print(os.getuid())"]
        try:
            proc = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=300,  # a backstop: the probe ends in well under a second
                pass_fds=(args_fd, *fds),
                check=False,
            )
            out, err, code = proc.stdout.strip(), proc.stderr.strip(), proc.returncode
        except (OSError, subprocess.TimeoutExpired) as exc:
            out, err, code = "", str(exc), -1
        finally:
            for fd in (args_fd, *fds):
                os.close(fd)
        if code != 0 or out != str(UID):
            reason = f"bubblewrap cannot create the sandbox here: {err[-300:] or out[-300:]}"
    _PROBLEM.append(reason)
    return reason


def unsandboxed_scratch() -> str:
    """A private folder for a worker run without the sandbox (``--no-sandbox``)."""
    return tempfile.mkdtemp(prefix="attnlib-unsandboxed-")
