"""The grader tells wrong answers from right ones: a mutant loses points, a fair variant none.

Two halves. The fast one runs the checks of every exercise whose source imports no torch in
this process, on a :class:`FakeProbe` that calls the answers directly but passes every argument
and every result through the same plain-data channel as the sandboxed worker, each question in
the attnlib it is graded with (for a question that asks the learner to write the answer, every
name of attnlib is a stand-in that raises, as in the sandbox): the solution passes every
check for several seeds, the public checks use fixed inputs and the hidden ones draw theirs
from the seed and the student, and every variant of ``fixtures/variants.py`` does what it
should. The slow one grades a sample for real (sandbox, the staged attnlibs), in one folder
with :func:`attnlib.grading.grader.grade`: the first mutant and fair variant of each question,
and every answer that calls attnlib where its question is graded without it (what such an answer
earns rests on the sandbox's attnlib). Exercises 4 and 6 (torch) have their variants in
tests/grading/test_grading_torch.py and test_grading_decoding.py.
"""

from __future__ import annotations

import builtins
import csv
import re
import types
import warnings
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pytest

import attnlib
from attnlib.grading import cases, channel, grader, sandbox, worker
from attnlib.grading.questions import EXERCISES
from fixtures import variants as fv

USES = fv.USES
#: The exercises graded here in process: those whose source imports no torch (a new one joins)
NUMPY_EXERCISES = tuple(
    name
    for name in EXERCISES
    if "import torch" not in (fv.ROOT / "exercises" / "source" / f"{name}.ipynb").read_text()
)
SEEDS = ("alpha", "beta", "gamma", "delta", "epsilon")
#: The seed of the sandboxed runs (the grader refuses one of fewer than 64 bits).
GRADING_SEED = "variants-test-4d1f9a0c7e2b8356"


def _id(v: fv.Variant) -> str:
    return f"{v.exercise[:2]}-{v.question}-{v.why}"


# =========================================================================== in process
def _through_channel(value: Any) -> Any:
    """The value as the other side reads it: encoded to a line of JSON and decoded."""
    return channel.from_line(channel.to_line({"value": value}))["value"]


class FakeProbe:
    """A :class:`~attnlib.grading.cases.Probe` that calls answers in this process.

    Arguments and results cross the channel's plain data exactly as with the worker
    (``grader._plain_arg``, ``worker.from_plain``, ``worker.to_plain``), so a check sees
    what it would see in the sandbox; warnings are silenced, as the worker discards them.
    """

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.namespace = namespace
        self.calls: list[Any] = []

    def call(self, target: str, *args: Any, seconds: float = 10.0, **kwargs: Any) -> Any:
        sent = _through_channel(
            {
                "args": [grader._plain_arg(a) for a in args],
                "kwargs": {k: grader._plain_arg(v) for k, v in kwargs.items()},
            }
        )
        self.calls.append((target, sent))
        fn = self.namespace.get(target)
        if not callable(fn):
            raise cases.Fail(f"{target} is not defined: write it and run its cell")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = fn(
                    *(worker.from_plain(a) for a in sent["args"]),
                    **{k: worker.from_plain(v) for k, v in sent["kwargs"].items()},
                )
        except Exception as err:
            kinds = [c.__name__ for c in type(err).__mro__ if c.__module__ == "builtins"]
            raise cases.Fail(
                f"{target} raised {type(err).__name__}: {err}", kind="raised", raised=kinds
            ) from None
        return _through_channel(worker.to_plain(out, channel))

    def new(self, target: str, *args: Any, weights: dict[str, Any] | None = None) -> str:
        raise NotImplementedError("the numpy exercises create no module")

    def state(self, target: str, parts: Any = ()) -> dict[str, Any]:
        raise NotImplementedError("the numpy exercises create no module")

    def own(self) -> FakeProbe:
        return self


class _Absent(types.ModuleType):
    """attnlib as the worker of a question the learner writes sees it: every name a stand-in
    that raises NotImplementedError when called (attnlib/grading/sandbox.py, the own stage)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Absent(f"{self.__name__}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{self.__name__} is not available while this is graded")


def _own_import(
    name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
) -> Any:
    """``__import__`` in the worker without attnlib: any module of attnlib is a stand-in."""
    if name == "attnlib" or name.startswith("attnlib."):
        node: Any = _Absent("attnlib")
        if not fromlist:
            return node
        for part in name.split(".")[1:]:
            node = getattr(node, part)
        return node
    return builtins.__import__(name, globals, locals, fromlist, level)


def _solution_cells(exercise: str) -> dict[str, str]:
    """Question name → the source of its answer cell in the solution notebook."""
    nb = nbformat.read(fv.SOLUTIONS / f"{exercise}.ipynb", as_version=4)
    out = {}
    for q in EXERCISES[exercise].questions:
        (cell,) = [c for c in nb.cells if c.cell_type == "code" and fv.binds(c.source, q.defines)]
        out[q.name] = cell.source
    return out


def _namespace(exercise: str, own: bool, replace: fv.Variant | None = None) -> dict[str, Any]:
    """The answers of the solution, one replaced by a variant, run in a fresh namespace: with
    attnlib absent (``own``: every name of it a stand-in that raises) or all of it there."""
    ns: dict[str, Any] = {"np": np}
    if own:
        ns["__builtins__"] = {**vars(builtins), "__import__": _own_import}
        ns["al"] = _Absent("attnlib")
    else:
        ns["al"] = attnlib
    for question, source in _solution_cells(exercise).items():
        if replace is not None and replace.question == question:
            source = replace.answer
        exec(compile(source, f"<{exercise}:{question}>", "exec"), ns)
    return ns


def _grade_in_process(
    exercise: str, seed: str, replace: fv.Variant | None = None, student: str = "ana"
) -> dict[str, tuple[float, list[str]]]:
    """Question → (score, notes), by the grader's rules, without a sandbox."""
    ex = EXERCISES[exercise]
    probes = {own: FakeProbe(_namespace(exercise, own, replace)) for own in (True, False)}
    out = {}
    for q in ex.questions:
        probe = probes[not q.uses_attnlib]
        score, notes = 0.0, []
        for check in q.checks:
            try:
                check.run(probe, cases.rng_for(seed, student, ex.name, q.name, check.name))
            except Exception as err:  # Fail, or a value the check could not use
                notes.append(f"{check.name}: {type(err).__name__}: {err}")
            else:
                score += check.points
        out[q.name] = (score, notes)
    return out


def _total(exercise: str, question: str) -> float:
    return next(q.total for q in EXERCISES[exercise].questions if q.name == question)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("exercise", NUMPY_EXERCISES)
def test_the_solution_passes_every_check(exercise, seed):
    for question, (score, notes) in _grade_in_process(exercise, seed).items():
        assert score == _total(exercise, question), f"{question}: {notes}"


def _public_points(exercise: str) -> dict[str, float]:
    """Question → the points of its public tests in the instructor's source notebook."""
    nb = nbformat.read(fv.ROOT / "exercises" / "source" / f"{exercise}.ipynb", as_version=4)
    points: dict[str, float] = {}
    question = None
    for cell in nb.cells:
        found = re.match(r"# BEGIN QUESTION\s+name:\s*(\w+)", cell.source.strip())
        if cell.cell_type == "raw" and found:
            question = found.group(1)
        config = re.search(r"BEGIN TEST CONFIG(.*?)END TEST CONFIG", cell.source, re.S)
        hidden = config and re.search(r"^hidden:\s*true", config.group(1), re.M)
        if cell.cell_type == "code" and config and question and not hidden:
            pts = float(re.search(r"^points:\s*([\d.]+)", config.group(1), re.M).group(1))
            points[question] = points.get(question, 0.0) + pts
    return points


@pytest.mark.parametrize("exercise", NUMPY_EXERCISES)
def test_public_checks_are_the_notebooks_public_tests(exercise):
    ex = EXERCISES[exercise]
    assert ex.number == int(exercise[:2])
    public = {q.name: sum(c.points for c in q.checks if c.public) for q in ex.questions}
    assert public == _public_points(exercise)


def _inputs(exercise: str, seed: str, student: str = "ana") -> dict[tuple[str, str], list[Any]]:
    """(question, check) → every call the check made on the solution, as sent."""
    ex = EXERCISES[exercise]
    namespaces = {own: _namespace(exercise, own) for own in (True, False)}
    out = {}
    for q in ex.questions:
        for check in q.checks:
            probe = FakeProbe(namespaces[not q.uses_attnlib])
            check.run(probe, cases.rng_for(seed, student, ex.name, q.name, check.name))
            out[q.name, check.name] = probe.calls
    return out


@pytest.mark.parametrize("exercise", NUMPY_EXERCISES)
def test_public_inputs_are_fixed_and_hidden_ones_come_from_the_seed(exercise):
    first, second = _inputs(exercise, "one seed"), _inputs(exercise, "another seed")
    checks = {(q.name, c.name): c for q in EXERCISES[exercise].questions for c in q.checks}
    for key, check in checks.items():
        assert first[key], f"{key}: the check calls nothing"
        assert (first[key] == second[key]) == check.public, key


@pytest.mark.parametrize("exercise", NUMPY_EXERCISES)
def test_each_student_meets_hidden_cases_of_their_own(exercise):
    ana, bob = _inputs(exercise, "one seed", "ana"), _inputs(exercise, "one seed", "bob")
    checks = {(q.name, c.name): c for q in EXERCISES[exercise].questions for c in q.checks}
    for key, check in checks.items():
        assert (ana[key] == bob[key]) == check.public, key


@pytest.mark.parametrize("exercise", NUMPY_EXERCISES)
def test_a_question_the_learner_writes_is_graded_where_attnlib_computes_nothing(exercise):
    ex = EXERCISES[exercise]
    own = sandbox.stage(ex.name, ex.modules, ex.switched_off)
    assert own.modules == ()  # these exercises need none of attnlib's modules
    files = own.files()
    assert sorted(files) == [
        "__main__.py",
        "attnlib/__init__.py",
        "attnlib/grading/__init__.py",
        "attnlib/grading/channel.py",
        "attnlib/grading/worker.py",
    ]
    assert "def softmax" not in files["attnlib/__init__.py"]
    course = sandbox.stage(ex.name)
    assert {"core", "models", "transformer.qkv"} <= set(course.modules)


def test_every_variant_is_one_distinct_answer():
    students = [v.student for v in fv.VARIANTS]
    assert len(set(students)) == len(students)
    for v in fv.VARIANTS:
        assert fv.binds(v.answer, fv.defined_name(v)), _id(v)
    for exercise in NUMPY_EXERCISES:
        for q in EXERCISES[exercise].questions:
            mine = [v for v in fv.VARIANTS if (v.exercise, v.question) == (exercise, q.name)]
            assert sum(v.kind == "mutant" for v in mine) >= 4, q.name
            assert sum(v.kind == "fair" for v in mine) >= 2, q.name


def test_materialise_replaces_only_the_answer_cell(tmp_path):
    v = next(v for v in fv.VARIANTS if v.question == "q2_attention_context")
    out = fv.materialise(v, tmp_path)
    assert out == tmp_path / v.student / "03_context_entropy.ipynb"
    got = nbformat.read(out, as_version=4)
    want = nbformat.read(fv.SOLUTIONS / "03_context_entropy.ipynb", as_version=4)
    changed = [k for k, (a, b) in enumerate(zip(got.cells, want.cells, strict=True)) if a != b]
    assert len(changed) == 1
    assert got.cells[changed[0]].source == v.answer
    assert any("import attnlib as al" in c.source for c in got.cells)


@pytest.mark.parametrize("variant", fv.MUTANTS, ids=_id)
def test_a_mutant_loses_points_in_process(variant):
    for seed in SEEDS[:2]:
        score, _ = _grade_in_process(variant.exercise, seed, variant)[variant.question]
        assert score < _total(variant.exercise, variant.question), f"{seed}: full marks"


@pytest.mark.parametrize("variant", fv.FAIR, ids=_id)
def test_a_fair_variant_gets_full_marks_in_process(variant):
    for seed in SEEDS:
        for question, (score, notes) in _grade_in_process(variant.exercise, seed, variant).items():
            assert score == _total(variant.exercise, question), f"{seed}, {question}: {notes}"


# =========================================================================== in the sandbox
def _read_gradebook(path: Path) -> dict[tuple[str, str], tuple[float, float, str]]:
    with open(path, newline="") as f:
        return {
            (r["student"], r["question"]): (float(r["score"]), float(r["total"]), r["note"])
            for r in csv.DictReader(f)
        }


def _grade(folder: Path, variants: list[fv.Variant], seed: str) -> dict[Any, Any]:
    for v in variants:
        fv.materialise(v, folder / "submissions")
    gradebook = folder / "gradebook.csv"
    grader.grade(folder / "submissions", gradebook, seed=seed, jobs=2)
    return _read_gradebook(gradebook)


def _needs_the_sandbox(v: fv.Variant) -> bool:
    """An answer that calls attnlib where the question is graded without it: what it earns rests
    on the sandbox's attnlib (the in-process half stands in for it, this half shows it)."""
    (q,) = [q for q in EXERCISES[v.exercise].questions if q.name == v.question]
    return not q.uses_attnlib and re.search(r"\bal\.|attnlib", v.answer) is not None


#: Graded in the sandbox: the first mutant and fair variant of each question, and every answer
#: that calls attnlib where the question is graded without it (the in-process half checks all).
SAMPLE = fv.sandbox_sample(fv.VARIANTS, _needs_the_sandbox)


def test_the_sandboxed_sample_has_a_mutant_and_a_fair_variant_of_every_question():
    for exercise in NUMPY_EXERCISES:
        for q in EXERCISES[exercise].questions:
            kinds = {v.kind for v in SAMPLE if (v.exercise, v.question) == (exercise, q.name)}
            assert kinds == {"mutant", "fair"}, q.name
    assert [v for v in fv.VARIANTS if _needs_the_sandbox(v)] == [
        v for v in SAMPLE if _needs_the_sandbox(v)
    ]
    assert sum(_needs_the_sandbox(v) for v in SAMPLE) >= 4


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The sample, graded once in one folder."""
    return _grade(tmp_path_factory.mktemp("variants"), SAMPLE, GRADING_SEED)


def _scores(book: dict[Any, Any], v: fv.Variant) -> dict[str, tuple[float, float, str]]:
    ex = EXERCISES[v.exercise]
    return {q.name: book[v.student, f"{v.exercise}:{q.name}"] for q in ex.questions}


@pytest.mark.slow
@pytest.mark.parametrize("variant", [v for v in SAMPLE if v.kind == "mutant"], ids=_id)
def test_a_mutant_loses_points_on_its_question(graded, variant):
    for question, (score, total, note) in _scores(graded, variant).items():
        if question == variant.question:
            assert score < total, f"a mutant got full marks: {variant.why}"
        elif USES.get((variant.exercise, question)) != variant.question:
            assert score == total, f"{question}, which is the solution's: {note}"


@pytest.mark.slow
@pytest.mark.parametrize("variant", [v for v in SAMPLE if v.kind == "fair"], ids=_id)
def test_a_fair_variant_gets_full_marks(graded, variant):
    for question, (score, total, note) in _scores(graded, variant).items():
        assert score == total, f"{question}: {note}"


@pytest.mark.slow
def test_fair_marks_do_not_depend_on_the_seed(graded, tmp_path):
    exercise, other_seed = "05_spot_the_error", "another seed, 93b0e6c1a5f27d48"
    fair = [v for v in fv.FAIR if v.exercise == exercise]
    other = _grade(tmp_path, fair, other_seed)
    assert _inputs(exercise, GRADING_SEED) != _inputs(exercise, other_seed)
    assert any(v in SAMPLE for v in fair)
    for v in fair:
        if v in SAMPLE:
            assert _scores(other, v) == _scores(graded, v)
        assert all(score == total for score, total, _ in _scores(other, v).values())
