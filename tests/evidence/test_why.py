"""attnlib.evidence.why: question 1 across the nine shipped date models, and the seed twins."""

from __future__ import annotations

import pytest
import torch

from attnlib import pretrained
from attnlib.evidence import why


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("name", sorted(why.CONTEXT_IN.values()))
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


@pytest.mark.slow
def test_learning_curves_come_one_per_placement_and_seed() -> None:
    curves = why.context_curves((0, 1))
    assert sorted(curves) == sorted(why.CONTEXT_IN)
    for runs in curves.values():
        assert len(runs) == 2
        for curve in runs:
            assert len(curve.step) == len(curve.valid_exact)
            assert curve.area == pytest.approx(sum(curve.valid_exact) / len(curve.valid_exact))


@pytest.mark.slow
def test_the_parts_run_alone() -> None:
    got = why.check_claims(parts=["pointer"])
    assert set(got["checks"]) == {"pointer"}
    assert "length" not in got
    with pytest.raises(ValueError, match="parts must be among"):
        why.check_claims(parts=["context"])
