"""attnlib.transformer.selfattn (numpy) and .selfattn_models (torch): chapters/self_attention."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.transformer import selfattn as sa
from attnlib.transformer import selfattn_models as sm

RNG = np.random.default_rng(7)


def _weights(d_x: int = 5, d_k: int = 3, d_v: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(d_x, d_k)), rng.normal(size=(d_x, d_k)), rng.normal(size=(d_x, d_v))


# --------------------------------------------------------------------------- numpy reference
def test_self_attention_by_hand_on_two_positions() -> None:
    X = np.array([[1.0, 0.0], [0.0, 2.0]])
    eye = np.eye(2)
    out = sa.self_attention(X, eye, eye, eye)
    # e_ij = x_i · x_j / √2: [[1, 0], [0, 4]] / √2
    e = np.array([[1.0, 0.0], [0.0, 4.0]]) / math.sqrt(2)
    np.testing.assert_allclose(out.e, e)
    a = np.exp(e) / np.exp(e).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(out.alpha, a)
    np.testing.assert_allclose(out.z, a @ X)


def test_self_attention_loops_agree_with_the_vectorised_form_and_batches() -> None:
    W_q, W_k, W_v = _weights()
    X = RNG.normal(size=(3, 6, 5))
    out = sa.self_attention(X, W_q, W_k, W_v)
    for b in range(3):
        for i in range(6):
            q = X[b, i] @ W_q
            e = np.array([q @ (X[b, j] @ W_k) for j in range(6)]) / math.sqrt(3)
            a = np.exp(e - e.max())
            a /= a.sum()
            np.testing.assert_allclose(out.z[b, i], sum(a[j] * X[b, j] @ W_v for j in range(6)))
    assert out.z.shape == (3, 6, 4)
    assert out.alpha.shape == (3, 6, 6)


def test_a_causal_mask_gives_each_position_only_itself_and_the_past() -> None:
    W_q, W_k, W_v = _weights()
    X = RNG.normal(size=(5, 5))
    causal = np.tril(np.ones((5, 5), dtype=bool))
    out = sa.self_attention(X, W_q, W_k, W_v, mask=causal)
    assert np.all(out.alpha[~causal] == 0.0)
    np.testing.assert_allclose(out.alpha.sum(axis=1), 1.0)
    np.testing.assert_allclose(out.z[0], X[0] @ W_v)  # the first position sees only itself
    # position 2 alone: the first three rows of the sequence give the same z_2
    short = sa.self_attention(X[:3], W_q, W_k, W_v)
    np.testing.assert_allclose(out.z[2], short.z[2])


@settings(max_examples=40, deadline=None)
@given(T=st.integers(1, 7), seed=st.integers(0, 10_000))
def test_permuting_the_input_permutes_the_output(T: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    W_q, W_k, W_v = _weights(seed=seed)
    X = rng.normal(size=(T, 5))
    perm = rng.permutation(T)
    out = sa.self_attention(X, W_q, W_k, W_v)
    moved = sa.self_attention(X[perm], W_q, W_k, W_v)
    np.testing.assert_allclose(moved.z, out.z[perm], atol=1e-12)
    np.testing.assert_allclose(moved.alpha, out.alpha[np.ix_(perm, perm)], atol=1e-12)


def test_positions_break_the_equivariance() -> None:
    X = RNG.normal(size=(4, 6))
    W_q, W_k, W_v = (RNG.normal(size=(6, 3)) for _ in range(3))
    P = sa.positional_encoding(4, 6)
    perm = np.array([1, 0, 3, 2])
    out = sa.self_attention(X + P, W_q, W_k, W_v)
    moved = sa.self_attention(X[perm] + P, W_q, W_k, W_v)
    assert np.max(np.abs(moved.z - out.z[perm])) > 1e-3


def test_positional_encoding_values_and_properties() -> None:
    P = sa.positional_encoding(50, 8)
    assert P.shape == (50, 8)
    i = 7
    for m in range(4):
        w = 10000.0 ** (-2 * m / 8)
        assert P[i, 2 * m] == pytest.approx(math.sin(i * w))
        assert P[i, 2 * m + 1] == pytest.approx(math.cos(i * w))
    np.testing.assert_array_equal(P[0, 0::2], 0.0)
    np.testing.assert_array_equal(P[0, 1::2], 1.0)
    np.testing.assert_allclose(np.linalg.norm(P, axis=1), 2.0)  # √(d/2)
    G = P @ P.T
    for k in (1, 5, 20):
        np.testing.assert_allclose(np.diag(G, k), G[0, k], atol=1e-12)
    assert len({tuple(np.round(r, 9)) for r in P}) == 50  # every position its own vector
    # a prefix of a longer table is the shorter table
    np.testing.assert_array_equal(sa.positional_encoding(10, 8), P[:10])


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda W: sa.self_attention(np.ones(5), *W), "(..., T, d_x)"),
        (lambda W: sa.self_attention(np.ones((0, 5)), *W), "T = 0"),
        (lambda W: sa.self_attention(np.ones((3, 4)), *W), "d_x = 5 components, but X has d_x = 4"),
        (lambda W: sa.self_attention(np.ones((3, 5)), W[0], W[0][:, :2], W[2]), "same size d_k"),
        (lambda W: sa.self_attention(np.ones((3, 5)), W[0][0], W[1], W[2]), "W_q must be a matrix"),
        (
            lambda W: sa.self_attention(np.ones((3, 5)), *W, mask=np.ones((3, 4), bool)),
            "(..., T, T)",
        ),
        (
            lambda W: sa.self_attention(np.ones((3, 5)), *W, mask=np.zeros((3, 3), bool)),
            "no position to attend to",
        ),
        (lambda W: sa.self_attention(np.full((3, 5), np.nan), *W), "NaN"),
        (lambda W: sa.positional_encoding(4, 5), "even"),
        (lambda W: sa.positional_encoding(0, 4), "T must be"),
        (lambda W: sa.permute_rows(np.ones((3, 2)), [0, 0, 1]), "permutation"),
    ],
)
def test_bad_input_is_refused_in_the_course_notation(call, needle: str) -> None:
    with pytest.raises(ValueError, match=re.escape(needle)):
        call(_weights())


# --------------------------------------------------------------------------- torch against numpy
def test_each_torch_head_computes_the_numpy_reference() -> None:
    torch.manual_seed(0)
    layer = sm.MultiHeadSelfAttention(8, n_heads=2).double()
    X = torch.randn(3, 5, 8, dtype=torch.float64)
    Z = layer(X)
    assert layer.alpha is not None
    per_head = []
    for h in range(2):
        W = layer.head(h)
        ref = sa.self_attention(X.numpy(), W["W_q"], W["W_k"], W["W_v"])
        np.testing.assert_allclose(layer.alpha[:, h].numpy(), ref.alpha, atol=1e-6)
        per_head.append(ref.z)
    Z_ref = np.concatenate(per_head, axis=-1) @ layer.W_o.detach().numpy()
    np.testing.assert_allclose(Z.detach().numpy(), Z_ref, atol=1e-6)


def test_the_float32_layer_agrees_with_numpy_to_1e_6_in_the_weights() -> None:
    torch.manual_seed(1)
    layer = sm.MultiHeadSelfAttention(6, n_heads=1)
    X = torch.randn(1, 4, 6)
    layer(X)
    W = layer.head(0)
    ref = sa.self_attention(X.double().numpy()[0], W["W_q"], W["W_k"], W["W_v"])
    assert layer.alpha is not None
    np.testing.assert_allclose(layer.alpha[0, 0].numpy(), ref.alpha, atol=1e-6)


def test_the_torch_mask_matches_the_numpy_mask() -> None:
    torch.manual_seed(2)
    layer = sm.MultiHeadSelfAttention(4, n_heads=1).double()
    X = torch.randn(1, 5, 4, dtype=torch.float64)
    causal = torch.tril(torch.ones(5, 5, dtype=torch.bool))
    layer(X, mask=causal)
    W = layer.head(0)
    ref = sa.self_attention(X.numpy()[0], W["W_q"], W["W_k"], W["W_v"], mask=causal.numpy())
    assert layer.alpha is not None
    np.testing.assert_allclose(layer.alpha[0, 0].numpy(), ref.alpha, atol=1e-12)


def test_the_torch_layer_refuses_a_wrong_width() -> None:
    layer = sm.MultiHeadSelfAttention(4, n_heads=2)
    with pytest.raises(ValueError, match="d_x = 4"):
        layer(torch.zeros(1, 3, 5))


# --------------------------------------------------------------------------- tasks
def test_the_tasks_hold_what_their_docstring_says() -> None:
    rev = sm.make_sequences("reverse", 20, T=5, K=4, seed=3)
    assert torch.equal(rev.y, rev.x.flip(1))
    cp = sm.make_sequences("copy", 20, T=5, K=4, seed=3)
    assert torch.equal(cp.y, cp.x)
    am = sm.make_sequences("after_marker", 50, T=6, K=4, seed=3)
    for x, y in zip(am.x.tolist(), am.y.tolist(), strict=True):
        assert x.count(4) == 1
        assert x[-1] != 4
        assert y == [x[x.index(4) + 1]]
    pm = sm.make_sequences("prev_and_match", 50, T=6, K=5, seed=3)
    for x, y in zip(pm.x.tolist(), pm.y.tolist(), strict=True):
        c = x[0] - 5
        assert 0 <= c < 5
        assert all(k < 5 for k in x[1:])
        assert y[0] == -100
        assert y[1:] == [(x[i - 1] - c) % 5 if i > 1 else 0 for i in range(1, 6)]
    first = sm.make_sequences("prev_and_first", 50, T=6, K=5, seed=3)
    assert torch.equal(first.x[:, 1:], pm.x[:, 1:])  # the same strings, the cue as a plain letter
    assert torch.equal(first.x[:, 0] + 5, pm.x[:, 0])
    assert torch.equal(first.y, pm.y)
    assert first.vocab == 5
    with pytest.raises(ValueError, match="unknown task"):
        sm.make_sequences("sort", 3)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the chapter's experiments
@pytest.fixture(scope="module")
def one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.mark.usefixtures("one_thread")
def test_training_is_deterministic() -> None:
    a = sm.run_reader("after_marker", "self-attention")
    b = sm.run_reader("after_marker", "self-attention")
    assert a[1] == b[1]
    for p, q in zip(a[0].parameters(), b[0].parameters(), strict=True):
        assert torch.equal(p, q)


@pytest.mark.usefixtures("one_thread")
def test_positions_repair_reversing_and_only_context_solves_after_marker() -> None:
    acc = {kind: sm.run_reader("reverse", kind)[1] for kind in ("embedding", "embedding+position")}
    assert acc["embedding+position"] >= 0.95 > 0.5 >= acc["embedding"]
    am = {kind: sm.run_reader("after_marker", kind)[1] for kind in sm.ENCODERS}
    assert am["embedding+position"] <= 0.5
    assert am["self-attention"] >= 0.95
    assert am["rnn"] >= 0.95


@pytest.mark.usefixtures("one_thread")
def test_one_head_lags_where_the_cue_is_a_plain_letter_and_two_heads_succeed() -> None:
    runs = {H: sm.run_tagger(H, "prev_and_first") for H in (1, 2)}
    assert runs[1][1] <= 0.9
    assert runs[2][1] >= 0.9
    focus = sm.head_focus(runs[2][0], runs[2][2])
    prev_head = int(np.argmax(focus[:, 0]))
    assert focus[prev_head, 0] >= 0.5  # one head reads i − 1 ...
    assert focus[1 - prev_head, 1] >= 0.5  # ... the other the first letter


@pytest.mark.usefixtures("one_thread")
def test_two_heads_divide_the_jobs_that_one_head_splits() -> None:
    focus = {}
    for H in (1, 2):
        model, acc, test = sm.run_tagger(H)
        assert acc >= 0.9
        focus[H] = sm.head_focus(model, test)
    assert focus[1].shape == (1, 2)
    assert focus[2].shape == (2, 2)
    assert focus[1].min() >= 0.2  # one head: weight on both places
    prev_head = int(np.argmax(focus[2][:, 0]))
    assert focus[2][prev_head, 0] > focus[2][1 - prev_head, 0]
    assert focus[2][1 - prev_head, 1] > focus[2][prev_head, 1]
