"""attnlib.grading, the learner's side: the pure-Python references, the checks, the notebook's grader.

The trusted side (channel, sandbox, worker, grader) is tested in tests/test_grader.py.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnlib import grading as g
from conftest import EXERCISES, finite


# --------------------------------------------------------------------------- references
def test_py_softmax_on_hand_values():
    assert g.py_softmax([0.0, math.log(2.0)]) == pytest.approx([1 / 3, 2 / 3])
    assert g.py_softmax([1000.0, 1000.0]) == pytest.approx([0.5, 0.5])
    assert g.py_softmax([5.0, 0.0, 1000.0], [True, True, False]) == pytest.approx(
        [math.exp(5) / (math.exp(5) + 1), 1 / (math.exp(5) + 1), 0.0]
    )


def test_py_softmax_refuses_an_empty_mask():
    with pytest.raises(ValueError, match="keep at least one position"):
        g.py_softmax([1.0, 2.0], [False, False])


@given(st.lists(finite, min_size=1, max_size=8), finite)
def test_py_softmax_is_a_distribution_and_shift_invariant(e, shift):
    alpha = g.py_softmax(e)
    assert math.fsum(alpha) == pytest.approx(1.0)
    assert min(alpha) >= 0
    assert g.py_softmax([x + shift for x in e]) == pytest.approx(alpha, abs=1e-12)


def test_py_additive_scores_on_hand_values():
    # d_s = d_h = d_a = 1: e_i = 2 tanh(0.5 + h_i)
    e = g.py_additive_scores([0.5], [[0.0], [1.0]], [[1.0]], [[1.0]], [2.0])
    assert e == pytest.approx([2 * math.tanh(0.5), 2 * math.tanh(1.5)])
    # d_s = 2, d_h = 1, d_a = 2, with v_a picking the second component
    e = g.py_additive_scores(
        [1.0, 2.0], [[3.0]], [[1.0, 0.0], [0.0, 1.0]], [[0.0], [1.0]], [0.0, 1.0]
    )
    assert e == pytest.approx([math.tanh(2.0 + 3.0)])


def test_py_context_and_entropy_on_hand_values():
    assert g.py_context([0.25, 0.75], [[1.0, 0.0], [0.0, 4.0]]) == pytest.approx([0.25, 3.0])
    assert g.py_entropy([0.25] * 4) == pytest.approx(math.log(4))
    assert g.py_entropy([0.0, 1.0, 0.0]) == 0.0
    assert g.py_entropy([0.5, 0.5], base=2) == pytest.approx(1.0)


# --------------------------------------------------------------------------- checks
def test_floats_reads_arrays_tensors_and_says_what_is_missing():
    assert g.floats(np.array([[1, 2], [3, 4]])) == ((2, 2), [1.0, 2.0, 3.0, 4.0])
    assert g.floats(torch.tensor([0.5, 1.5], requires_grad=True)) == ((2,), [0.5, 1.5])
    with pytest.raises(AssertionError, match="does not return anything yet"):
        g.floats(None, "alpha")
    with pytest.raises(AssertionError, match="could not be read as an array of numbers"):
        g.floats(["a", "b"], "alpha")


def test_assert_close_names_the_shape_or_the_entry_that_differs():
    g.assert_close(np.array([0.5, 0.25]), [0.5, 0.25])
    with pytest.raises(
        AssertionError, match=r"alpha should have shape \(3,\), but it has shape \(2,\)"
    ):
        g.assert_close(np.array([0.5, 0.5]), [0.2, 0.3, 0.5], name="alpha")
    with pytest.raises(AssertionError, match=r"entry 1 .* is 0.6, expected 0.5"):
        g.assert_close([0.5, 0.6], [0.5, 0.5], name="alpha")
    with pytest.raises(AssertionError, match="entry 0"):
        g.assert_close([float("nan")], [0.5])


def test_call_turns_every_failure_into_a_failed_check():
    assert g.call(lambda x: x + 1, 1) == 2
    with pytest.raises(AssertionError, match="softmax is not defined yet"):
        g.call(None, 1, name="softmax")

    def leaves():
        sys.exit("bye")

    with pytest.raises(AssertionError, match="leaves raised SystemExit: bye"):
        g.call(leaves)

    def spins():
        while True:
            pass

    start = time.perf_counter()
    with pytest.raises(AssertionError, match=r"ran longer than 0\.2 s"):
        g.call(spins, seconds=0.2)
    assert time.perf_counter() - start < 5


# --------------------------------------------------------------------------- the grader in a notebook
def test_public_checks_name_the_exercises_when_asked_for_an_unknown_one():
    with pytest.raises(ValueError, match=r"no exercise named '06_transformer'.*01_masked_softmax"):
        g.public_checks("06_transformer.ipynb")


def test_student_notebook_reads_the_notebook_on_disk_when_it_is_there(tmp_path, monkeypatch):
    name = "01_masked_softmax.ipynb"
    (tmp_path / name).write_bytes((EXERCISES / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    grader = g.student_notebook(name)
    assert grader._notebook == name
    assert not Path(grader._tests_dir).is_dir()  # otter falls back to the notebook's metadata
    result = grader.check("q1_softmax", {"softmax": lambda e: np.exp(e) / np.exp(e).sum()})
    assert (result.score, result.possible) == (1, 1)


def test_student_notebook_uses_the_shipped_checks_for_a_renamed_copy(tmp_path, monkeypatch):
    name = "01_masked_softmax.ipynb"
    (tmp_path / "01_masked_softmax (1).ipynb").write_bytes((EXERCISES / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    grader = g.student_notebook(name)
    folder = Path(grader._tests_dir)
    assert folder.is_dir()
    assert folder.parent != tmp_path
    written = {p.stem: p.read_text() for p in folder.glob("*.py")}
    assert written == g.public_checks(name)
    unnormalised = grader.check("q1_softmax", {"softmax": lambda e: np.exp(e)})
    assert (unnormalised.score, unnormalised.possible) == (0, 1)
    stable = grader.check(
        "q1_softmax", {"softmax": lambda e: np.exp(e - e.max()) / np.exp(e - e.max()).sum()}
    )
    assert (stable.score, stable.possible) == (1, 1)


def test_student_notebook_says_how_to_install_otter_when_it_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "otter", None)  # import otter now raises ModuleNotFoundError
    with pytest.raises(ModuleNotFoundError, match=r'pip install "attnlib\[exercises\]"'):
        g.student_notebook("01_masked_softmax.ipynb")


def test_build_and_grade_stay_functions_once_their_modules_are_imported():
    # importing a submodule binds its name on the package: a module named like a function
    # the package re-exports would shadow it (``grading.build`` was once the module)
    import importlib
    import inspect

    for module in ("attnlib.grading.assign", "attnlib.grading.grader"):
        importlib.import_module(module)
    assert inspect.isfunction(g.build)
    assert inspect.isfunction(g.grade)
