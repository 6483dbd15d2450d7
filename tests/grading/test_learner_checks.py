"""attnlib.grading, the learner's side: the pure-Python references, the checks, the notebook's grader.

The trusted side (channel, sandbox, worker, grader) is tested in tests/grading/test_grader.py.
"""

from __future__ import annotations

import html
import math
import sys

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnlib import grading as g
from conftest import finite


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

    # spins never ends: the CPU-time limit stops it
    with pytest.raises(AssertionError, match=r"used more than 0\.2 s of CPU time"):
        g.call(spins, seconds=0.2)


# --------------------------------------------------------------------------- the grader in a notebook
def test_public_checks_name_the_exercises_when_asked_for_an_unknown_one():
    with pytest.raises(ValueError, match=r"no exercise named '06_transformer'.*01_masked_softmax"):
        g.public_checks("06_transformer.ipynb")


# The learner's answers as a notebook holds them: module-level functions, so that their source
# can be read (as IPython keeps a cell's source) and a template's ``...`` seen.
def stable_softmax(e):
    z = np.exp(e - np.max(e, axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def unnormalised_softmax(e):
    return np.exp(e)


def template_softmax(e):
    """Attention weights alpha (..., T_x) from scores e (..., T_x), over the last axis."""
    e = np.asarray(e, dtype=float)
    ...


def softmax_without_return(e):
    np.exp(e)


def softmax_not_implemented(e):
    raise NotImplementedError("softmax")


def softmax_that_breaks(e):
    return {}["no such key"]


class TemplateAttention(torch.nn.Module):
    def __init__(self, d_s, d_h, d_a):
        super().__init__()

    def forward(self, s_prev, h, mask=None): ...


Q1_SUCCESS = "Well done: your weights are a distribution over the T_x positions."
Q1_FAILURE = (
    "Not yet. For e = [2.0, 1.0, 0.1] each weight is exp(e_i) divided by the sum of all exp(e_j)."
)


def test_a_correct_answer_passes_every_case_with_its_success_message():
    grader = g.student_notebook("01_masked_softmax.ipynb")
    result = grader.check("q1_softmax", {"softmax": stable_softmax})
    assert (result.passed, result.status, result.score, result.possible) == (True, "passed", 1, 1)
    assert [(c.name, c.status, c.message, c.detail) for c in result.cases] == [
        ("small scores", "passed", Q1_SUCCESS, "")
    ]
    assert repr(result).splitlines() == [
        "q1_softmax: passed (1/1)",
        f"  ✔ small scores: {Q1_SUCCESS}",
    ]
    assert "q1_softmax: passed (1/1)" in result._repr_html_()


def test_a_wrong_answer_fails_with_the_failure_message_and_what_the_assertion_said():
    grader = g.student_notebook("01_masked_softmax.ipynb")
    result = grader.check("q1_softmax", {"softmax": unnormalised_softmax})
    assert (result.passed, result.status, result.score, result.possible) == (False, "failed", 0, 1)
    (case,) = result.cases
    assert (case.status, case.message) == ("failed", Q1_FAILURE)
    assert case.detail == (
        "softmax([2.0, 1.0, 0.1]) is not right yet: entry 0 (flat index) is 7.38906, "
        "expected 0.659001"
    )
    text = repr(result)
    assert text.splitlines()[0] == "q1_softmax: not yet (0/1)"
    assert Q1_FAILURE in text
    assert case.detail in text
    page = result._repr_html_()
    assert html.escape(Q1_FAILURE) in page
    assert html.escape(case.detail) in page


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (template_softmax, "softmax still holds `...`"),
        (softmax_without_return, "is None: the function does not return anything yet"),
        (softmax_not_implemented, "is not written yet (it raised NotImplementedError: softmax)"),
        (None, "softmax is not defined yet: write it and run its cell"),
    ],
    ids=["template", "no-return", "not-implemented", "not-defined"],
)
def test_an_answer_not_written_yet_reads_not_answered_yet_not_a_failure(answer, why):
    grader = g.student_notebook("01_masked_softmax.ipynb")
    env = {} if answer is None else {"softmax": answer}
    result = grader.check("q1_softmax", env)
    assert (result.status, result.score, result.possible) == ("not answered", 0, 1)
    (case,) = result.cases
    assert case.status == "not answered"
    assert why in case.message
    assert case.detail == ""
    text = repr(result)
    assert text.splitlines()[0] == "q1_softmax: not answered yet"
    assert Q1_FAILURE not in text  # no failure message, no assertion text
    assert "not answered yet" in result._repr_html_()


def test_a_template_that_happens_to_pass_is_a_pass_and_an_error_in_an_answer_is_a_failure():
    # "..." left below a working body: the check passes, and that is what it says
    def finished_but_dotted(e):
        z = np.exp(e - np.max(e))
        return z / z.sum()
        ...

    grader = g.student_notebook("01_masked_softmax.ipynb")
    assert grader.check("q1_softmax", {"softmax": finished_but_dotted}).status == "passed"
    # an answer that raises something other than NotImplementedError is written, and wrong
    broken = grader.check("q1_softmax", {"softmax": softmax_that_breaks})
    assert broken.status == "failed"
    assert broken.cases[0].detail == "softmax_that_breaks raised KeyError: 'no such key'"


def test_a_class_whose_methods_still_hold_the_template_is_not_answered_yet():
    grader = g.student_notebook("04_attention_module.ipynb")
    result = grader.check("q1_module", {"MyAdditiveAttention": TemplateAttention})
    assert result.status == "not answered"
    assert "MyAdditiveAttention still holds `...`" in result.cases[0].message


def _shell_with_history(monkeypatch, *cells):
    """An IPython stand-in whose input history (``In``) holds ``cells``."""
    from types import SimpleNamespace

    shell = SimpleNamespace(user_ns={"In": ["", *cells]})
    monkeypatch.setitem(sys.modules, "IPython", SimpleNamespace(get_ipython=lambda: shell))


def test_a_value_set_by_a_template_cell_is_not_answered_yet_and_by_a_written_one_is_checked(
    monkeypatch,
):
    from attnlib.models import make_seq2seq

    model = make_seq2seq(6, 6)
    model.decoder.attention = None
    grader = g.student_notebook("04_attention_module.ipynb")
    template = "model = make_seq2seq(6, 6)\nmodel.decoder.attention = None\n...\n"
    _shell_with_history(monkeypatch, template, 'grader.check("q2_trained")')
    result = grader.check("q2_trained", {"model": model})
    assert result.status == "not answered"
    assert result.cases[0].message.startswith("the cell that sets model still holds `...`")
    written = "model = make_seq2seq(6, 6)\nmodel.decoder.attention = None\n"
    _shell_with_history(monkeypatch, template, written, 'grader.check("q2_trained")')
    result = grader.check("q2_trained", {"model": model})
    assert result.status == "failed"
    assert "should be your MyAdditiveAttention, but it is NoneType" in result.cases[0].detail


def test_check_reads_the_callers_globals_and_check_all_runs_every_question_in_order():
    grader = g.student_notebook("01_masked_softmax.ipynb")
    namespace = {"grader": grader, "softmax": stable_softmax}
    exec("result = grader.check('q1_softmax')\nreport = grader.check_all()", namespace)
    assert namespace["result"].passed
    report = namespace["report"]
    assert [r.question for r in report.results] == grader.questions
    assert grader.questions == ["q1_softmax", "q2_masked_softmax"]
    assert [r.status for r in report.results] == ["passed", "not answered"]
    assert (report.score, report.possible) == (1, 2)
    assert report["q2_masked_softmax"].status == "not answered"
    assert repr(report).splitlines()[0] == (
        "01_masked_softmax: 1 of 2 questions pass their public checks (1/2 points)"
    )


def test_the_checks_name_an_unknown_exercise_or_question():
    with pytest.raises(ValueError, match=r"no exercise named '06_transformer'.*01_masked_softmax"):
        g.student_notebook("06_transformer.ipynb")
    grader = g.student_notebook("01_masked_softmax.ipynb")
    with pytest.raises(ValueError, match=r"has no question 'q3'; its questions are \['q1_softmax'"):
        grader.check("q3", {})


HEADER = "from otter.test_files import test_case\n\nOK_FORMAT = False\n\nname = 'q'\n"


def _case(decorator: str, body: str = "assert x == 1", params: str = "x") -> str:
    return f"\n@test_case({decorator})\ndef test_it_{abs(hash(decorator + body))}({params}):\n    {body}\n"


def test_a_test_file_runs_without_otter_and_reports_a_bare_assert_by_its_line():
    source = HEADER + "points = None\n" + _case("points=2, failure_message='x must be 1'")
    source += _case("points=1", "assert env['x'] + 1 == 2", "env")
    grader = g.notebook.NotebookChecks("mine", {"q": source})
    ok = grader.check("q", {"x": 1})
    assert (ok.score, ok.possible, ok.status) == (3, 3, "passed")
    bad = grader.check("q", {"x": 2})
    assert [c.status for c in bad.cases] == ["failed", "failed"]
    assert bad.cases[0].message == "x must be 1"
    assert bad.cases[0].detail == "the check failed\n(at: assert x == 1)"
    assert bad.score == 0


@pytest.mark.parametrize(
    ("source", "error", "match"),
    [
        (
            HEADER + "from otter.test_files import TestFile\n" + _case(""),
            ValueError,
            "import from otter",
        ),
        (
            HEADER.replace("test_case", "test_case, TestFile", 1) + _case(""),
            ValueError,
            "import from otter",
        ),
        (HEADER + "points = 'all'\n" + _case(""), TypeError, "must be a number or a list"),
        (HEADER + "points = 1\n" + _case("points=2"), ValueError, "more than the total"),
        (HEADER + "points = [1, 2]\n" + _case(""), ValueError, "2 values for 1 test cases"),
        (HEADER + _case("points='2'"), TypeError, "points must be a number"),
        (HEADER, ValueError, "hold no test case"),
        (HEADER + "def (:\n", ValueError, "not valid Python"),
    ],
    ids=[
        "other-import",
        "import-list",
        "points-text",
        "over-total",
        "list-length",
        "case-text",
        "empty",
        "syntax",
    ],
)
def test_a_test_file_it_cannot_read_is_refused_with_a_reason(source, error, match):
    with pytest.raises(error, match=match):
        g.notebook.NotebookChecks("mine", {"q": source})


@pytest.mark.parametrize(
    ("total", "given"),
    [
        (None, [1, 1]),
        (None, [None, None]),
        (None, [0, None, None]),
        (None, [2, None]),
        (4, [None, None]),
        (5, [1, None, None]),
        ([1, 2, 3], [None, 7, None]),
        (3, [3, None]),
    ],
)
def test_points_are_shared_among_cases_as_otter_shares_them(total, given):
    from otter.test_files.abstract_test import TestCase, TestFile

    cases = [TestCase(f"c{k}", None, False, p, None, None) for k, p in enumerate(given)]
    theirs = [tc.points for tc in TestFile.resolve_test_file_points(total, cases)]
    source = HEADER + f"points = {total!r}\n"
    source += "".join(
        _case("" if p is None else f"points={p}", body=f"pass  # {k}") for k, p in enumerate(given)
    )
    ours = [
        c.points
        for c in g.notebook.NotebookChecks("mine", {"q": source}).check("q", {"x": 1}).cases
    ]
    assert ours == pytest.approx(theirs)


def test_build_and_grade_stay_functions_once_their_modules_are_imported():
    # importing a submodule binds its name on the package: a module named like a function
    # the package re-exports would shadow it (``grading.build`` was once the module)
    import importlib
    import inspect

    for module in ("attnlib.grading.assign", "attnlib.grading.grader"):
        importlib.import_module(module)
    assert inspect.isfunction(g.build)
    assert inspect.isfunction(g.grade)


# --------------------------------------------------------------------------- side by side with otter
def _solution_namespace(exercise: str, replace: tuple[str, str] | None = None) -> dict:
    """The globals of the solution notebook run in-process, one answer cell replaced."""
    import nbformat

    from conftest import SOLUTIONS
    from fixtures import variants as fv

    nb = nbformat.read(SOLUTIONS / f"{exercise}.ipynb", as_version=4)
    namespace: dict = {"__name__": "__main__"}
    for cell in nb.cells:
        if cell.cell_type != "code" or cell.source.lstrip().startswith(("%", "!")):
            continue
        source = cell.source
        if replace is not None and fv.binds(source, replace[0]):
            source = replace[1]
        exec(compile(source, f"<{exercise}>", "exec"), namespace)
    return namespace


def _numpy_variants() -> list:
    from fixtures import variants as fv

    return [*fv.MUTANTS, *fv.FAIR]


@pytest.mark.parametrize("variant", _numpy_variants(), ids=lambda v: f"{v.kind}-{v.label}")
def test_the_checks_pass_and_fail_every_answer_as_otter_does(variant):
    # wrong answers (mutants) and correct ones written differently (fair), each put into the
    # solution notebook: every case passes or fails as under otter's runner, at the same score,
    # and a failed case says its failure message and what the assertion said
    from otter.test_files import ExceptionTestFile

    from fixtures import variants as fv

    env = _solution_namespace(variant.exercise, (fv.defined_name(variant), variant.answer))
    grader = g.student_notebook(variant.exercise)
    for question, source in g.public_checks(variant.exercise).items():
        ours = grader.check(question, env)
        theirs = ExceptionTestFile.from_string(source, path=question)
        theirs.run(env)
        assert [c.passed for c in ours.cases] == [r.passed for r in theirs.test_case_results]
        assert (ours.score, ours.possible) == (theirs.score, theirs.possible)
        failed = [c for c in ours.cases if c.status == "failed"]
        for case, result in zip(ours.cases, theirs.test_case_results, strict=True):
            if case.status == "failed":
                assert case.message == result.test_case.failure_message
                assert case.detail  # what the assertion said
        if failed:
            assert ours.status == "failed", repr(ours)


def _fair_variants() -> list:
    from fixtures import variants as fv

    return list(fv.FAIR)


@pytest.mark.parametrize("variant", _fair_variants(), ids=lambda v: v.label)
def test_an_answer_the_grader_gives_full_marks_passes_its_public_checks(variant):
    # the learner's green check and the grader's verdict agree on every fair answer (one that
    # returns a list for a pair, say: the public check of exercise 7 used to refuse it)
    from fixtures import variants as fv

    env = _solution_namespace(variant.exercise, (fv.defined_name(variant), variant.answer))
    result = g.student_notebook(variant.exercise).check(variant.question, env)
    assert result.passed, repr(result)


@pytest.mark.parametrize(
    ("question", "function"), [("q1_greedy", "greedy_decode"), ("q2_beam", "beam_decode")]
)
def test_a_decoder_that_returns_an_empty_list_is_told_so(question, function):
    """Exercise 6's skeletons start from ``results = []``: a loop that never appends returns
    ``[]``, and the learner is told that, not only that the count of rows is wrong."""
    checks = g.notebook.NotebookChecks("06_decoding")
    (case,) = checks.check(question, {function: lambda *args, **kwargs: []}).cases
    assert case.status == "failed"
    assert f"{function} returned an empty list" in case.detail, case.detail
    assert "one list for each of the 3 rows of src" in case.detail, case.detail
