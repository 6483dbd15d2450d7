"""attnlib.transformer.qkv: scaled dot-product attention and chapters/queries_keys_values' experiments."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlib as al
from attnlib.transformer import qkv


def _loop_attention(Q, K, V, mask=None, divisor=1.0):
    """Row by row, with math only: the reference the vectorised version must match."""
    out_c, out_a = [], []
    for t, q in enumerate(Q):
        keep = [True] * len(K) if mask is None else list(mask[t])
        e = [math.fsum(a * b for a, b in zip(q, k, strict=True)) / divisor for k in K]
        top = max(x for x, m in zip(e, keep, strict=True) if m)
        z = [math.exp(x - top) if m else 0.0 for x, m in zip(e, keep, strict=True)]
        total = math.fsum(z)
        a = [x / total for x in z]
        out_a.append(a)
        out_c.append([math.fsum(a[i] * V[i][j] for i in range(len(K))) for j in range(len(V[0]))])
    return np.array(out_c), np.array(out_a)


def _draw(seed, T_q=3, T_k=5, d_k=4, d_v=6):
    r = np.random.default_rng(seed)
    return r.normal(size=(T_q, d_k)), r.normal(size=(T_k, d_k)), r.normal(size=(T_k, d_v))


# --------------------------------------------------------------------------- the function
def test_matches_a_loop_with_the_square_root_of_d_k():
    Q, K, V = _draw(0)
    got = qkv.scaled_dot_product_attention(Q, K, V)
    want_c, want_a = _loop_attention(Q.tolist(), K.tolist(), V.tolist(), divisor=2.0)  # √4
    np.testing.assert_allclose(got.weights, want_a, rtol=1e-12)
    np.testing.assert_allclose(got.context, want_c, rtol=1e-12, atol=1e-14)
    assert got.context.shape == (3, 6)
    assert got.weights.shape == (3, 5)


def test_scale_false_and_K_equal_V_is_cores_dot_score_attention():
    Q, K, _ = _draw(1, d_k=5, d_v=5)
    got = qkv.scaled_dot_product_attention(Q, K, K, scale=False)
    alpha = al.softmax(al.dot_scores(Q, K[None]))  # each query against the same keys
    np.testing.assert_allclose(got.weights, alpha, rtol=1e-12)
    np.testing.assert_allclose(got.context, al.context(alpha, K[None]), rtol=1e-12, atol=1e-14)


def test_a_number_divides_the_scores():
    Q, K, V = _draw(2)
    a = qkv.scaled_dot_product_attention(Q, K, V, scale=3.0).weights
    b = qkv.scaled_dot_product_attention(Q / 3.0, K, V, scale=False).weights
    np.testing.assert_allclose(a, b, rtol=1e-12)


def test_mask_gives_exact_zeros_and_matches_the_loop():
    Q, K, V = _draw(3)
    mask = np.array([[1, 1, 0, 1, 0], [0, 0, 0, 0, 1], [1, 1, 1, 1, 1]], dtype=bool)
    got = qkv.scaled_dot_product_attention(Q, K, V, mask)
    assert np.all(got.weights[~mask] == 0.0)
    assert got.weights[1, 4] == 1.0
    np.testing.assert_allclose(got.context[1], V[4], rtol=1e-12)
    want_c, want_a = _loop_attention(Q.tolist(), K.tolist(), V.tolist(), mask.tolist(), divisor=2.0)
    np.testing.assert_allclose(got.weights, want_a, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got.context, want_c, rtol=1e-12, atol=1e-14)


def test_a_padding_mask_of_shape_T_k_applies_to_every_query():
    Q, K, V = _draw(4)
    pad = np.array([True, True, True, False, False])
    got = qkv.scaled_dot_product_attention(Q, K, V, pad)
    alone = qkv.scaled_dot_product_attention(Q, K[:3], V[:3])
    np.testing.assert_allclose(got.weights[:, :3], alone.weights, rtol=1e-12)
    np.testing.assert_allclose(got.context, alone.context, rtol=1e-12)


def test_a_batch_axis_is_each_item_alone():
    r = np.random.default_rng(5)
    Q, K, V = r.normal(size=(2, 3, 4)), r.normal(size=(2, 5, 4)), r.normal(size=(2, 5, 2))
    got = qkv.scaled_dot_product_attention(Q, K, V)
    for b in range(2):
        one = qkv.scaled_dot_product_attention(Q[b], K[b], V[b])
        np.testing.assert_allclose(got.context[b], one.context, rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 4), st.integers(1, 7), st.integers(1, 6))
def test_reordering_keys_and_values_together_changes_nothing(seed, T_q, T_k, d):
    Q, K, V = _draw(seed, T_q=T_q, T_k=T_k, d_k=d, d_v=d + 1)
    order = np.random.default_rng(seed + 1).permutation(T_k)
    a = qkv.scaled_dot_product_attention(Q, K, V)
    b = qkv.scaled_dot_product_attention(Q, K[order], V[order])
    np.testing.assert_allclose(b.context, a.context, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.weights, a.weights[:, order], rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(a.weights.sum(axis=-1), 1.0, rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.floats(-50, 50))
def test_adding_a_constant_to_all_of_a_querys_scores_changes_nothing(seed, shift):
    # moving every key by shift·u with q·u = 1 adds the same number to every score
    Q, K, V = _draw(seed, T_q=1, d_k=4)
    u = Q[0] / (Q[0] @ Q[0])
    a = qkv.scaled_dot_product_attention(Q, K, V, scale=False)
    b = qkv.scaled_dot_product_attention(Q, K + shift * u, V, scale=False)
    np.testing.assert_allclose(b.weights, a.weights, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((np.ones((2, 3)), np.ones((4, 5)), np.ones((4, 2))), "d_k=3 components but the keys"),
        ((np.ones((2, 3)), np.ones((4, 3)), np.ones((5, 2))), "T_k=4 keys but 5 values"),
        ((np.ones(3), np.ones((4, 3)), np.ones((4, 2))), "Q must have shape (T_q, d_k)"),
        ((np.ones((2, 3)), np.ones((0, 3)), np.ones((0, 2))), "T_k = 0"),
        ((np.ones((2, 2, 3)), np.ones((3, 4, 3)), np.ones((4, 2))), "batch dimensions"),
    ],
)
def test_shape_errors_name_the_symbols(args, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        qkv.scaled_dot_product_attention(*args)


def test_a_fully_masked_row_is_an_error_not_nan():
    Q, K, V = _draw(6)
    mask = np.ones((3, 5), dtype=bool)
    mask[2] = False
    with pytest.raises(ValueError, match="keeps no key for 1 query row"):
        qkv.scaled_dot_product_attention(Q, K, V, mask)


def test_mask_errors():
    Q, K, V = _draw(7)
    with pytest.raises(TypeError, match="boolean"):
        qkv.scaled_dot_product_attention(Q, K, V, np.ones((3, 5)))
    with pytest.raises(ValueError, match="does not broadcast"):
        qkv.scaled_dot_product_attention(Q, K, V, np.ones((3, 4), dtype=bool))
    with pytest.raises(ValueError, match="scale must be"):
        qkv.scaled_dot_product_attention(Q, K, V, scale=-1.0)
    with pytest.raises(ValueError, match="NaN or inf"):
        qkv.scaled_dot_product_attention(Q, K * np.nan, V)


# --------------------------------------------------------------------------- Bahdanau re-read
def test_bahdanau_as_qkv_rebuilds_cores_additive_step():
    r = np.random.default_rng(8)
    s_prev, h = r.normal(size=3), r.normal(size=(6, 5))
    W_a, U_a, v_a = r.normal(size=(4, 3)), r.normal(size=(4, 5)), r.normal(size=4)
    parts = qkv.bahdanau_as_qkv(s_prev, h, W_a, U_a)
    assert parts.keys.shape == (6, 4)
    assert parts.values is not None
    np.testing.assert_array_equal(parts.values, h)
    e = qkv.additive_qkv_scores(parts.query, parts.keys, v_a)
    step = al.attend(s_prev, h, W_a, U_a, v_a)
    np.testing.assert_allclose(e, step.e, rtol=1e-12)
    np.testing.assert_allclose(al.softmax(e) @ parts.values, step.c, rtol=1e-12)
    with pytest.raises(ValueError, match="U_a"):
        qkv.bahdanau_as_qkv(s_prev, h, W_a, r.normal(size=(4, 4)))


# --------------------------------------------------------------------------- experiments
def test_dot_variance_grows_like_d_and_scaling_keeps_it_near_one():
    v = qkv.dot_variance(dims=(4, 64, 256), samples=4000)
    np.testing.assert_allclose(v.var_raw / v.d, 1.0, atol=0.1)
    np.testing.assert_allclose(v.var_scaled, 1.0, atol=0.1)


def test_softmax_jacobian_norm_by_hand():
    # α = (1/2, 1/2): J = [[1/4, -1/4], [-1/4, 1/4]], ‖J‖_F = 1/2; a one-hot α has J = 0
    assert qkv.softmax_jacobian_norm([0.5, 0.5]) == pytest.approx(0.5)
    assert qkv.softmax_jacobian_norm([0.0, 1.0, 0.0]) == 0.0


def test_raw_scores_saturate_and_scaled_ones_do_not():
    s = qkv.saturation(dims=(4, 512), draws=200)
    assert s.max_weight_raw[1] > 0.9 > s.max_weight_scaled[1]
    assert s.grad_raw[1] < 0.5 * s.grad_raw[0]
    assert abs(s.grad_scaled[1] - s.grad_scaled[0]) < 0.05


def test_the_additive_bound_holds_and_is_approached():
    b = qkv.additive_bound(d_a_values=(4, 32), input_scales=(1.0, 100.0), repeats=10)
    assert np.all(b.max_abs_e <= b.bound * (1 + 1e-12))
    assert b.ratio[b.input_scale == 100.0].max() > 0.9


def test_the_lookup_needs_separate_keys_and_values():
    r = qkv.lookup(queries=200)
    assert r.separate[0] > 0.95
    assert r.shared_values[0] < 0.3
    assert r.shared_keys[0] < 0.3
    assert r.weight_on_target > 0.8
    assert r.projected == pytest.approx(r.separate, abs=1e-12)  # the same scores, the same reads


def test_one_vector_that_holds_key_and_value_serves_as_both_when_the_query_picks_the_key():
    """K = V = [k_i; v_i] with no projection: the query [q; 0] matches the k_i half only (its
    weights are those of q against the keys k_i, at the scale of the longer query), and the v_i
    half of what comes back is the value."""
    r = qkv.lookup(queries=200)
    assert r.whole[0] > 0.95
    assert r.whole[1] > 0.9  # cosine to the target value
    rng = np.random.default_rng(0)
    k, v = rng.normal(size=(8, 16)), rng.normal(size=(8, 16))
    h = np.concatenate([k, v], axis=1)
    padded = np.concatenate([k[3], np.zeros(16)])[None]
    picked = qkv.scaled_dot_product_attention(padded, h, h).weights[0]
    np.testing.assert_allclose(
        picked,
        qkv.scaled_dot_product_attention(k[3][None], k, v, scale=np.sqrt(32)).weights[0],
        atol=1e-12,
    )
    assert picked.argmax() == 3
