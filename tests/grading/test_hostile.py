"""The sandboxed grader against hostile submissions: no attack earns a point or leaves a trace.

One folder (tests/fixtures/hostile.py) holds every attack on exercise 1, the fair-but-odd
notebooks that must keep full marks, the odd filesystem entries and the entries that are not
students; it is graded once, with the seed in the grader's environment, two jobs at a time,
while this process listens on loopback for anything a submission sends. The tests then read
the gradebook (a score per question, notes that carry no text of the learner's), the
instructor's details file (what each attack's own log says happened), the folder (byte for
byte, entry for entry), the host folders the attacks aimed at, the processes left, and the
gradebook again two seconds later (a window in which a process that escaped would show; the
processes themselves are listed right after grading).

Tests marked ``slow`` grade notebooks (the folder takes a minute or two at ``jobs=2``); the
module is one xdist group, so that its one grading run is shared by all of its tests.
"""

from __future__ import annotations

import csv
import ctypes
import hashlib
import io
import json
import os
import re
import select
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

from attnlib.grading import grader, reader, sandbox
from attnlib.grading.__main__ import main as cli
from fixtures import hostile as hx

pytestmark = pytest.mark.xdist_group("hostile")

SEED = f"hostile-seed-{uuid.uuid4().hex}"  # in the grader's environment, never in a worker's
STRONG = "tests-seed-2b7e151628aed2a6abf7158809cf4f3c"  # a fixed seed of 128 bits
#: What one submission may use here. A spinning worker is stopped by CPU time, which load
#: cannot move (the course's default is 300 s; every case but the spinners uses under 5 s).
LIMITS = sandbox.Limits(cpu_seconds=20)
#: The wall-clock backstop per submission: only a submission that hangs without computing
#: reaches it (the slowest case, the memory bomb, takes seconds; tests/grading/test_grader.py ends a
#: real hang with a short one).
WALL_BACKSTOP = 900.0
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
CASES = hx.cases()
BY_NAME = {c.student: c for c in CASES}
QUESTIONS = (hx.Q1, hx.Q2)
STUDENTS = [c.student for c in CASES if c.kind != "ignored"]
SHOWN = grader.display_names(STUDENTS)
#: Marks of the learner's own text: none may reach the gradebook's notes.
LEARNER_TEXT = ("report ", "ECHO", "found ", "hostile-canary", "_report")


# =========================================================================== listeners
class Listeners:
    """Servers on this machine a submission tries to reach; they keep whatever arrives."""

    def __init__(self, folder: Path) -> None:
        self.received: list[tuple[str, bytes]] = []
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.unix_path = str(folder / "listen.sock")
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind(self.unix_path)
        self.abstract_name = f"attnlib-hostile-{uuid.uuid4().hex}"
        self.abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.abstract.bind("\0" + self.abstract_name)
        self.kinds = {
            self.tcp: "tcp",
            self.udp: "udp",
            self.unix: "unix",
            self.abstract: "abstract",
        }
        for s in (self.tcp, self.unix, self.abstract):
            s.listen(8)
        for s in self.kinds:
            s.setblocking(False)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self.tcp.getsockname()[1])

    @property
    def udp_port(self) -> int:
        return int(self.udp.getsockname()[1])

    def _serve(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select(list(self.kinds), [], [], 0.1)
            for s in ready:
                try:
                    if s is self.udp:
                        data, _ = s.recvfrom(65536)
                    else:
                        conn, _ = s.accept()
                        with conn:
                            conn.settimeout(1.0)
                            try:
                                data = b"(connected) " + conn.recv(65536)
                            except OSError:
                                data = b"(connected)"
                except (BlockingIOError, InterruptedError):
                    continue
                self.received.append((self.kinds[s], data))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for s in self.kinds:
            s.close()


# =========================================================================== the host's state
def snapshot(folder: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry below ``folder``: its lstat type and mode, and a regular file's sha256.

    Nothing is followed or opened but regular files (a FIFO would block).
    """
    out: dict[str, tuple[Any, ...]] = {}
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in [".", *dirs, *files]:
            path = Path(root) / name
            st = path.lstat()
            kind = stat.S_IFMT(st.st_mode)
            if stat.S_ISREG(st.st_mode):
                detail: Any = (hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mtime_ns)
            elif stat.S_ISLNK(st.st_mode):
                detail = os.readlink(path)
            elif stat.S_ISCHR(st.st_mode):
                detail = st.st_rdev
            else:
                detail = None
            rel = str(path.relative_to(folder))
            out[rel] = (kind, stat.S_IMODE(st.st_mode), st.st_uid, detail)
    return out


def _children(me: psutil.Process) -> dict[int, str]:
    found = {}
    for p in me.children(recursive=True):
        try:
            if p.status() == psutil.STATUS_ZOMBIE:
                continue
            found[p.pid] = " ".join(p.cmdline())
        except psutil.Error:
            continue
    return found


def leftovers(token: str) -> list[str]:
    """Processes grading may have left: our descendants that are sandboxes or workers, and any
    process on the machine whose command line carries the attacks' token."""
    found = [
        f"{pid}: {cmd[:160]}"
        for pid, cmd in _children(psutil.Process()).items()
        if any(k in cmd for k in ("bwrap", "worker.py", "/opt/attnlib"))
    ]
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(p.info.get("cmdline") or [])
        if token in cmd:
            found.append(f"{p.info['pid']}: {cmd[:160]}")
    return found


_PR_SET_CHILD_SUBREAPER = 36


def _subreaper(on: bool) -> None:
    """Orphans of our descendants become our children (so an escaped process stays visible)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)


def _reap(before: set[int]) -> None:
    for p in psutil.Process().children():
        try:
            if p.pid not in before and p.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(p.pid, os.WNOHANG)
        except (psutil.Error, ChildProcessError):
            continue


def canary_places(targets: hx.Targets) -> list[Path]:
    """Host folders the attacks name, and the ones a sandbox escape would reach first."""
    import site

    places = [Path(d) for d in targets.dirs()]
    places += [Path(p) for p in site.getsitepackages()] + [Path(sys.prefix), Path("/usr/lib")]
    return [p for p in dict.fromkeys(places) if p.is_dir()]


def _unquote(cell: str) -> str:
    """A student name as handed in, from the CSV cell that keeps a spreadsheet from reading it."""
    return cell[1:] if cell[:1] == "'" and cell[1:2] in ("=", "+", "-", "@") else cell


# =========================================================================== the graded folder
@dataclass
class Graded:
    targets: hx.Targets
    submissions: Path
    gradebook: Path
    rows: list[dict[str, Any]]
    csv_bytes: bytes
    csv_bytes_later: bytes
    gradebook_stat: tuple[int, int]
    gradebook_stat_later: tuple[int, int]
    before: dict[str, tuple[Any, ...]]
    after: dict[str, tuple[Any, ...]]
    canaries_before: list[str]
    canaries_after: list[str]
    gradebook_dir: list[str]
    survivors: list[str]
    survivors_later: list[str]
    received: list[tuple[str, bytes]]
    details_bytes: bytes = b""
    signals: list[int] = field(default_factory=list)

    def table(self) -> dict[tuple[str, str], dict[str, str]]:
        """(folder name, question) → its gradebook row."""
        back = {shown: student for student, shown in SHOWN.items()}
        out = {}
        for row in csv.DictReader(io.StringIO(self.csv_bytes.decode("utf-8"))):
            student = back.get(_unquote(row["student"]), _unquote(row["student"]))
            out[(student, row["question"].rpartition(":")[2])] = row
        return out

    def details(self) -> dict[tuple[str, str], list[str]]:
        """(folder name, question) → the instructor's full messages of its failed checks."""
        back = {shown: student for student, shown in SHOWN.items()}
        out: dict[tuple[str, str], list[str]] = {}
        for row in csv.DictReader(io.StringIO(self.details_bytes.decode("utf-8"))):
            student = back.get(_unquote(row["student"]), _unquote(row["student"]))
            out.setdefault((student, row["question"].rpartition(":")[2]), []).append(row["detail"])
        return out


def _canaries(targets: hx.Targets) -> list[str]:
    pattern = targets.canary_glob()
    found = [str(p) for place in canary_places(targets) for p in place.glob(pattern)]
    found += [str(p) for p in Path(targets.submissions).rglob(pattern)]
    return sorted(found)


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    base = tmp_path_factory.mktemp("hostile")
    submissions, gradebook = base / "submissions", base / "gradebook" / "gradebook.csv"
    details = base / "details.csv"
    listeners = Listeners(base)
    targets = hx.Targets(
        submissions=str(submissions),
        gradebook=str(gradebook),
        home=os.path.expanduser("~"),
        cwd=os.getcwd(),
        repo=str(hx.ROOT),
        token=uuid.uuid4().hex[:16],
        port=listeners.port,
        udp_port=listeners.udp_port,
        unix=listeners.unix_path,
        abstract=listeners.abstract_name,
        host_pid=os.getpid(),
        extra_dirs=(str(base),),
    )
    signals: list[int] = []
    old_usr1 = signal.signal(signal.SIGUSR1, lambda signum, frame: signals.append(signum))
    children_before = set(_children(psutil.Process()))
    try:
        hx.build(submissions, targets)
        before, canaries_before = snapshot(submissions), _canaries(targets)
        _subreaper(True)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(grader.SEED_ENV, SEED)
            try:
                rows = grader.grade(
                    submissions,
                    gradebook,
                    seed=None,
                    jobs=2,
                    timeout=WALL_BACKSTOP,
                    limits=LIMITS,
                    details=details,
                )
            except grader.SandboxUnavailable as err:
                pytest.fail(f"the hostile suite needs the sandbox: {err}")
            returned = time.monotonic()
        survivors = leftovers(targets.token)
        csv_bytes, st = gradebook.read_bytes(), gradebook.stat()
        time.sleep(max(0.0, 2.0 - (time.monotonic() - returned)))
        later = gradebook.stat()
        result = Graded(
            targets=targets,
            submissions=submissions,
            gradebook=gradebook,
            rows=rows,
            csv_bytes=csv_bytes,
            csv_bytes_later=gradebook.read_bytes(),
            gradebook_stat=(st.st_ino, st.st_mtime_ns),
            gradebook_stat_later=(later.st_ino, later.st_mtime_ns),
            before=before,
            after=snapshot(submissions),
            canaries_before=canaries_before,
            canaries_after=_canaries(targets),
            gradebook_dir=sorted(p.name for p in gradebook.parent.iterdir()),
            survivors=survivors,
            survivors_later=leftovers(targets.token),
            received=list(listeners.received),
            details_bytes=details.read_bytes(),
            signals=list(signals),
        )
    finally:
        _subreaper(False)
        _reap(children_before)
        signal.signal(signal.SIGUSR1, old_usr1)
        listeners.close()
    return result


# =========================================================================== fast: the cases
def test_every_cell_of_every_case_compiles():
    targets = hx.Targets.placeholder()
    for case in CASES:
        if case.make is not None:
            continue
        nb = hx.notebook(case, targets)
        for k, cell in enumerate(nb["cells"]):
            if cell["cell_type"] != "code":
                continue
            source = hx._source(cell)
            if source.lstrip().startswith(("%", "!")) or "%pip" in source:
                continue
            compile(source, f"{case.student}[{k}]", "exec")


def test_the_cases_cover_every_kind_and_hostile_cases_answer_wrongly():
    kinds = {c.kind for c in CASES}
    assert kinds == {"hostile", "fair", "rule", "fs", "ignored"}
    assert {hx.CONTROL, *hx.VISIBLE} <= {c.student for c in CASES if c.kind == "hostile"}
    for case in CASES:
        if case.kind == "hostile":
            assert case.expect == hx.ZERO, case.student
            assert case.softmax is not None, case.student


# =========================================================================== slow: one grading run
def _score(g: Graded, student: str, question: str) -> float:
    return float(g.table()[(student, question)]["score"])


@pytest.mark.slow
@pytest.mark.parametrize("student", [c.student for c in CASES])
def test_each_case_scores_what_it_should(graded, student):
    case = BY_NAME[student]
    if case.kind == "ignored":  # not a student: no row at all
        assert not [k for k in graded.table() if k[0] == student], case.why
        return
    got = {q: _score(graded, student, q) for q in QUESTIONS}
    notes = {q: graded.table()[(student, q)]["note"][:300] for q in QUESTIONS}
    assert got == case.expect, f"{student} ({case.why}): {notes}"


def _report(note: str) -> dict[str, str]:
    m = re.search(r"report ((?:[\w.]+=[\w.+/]+ ?)*)", note)
    assert m, f"no report of the attempts in the note: {note[:300]}"
    return dict(item.split("=", 1) for item in m.group(1).split())


@pytest.mark.slow
@pytest.mark.parametrize(
    "student", [c.student for c in CASES if c.report or c.note_has or c.details_has]
)
def test_each_attack_shows_what_it_did_and_each_skipped_entry_is_named(graded, student):
    """The attack's own log, carried out in the instructor's details: proof that it ran, and
    what it got; for an entry of the folder, the gradebook's note names what was skipped."""
    case = BY_NAME[student]
    table, details = graded.table(), graded.details()
    for text in case.note_has:
        assert text in table[(student, hx.Q1)]["note"], student
    for text in case.details_has:
        assert any(text in d for d in details.get((student, hx.Q1), [])), student
    if not case.report:
        return
    log = _report(" ".join(details.get((student, hx.Q2), [])))
    for label, want in case.report.items():
        assert label in log, f"{student}: {label} did not run ({log})"
        if want == "refused":
            assert log[label] != "ok", f"{student}: {label} went through inside the sandbox"
        elif want.startswith("="):
            assert log[label] == want[1:], f"{student}: {label}={log[label]}, expected {want}"


@pytest.mark.slow
@pytest.mark.parametrize("student", sorted(hx.VISIBLE))
def test_each_visible_attack_reached_the_grader_and_still_scored_nothing(graded, student):
    """What the grader saw differs from the control's (zeros, no attack): the forged line, the
    lost worker, the lying value did arrive, so the 0 is the grader's doing and not a fizzled
    attack."""
    table, details = graded.table(), graded.details()
    seen = (table[(student, hx.Q1)]["note"], details.get((student, hx.Q1)))
    control = (table[(hx.CONTROL, hx.Q1)]["note"], details.get((hx.CONTROL, hx.Q1)))
    assert seen != control
    assert table[(hx.CONTROL, hx.Q1)]["note"]


@pytest.mark.slow
def test_no_note_carries_text_or_values_of_the_learners(graded):
    """The learner's messages, exception names and returned values (which could carry the
    hidden inputs back) reach the instructor's details, never the gradebook's notes."""
    notes = [row["note"] for row in graded.table().values()]
    assert not [n for n in notes if any(mark in n for mark in LEARNER_TEXT)]
    echo = graded.details()[("h_echo", hx.Q1)]
    assert any("ECHO [" in d for d in echo)  # the attack did hand its inputs back
    assert "ECHO" not in graded.table()[("h_echo", hx.Q2)]["note"]
    assert "raised ValueError" in graded.table()[("h_echo", hx.Q2)]["note"]


@pytest.mark.slow
def test_one_row_per_student_and_question_including_the_empty_and_linked_folders(graded):
    rows = list(csv.DictReader(io.StringIO(graded.csv_bytes.decode("utf-8"))))
    keys = [(_unquote(r["student"]), r["question"].rpartition(":")[2]) for r in rows]
    assert len(keys) == len(set(keys))
    assert set(keys) == {(SHOWN[s], q) for s in STUDENTS for q in QUESTIONS}
    assert {"fs_empty", "fs_link_folder"} <= {k[0] for k in keys}
    assert len(graded.rows) == len(rows)


@pytest.mark.slow
def test_names_that_look_alike_are_told_apart_in_the_gradebook(graded):
    names = {_unquote(r["student"]) for r in csv.DictReader(io.StringIO(graded.csv_bytes.decode()))}
    assert {"twin\\n", "twin\\r"} <= names  # the line feed and carriage return, escaped
    nfc, nfd = SHOWN["Jos\u00e9"], SHOWN["Jose\u0301"]
    assert nfc != nfd
    assert {nfc, nfd} <= names
    assert "\\xe9" in nfc  # each followed by the code points that tell it apart
    assert "\\u0301" in nfd


@pytest.mark.slow
def test_no_csv_cell_starts_like_a_formula(graded):
    cells = [
        cell for row in csv.reader(io.StringIO(graded.csv_bytes.decode("utf-8"))) for cell in row
    ]
    assert cells
    bad = [c for c in cells if c.startswith(FORMULA_STARTS)]
    assert not bad, bad[:5]
    names = {r["student"] for r in csv.DictReader(io.StringIO(graded.csv_bytes.decode()))}
    assert {"=2+5", "@SUM(A1)", "-2+3"} & names == set()
    assert {_unquote(n) for n in names} >= {"=2+5", "@SUM(A1)", "-2+3"}


@pytest.mark.slow
def test_the_submissions_folder_is_unchanged_byte_for_byte(graded):
    assert graded.after == graded.before


@pytest.mark.slow
def test_no_file_the_attacks_aimed_at_the_host_exists(graded):
    assert graded.canaries_before == []
    assert graded.canaries_after == []
    journal = graded.gradebook.name + ".journal"
    assert graded.gradebook_dir == sorted([graded.gradebook.name, journal])


@pytest.mark.slow
def test_no_process_started_by_grading_survives_it(graded):
    assert graded.survivors == []
    assert graded.survivors_later == []


@pytest.mark.slow
def test_the_gradebook_is_not_touched_after_it_is_written(graded):
    assert graded.csv_bytes_later == graded.csv_bytes
    assert graded.gradebook_stat_later == graded.gradebook_stat


@pytest.mark.slow
def test_nothing_reached_this_process_from_a_sandbox(graded):
    assert graded.received == []
    assert graded.signals == []


@pytest.mark.slow
def test_the_seed_and_the_solutions_never_reach_the_gradebook(graded):
    text = graded.csv_bytes.decode("utf-8")
    assert SEED not in text
    assert grader.SEED_ENV not in text
    assert "BEGIN SOLUTION" not in text
    assert graded.targets.token not in text


@pytest.mark.slow
def test_the_rows_returned_are_the_rows_written(graded):
    table = graded.table()
    for row in graded.rows:
        written = table[(row["student"], row["question"].rpartition(":")[2])]
        assert float(written["score"]) == float(row["score"])


# =========================================================================== no sandbox: refused
def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "submissions" / "ana"
    folder.mkdir(parents=True)
    (folder / f"{hx.EXERCISE}.ipynb").write_bytes(hx.SOLUTION.read_bytes())
    return folder.parent


def test_grade_refuses_when_the_sandbox_cannot_run_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "problem", lambda: "user namespaces are off (a test says so)")
    out = tmp_path / "gradebook.csv"
    with pytest.raises(grader.SandboxUnavailable) as info:
        grader.grade(_folder(tmp_path), out, seed=STRONG, jobs=2)
    assert "user namespaces are off (a test says so)" in str(info.value)
    assert "--no-sandbox" in str(info.value)
    assert not out.exists()


def test_without_bwrap_on_the_path_the_reason_names_bubblewrap(tmp_path, monkeypatch):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(sandbox, "_PROBLEM", [])  # the answer is cached once per process
    reason = sandbox.problem()
    assert reason is not None
    assert "bubblewrap" in reason
    with pytest.raises(grader.SandboxUnavailable, match="--no-sandbox"):
        grader.grade(_folder(tmp_path), tmp_path / "gradebook.csv", seed=STRONG)


def test_the_command_line_exits_2_and_says_why(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sandbox, "problem", lambda: "user namespaces are off (a test says so)")
    out = tmp_path / "gradebook.csv"
    code = cli(["grade", str(_folder(tmp_path)), "-o", str(out), "--seed", STRONG])
    err = capsys.readouterr().err
    assert code == 2
    assert "user namespaces are off (a test says so)" in err
    assert "--no-sandbox" in err
    assert not out.exists()


@pytest.mark.slow
def test_the_command_line_without_bwrap_on_the_path_exits_2(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    out = tmp_path / "gradebook.csv"
    proc = subprocess.run(
        [sys.executable, "-m", "attnlib.grading", "grade", str(_folder(tmp_path)), "-o", str(out)],
        env={"PATH": str(empty), "HOME": str(tmp_path), grader.SEED_ENV: STRONG, "LANG": "C.UTF-8"},
        capture_output=True,
        text=True,
        timeout=900,  # a backstop: the command ends in seconds
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "bubblewrap" in proc.stderr
    assert "--no-sandbox" in proc.stderr
    assert not out.exists()


# =========================================================================== holes found
def _two_students(tmp_path: Path, bad_cells: list[str]) -> tuple[Path, Path]:
    """A folder with the solution (``good``) and a wrong answer with ``bad_cells`` (``bad``)."""
    subs = tmp_path / "submissions"
    (subs / "good").mkdir(parents=True)
    (subs / "good" / f"{hx.EXERCISE}.ipynb").write_bytes(hx.SOLUTION.read_bytes())
    case = hx.Case("bad", "hostile", "", dict(hx.ZERO), softmax=hx.ZEROS, cells=bad_cells)
    (subs / "bad").mkdir()
    nb = hx.notebook(case, hx.Targets.placeholder())
    (subs / "bad" / f"{hx.EXERCISE}.ipynb").write_text(json.dumps(nb, ensure_ascii=False))
    return subs, tmp_path / "gradebook.csv"


@pytest.mark.slow
@pytest.mark.parametrize(
    "bad_cell",
    [
        pytest.param("x = " + "+".join(["1"] * 200_000), id="a-sum-too-deep-for-ast"),
        pytest.param("x = " + "-" * 100_000 + "1", id="a-unary-chain-too-deep-for-the-parser"),
        pytest.param(
            'x = "' + "\U0001f600" * (3 * 2**20) + '"', id="a-cell-over-the-message-limit"
        ),
    ],
)
def test_one_notebook_the_grader_cannot_handle_costs_only_its_own_points(tmp_path, bad_cell):
    """A notebook's content must never stop the batch: the others are graded, it scores 0."""
    subs, out = _two_students(tmp_path, [bad_cell])
    rows = grader.grade(subs, out, seed=STRONG, jobs=2, timeout=WALL_BACKSTOP, limits=LIMITS)
    scores = {(r["student"], r["question"].rpartition(":")[2]): r["score"] for r in rows}
    assert scores == {
        ("bad", hx.Q1): 0.0,
        ("bad", hx.Q2): 0.0,
        ("good", hx.Q1): 4.0,
        ("good", hx.Q2): 4.0,
    }


_RACE = """
import os, subprocess, sys
from pathlib import Path
from attnlib.grading import grader
from attnlib.grading.questions import EXERCISES

held = set()

def hold():  # fds 3 and 4 belong to another part of this program (another session's files)
    while not {3, 4} <= held:
        fd = os.open(os.devnull, os.O_RDONLY)
        if fd > 4:
            os.close(fd)
            return
        held.add(fd)

real = subprocess._fork_exec  # what Popen calls to start a process

def fork_exec(*args):
    for fd in sorted(held):  # ... which it closes just before this process starts a worker
        os.close(fd)
    held.clear()
    try:
        return real(*args)
    finally:
        hold()

hold()
subprocess._fork_exec = fork_exec
results = grader.grade_notebook(
    Path(sys.argv[1]).read_bytes(), EXERCISES["01_masked_softmax"], sys.argv[2], student="ana"
)
print(sum(r.score for r in results.values()))
"""


@pytest.mark.slow
def test_a_worker_starts_whatever_fds_3_and_4_are_in_the_grader(tmp_path):
    """A process that grades may have other descriptors coming and going while it starts a
    worker; the start must not depend on fds 3 and 4 being open in it then."""
    proc = subprocess.run(
        [sys.executable, "-c", _RACE, str(hx.SOLUTION), STRONG],
        capture_output=True,
        text=True,
        timeout=900,  # a backstop: the command ends in seconds
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-600:]
    assert proc.stdout.strip() == "8.0"


# =========================================================================== the grader's process
_PARSE = """
import json, resource, sys
from pathlib import Path
from attnlib.grading import grader
folder = Path(sys.argv[1])
(entry,) = grader.scan(folder).notebooks
read = grader._read_entry(folder, entry, sources=True)
assert "error" not in read, read
hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")][0]
print(json.dumps({
    "self": int(hwm.split()[1]),  # this process's own peak (getrusage keeps its parent's fork)
    "children": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    "code": sum(len(c["source"]) for c in read["cells"]),
}))
"""


@pytest.mark.slow
def test_the_grader_parses_no_notebook_in_its_own_process(tmp_path):
    """Three code cells of 0.9 MB of statements (a parse takes hundreds of MB each) are read
    by the reader, a child process with limits: the grader's own peak memory stays that of a
    process that has only imported the grader."""
    nb = json.loads(hx.SOLUTION.read_text())
    dense = "_x = 1\n" * 130_000  # 0.9 MB, under the reader's 1 MB per cell
    nb["cells"] += [hx._code(dense) for _ in range(3)]
    (tmp_path / "subs" / "ana").mkdir(parents=True)
    (tmp_path / "subs" / "ana" / f"{hx.EXERCISE}.ipynb").write_text(json.dumps(nb))
    proc = subprocess.run(
        [sys.executable, "-c", _PARSE, str(tmp_path / "subs")],
        capture_output=True,
        text=True,
        timeout=900,  # a backstop: the reading takes seconds
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-800:]
    used = json.loads(proc.stdout)
    assert used["code"] > 3 * len(dense) - 1
    assert used["children"] > 200_000  # kB: the parse did cost (300 MB a cell), in the reader
    assert used["self"] < 150_000  # kB: not in the grader (which has imported numpy, no more)


@pytest.mark.slow
def test_a_reader_out_of_its_limits_costs_only_that_notebook():
    """A notebook the reader cannot parse within its memory (JSON of 40 million empty lists)
    is reported as not readable, with why; the reader's limits are what stopped it."""
    chunk = b"[]," * (1 << 20)

    def feed(write):
        write(b'{"cells": [], "x": [')
        for _ in range(40):
            write(chunk)
        write(b"[]]}")

    got = reader.run(feed)
    assert got["error"].startswith("not readable within the reader's limits")
