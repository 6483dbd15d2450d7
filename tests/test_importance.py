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
from conftest import TINY

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
# (attnlib/plots.by_length and heatmap_entropy were added for the chapters "The fixed-length
# bottleneck" and "Reading alignment heatmaps")
def test_by_length_plots_one_line_per_model_at_bucket_centres() -> None:
    import matplotlib.pyplot as plt

    from attnlib import plots
    from attnlib.trained import Bucket

    def bucket(lo: int, hi: int, token: float, exact: float) -> Bucket:
        return Bucket(lo, hi, 10, {"token_accuracy": token, "exact_match": exact})

    a = [bucket(5, 9, 0.9, 0.8), bucket(10, 14, 0.7, 0.5)]
    b = [bucket(5, 9, 0.5, 0.4), bucket(10, 14, 0.2, 0.1)]
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


# --------------------------------------------------------------------------- special tokens
def test_content_drops_the_eos_column_and_the_eos_step_and_keeps_the_values() -> None:
    rng = np.random.default_rng(0)
    maps = [rng.random((3, 4)) for _ in range(3)]
    ex = imp.Explanation(["a", "b", "c", "<eos>"], ["c", "b", "<eos>"], *maps)
    c = ex.content()
    assert c.src == ["a", "b", "c"]
    assert c.out == ["c", "b"]
    for name, m in zip(imp.MEASURES, maps, strict=True):
        np.testing.assert_array_equal(c.measure(name), m[:2, :3])
    with pytest.raises(ValueError, match="no content token"):
        imp.Explanation(["<eos>"], ["<eos>"], *(np.ones((1, 1)),) * 3).content()


def test_special_top_share_counts_steps_whose_top_is_eos() -> None:
    a = _explanation([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]], [[0.0, 0.1, 2.0], [0.0, 0.0, -3.0]])
    assert imp.special_top_share([a], "alpha") == pytest.approx(0.5)
    assert imp.special_top_share([a], "loo") == 1.0  # magnitudes: |−3.0| is the top
    with pytest.raises(ValueError, match="at least one"):
        imp.special_top_share([])


def test_blanking_eos_leaves_every_forward_state_of_a_word_unchanged(task, model) -> None:
    srcs = ["abcde", "fgh", "ijklmno"]
    eos = imp.blanking_effect(model, task, srcs, "eos")
    mid = imp.blanking_effect(model, task, srcs, "middle")
    assert eos.n == mid.n == 3
    assert eos.h_change_forward == 0.0  # →h_i, i < T_x, is computed before <eos> is read
    assert eos.h_change_backward > 0.0  # ←h_i is computed after it
    assert mid.h_change_forward > 0.0  # the words after the middle one read the blank
    assert isinstance(eos.extra_tokens, float)
    assert not model.encoder.embedding._forward_hooks  # the blank is undone


def test_blanking_effect_by_hand(task, model) -> None:
    """One source: the same numbers from the embedding table with the <eos> row zeroed."""
    src = torch.tensor([task.src_vocab.encode("acegi")])
    res = imp.blanking_effect(model, task, ["acegi"], "eos")
    blanked = copy.deepcopy(model)
    with torch.no_grad():
        blanked.encoder.embedding.weight[src[0, -1]] = 0.0  # <eos> occurs only at the end
        h, _, _ = model.encode(src)
        h2, _, _ = blanked.encode(src)
        d = (h2 - h)[0, :-1].norm(dim=-1) / h[0, :-1].norm(dim=-1)
        n0 = int((model.greedy(src)[0] != PAD_ID).sum())
        n1 = int((blanked.greedy(src)[0] != PAD_ID).sum())
    assert res.h_change == pytest.approx(float(d.mean()), rel=1e-5)
    assert res.extra_tokens == n1 - n0


def test_blanking_effect_errors(task, model) -> None:
    emb = make_seq2seq(task.src_vocab, task.tgt_vocab, encoder="embedding", seed=0, **TINY)
    with pytest.raises(ValueError, match="BiGRUEncoder"):
        imp.blanking_effect(emb, task, ["abc"])
    with pytest.raises(ValueError, match="'eos' or 'middle'"):
        imp.blanking_effect(model, task, ["abc"], "first")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty list"):
        imp.blanking_effect(model, task, "abc")


# --------------------------------------------------------------------------- adversarial weights
def test_fixed_scores_set_alpha_to_their_softmax_and_pads_stay_zero(task, model) -> None:
    src, lengths = _batch(task)
    z = torch.randn(src.shape, generator=torch.Generator().manual_seed(0))
    _, alpha = model.greedy(src, max_len=3, edit=imp.FixedScores(z))
    for b, L in enumerate(lengths):
        expected = torch.softmax(z[b, :L], dim=-1)
        for t in range(alpha.shape[1]):
            np.testing.assert_allclose(alpha[b, t, :L].numpy(), expected.numpy(), rtol=1e-5)
        assert torch.all(alpha[b, :, L:] == 0)
    with pytest.raises(ValueError, match="shape"):
        model.greedy(src, max_len=1, edit=imp.FixedScores(z[:, :2]))


def test_jensen_shannon_known_values() -> None:
    p = torch.tensor([0.5, 0.5, 0.0])
    assert float(imp.jensen_shannon(p, p)) == pytest.approx(0.0, abs=1e-7)
    assert float(
        imp.jensen_shannon(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0]))
    ) == pytest.approx(1.0)
    # a point mass against half of it moved elsewhere: ½ log2(4/3) + ¼ log2(2/3) + ¼ log2 2
    half = float(imp.jensen_shannon(torch.tensor([1.0, 0.0]), torch.tensor([0.5, 0.5])))
    by_hand = 0.5 * np.log2(4 / 3) + 0.25 * np.log2(2 / 3) + 0.25
    assert half == pytest.approx(by_hand, rel=1e-6)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=2, max_size=8), st.integers(0, 1000))
def test_jensen_shannon_is_symmetric_and_bounded(scores: list[float], seed: int) -> None:
    p = torch.softmax(torch.tensor(scores, dtype=torch.float64), dim=-1)
    q = torch.softmax(torch.randn(len(scores), dtype=torch.float64,
                                  generator=torch.Generator().manual_seed(seed)), dim=-1)  # fmt: skip
    d = float(imp.jensen_shannon(p, q))
    assert d == pytest.approx(float(imp.jensen_shannon(q, p)), abs=1e-12)
    assert -1e-12 <= d <= 1.0 + 1e-12


class _AtStep:
    """A ScoreEdit that replaces the scores of one decoder step (counting calls) by given ones."""

    def __init__(self, t: int, scores: torch.Tensor) -> None:
        self.t, self.scores, self.calls = t, scores, 0

    def __call__(self, e, *, query, mask):
        self.calls += 1
        return self.scores if self.calls - 1 == self.t else e


def test_adversarial_weights_leave_the_output_within_the_tolerance(task, model) -> None:
    """Checked by another route: a full teacher-forced pass with α' put in at step t only."""
    sources = ["abcdb"]
    res = imp.adversarial_attention(model, task, sources, eps=0.02, iters=30, restarts=2)
    trs = [imp.explain(model, task, s) for s in sources]
    n_content = sum(tok != "<eos>" for ex in trs for tok in ex.out)
    assert len(res.jsd) == n_content
    assert np.all(res.tvd <= res.eps)
    assert res.median_jsd() > 0.0  # the search found something other than α itself
    assert res.jsd.max() <= 1.0
    for r in range(len(res.jsd)):
        k, t = int(res.example[r]), int(res.step[r])
        ex = trs[k]
        T_x = len(ex.src)
        src = torch.tensor([task.src_vocab.encode(ex.src[:-1])])
        out = torch.tensor([task.tgt_vocab.encode(ex.out, eos=False)])
        tgt_in = torch.cat([torch.tensor([[BOS_ID]]), out[:, :-1]], dim=1)
        np.testing.assert_allclose(res.alpha[r, :T_x], ex.alpha[t], atol=1e-5)
        a_adv = torch.tensor(res.alpha_adv[r, :T_x], dtype=torch.float32).clamp_min(1e-30)
        with torch.no_grad():
            p = torch.softmax(model(src, tgt_in)[0][0, t], dim=-1)
            q = torch.softmax(model(src, tgt_in, edit=_AtStep(t, a_adv.log()[None]))[0][0, t], -1)
        assert float(0.5 * (p - q).abs().sum()) <= res.eps + 1e-4
        d = imp.jensen_shannon(torch.tensor(res.alpha[r]), torch.tensor(res.alpha_adv[r]))
        assert float(d) == pytest.approx(res.jsd[r], abs=1e-4)
    np.testing.assert_allclose(res.moved(), 0.5 * np.abs(res.alpha - res.alpha_adv).sum(1))


def test_adversarial_search_repeats_with_its_seed(task, model) -> None:
    a = imp.adversarial_attention(model, task, ["abca"], iters=10, restarts=2, seed=3)
    b = imp.adversarial_attention(model, task, ["abca"], iters=10, restarts=2, seed=3)
    np.testing.assert_array_equal(a.alpha_adv, b.alpha_adv)
    assert a.repeated().dtype == bool
    kept, kept_adv = a.token_weight()
    assert kept.shape == kept_adv.shape == a.jsd.shape
    assert np.all((kept >= 0) & (kept <= 1 + 1e-6))


def test_token_weight_and_repeated_on_a_hand_made_result() -> None:
    res = imp.Adversarial(
        example=np.array([0, 0]),
        step=np.array([0, 1]),
        token=["b", "a"],
        src=[["a", "b", "a", "<eos>"]],
        alpha=np.array([[0.1, 0.7, 0.1, 0.1], [0.2, 0.2, 0.5, 0.1]]),
        alpha_adv=np.array([[0.0, 1.0, 0.0, 0.0], [0.9, 0.0, 0.0, 0.1]]),
        jsd=np.array([0.2, 0.5]),
        tvd=np.array([0.0, 0.0]),
        eps=0.01,
        iters=1,
        restarts=1,
    )
    kept, kept_adv = res.token_weight()
    np.testing.assert_allclose(kept, [0.7, 0.7])
    np.testing.assert_allclose(kept_adv, [1.0, 0.9])
    # step 2 writes "a"; α is largest on the second "a", α' puts 0.9 on the first one
    np.testing.assert_allclose(res.copy_weight(), [0.0, 0.9])
    np.testing.assert_array_equal(res.repeated(), [False, True])
    np.testing.assert_allclose(res.moved(), [0.3, 0.7])
    assert res.median_jsd() == pytest.approx(0.35)


def test_adversarial_errors(task, model) -> None:
    none = make_seq2seq(task.src_vocab, task.tgt_vocab, decoder="none", seed=0, **TINY)
    with pytest.raises(ValueError, match="no attention"):
        imp.adversarial_attention(none, task, ["abc"])
    with pytest.raises(ValueError, match="iters"):
        imp.adversarial_attention(model, task, ["abc"], iters=0)
    with pytest.raises(ValueError, match="eps"):
        imp.adversarial_attention(model, task, ["abc"], eps=0.0)


# --------------------------------------------------------------------------- s_0 or c_t
def test_swap_s0_matches_a_by_hand_first_step(task, model) -> None:
    res = imp.swap_s0(model, task, n=20, seed=4)
    pairs = task.test[:20]
    perm = torch.randperm(20, generator=torch.Generator().manual_seed(4))
    y = torch.tensor([task.tgt_vocab.encode(t)[0] for _, t in pairs])
    h_from, s0_from, differ = 0, 0, 0
    with torch.no_grad():
        for b in range(20):
            own = torch.tensor([task.src_vocab.encode(pairs[b][0])])
            other = torch.tensor([task.src_vocab.encode(pairs[int(perm[b])][0])])
            _, final, _ = model.encode(own)
            h, final_other, mask = model.encode(other)
            mem = model.decoder.memory(h, final_other, mask)
            logits, _, _ = model.decoder.step(
                torch.tensor([BOS_ID]), model.decoder.init_state(final), mem
            )
            logits[0, [PAD_ID, BOS_ID]] = float("-inf")
            first = int(logits.argmax())
            if int(y[b]) != int(y[perm[b]]):
                differ += 1
                h_from += first == int(y[perm[b]])
                s0_from += first == int(y[b])
    assert res.n == differ
    assert res.follows_h == pytest.approx(h_from / differ)
    assert res.follows_s0 == pytest.approx(s0_from / differ)


def test_swap_s0_errors(task) -> None:
    none = make_seq2seq(task.src_vocab, task.tgt_vocab, decoder="none", seed=0, **TINY)
    with pytest.raises(ValueError, match="attention"):
        imp.swap_s0(none, task, n=5)
