"""Claims of chapters 05, 06 and 12 that rest on trained models hold for three training seeds.

``attnlib.experiments.why_claims``, ``entropy_claims`` and ``seq2seq_claims`` compute what
the chapters "Why?", "Attention entropy" and "A Bahdanau seq2seq, built from parts" state
about trained models and check it. Here each runs with the shipped checkpoints (seed 0)
and with the same recipes trained with seeds 1 and 2 (the decoders of the date task from
their shipped seed checkpoints, the others retrained); the table of which claim held for
which seed is written to tests/_artifacts/seeds/why.md. Question 1 of "Why?" is a
comparison across seeds by itself (``context_claims``): its nine models are shipped
checkpoints, and a test here makes sure they are what retraining with those seeds gives.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from attnlib import claims, pretrained
from attnlib import experiments as ex

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "tests" / "_artifacts" / "seeds"
SEEDS = (0, 1, 2)
#: Each claim function, by the chapter that calls it and shows its checks.
CLAIMS = {
    "12_why": ex.why_claims,
    "05_entropy": ex.entropy_claims,
    "06_seq2seq": ex.seq2seq_claims,
}


@pytest.mark.slow
def test_every_claim_of_chapters_05_06_and_12_on_a_trained_model_holds_for_three_seeds() -> None:
    # One test for the three functions: they share the retrained models (experiments.trained_model).
    tables = {chapter: claims.across_seeds(fn, SEEDS) for chapter, fn in CLAIMS.items()}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "why.md").write_text(
        "\n".join(
            f"# {chapter} ({CLAIMS[chapter].__name__})\n\n{table.markdown()}\n"
            for chapter, table in tables.items()
        )
    )
    for chapter, table in tables.items():
        assert table.claims, f"{chapter}: the claim function checked nothing"
    failing = [f"{chapter}: {line}" for chapter, t in tables.items() for line in t.failing()]
    assert not failing, "\n".join(failing)


def test_question_1_holds_over_the_nine_shipped_models() -> None:
    found = ex.context_claims(SEEDS)  # raises ClaimError if a claim stops holding
    assert len(found["checks"]) >= 4
    assert all(c.holds for c in found["checks"])
    assert {len(v) for v in found["steps"].values()} == {len(SEEDS)}


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("name", sorted(ex.CONTEXT_IN.values()))
def test_a_seed_checkpoint_is_its_recipe_with_another_training_seed(name: str, seed: int) -> None:
    twin = pretrained.RECIPES[f"{name}_seed{seed}"].as_dict()
    assert twin == {**pretrained.reseeded(name, seed).as_dict(), "name": f"{name}_seed{seed}"}
    assert twin["task"] == pretrained.RECIPES[name].as_dict()["task"]  # the same data


@pytest.mark.slow
def test_a_seed_checkpoint_is_what_retraining_with_that_seed_gives() -> None:
    shipped = pretrained.load("dates_ctx_output_seed1", retrain=False)
    live = pretrained.retrain("dates_ctx_output", seed=1)
    weights = live.model.state_dict()
    for k, v in shipped.model.state_dict().items():
        torch.testing.assert_close(v, weights[k], rtol=0, atol=pretrained.RETRAIN_ATOL, msg=k)
    assert live.metrics == shipped.metrics
    assert live.history.eval_step == shipped.history.eval_step


def test_the_chapters_show_the_checks_of_their_claim_functions() -> None:
    for chapter, fn in [*CLAIMS.items(), ("12_why", ex.context_claims)]:
        text = (ROOT / "chapters" / f"{chapter}.ipynb").read_text()
        assert f"ex.{fn.__name__}(" in text, f"{chapter} does not call {fn.__name__}"


def test_a_claim_function_runs_only_the_parts_asked_for() -> None:
    got = ex.seq2seq_claims(parts=["reverse"])
    assert set(got["checks"]) == {"reverse"}
    assert "ablation" not in got
    with pytest.raises(ValueError, match="parts must be among"):
        ex.why_claims(parts=["nope"])


# --------------------------------------------------------------------------- chapter 03
def test_exact_gap_at_two_positions_is_exact_gap() -> None:
    for dtype in (np.float32, np.float64):
        for which in ("one", "zero"):
            assert ex.exact_gap_at(2, which, dtype=dtype) == ex.exact_gap(dtype, which)


def test_the_gap_for_an_exact_one_grows_with_T_x_and_the_gap_for_zero_does_not() -> None:
    T_xs = [2, 10, 100, 1000]
    one = [ex.exact_gap_at(T, "one") for T in T_xs]
    zero = [ex.exact_gap_at(T, "zero") for T in T_xs]
    assert np.all(np.diff(one) > 0)
    bound = 53 * np.log(2) + np.log(np.array(T_xs) - 1.0)  # (T_x − 1) e^{−g} ≤ 2^{−53}
    assert np.all(np.array(one) <= bound + 1e-5)
    assert np.allclose(zero, np.log(2) - np.log(np.finfo(np.float64).smallest_subnormal), atol=1e-5)


@pytest.mark.parametrize(
    ("args", "error"),
    [((1,), ValueError), ((2.5,), ValueError), ((True,), ValueError), ((3, "half"), ValueError)],
)
def test_exact_gap_at_refuses_what_it_cannot_search(args: tuple, error: type) -> None:
    with pytest.raises(error):
        ex.exact_gap_at(*args)
