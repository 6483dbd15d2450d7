"""attnlib.evidence._shared: a model for each seed, made once per process, on the same data."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from attnlib import pretrained
from attnlib.evidence import _shared
from attnlib.mt import translation as tr


@pytest.mark.parametrize("seed", [-1, 1.5, True, "1"])
def test_a_seed_is_a_whole_number_from_0(seed: object) -> None:
    with pytest.raises(ValueError, match="whole number ≥ 0"):
        _shared.trained_model("copy", seed)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="whole number ≥ 0"):
        _shared.translation_model("attention", seed)  # type: ignore[arg-type]


@pytest.mark.slow
def test_seed_0_is_the_shipped_model_and_it_is_made_once() -> None:
    first = _shared.trained_model("copy")
    assert first is _shared.trained_model("copy", 0)
    shipped = pretrained.load("copy", progress=False)
    assert first.metrics == shipped.metrics


def test_a_seed_twin_that_is_not_its_recipe_reseeded_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = dataclasses.replace(pretrained.RECIPES["dates_seed1"], fit={"seed": 99})
    monkeypatch.setitem(pretrained.RECIPES, "dates_seed1", fake)
    monkeypatch.setattr(_shared, "_TRAINED", {})
    with pytest.raises(ValueError, match="not recipe 'dates' with training seed 1"):
        _shared.trained_model("dates", 1)


@pytest.mark.slow
def test_another_translation_seed_trains_on_the_shipped_split(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tiny = tr.Recipe(limit=1500, test_sources=50, valid_sources=50, min_freq=2, emb=8, hidden=8,
                     d_s=8, d_a=8, batch_size=32, max_steps=3, threads=1)  # fmt: skip
    monkeypatch.setitem(tr.RECIPES, "tiny", tiny)
    monkeypatch.setattr(_shared, "_TRANSLATION", {})
    trained = _shared.translation_model("tiny", 1)
    assert trained is _shared.translation_model("tiny", 1)
    assert trained.recipe == dataclasses.replace(tiny, seed=1)
    shipped_split = tr.prepare(tiny).split
    assert trained.data.split.test == shipped_split.test  # the same test sentences
    assert trained.data.split.train == shipped_split.train
    # the same weights as training the reseeded recipe on the shipped data by hand ...
    data = tr.prepare(tiny)
    by_hand, _ = tr.train_model(dataclasses.replace(tiny, seed=1), data, progress=False)
    seed_0, _ = tr.train_model(tiny, data, progress=False)
    weights = trained.model.state_dict()
    assert all(torch.equal(v, weights[k]) for k, v in by_hand.state_dict().items())
    # ... and other weights than seed 0's
    assert any(not torch.equal(v, weights[k]) for k, v in seed_0.state_dict().items())


@pytest.mark.slow
def test_a_seed_model_kept_by_make_seeds_is_read_back_instead_of_retrained(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """``--seed-models DIR`` retrains and writes; a later process reads the same model back."""
    monkeypatch.setattr(_shared, "_TRAINED", {})
    monkeypatch.setattr(_shared, "SEED_MODELS", tmp_path)
    monkeypatch.setattr(_shared, "SAVE_SEED_MODELS", True)
    made = _shared.trained_model("majority", 1)
    assert (tmp_path / "majority_seed1.pt").is_file()
    monkeypatch.setattr(_shared, "_TRAINED", {})
    monkeypatch.setattr(_shared, "SAVE_SEED_MODELS", False)
    read = _shared.trained_model("majority", 1)
    assert read is not made
    assert read.metrics == made.metrics
    assert read.recipe == pretrained.reseeded("majority", 1)
    for key, value in made.model.state_dict().items():
        assert torch.equal(read.model.state_dict()[key], value), key
    with pytest.raises(FileNotFoundError, match=r"training seed 2 .*make seeds"):
        _shared.trained_model("majority", 2)  # read only: a missing model is not retrained
