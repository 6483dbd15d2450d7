"""Exercise 4's checks (attnlib/grading/questions/ex4_attention_module.py): mutants lose, fair answers win.

The fast tests drive the checks through the real worker's handlers in this process, with the
course's own AdditiveAttention standing in for a learner's module (the checks' expected values
come from the pure-Python references, never from that module). The slow ones take every variant
of tests/fixtures/variants_torch.py once. Most are checked in this process: the notebook's cells
above each question's place run as the grader runs them (question 1 where the model is not yet
trained, question 2 after the training cell, reaching the first for the learner's module), and
the question's checks are called through the worker's handlers and the channel, scored by the
grader's rule. A sample is graded end to end, with the solution and the blank notebook, in one
sandboxed run as an instructor would: the first mutant and fair variant of each question, and
every answer that uses attnlib where its question is graded without it.
"""

from __future__ import annotations

import ast
import contextlib
import json
from typing import Any

import nbformat
import numpy as np
import pytest
import torch
from torch import nn

from attnlib.grading import cases, channel, grader, reader, worker
from attnlib.grading.questions import EXERCISES
from attnlib.grading.questions import ex4_attention_module as ex4
from attnlib.models import AdditiveAttention, make_seq2seq
from attnlib.tasks import make_task
from conftest import EXERCISES as EXERCISE_DIR
from conftest import short_of_full_marks
from fixtures.variants import (
    LocalSession,
    Variant,
    answer_notebook,
    failed_checks,
    full_marks_kept,
    grade_class,
    sandbox_sample,
    split_problems,
)
from fixtures.variants_torch import EXERCISE, VARIANTS

SOURCE = EXERCISE_DIR / "source" / f"{EXERCISE}.ipynb"
QUESTIONS = {q.name: q for q in EXERCISES[EXERCISE].questions}
SEED = "torch-test-0d6b3f9e2a4c8157"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# --------------------------------------------------------------------------- the checks, in process
def _run(question: str, namespace: dict[str, Any], seed: str = SEED) -> dict[str, str | None]:
    """Check name → None if it passed, else its failure message."""
    probe = grader._Probe(LocalSession(namespace), 10.0)
    out: dict[str, str | None] = {}
    for check in QUESTIONS[question].checks:
        try:
            check.run(probe, cases.rng_for(seed, EXERCISE, question, check.name))
            out[check.name] = None
        except cases.Fail as fail:
            out[check.name] = str(fail)
    return out


class _MaskIgnored(AdditiveAttention):
    def forward(self, s_prev, h, mask=None, *, keys=None):
        return super().forward(s_prev, h, None, keys=keys)


@pytest.mark.parametrize("seed", ["a", "b", "c"])
def test_the_course_module_passes_every_check_of_question_1(seed):
    assert _run("q1_module", {"MyAdditiveAttention": AdditiveAttention}, seed) == dict.fromkeys(
        ("shapes", "values", "precompute and scores", "mask")
    )


def test_a_module_that_ignores_the_mask_fails_the_mask_check_only():
    got = _run("q1_module", {"MyAdditiveAttention": _MaskIgnored})
    assert [name for name, why in got.items() if why] == ["mask"]
    assert "should be exactly 0" in str(got["mask"])


def test_a_module_without_the_skeletons_layers_is_told_so():
    class NoLayers(nn.Module):
        def __init__(self, d_s, d_h, d_a):
            super().__init__()
            self.W_a = nn.Parameter(torch.zeros(d_a, d_s))

    got = _run("q1_module", {"MyAdditiveAttention": NoLayers})
    assert all("W_a is not an nn.Linear" in str(why) for why in got.values()), got


@pytest.mark.parametrize("seed", ["a", "b", "c", "d", "e"])
def test_the_masked_case_puts_the_largest_score_on_padding_and_one_real_position_in_a_row(seed):
    rng = cases.rng_for(seed, EXERCISE, "q1_module", "mask")
    W, U, v, s_prev, h, mask, alpha, _ = ex4._mask_case(rng)
    B, T_x, d_h = h.shape
    d_a, d_s = W.shape
    assert len({B, T_x, d_s, d_h, d_a}) == 5
    assert mask[0].sum() == 1  # one real position
    assert (~mask).any(axis=1).all()  # padding in every row
    e = np.tanh((s_prev @ W.T)[:, None, :] + h @ U.T) @ v  # (B, T_x), in numpy
    for b in range(B):
        assert e[b][~mask[b]].min() > e[b][mask[b]].max() + 104  # exp(-104) underflows float32
        assert alpha[b][~mask[b]].tolist() == [0.0] * int((~mask[b]).sum())
        assert alpha[b].sum() == pytest.approx(1.0)


def _notebook_cell(name: str) -> dict[str, Any]:
    nb = json.loads(SOURCE.read_text())
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "code" and f"\n{name} = dict(" in f"\n{src}":
            tree = ast.parse(src)
            for node in tree.body:
                if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == name:
                    call = node.value
                    assert isinstance(call, ast.Call)
                    return {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    raise AssertionError(f"no cell of {SOURCE.name} sets {name}")


def test_the_grader_rebuilds_the_task_and_model_the_notebook_trains():
    assert _notebook_cell("TASK") == ex4.TASK
    assert _notebook_cell("SIZES") == ex4.SIZES


def test_the_held_out_strings_were_never_seen_in_training_and_depend_on_the_seed():
    seen = make_task("reverse", **ex4.TASK)
    trained_on = {src for src, _ in (*seen.train, *seen.valid)}
    a, b = ex4._held_out(5), ex4._held_out(6)
    assert len(a.test) == len(b.test) == ex4.HELD_OUT
    assert not trained_on & {src for src, _ in a.test}
    assert {len(src) for src, _ in a.test} == set(range(3, 8))
    assert all(tgt == src[::-1] for src, tgt in a.test)
    assert a.test != b.test
    assert ex4._held_out(5).test == a.test


def _arrays(model: nn.Module) -> dict[str, Any]:
    return {
        k: channel.array(tuple(v.shape), "torch.float32", v.reshape(-1).tolist())
        for k, v in model.state_dict().items()
    }


def test_a_parameter_missing_or_of_the_wrong_shape_is_named():
    task = make_task("reverse", **ex4.TASK)
    params = _arrays(make_seq2seq(task.src_vocab, task.tgt_vocab, **ex4.SIZES, seed=0))
    ex4._trusted_model(params)  # the course's own layout loads
    without = {k: v for k, v in params.items() if k != "decoder.W_y.bias"}
    with pytest.raises(cases.Fail, match=r"no parameter decoder\.W_y\.bias"):
        ex4._trusted_model(without)
    small = make_seq2seq(task.src_vocab, task.tgt_vocab, **{**ex4.SIZES, "hidden": 12}, seed=0)
    with pytest.raises(cases.Fail, match=r"encoder\.\S+ has shape"):
        ex4._trusted_model(_arrays(small))
    with pytest.raises(cases.Fail, match="a parameter the course's model does not: extra"):
        ex4._trusted_model({**params, "extra": params["decoder.W_y.bias"]})


def test_an_untrained_model_with_the_course_attention_gets_nothing_for_question_2():
    task = make_task("reverse", **ex4.TASK)
    model = make_seq2seq(task.src_vocab, task.tgt_vocab, **ex4.SIZES, seed=0)
    got = _run("q2_trained", {"model": model, "MyAdditiveAttention": AdditiveAttention})
    assert "but it is AdditiveAttention" in str(got["your module in the decoder"])
    assert "held-out strings exactly; 80% are needed" in str(got["held-out exact match"])


class _Zeros(nn.Module):
    """The skeleton's layers, but attention that returns zeros (no scores, no context)."""

    def __init__(self, d_s, d_h, d_a):
        super().__init__()
        self.W_a = nn.Linear(d_s, d_a, bias=False)
        self.U_a = nn.Linear(d_h, d_a, bias=False)
        self.v_a = nn.Linear(d_a, 1, bias=False)

    def precompute(self, h):
        return torch.zeros(*h.shape[:-1], self.U_a.out_features)

    def scores(self, s_prev, keys):
        return torch.zeros(keys.shape[:2])

    def forward(self, s_prev, h, mask=None):
        return torch.zeros(h.shape[0], h.shape[2]), torch.zeros(h.shape[:2])


@pytest.mark.slow
def test_weights_trained_with_the_course_module_earn_nothing_with_a_module_of_zeros():
    """The held-out strings are decoded with the learner's module as the attention: weights
    trained elsewhere with the course's AdditiveAttention, copied into a module whose scores
    are all zero, decode next to nothing (before, the grader decoded them with its own
    module, and they earned the points)."""
    from attnlib.train import train

    task = make_task("reverse", **ex4.TASK)
    torch.manual_seed(0)
    model = make_seq2seq(task.src_vocab, task.tgt_vocab, **ex4.SIZES, seed=0)
    train(model, task, steps=600, batch_size=32, lr=1e-2, target=0.9, eval_every=50, progress=False)
    trained = model.decoder.attention.state_dict()
    fake = _Zeros(ex4.SIZES["d_s"], 2 * ex4.SIZES["hidden"], ex4.SIZES["d_a"])
    fake.load_state_dict(trained)
    model.decoder.attention = fake
    right = _run("q2_trained", {"model": model, "MyAdditiveAttention": AdditiveAttention})
    assert right["held-out exact match"] is None  # the course's module: the weights are good
    got = _run("q2_trained", {"model": model, "MyAdditiveAttention": _Zeros})
    assert "held-out strings exactly; 80% are needed" in str(got["held-out exact match"])


# --------------------------------------------------------------------------- every variant, graded
def _needs_the_sandbox(v: Variant) -> bool:
    """An answer that uses attnlib where its question is graded without it (question 1): what
    it earns rests on the sandbox's attnlib, which this process cannot show. (Question 2 is
    graded where all of attnlib is there, in the sandbox as here.)"""
    return not QUESTIONS[v.question].uses_attnlib and "attnlib" in v.answer


#: Graded end to end in one sandboxed run, with the solution and the blank notebook: the first
#: mutant and fair variant of each question (question 2's first mutant keeps attnlib's own
#: attention), and every answer that uses attnlib where its question is graded without it.
SAMPLE = sandbox_sample(VARIANTS, _needs_the_sandbox)
#: Checked in this process (the notebook's cells, the checks, the course's worker, the channel).
IN_PROCESS = [v for v in VARIANTS if v not in SAMPLE]


def test_every_variant_is_graded_once_in_process_or_in_the_sandbox():
    at_least = {"q1_module": (4, 2), "q2_trained": (2, 2)}
    wrong = split_problems(VARIANTS, SAMPLE, IN_PROCESS, _needs_the_sandbox, at_least)
    assert not wrong, "\n".join(wrong)
    assert any("attnlib" in v.answer for v in SAMPLE if v.kind == "mutant")


def _namespace(cells: list[dict[str, Any]], stop: int) -> dict[str, Any]:
    """A fresh namespace once cells 0 … stop-1 have run, as in the worker: a cell that only
    checks is skipped, and one that raises ends, and the next one runs."""
    ns: dict[str, Any] = {"grader": worker._NoChecks()}
    for cell in cells[:stop]:
        if cell["only_checks"] or not cell["source"].strip():
            continue
        with contextlib.suppress(Exception):  # as the grader: noted there, the next cell runs
            exec(compile(cell["source"], "<cell>", "exec"), ns)
    return ns


def _probes(variant: Variant, questions: list[str]) -> dict[str, grader._Probe]:
    """Question → the probe it is graded through, as ``grader.grade_notebook`` sets them up:
    question 1 in a worker that has run the cells above its place, question 2 in one that has
    run those above its own (training the model), reaching the first for the learner's module.
    """
    read = reader.read(nbformat.writes(answer_notebook(variant)).encode())
    cells, at = read["cells"], grader.places(read["cells"], EXERCISES[EXERCISE])
    own = grader._Probe(LocalSession(_namespace(cells, at["q1_module"])), 10.0)
    out = {"q1_module": own}
    if "q2_trained" in questions:
        course = LocalSession(_namespace(cells, at["q2_trained"]))
        out["q2_trained"] = grader._Probe(course, 10.0, own=own)
    return out


@pytest.mark.slow
@pytest.mark.parametrize(
    "variant", [v for v in IN_PROCESS if v.kind == "mutant"], ids=lambda v: v.label
)
def test_a_mutant_loses_points_on_its_question(variant):
    probe = _probes(variant, [variant.question])[variant.question]
    failed = failed_checks(EXERCISE, variant.question, probe, SEED, first=True)
    assert failed, f"a mutant kept every point: {variant.why}"


@pytest.mark.slow
@pytest.mark.parametrize(
    "variant", [v for v in IN_PROCESS if v.kind == "fair"], ids=lambda v: v.label
)
def test_a_fair_variant_gets_every_point(variant):
    for q, probe in _probes(variant, list(QUESTIONS)).items():
        failed = failed_checks(EXERCISE, q, probe, SEED)
        assert not failed, f"{q}: " + "; ".join(failed)


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    return grade_class(SAMPLE, EXERCISE, tmp_path_factory.mktemp("ex4"), SEED)


@pytest.mark.slow
def test_in_the_sandbox_every_mutant_loses_points_on_its_question(gradebook):
    students, rows = gradebook
    kept = full_marks_kept(students, rows)
    assert not kept, "\n".join(kept)


@pytest.mark.slow
def test_in_the_sandbox_fair_variants_and_the_solution_get_every_point_and_the_blank_none(
    gradebook,
):
    students, rows = gradebook
    fair = [s for s, v in students.items() if v.kind == "fair"]
    wrong = short_of_full_marks(rows, [*fair, "solution"], QUESTIONS)
    assert not wrong, "\n".join(wrong)
    assert sum(float(rows["solution", q]["score"]) for q in QUESTIONS) == 7
    assert [float(rows["blank", q]["score"]) for q in QUESTIONS] == [0.0, 0.0]
