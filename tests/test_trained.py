"""attnlib.trained: one vocabulary for the trained models of both stacks, and the two stacks held to it.

The toy tasks' models (attnlib.pretrained) and the English–French models (attnlib.mt.translation)
answer to the same protocols: the module-level words (RECIPES, CHECKPOINT_DIR, checkpoint_path,
load, retrain) with the same parameters, and a trained model with the same attributes and verbs
(evaluate, translate), whose results have the same shape (Scores with Buckets, Translations).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types

import numpy as np
import pytest
import torch

from attnlib import pretrained, trained
from attnlib.mt import tatoeba as tb
from attnlib.mt import translation as tr
from attnlib.trained import Bucket, Translation

STACKS = {"pretrained": pretrained, "translation": tr}


# --------------------------------------------------------------------------- Bucket
def test_a_bucket_reads_its_scores_as_attributes() -> None:
    b = Bucket(5, 8, 250, {"token_accuracy": 0.75, "exact_match": 0.5})
    assert (b.exact_match, b.token_accuracy) == (0.5, 0.75)
    assert (b.label, b.end) == ("5–8", 9)
    with pytest.raises(AttributeError, match="bucket 5–8 has no score 'bleu'"):
        _ = b.bleu
    assert not hasattr(b, "bleu")  # what plots.by_length asks before drawing a metric
    assert Bucket(7, 7, 1, {"bleu": 30.0}, dash="-").label == "7"
    assert Bucket(1, 3, 2, {"bleu": 30.0}, dash="-").label == "1-3"


def test_an_empty_bucket_has_no_scores_rather_than_zeros() -> None:
    empty = Bucket(5, 6, 0, dash="-")
    with pytest.raises(AttributeError, match="no source has a length in 5-6"):
        _ = empty.bleu


@pytest.mark.parametrize(
    ("args", "message"), [((5, 4, 1), "lo ≤ hi"), ((1, 2, -1), "n ≥ 0 sources")]
)
def test_a_bucket_refuses_an_impossible_range(args: tuple[int, int, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Bucket(*args)


def test_a_bucket_round_trips_through_the_plain_dict_a_checkpoint_stores() -> None:
    b = Bucket(2, 3, 40, {"token_accuracy": 0.9, "exact_match": 0.8})
    d = b.as_dict()
    assert d == {"lo": 2, "hi": 3, "n": 40, "token_accuracy": 0.9, "exact_match": 0.8}
    assert Bucket.from_dict(d) == b


def test_bucket_spans_are_the_inclusive_ranges_of_half_open_edges() -> None:
    assert trained.bucket_spans([1, 4, 5, 7]) == [(1, 3), (4, 4), (5, 6)]
    with pytest.raises(ValueError, match="strictly increasing"):
        trained.bucket_spans([1, 1, 3])
    with pytest.raises(ValueError, match="at least two"):
        trained.bucket_spans([1])


# --------------------------------------------------------------------------- checkpoints
def test_a_name_that_is_not_a_recipe_lists_the_names_there_are() -> None:
    with pytest.raises(ValueError, match="no pretrained model 'x'; choose one of a, b"):
        trained.recipe_named({"a": 1, "b": 2}, "x", "pretrained model")


@pytest.mark.parametrize("seed", [-1, 1.5, True, "1"])
def test_a_training_seed_is_a_whole_number_from_zero(seed: object) -> None:
    with pytest.raises(ValueError, match="seed must be a whole number ≥ 0"):
        trained.check_seed(seed)


def test_a_checkpoint_is_refused_unless_its_format_and_recipe_match(tmp_path) -> None:
    recipe = pretrained.RECIPES["copy"]
    kw = {"form": 1, "recipe": recipe, "name": "copy", "command": "make it"}
    with pytest.raises(FileNotFoundError, match="`make it copy`"):
        trained.read_checkpoint(tmp_path / "copy.pt", **kw)
    path = tmp_path / "copy.pt"
    torch.save({"format": 1, "recipe": recipe.as_dict(), "state_dict": {}}, path)
    assert trained.read_checkpoint(path, **kw)["state_dict"] == {}
    with pytest.raises(ValueError, match="different recipe"):
        trained.read_checkpoint(path, **{**kw, "form": 2})
    other = pretrained.RECIPES["reverse"]
    with pytest.raises(ValueError, match=r"different recipe than RECIPES\['copy'\]"):
        trained.read_checkpoint(path, **{**kw, "recipe": other})


# --------------------------------------------------------------------------- the stacks
def _parameters(f: types.FunctionType) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]


@pytest.mark.parametrize("verb", ["load", "retrain", "checkpoint_path"])
@pytest.mark.parametrize("stack", STACKS)
def test_both_stacks_spell_load_retrain_and_checkpoint_path_alike(stack: str, verb: str) -> None:
    module = STACKS[stack]
    want = _parameters(getattr(trained.Stack, verb))[1:]  # without the protocol's self
    assert _parameters(getattr(module, verb)) == want, f"{stack}.{verb}"


@pytest.mark.parametrize("stack", STACKS)
def test_both_stacks_ship_recipes_with_checkpoints(stack: str) -> None:
    module = STACKS[stack]
    assert module.RECIPES
    assert all(isinstance(r, trained.Recipe) for r in module.RECIPES.values())
    assert all(dataclasses.is_dataclass(r) for r in module.RECIPES.values())  # frozen records
    for name in module.RECIPES:
        path = module.checkpoint_path(name)
        assert path.parent == module.CHECKPOINT_DIR
        assert path.is_file(), path


def test_a_pretrained_model_is_a_trained_model() -> None:
    got = pretrained.load("dates", retrain=False)
    assert isinstance(got, trained.TrainedModel)
    model, task, history, metrics = got  # the four a chapter unpacks
    assert (model, task, history, metrics) == (got.model, got.task, got.history, got.metrics)
    assert (got.name, got.recipe) == ("dates", pretrained.RECIPES["dates"])
    scores = got.evaluate("test")
    assert scores == metrics  # the stored test metrics are what the model does
    assert (scores.split, scores.n) == ("test", len(task.test))
    assert sum(b.n for b in scores.by_length) == scores.n
    [out] = got.translate([task.test[0][0]])
    assert isinstance(out, Translation)
    assert out.alpha is not None
    assert out.alpha.shape == (len(out.out), len(out.src))


def test_a_uniform_attention_model_runs_with_its_edit_in_both_verbs() -> None:
    got = pretrained.load("majority_uniform", retrain=False)
    assert got.evaluate("test") == got.metrics  # stored with the edit: equal only with it
    [out] = got.translate([got.task.test[0][0]])
    assert out.alpha is not None
    np.testing.assert_allclose(out.alpha, 1 / out.alpha.shape[1], rtol=1e-6)  # α_ti = 1/T_x


TINY = tr.Recipe(
    limit=300, test_sources=40, valid_sources=20, min_freq=1, emb=16, hidden=16, d_s=24, d_a=8,
    threads=1,
)  # fmt: skip


@functools.cache
def _tiny() -> tr.Trained:
    data = tr.prepare(TINY, tb.load_pairs()[:300])
    return tr.Trained("tiny", TINY, tr.build_model(TINY, data).eval(), data, tr.History())


@pytest.mark.slow  # tokenising the 300 pairs (Moses) takes about a second
def test_an_english_french_model_is_a_trained_model() -> None:
    got = _tiny()
    assert isinstance(got, trained.TrainedModel)
    scores = got.evaluate("test", threads=1)
    assert (scores.split, scores.n) == ("test", 40)
    assert sum(b.n for b in scores.by_length) == scores.n
    assert all(b.dash == "-" for b in scores.by_length)
    [out] = got.translate(["I am here."])
    assert isinstance(out, Translation)
    assert out.src[-1] == "<eos>"
    assert out.alpha is not None
    assert out.alpha.shape == (len(out.out), len(out.src))
