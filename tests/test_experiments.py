"""Tests for attnlib.experiments: the helpers behind the question-bank chapters."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attnlib as al
from attnlib import experiments as ex


# ----------------------------------------------------------------------------- growth
def test_fit_growth_recovers_a_known_power_law():
    x = np.array([10.0, 30.0, 100.0, 300.0])
    fit = ex.fit_growth(x, 3.0 * x**1.5)
    assert fit.exponent == pytest.approx(1.5, abs=1e-12)
    assert fit.prefactor == pytest.approx(3.0, rel=1e-10)
    np.testing.assert_allclose(fit.predict([1000.0]), [3.0 * 1000.0**1.5], rtol=1e-10)


@pytest.mark.parametrize(
    ("x", "y", "match"),
    [
        ([1.0, 2.0], [1.0], "one length"),
        ([1.0, -2.0], [1.0, 2.0], "positive"),
        ([2.0, 2.0], [1.0, 2.0], "two distinct"),
    ],
)
def test_fit_growth_rejects_bad_input(x, y, match):
    with pytest.raises(ValueError, match=match):
        ex.fit_growth(x, y)


def test_all_scores_is_one_score_per_step_and_position():
    e = ex.all_scores(7, 3, d_s=2, d_h=5, d_a=4, seed=1)
    assert e.shape == (3, 7)
    # the same numbers, one decoder step at a time, from the same seeded draws
    rng = np.random.default_rng(1)
    s_prev, h = rng.normal(size=(3, 2)), rng.normal(size=(7, 5))
    W_a, U_a, v_a = rng.normal(size=(4, 2)), rng.normal(size=(4, 5)), rng.normal(size=4)
    for t in range(3):
        by_hand = [v_a @ np.tanh(W_a @ s_prev[t] + U_a @ h[i]) for i in range(7)]
        np.testing.assert_allclose(e[t], by_hand, rtol=1e-12)


def test_count_products_counts_each_matrix_product_and_its_multiply_adds():
    import torch

    A, B = torch.ones(3, 4), torch.ones(4, 5)
    v, bias = torch.ones(4), torch.ones(3, 5)
    batch = torch.ones(2, 3, 4), torch.ones(2, 4, 6)
    cases = [
        (lambda: A @ B, 1, 3 * 5 * 4),  # matrix-matrix: 15 entries, sums of 4
        (lambda: A @ v, 1, 3 * 4),  # matrix-vector
        (lambda: v @ v, 1, 4),  # a dot product
        (lambda: torch.bmm(*batch), 1, 2 * 3 * 6 * 4),
        (lambda: torch.addmm(bias, A, B), 1, 3 * 5 * 4),  # what nn.Linear runs
        (lambda: torch.nn.functional.linear(A, B.T, torch.ones(5)), 1, 3 * 5 * 4),
        (lambda: (A @ B, A @ v), 2, 60 + 12),
        (lambda: torch.tanh(A).sum() + (A * A).sum(), 0, 0),  # elementwise: no product
    ]
    for fn, calls, macs in cases:
        assert ex.count_products(fn) == (calls, macs)
    with torch.no_grad():  # the same without autograd
        assert ex.count_products(lambda: A @ B) == (1, 60)


def test_count_products_counts_a_loop_of_products_one_by_one():
    import torch

    W, h = torch.ones(8, 8), torch.ones(8)

    def steps(n):
        def run():
            x = h
            for _ in range(n):
                x = torch.tanh(W @ x)

        return run

    assert [ex.count_products(steps(n)) for n in (1, 5, 20)] == [
        (1, 64),
        (5, 5 * 64),
        (20, 20 * 64),
    ]


def test_timers_return_one_positive_time_per_size():
    t = ex.time_scores([(4, 3), (8, 6)], repeats=1)
    r = ex.time_rnn([5, 10], repeats=1)
    assert t.shape == (2,)
    assert np.all(t > 0)
    assert r.shape == (2,)
    assert np.all(r > 0)
    calls = []
    assert ex.time_call(lambda: calls.append(1), repeats=3) >= 0
    assert len(calls) == 3


# ----------------------------------------------------------------------------- floating point
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_gap_brackets_the_first_exact_one_and_zero(dtype):
    for which, index, value in (("one", 0, 1.0), ("zero", 1, 0.0)):
        g = ex.exact_gap(dtype, which)
        at = al.softmax(np.array([0.0, -g], dtype=dtype))
        before = al.softmax(np.array([0.0, -(g - 1e-3)], dtype=dtype))
        assert at[index] == value
        assert 0.0 < before[index] < 1.0


def test_exact_gap_rejects_bad_arguments():
    with pytest.raises(TypeError, match="floating"):
        ex.exact_gap(np.int32, "one")
    with pytest.raises(ValueError, match="'one' or 'zero'"):
        ex.exact_gap(np.float64, "half")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- soft vs hard
def test_selection_loss_soft_and_hard_by_hand():
    h = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    e = np.array([0.0, math.log(3.0), 0.0])  # softmax = 1/5, 3/5, 1/5
    target = np.array([0.5, 0.5])
    c_soft = np.array([1 / 5 + 1 / 5, 6 / 5 + 1 / 5])
    assert ex.selection_loss(e, h, target, "soft") == pytest.approx(np.sum((c_soft - target) ** 2))
    assert ex.selection_loss(e, h, target, "hard") == pytest.approx(0.25 + 2.25)
    with pytest.raises(ValueError, match="'soft' or 'hard'"):
        ex.selection_loss(e, h, target, "medium")  # type: ignore[arg-type]


def test_numeric_gradient_of_a_quadratic():
    grad = ex.numeric_gradient(lambda x: float(np.sum(x**2) + 3 * x[0]), [1.0, -2.0])
    np.testing.assert_allclose(grad, [5.0, -4.0], rtol=1e-8)


def test_train_selection_soft_learns_hard_gets_no_gradient():
    rng = np.random.default_rng(3)
    h = rng.normal(size=(4, 3))
    e0 = np.array([0.2, 0.1, 0.0, -0.1])
    soft = ex.train_selection(h, 2, "soft", e0=e0, steps=60)
    hard = ex.train_selection(h, 2, "hard", e0=e0, steps=60)
    assert soft.loss[-1] < 0.1 * soft.loss[0]
    assert int(np.argmax(soft.alpha)) == 2
    assert np.all(hard.grad_norm == 0.0)
    assert np.all(hard.loss == hard.loss[0])
    np.testing.assert_array_equal(hard.alpha, [1.0, 0.0, 0.0, 0.0])


# ----------------------------------------------------------------------------- tanh vs linear
def test_linear_scores_by_hand_and_shape_checks():
    rng = np.random.default_rng(4)
    s, h = rng.normal(size=2), rng.normal(size=(3, 5))
    W_a, U_a, v_a = rng.normal(size=(4, 2)), rng.normal(size=(4, 5)), rng.normal(size=4)
    by_hand = [v_a @ (W_a @ s + U_a @ h[i]) for i in range(3)]
    np.testing.assert_allclose(ex.linear_scores(s, h, W_a, U_a, v_a), by_hand, rtol=1e-12)
    with pytest.raises(ValueError, match="U_a expects d_h"):
        ex.linear_scores(s, h, W_a, U_a[:, :4], v_a)


def test_fit_pointer_scores_is_reproducible_and_rejects_unknown_kind():
    a = ex.fit_pointer_scores("linear", steps=5, n_test=50, seed=2)
    b = ex.fit_pointer_scores("linear", steps=5, n_test=50, seed=2)
    assert a.test_accuracy == b.test_accuracy
    np.testing.assert_array_equal(a.loss, b.loss)
    assert a.loss.shape == (5,)
    with pytest.raises(ValueError, match="'tanh' or 'linear'"):
        ex.fit_pointer_scores("relu")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- same c_t
def test_same_context_weights_gives_another_distribution_with_the_same_context():
    rng = np.random.default_rng(5)
    h = rng.normal(size=(8, 3))
    alpha = al.softmax(rng.normal(scale=2.0, size=8))
    alt = ex.same_context_weights(alpha, h)
    assert np.all(alt >= 0)
    assert alt.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(al.context(alt, h), al.context(alpha, h), atol=1e-12)
    top = int(np.argmax(alpha))
    assert alt[top] < alpha[top] - 0.05


def test_same_context_weights_refuses_when_the_weights_are_unique():
    rng = np.random.default_rng(6)
    h = rng.normal(size=(3, 4))  # T_x = 3 ≤ d_h + 1: (h_i, 1) independent
    with pytest.raises(ValueError, match="linearly independent"):
        ex.same_context_weights(al.softmax(rng.normal(size=3)), h)


# ----------------------------------------------------------------------------- encoders, trace
def test_random_encoder_embedding_is_context_free_rnn_is_not():
    ids = [0, 1, 2, 0, 3]
    emb = ex.random_encoder(ids, "embedding")
    rnn = ex.random_encoder(ids, "rnn")
    assert emb.shape == rnn.shape == (5, 8)
    np.testing.assert_array_equal(emb[0], emb[3])
    assert np.max(np.abs(rnn[0] - rnn[3])) > 1e-3
    np.testing.assert_array_equal(rnn, ex.random_encoder(ids, "rnn"))  # same seed, same states
    with pytest.raises(ValueError, match="ids in 0"):
        ex.random_encoder([0, 25], "rnn")
    with pytest.raises(ValueError, match="'rnn' or 'embedding'"):
        ex.random_encoder([0], "lstm")  # type: ignore[arg-type]


def test_growth_plot_draws_points_and_fits_on_log_axes():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnlib import plots

    x = np.array([10.0, 20.0, 40.0])
    fit = ex.fit_growth(x, 2.0 * x**2)
    lines = plots.growth({"scores": (x, 2.0 * x**2, *fit)}, xlabel="T = T_x = T_y")
    ax = lines[0].axes
    assert ax.get_xscale() == "log"
    assert ax.get_yscale() == "log"
    assert ax.get_xlabel() == "T = T_x = T_y"
    np.testing.assert_allclose(lines[0].get_ydata(), 2.0 * x**2)
    assert any("2.00" in t.get_text() for t in ax.get_legend().get_texts())
    plt.close(ax.figure)


def test_exact_gap_at_two_positions_is_exact_gap() -> None:
    for dtype in (np.float32, np.float64):
        for which in ("one", "zero"):
            assert ex.exact_gap_at(2, which, dtype=dtype) == ex.exact_gap(dtype, which)


@pytest.mark.parametrize(
    ("args", "error"),
    [((1,), ValueError), ((2.5,), ValueError), ((True,), ValueError), ((3, "half"), ValueError)],
)
def test_exact_gap_at_refuses_what_it_cannot_search(args: tuple, error: type) -> None:
    with pytest.raises(error):
        ex.exact_gap_at(*args)


def test_the_gap_for_an_exact_one_grows_with_T_x_and_the_gap_for_zero_does_not() -> None:
    T_xs = [2, 10, 100, 1000]
    one = [ex.exact_gap_at(T, "one") for T in T_xs]
    zero = [ex.exact_gap_at(T, "zero") for T in T_xs]
    assert np.all(np.diff(one) > 0)
    bound = 53 * np.log(2) + np.log(np.array(T_xs) - 1.0)  # (T_x − 1) e^{−g} ≤ 2^{−53}
    assert np.all(np.array(one) <= bound + 1e-5)
    assert np.allclose(zero, np.log(2) - np.log(np.finfo(np.float64).smallest_subnormal), atol=1e-5)
