"""attnlib.grading, the trusted side: the channel, the sandbox, one worker's session, the grader's rules.

The hostile class is tests/grading/test_hostile.py; the wrong-but-plausible and the fair answers are
tests/grading/test_variants.py and tests/grading/test_grading_torch.py.
"""

from __future__ import annotations

import csv
import json
import math
import os

import nbformat
import numpy as np
import pytest

from attnlib.grading import cases, channel, grader, sandbox, session
from attnlib.grading.questions import EXERCISES
from conftest import EXERCISES as EXERCISE_DIR
from conftest import SOLUTIONS


# --------------------------------------------------------------------------- the channel
def test_a_message_round_trips_with_non_finite_numbers_in_arrays():
    msg = {"id": 3, "ok": True, "value": channel.array((2,), "float64", [math.nan, -math.inf])}
    back = channel.decode(channel.encode(msg).rstrip(b"\n"))
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
        channel.decode(line)


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
    assert 10 < len(prog) // 8 < 40
    assert sandbox.seccomp_filter("sparc") is None


def test_the_staged_attnlib_switches_off_what_the_exercise_asks_for(tmp_path):
    stage = sandbox.stage(
        tmp_path, "01_masked_softmax", ["core.softmax", "models.AdditiveAttention.scores"]
    )
    core = (stage / "attnlib" / "core.py").read_text()
    assert "attnlib's softmax is switched off while 01_masked_softmax is graded" in core
    assert "attnlib's additive_scores is switched off" not in core
    models = (stage / "attnlib" / "models.py").read_text()
    assert "attnlib's AdditiveAttention.scores is switched off" in models
    grading = sorted(p.name for p in (stage / "attnlib" / "grading").iterdir())
    assert grading == ["__init__.py", "channel.py", "worker.py"]  # no case, no seed, no grader
    assert not (stage / "attnlib" / "exercise_checks").exists()


def test_staging_refuses_a_name_that_does_not_exist(tmp_path):
    with pytest.raises(ValueError, match="cannot switch off"):
        sandbox.stage(tmp_path, "x", ["core.no_such_function"])
    with pytest.raises(ValueError, match="no attnlib module"):
        sandbox.stage(tmp_path / "b", "x", ["nowhere.f"])


def test_bubblewrap_runs_here():
    # make test installs bubblewrap (Makefile, target sandbox): on this machine it must work
    assert sandbox.problem() is None


@pytest.fixture(scope="module")
def stage(tmp_path_factory):
    return sandbox.stage(tmp_path_factory.mktemp("stage"), "01_masked_softmax", ["core.softmax"])


def _session(stage, **kw):
    return session.Session(
        stage, b'{"cells": []}', "01_masked_softmax.ipynb", sandbox.Limits(), **kw
    )


@pytest.mark.slow
def test_a_worker_sees_only_its_notebook_and_no_network(stage, tmp_path):
    s = _session(stage)
    try:
        probe = grader._Probe(s, 10)
        s.cell(
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
            10,
        )
        seen = probe.call("look")
    finally:
        s.close()
    assert seen == [["01_masked_softmax.ipynb"], sandbox.UID, False, "no network", "no fork"]


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


def test_the_cpu_time_of_a_process_tree_is_read_from_proc():
    """What the grader reads of a sandbox's processes: a child that has computed for 0.3 s of
    CPU time (by its own count) shows that much, whatever the machine's load."""
    import subprocess
    import sys

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


# --------------------------------------------------------------------------- which cell is graded
def test_the_answer_is_the_last_definition_above_the_check_cell():
    sources = [
        "import numpy as np",
        "def softmax(e):\n    return 1",
        "def softmax(e):\n    return 2",
        'grader.check("q1_softmax")',
        "softmax = None  # scratch",
        "masked_softmax = lambda e, m: e",
    ]
    plan = grader.answer_cells(sources, EXERCISES["01_masked_softmax"])
    assert plan == {2: ["q1_softmax"], 5: ["q2_masked_softmax"]}


def test_defines_reads_names_without_running_anything():
    assert grader._defines(
        "def f(): pass\nclass C: pass\na, (b, c) = 1, (2, 3)\nimport x.y as z"
    ) == {"f", "C", "a", "b", "c", "z"}
    assert grader._defines("%matplotlib inline\ndef softmax(e):\n    pass") == {"softmax"}


def _nb(cells, metadata=None):
    return json.dumps(
        {"cells": cells, "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": 5}
    ).encode()


def test_an_exercise_is_recognised_without_its_metadata():
    known = EXERCISES
    md = {"cell_type": "markdown", "source": ["(ex)=\n", "# Exercise 1: a stable softmax"]}
    code = {"cell_type": "code", "source": "def softmax(e): pass\ndef masked_softmax(e, m): pass"}
    sub = grader.Submission
    assert grader.identify(sub("a", "a/homework.ipynb", _nb([md])), known) == "01_masked_softmax"
    assert grader.identify(sub("a", "a/hw.ipynb", _nb([code])), known) == "01_masked_softmax"
    assert grader.identify(sub("a", "a/x_01_masked_softmax (2).ipynb", _nb([])), known) == (
        "01_masked_softmax"
    )
    assert grader.identify(sub("a", "a/holiday.ipynb", _nb([])), known) is None
    assert grader.identify(sub("a", "a/bad.ipynb", b"\x00not json"), known) is None


def test_csv_cells_never_start_a_formula():
    assert grader._safe("=2+5") == "'=2+5"
    assert grader._safe("@SUM(A1)") == "'@SUM(A1)"
    assert grader._safe("-1") == "'-1"
    assert grader._safe("ana\nbob") == "ana?bob"
    assert grader._safe("ana") == "ana"


def test_the_seed_is_required_and_named(monkeypatch):
    monkeypatch.delenv(grader.SEED_ENV, raising=False)
    with pytest.raises(ValueError, match="ATTNLIB_GRADING_SEED"):
        grader.private_seed(None)
    monkeypatch.setenv(grader.SEED_ENV, "s")
    assert grader.private_seed(None) == "s"


def test_the_draws_depend_on_the_seed_and_the_place_only():
    a = cases.rng_for("s1", "01", "q1", "rows").normal(size=4)
    assert np.array_equal(a, cases.rng_for("s1", "01", "q1", "rows").normal(size=4))
    assert not np.array_equal(a, cases.rng_for("s2", "01", "q1", "rows").normal(size=4))
    assert not np.array_equal(a, cases.rng_for("s1", "01", "q1", "other").normal(size=4))


def test_the_folder_scan_reads_regular_files_only(tmp_path):
    subs = tmp_path / "subs"
    (subs / "ana").mkdir(parents=True)
    (subs / "ana" / "01_masked_softmax.ipynb").write_bytes(_nb([]))
    (subs / "ana" / "notes.txt").write_text("x")
    (subs / "ana" / ".ipynb_checkpoints").mkdir()
    (subs / "bob").symlink_to(subs / "ana")
    (subs / "cy").mkdir()
    (subs / "cy" / "pipe.ipynb").parent.mkdir(exist_ok=True)
    os.mkfifo(subs / "cy" / "pipe.ipynb")
    (subs / "cy" / "folder.ipynb").mkdir()
    (subs / "cy" / "gone.ipynb").symlink_to(tmp_path / "nowhere")
    (subs / "dee").mkdir()
    (subs / "eve.ipynb").write_bytes(_nb([]))
    found = grader.scan(subs)
    assert found.students == ["ana", "bob", "cy", "dee", "eve"]
    assert [(s.student, s.path) for s in found.notebooks] == [
        ("ana", "ana/01_masked_softmax.ipynb"),
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
    rows = grader.grade(subs, gradebook, seed="rows", jobs=2)
    with open(gradebook, newline="") as f:
        written = list(csv.DictReader(f))
    assert [(r["student"], r["question"], r["score"]) for r in written] == [
        ("'=2+5", "01_masked_softmax:q1_softmax", "0.0"),
        ("'=2+5", "01_masked_softmax:q2_masked_softmax", "0.0"),
        ("ana", "01_masked_softmax:q1_softmax", "4.0"),
        ("ana", "01_masked_softmax:q2_masked_softmax", "4.0"),
    ]
    assert rows[0]["note"] == "no submission"
    assert "also handed in, not graded: zz_copy_01_masked_softmax.ipynb" in rows[2]["note"]
    assert [p.name for p in gradebook.parent.iterdir()] == ["gradebook.csv"]  # no temp file left


@pytest.mark.slow
def test_a_hang_costs_only_the_cell_that_hangs(tmp_path, stage):
    nb = nbformat.read(SOLUTIONS / "01_masked_softmax.ipynb", as_version=4)
    nb.cells.insert(3, nbformat.v4.new_code_cell(DEAF_SPIN))
    exercise = EXERCISES["01_masked_softmax"]
    quick = cases.Exercise(exercise.name, exercise.number, exercise.questions, cell_seconds=2)
    results = grader.grade_notebook(nbformat.writes(nb).encode(), quick, "hang", stage)
    assert {q: r.score for q, r in results.items()} == {"q1_softmax": 4, "q2_masked_softmax": 4}


def test_a_file_that_is_not_a_notebook_scores_zero_with_a_note(stage):
    results = grader.grade_notebook(b"PK\x03\x04 a zip", EXERCISES["01_masked_softmax"], "s", stage)
    assert all(r.score == 0 and "not a readable notebook" in r.notes[0] for r in results.values())


def test_without_the_sandbox_grading_is_refused_unless_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "problem", lambda: "bubblewrap is not installed (test)")
    (tmp_path / "subs").mkdir()
    with pytest.raises(grader.SandboxUnavailable, match=r"not installed \(test\).*--no-sandbox"):
        grader.grade(tmp_path / "subs", tmp_path / "g.csv", seed="s")
    assert not (tmp_path / "g.csv").exists()
    assert grader.grade(tmp_path / "subs", tmp_path / "g.csv", seed="s", isolate=False) == []


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
