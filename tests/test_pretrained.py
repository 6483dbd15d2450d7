"""Tests for attnlib.pretrained: shipped checkpoints, honest metrics, reproducible recipes."""

from __future__ import annotations

import hashlib
import json

import pytest
import torch

from attnlib import pretrained
from attnlib.models import LuongDecoder, NoAttentionDecoder, Seq2Seq
from attnlib.train import evaluate, translate

NAMES = pretrained.names()
SMALLEST = "majority"  # the recipe cheap enough to re-run in a test


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def loaded() -> dict[str, pretrained.Pretrained]:
    return {}


def _load(cache: dict, name: str) -> pretrained.Pretrained:
    if name not in cache:
        cache[name] = pretrained.load(name, retrain=False)
    return cache[name]


# --------------------------------------------------------------------------- files
@pytest.mark.parametrize("name", NAMES)
def test_every_recipe_ships_a_small_checkpoint(name: str) -> None:
    path = pretrained.checkpoint_path(name)
    assert path.exists(), f"run `python -m attnlib.pretrained {name}`"
    assert path.stat().st_size < 1_000_000


def test_total_shipped_size_is_a_few_megabytes() -> None:
    total = sum(pretrained.checkpoint_path(n).stat().st_size for n in NAMES)
    assert total < 4_000_000


def test_manifest_matches_the_files() -> None:
    manifest = json.loads((pretrained.CHECKPOINT_DIR / "MANIFEST.json").read_text())
    assert list(manifest) == NAMES
    for name, entry in manifest.items():
        path = pretrained.checkpoint_path(name)
        assert entry["bytes"] == path.stat().st_size
        assert entry["sha256"] == _sha(path)


def test_checkpoints_are_plain_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """Readable with weights_only=True, and load() asks for exactly that."""
    for name in NAMES:
        ckpt = torch.load(pretrained.checkpoint_path(name), weights_only=True)
        assert set(ckpt) == {"format", "recipe", "state_dict", "history", "metrics"}
    calls = []
    real_load = torch.load

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy)
    pretrained.load(SMALLEST, retrain=False)
    assert calls
    assert all(c.get("weights_only") is True for c in calls)


# --------------------------------------------------------------------------- loading
def test_load_returns_a_ready_model(loaded: dict) -> None:
    model, task, history, _ = _load(loaded, "reverse")
    assert isinstance(model, Seq2Seq)
    assert not model.training
    assert task.name == "reverse"
    assert history.steps > 0
    assert history.loss[-1] < history.loss[0]
    [tr] = translate(model, task, ["abcdefg"])
    assert tr.text == "gfedcba"
    assert tr.alpha.shape == (8, 8)
    # the anti-diagonal: output t looks hardest at source position T_x - 1 - t
    assert [int(i) for i in tr.alpha[:7].argmax(axis=1)] == [6, 5, 4, 3, 2, 1, 0]


@pytest.mark.parametrize("name", ["copy", "reverse", "dates", "long_copy_none"])
def test_stored_metrics_are_what_the_model_does(name: str, loaded: dict) -> None:
    model, task, _, metrics = _load(loaded, name)
    again = evaluate(model, task, "test", buckets=pretrained.RECIPES[name].buckets)
    assert again == metrics


@pytest.mark.parametrize(("name", "at_least"), [("copy", 0.99), ("reverse", 0.99), ("dates", 0.98)])
def test_held_out_targets_of_the_issue(name: str, at_least: float, loaded: dict) -> None:
    assert _load(loaded, name).metrics.exact_match >= at_least


def test_the_bottleneck_shows_on_long_inputs(loaded: dict) -> None:
    base = _load(loaded, "long_copy_none").metrics.by_length
    attn = _load(loaded, "long_copy_attention").metrics.by_length
    assert isinstance(_load(loaded, "long_copy_none").model.decoder, NoAttentionDecoder)
    assert [b.label for b in base] == [b.label for b in attn]
    assert attn[-1].exact_match >= 0.9  # attention holds on the longest inputs
    assert base[-1].exact_match <= attn[-1].exact_match - 0.3  # the baseline does not
    assert base[-1].exact_match < base[0].exact_match  # and it degrades with length


def test_luong_checkpoint_has_a_luong_decoder(loaded: dict) -> None:
    assert isinstance(_load(loaded, "dates_luong").model.decoder, LuongDecoder)


def test_ablation_checkpoints_are_configured_as_named(loaded: dict) -> None:
    assert _load(loaded, "copy_embedding").model.config.encoder == "embedding"
    assert _load(loaded, "dates_ctx_state").model.config.context_in == "state"
    assert _load(loaded, "dates_ctx_output").model.config.context_in == "output"
    assert _load(loaded, "dates").model.config.context_in == "both"


# --------------------------------------------------------------------------- errors, flag
def test_unknown_name() -> None:
    with pytest.raises(ValueError, match=r"no pretrained model 'nope'; choose one of copy"):
        pretrained.load("nope")


def test_missing_checkpoint(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match=r"python -m attnlib.pretrained copy"):
        pretrained.load("copy", retrain=False, directory=tmp_path)


def test_checkpoint_from_another_recipe_is_refused(tmp_path) -> None:
    ckpt = torch.load(pretrained.checkpoint_path(SMALLEST), weights_only=True)
    ckpt["recipe"]["fit"]["steps"] += 1
    torch.save(ckpt, tmp_path / f"{SMALLEST}.pt")
    with pytest.raises(ValueError, match="different recipe"):
        pretrained.load(SMALLEST, retrain=False, directory=tmp_path)


@pytest.mark.parametrize(
    ("env", "expected"), [("1", True), ("yes", True), ("0", False), ("", False)]
)
def test_one_flag_retrains_everything(
    monkeypatch: pytest.MonkeyPatch, env: str, expected: bool
) -> None:
    calls = []
    monkeypatch.setattr(pretrained, "_fit", lambda recipe, progress: calls.append(recipe.name) or
                        pretrained.load(recipe.name, retrain=False))  # fmt: skip
    monkeypatch.setenv("ATTNLIB_RETRAIN", env)
    pretrained.load(SMALLEST)
    assert (calls == [SMALLEST]) == expected
    calls.clear()
    pretrained.load(SMALLEST, retrain=False)  # an explicit argument wins over the flag
    assert calls == []


# --------------------------------------------------------------------------- reproducible
def test_the_script_reproduces_a_shipped_checkpoint(tmp_path, capsys) -> None:
    """`python -m attnlib.pretrained majority --out DIR` makes the shipped model again.

    Byte for byte on the machine that made the file; elsewhere the float32 kernels may round
    differently, so the weights must agree within RETRAIN_ATOL and the metrics exactly. On one
    machine two runs are always byte-identical.
    """
    first, second = tmp_path / "a", tmp_path / "b"
    assert pretrained.main([SMALLEST, "--out", str(first)]) == 0
    assert pretrained.main([SMALLEST, "--out", str(second)]) == 0
    made = first / f"{SMALLEST}.pt"
    assert _sha(made) == _sha(second / f"{SMALLEST}.pt")
    shipped = pretrained.checkpoint_path(SMALLEST)
    assert pretrained.weight_gap(made, shipped) <= pretrained.RETRAIN_ATOL
    read = [torch.load(p, weights_only=True) for p in (made, shipped)]
    assert read[0]["metrics"] == read[1]["metrics"]
    assert read[0]["recipe"] == read[1]["recipe"]
    assert SMALLEST in capsys.readouterr().out
    assert not (first / "MANIFEST.json").exists()  # only the package folder keeps one


def test_a_check_against_another_recipe_is_reported_as_different(tmp_path) -> None:
    path, _ = pretrained.make(SMALLEST, tmp_path)
    other = pretrained.checkpoint_path("copy")
    with pytest.raises(ValueError, match="different recipes"):
        pretrained.weight_gap(path, other)
    ckpt = torch.load(path, weights_only=True)
    ckpt["state_dict"] = {k: v + 0.01 for k, v in ckpt["state_dict"].items()}
    torch.save(ckpt, tmp_path / "moved.pt")
    same, word = pretrained._same_model(tmp_path / "moved.pt", pretrained.checkpoint_path(SMALLEST))
    assert not same
    assert word.startswith("DIFFERENT")


def test_retrain_gives_the_shipped_model() -> None:
    live = pretrained.load(SMALLEST, retrain=True, progress=False)
    shipped = pretrained.load(SMALLEST, retrain=False)
    weights = live.model.state_dict()
    for k, v in shipped.model.state_dict().items():
        torch.testing.assert_close(v, weights[k], rtol=0, atol=pretrained.RETRAIN_ATOL, msg=k)
    assert live.metrics == shipped.metrics


# --------------------------------------------------------------------------- trained with uniform α
def test_a_uniform_recipe_names_its_edit_and_a_learned_one_has_none() -> None:
    from attnlib.importance import AttentionIntervention

    assert pretrained.score_edit("reverse") is None
    edit = pretrained.score_edit("majority_uniform")
    assert isinstance(edit, AttentionIntervention)
    assert edit.mode == "uniform"
    # a learned recipe stores what it stored before the field existed: old checkpoints stay valid
    assert "attention" not in pretrained.RECIPES["reverse"].as_dict()
    assert pretrained.RECIPES["reverse_uniform"].as_dict()["attention"] == "uniform"
    assert pretrained.reseeded("majority_uniform", 1).attention == "uniform"


@pytest.mark.parametrize("name", ["reverse_uniform", "majority_uniform"])
def test_stored_metrics_of_a_uniform_model_are_those_with_uniform_attention(
    name: str, loaded: dict
) -> None:
    model, task, _, metrics = _load(loaded, name)
    edit = pretrained.score_edit(name)
    buckets = pretrained.RECIPES[name].buckets
    assert evaluate(model, task, "test", buckets=buckets, edit=edit) == metrics
    _, alpha = model.greedy(torch.tensor([task.src_vocab.encode(task.test[0][0])]), edit=edit)
    T_x = len(task.test[0][0]) + 1
    torch.testing.assert_close(alpha[0, 0], torch.full((T_x,), 1 / T_x))
