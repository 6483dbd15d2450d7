"""Exercise 6's checks (attnlib/grading/questions/ex6_decoding.py): mutants lose, fair answers win.

The fast tests look at the parts of the checks one by one: the public cases are the notebook's
and show what they should, answers are read from the channel's plain data, a greedy answer is
judged step by step (either of two tied ids is right), a beam answer is compared hypothesis by
hypothesis, near-ties are refused as beam cases, and attnlib's decoders are switched off in the
sandbox. The expected greedy paths come from a small decoding loop written here, not from
attnlib.decoding. The slow tests run the checks in this process on the notebook's solution and
take every variant of tests/fixtures/variants_decoding.py once: most in this process (the
notebook's imports and two answer cells, the checks called through the worker's handlers and the
channel, scored by the grader's rule), and a sample graded end to end, with the solution and the
blank notebook, in one sandboxed run as an instructor would: the first mutant and fair variant
of each question, and every answer that calls attnlib's decoders (switched off only there).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

import numpy as np
import pytest
import torch

from attnlib.decoding import Decoded, Hypothesis
from attnlib.grading import cases, channel, grader, sandbox, worker
from attnlib.grading.questions import EXERCISES
from attnlib.grading.questions import ex6_decoding as ex6
from attnlib.vocab import BOS_ID, EOS_ID, PAD_ID
from conftest import EXERCISES as EXERCISE_DIR
from conftest import ROOT, short_of_full_marks
from fixtures.variants import (
    LocalSession,
    Variant,
    answer_notebook,
    binds,
    failed_checks,
    full_marks_kept,
    grade_class,
    sandbox_sample,
    split_problems,
)
from fixtures.variants_decoding import BEAM, EXERCISE, GREEDY, VARIANTS

SOURCE = EXERCISE_DIR / "source" / f"{EXERCISE}.ipynb"
QUESTIONS = {q.name: q for q in EXERCISES[EXERCISE].questions}
SEED = "decoding-test-5e8a1c0f3b7d2946"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# --------------------------------------------------------------------------- helpers
def _plain(value: Any) -> Any:
    """``value`` as the grader reads it from the worker: to plain data, through the channel."""
    line = channel.to_line({"value": worker.to_plain(value, channel)})
    return channel.from_line(line.rstrip(b"\n"))["value"]


def _greedy_path(model: Any, src_row: torch.Tensor, max_len: int, last: bool) -> list[int]:
    """One row decoded greedily, written out here; among ids within 1e-6 of the largest logit,
    the first (``last=False``) or the last."""
    with torch.no_grad():
        h, final, mask = model.encode(src_row.unsqueeze(0))
        mem = model.decoder.memory(h, final, mask)
        s = model.decoder.init_state(final)
        y, out = BOS_ID, []
        for _ in range(max_len):
            logits, s, _ = model.decoder.step(torch.tensor([y]), s, mem)
            z = logits[0].tolist()
            allowed = range(EOS_ID, len(z))
            top = max(z[v] for v in allowed)
            tied = [v for v in allowed if z[v] >= top - 1e-6]
            y = tied[-1] if last else tied[0]
            if y == EOS_ID:
                break
            out.append(y)
    return out


def _hyp(tokens: tuple[int, ...], score: float, finished: bool = True) -> Hypothesis:
    return Hypothesis(tokens, score, score, finished, None)


# --------------------------------------------------------------------------- the exercise
def test_the_exercise_has_its_two_questions_and_switches_attnlibs_decoders_off():
    ex = EXERCISES[EXERCISE]
    assert (ex.number, [(q.name, q.defines, q.total) for q in ex.questions]) == (
        6,
        [("q1_greedy", "greedy_decode", 4.0), ("q2_beam", "beam_decode", 4.0)],
    )
    assert ex.switched_off == ex6.SWITCHED_OFF


def _test_cells() -> dict[str, ast.Module]:
    """Question → its public test cell in the instructor's source, parsed."""
    nb = json.loads(SOURCE.read_text())
    out = {}
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "code" and "BEGIN TEST CONFIG" in src:
            name = "q1_greedy" if "greedy_decode" in src.split("def test_", 1)[1] else "q2_beam"
            out[name] = ast.parse(src)
    return out


def _calls(tree: ast.Module, name: str) -> list[list[Any]]:
    """The constant arguments of every call of ``name`` (a function or a method) in ``tree``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == name) or (
                isinstance(f, ast.Attribute) and f.attr == name
            ):
                args = []
                for a in node.args:
                    try:
                        args.append(ast.literal_eval(a))
                    except ValueError:
                        args.append(ast.unparse(a))
                found.append(args)
    return found


@pytest.mark.parametrize("question", ["q1_greedy", "q2_beam"])
def test_the_public_checks_rebuild_the_notebooks_public_tests(question):
    tree = _test_cells()[question]
    assert _calls(tree, "make_seq2seq") == [list(ex6.PUBLIC_VOCAB)]
    assert _calls(tree, "mul_") == [[ex6.PUBLIC_GAIN]]
    assert "model.decoder.W_o.weight, model.decoder.W_y.weight, model.decoder.W_y.bias" in (
        ast.unparse(tree)
    )
    assert _calls(tree, "tensor") == [[[list(row) for row in ex6.PUBLIC_SRC]]]
    (called,) = _calls(tree, "call")
    if question == "q1_greedy":
        assert called == ["greedy_decode", "model", "src", ex6.PUBLIC_MAX_LEN]
    else:
        assert called == [
            "beam_decode",
            "model",
            "src",
            ex6.PUBLIC_K,
            ex6.PUBLIC_MAX_LEN,
            ex6.PUBLIC_ALPHA,
        ]
    public = [c for c in QUESTIONS[question].checks if c.public]
    assert [c.points for c in public] == [1]


def test_the_public_model_is_the_notebooks_make_seq2seq_with_sharper_output_layers():
    from attnlib.models import make_seq2seq

    model = make_seq2seq(*ex6.PUBLIC_VOCAB)
    with torch.no_grad():
        for p in (model.decoder.W_o.weight, model.decoder.W_y.weight, model.decoder.W_y.bias):
            p.mul_(ex6.PUBLIC_GAIN)
    built = ex6.public_model().build()
    for name, value in model.state_dict().items():
        assert torch.equal(built.state_dict()[name], value), name


def test_the_public_case_shows_each_rule_and_has_no_near_tie():
    drawn = ex6.public_model()
    src, lengths = ex6.public_src()
    model = drawn.build()
    rows = [
        _greedy_path(model, torch.from_numpy(src[b, : n + 1]), 8, False)
        for b, n in enumerate(lengths)
    ]
    assert rows == [
        _greedy_path(model, torch.from_numpy(src[b, : n + 1]), 8, True)
        for b, n in enumerate(lengths)
    ], "a tie in the public greedy case"
    assert len({len(r) for r in rows}) == 3  # rows end apart
    assert max(len(r) for r in rows) == ex6.PUBLIC_MAX_LEN  # one is cut by max_len
    want = ex6.steady(drawn, src, ex6.PUBLIC_K, 8, ex6.PUBLIC_ALPHA, np.random.default_rng(0))
    assert want is not None, "a near-tie in the public beam case"
    assert any(list(d.tokens) != r for d, r in zip(want, rows, strict=True))  # beam ≠ greedy


# --------------------------------------------------------------------------- reading answers
def test_token_rows_reads_lists_tuples_arrays_and_tensors():
    ragged = [[3, 4, 5], [], [6]]
    assert ex6.token_rows(_plain(ragged), 3, "x") == ragged
    assert ex6.token_rows(_plain([[3, 4], [5, 6]]), 2, "x") == [[3, 4], [5, 6]]
    assert ex6.token_rows(_plain(((3,), (np.int64(4), 5))), 2, "x") == [[3], [4, 5]]
    assert ex6.token_rows(_plain([torch.tensor([7, 8]), torch.tensor([9])]), 2, "x") == [
        [7, 8],
        [9],
    ]
    assert ex6.token_rows(_plain(torch.tensor([[3, 2, 0]])), 1, "x") == [[3, 2, 0]]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "does not return anything yet"),
        ([[3], [4, 5]], "should hold 3 lists, one per source row, but it holds 2"),
        ([[3.5], [4], [5]], "whole numbers"),
        ("3 4 5", "should be a list of 3 lists of token ids"),
        (np.zeros((3, 2, 2)), "is an array of shape (3, 2, 2)"),
    ],
)
def test_token_rows_says_what_is_wrong(value, message):
    with pytest.raises(cases.Fail, match=re.escape(message)):
        ex6.token_rows(_plain(value), 3, "greedy_decode(model, src, max_len)")


def test_hypothesis_rows_reads_pairs_of_ids_and_scores():
    value = [[([3, 4], -1.5), ((5,), np.float32(-2.0))], [([], torch.tensor(-0.5))]]
    assert ex6.hypothesis_rows(_plain(value), 2, "x") == [
        [([3, 4], -1.5), ([5], -2.0)],
        [([], -0.5)],
    ]
    with pytest.raises(cases.Fail, match="should be a pair \\(tokens, score\\), but it is a tuple"):
        ex6.hypothesis_rows(_plain([[([3], -1.0, True)], []]), 2, "x")
    with pytest.raises(cases.Fail, match="one finite number"):
        ex6.hypothesis_rows(_plain([[([3], float("nan"))]]), 1, "x")


# --------------------------------------------------------------------------- judging answers
def _public_rows() -> tuple[ex6.Drawn, np.ndarray, list[int], list[list[int]]]:
    drawn = ex6.public_model()
    src, lengths = ex6.public_src()
    model = drawn.build()
    rows = [
        _greedy_path(model, torch.from_numpy(src[b, : n + 1]), 8, False)
        for b, n in enumerate(lengths)
    ]
    return drawn, src, lengths, rows


def test_check_greedy_accepts_greedy_rows_and_names_each_mistake():
    drawn, src, lengths, rows = _public_rows()
    ex6.check_greedy(drawn, src, lengths, 8, rows, "case")
    finished = next(b for b, r in enumerate(rows) if len(r) < 8)
    cut = next(b for b, r in enumerate(rows) if len(r) == 8)

    def fails(b: int, row: list[int], max_len: int = 8) -> str:
        bad = [list(r) for r in rows]
        bad[b] = row
        with pytest.raises(cases.Fail) as err:
            ex6.check_greedy(drawn, src, lengths, max_len, bad, "case")
        return str(err.value)

    assert "holds <eos> (id 2)" in fails(finished, [*rows[finished], EOS_ID])
    assert "holds <pad> (id 0)" in fails(finished, [PAD_ID, *rows[finished]])
    assert "holds id 11" in fails(finished, [11])
    assert "max_len = 8 steps give at most 8" in fails(cut, [*rows[cut], rows[cut][0]])
    assert "ends after" in fails(cut, rows[cut][:-1])
    assert f"goes on after step t = {len(rows[finished]) + 1}" in fails(
        finished, [*rows[finished], 3]
    )
    wrong = next(t for t in range(3, 11) if t != rows[cut][0])
    assert "at step t = 1 it emits" in fails(cut, [wrong, *rows[cut][1:]])
    # a row cut by a smaller max_len is right for that max_len
    ex6.check_greedy(drawn, src, lengths, 3, [r[:3] for r in rows], "case")


def test_check_greedy_accepts_either_of_two_tied_ids():
    rng = np.random.default_rng(7)
    for _ in range(50):
        drawn = ex6.draw_model(rng, 9, eos=0.5, tie=True)
        lengths = [4, 2, 6]
        src = ex6.draw_src(rng, drawn.n_src, lengths)
        model = drawn.build()
        first = [
            _greedy_path(model, torch.from_numpy(src[b, : n + 1]), 8, False)
            for b, n in enumerate(lengths)
        ]
        last = [
            _greedy_path(model, torch.from_numpy(src[b, : n + 1]), 8, True)
            for b, n in enumerate(lengths)
        ]
        if first != last:
            break
    else:
        pytest.fail("no drawn model put its tied ids first")
    assert len(ex6.tied_ids(drawn)) == 2
    ex6.check_greedy(drawn, src, lengths, 8, first, "case")
    ex6.check_greedy(drawn, src, lengths, 8, last, "case")


def test_check_beam_compares_hypotheses_in_order_with_their_scores():
    want = [Decoded((_hyp((3, 4), -1.0), _hyp((5,), -2.0, False)))]
    ex6.check_beam([[([3, 4], -1.00002), ([5], -2.0)]], want, "case")
    with pytest.raises(cases.Fail, match="right hypotheses and scores, but not best first"):
        ex6.check_beam([[([5], -2.0), ([3, 4], -1.0)]], want, "case")
    with pytest.raises(cases.Fail, match=r"hypothesis 1 is \[3, 4\] with score -1.1000, expected"):
        ex6.check_beam([[([3, 4], -1.1), ([5], -2.0)]], want, "case")
    with pytest.raises(cases.Fail, match="holds 1 hypotheses, expected 2"):
        ex6.check_beam([[([3, 4], -1.0)]], want, "case")


def test_a_beam_case_with_a_tie_at_the_edge_of_the_beam_is_drawn_again():
    # k = 1 where the first step's two best ids tie: which one the beam keeps is arbitrary
    rng = np.random.default_rng(3)
    refused = 0
    while refused < 3:
        drawn = ex6.draw_model(rng, 8, eos=-2.0, tie=True)
        src = ex6.draw_src(rng, drawn.n_src, [3])
        model = drawn.build()
        first = _greedy_path(model, torch.from_numpy(src[0]), 1, False)
        if first and first[0] in ex6.tied_ids(drawn):
            assert ex6.steady(drawn, src, 1, 3, 0.6, rng) is None
            refused += 1
    # and a case without a tie is kept
    drawn, src = ex6.public_model(), ex6.public_src()[0]
    assert ex6.steady(drawn, src, 1, 3, 0.6, rng) is not None


# --------------------------------------------------------------------------- switched off
def test_attnlibs_decoders_raise_in_the_sandbox_with_a_reason_or_are_not_there():
    ex = EXERCISES[EXERCISE]
    staged = sandbox.stage(EXERCISE, ex.modules, ex.switched_off)
    files = staged.files()
    assert "decoding" not in staged.modules
    for qualified in ex6.SWITCHED_OFF:
        module, name = sandbox._split_qualified(qualified)
        if module not in staged.modules:  # not in the worker's attnlib at all
            assert f"attnlib/{module.replace('.', '/')}.py" not in files, qualified
            continue
        body: list[ast.stmt] = ast.parse(files[f"attnlib/{module}.py"]).body
        for part in name.split("."):
            node = next(
                n for n in body if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == part
            )
            body = node.body
        (stmt,) = body
        assert isinstance(stmt, ast.Raise), qualified
        assert "switched off while 06_decoding is graded" in ast.unparse(stmt), qualified
    assert "models" in staged.modules  # the notebook builds its models with it


#: Loops over decoder steps that feed the decoder the *target*, not its own outputs.
TEACHER_FORCED = {"importance.adversarial_attention"}


def _is_step(call: ast.Call, steppers: set[str]) -> bool:
    """``<...>.decoder.step(...)``, ``dec.step(...)``, or a call of a name bound to a stepper."""
    f = call.func
    if isinstance(f, ast.Name):
        return f.id in steppers
    if not (isinstance(f, ast.Attribute) and f.attr == "step"):
        return False
    v = f.value
    return (isinstance(v, ast.Attribute) and v.attr == "decoder") or (
        isinstance(v, ast.Name) and v.id in ("dec", "decoder")
    )


def _step_loops() -> set[str]:
    """Every attnlib function with a loop that runs one decoder step after another.

    A step is ``decoder.step`` or a function ``_stepper(...)`` made (attnlib.decoding's and
    the decoders' faster closure over the same step).
    """
    found = set()
    for path in sorted((ROOT / "attnlib").glob("*.py")):
        text = path.read_text()
        if "step" not in text:
            continue
        tree = ast.parse(text)
        parent = {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
        steppers = {
            t.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
            and "_stepper" in ast.unparse(n.value.func)
            for t in n.targets
            if isinstance(t, ast.Name)
        }  # fmt: skip
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and _is_step(call, steppers)):
                continue
            chain, node = [], call
            while node in parent:
                node = parent[node]
                chain.append(node)
            defs = [n for n in chain if isinstance(n, ast.FunctionDef | ast.ClassDef)][::-1]
            if not any(isinstance(n, ast.For | ast.While) for n in chain) or not defs:
                continue
            k = next(i for i, n in enumerate(defs) if isinstance(n, ast.FunctionDef))
            found.add(".".join([path.stem, *(n.name for n in defs[: k + 1])]))
    return found


def test_every_attnlib_loop_that_decodes_its_own_outputs_is_switched_off():
    loops = _step_loops()
    assert "decoding._search" in loops  # the scan sees the decoders it must
    unguarded = loops - set(ex6.SWITCHED_OFF) - TEACHER_FORCED
    assert not unguarded, f"add {sorted(unguarded)} to ex6_decoding.SWITCHED_OFF"
    entry = {n for n in ex6.SWITCHED_OFF if n.startswith("decoding.")}
    assert {"decoding.beam_search", "decoding.greedy"} <= entry


# --------------------------------------------------------------------------- in process
def _namespace(greedy: str = GREEDY, beam: str = BEAM) -> dict[str, Any]:
    """The notebook's imports and two answers, run in a fresh namespace."""
    ns: dict[str, Any] = {}
    exec(
        "import torch\nfrom attnlib.models import make_seq2seq\n"
        "from attnlib.vocab import BOS_ID, EOS_ID, PAD_ID",
        ns,
    )
    exec(greedy, ns)
    exec(beam, ns)
    return ns


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


def test_the_worker_hands_the_learner_the_model_the_grader_built():
    calls: list[tuple[Any, Any, Any]] = []

    def greedy_decode(model, src, max_len):
        calls.append((model, src, max_len))
        return [[] for _ in range(len(src))]

    probe = grader._Probe(LocalSession({**_namespace(), "greedy_decode": greedy_decode}), 10.0)
    (public,) = [c for c in QUESTIONS["q1_greedy"].checks if c.public]
    with pytest.raises(cases.Fail, match="ends after 0 ids"):
        public.run(probe, np.random.default_rng(0))
    ((model, src, max_len),) = calls  # the notebook's model and batch
    assert (max_len, src.dtype, src.tolist()) == (8, torch.int64, [list(r) for r in ex6.PUBLIC_SRC])
    want = ex6.public_model().build().state_dict()
    for name, value in model.state_dict().items():  # embeddings and GRUs included
        assert torch.equal(value, want[name]), name


def test_a_handle_names_only_an_object_the_worker_made():
    session = LocalSession({"first": lambda x: x, "box": set})
    made = session.request({"op": "new", "target": "box", "handle": "_h1"}, 10)
    assert made == {"id": 1, "ok": True, "value": "_h1"}
    got = session.request({"op": "call", "target": "first", "args": [{"handle": "_h1"}]}, 10)
    assert got == {"id": 1, "ok": True, "value": {"object": "set"}}
    unknown = session.request({"op": "call", "target": "first", "args": [{"handle": "_h9"}]}, 10)
    assert not unknown["ok"]
    assert unknown["error"]["type"] == "NameError"
    assert "no object was made under the handle '_h9'" in unknown["error"]["message"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", ["a", "b", "c"])
def test_right_answers_pass_every_check(seed):
    ns = _namespace()
    for question in QUESTIONS:
        assert _run(question, ns, seed) == dict.fromkeys(c.name for c in QUESTIONS[question].checks)


@pytest.mark.slow
def test_the_hidden_cases_depend_on_the_seed_only():
    a1, a2, b = (ex6.beam_kbest_cases.__wrapped__(s) for s in (1, 1, 2))
    assert [c.label for c in a1] == [c.label for c in a2]
    assert [c.label for c in a1] != [c.label for c in b]
    for case in (*a1, *b):
        assert 3 <= case.k <= 5
        assert len(set(case.lengths)) > 1  # a padded batch


# --------------------------------------------------------------------------- every variant, graded
def _needs_the_sandbox(v: Variant) -> bool:
    """An answer that calls a decoder of attnlib: only the sandbox's attnlib has it switched off
    (in this process it would run, and earn the points)."""
    return "switched off" in v.why or "staged copy" in v.why or "attnlib" in v.answer


#: Graded end to end in one sandboxed run, with the solution and the blank notebook: the first
#: mutant and fair variant of each question, and every answer that calls attnlib's decoders.
SAMPLE = sandbox_sample(VARIANTS, _needs_the_sandbox)
#: Checked in this process (the checks, the course's worker, the channel; no sandbox).
IN_PROCESS = [v for v in VARIANTS if v not in SAMPLE]


def test_every_variant_is_graded_once_in_process_or_in_the_sandbox():
    at_least = dict.fromkeys(QUESTIONS, (10, 3))
    wrong = split_problems(VARIANTS, SAMPLE, IN_PROCESS, _needs_the_sandbox, at_least)
    assert not wrong, "\n".join(wrong)
    for q in QUESTIONS:
        assert sum(_needs_the_sandbox(v) for v in SAMPLE if v.question == q) >= 2, q


def _answers(variant: Variant) -> dict[str, str]:
    """The two answer cells of the solution notebook, one of them the variant's."""
    cells = [c.source for c in answer_notebook(variant).cells if c.cell_type == "code"]
    (greedy,) = [c for c in cells if binds(c, "greedy_decode")]
    (beam,) = [c for c in cells if binds(c, "beam_decode")]
    return {"greedy": greedy, "beam": beam}


def _probe(variant: Variant) -> grader._Probe:
    return grader._Probe(LocalSession(_namespace(**_answers(variant))), 10.0)


@pytest.mark.slow
@pytest.mark.parametrize(
    "variant", [v for v in IN_PROCESS if v.kind == "mutant"], ids=lambda v: v.label
)
def test_a_mutant_loses_points_on_its_question(variant):
    failed = failed_checks(EXERCISE, variant.question, _probe(variant), SEED, first=True)
    assert failed, f"a mutant kept every point: {variant.why}"


@pytest.mark.slow
@pytest.mark.parametrize(
    "variant", [v for v in IN_PROCESS if v.kind == "fair"], ids=lambda v: v.label
)
def test_a_fair_variant_gets_every_point(variant):
    probe = _probe(variant)
    for q in QUESTIONS:
        failed = failed_checks(EXERCISE, q, probe, SEED)
        assert not failed, f"{q}: " + "; ".join(failed)


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    return grade_class(SAMPLE, EXERCISE, tmp_path_factory.mktemp("ex6"), SEED)


@pytest.mark.slow
def test_in_the_sandbox_mutants_lose_points_and_attnlibs_decoders_earn_nothing(gradebook):
    students, rows = gradebook
    kept = full_marks_kept(students, rows)
    assert not kept, "\n".join(kept)
    # an answer that calls attnlib's own decoder gets nothing, and is told what it raised
    for s, v in students.items():
        if _needs_the_sandbox(v):
            assert float(rows[s, v.question]["score"]) == 0, v.why
            assert "the function raised" in rows[s, v.question]["note"], v.why


@pytest.mark.slow
def test_in_the_sandbox_fair_variants_and_the_solution_get_every_point_and_the_blank_none(
    gradebook,
):
    students, rows = gradebook
    fair = [s for s, v in students.items() if v.kind == "fair"]
    wrong = short_of_full_marks(rows, [*fair, "solution"], QUESTIONS)
    assert not wrong, "\n".join(wrong)
    assert sum(float(rows["solution", q]["score"]) for q in QUESTIONS) == 8
    assert [float(rows["blank", q]["score"]) for q in QUESTIONS] == [0.0, 0.0]
