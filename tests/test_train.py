"""Tests for attnlib.train: batches, learning, determinism, metrics and decoding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlib.models import make_seq2seq
from attnlib.tasks import BOS_ID, EOS_ID, PAD_ID, make_task
from attnlib.train import (
    History,
    encode_pairs,
    evaluate,
    predict,
    train,
    translate,
)

TINY = {"emb": 16, "hidden": 16, "d_s": 32, "d_a": 16}


@pytest.fixture(scope="module")
def task():
    return make_task("reverse", n_train=1500, n_valid=60, n_test=120, min_len=2, max_len=6)


@pytest.fixture(scope="module")
def trained(task):
    """A tiny model trained briefly, once for the module: half-way to solving the task."""
    model = make_seq2seq(task.src_vocab, task.tgt_vocab, seed=0, **TINY)
    hist = train(model, task, steps=60, batch_size=64, lr=2e-2, eval_every=30, progress=False)
    return model, hist


# --------------------------------------------------------------------------- batches
def test_encode_pairs_layout(task) -> None:
    pairs = [(("a", "b", "c"), ("c", "b", "a")), (("d",), ("d",))]
    b = encode_pairs(task, pairs)
    a, bb, c, d = (task.src_vocab.stoi[t] for t in "abcd")
    assert b.src.tolist() == [[a, bb, c, EOS_ID], [d, EOS_ID, PAD_ID, PAD_ID]]
    assert b.tgt_out.tolist() == [[c, bb, a, EOS_ID], [d, EOS_ID, PAD_ID, PAD_ID]]
    # teacher forcing: the input at step t is the target at t-1, starting from <bos>
    assert b.tgt_in.tolist() == [[BOS_ID, c, bb, a], [BOS_ID, d, PAD_ID, PAD_ID]]


def test_batch_rows_are_trimmed_to_their_longest(task) -> None:
    b = encode_pairs(task, [(("a",) * 6, ("a",) * 6), (("b",), ("b",))])
    sub = b[torch.tensor([1])]
    assert sub.src.shape == (1, 2)
    assert sub.tgt_out.shape == (1, 2)


def test_encode_pairs_errors(task) -> None:
    with pytest.raises(ValueError, match="at least one pair"):
        encode_pairs(task, [])
    with pytest.raises(ValueError, match="pair 1 has an empty source"):
        encode_pairs(task, [(("a",), ("a",)), ((), ())])
    with pytest.raises(ValueError, match="token 'Z' at position 0 is not in the source vocabulary"):
        encode_pairs(task, [(("Z",), ("a",))])


# --------------------------------------------------------------------------- training
def test_a_short_run_learns(trained) -> None:
    _, hist = trained
    first, last = np.mean(hist.loss[:5]), np.mean(hist.loss[-5:])
    assert last <= first / 2, (first, last)
    assert hist.token_accuracy[-1] > hist.token_accuracy[0]
    assert hist.steps == 60
    assert hist.eval_step == [30, 60]
    assert len(hist.valid_exact_match) == 2
    assert not hist.stopped_early


def test_training_is_deterministic(task) -> None:
    runs = []
    for _ in range(2):
        model = make_seq2seq(task.src_vocab, task.tgt_vocab, seed=1, **TINY)
        hist = train(model, task, steps=15, batch_size=32, eval_every=5, progress=False)
        runs.append((model.state_dict(), hist))
    (sd1, h1), (sd2, h2) = runs
    for k in sd1:
        assert torch.equal(sd1[k], sd2[k]), k
    assert h1.loss == h2.loss
    assert h1.valid_exact_match == h2.valid_exact_match


def test_an_interrupted_run_is_a_prefix_of_the_full_run(task) -> None:
    """stop_after keeps the learning-rate schedule of the full run; a shorter run does not."""
    losses = {}
    for kw in ({"steps": 12}, {"steps": 12, "stop_after": 4}, {"steps": 4}):
        model = make_seq2seq(task.src_vocab, task.tgt_vocab, seed=2, **TINY)
        hist = train(model, task, batch_size=32, eval_every=0, progress=False, **kw)
        losses[tuple(kw.items())] = hist.loss
    full, interrupted, short = losses.values()
    assert len(interrupted) == 4
    assert interrupted == full[:4]
    assert short[0] == full[0]
    assert short[1:] != full[1:4]  # the decay follows `steps`


def test_data_seed_changes_the_run(task) -> None:
    losses = []
    for seed in (0, 1):
        model = make_seq2seq(task.src_vocab, task.tgt_vocab, seed=0, **TINY)
        losses.append(train(model, task, steps=3, seed=seed, eval_every=0, progress=False).loss)
    assert losses[0] != losses[1]


def test_early_stop_at_the_target(task, trained) -> None:
    _, hist = trained
    reached = hist.valid_exact_match[0]  # what the same recipe reaches at step 30
    assert reached > 0
    model = make_seq2seq(task.src_vocab, task.tgt_vocab, seed=0, **TINY)
    again = train(
        model, task, steps=60, batch_size=64, lr=2e-2, eval_every=30, target=reached,
        progress=False,
    )  # fmt: skip
    assert again.steps == 30
    assert again.stopped_early
    assert again.valid_exact_match == [reached]


def test_training_restores_the_thread_count(task) -> None:
    before = torch.get_num_threads()
    model = make_seq2seq(task.src_vocab, task.tgt_vocab, **TINY)
    train(model, task, steps=1, eval_every=0, n_threads=1, progress=False)
    assert torch.get_num_threads() == before


def test_train_checks_its_arguments(task) -> None:
    other = make_task("dates", n_train=10, n_valid=2, n_test=2)
    model = make_seq2seq(other.src_vocab, other.tgt_vocab, **TINY)
    with pytest.raises(
        ValueError, match=r"built for vocabularies of \d+ → \d+ ids but task 'reverse'"
    ):
        train(model, task, steps=1, progress=False)
    model = make_seq2seq(task.src_vocab, task.tgt_vocab, **TINY)
    with pytest.raises(ValueError, match="steps must be"):
        train(model, task, steps=0, progress=False)
    with pytest.raises(ValueError, match="target is an exact-match fraction"):
        train(model, task, target=99, progress=False)
    with pytest.raises(TypeError, match="Seq2Seq"):
        train(torch.nn.Linear(2, 2), task)  # type: ignore[arg-type]


def test_history_as_dict_round_trips(trained) -> None:
    _, hist = trained
    assert History(**hist.as_dict()) == hist


# --------------------------------------------------------------------------- metrics
def _expected_metrics(outputs, pairs):
    """Token accuracy and exact match computed directly from the decoded tokens."""
    correct = total = exact = 0
    for out, (_, tgt) in zip(outputs, pairs, strict=True):
        want = [*tgt, "<eos>"]
        got = [*out, "<eos>"]  # predict() strips <eos>
        total += len(want)
        correct += sum(a == b for a, b in zip(got, want, strict=False))
        exact += list(out) == list(tgt)
    return correct / total, exact / len(pairs)


def test_metrics_agree_with_a_direct_count(task, trained) -> None:
    model, _ = trained
    metrics = evaluate(model, task, "test", buckets=2)
    outputs = predict(model, task, "test")
    tok, exact = _expected_metrics(outputs, task.test)
    assert metrics.n == len(task.test)
    assert metrics.exact_match == pytest.approx(exact)
    assert 0 < metrics.exact_match < 1  # a half-trained model: the test can tell right from wrong
    # outputs that stop early or run long make token accuracy differ from this count only
    # when a wrong-length output happens to match past its <eos>; a direct bound holds:
    assert metrics.token_accuracy >= exact
    assert abs(metrics.token_accuracy - tok) < 0.05
    assert sum(b.n for b in metrics.by_length) == metrics.n
    assert [b.label for b in metrics.by_length] == ["2–3", "4–5", "6"]
    for b in metrics.by_length:
        sel = [(o, p) for o, p in zip(outputs, task.test, strict=True) if b.lo <= len(p[0]) <= b.hi]
        assert b.n == len(sel)
        assert b.exact_match == pytest.approx(np.mean([list(o) == list(p[1]) for o, p in sel]))


def test_token_accuracy_counts_positions(task) -> None:
    """A model that always says "a" is right exactly where the target has an "a"."""
    model = make_seq2seq(task.src_vocab, task.tgt_vocab, **TINY)
    with torch.no_grad():
        model.decoder.W_y.bias[task.tgt_vocab.stoi["a"]] = 100.0
    m = evaluate(model, task, "valid")
    hits = sum(t.count("a") for _, t in task.valid)
    expected = hits / sum(len(t) + 1 for _, t in task.valid)  # + 1: the <eos> it never says
    assert hits > 0
    assert m.token_accuracy == pytest.approx(expected)
    assert m.exact_match == 0.0


def test_bucket_edges(task, trained) -> None:
    model, _ = trained
    m = evaluate(model, task, "valid", buckets=[2, 5])
    assert [(b.lo, b.hi) for b in m.by_length] == [(2, 4), (5, 6)]
    assert "all" in m.table()
    with pytest.raises(ValueError, match="first bucket edge"):
        evaluate(model, task, "valid", buckets=[3, 5])


# --------------------------------------------------------------------------- translate
def test_translate_returns_tokens_and_alpha(task, trained) -> None:
    model, _ = trained
    [tr] = translate(model, task, ["abcd"])
    assert tr.src == ["a", "b", "c", "d", "<eos>"]
    assert tr.alpha.shape == (len(tr.out), 5)
    np.testing.assert_allclose(tr.alpha.sum(axis=1), 1.0, atol=1e-6)
    assert tr.text == "".join(t for t in tr.out if t != "<eos>")
    # the same source as tokens, and in a batch with a longer one: the same answer
    tr2, _ = translate(model, task, [("a", "b", "c", "d"), "abcdef"])
    assert tr2.out == tr.out
    np.testing.assert_allclose(tr2.alpha, tr.alpha, atol=1e-6)


def test_translate_without_attention_has_no_alpha(task) -> None:
    model = make_seq2seq(task.src_vocab, task.tgt_vocab, decoder="none", **TINY)
    [tr] = translate(model, task, ["ab"], max_len=3)
    assert tr.alpha is None
    assert 1 <= len(tr.out) <= 3


def test_translate_errors(task, trained) -> None:
    model, _ = trained
    with pytest.raises(TypeError, match=r"list of sources"):
        translate(model, task, "abc")
    with pytest.raises(ValueError, match="source 0 is empty"):
        translate(model, task, [""])
    with pytest.raises(ValueError, match="token 'Z' at position 1"):
        translate(model, task, ["aZ"])
