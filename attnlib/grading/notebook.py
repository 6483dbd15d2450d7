"""The ``grader`` of each exercise notebook: runs a question's public tests in the learner's kernel.

Learner side: imported by the first code cell of every exercise notebook, on Binder, on
Colab, from the notebooks' zip or in the course's own environment. It needs nothing beyond
attnlib (no otter-grader, which stays on the instructor's side for ``otter assign``).

``make exercises`` ships each exercise's public tests inside attnlib
(``attnlib/exercise_checks/NAME.json``, :func:`public_checks`), so the checks are the same
wherever the notebook is opened, saved beside the kernel or not (Colab). A test file is in
otter-grader's exception format: Python source whose ``@test_case(points=...,
hidden=..., success_message=..., failure_message=...)`` functions take as parameters the
names of the notebook's variables they check. :class:`NotebookChecks` reads it with :mod:`ast`,
drops its ``from otter.test_files import test_case`` line, runs the rest with its own
:class:`test_case`, and calls each case with the learner's values. The result,
:class:`CheckResult`, shows each case as passed (with its success message), failed (with
its failure message and what the assertion said) or **not answered yet**: a case that
failed because the answer is still the template (the function is not defined, still holds
``...``, returns ``None`` or raises ``NotImplementedError``) says so in one line instead of
a failure.

Points follow otter's rules (a case's ``points``; a file's ``points``, a total or a list,
shared among the cases that name none), so a score here is the score otter gives.
``tests/grading/test_exercises.py`` holds the two side by side on the solution and blank notebooks.

These checks give feedback; they are not the grade (README, "For instructors"): the trusted
grader runs each notebook in a sandbox, where ``student_notebook`` is replaced by one
whose checks do nothing (:mod:`.sandbox`), and checks it with hidden cases.

Examples
--------
>>> from attnlib.grading import student_notebook
>>> grader = student_notebook("01_masked_softmax.ipynb")
>>> import numpy as np
>>> def softmax(e):
...     z = np.exp(e - np.max(e))
...     return z / z.sum()
>>> grader.check("q1_softmax", {"softmax": softmax}).passed
True
"""

from __future__ import annotations

import ast
import html
import inspect
import json
import sys
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnlib.grading.checks import NotAnswered

__all__ = [
    "CHECKS_DIR",
    "CaseResult",
    "CheckResult",
    "NotebookChecks",
    "Report",
    "public_checks",
    "student_notebook",
    "test_case",
]

CHECKS_DIR = Path(__file__).resolve().parents[1] / "exercise_checks"
"""Where ``make exercises`` puts each exercise's public tests (package data, committed)."""

PASSED, FAILED, NOT_ANSWERED = "passed", "failed", "not answered"
"""The three states of a test case, as :attr:`CaseResult.status` holds them."""

_OTTER_IMPORT = ("otter.test_files", "test_case")


def public_checks(name: str) -> dict[str, str]:
    """The public tests of exercise ``name``, as shipped inside attnlib.

    Parameters
    ----------
    name : str
        The exercise's notebook name, with or without ``.ipynb``
        (e.g. ``"01_masked_softmax"``).

    Returns
    -------
    dict
        Question name → test file source (otter's exception format, public cases only).

    Raises
    ------
    ValueError
        If there is no exercise of that name.
    """
    stem = Path(name).stem
    path = CHECKS_DIR / f"{stem}.json"
    if not path.is_file():
        known = sorted(p.stem for p in CHECKS_DIR.glob("*.json"))
        raise ValueError(f"there is no exercise named {stem!r}; the exercises are {known}")
    tests: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))["tests"]
    return tests


# =========================================================================== test files
class test_case:
    """The decorator of a test file's cases, in otter-grader's exception format.

    Parameters
    ----------
    name : str, optional
        The case's name (default: its function's name without ``test_``, e.g.
        ``"small scores"``).
    points : int or float, optional
        What the case is worth (see :func:`_resolve_points`).
    hidden : bool
        Whether the case is hidden (the shipped files hold public cases only).
    success_message, failure_message : str, optional
        What the learner reads when the case passes, or fails.
    """

    __test__ = False  # a decorator, not a test class for pytest to collect

    def __init__(
        self,
        name: str | None = None,
        points: float | None = None,
        hidden: bool = False,
        success_message: str | None = None,
        failure_message: str | None = None,
    ) -> None:
        if points is not None and (isinstance(points, bool) or not isinstance(points, int | float)):
            raise TypeError(f"a test case's points must be a number, got {points!r}")
        self.name = name
        self.points = points
        self.hidden = bool(hidden)
        self.success_message = success_message
        self.failure_message = failure_message
        self.func: Callable[..., Any] | None = None

    def __call__(self, func: Callable[..., Any]) -> test_case:
        self.func = func
        if self.name is None:
            self.name = func.__name__.removeprefix("test_").replace("_", " ")
        return self

    @property
    def parameters(self) -> list[str]:
        """The names of the notebook's variables the case takes (``env``: all of them)."""
        if self.func is None:
            return []
        return list(inspect.signature(self.func).parameters)


@dataclass(frozen=True)
class _Case:
    spec: test_case
    points: float


@dataclass(frozen=True)
class _TestFile:
    question: str
    source: str
    filename: str
    cases: tuple[_Case, ...]


def _is_otter_import(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.ImportFrom)
        and node.module == _OTTER_IMPORT[0]
        and [a.name for a in node.names] == [_OTTER_IMPORT[1]]
    )


def _resolve_points(total: Any, given: list[float | None]) -> list[float]:
    """Each case's points, by otter's rules.

    A case keeps the points it names. A file's ``points`` may be a list (one value per
    case) or a total, shared equally among the cases that name none; with neither, a case
    that names none is worth 0, unless no case names a positive value, in which case the
    question is worth 1, shared equally among the cases that name none.
    """
    if isinstance(total, list):
        if len(total) != len(given):
            raise ValueError(f"points lists {len(total)} values for {len(given)} test cases")
        given, total = [float(p) for p in total], None
    elif total is not None and (isinstance(total, bool) or not isinstance(total, int | float)):
        raise TypeError(f"a test file's points must be a number or a list, got {total!r}")
    named = sum(p for p in given if p is not None)
    unnamed = sum(p is None for p in given)
    if total is not None:
        if named > total:
            raise ValueError(f"the test cases name {named} points, more than the total {total}")
        share = (total - named) / unnamed if unnamed else 0.0
    elif named == 0:
        share = 1 / unnamed if unnamed else 0.0
    else:
        share = 0.0
    return [float(p) if p is not None else float(share) for p in given]


def _read_test_file(question: str, source: str, exercise: str) -> _TestFile:
    """Parse one question's test file and collect its cases, without importing otter."""
    filename = f"<checks of {exercise}, {question}>"
    try:
        tree = ast.parse(source, filename)
    except SyntaxError as err:
        raise ValueError(f"the checks of {question} are not valid Python: {err}") from None
    body = [node for node in tree.body if not _is_otter_import(node)]
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            else:
                modules = [str(node.module)]
            if any(m.split(".")[0] == "otter" for m in modules):
                raise ValueError(
                    f"the checks of {question} import from otter ({ast.unparse(node)}); "
                    "the learner's checks run without it"
                )
    namespace: dict[str, Any] = {"test_case": test_case, "__name__": f"checks_{question}"}
    exec(compile(ast.Module(body=body, type_ignores=[]), filename, "exec"), namespace)
    specs = [v for v in namespace.values() if isinstance(v, test_case)]
    if not specs:
        raise ValueError(f"the checks of {question} hold no test case")
    points = _resolve_points(namespace.get("points"), [s.points for s in specs])
    cases = tuple(_Case(s, p) for s, p in zip(specs, points, strict=True))
    return _TestFile(question, source, filename, cases)


# =========================================================================== results
@dataclass(frozen=True)
class CaseResult:
    """One test case of a question, run on the learner's values.

    Attributes
    ----------
    name : str
        The case's name, e.g. ``"small scores"``.
    status : str
        ``"passed"``, ``"failed"`` or ``"not answered"``.
    points : float
        What the case is worth; earned only if it passed.
    message : str
        The case's success message if it passed, its failure message if it failed,
        what is still missing if it is not answered.
    detail : str
        What the failed assertion said (or the exception the check raised); empty if
        the case passed.
    """

    name: str
    status: str
    points: float
    message: str
    detail: str = ""

    @property
    def passed(self) -> bool:
        """Whether the case passed."""
        return self.status == PASSED


_MARK = {PASSED: "✔", FAILED: "✘", NOT_ANSWERED: "…"}


def _fmt(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class CheckResult:
    """The result of ``grader.check(question)``: each case passed, failed or not answered yet.

    A notebook shows it as HTML (``_repr_html_``); ``repr`` gives the same as plain text.

    Attributes
    ----------
    question : str
        E.g. ``"q1_softmax"``.
    cases : tuple of CaseResult
    """

    question: str
    cases: tuple[CaseResult, ...]

    @property
    def score(self) -> float:
        """The points of the cases that passed."""
        return sum(c.points for c in self.cases if c.passed)

    @property
    def possible(self) -> float:
        """The points of all the cases."""
        return sum(c.points for c in self.cases)

    @property
    def passed(self) -> bool:
        """Whether every case passed."""
        return all(c.passed for c in self.cases)

    @property
    def status(self) -> str:
        """``"passed"`` (every case), ``"not answered"`` (no case answered) or ``"failed"``."""
        if self.passed:
            return PASSED
        if all(c.status == NOT_ANSWERED for c in self.cases):
            return NOT_ANSWERED
        return FAILED

    def _headline(self) -> str:
        if self.status == PASSED:
            return f"{self.question}: passed ({_fmt(self.score)}/{_fmt(self.possible)})"
        if self.status == NOT_ANSWERED:
            return f"{self.question}: not answered yet"
        return f"{self.question}: not yet ({_fmt(self.score)}/{_fmt(self.possible)})"

    def __repr__(self) -> str:
        lines = [self._headline()]
        for case in self.cases:
            lines.append(f"  {_MARK[case.status]} {case.name}: {case.message}")
            if case.detail:
                lines += ["      " + ln for ln in case.detail.splitlines()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        esc = html.escape
        rows = []
        for case in self.cases:
            detail = (
                f'<pre style="margin:0.2em 0 0 1.6em;white-space:pre-wrap">{esc(case.detail)}</pre>'
                if case.detail
                else ""
            )
            rows.append(
                f'<li style="list-style:none"><span aria-hidden="true">{_MARK[case.status]}</span> '
                f"<strong>{esc(case.name)}</strong> ({esc(case.status)}): "
                f"{esc(case.message)}{detail}</li>"
            )
        return (
            f'<div class="attnlib-check attnlib-check--{self.status.replace(" ", "-")}">'
            f'<p style="margin:0"><strong>{esc(self._headline())}</strong></p>'
            f'<ul style="margin:0.2em 0;padding-left:0.5em">{"".join(rows)}</ul></div>'
        )


@dataclass(frozen=True)
class Report:
    """The result of ``grader.check_all()``: every question's :class:`CheckResult`, in order."""

    exercise: str
    results: tuple[CheckResult, ...] = field(default_factory=tuple)

    @property
    def score(self) -> float:
        """The points earned over every question."""
        return sum(r.score for r in self.results)

    @property
    def possible(self) -> float:
        """The points of every question's public cases."""
        return sum(r.possible for r in self.results)

    def __getitem__(self, question: str) -> CheckResult:
        for r in self.results:
            if r.question == question:
                return r
        raise KeyError(question)

    def _headline(self) -> str:
        done = sum(r.passed for r in self.results)
        return (
            f"{self.exercise}: {done} of {len(self.results)} questions pass their public checks "
            f"({_fmt(self.score)}/{_fmt(self.possible)} points)"
        )

    def __repr__(self) -> str:
        return "\n\n".join([self._headline()] + [repr(r) for r in self.results])

    def _repr_html_(self) -> str:
        parts = "".join(r._repr_html_() for r in self.results)
        return f"<div><p><strong>{html.escape(self._headline())}</strong></p>{parts}</div>"


# =========================================================================== not answered yet
def _holds_ellipsis(nodes: list[ast.stmt], nested: bool) -> bool:
    """Whether a bare ``...`` statement is among ``nodes`` (and, if ``nested``, inside them)."""
    todo = list(nodes)
    while todo:
        node = todo.pop()
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and node.value.value is Ellipsis
        ):
            return True
        if nested:
            todo += [n for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt)]
    return False


def _function_holds_ellipsis(func: Any) -> bool:
    try:
        source = textwrap.dedent(inspect.getsource(func))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return False  # no source to read (a builtin, a lambda in an expression): answered
    return _holds_ellipsis(tree.body, nested=True)


def _functions_of(value: Any) -> list[Any]:
    """The Python functions that make up a learner's answer: a function, or a class's methods."""
    if inspect.isclass(value):
        out = []
        for attr in vars(value).values():
            attr = getattr(attr, "__func__", attr)  # staticmethod, classmethod
            if isinstance(attr, property):
                attr = attr.fget
            if inspect.isfunction(attr):
                out.append(attr)
        return out
    if inspect.ismethod(value):
        value = value.__func__
    return [value] if inspect.isfunction(value) else []


def _binds(node: ast.stmt, name: str) -> bool:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name == name
    if isinstance(node, ast.Import | ast.ImportFrom):
        return any((a.asname or a.name.split(".")[0]) == name for a in node.names)
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        targets = [node.target]
    return any(
        isinstance(t, ast.Name) and t.id == name for target in targets for t in ast.walk(target)
    )


def _cell_still_a_template(name: str) -> bool:
    """Whether the last cell run that binds ``name`` still holds a bare ``...`` statement.

    Read from IPython's input history (``In``), where there is one: that is how a value
    that is not a function (a trained ``model``) tells that its cell is still the template.
    """
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    history = getattr(shell, "user_ns", {}).get("In") if shell is not None else None
    if not isinstance(history, list):
        return False
    for source in reversed(history):
        try:
            tree = ast.parse(str(source))
        except SyntaxError:
            continue
        if any(_binds(node, name) for node in tree.body):
            return _holds_ellipsis(tree.body, nested=False)
    return False


def _not_written(name: str, env: Mapping[str, Any]) -> str | None:
    """Why the learner's ``name`` reads as not written yet, or None if it looks written."""
    if name not in env or env[name] is None:
        return f"{name} is not defined yet: write it and run its cell"
    value = env[name]
    functions = _functions_of(value)
    if functions:
        if any(_function_holds_ellipsis(f) for f in functions):
            return f"{name} still holds `...`: replace it with your code and run its cell"
        return None
    if _cell_still_a_template(name):
        return f"the cell that sets {name} still holds `...`: replace it with your code and run it"
    return None


def _not_answered(err: BaseException) -> NotAnswered | None:
    seen: set[int] = set()
    node: BaseException | None = err
    while node is not None and id(node) not in seen:
        if isinstance(node, NotAnswered):
            return node
        seen.add(id(node))
        node = node.__cause__ or node.__context__
    return None


def _detail(err: BaseException, test: _TestFile) -> str:
    """What the assertion said; for a bare ``assert`` or another error, the failing line too."""
    text = str(err).strip()
    if isinstance(err, AssertionError) and text:
        return text
    line = ""
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == test.filename:
            lines = test.source.splitlines()
            if 0 < tb.tb_lineno <= len(lines):
                line = lines[tb.tb_lineno - 1].strip()
        tb = tb.tb_next
    kind = "" if isinstance(err, AssertionError) else f"{type(err).__name__}: "
    said = f"{kind}{text}".strip() or "the check failed"
    return f"{said}\n(at: {line})" if line else said


def _run_case(case: _Case, test: _TestFile, env: Mapping[str, Any]) -> CaseResult:
    spec = case.spec
    assert spec.func is not None
    assert spec.name is not None
    params = spec.parameters
    kwargs = {p: (env if p == "env" else env.get(p)) for p in params}
    try:
        spec.func(**kwargs)
    except Exception as err:
        # the learner's variables say best what is missing; else what the check ran into
        reasons = [r for p in params if p != "env" for r in [_not_written(p, env)] if r]
        missing = _not_answered(err)
        if not reasons and missing is not None:
            reasons = [str(missing)]
        if reasons:
            return CaseResult(spec.name, NOT_ANSWERED, case.points, reasons[0])
        message = spec.failure_message or "this check failed"
        return CaseResult(spec.name, FAILED, case.points, message, _detail(err, test))
    return CaseResult(spec.name, PASSED, case.points, spec.success_message or "passed")


# =========================================================================== the grader
class NotebookChecks:
    """The ``grader`` of one exercise notebook: ``grader.check("q1_softmax")``, ``check_all()``.

    Parameters
    ----------
    name : str
        The exercise's notebook name, with or without ``.ipynb``.
    tests : mapping, optional
        Question → test file source (default: the exercise's shipped public tests,
        :func:`public_checks`).

    Raises
    ------
    ValueError
        If there is no exercise of that name, or a test file cannot be read (not Python,
        no test case, an import from otter other than ``test_case``, more points named
        than its total).
    TypeError
        If a test file's or a case's points are not numbers.

    See Also
    --------
    The page "Exercises" (exercises/index).
    """

    def __init__(self, name: str, tests: Mapping[str, str] | None = None) -> None:
        self.name = Path(name).stem
        sources = public_checks(name) if tests is None else tests
        self._tests = {q: _read_test_file(q, src, self.name) for q, src in sources.items()}

    @property
    def questions(self) -> list[str]:
        """The questions that have public checks, in the notebook's order."""
        return list(self._tests)

    def check(self, question: str, global_env: Mapping[str, Any] | None = None) -> CheckResult:
        """Run one question's public checks on the notebook's variables.

        Parameters
        ----------
        question : str
            E.g. ``"q1_softmax"``.
        global_env : mapping, optional
            The variables to check (default: the caller's globals, i.e. the notebook's).

        Returns
        -------
        CheckResult
            Shown under the cell: each case passed, failed or not answered yet.

        Raises
        ------
        ValueError
            If the exercise has no such question.
        """
        if question not in self._tests:
            raise ValueError(
                f"{self.name} has no question {question!r}; its questions are {self.questions}"
            )
        env = global_env if global_env is not None else sys._getframe(1).f_globals
        test = self._tests[question]
        return CheckResult(question, tuple(_run_case(c, test, env) for c in test.cases))

    def check_all(self, global_env: Mapping[str, Any] | None = None) -> Report:
        """Run the public checks of every question, in order.

        Parameters
        ----------
        global_env : mapping, optional
            The variables to check (default: the caller's globals, i.e. the notebook's).

        Returns
        -------
        Report
        """
        env = global_env if global_env is not None else sys._getframe(1).f_globals
        return Report(self.name, tuple(self.check(q, env) for q in self.questions))

    def __repr__(self) -> str:
        return f"<checks of {self.name}: {', '.join(self.questions)}>"


def student_notebook(name: str) -> NotebookChecks:
    """The ``grader`` of an exercise notebook: ``grader.check("q1")`` runs q1's public tests.

    The tests are the ones shipped in attnlib (``attnlib/exercise_checks/NAME.json``, written
    by ``make exercises``), so they are the same wherever the notebook is opened: on Binder,
    on Colab (where the notebook is not saved beside the kernel), renamed, or from the zip.

    Parameters
    ----------
    name : str
        The exercise's file name, e.g. ``"01_masked_softmax.ipynb"``.

    Returns
    -------
    NotebookChecks

    Raises
    ------
    ValueError
        If ``name`` is not one of the course's exercises.

    See Also
    --------
    The page "Exercises" (exercises/index).
    """
    return NotebookChecks(name)
