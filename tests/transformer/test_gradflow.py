"""attnlib.transformer.gradflow: gradients of outputs with respect to source embeddings, and a layer's cost."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlib.models import make_seq2seq
from attnlib.tasks import make_task
from attnlib.train import encode_pairs
from attnlib.transformer import gradflow as gf


@pytest.fixture(scope="module")
def tiny():
    """A tiny untrained Bahdanau model and a padded batch of three copy pairs."""
    task = make_task("copy", min_len=3, max_len=5, n_train=20, n_valid=5, n_test=5, seed=0)
    model = make_seq2seq(task.src_vocab, task.tgt_vocab, emb=4, hidden=3, d_s=5, d_a=3, seed=0)
    model = model.double()
    pairs = [
        (tuple("abc"), tuple("abc")),
        (tuple("dcbae"), tuple("dcbae")),
        (tuple("ee"), tuple("ee")),
    ]
    batch = encode_pairs(task, pairs)
    return model, batch


def _picked(model, src, tgt_in, tgt_out, emb, b, t, of):
    """ỹ_t[y_t] (or the loss of step t) of row b, with the source embeddings given as ``emb``."""

    def swap(_m, _i, out):
        return emb

    handle = model.encoder.embedding.register_forward_hook(swap)
    try:
        logits, _ = model(src[b : b + 1], tgt_in[b : b + 1])
    finally:
        handle.remove()
    y = tgt_out[b, t]
    if of == "logit":
        return logits[0, t, y]
    return torch.nn.functional.cross_entropy(logits[0, t][None], y[None])


@pytest.mark.parametrize("of", ["logit", "loss"])
def test_source_gradients_match_finite_differences(tiny, of) -> None:
    model, batch = tiny
    src, tgt_in, tgt_out = batch.src, batch.tgt_in, batch.tgt_out
    G = gf.source_gradients(model, src, tgt_in, tgt_out, of=of, chunk=4)  # several chunks
    assert G.shape == (3, tgt_out.shape[1], src.shape[1])
    eps = 1e-6
    with torch.no_grad():
        for b in (0, 1):
            emb0 = model.encoder.embedding(src[b : b + 1]).double()
            L = int((src[b] != 0).sum())
            T = int((tgt_out[b] != 0).sum())
            for t in range(T):
                for i in range(L):
                    grad = torch.zeros(emb0.shape[-1], dtype=torch.float64)
                    for k in range(emb0.shape[-1]):
                        up, dn = emb0.clone(), emb0.clone()
                        up[0, i, k] += eps
                        dn[0, i, k] -= eps
                        hi = _picked(model, src, tgt_in, tgt_out, up, b, t, of)
                        lo = _picked(model, src, tgt_in, tgt_out, dn, b, t, of)
                        grad[k] = (hi - lo) / (2 * eps)
                    assert G[b, t, i] == pytest.approx(float(grad.norm()), rel=1e-5, abs=1e-9)


def test_padding_is_nan_and_real_entries_are_finite(tiny) -> None:
    model, batch = tiny
    G = gf.source_gradients(model, batch.src, batch.tgt_in, batch.tgt_out)
    real = (batch.tgt_out != 0).numpy()[:, :, None] & (batch.src != 0).numpy()[:, None, :]
    assert np.isnan(G[~real]).all()
    assert np.isfinite(G[real]).all()
    assert (G[real] > 0).all()


def test_source_gradients_are_deterministic_and_leave_the_model_as_found(tiny) -> None:
    model, batch = tiny
    model.train()
    a = gf.source_gradients(model, batch.src, batch.tgt_in, batch.tgt_out)
    b = gf.source_gradients(model, batch.src, batch.tgt_in, batch.tgt_out, chunk=1)
    assert model.training
    model.eval()
    np.testing.assert_allclose(a, b, rtol=1e-12, equal_nan=True)
    assert all(p.grad is None for p in model.parameters())


def test_source_gradients_refuse_a_wrong_target(tiny) -> None:
    model, batch = tiny
    with pytest.raises(ValueError, match="'logit' or 'loss'"):
        gf.source_gradients(model, batch.src, batch.tgt_in, batch.tgt_out, of="prob")
    with pytest.raises(ValueError, match="one B"):
        gf.source_gradients(model, batch.src[:2], batch.tgt_in, batch.tgt_out)


def test_by_distance_averages_each_diagonal_band() -> None:
    G = np.arange(12, dtype=float).reshape(3, 4)  # (T_y, T_x)
    G[2, 3] = np.nan  # a padded entry is left out
    prof = gf.by_distance(G)
    assert prof[0] == pytest.approx((0 + 5 + 10) / 3)
    assert prof[1] == pytest.approx((1 + 4 + 6 + 9) / 4)  # (2, 3) is NaN
    assert prof[2] == pytest.approx((2 + 7 + 8) / 3)
    assert prof[3] == pytest.approx(3.0)
    assert gf.by_distance(np.stack([G, G])) == pytest.approx(prof, nan_ok=True)


def test_by_source_position_averages_over_sentences_and_steps() -> None:
    G = np.array([[[1.0, 2.0], [3.0, np.nan]], [[5.0, 6.0], [7.0, 8.0]]])
    assert gf.by_source_position(G) == pytest.approx([4.0, 16 / 3])


def test_recurrent_steps_count_to_the_nearer_end() -> None:
    assert gf.recurrent_steps(1).tolist() == [0]
    assert gf.recurrent_steps(6).tolist() == [0, 1, 2, 2, 1, 0]
    assert gf.recurrent_steps(7).tolist() == [0, 1, 2, 3, 2, 1, 0]
    with pytest.raises(ValueError, match="at least 1"):
        gf.recurrent_steps(0)


def test_decay_per_step_recovers_a_geometric_factor() -> None:
    k = np.arange(6)
    assert gf.decay_per_step(k, 3.0 * 0.5**k) == pytest.approx(0.5)
    assert gf.decay_per_step(k, np.full(6, 2.0)) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="positive"):
        gf.decay_per_step(k, np.zeros(6))


def test_the_rnn_layer_is_its_recurrence() -> None:
    w = gf.layer_weights(3, seed=1)
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(0))
    h = torch.zeros(3)
    for j in range(4):
        h = torch.tanh(w["W"] @ x[j] + w["U"] @ h)
        torch.testing.assert_close(gf.rnn_layer(x[: j + 1], w["W"], w["U"])[j], h)


def test_self_attention_is_softmax_weighted_values_and_order_equivariant() -> None:
    w = gf.layer_weights(4, seed=2)
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    w = {k: v.double() for k, v in w.items()}
    y = gf.self_attention_layer(x, w["W_q"], w["W_k"], w["W_v"])
    j = 2
    q, K, V = w["W_q"] @ x[j], x @ w["W_k"].T, x @ w["W_v"].T
    e = (K @ q / 2.0).numpy()  # √d = 2
    a = np.exp(e - e.max()) / np.exp(e - e.max()).sum()
    np.testing.assert_allclose(y[j].numpy(), a @ V.numpy(), rtol=1e-12)
    perm = torch.tensor([4, 2, 0, 1, 3])
    yp = gf.self_attention_layer(x[perm], w["W_q"], w["W_k"], w["W_v"])
    torch.testing.assert_close(yp, y[perm])


def test_multiply_adds_by_hand() -> None:
    assert gf.multiply_adds("rnn", 10, 4) == 10 * (16 + 16)
    assert gf.multiply_adds("self-attention", 10, 4) == 3 * 10 * 16 + 100 * 4 + 100 * 4
    with pytest.raises(ValueError, match="kind"):
        gf.multiply_adds("lstm", 3, 3)


def test_graph_depth_and_distance_on_a_known_chain() -> None:
    a = torch.ones(2, requires_grad=True)
    b = torch.ones(2, requires_grad=True)
    c = (a * 2).sin().exp()  # three operations after a
    out = c + b  # one more; b is one operation away
    assert gf.graph_depth(out) == 5  # add, exp, sin, mul, a's accumulator
    assert gf.graph_distance(out, a) == 4
    assert gf.graph_distance(out, b) == 1
    with pytest.raises(ValueError, match="does not depend"):
        gf.graph_distance(out, torch.ones(1, requires_grad=True))


def test_structure_recurrence_grows_linearly_attention_stays() -> None:
    rnn = [gf.structure("rnn", n) for n in (1, 2, 5, 9)]
    att = [gf.structure("self-attention", n) for n in (1, 2, 5, 9)]
    steps = np.diff([r[1] for r in rnn]) / np.diff([1, 2, 5, 9])
    assert len(set(steps.tolist())) == 1  # a constant number of operations per position
    assert steps[0] >= 1
    assert len(set(np.diff([r[0] for r in rnn]) / np.diff([1, 2, 5, 9]))) == 1
    assert len(set(att)) == 1


@pytest.mark.parametrize(("n", "d"), [(1, 3), (7, 4), (32, 16)])
def test_products_are_what_the_layers_run(n: int, d: int) -> None:
    """Counted as the layers run: the recurrent layer 2 n matrix-vector products of d² each, one
    step after another; self-attention five products (q, k, v, the scores, the weighted sum)."""
    assert gf.products("rnn", n, d) == (2 * n, 2 * n * d * d)
    assert gf.products("self-attention", n, d) == (5, 3 * n * d * d + n * n * d + n * n * d)
    with pytest.raises(ValueError, match="n must be at least 1"):
        gf.products("rnn", 0, d)
    with pytest.raises(ValueError, match="kind"):
        gf.products("lstm", n, d)


def test_time_layer_is_positive_and_restores_threads() -> None:
    """A clock for display (gradient_flow_and_cost's figure, bench/bench_cost.py): only its sign is
    checked."""
    before = torch.get_num_threads()
    for kind in gf.LAYERS:
        s = gf.time_layer(kind, 8, 4, repeats=3)
        assert math.isfinite(s)
        assert s > 0
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="repeats"):
        gf.time_layer("rnn", 8, 4, repeats=0)
