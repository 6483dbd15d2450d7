"""attnlib.grading, the trusted side: the channel, the sandbox, one worker's session, the grader's rules.

The hostile class is tests/grading/test_hostile.py; the wrong-but-plausible and the fair answers are
tests/grading/test_variants.py and tests/grading/test_grading_torch.py.
"""

from __future__ import annotations

import csv
import json
import math
import os
import select
import signal
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

import nbformat
import numpy as np
import pytest

from attnlib.grading import cases, channel, grader, reader, sandbox, session
from attnlib.grading.__main__ import main as cli
from attnlib.grading.questions import EXERCISES
from conftest import EXERCISES as EXERCISE_DIR
from conftest import SOLUTIONS

SEED = "grader-test-7c4e0b2d9a1f3865"  # a fixed seed the grader accepts (90 bits by its count)
EX1 = EXERCISES["01_masked_softmax"]


# --------------------------------------------------------------------------- the channel
def test_a_message_round_trips_with_non_finite_numbers_in_arrays():
    msg = {"id": 3, "ok": True, "value": channel.array((2,), "float64", [math.nan, -math.inf])}
    back = channel.from_line(channel.to_line(msg).rstrip(b"\n"))
    shape, dtype, values = channel.read_array(back["value"])
    assert (shape, dtype) == ((2,), "float64")
    assert math.isnan(values[0])
    assert values[1] == -math.inf


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b'{"value": NaN}', "not plain JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b"\xff\xfe", "not a JSON message"),
        (b'{"a":' * 200 + b"1" + b"}" * 200, "100 levels"),
        (b'{"n": ' + b"9" * 5000 + b"}", "not a JSON message"),
    ],
)
def test_the_channel_refuses_anything_but_plain_json_objects(line, why):
    with pytest.raises(channel.ChannelError, match=why):
        channel.from_line(line)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ({"array": {"shape": [3], "dtype": "f", "data": [1, 2]}}, "cannot carry"),
        ({"array": {"shape": [-1], "dtype": "f", "data": []}}, "non-negative"),
        ({"array": {"shape": [1], "dtype": "f", "data": ["import os"]}}, "must be a number"),
        ({"array": {"shape": [1], "dtype": "f", "data": [[1.0]]}}, "must be a number"),
        ({"tuple": []}, "not an array"),
    ],
)
def test_an_array_that_does_not_add_up_is_refused(value, why):
    with pytest.raises(channel.ChannelError, match=why):
        channel.read_array(value)


# --------------------------------------------------------------------------- the sandbox
def test_the_seccomp_filter_is_whole_instructions_and_known_machines_only():
    prog = sandbox.seccomp_filter("x86_64")
    assert prog is not None
    assert len(prog) % 8 == 0
    assert len(sandbox.DENIED) < len(prog) // 8 < 255
    assert sandbox.seccomp_filter("aarch64") is not None
    assert sandbox.seccomp_filter("sparc") is None


def test_the_filter_names_every_call_dockers_default_profile_refuses():
    # Docker's default profile (moby/profiles/seccomp/default.json) refuses these without a
    # capability; the sandbox grants none, so each must be in the filter's list
    docker = {
        "acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module",
        "delete_module", "finit_module", "get_kernel_syms", "get_mempolicy", "init_module",
        "ioperm", "iopl", "kcmp", "kexec_file_load", "kexec_load", "keyctl", "lookup_dcookie",
        "mbind", "mount", "move_pages", "name_to_handle_at", "nfsservctl", "open_by_handle_at",
        "perf_event_open", "pivot_root", "process_vm_readv", "process_vm_writev", "ptrace",
        "query_module", "quotactl", "reboot", "request_key", "set_mempolicy", "setns",
        "settimeofday", "swapon", "swapoff", "sysfs", "_sysctl", "umount2", "unshare",
        "uselib", "userfaultfd", "ustat", "io_uring_setup", "io_uring_enter",
        "io_uring_register", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount",
        "open_tree", "mount_setattr", "chroot", "syslog", "vhangup", "fanotify_init",
    }  # fmt: skip
    assert docker <= set(sandbox.DENIED)
    numbers = sandbox.syscall_numbers("x86_64")
    assert not [n for n in sandbox.DENIED if n not in numbers]  # every one has its number


def test_a_question_the_learner_writes_gets_an_attnlib_that_computes_nothing():
    own = sandbox.stage("01_masked_softmax", modules=())
    files = own.files()
    assert own.modules == ()
    assert sorted(files) == [
        "__main__.py",
        "attnlib/__init__.py",
        "attnlib/grading/__init__.py",
        "attnlib/grading/channel.py",
        "attnlib/grading/worker.py",
    ]  # no case, no seed, no grader, no public check, no module of the course
    init = files["attnlib/__init__.py"]
    assert "_EXERCISE = '01_masked_softmax'" in init
    assert "is not available while {_EXERCISE} is graded" in init
    assert "def softmax" not in init


def test_exercise_6_gets_the_models_and_their_imports_with_the_greedy_decoder_switched_off():
    ex = EXERCISES["06_decoding"]
    own = sandbox.stage(ex.name, ex.modules, ex.switched_off)
    assert set(own.modules) == set(sandbox.closure(ex.modules))
    assert {"models", "vocab"} <= set(own.modules)
    assert not {"decoding", "train", "pretrained", "evidence", "core"} & set(own.modules)
    models = own.files()["attnlib/models.py"]
    assert "attnlib's Seq2Seq.greedy is switched off while 06_decoding is graded" in models


def test_a_question_that_uses_attnlib_gets_all_of_it():
    course = sandbox.stage("03_context_entropy")
    files = course.files()
    assert {"core", "models", "decoding", "transformer.qkv"} <= set(course.modules)
    assert "switched off" not in "".join(files.values())
    assert not [f for f in files if f.startswith("attnlib/grading/") and "questions" in f]


def test_staging_refuses_a_name_that_does_not_exist():
    with pytest.raises(ValueError, match="cannot switch off"):
        sandbox.stage("x", ("core",), ["core.no_such_function"])
    with pytest.raises(ValueError, match="no attnlib module"):
        sandbox.stage("x", ("nowhere",))
    with pytest.raises(ValueError, match="no attnlib module"):
        sandbox.stage("x", (), ["nowhere.f"])


def test_bubblewrap_runs_here():
    # make test installs bubblewrap (Makefile, target sandbox): on this machine it must work
    assert sandbox.problem() is None


def test_the_bwrap_command_line_names_no_host_path():
    cmd = sandbox.command(b"zip", b"{}", "nb.ipynb", sandbox.seccomp_filter(), sandbox.Limits())
    argv = cmd.resolve(99)
    assert argv[:3] == ["bwrap", "--args", "99"]
    assert all(not a.startswith("/") or a.startswith(("/opt/", "/usr/")) for a in argv[3:])
    options = cmd.options_bytes(list(range(10, 10 + len(cmd.data)))).split(b"\0")
    assert b"--disable-userns" in options
    assert b"--unshare-user" in options


@pytest.fixture(scope="module")
def stage():
    return sandbox.stage("01_masked_softmax", modules=())


def _session(stage, **kw):
    return session.Session(
        stage, b'{"cells": []}', "01_masked_softmax.ipynb", sandbox.Limits(), **kw
    )


def _look(stage, source, limits=None):
    """Run ``source`` (a cell defining ``look()``) in a sandbox and return what look() returns
    (a dict travels as its list of pairs: the channel carries no dict of the learner's)."""
    s = session.Session(stage, b'{"cells": []}', "x.ipynb", limits or sandbox.Limits())
    try:
        reply = s.cell(source + "\n_look = look\nlook = lambda: _pairs(_look())\n" + _PAIRS, 30)
        assert reply["ok"], reply
        got = grader._Probe(s, 30).call("look")
    finally:
        s.close()
    if isinstance(got, dict) and "pairs" in str(got)[:20]:
        return {k: v for k, v in (p["tuple"] for p in got["tuple"][1])}
    return got


_PAIRS = """
def _pairs(value):
    if isinstance(value, dict):
        return ("pairs", [(str(k), _pairs(v)) for k, v in value.items()])
    return value
"""


@pytest.mark.slow
def test_a_worker_sees_only_its_notebook_and_no_network(stage, tmp_path):
    seen = _look(
        stage,
        "import os, socket\n"
        "def look():\n"
        "    out = [sorted(os.listdir('.')), os.getuid(), os.path.exists("
        + repr(str(tmp_path))
        + ")]\n"
        "    try:\n"
        "        socket.create_connection(('1.1.1.1', 80), timeout=2)\n"
        "        out.append('network')\n"
        "    except OSError:\n"
        "        out.append('no network')\n"
        "    try:\n"
        "        os.fork()\n"
        "        out.append('forked')\n"
        "    except OSError:\n"
        "        out.append('no fork')\n"
        "    return out\n",
    )
    assert seen == [["x.ipynb"], sandbox.UID, False, "no network", "no fork"]


_SYSCALLS = """
import ctypes, errno, os, socket, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, *args):
    if libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args]) == -1:
        return errno.errorcode[ctypes.get_errno()]
    return "ok"
def sock(family, kind, proto=0):
    try:
        socket.socket(family, kind, proto).close()
        return "ok"
    except OSError as err:
        return errno.errorcode[err.errno]
def look():
    out = {name: call(nr) for name, nr in NUMBERS.items()}
    out["unshare_user"] = call(NUMBERS["unshare"], 0x10000000)
    out["personality_query"] = call(NUMBERS["personality"], 0xFFFFFFFF)
    out["personality_exec"] = call(NUMBERS["personality"], 0x0400000)
    out["netlink"] = sock(16, socket.SOCK_RAW, 12)
    out["packet"] = sock(17, socket.SOCK_RAW)
    out["inet"] = sock(socket.AF_INET, socket.SOCK_DGRAM)
    out["unix"] = sock(socket.AF_UNIX, socket.SOCK_STREAM)
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
    out["thread"] = "ok"
    with open("/proc/sys/user/max_user_namespaces") as f:
        out["max_user_namespaces"] = f.read().strip()
    return out
"""


@pytest.mark.slow
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the numbers below are x86-64's")
def test_the_kernel_refuses_what_a_default_container_refuses(stage):
    """Each call of the filter's list fails with EPERM (before the kernel looks at its
    arguments, all 0 here), no user namespace can be made, no socket but Unix and IP."""
    numbers = {n: v for n, v in sandbox.syscall_numbers().items() if n in sandbox.DENIED}
    numbers["unshare"] = sandbox.syscall_numbers()["unshare"]
    numbers["personality"] = sandbox.syscall_numbers()["personality"]
    got = _look(stage, f"NUMBERS = {numbers!r}\n" + _SYSCALLS)
    refused = {n for n in sandbox.DENIED if n in numbers}
    assert {n: got[n] for n in refused} == dict.fromkeys(refused, "EPERM")
    assert got["unshare_user"] == "EPERM"
    assert got["personality_query"] == "ok"
    assert got["personality_exec"] == "EPERM"
    assert (got["netlink"], got["packet"]) == ("EAFNOSUPPORT", "EAFNOSUPPORT")
    assert (got["inet"], got["unix"], got["thread"]) == ("ok", "ok", "ok")


_USERNS = """
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
for flags in (0x10000000, 0x10000000 | 0x00020000, 0x10000000 | 0x40000000):
    ok = libc.unshare(flags) == 0
    print("made" if ok else errno.errorcode[ctypes.get_errno()])
"""


@pytest.mark.slow
def test_no_user_namespace_can_be_made_in_the_sandbox_even_without_the_filter():
    """--disable-userns: the sandbox's own user namespace admits no other, so no nested
    namespace (and no mount of one's own in it) whatever the seccomp filter lets through."""
    out = _run_in_sandbox(sys.prefix, _USERNS, seccomp=False)
    assert out[:3] == ["ENOSPC"] * 3  # the namespace count limit of the sandbox is reached
    assert _run_in_sandbox(sys.prefix, _USERNS)[:3] == ["EPERM"] * 3  # and the filter refuses


_PLACES = """
import os
def look():
    out = {}
    for path in ("/tmp", "/submission", "/dev/shm"):
        st = os.statvfs(path)
        out[path] = st.f_blocks * st.f_frsize
    for path in ("/", "/dev", "/opt", "/usr", "/opt/venv", "/proc/sys/kernel"):
        try:
            with open(os.path.join(path, "x"), "w") as f:
                f.write("x")
            out["write " + path] = "ok"
        except OSError as err:
            out["write " + path] = type(err).__name__
    writable = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            where, options = fields[4], fields[5].split(",")
            fstype = fields[fields.index("-") + 1]
            if "rw" in options and fstype == "tmpfs":
                writable.append(where)
    out["rw tmpfs"] = sorted(writable)
    return out
"""


@pytest.mark.slow
def test_every_place_a_worker_can_write_is_bounded(stage):
    limits = sandbox.Limits(scratch_bytes=8 * 2**20)
    got = _look(stage, _PLACES, limits)
    for path in ("/tmp", "/submission", "/dev/shm"):
        assert 0 < got[path] <= limits.scratch_bytes, path
    for path in ("/", "/dev", "/opt", "/usr", "/opt/venv", "/proc/sys/kernel"):
        assert got["write " + path] != "ok", path
    assert got["rw tmpfs"] == ["/dev/shm", "/submission", "/tmp"]


_PATHS = """
import os
def look():
    texts = {}
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        for what in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{what}", "rb") as f:
                    texts[f"{pid}/{what}"] = f.read().decode("utf-8", "replace")
            except OSError:
                pass
    with open("/proc/self/mountinfo") as f:
        texts["mountinfo"] = f.read()
    return texts
"""


@pytest.mark.slow
def test_no_path_of_the_grading_run_is_visible_in_the_sandbox(stage, tmp_path):
    """bwrap reads its options from a descriptor and copies the notebook and attnlib in: no
    process's command line or environment names a host path, and the mount table names none
    of the run's (only where the read-only Python environment lives)."""
    texts = _look(stage, _PATHS)
    cmdline = texts["1/cmdline"].split("\0")
    assert cmdline[:3] == ["bwrap", "--args", cmdline[2]]
    host = [os.path.realpath(sys.prefix), str(tmp_path), os.getcwd(), "attnlib-stage"]
    for where, text in texts.items():
        if where != "mountinfo":
            assert not [h for h in host if h in text], where
    assert str(tmp_path) not in texts["mountinfo"]
    assert "attnlib-stage" not in texts["mountinfo"]
    # A host folder under the temporary directory is bound in only where the Python
    # environment lives (a checkout under /tmp has its .venv there), never a staging folder.
    env = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}
    temp = tempfile.gettempdir().rstrip("/") + "/"
    for line in texts["mountinfo"].splitlines():
        root = line.split()[3]  # the host path a bind mount shows
        if root.startswith(temp):
            assert any(root == e or root.startswith(e + "/") for e in env), line


_FIND = """
import importlib.metadata, importlib.util, sys
print(sys.prefix, importlib.util.find_spec("attnlib") is None)
try:
    version = importlib.metadata.version("attnlib")  # None: a .dist-info with nothing in it
except importlib.metadata.PackageNotFoundError:
    version = None
print("version", version)
try:
    import attnlib.core
    print("core", attnlib.core.__file__)
except ImportError:
    print("no core")
"""


def _run_in_sandbox(prefix: str, code: str, *, seccomp: bool = True) -> list[str]:
    program = sandbox.seccomp_filter() if seccomp else None
    cmd = sandbox.command(b"", b"{}", "x.ipynb", program, sandbox.Limits(), prefix=prefix)
    fds = [sandbox.memfd("data", d) for d in cmd.data]
    args_fd = sandbox.memfd("args", cmd.options_bytes(fds))
    argv = [*cmd.resolve(args_fd)[:-2], "-I", "-c", code]
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, pass_fds=(args_fd, *fds), timeout=300,
            check=False,
        )  # fmt: skip
    finally:
        for fd in (args_fd, *fds):
            os.close(fd)
    assert proc.returncode == 0, proc.stderr[-600:]
    return proc.stdout.split("\n")


@pytest.mark.slow
def test_an_attnlib_installed_in_the_environment_is_hidden_editable_or_not(tmp_path):
    """A regular install (the package and its .dist-info in site-packages) and an editable one
    (a .pth and a finder) are both hidden under empty folders and files: the worker imports
    only the attnlib it is given."""
    env = tmp_path / "venv"
    venv.create(env, with_pip=False, symlinks=True)
    (site,) = (env / "lib").glob("python*/site-packages")
    (site / "attnlib").mkdir()
    (site / "attnlib" / "__init__.py").write_text("")
    (site / "attnlib" / "core.py").write_text("def softmax(e):\n    return 'installed'\n")
    meta = site / "attnlib-0.1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: attnlib\nVersion: 0.1.0\n")
    (site / "__editable__.attnlib-0.1.0.pth").write_text(f"{tmp_path / 'elsewhere'}\n")
    folders, files = sandbox.installed_copies(str(env))
    mine = sorted(Path(f).name for f in folders if f.startswith(sandbox.VENV))
    assert mine == ["attnlib", "attnlib-0.1.0.dist-info"]
    assert [Path(f).name for f in files if f.startswith(sandbox.VENV)] == [
        "__editable__.attnlib-0.1.0.pth"
    ]
    out = _run_in_sandbox(str(env), _FIND)
    assert out[0].split() == [sandbox.VENV, "False"]  # an empty folder: a namespace, no code
    assert out[1:3] == ["version None", "no core"]
    out = _run_in_sandbox(sys.prefix, _FIND)  # this environment, where attnlib is editable
    assert out[1:3] == ["version None", "no core"]


@pytest.mark.slow
def test_the_staged_attnlib_says_why_a_reference_is_not_there(stage):
    seen = _look(
        stage,
        "import attnlib as al\n"
        "from attnlib.transformer import qkv\n"
        "def look():\n"
        "    out = []\n"
        "    for f in (lambda: al.softmax([1.0]), lambda: qkv.bahdanau_as_qkv(1, 2, 3, 4)):\n"
        "        try:\n"
        "            f()\n"
        "        except NotImplementedError as err:\n"
        "            out.append(str(err))\n"
        "    return out\n",
    )
    assert len(seen) == 2
    assert all("is not available while 01_masked_softmax is graded" in s for s in seen)


#: A cell that switches off every timer the worker could set on it, then spins forever.
DEAF_SPIN = (
    "import signal\n"
    "for _sig in (signal.SIGALRM, signal.SIGPROF, signal.SIGVTALRM):\n"
    "    signal.signal(_sig, signal.SIG_IGN)\n"
    "for _timer in (signal.ITIMER_REAL, signal.ITIMER_PROF, signal.ITIMER_VIRTUAL):\n"
    "    signal.setitimer(_timer, 0)\n"
    "while True:\n"
    "    pass\n"
)


@pytest.mark.slow
def test_an_endless_loop_is_stopped_by_the_workers_cpu_timer_and_the_worker_goes_on(stage):
    s = _session(stage)
    try:
        s.cell("x = 41\ndef f():\n    return x + 1", 5)
        reply = s.cell("while True:\n    pass", 0.5)  # never ends: only the limit stops it
        assert reply["ok"] is False
        assert reply["error"]["type"] == "TimeoutError"
        assert "endless loop" in reply["error"]["message"]
        assert grader._Probe(s, 5).call("f") == 42
        assert s.starts == 1  # the same worker answered
    finally:
        s.close()


@pytest.mark.slow
def test_a_cell_that_will_not_stop_is_killed_and_the_worker_restarted_without_it(stage):
    s = _session(stage)
    try:
        s.cell("x = 41\ndef f():\n    return x + 1", 5)
        with pytest.raises(session.WorkerGone, match="request's CPU time limit of 1 s"):
            s.cell(DEAF_SPIN, 1)
        assert s.proc is None
        assert s.cpu_used() >= 1 + session.CPU_SLACK  # what it ran for: CPU time, not a clock
        assert grader._Probe(s, 5).call("f") == 42  # a fresh worker, the first cell replayed
        assert s.starts == 2
        assert len(s.ran) == 1
    finally:
        s.close()


@pytest.mark.slow
def test_a_cell_that_waits_forever_is_ended_by_the_wall_clock_backstop(stage):
    """A sleep uses no CPU time: only the request's wall-clock backstop ends it, and the
    note says which limit it was."""
    s = _session(stage)
    try:
        s.cell("import threading", 5)
        with pytest.raises(session.WorkerGone, match="request's wall-clock backstop of 10 s"):
            s.cell("threading.Event().wait()", 0.5)  # never set
        assert s.proc is None
    finally:
        s.close()


@pytest.mark.slow
def test_a_submission_deadline_ends_everything(stage):
    s = _session(stage, wall_seconds=3)
    try:
        with pytest.raises(session.WorkerGone, match="submission's wall-clock limit of 3 s"):
            s.cell("import time\ntime.sleep(10**6)", 60)
        with pytest.raises(session.WorkerGone, match="submission's wall-clock limit of 3 s"):
            s.start()
    finally:
        s.close()


@pytest.mark.slow
def test_a_submissions_cpu_time_ends_everything_whatever_its_workers_do(stage):
    """The CPU time of a submission counts every worker it had: a worker that spins past its
    cells' limits is stopped when the submission's CPU time is used up, and no other starts."""
    s = session.Session(
        stage, b'{"cells": []}', "01_masked_softmax.ipynb", sandbox.Limits(cpu_seconds=10)
    )
    try:
        with pytest.raises(session.WorkerGone, match="request's CPU time limit of 2 s"):
            s.cell(DEAF_SPIN, 2)
        with pytest.raises(session.WorkerGone, match="submission's CPU time limit of 10 s"):
            s.cell(DEAF_SPIN, 60)
        assert s.spent() == "the submission's CPU time limit of 10 s"
        with pytest.raises(session.WorkerGone, match="submission's CPU time limit of 10 s"):
            s.start()
        assert s.starts == 2
        assert s.cpu_used() >= 10 - session.MIN_START_CPU
    finally:
        s.close()


@pytest.mark.slow
def test_two_workers_of_one_submission_share_its_cpu_time(stage):
    budget = session.Budget(10, 600)
    first = session.Session(stage, b"{}", "x.ipynb", sandbox.Limits(), budget=budget)
    second = session.Session(stage, b"{}", "x.ipynb", sandbox.Limits(), budget=budget)
    try:
        with pytest.raises(session.WorkerGone, match="request's CPU time limit of 4 s"):
            first.cell(DEAF_SPIN, 4)
        with pytest.raises(session.WorkerGone, match="submission's CPU time limit of 10 s"):
            second.cell(DEAF_SPIN, 60)  # what the first used counts against the second
        assert budget.used() >= 10 - session.MIN_START_CPU
    finally:
        first.close()
        second.close()


@pytest.mark.slow
def test_a_reply_that_has_arrived_is_read_before_any_limit_is_judged(stage, monkeypatch):
    """The grader may be held up (another job, a slow disk) between sending a request and
    reading its reply: a reply already there is never declared late. Here the grader's clock
    jumps past every deadline right after the request is written, once the reply is in the
    pipe (an event: select says it is readable), before the grader looks."""
    s = _session(stage, wall_seconds=600)
    clock = [0.0]
    real_write, real_select = os.write, select.select
    monkeypatch.setattr(session.time, "monotonic", lambda: clock[0])
    try:
        s.cell("def f(x):\n    return str(x)", 5)
        s.budget.deadline = 100.0  # type: ignore[union-attr]

        def write_then_stall(fd, data):
            n = real_write(fd, data)
            if fd == s._to_worker:
                real_select([s._from_worker], [], [], None)  # the reply has arrived ...
                clock[0] = 10_000.0  # ... and the grader gets to it after every deadline
            return n

        monkeypatch.setattr(session.os, "write", write_then_stall)
        reply = s.request({"op": "call", "target": "f", "args": [7]}, 5)
        monkeypatch.setattr(session.os, "write", real_write)
        assert reply == {"id": reply["id"], "ok": True, "value": "7"}
    finally:
        monkeypatch.setattr(session.os, "write", real_write)
        s.close()


def test_the_cpu_time_of_a_process_tree_is_read_from_proc():
    """What the grader reads of a sandbox's processes: a child that has computed for 0.3 s of
    CPU time (by its own count) shows that much, whatever the machine's load."""
    burn = "import time\nwhile time.process_time() < 0.3:\n    pass\nprint('done', flush=True)\ninput()\n"
    proc = subprocess.Popen(
        [sys.executable, "-c", burn], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "done\n"  # the event: it has computed its 0.3 s
        assert proc.pid in session.tree(os.getpid())
        assert session.cpu_seconds([proc.pid]) >= 0.25  # /proc counts in ticks of 10 ms
        assert session.cpu_seconds(session.tree(os.getpid())) >= 0.25
    finally:
        proc.communicate("\n")
    assert session.cpu_seconds([proc.pid]) == 0  # ended and reaped: it counts nothing itself


# --------------------------------------------------------------------------- where a question is graded
def _cells(*sources: str) -> list[dict]:
    return [
        {
            "source": s,
            "defines": sorted(reader.defines(s)),
            "checks": reader._CHECK_CALL.findall(s),
        }
        for s in sources
    ]


def test_a_question_is_graded_at_its_last_check_cell():
    cells = _cells(
        "import numpy as np",
        "def softmax(e):\n    return _helper(e)",
        "def _helper(e):\n    return e",  # below the answer, above the check: it counts
        'grader.check("q1_softmax")',
        "softmax = None  # scratch: below the check, it counts for nothing",
        "masked_softmax = lambda e, m: e",
        "def masked_softmax(e, m):\n    return 2 * e",  # fixed below a red check ...
        'grader.check("q2_masked_softmax")',  # ... and checked again
    )
    cells.insert(6, _cells('grader.check("q2_masked_softmax")')[0])
    assert grader.places(cells, EX1) == {"q1_softmax": 3, "q2_masked_softmax": 8}


def test_without_a_check_cell_a_question_is_graded_after_its_first_definition():
    cells = _cells("x = 1", "def softmax(e):\n    return e", "softmax = None")
    assert grader.places(cells, EX1) == {"q1_softmax": 2, "q2_masked_softmax": 3}


def test_defines_reads_names_in_any_block_without_running_anything():
    assert reader.defines(
        "def f(): pass\nclass C: pass\na, (b, c) = 1, (2, 3)\nimport x.y as z"
    ) == {"f", "C", "a", "b", "c", "z"}
    assert reader.defines("%matplotlib inline\ndef softmax(e):\n    pass") == {"softmax"}
    assert "softmax" in reader.defines(
        "try:\n    from x import softmax\nexcept ImportError:\n    def softmax(e):\n        pass"
    )
    assert reader.defines('globals()["softmax"] = f\nglobals().update(entropy=g)') == {
        "softmax",
        "entropy",
    }
    assert reader.defines("if True:\n    with open('f') as fh:\n        w = 1") == {"fh", "w"}
    assert reader.defines("def f():\n    inner = 1") == {"f"}


def _nb(cells, metadata=None):
    return json.dumps(
        {"cells": cells, "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": 5}
    ).encode()


def _read(data: bytes) -> dict:
    return reader.run(grader._feed_bytes(data), sources=False)


def test_an_exercise_is_recognised_without_its_metadata():
    md = {"cell_type": "markdown", "source": ["(ex)=\n", "# Exercise 1: a stable softmax"]}
    code = {"cell_type": "code", "source": "def softmax(e): pass\ndef masked_softmax(e, m): pass"}
    known = EXERCISES
    assert grader.identify(_read(_nb([md])), "homework.ipynb", known) == "01_masked_softmax"
    assert grader.identify(_read(_nb([code])), "hw.ipynb", known) == "01_masked_softmax"
    named = "x_01_masked_softmax (2).ipynb"
    assert grader.identify(_read(_nb([])), named, known) == "01_masked_softmax"
    assert grader.identify(_read(_nb([])), "holiday.ipynb", known) is None
    bad = _read(b"\x00not json")
    assert grader.identify(bad, "bad.ipynb", known) is None
    assert grader.identify(bad, "01_masked_softmax.ipynb", known) == "01_masked_softmax"


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"PK\x03\x04 a zip", "a zip archive"),
        (b"\xff\xfe\x00", "not UTF-8"),
        (b'{"cells": [', "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"cells": 3}', "no list of cells"),
    ],
)
def test_the_reader_says_why_a_file_is_not_a_notebook(data, why):
    assert why in _read(data)["error"]


def test_the_reader_skips_a_cell_over_its_limit_and_says_so():
    big = {"cell_type": "code", "source": "x = 1\n" * (reader.MAX_CELL // 6 + 1)}
    small = {"cell_type": "code", "source": "def softmax(e):\n    return e"}
    got = reader.run(grader._feed_bytes(_nb([big, small])))
    assert got["cells"][0]["skipped"].startswith("a code cell of 1 MB, over 1 MB")
    assert got["cells"][0]["source"] == ""
    assert got["cells"][1]["defines"] == ["softmax"]


def test_csv_cells_never_start_a_formula():
    assert grader._safe("=2+5") == "'=2+5"
    assert grader._safe("@SUM(A1)") == "'@SUM(A1)"
    assert grader._safe("-1") == "'-1"
    assert grader._safe("ana\nbob") == "ana?bob"
    assert grader._safe("ana") == "ana"


def test_names_that_look_alike_are_shown_apart():
    shown = grader.display_names(["ana\n", "ana\r", "Jos\u00e9", "Jose\u0301", "bob"])
    assert shown["ana\n"] == "ana\\n"
    assert shown["ana\r"] == "ana\\r"
    assert shown["Jos\u00e9"] != shown["Jose\u0301"]
    assert shown["Jose\u0301"].endswith("[Jose\\u0301]")
    assert shown["bob"] == "bob"


def test_the_seed_is_required_named_and_strong(monkeypatch):
    monkeypatch.delenv(grader.SEED_ENV, raising=False)
    with pytest.raises(ValueError, match="ATTNLIB_GRADING_SEED"):
        grader.private_seed(None)
    monkeypatch.setenv(grader.SEED_ENV, SEED)
    assert grader.private_seed(None) == SEED
    for weak in ("1", "s", "password", "correct horse battery staple", "2024-exam-seed"):
        with pytest.raises(ValueError, match="--weak-seed-ok"):
            grader.private_seed(weak)
        assert grader.private_seed(weak, weak_ok=True) == weak


@pytest.mark.parametrize(
    ("seed", "strong"),
    [
        ("8f1c2a7e4b9d03f65e1a2c3b4d5e6f70", True),  # secrets.token_hex(16)
        ("q3ZrT0bX-9wLs_Vd2KpNa8", True),  # secrets.token_urlsafe(16)
        ("correct horse battery staple", False),
        ("12345678901234567890", True),  # 20 random digits: 66 bits
        ("aaaaaaaaaaaaaaaaaaaaaaaa", False),
    ],
)
def test_the_seed_strength_is_estimated_cautiously(seed, strong):
    assert (cases.seed_bits(seed) >= grader.MIN_SEED_BITS) == strong


def test_the_draws_depend_on_the_seed_the_student_and_the_place_only():
    a = cases.rng_for("s1", "ana", "01", "q1", "rows").normal(size=4)
    assert np.array_equal(a, cases.rng_for("s1", "ana", "01", "q1", "rows").normal(size=4))
    assert not np.array_equal(a, cases.rng_for("s2", "ana", "01", "q1", "rows").normal(size=4))
    assert not np.array_equal(a, cases.rng_for("s1", "bob", "01", "q1", "rows").normal(size=4))
    assert not np.array_equal(a, cases.rng_for("s1", "ana", "01", "q1", "x").normal(size=4))
    cases.rng_for("s1", "\udcff", "01")  # a name that is not UTF-8 (surrogate escapes) draws too


def test_a_note_says_what_failed_in_the_graders_words_only():
    raised = cases.Fail("softmax raised ECHO_12: [0.5]", kind="raised", raised=["ValueError"])
    assert raised.phrase() == "the function raised ValueError"
    custom = cases.Fail("x", kind="raised", raised=["ECHO_12"])  # not one of Python's own
    assert custom.phrase() == "the function raised an exception"
    assert cases.Fail("entry 0 is 0.123, expected 0.5").phrase() == "the values are not right"
    assert cases.Fail("x", note="a note of the grader's").phrase() == "a note of the grader's"


def test_the_folder_scan_reads_regular_files_only(tmp_path):
    subs = tmp_path / "subs"
    (subs / "ana" / "work").mkdir(parents=True)
    (subs / "ana" / "01_masked_softmax.ipynb").write_bytes(_nb([]))
    (subs / "ana" / "work" / "02_additive_score.ipynb").write_bytes(_nb([]))
    (subs / "ana" / "notes.txt").write_text("x")
    (subs / "ana" / ".ipynb_checkpoints").mkdir()
    (subs / "ana" / ".ipynb_checkpoints" / "01_masked_softmax-checkpoint.ipynb").write_text("")
    (subs / "bob").symlink_to(subs / "ana")
    (subs / "cy").mkdir()
    os.mkfifo(subs / "cy" / "pipe.ipynb")
    (subs / "cy" / "folder.ipynb").mkdir()
    (subs / "cy" / "gone.ipynb").symlink_to(tmp_path / "nowhere")
    (subs / "dee").mkdir()
    (subs / "eve.ipynb").write_bytes(_nb([]))
    (subs / "__MACOSX" / "ana").mkdir(parents=True)
    (subs / "__MACOSX" / "ana" / "._01_masked_softmax.ipynb").write_bytes(b"\x00\x05")
    (subs / "gradebook.csv").write_text("student,question\n")
    found = grader.scan(subs)
    assert found.students == ["ana", "bob", "cy", "dee", "eve"]
    assert [(s.student, s.path) for s in found.notebooks] == [
        ("ana", "ana/01_masked_softmax.ipynb"),
        ("ana", "ana/work/02_additive_score.ipynb"),
        ("eve", "eve.ipynb"),
    ]
    assert found.skipped == {
        "bob": ["bob: a symbolic link (links are not followed)"],
        "cy": [
            "folder.ipynb: a folder",
            "gone.ipynb: a symbolic link (links are not followed)",
            "pipe.ipynb: a FIFO",
        ],
    }
    assert [i.split(":")[0] for i in found.ignored] == ["__MACOSX", "gradebook.csv"]


# --------------------------------------------------------------------------- the grader's rules
class _Recording:
    """A session that records the cells it is sent (each runs, each answers ok)."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def cell(self, source: str, seconds: float) -> dict:
        self.sent.append(source)
        return {"ok": True}

    def spent(self) -> None:
        return None


def test_no_cell_below_the_last_place_a_question_is_graded_at_is_run():
    cells = _cells(
        "import numpy as np",
        "def softmax(e):\n    return e",
        'grader.check("q1_softmax")',
        "def masked_softmax(e, m):\n    return e",
        'grader.check("q2_masked_softmax")',
        "while True:\n    pass  # scratch below every check: never run",
    )
    for c in cells:
        c["only_checks"] = c["source"].startswith("grader.check")
    recording = _Recording()
    results = {q.name: grader.Result() for q in EX1.questions}
    quiet = cases.Exercise(EX1.name, 1, tuple(
        cases.Question(q.name, q.defines, ()) for q in EX1.questions))  # fmt: skip
    grader._run_questions(
        recording, None, cells, grader.places(cells, EX1), quiet.questions, quiet, "s", "a",
        results,
    )  # fmt: skip
    assert recording.sent == [cells[k]["source"] for k in (0, 1, 3)]


@pytest.mark.slow
def test_every_student_gets_a_row_per_question_and_the_preferred_notebook_is_graded(tmp_path):
    subs = tmp_path / "subs"
    (subs / "ana").mkdir(parents=True)
    solution = (SOLUTIONS / "01_masked_softmax.ipynb").read_bytes()
    blank = (EXERCISE_DIR / "01_masked_softmax.ipynb").read_bytes()
    (subs / "ana" / "01_masked_softmax.ipynb").write_bytes(solution)
    (subs / "ana" / "zz_copy_01_masked_softmax.ipynb").write_bytes(blank)
    (subs / "=2+5").mkdir()
    gradebook = tmp_path / "out" / "gradebook.csv"
    wide = tmp_path / "out" / "wide.csv"
    rows = grader.grade(subs, gradebook, seed=SEED, jobs=2, wide=wide)
    with open(gradebook, newline="") as f:
        written = list(csv.DictReader(f))
    assert [(r["student"], r["question"], r["score"]) for r in written] == [
        ("'=2+5", "01_masked_softmax:q1_softmax", "0.0"),
        ("'=2+5", "01_masked_softmax:q2_masked_softmax", "0.0"),
        ("ana", "01_masked_softmax:q1_softmax", "4.0"),
        ("ana", "01_masked_softmax:q2_masked_softmax", "4.0"),
    ]
    assert rows[0]["note"] == "no submission"
    assert "also handed in, not graded: ana/zz_copy_01_masked_softmax.ipynb" in rows[2]["note"]
    with open(wide, newline="") as f:
        assert list(csv.reader(f)) == [
            ["student", "01_masked_softmax", "total"],
            ["'=2+5", "0.0", "0.0"],
            ["ana", "8.0", "8.0"],
        ]
    left = sorted(p.name for p in gradebook.parent.iterdir())
    assert left == ["gradebook.csv", "gradebook.csv.journal", "wide.csv"]  # no temporary file


def _two_solutions(tmp_path: Path) -> Path:
    subs = tmp_path / "subs"
    for who in ("ana", "bob", "cy"):
        (subs / who).mkdir(parents=True)
        (subs / who / "01_masked_softmax.ipynb").write_bytes(
            (SOLUTIONS / "01_masked_softmax.ipynb").read_bytes()
        )
    return subs


@pytest.mark.slow
def test_a_rerun_takes_up_the_journal_and_grades_only_what_is_new(tmp_path):
    subs, gradebook = _two_solutions(tmp_path), tmp_path / "gradebook.csv"
    first: list[str] = []
    grader.grade(subs, gradebook, seed=SEED, progress=first.append)
    assert sorted(first) == ["graded ana", "graded bob", "graded cy"]
    book = gradebook.read_bytes()
    journal = gradebook.with_name("gradebook.csv.journal")
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join(lines[:2]) + "\n" + lines[2][:40])  # a crash in a write
    kept = json.loads(lines[1])["student"]  # the one student whose entry survived
    changed = next(s for s in ("cy", "bob") if s != kept)
    (subs / changed / "01_masked_softmax.ipynb").write_bytes(
        (EXERCISE_DIR / "01_masked_softmax.ipynb").read_bytes()
    )  # a notebook handed in again
    again: list[str] = []
    rows = grader.grade(subs, gradebook, seed=SEED, progress=again.append)
    assert sorted(again) == sorted(f"graded {s}" for s in {"ana", "bob", "cy"} - {kept})
    scores = {r["student"]: r["score"] for r in rows if r["question"].endswith("q1_softmax")}
    assert scores == {s: (0.0 if s == changed else 4.0) for s in ("ana", "bob", "cy")}
    assert gradebook.read_bytes() != book
    other: list[str] = []
    grader.grade(subs, gradebook, seed=SEED + "0", progress=other.append)  # another seed
    assert len(other) == 3
    assert gradebook.with_name("gradebook.csv.journal.old").exists()


_KILLED = """
import sys
from pathlib import Path
from attnlib.grading import grader
grader.grade(Path(sys.argv[1]), Path(sys.argv[2]), seed=sys.argv[3], jobs=1,
             progress=lambda line: print(line, flush=True))
"""


@pytest.mark.slow
def test_a_grader_killed_in_the_middle_of_a_batch_loses_nothing_graded(tmp_path):
    subs, gradebook = _two_solutions(tmp_path), tmp_path / "gradebook.csv"
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED, str(subs), str(gradebook), SEED],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline().strip()  # the event: one student is in the journal
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert first.startswith("graded ")
    assert not gradebook.exists()
    again: list[str] = []
    rows = grader.grade(subs, gradebook, seed=SEED, progress=again.append)
    assert first not in again
    assert {r["student"] for r in rows} == {"ana", "bob", "cy"}
    assert all(r["score"] == r["total"] for r in rows)


@pytest.mark.slow
def test_a_hang_costs_only_the_cell_that_hangs():
    nb = nbformat.read(SOLUTIONS / "01_masked_softmax.ipynb", as_version=4)
    nb.cells.insert(3, nbformat.v4.new_code_cell(DEAF_SPIN))
    quick = cases.Exercise(EX1.name, EX1.number, EX1.questions, cell_seconds=2)
    results = grader.grade_notebook(nbformat.writes(nb).encode(), quick, SEED)
    assert {q: r.score for q, r in results.items()} == {"q1_softmax": 4, "q2_masked_softmax": 4}


def test_a_file_that_is_not_a_notebook_scores_zero_with_a_note():
    results = grader.grade_notebook(b"PK\x03\x04 a zip", EX1, SEED)
    assert all(
        r.score == 0 and r.notes[0].startswith("not a readable notebook: a zip archive")
        for r in results.values()
    )


# --------------------------------------------------------------------------- the instructor's mistakes
def _folder(tmp_path: Path, name: str = "ana") -> Path:
    (tmp_path / "subs" / name).mkdir(parents=True)
    (tmp_path / "subs" / name / "01_masked_softmax.ipynb").write_bytes(
        (SOLUTIONS / "01_masked_softmax.ipynb").read_bytes()
    )
    return tmp_path / "subs"


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda p: p.mkdir(), "no notebook in"),
        (lambda p: (p.mkdir(), (p / "ana").mkdir(), (p / "ana" / "a.txt").write_text("")), "no notebook"),
        (lambda p: (p.mkdir(), (p / "gradebook.csv").write_text("")), "no notebook"),
    ],
    ids=["empty", "no-notebook", "only-a-gradebook"],
)  # fmt: skip
def test_a_folder_without_a_notebook_exits_2_and_writes_nothing(tmp_path, capsys, make, why):
    subs, out = tmp_path / "subs", tmp_path / "gradebook.csv"
    make(subs)
    assert cli(["grade", str(subs), "-o", str(out), "--seed", SEED]) == 2
    assert why in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--timeout", "0"], "must be at least 30 s"),
        (["--timeout", "nan"], "not a number of seconds"),
        (["--jobs", "0"], "--jobs must be a whole number"),
        (["--seed", "hunter2"], "--weak-seed-ok"),
        (["--exercise", "99_nothing"], "no exercise named"),
    ],
)
def test_a_setting_that_cannot_be_is_refused_before_anything_is_graded(tmp_path, capsys, args, why):
    out = tmp_path / "gradebook.csv"
    seed = [] if "--seed" in args else ["--seed", SEED]
    try:
        code = cli(["grade", str(_folder(tmp_path)), "-o", str(out), *seed, *args])
    except SystemExit as stop:  # argparse refuses a value it cannot read
        code = stop.code
    assert code == 2
    assert why in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("where", ["gradebook", "wide", "details"])
def test_no_output_may_be_written_into_the_submissions_folder(tmp_path, capsys, where):
    subs = _folder(tmp_path)
    inside = subs / "out.csv"
    args = {
        "gradebook": ["-o", str(inside)],
        "wide": ["-o", str(tmp_path / "g.csv"), "--wide", str(inside)],
        "details": ["-o", str(tmp_path / "g.csv"), "--details", str(inside)],
    }[where]
    assert cli(["grade", str(subs), *args, "--seed", SEED]) == 2
    assert "inside the submissions folder" in capsys.readouterr().err
    assert sorted(p.name for p in subs.iterdir()) == ["ana"]


def test_without_the_sandbox_grading_is_refused_unless_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "problem", lambda: "bubblewrap is not installed (test)")
    subs = _folder(tmp_path)
    with pytest.raises(grader.SandboxUnavailable, match=r"not installed \(test\).*--no-sandbox"):
        grader.grade(subs, tmp_path / "g.csv", seed=SEED)
    assert not (tmp_path / "g.csv").exists()


@pytest.mark.slow
def test_without_the_sandbox_a_trusted_notebook_is_graded_in_a_process_of_its_own(tmp_path):
    rows = grader.grade(_folder(tmp_path), tmp_path / "g.csv", seed=SEED, isolate=False)
    assert [r["score"] for r in rows] == [4.0, 4.0]


def test_the_points_of_each_question_match_its_prompt():
    import re

    for name, exercise in EXERCISES.items():
        nb = nbformat.read(EXERCISE_DIR / "source" / f"{name}.ipynb", as_version=4)
        stated = [
            int(p)
            for c in nb.cells
            if c.cell_type == "markdown"
            for p in re.findall(r"^\*\*Question \d \((\d+) points?\)", c.source, re.M)
        ]
        assert stated == [q.total for q in exercise.questions], name
        for q in exercise.questions:
            assert any(c.public for c in q.checks), f"{name}:{q.name} has no public check"
            assert any(not c.public for c in q.checks), f"{name}:{q.name} has no hidden check"
