"""Tests of attnlib.mt.translation on a small slice of the shipped Tatoeba pairs."""

from __future__ import annotations

import dataclasses
import functools
import re

import numpy as np
import pytest
import torch

from attnlib.mt import tatoeba as tb
from attnlib.mt import translation as tr
from attnlib.trained import Translation

TINY = tr.Recipe(
    limit=300, test_sources=40, valid_sources=20, min_freq=1, emb=16, hidden=16, d_s=24, d_a=8,
    batch_size=32, max_epochs=3, patience=3, lr=1e-2, threads=1,
)  # fmt: skip


@functools.cache
def _pairs() -> list[tb.TextPair]:
    return tb.load_pairs()[:300]


@functools.cache
def _data(recipe: tr.Recipe = TINY) -> tr.Data:
    return tr.prepare(recipe, _pairs())


@functools.cache
def _trained() -> tuple[object, tr.History]:
    return tr.train_model(TINY, _data(), progress=False)


@functools.cache
def _quick() -> tuple[object, tr.History]:
    """A few steps only: enough for the decoding and scoring paths, fast."""
    return tr.train_model(dataclasses.replace(TINY, max_steps=5), _data(), progress=False)


def test_recipe_is_frozen_and_checked() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        TINY.lr = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="decoder"):
        tr.Recipe(decoder="luong")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_freq"):
        tr.Recipe(min_freq=0)
    assert tr.Recipe(**TINY.as_dict()) == TINY


def test_prepare_is_deterministic_and_holds_out_whole_sources() -> None:
    a, b = _data(), tr.prepare(TINY, _pairs())
    assert a.train == b.train
    assert a.valid == b.valid
    assert a.src_vocab.itos == b.src_vocab.itos
    assert a.tgt_vocab.itos == b.tgt_vocab.itos
    test = {en.casefold() for en in a.sources("test")}
    assert len(test) == 40
    assert not test & {p.en.casefold() for p in a.split.train}
    # every pair of the slice is in exactly one split
    assert len(a.split.train) + len(a.split.valid) + len(a.split.test) == 300


def test_prepare_max_src_len_filters_training_only() -> None:
    short = tr.prepare(dataclasses.replace(TINY, max_src_len=2), _pairs())
    assert short.train
    itos = short.src_vocab.itos  # min_freq=1: no <unk>, every id is its token
    words = [sum(any(c.isalnum() for c in itos[i]) for i in src[:-1]) for src, _ in short.train]
    assert max(words) == 2
    assert len(short.train) < len(_data().train)
    assert short.valid == _data().valid
    assert short.references == _data().references


@pytest.mark.slow
def test_training_lowers_the_loss_and_keeps_the_best_epoch() -> None:
    model, hist = _trained()
    assert hist.steps == len(hist.loss) > 0
    first, last = sum(hist.loss[:3]) / 3, sum(hist.loss[-3:]) / 3
    assert last < first - 0.5
    assert len(hist.valid_loss) == len(hist.epoch_train_loss) <= TINY.max_epochs
    assert hist.valid_loss[hist.best_epoch - 1] == min(hist.valid_loss)
    # the returned weights are the best epoch's: their validation loss is the minimum
    again = tr.validation_loss(model, _data().valid)  # type: ignore[arg-type]
    assert again == pytest.approx(min(hist.valid_loss), rel=1e-5)


def test_training_is_deterministic_under_the_seed() -> None:
    recipe = dataclasses.replace(TINY, max_epochs=1, max_steps=3)
    m1, h1 = tr.train_model(recipe, _data(), progress=False)
    m2, h2 = tr.train_model(recipe, _data(), progress=False)
    assert h1.loss == h2.loss
    assert h1.steps == 3
    for (k1, v1), (k2, v2) in zip(m1.state_dict().items(), m2.state_dict().items(), strict=True):
        assert k1 == k2
        assert torch.equal(v1, v2)


def test_baseline_trains_under_the_same_recipe() -> None:
    recipe = dataclasses.replace(TINY, decoder="none", max_epochs=1, max_steps=2)
    model, hist = tr.train_model(recipe, _data(), progress=False)
    assert not model.has_attention
    assert hist.steps == 2
    assert hist.stopped == "max_steps"


def test_translate_returns_one_translation_per_sentence() -> None:
    model, _ = _quick()
    sentences = ["Go.", "I am here.", "Zyxwv qqq."]  # the last is all <unk>
    for k in (1, 3):
        out = tr.translate(model, _data(), sentences, k=k)  # type: ignore[arg-type]
        assert len(out) == 3
        assert all(isinstance(t, Translation) for t in out)
        assert not any("<eos>" in t.text or "<pad>" in t.text for t in out)
        assert out[0].src == ["go", ".", "<eos>"]  # what the encoder read
        assert out[2].src == ["<unk>", "<unk>", ".", "<eos>"]
        for t in out:
            assert t.alpha is not None
            assert t.alpha.shape == (len(t.out), len(t.src))
            np.testing.assert_allclose(t.alpha.sum(axis=1), 1.0, rtol=1e-5)
            assert "<pad>" not in t.out
            assert "<eos>" not in t.out[:-1]
    [bare] = tr.translate(model, _data(), sentences[:1], return_attention=False)  # type: ignore[arg-type]
    assert bare.alpha is None
    assert bare.text == tr.translate(model, _data(), sentences[:1])[0].text  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tr.translate(model, _data(), "Go.")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no tokens"):
        tr.translate(model, _data(), ["   "])  # type: ignore[arg-type]


def test_translate_does_not_depend_on_batching() -> None:
    model, _ = _quick()
    sentences = ["Go.", "I am very tired today.", "Hi."]
    together = tr.translate(model, _data(), sentences)  # type: ignore[arg-type]
    alone = [tr.translate(model, _data(), [s])[0] for s in sentences]  # type: ignore[arg-type]
    for a, b in zip(together, alone, strict=True):
        assert (a.src, a.out, a.text) == (b.src, b.out, b.text)
        # one sentence alone takes the one-sentence path: α equal up to float32 rounding
        np.testing.assert_allclose(a.alpha, b.alpha, rtol=0, atol=1e-5)


def test_evaluate_scores_against_all_references() -> None:
    model, _ = _quick()
    data = _data()
    ev = tr.evaluate(model, data, "test", k=1, threads=1)  # type: ignore[arg-type]
    assert "nrefs:" in ev.bleu.signature
    assert "tok:13a" in ev.bleu.signature
    assert "chrF" in ev.chrf.signature or "nc:6" in ev.chrf.signature
    assert ev.hypotheses == [t.text for t in tr.translate(model, data, ev.sources)]  # type: ignore[arg-type]
    assert (ev.split, ev.n) == ("test", 40)
    assert ev.bleu.n_sentences == len(ev.hypotheses) == 40
    assert 0.0 <= ev.bleu.score <= 100.0
    assert 0.0 <= ev.chrf.score <= 100.0
    assert sum(b.n for b in ev.by_length) == 40
    # the references are those of the split, grouped by source, normalised like the training text
    want = {
        en: sorted(tb.normalise(p.fr, "fr") for p in data.split.test if p.en == en)
        for en in ev.sources
    }
    assert {en: sorted(r) for en, r in zip(ev.sources, ev.references, strict=True)} == want


def test_evaluate_keeps_the_score_each_output_was_ranked_by() -> None:
    """``scores[i]`` is what the search ranked output i by, log p / lp: the decoder's own score
    of it (tests/test_decoding.py holds that score to the teacher-forced log p)."""
    model, _ = _quick()
    data = _data()
    for k in (1, 3):
        ev = tr.evaluate(model, data, "test", k=k, threads=1)  # type: ignore[arg-type]
        decoded = tr.decode(model, data, ev.sources, k=k)  # type: ignore[arg-type]
        assert len(ev.scores) == ev.n
        assert ev.scores == [d.score for d in decoded]
        translated = tr.translate(model, data, ev.sources[:3], k=k)  # type: ignore[arg-type]
        # three sources are another batch: the same outputs, scores equal to float32 rounding
        assert [t.score for t in translated] == pytest.approx(ev.scores[:3], abs=1e-4)
        assert [t.text for t in translated] == ev.hypotheses[:3]


def test_evaluate_of_the_references_themselves_is_perfect() -> None:
    # a model that outputs one reference of each source scores 100: built by hand here
    data = _data()
    refs = [r for _, r in data.references["test"]]
    from attnlib.mt import scoring

    assert scoring.corpus_bleu([r[0] for r in refs], refs).score == pytest.approx(100.0)
    with pytest.raises(ValueError, match="split"):
        tr.evaluate(_quick()[0], data, "train")  # type: ignore[arg-type]


def test_evaluate_normalises_the_references(monkeypatch) -> None:
    # a reference written with ’ and a narrow no-break space would never match the model's ' and " "
    model, _ = _quick()
    data = _data()
    en, _ = data.references["test"][0]
    curly = dataclasses.replace(
        data, references={**data.references, "test": [(en, ["L’homme est là !"])]}
    )
    ev = tr.evaluate(model, curly, "test", threads=1)  # type: ignore[arg-type]
    assert ev.references == [["L'homme est là !"]]


def test_build_casing_learns_names_from_inside_sentences() -> None:
    casing = tr.build_casing(["Je vois Tom.", "Elle aime Tom.", "Il voit tom.", "Paris est loin."])
    assert casing["tom"] == "Tom"  # 2 against 1
    assert "paris" not in casing  # only ever seen first in a sentence
    assert casing["vois"] == "vois"


def test_translate_restores_case_and_can_drop_unk() -> None:
    model, _ = _quick()
    sentences = ["Go.", "Tom is here.", "Zyxwv qqq blorp."]
    cased = [t.text for t in tr.translate(model, _data(), sentences, k=2)]  # type: ignore[arg-type]
    assert all(s[:1] == s[:1].upper() for s in cased)
    dropped = [
        t.text
        for t in tr.translate(model, _data(), sentences, k=2, keep_unk=False)  # type: ignore[arg-type]
    ]
    assert not any("<unk>" in s for s in dropped)
    for a, b in zip(cased, dropped, strict=True):
        if "<unk>" not in a:
            assert a == b


# --------------------------------------------------------------------------- checkpoints
def test_a_saved_model_loads_back_with_the_same_translations(tmp_path, monkeypatch) -> None:
    model, hist = _quick()
    recipe = dataclasses.replace(TINY, max_steps=5)
    monkeypatch.setitem(tr.RECIPES, "tiny", recipe)
    monkeypatch.setattr(tb, "load_pairs", lambda *a, **k: _pairs())
    trained = tr.Trained("tiny", recipe, model, _data(), hist)
    path = tr.save(trained, tr.checkpoint_path("tiny", tmp_path))
    raw = torch.load(path, weights_only=True)  # plain data only
    assert raw["recipe"] == recipe.as_dict()
    back = tr.load("tiny", directory=tmp_path, retrain=False)
    assert back.data.train == []  # nothing of training is re-tokenised
    assert back.data.src_vocab.itos == _data().src_vocab.itos
    assert back.data.tgt_vocab.itos == _data().tgt_vocab.itos
    assert back.data.references == _data().references
    for k, v in model.state_dict().items():
        assert torch.equal(v, back.model.state_dict()[k]), k
    sources = _data().sources("test")[:8]
    for a, b in zip(
        back.translate(sources, k=2), tr.translate(model, _data(), sources, k=2), strict=True
    ):
        assert (a.src, a.out, a.text) == (b.src, b.out, b.text)
        assert np.array_equal(a.alpha, b.alpha)  # the same weights, the same path: bit for bit
    assert back.history == hist


def test_load_refuses_an_unknown_name_a_missing_file_and_another_recipe(
    tmp_path, monkeypatch
) -> None:
    with pytest.raises(ValueError, match="no translation recipe 'french'"):
        tr.load("french")
    monkeypatch.setitem(tr.RECIPES, "tiny", TINY)
    with pytest.raises(FileNotFoundError, match=r"python -m attnlib\.mt\.translation tiny"):
        tr.load("tiny", directory=tmp_path, retrain=False)
    model, hist = _quick()
    tr.save(tr.Trained("tiny", TINY, model, _data(), hist), tmp_path / "tiny.pt")
    monkeypatch.setitem(tr.RECIPES, "tiny", dataclasses.replace(TINY, min_freq=2))
    with pytest.raises(ValueError, match="different recipe"):
        tr.load("tiny", directory=tmp_path, retrain=False)


def test_retrain_with_another_seed_keeps_the_split_and_changes_the_weights(monkeypatch) -> None:
    recipe = dataclasses.replace(TINY, max_steps=2, max_epochs=1)
    monkeypatch.setitem(tr.RECIPES, "tiny", recipe)
    monkeypatch.setattr(tb, "load_pairs", lambda *a, **k: _pairs())
    zero, one = tr.retrain("tiny", progress=False), tr.retrain("tiny", seed=1, progress=False)
    assert zero.recipe == recipe
    assert one.recipe == dataclasses.replace(recipe, seed=recipe.seed + 1)
    assert one.data.references == zero.data.references  # the same held-out sentences
    assert one.data.train == zero.data.train
    w0, w1 = zero.model.state_dict(), one.model.state_dict()
    assert not torch.equal(w0["decoder.W_y.weight"], w1["decoder.W_y.weight"])
    again = tr.retrain("tiny", seed=1, progress=False)
    assert torch.equal(again.model.state_dict()["decoder.W_y.weight"], w1["decoder.W_y.weight"])
    with pytest.raises(ValueError, match="seed must be a whole number"):
        tr.retrain("tiny", seed=-1)


def test_the_retrain_switch_trains_instead_of_loading(monkeypatch, tmp_path) -> None:
    recipe = dataclasses.replace(TINY, max_steps=2, max_epochs=1)
    monkeypatch.setitem(tr.RECIPES, "tiny", recipe)
    monkeypatch.setattr(tb, "load_pairs", lambda *a, **k: _pairs())
    monkeypatch.setenv("ATTNLIB_RETRAIN", "1")
    trained = tr.load("tiny", directory=tmp_path, progress=False)  # no file there: it trains
    assert trained.history.steps == 2
    assert trained.data.train


@pytest.mark.parametrize("name", sorted(tr.RECIPES))
def test_every_shipped_model_is_small_and_made_by_its_recipe(name: str) -> None:
    path = tr.checkpoint_path(name)
    assert path.stat().st_size <= 5_000_000, (
        "a shipped checkpoint stays under 5 MB: the package is installed from git"
    )
    raw = torch.load(path, map_location="cpu", weights_only=True)
    assert raw["format"] == tr.FORMAT
    assert raw["recipe"] == tr.RECIPES[name].as_dict()
    assert raw["history"]["stopped"] == "patience", "each model is trained to convergence"


def test_the_shipped_recipes_differ_only_where_their_names_say() -> None:
    base = tr.RECIPES["attention"].as_dict()
    for name, recipe in tr.RECIPES.items():
        changed = {k for k, v in recipe.as_dict().items() if base[k] != v}
        want = ({"decoder"} if name.startswith("baseline") else set()) | (
            {"max_src_len"} if name.endswith("short") else set()
        )
        assert changed == want, name


def test_recipe_s0_reaches_the_model() -> None:
    model = tr.build_model(dataclasses.replace(TINY, s0="backward"), _data())
    assert model.decoder.s0 == "backward"
    assert model.decoder.W_s.in_features == TINY.hidden
    with pytest.raises(ValueError, match="s0 must be"):
        tr.Recipe(s0="first")  # type: ignore[arg-type]


def test_batch_loss_is_the_cross_entropy_over_real_target_tokens() -> None:
    """batch_loss skips the padded positions before the output layer; the number is the same."""
    model, _ = _quick()
    batch = next(iter(tb.batches(_data().train, 16, seed=3)))
    assert bool((batch.tgt_out == tb.PAD_ID).any())  # the batch has padding to skip
    logits, _ = model(batch.src, batch.tgt_in)
    expected = torch.nn.functional.cross_entropy(
        logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=tb.PAD_ID
    )
    torch.testing.assert_close(tr.batch_loss(model, batch), expected, atol=1e-6, rtol=1e-6)
    n_real = int((batch.tgt_out != tb.PAD_ID).sum())
    torch.testing.assert_close(
        tr.batch_loss(model, batch, reduction="sum"), expected * n_real, atol=1e-4, rtol=1e-6
    )


def test_an_unk_scores_as_one_wrong_word() -> None:
    from attnlib.mt import scoring

    refs = [["le chat est rouge sur la table ."]]
    as_word = scoring.corpus_bleu([tb.unk_as_word("le <unk> est rouge sur la table .")], refs)
    other_word = scoring.corpus_bleu(["le chien est rouge sur la table ."], refs)
    as_text = scoring.corpus_bleu(["le <unk> est rouge sur la table ."], refs)
    assert as_word.score == pytest.approx(other_word.score)  # like any wrong word
    assert as_text.score < as_word.score  # 13a makes three wrong tokens of the text "<unk>"
    assert tb.unk_as_word("<unk> <unk>") == f"{tb.UNK_SCORED} {tb.UNK_SCORED}"


@pytest.mark.slow
def test_evaluate_scores_unk_as_asked() -> None:
    from attnlib.mt import scoring

    trained = tr.load("attention")  # the shipped model: it writes <unk> for rare words
    data = dataclasses.replace(
        trained.data, references={"test": trained.data.references["test"][:100]}
    )
    split = tr.evaluate(trained.model, data, "test", unk="split", threads=1)
    assert any(tb.UNK in h for h in split.hypotheses)
    word = tr.evaluate(trained.model, data, "test", unk="word", threads=1)
    assert word.hypotheses == split.hypotheses  # shown as written
    rescored = scoring.corpus_bleu([tb.unk_as_word(h) for h in split.hypotheses], split.references)
    assert word.bleu.score == pytest.approx(rescored.score)
    assert word.bleu.score > split.bleu.score  # one wrong word per <unk>, not three
    drop = tr.evaluate(trained.model, data, "test", unk="drop", threads=1)
    assert not any(tb.UNK in h for h in drop.hypotheses)
    # the same words less <unk> (the first word shown is capitalised, whichever it is)
    assert [re.findall(r"\w+", h.lower()) for h in drop.hypotheses] == [
        [w for w in re.findall(r"\w+", h.lower()) if w != "unk"] for h in split.hypotheses
    ]
    with pytest.raises(ValueError, match="unk must be one of"):
        tr.evaluate(trained.model, data, "test", unk="keep")  # type: ignore[arg-type]


@pytest.mark.slow
def test_one_sentence_at_a_time_translates_every_test_source_as_the_batch_does() -> None:
    """The translate widget's path (one sentence, k = 1) against batches of 256 (the general
    path), on the shipped model and the whole test split: the same words, and log p and α
    equal up to float32 rounding."""
    from attnlib import decoding

    trained = tr.load("attention")
    model, data = trained.model, trained.data
    sources = data.sources("test")
    batched = tr.decode(model, data, sources, 1, return_attention=True)
    for text, want in zip(sources, batched, strict=True):
        src = torch.tensor([tb.encode(tb.tokenise(text, "en"), data.src_vocab)])
        assert decoding._fast_applies(model, src)
        [got] = decoding.beam_search(model, src, 1)
        assert got.tokens == want.tokens, text
        assert got.finished == want.finished
        assert got.log_prob == pytest.approx(want.log_prob, abs=1e-4)
        assert got.alpha is not None
        assert want.alpha is not None
        torch.testing.assert_close(got.alpha, want.alpha, rtol=0, atol=1e-5)
