"""The claims the question-bank chapters (Part III) rely on, checked against attnlib.

Each test names the chapter item whose evidence cell depends on it, so that a
change to attnlib that breaks a claim fails here, not only in a notebook.
Chapters: "True or false" (TF, chapters/true_or_false), "Spot the error" (SE,
chapters/spot_the_error), "Why?" (WHY, chapters/why), "Edge cases" (EC, chapters/edge_cases).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attnlib as al
from attnlib import alignment
from attnlib import experiments as ex
from attnlib.models import BiGRUEncoder, EmbeddingEncoder, make_seq2seq
from attnlib.pretrained import load
from attnlib.tasks import BOS_ID, SVO_ADVERBS, SVO_VERBS
from attnlib.train import evaluate, translate
from conftest import finite_floats, rand_params
from conftest import score_vectors as _score_vectors

#: Part III's scores: within ±30, two to forty of them.
finite = finite_floats(30)
score_vectors = functools.partial(_score_vectors, min_len=2, max_len=40, bound=30)


# ============================================================================ 10 true or false
def test_tf1_bare_embeddings_are_context_free_a_recurrent_encoder_is_not():
    src = torch.tensor([[5, 6, 7, 5, 8, 2]])  # token 5 at positions 1 and 4, then <eos>
    lengths = torch.tensor([6])
    torch.manual_seed(0)
    with torch.no_grad():
        h_emb, _ = EmbeddingEncoder(10, 6)(src, lengths)
        h_rnn, _ = BiGRUEncoder(10, 6, 4)(src, lengths)
    assert torch.equal(h_emb[0, 0], h_emb[0, 3])
    assert float((h_rnn[0, 0] - h_rnn[0, 3]).abs().max()) > 1e-4


@settings(max_examples=60, deadline=None)
@given(score_vectors())
def test_tf2_weights_sum_to_one_within_a_few_ulps(e):
    assert abs(float(al.softmax(e).sum()) - 1.0) <= 8 * np.finfo(np.float64).eps
    assert (
        abs(float(al.softmax(e.astype(np.float32)).sum(dtype=np.float64)) - 1.0)
        <= 8 * np.finfo(np.float32).eps
    )


def test_tf3_weight_moved_between_equal_states_leaves_c_t_unchanged():
    rng = np.random.default_rng(0)
    h = rng.normal(size=(5, 3))
    h[3] = h[1]
    alpha = al.softmax(np.array([0.0, 2.5, 0.3, -1.0, 0.1]))
    moved = alpha.copy()
    moved[[1, 3]] = alpha[[3, 1]]
    assert not np.allclose(alpha, moved)
    np.testing.assert_allclose(al.context(moved, h), al.context(alpha, h), atol=1e-15)


def test_tf4_near_equal_scores_give_near_uniform_weights():
    e = np.array([0.10, 0.12, 0.09, 0.11])
    alpha = al.softmax(e)
    assert np.all(np.abs(alpha - 0.25) < 0.01)
    assert float(al.entropy(alpha)) > 0.999 * math.log(4)


def test_tf5_the_trained_decoder_scores_with_s_prev_not_s_t():
    model = make_seq2seq(12, 12, decoder="bahdanau", emb=8, hidden=8, d_s=8, d_a=8, seed=0)
    src = torch.tensor([[4, 5, 6, 2]])
    queries = []

    def spy(e, *, query, mask):  # a ScoreEdit that records the query and changes nothing
        queries.append(query.clone())
        return e

    with torch.no_grad():
        h, final, mask = model.encode(src)
        s_0 = model.decoder.init_state(final)
        mem = model.decoder.memory(h, final, mask, edit=spy)
        _, s_1, _ = model.decoder.step(torch.tensor([BOS_ID]), s_0, mem)
        _, s_2, _ = model.decoder.step(torch.tensor([7]), s_1, mem)
    assert len(queries) == 2
    assert torch.equal(queries[0], s_0)
    assert torch.equal(queries[1], s_1)
    assert not torch.allclose(queries[1], s_2)


def test_tf6_each_step_gets_its_own_context():
    rng = np.random.default_rng(1)
    h = rng.normal(size=(6, 4))
    W_a, U_a, v_a = rand_params(rng, d_s=3, d_h=4)
    step = al.attend(rng.normal(size=(5, 3)), h, W_a, U_a, v_a)  # five decoder states
    assert step.c.shape == (5, 4)
    assert np.linalg.matrix_rank(step.c) > 1


def test_tf7_additive_and_multiplicative_weights_differ():
    rng = np.random.default_rng(0)
    s, h = rng.normal(size=4), rng.normal(size=(6, 4))
    a = al.softmax(al.additive_scores(s, h, *rand_params(rng, d_s=4, d_h=4)))
    m = al.softmax(al.multiplicative_scores(s, h, rng.normal(size=(4, 4))))
    assert np.max(np.abs(a - m)) > 0.05


@pytest.mark.parametrize(("T_x", "T_y"), [(1, 1), (3, 7), (40, 25)])
def test_tf8_attention_computes_T_x_times_T_y_scores(T_x, T_y):
    assert ex.all_scores(T_x, T_y, seed=0).shape == (T_y, T_x)


def test_tf8_score_count_grows_quadratically_rnn_steps_linearly():
    T = np.array([10, 20, 40, 80, 160])
    n_scores = np.array([ex.all_scores(t, t, d_a=2, d_s=2, d_h=2).size for t in T])
    n_steps = 2 * T  # T_x + T_y recurrent steps
    assert ex.fit_growth(T, n_scores).exponent == pytest.approx(2.0, abs=1e-9)
    assert ex.fit_growth(T, n_steps).exponent == pytest.approx(1.0, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12), st.integers(0, 2**31 - 1))
def test_tf9_permuting_h_with_its_scores_keeps_c_t(T_x, seed):
    rng = np.random.default_rng(seed)
    h, e = rng.normal(size=(T_x, 3)), rng.normal(scale=3.0, size=T_x)
    perm = rng.permutation(T_x)
    np.testing.assert_allclose(
        al.context(al.softmax(e[perm]), h[perm]), al.context(al.softmax(e), h), atol=1e-12
    )


def test_tf9_reordered_inputs_change_recurrent_states_but_only_permute_embeddings():
    src = torch.tensor([[3, 4, 5, 6, 2]])
    rev = torch.tensor([[6, 5, 4, 3, 2]])
    lengths = torch.tensor([5])
    torch.manual_seed(0)
    rnn, emb = BiGRUEncoder(10, 6, 4), EmbeddingEncoder(10, 6)
    with torch.no_grad():
        h, h_rev = rnn(src, lengths)[0][0], rnn(rev, lengths)[0][0]
        e, e_rev = emb(src, lengths)[0][0], emb(rev, lengths)[0][0]
    nearest = torch.cdist(h_rev, h).min(dim=1).values
    assert float(nearest[:4].min()) > 1e-3  # no new state is an old one
    assert torch.equal(e_rev[:4], e[:4].flip(0))


def test_tf9_a_bare_embedding_model_gives_the_same_output_for_reordered_inputs():
    model = make_seq2seq(12, 12, encoder="embedding", emb=8, d_s=8, d_a=8, seed=3)
    a, alpha_a = model.greedy(torch.tensor([[3, 4, 5, 6, 2]]), max_len=6)
    b, alpha_b = model.greedy(torch.tensor([[6, 5, 4, 3, 2]]), max_len=6)
    assert torch.equal(a, b)
    torch.testing.assert_close(alpha_b[..., :4], alpha_a[..., :4].flip(-1))


# ============================================================================ 11 spot the error
def test_se1_exponentials_without_denominator_drift_and_are_refused():
    rng = np.random.default_rng(0)
    h, e = rng.normal(size=(5, 4)), rng.normal(size=5)
    c0 = al.context(np.exp(e), h, check_weights=False)
    c5 = al.context(np.exp(e + 5.0), h, check_weights=False)
    np.testing.assert_allclose(c5, math.exp(5.0) * c0, rtol=1e-12)
    np.testing.assert_allclose(al.context(al.softmax(e + 5.0), h), al.context(al.softmax(e), h))
    with pytest.raises(ValueError, match="denominator"):
        al.context(np.exp(e), h)


def test_se2_summing_s_prev_returns_s_prev_and_context_refuses_it():
    rng = np.random.default_rng(0)
    s_prev = rng.normal(size=3)
    for alpha in (al.softmax(rng.normal(size=5)), al.softmax(10 * rng.normal(size=5))):
        np.testing.assert_allclose(np.sum(alpha[:, None] * s_prev, axis=0), s_prev, rtol=1e-14)
    with pytest.raises(ValueError, match=r"h must have shape \(\.\.\., T_x, d_h\)"):
        al.context(al.softmax(np.zeros(5)), s_prev)


def test_se3_unprojected_sum_fails_and_attnlib_names_the_projection():
    rng = np.random.default_rng(0)
    s_prev, h = rng.normal(size=3), rng.normal(size=(5, 4))
    with pytest.raises(ValueError, match="broadcast"):
        np.tanh(s_prev + h)
    W_a, _, v_a = rand_params(rng, d_s=3, d_h=4, d_a=6)
    with pytest.raises(ValueError, match="U_a expects d_h=3 components but h has 4"):
        al.additive_scores(s_prev, h, W_a, rng.normal(size=(6, 3)), v_a)


def test_se4_parameters_do_not_depend_on_the_sentence_weights_do():
    model = make_seq2seq(12, 12, emb=8, hidden=8, d_s=8, d_a=8, seed=0)
    names = [n for n, _ in model.named_parameters() if "attention" in n]
    assert sorted(n.rsplit(".", 2)[-2] for n in names) == ["U_a", "W_a", "v_a"]
    shapes = {n: tuple(p.shape) for n, p in model.named_parameters()}
    _, alpha_a = model.greedy(torch.tensor([[3, 4, 2]]), max_len=4)
    _, alpha_b = model.greedy(torch.tensor([[3, 4, 5, 6, 7, 2]]), max_len=4)
    assert alpha_a.shape[-1] == 3
    assert alpha_b.shape[-1] == 6
    assert shapes == {n: tuple(p.shape) for n, p in model.named_parameters()}


def test_se6_a_vector_valued_score_cannot_weight_the_positions():
    rng = np.random.default_rng(0)
    s_prev, h = rng.normal(size=3), rng.normal(size=(5, 4))
    W_a, U_a, v_a = rand_params(rng, d_s=3, d_h=4, d_a=6)
    e_bad = np.tanh(s_prev @ W_a.T + h @ U_a.T)
    assert e_bad.shape == (5, 6)
    with pytest.raises(ValueError, match="alpha has T_x=6 weights per step but h has T_x=5"):
        al.context(al.softmax(e_bad), h)
    np.testing.assert_allclose(e_bad @ v_a, al.additive_scores(s_prev, h, W_a, U_a, v_a))


# ============================================================================ 12 why
@settings(max_examples=40, deadline=None)
@given(st.integers(2, 10), st.integers(0, 2**31 - 1))
def test_why2_linear_score_weights_ignore_the_decoder_state(T_x, seed):
    rng = np.random.default_rng(seed)
    h = rng.normal(size=(T_x, 4))
    W_a, U_a, v_a = rand_params(rng)
    a = al.softmax(ex.linear_scores(rng.normal(size=3), h, W_a, U_a, v_a))
    b = al.softmax(ex.linear_scores(10 * rng.normal(size=3), h, W_a, U_a, v_a))
    np.testing.assert_allclose(a, b, atol=1e-9)


def test_why2_tanh_score_learns_the_lookup_linear_stays_near_chance():
    tanh = ex.fit_pointer_scores("tanh", T_x=6, seed=0)
    linear = ex.fit_pointer_scores("linear", T_x=6, seed=0)
    assert tanh.test_accuracy > 0.9
    assert linear.test_accuracy < 0.3  # chance is 1/6


def test_why3_hard_selection_has_zero_gradient_soft_does_not():
    rng = np.random.default_rng(0)
    h = rng.normal(size=(5, 3))
    e0 = np.array([0.3, 0.1, -0.2, 0.0, 0.2])
    for kind, nonzero in (("soft", True), ("hard", False)):
        g = ex.numeric_gradient(lambda e, k=kind: ex.selection_loss(e, h, h[3], k), e0)
        assert bool(np.linalg.norm(g) > 1e-3) == nonzero
    assert ex.train_selection(h, 3, "soft", e0=e0).loss[-1] < 0.05
    assert ex.train_selection(h, 3, "hard", e0=e0).loss[-1] > 1.0


def test_why3_hard_choice_jumps_soft_context_moves_smoothly():
    rng = np.random.default_rng(0)
    h = rng.normal(size=(5, 3))
    e1 = np.array([1.0, 1.0 - 5e-7, 0.0, 0.0, 0.0])
    e2 = e1.copy()
    e2[1] += 1e-6
    assert np.argmax(e1) != np.argmax(e2)
    soft_move = np.linalg.norm(al.context(al.softmax(e1), h) - al.context(al.softmax(e2), h))
    assert soft_move < 1e-5
    assert np.linalg.norm(h[0] - h[1]) > 0.1


def test_why6_different_weights_same_context():
    rng = np.random.default_rng(0)
    h = rng.normal(size=(8, 4))
    alpha = al.softmax(rng.normal(scale=1.5, size=8))
    alt = ex.same_context_weights(alpha, h)
    np.testing.assert_allclose(al.context(alt, h), al.context(alpha, h), atol=1e-12)
    assert np.max(np.abs(alt - alpha)) > 0.1


# ============================================================================ 13 edge cases
@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30), finite)
def test_ec1_equal_scores_give_the_plain_mean(T_x, value):
    h = np.random.default_rng(T_x).normal(size=(T_x, 3))
    alpha = al.softmax(np.full(T_x, value))
    np.testing.assert_allclose(alpha, np.full(T_x, 1.0 / T_x), rtol=1e-14)
    np.testing.assert_allclose(al.context(alpha, h), h.mean(axis=0), atol=1e-14)


def test_ec1_v_a_zero_makes_every_score_equal():
    rng = np.random.default_rng(0)
    W_a, U_a, _ = rand_params(rng)
    step = al.attend(rng.normal(size=3), rng.normal(size=(6, 4)), W_a, U_a, np.zeros(5))
    np.testing.assert_array_equal(step.e, np.zeros(6))
    np.testing.assert_allclose(step.alpha, np.full(6, 1 / 6))


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, (4,), elements=finite))
def test_ec2_one_position_gets_weight_exactly_one(s_prev):
    rng = np.random.default_rng(0)
    h = rng.normal(size=(1, 4))
    W_a, U_a, v_a = rand_params(rng, d_s=4, d_h=4)
    step = al.attend(s_prev, h, W_a, U_a, v_a)
    assert step.alpha.tolist() == [1.0]
    np.testing.assert_array_equal(step.c, h[0])


@pytest.mark.parametrize("T_x", [1, 2, 3, 10, 100])
def test_ec3_uniform_weights_reach_log_T_x_and_nothing_exceeds_it(T_x):
    assert float(al.entropy(np.full(T_x, 1.0 / T_x))) == pytest.approx(math.log(T_x), abs=1e-12)
    alpha = al.softmax(np.random.default_rng(T_x).normal(scale=2.0, size=(500, T_x)))
    assert np.all(al.entropy(alpha) <= math.log(T_x) + 1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ec4_exact_one_and_zero_appear_where_rounding_theory_says(dtype):
    info = np.finfo(dtype)
    # 1 + x rounds to 1 once x ≤ eps/2; exp(-g) rounds to 0 below half the smallest subnormal.
    assert ex.exact_gap(dtype, "one") == pytest.approx(math.log(2 / float(info.eps)), abs=1e-3)
    zero_gap = -math.log(float(info.smallest_subnormal)) + math.log(2)
    assert ex.exact_gap(dtype, "zero") == pytest.approx(zero_gap, abs=0.7)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.0, 16.0))
def test_ec4_below_the_gaps_weights_are_strictly_inside_zero_one(g):
    for dtype in (np.float32, np.float64):
        alpha = al.softmax(np.array([0.0, -g], dtype=dtype))
        assert 0.0 < alpha[1] <= alpha[0] < 1.0


def test_ec5_the_first_step_scores_against_s_0_built_from_the_encoder():
    model = make_seq2seq(12, 12, emb=8, hidden=8, d_s=8, d_a=8, seed=1)
    src = torch.tensor([[4, 5, 6, 2]])
    with torch.no_grad():
        h, final, mask = model.encode(src)
        s_0 = model.decoder.init_state(final)
        mem = model.decoder.memory(h, final, mask)
        _, _, alpha_1 = model.decoder.step(torch.tensor([BOS_ID]), s_0, mem)
        _, alpha_direct = model.decoder.attention(s_0, h, mask)
    assert torch.isfinite(s_0).all()
    torch.testing.assert_close(alpha_1, alpha_direct)
    assert float(alpha_1.sum()) == pytest.approx(1.0, abs=1e-6)


# ============================================================================ trained models
# The shipped checkpoints (attnlib/checkpoints, made by `python -m attnlib.pretrained`);
# each claim below is one a chapter states about a trained model.
@functools.cache
def trained(name: str):
    return load(name)


@functools.cache
def held_out(name: str, buckets: tuple[int, ...] | int = 5):
    model, task, _, _ = trained(name)
    return evaluate(
        model, task, "test", buckets=list(buckets) if isinstance(buckets, tuple) else buckets
    )


def test_tf1_trained_copy_needs_the_recurrent_encoder():
    assert held_out("copy").exact_match > held_out("copy_embedding").exact_match + 0.2


def test_tf6_why4_attention_keeps_long_inputs_the_baseline_does_not():
    edges = (5, 10, 15, 20, 25)
    none, attn = held_out("long_copy_none", edges), held_out("long_copy_attention", edges)
    assert attn.by_length[-1].token_accuracy > none.by_length[-1].token_accuracy + 0.2
    gap_short = attn.by_length[0].token_accuracy - none.by_length[0].token_accuracy
    gap_long = attn.by_length[-1].token_accuracy - none.by_length[-1].token_accuracy
    assert gap_long > gap_short


def test_tf7_trained_bahdanau_and_luong_maps_differ():
    (bahdanau, task, _, _), (luong, _, _, _) = trained("dates"), trained("dates_luong")
    src, tgt = task.test[0]
    a, b = translate(bahdanau, task, [src])[0], translate(luong, task, [src])[0]
    assert a.text == b.text == task.tgt_text(tgt)  # "both get the output right"
    n = min(len(a.alpha), len(b.alpha))
    assert float(np.mean(np.abs(a.alpha[:n] - b.alpha[:n]))) > 0.01


def test_tf9_reordering_the_words_changes_the_states_and_the_translation():
    model, task, _, _ = trained("svo_sov")
    src = next(s for s, _ in task.test if "in" not in s and not set(s) & set(SVO_ADVERBS))
    v = next(i for i, w in enumerate(src) if w in SVO_VERBS)
    reordered = src[v + 1 :] + src[v : v + 1] + src[:v]
    assert sorted(reordered) == sorted(src)
    a, b = translate(model, task, [src, reordered])
    assert a.text != b.text
    with torch.no_grad():
        h = model.encode(torch.tensor([task.src_vocab.encode(src)]))[0][0, :-1]
        h2 = model.encode(torch.tensor([task.src_vocab.encode(reordered)]))[0][0, :-1]
    assert float(torch.cdist(h2, h).min()) > 1e-3


def test_se5_copy_model_is_diagonal_and_right():
    model, task, _, _ = trained("copy")
    assert held_out("copy").exact_match > 0.95
    band = [
        alignment.diagonal_mass(r.alpha, width=1)
        for r in translate(model, task, [s for s, _ in task.test[:50]])
    ]
    assert float(np.mean(band)) > 0.7  # most of the weight within one position of the diagonal


def test_why5_alignment_task_is_sharp_summary_task_is_diffuse():
    ratios = {}
    for name in ("reverse", "majority"):
        model, task, _, _ = trained(name)
        rows = [
            float(al.entropy(r.alpha.astype(np.float64)).mean()) / math.log(len(r.src))
            for r in translate(model, task, [s for s, _ in task.test[:50]])
        ]
        ratios[name] = float(np.mean(rows))
    assert ratios["reverse"] < 0.7
    assert ratios["majority"] > 0.85
    assert ratios["majority"] - ratios["reverse"] > 0.25


def test_ec5_ec6_reversal_model_reads_the_mirror_position_from_step_one():
    model, task, _, _ = trained("reverse")
    hits, band = [], []
    for r in translate(model, task, [s for s, _ in task.test[:50]]):
        T = len(r.src) - 1
        mirror = T - 1 - np.arange(T)  # step t reads position T_x + 1 - t
        assert int(np.argmax(r.alpha[0])) == T - 1  # the first step, scored against s_0
        hits.append(np.mean(np.argmax(r.alpha[:T], axis=1) == mirror))
        band.append(alignment.diagonal_mass(r.alpha, width=1, anti=True))
    assert float(np.mean(hits)) > 0.85
    assert float(np.mean(band)) > 0.85


def test_ec6_svo_model_reads_the_english_verb_when_it_emits_the_verb():
    model, task, _, _ = trained("svo_sov")
    for src, _ in task.test[:20]:
        r = translate(model, task, [src])[0]
        verb = next(i for i, w in enumerate(src) if w in SVO_VERBS)
        step = r.out.index(SVO_VERBS[src[verb]])
        assert int(np.argmax(r.alpha[step])) == verb


def test_why1_context_in_both_places_learns_fastest():
    curves = {}
    for name in ("dates_ctx_state", "dates_ctx_output", "dates"):
        history = trained(name).history
        curves[name] = dict(zip(history.eval_step, history.valid_exact_match, strict=True))
    common = sorted(set.intersection(*(set(c) for c in curves.values())))
    step = max(common, key=lambda s: np.ptp([c[s] for c in curves.values()]))  # as "Why?" does
    at = {name: c[step] for name, c in curves.items()}
    assert at["dates"] > max(at["dates_ctx_state"], at["dates_ctx_output"])
    for name in ("dates_ctx_state", "dates_ctx_output", "dates"):
        assert trained(name).metrics.exact_match > 0.99


def test_stored_held_out_metrics_are_what_evaluate_computes():
    # The chapters quote the metrics stored with each checkpoint; they must be reproducible.
    for name in ("copy", "copy_embedding", "long_copy_none", "long_copy_attention"):
        stored = trained(name).metrics
        edges = tuple(b.lo for b in stored.by_length)
        live = held_out(name, edges)
        assert live.exact_match == pytest.approx(stored.exact_match, abs=1e-9)
        assert [b.token_accuracy for b in live.by_length] == pytest.approx(
            [b.token_accuracy for b in stored.by_length], abs=1e-9
        )
