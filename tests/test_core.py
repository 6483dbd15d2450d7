"""Tests for attnlib.core: the numpy reference implementation of one attention step."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlib as al
from conftest import rand_params, score_vectors


# ----------------------------------------------------------------------------- softmax
def test_softmax_small_example_by_hand():
    e = np.array([0.0, math.log(2.0), math.log(5.0)])
    # exp(e) = 1, 2, 5 and the denominator is 8.
    np.testing.assert_allclose(al.softmax(e), [1 / 8, 2 / 8, 5 / 8], rtol=1e-15)


def test_softmax_large_scores_no_overflow_no_warning():
    e = np.array([1e4, 1e4 - 1.0, -1e4])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        alpha = al.softmax(e)
    assert np.all(np.isfinite(alpha))
    np.testing.assert_allclose(alpha[:2], [1 / (1 + math.exp(-1)), 1 / (1 + math.e)])
    assert alpha[2] == 0.0  # exp(-2e4) underflows in float64; that is the honest answer


def test_softmax_axis_argument_normalises_that_axis():
    e = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(al.softmax(e, axis=0).sum(axis=0), np.ones(3))
    np.testing.assert_allclose(al.softmax(e, axis=0), al.softmax(e.T).T)


def test_softmax_keeps_float32():
    alpha = al.softmax(np.array([1.0, 2.0], dtype=np.float32))
    assert alpha.dtype == np.float32


def test_softmax_integer_input_becomes_float64():
    assert al.softmax([1, 2, 3]).dtype == np.float64


def test_mask_gives_exact_zero_and_renormalises():
    e = np.array([[1.0, 2.0, 3.0, 9.0], [0.5, 0.5, 0.5, 0.5]])
    mask = np.array([[True, True, True, False], [True, True, False, False]])
    alpha = al.softmax(e, mask=mask)
    assert alpha[0, 3] == 0.0
    assert alpha[1, 2] == 0.0
    assert alpha[1, 3] == 0.0
    np.testing.assert_allclose(alpha[0, :3], al.softmax(e[0, :3]))
    np.testing.assert_allclose(alpha[1, :2], [0.5, 0.5])


def test_mask_broadcasts_over_batch_but_needs_every_position():
    e = np.zeros((4, 3))
    alpha = al.softmax(e, mask=np.array([True, False, True]))
    np.testing.assert_allclose(alpha, np.tile([0.5, 0.0, 0.5], (4, 1)))


@given(score_vectors(min_len=2), st.data())
def test_masked_positions_do_not_influence_the_rest(e, data):
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=len(e), max_size=len(e))))
    if not mask.any():
        mask[0] = True
    moved = e.copy()
    moved[~mask] += 1000.0  # whatever the padded scores are, nothing changes
    np.testing.assert_array_equal(al.softmax(e, mask=mask), al.softmax(moved, mask=mask))


@given(score_vectors())
def test_softmax_weights_are_a_distribution(e):
    alpha = al.softmax(e)
    assert np.all(alpha >= 0)
    assert np.all(alpha <= 1)
    assert abs(alpha.sum() - 1.0) < 1e-12


@given(score_vectors(), st.floats(-1e3, 1e3))
def test_adding_a_constant_to_all_scores_changes_nothing(e, k):
    np.testing.assert_allclose(al.softmax(e + k), al.softmax(e), atol=1e-12)


@given(score_vectors(min_len=2))
def test_softmax_preserves_the_ranking(e):
    alpha = al.softmax(e)
    order = np.argsort(e, kind="stable")
    assert np.all(np.diff(alpha[order]) >= 0)


# ----------------------------------------------------------------------------- scores
def test_additive_scores_match_the_formula_written_out():
    rng = np.random.default_rng(0)
    W_a, U_a, v_a = rand_params(rng, d_h=5, d_a=2)
    s_prev = rng.normal(size=3)
    h = rng.normal(size=(4, 5))
    expected = [v_a @ np.tanh(W_a @ s_prev + U_a @ h_i) for h_i in h]
    np.testing.assert_allclose(al.additive_scores(s_prev, h, W_a, U_a, v_a), expected)


def test_additive_scores_batched_equals_one_at_a_time():
    rng = np.random.default_rng(1)
    W_a, U_a, v_a = rand_params(rng, d_h=5, d_a=2)
    s_prev = rng.normal(size=(2, 3, 3))  # two sentences, three decoder steps each
    h = rng.normal(size=(2, 1, 4, 5))
    batched = al.additive_scores(s_prev, h, W_a, U_a, v_a)
    assert batched.shape == (2, 3, 4)
    for b in range(2):
        for t in range(3):
            np.testing.assert_allclose(
                batched[b, t], al.additive_scores(s_prev[b, t], h[b, 0], W_a, U_a, v_a)
            )


def test_multiplicative_and_dot_scores_by_hand():
    s = np.array([1.0, 2.0])
    h = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    np.testing.assert_allclose(al.dot_scores(s, h), [1.0, 2.0, 3.0])
    W_a = np.array([[2.0, 0.0, 1.0], [0.0, 1.0, 0.0]])  # d_s=2, d_h=3
    h3 = np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 1.0]])
    # s^T W_a = [2, 2, 1]
    np.testing.assert_allclose(al.multiplicative_scores(s, h3, W_a), [5.0, 1.0])


def test_multiplicative_with_identity_is_dot():
    rng = np.random.default_rng(2)
    s, h = rng.normal(size=4), rng.normal(size=(6, 4))
    np.testing.assert_allclose(al.multiplicative_scores(s, h, np.eye(4)), al.dot_scores(s, h))


# ----------------------------------------------------------------------------- context, entropy
def test_context_is_the_weighted_sum():
    h = np.array([[1.0, 0.0], [0.0, 1.0], [4.0, 4.0]])
    np.testing.assert_allclose(al.context([0.5, 0.25, 0.25], h), [1.5, 1.25])


def test_context_rejects_weights_that_are_not_a_distribution():
    h = np.ones((3, 2))
    with pytest.raises(ValueError, match="denominator"):
        al.context(np.exp([1.0, 2.0, 3.0]), h)
    # ...unless the caller asks on purpose, to show the drift
    np.testing.assert_allclose(al.context([2.0, 2.0, 2.0], h, check_weights=False), [6.0, 6.0])


def test_entropy_known_values():
    assert al.entropy([1.0, 0.0, 0.0]) == 0.0
    assert al.entropy([0.5, 0.5], base=2) == pytest.approx(1.0)
    assert al.entropy(np.full(8, 1 / 8)) == pytest.approx(math.log(8))
    assert al.entropy(np.full(8, 1 / 8), base=2) == pytest.approx(3.0)
    assert al.entropy([0.25, 0.75]) == pytest.approx(
        -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    )


def test_entropy_one_per_step():
    alpha = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    np.testing.assert_allclose(al.entropy(alpha, base=2), [0.0, 1.0, 0.0])


@given(score_vectors())
def test_entropy_bounds(e):
    H = al.entropy(al.softmax(e))
    assert 0.0 <= H <= math.log(len(e)) + 1e-12


@given(st.integers(1, 64))
def test_uniform_weights_reach_the_maximum_entropy(T_x):
    assert al.entropy(np.full(T_x, 1.0 / T_x)) == pytest.approx(math.log(T_x), abs=1e-12)


# ----------------------------------------------------------------------------- attend and invariants
@given(st.integers(1, 10), st.floats(-5, 5))
def test_identical_scores_give_the_mean_of_h(T_x, value):
    h = np.random.default_rng(T_x).normal(size=(T_x, 3))
    alpha = al.softmax(np.full(T_x, value))
    np.testing.assert_allclose(alpha, np.full(T_x, 1 / T_x))
    np.testing.assert_allclose(al.context(alpha, h), h.mean(axis=0), atol=1e-12)


@given(st.integers(0, 2**32 - 1))
def test_single_position_gets_all_the_weight(seed):
    rng = np.random.default_rng(seed)
    W_a, U_a, v_a = rand_params(rng, d_h=5, d_a=2)
    h = rng.normal(size=(1, 5))
    step = al.attend(rng.normal(size=3), h, W_a, U_a, v_a)
    assert step.alpha.tolist() == [1.0]
    np.testing.assert_array_equal(step.c, h[0])


@settings(max_examples=50)
@given(st.integers(0, 2**32 - 1), st.integers(2, 9))
def test_permuting_h_permutes_alpha_and_keeps_c(seed, T_x):
    rng = np.random.default_rng(seed)
    W_a, U_a, v_a = rand_params(rng, d_h=5, d_a=2)
    s_prev, h = rng.normal(size=3), rng.normal(size=(T_x, 5))
    perm = rng.permutation(T_x)
    a = al.attend(s_prev, h, W_a, U_a, v_a)
    b = al.attend(s_prev, h[perm], W_a, U_a, v_a)
    np.testing.assert_allclose(b.e, a.e[perm], atol=1e-12)
    np.testing.assert_allclose(b.alpha, a.alpha[perm], atol=1e-12)
    np.testing.assert_allclose(b.c, a.c, atol=1e-12)


def test_attend_returns_named_parts_with_shapes():
    rng = np.random.default_rng(3)
    W_a, U_a, v_a = rand_params(rng, d_h=5, d_a=2)
    step = al.attend(rng.normal(size=(2, 3)), rng.normal(size=(2, 4, 5)), W_a, U_a, v_a)
    assert isinstance(step, al.AttentionStep)
    assert step.e.shape == (2, 4)
    assert step.alpha.shape == (2, 4)
    assert step.c.shape == (2, 5)
    np.testing.assert_allclose(step.alpha.sum(axis=-1), [1.0, 1.0])


def test_attend_mask_zeroes_padding():
    rng = np.random.default_rng(4)
    W_a, U_a, v_a = rand_params(rng, d_h=5, d_a=2)
    h = rng.normal(size=(4, 5))
    step = al.attend(rng.normal(size=3), h, W_a, U_a, v_a, mask=[True, True, False, False])
    assert step.alpha[2:].tolist() == [0.0, 0.0]
    np.testing.assert_allclose(step.c, step.alpha[:2] @ h[:2])


# ----------------------------------------------------------------------------- bad input
_rng = np.random.default_rng(5)
W, U, V = rand_params(_rng, d_s=3, d_h=5, d_a=2)
S, H = _rng.normal(size=3), _rng.normal(size=(4, 5))

BAD = [
    # (call, error type, words the message must contain)
    (
        lambda: al.additive_scores(np.ones(4), H, W, U, V),
        ValueError,
        "W_a expects d_s=3 components but s_prev has 4",
    ),
    (
        lambda: al.additive_scores(S, np.ones((4, 6)), W, U, V),
        ValueError,
        "U_a expects d_h=5 components but h has 6",
    ),
    (
        lambda: al.additive_scores(S, H, W, np.ones((3, 5)), V),
        ValueError,
        "d_a=2 but U_a projects h to d_a=3",
    ),
    (
        lambda: al.additive_scores(S, H, W, U, np.ones(3)),
        ValueError,
        "v_a must be a vector of length d_a=2",
    ),
    (lambda: al.additive_scores(S, H, W, U, np.ones((2, 1))), ValueError, "v_a must be a vector"),
    (
        lambda: al.additive_scores(S, np.ones(5), W, U, V),
        ValueError,
        "h must have shape (..., T_x, d_h)",
    ),
    (
        lambda: al.additive_scores(np.float64(1.0), H, W, U, V),
        ValueError,
        "s_prev must have shape (..., d_s)",
    ),
    (
        lambda: al.additive_scores(S, H, np.ones(3), U, V),
        ValueError,
        "W_a must be a matrix of shape (d_a, d_s)",
    ),
    (lambda: al.additive_scores(S, np.ones((0, 5)), W, U, V), ValueError, "T_x = 0"),
    (
        lambda: al.additive_scores(np.ones((2, 3)), np.ones((3, 4, 5)), W, U, V),
        ValueError,
        "batch dimensions",
    ),
    (
        lambda: al.additive_scores([1.0, np.nan, 0.0], H, W, U, V),
        ValueError,
        "s_prev contains NaN or inf",
    ),
    (lambda: al.additive_scores(S, H * np.inf, W, U, V), ValueError, "h contains NaN or inf"),
    (
        lambda: al.additive_scores(["a", "b", "c"], H, W, U, V),
        TypeError,
        "s_prev must hold real numbers",
    ),
    (
        lambda: al.multiplicative_scores(S, H, np.ones((5, 3))),
        ValueError,
        "W_a must have shape (d_s, d_h) = (3, 5)",
    ),
    (lambda: al.dot_scores(S, H), ValueError, "needs d_s = d_h"),
    (lambda: al.softmax([]), ValueError, "T_x = 0"),
    (lambda: al.softmax(3.0), ValueError, "scalar"),
    (lambda: al.softmax([1.0, np.inf]), ValueError, "e contains NaN or inf"),
    (lambda: al.softmax([1.0, np.nan]), ValueError, "e contains NaN or inf"),
    (lambda: al.softmax([True, False]), TypeError, "booleans are for the mask"),
    (lambda: al.softmax([1.0, 2.0], axis=1), ValueError, "axis=1 is out of range"),
    (lambda: al.softmax([1.0, 2.0], mask=[1, 0]), TypeError, "mask must be boolean"),
    (lambda: al.softmax([1.0, 2.0, 3.0], mask=[True, False]), ValueError, "mask has shape (2,)"),
    (
        lambda: al.softmax(np.ones((2, 3)), mask=np.ones((3, 3), bool)),
        ValueError,
        "mask has shape (3, 3)",
    ),
    (
        lambda: al.softmax(np.ones((2, 3)), mask=np.ones((2, 1), bool)),
        ValueError,
        "all T_x = 3 positions",
    ),
    (lambda: al.softmax([1.0, 2.0], mask=[False, False]), ValueError, "no position to attend to"),
    (
        lambda: al.context([0.5, 0.5], H),
        ValueError,
        "alpha has T_x=2 weights per step but h has T_x=4",
    ),
    (lambda: al.context([1.5, -0.5, 0.0, 0.0], H), ValueError, "negative entries"),
    (lambda: al.context([0.1, 0.1, 0.1, 0.1], H), ValueError, "must sum to 1"),
    (lambda: al.entropy([0.2, 0.2]), ValueError, "must sum to 1"),
    (lambda: al.entropy([0.5, 0.5], base=1), ValueError, "base must be a positive number"),
    (lambda: al.entropy([0.5, 0.5], base=-2), ValueError, "base must be a positive number"),
    (lambda: al.attend(S, H, W, U, V, mask=[True, True]), ValueError, "mask has shape (2,)"),
]


@pytest.mark.parametrize(("call", "error", "words"), BAD, ids=[b[2][:40] for b in BAD])
def test_bad_input_gets_a_clear_error(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words in str(info.value)
