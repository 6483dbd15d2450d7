"""Tests for attnlib.importance: leave-one-out, gradient × input, map comparisons, interventions.

The reference values are computed by an independent route: editing the model's
embedding table (instead of the input embeddings), gradients on that table,
hand-made maps and hand-ranked vectors.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib import importance as imp
from attnlib.models import make_seq2seq
from attnlib.tasks import BOS_ID, PAD_ID, make_task
from attnlib.train import evaluate

TINY = {"emb": 8, "hidden": 6, "d_s": 10, "d_a": 7}
SRC = ("a", "c", "e", "g", "i")  # every token once, so a token's embedding row is one position
OUT = ("i", "g", "e", "c", "a")


@pytest.fixture(scope="module")
def task():
    return make_task("reverse", n_train=40, n_valid=10, n_test=30, min_len=3, max_len=7, seed=1)


@pytest.fixture(scope="module")
def model(task):
    return make_seq2seq(task.src_vocab, task.tgt_vocab, seed=3, **TINY).eval()


def _ids(task):
    return (
        torch.tensor([task.src_vocab.encode(SRC)]),
        torch.tensor([task.tgt_vocab.encode(OUT)]),
    )


def _logp_direct(model, src, tgt_out):
    """log p(y_t) by teacher forcing, written out without attnlib.importance."""
    tgt_in = torch.cat([torch.tensor([[BOS_ID]]), tgt_out[:, :-1]], dim=1)
    logits, _ = model(src, tgt_in)
    return torch.log_softmax(logits, -1)[0, torch.arange(tgt_out.shape[1]), tgt_out[0]]


# --------------------------------------------------------------------------- leave-one-out
def test_leave_one_out_equals_zeroing_the_token_embedding(task, model) -> None:
    src, tgt = _ids(task)
    loo = imp.leave_one_out(model, src, tgt)
    assert loo.shape == (tgt.shape[1], src.shape[1])
    with torch.no_grad():
        base = _logp_direct(model, src, tgt)
        for i, tok in enumerate(src[0].tolist()):
            blanked = copy.deepcopy(model)
            blanked.encoder.embedding.weight[tok] = 0.0  # the token occurs only at position i
            expected = base - _logp_direct(blanked, src, tgt)
            np.testing.assert_allclose(loo[:, i], expected.numpy(), atol=1e-5)


def test_leave_one_out_accepts_flat_ids_and_restores_the_model(task, model) -> None:
    src, tgt = _ids(task)
    before = [p.clone() for p in model.parameters()]
    a = imp.leave_one_out(model, src, tgt)
    b = imp.leave_one_out(model, src[0].tolist(), tgt[0].tolist())
    np.testing.assert_array_equal(a, b)
    assert all(torch.equal(p, q) for p, q in zip(before, model.parameters(), strict=True))
    assert not model.training
    # no hook left behind: a plain forward pass is unchanged
    assert not model.encoder.embedding._forward_hooks


def test_bad_ids_are_rejected(model) -> None:
    with pytest.raises(ValueError, match=r"shape \(T,\) or \(1, T\)"):
        imp.leave_one_out(model, torch.zeros(2, 3, dtype=torch.long), [3, 2])
    with pytest.raises(ValueError, match="T ≥ 1"):
        imp.grad_times_input(model, [3, 2], [])


# --------------------------------------------------------------------------- gradient × input
def test_grad_times_input_matches_the_embedding_table_gradient(task, model) -> None:
    src, tgt = _ids(task)
    gxi = imp.grad_times_input(model, src, tgt)
    assert gxi.shape == (tgt.shape[1], src.shape[1])
    assert np.all(gxi >= 0)
    table = model.encoder.embedding.weight
    for t in range(tgt.shape[1]):
        m = copy.deepcopy(model)
        w = m.encoder.embedding.weight
        (g,) = torch.autograd.grad(_logp_direct(m, src, tgt)[t], w)
        for i, tok in enumerate(src[0].tolist()):
            expected = abs(float(g[tok] @ table[tok].detach()))
            assert gxi[t, i] == pytest.approx(expected, rel=1e-4, abs=1e-7)


def test_grad_times_input_is_zero_on_a_blank_embedding(task, model) -> None:
    src, tgt = _ids(task)
    m = copy.deepcopy(model)
    with torch.no_grad():
        m.encoder.embedding.weight[src[0, 2]] = 0.0
    assert np.all(imp.grad_times_input(m, src, tgt)[:, 2] == 0.0)


# --------------------------------------------------------------------------- explain
def test_explain_gives_three_maps_of_the_same_shape(task, model) -> None:
    ex = imp.explain(model, task, "aceg")
    T_y, T_x = len(ex.out), len(ex.src)
    assert ex.src == ["a", "c", "e", "g", "<eos>"]
    for name in imp.MEASURES:
        assert ex.measure(name).shape == (T_y, T_x)
    np.testing.assert_allclose(ex.alpha.sum(axis=1), 1.0, atol=1e-6)
    with pytest.raises(ValueError, match="measure must be one of"):
        ex.measure("saliency")


def test_explain_needs_attention(task) -> None:
    none = make_seq2seq(task.src_vocab, task.tgt_vocab, decoder="none", seed=0, **TINY)
    with pytest.raises(ValueError, match="no α_ti"):
        imp.explain(none, task, "abc")


# --------------------------------------------------------------------------- comparing maps
def test_rank_correlation_known_values() -> None:
    assert imp.rank_correlation([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert imp.rank_correlation([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert imp.rank_correlation([1, 1, 1], [1, 2, 3]) == 0.0
    # ties take their average rank: ranks (1.5, 1.5, 3) against (1, 2, 3) → Pearson by hand
    rx, ry = np.array([1.5, 1.5, 3]) - 2, np.array([1, 2, 3]) - 2
    by_hand = (rx * ry).sum() / np.sqrt((rx**2).sum() * (ry**2).sum())
    assert imp.rank_correlation([5, 5, 9], [0.1, 0.2, 0.3]) == pytest.approx(by_hand)
    with pytest.raises(ValueError, match="same length T_x ≥ 2"):
        imp.rank_correlation([1, 2], [1, 2, 3])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=2, max_size=9, unique=True))
def test_rank_correlation_ignores_monotone_rescaling(v: list[int]) -> None:
    x = np.array(v, dtype=float)
    assert imp.rank_correlation(x, np.exp(x / 10) + x**3) == pytest.approx(1.0)
    assert imp.rank_correlation(x, -3 * x + 1) == pytest.approx(-1.0)


def test_agreement_on_hand_made_maps() -> None:
    a = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
    b = np.array([[0.6, 0.3, 0.1], [0.9, 0.05, 0.05], [-0.1, 0.0, -2.0]])  # |b| is compared
    ag = imp.agreement(a, b)
    assert ag.n_steps == 3
    assert ag.top1 == pytest.approx(2 / 3)  # rows 1 and 3 agree (row 3: |−2.0| is the top)
    with pytest.raises(ValueError, match="same shape"):
        imp.agreement(a, b[:2])


def test_normalise_rows() -> None:
    out = imp.normalise_rows([[1.0, -3.0], [0.0, 0.0]])
    np.testing.assert_allclose(out, [[0.25, 0.75], [0.0, 0.0]])


def _explanation(alpha, loo) -> imp.Explanation:
    alpha, loo = np.asarray(alpha, float), np.asarray(loo, float)
    return imp.Explanation(["x", "y", "<eos>"], ["o"] * len(alpha), alpha, loo, loo)


def test_agreement_table_pools_steps_and_most_disagreeing_finds_the_planted_step() -> None:
    same = _explanation([[0.8, 0.1, 0.1]], [[2.0, 0.1, 0.0]])
    planted = _explanation(
        [[0.1, 0.8, 0.1], [0.05, 0.9, 0.05]],  # looks at position 2 in both steps
        [[0.0, 1.0, 0.1], [3.0, 0.1, 0.1]],  # but step 2 depends on position 1
    )
    table = imp.agreement_table([same, planted])
    assert table[("alpha", "loo")].n_steps == 3
    assert table[("alpha", "loo")].top1 == pytest.approx(2 / 3)
    assert table[("loo", "grad_input")].top1 == 1.0
    assert imp.most_disagreeing([same, planted]) == (1, 1)
    with pytest.raises(ValueError, match="same top position"):
        imp.most_disagreeing([same])
    with pytest.raises(ValueError, match="at least one"):
        imp.agreement_table([])


# --------------------------------------------------------------------------- interventions
def _batch(task):
    srcs = [("a", "b", "c"), ("d", "e", "f", "g", "h", "i")]
    rows = [task.src_vocab.encode(s) for s in srcs]
    src = torch.full((2, max(map(len, rows))), PAD_ID)
    for b, r in enumerate(rows):
        src[b, : len(r)] = torch.tensor(r)
    return src, [len(r) for r in rows]


def test_uniform_intervention_spreads_weight_over_real_positions(task, model) -> None:
    src, lengths = _batch(task)
    _, alpha = model.greedy(src, max_len=4, edit=imp.attention_intervention("uniform"))
    for b, L in enumerate(lengths):
        np.testing.assert_allclose(alpha[b, 0, :L].numpy(), 1.0 / L, atol=1e-6)
        assert torch.all(alpha[b, :, L:] == 0)


def test_permute_intervention_moves_the_first_step_weights(task, model) -> None:
    src, lengths = _batch(task)
    # step 1 scores with s_0, which the intervention cannot have changed yet
    _, before = model.greedy(src, max_len=1)
    _, after = model.greedy(src, max_len=1, edit=imp.attention_intervention("permute", seed=5))
    moved = False
    for b, L in enumerate(lengths):
        a, p = before[b, 0, :L].numpy(), after[b, 0, :L].numpy()
        np.testing.assert_allclose(np.sort(a), np.sort(p), atol=1e-6)
        assert torch.all(after[b, 0, L:] == 0)
        moved |= not np.allclose(a, p)
    assert moved


def test_an_intervention_leaves_the_model_itself_untouched(task, model) -> None:
    src, _ = _batch(task)
    tokens, alpha = model.greedy(src, max_len=5)
    modules = {name: dict(vars(m)) for name, m in model.named_modules()}
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    for mode in ("uniform", "permute"):
        model.greedy(src, max_len=5, edit=imp.attention_intervention(mode))
        model(src, src, edit=imp.attention_intervention(mode))
    # no attribute or method was swapped on any submodule, no weight changed
    assert {name: dict(vars(m)) for name, m in model.named_modules()} == modules
    assert all(torch.equal(v, weights[k]) for k, v in model.state_dict().items())
    tokens2, alpha2 = model.greedy(src, max_len=5)
    assert torch.equal(tokens, tokens2)
    assert torch.equal(alpha, alpha2)


def test_intervention_errors(task, model) -> None:
    with pytest.raises(ValueError, match="'uniform' or 'permute'"):
        imp.attention_intervention("zero")  # type: ignore[arg-type]
    none = make_seq2seq(task.src_vocab, task.tgt_vocab, decoder="none", seed=0, **TINY)
    src, _ = _batch(task)
    with pytest.raises(ValueError, match="no attention"):
        none.greedy(src, edit=imp.attention_intervention("uniform"))
    with pytest.raises(ValueError, match="no attention"):
        imp.intervention_effect(none, task, "uniform", n=3)
    with pytest.raises(ValueError, match="n must be"):
        imp.intervention_effect(model, task, "uniform", n=0)


def test_permutations_repeat_with_the_seed_and_differ_without_it() -> None:
    e = torch.arange(24.0).reshape(3, 8)
    mask = torch.ones(3, 8, dtype=torch.bool)
    mask[1, 5:] = False
    q = torch.zeros(3, 4)
    a = imp.attention_intervention("permute", seed=1)(e, query=q, mask=mask)
    b = imp.attention_intervention("permute", seed=1)(e, query=q, mask=mask)
    c = imp.attention_intervention("permute", seed=2)(e, query=q, mask=mask)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    assert torch.equal(a[1, 5:], e[1, 5:])  # pads stay where they were
    assert sorted(a[1, :5].tolist()) == e[1, :5].tolist()  # a permutation of the real part


def test_uniform_intervention_changes_nothing_when_attention_is_already_uniform(
    task, model
) -> None:
    m = copy.deepcopy(model)
    with torch.no_grad():
        m.attention.v_a.weight.zero_()  # every e_ti = 0: α is uniform already
    res = imp.intervention_effect(m, task, "uniform", n=12)
    assert res.n == 12
    assert res.tvd == pytest.approx(0.0, abs=1e-6)
    assert res.flipped == 0.0
    assert res.exact_after == res.exact_before


def test_intervention_effect_reports_a_change_and_matches_evaluate(task, model) -> None:
    res = imp.intervention_effect(model, task, "permute", seed=0)
    assert res.n == len(task.test)
    assert res.exact_before == evaluate(model, task, "test").exact_match
    assert 0.0 < res.tvd <= 1.0
    assert 0.0 <= res.flipped <= 1.0
    again = imp.intervention_effect(model, task, "permute", seed=0)
    assert again == res  # same seed, same permutations


# --------------------------------------------------------------------------- plots used by Part II
# (attnlib/plots.by_length and heatmap_entropy were added for chapters 07 and 08)
def test_by_length_plots_one_line_per_model_at_bucket_centres() -> None:
    import matplotlib.pyplot as plt

    from attnlib import plots
    from attnlib.train import Bucket

    a = [Bucket(5, 9, 10, 0.9, 0.8), Bucket(10, 14, 10, 0.7, 0.5)]
    b = [Bucket(5, 9, 10, 0.5, 0.4), Bucket(10, 14, 10, 0.2, 0.1)]
    lines = plots.by_length({"attention": a, "baseline": b}, metric="exact_match")
    ax = lines[0].axes
    np.testing.assert_allclose(lines[0].get_xdata(), [7, 12])
    np.testing.assert_allclose(lines[1].get_ydata(), [0.4, 0.1])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["5–9", "10–14"]
    assert ax.get_ylabel() == "exact match"
    with pytest.raises(ValueError, match="no buckets"):
        plots.by_length({"empty": []})
    with pytest.raises(ValueError, match="no attribute 'bleu'"):
        plots.by_length({"a": a}, metric="bleu")
    plt.close("all")


def test_heatmap_entropy_bars_are_the_step_entropies() -> None:
    import matplotlib.pyplot as plt

    from attnlib import plots

    alpha = np.array([[1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    image, bars = plots.heatmap_entropy(alpha, ["a", "b", "<eos>"], ["x", "<eos>"])
    widths = [p.get_width() for p in bars.patches]
    np.testing.assert_allclose(widths, [0.0, np.log(3)], atol=1e-12)
    np.testing.assert_array_equal(image.get_array(), alpha)
    plt.close("all")
