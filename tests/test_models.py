"""Tests for attnlib.models: shapes, parity with the numpy core, masking, decoders, errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlib.core as core
from attnlib.models import (
    AdditiveAttention,
    BiGRUEncoder,
    EmbeddingEncoder,
    MultiplicativeAttention,
    Seq2Seq,
    make_seq2seq,
    reverse_within,
)
from attnlib.tasks import BOS_ID, EOS_ID, PAD_ID
from conftest import TINY

V_SRC, V_TGT = 13, 11


def _lengths_mask(lengths: list[int], T_x: int) -> torch.Tensor:
    return torch.arange(T_x)[None, :] < torch.tensor(lengths)[:, None]


def _src(lengths: list[int], seed: int = 0, vocab: int = V_SRC) -> torch.Tensor:
    """A padded batch: random real ids, then <eos>, then <pad>."""
    g = torch.Generator().manual_seed(seed)
    T = max(lengths) + 1
    src = torch.full((len(lengths), T), PAD_ID)
    for b, n in enumerate(lengths):
        src[b, :n] = torch.randint(3, vocab, (n,), generator=g)
        src[b, n] = EOS_ID
    return src


# --------------------------------------------------------------------------- attention
@settings(max_examples=15, deadline=None)
@given(
    B=st.integers(1, 4),
    T_x=st.integers(1, 9),
    d_s=st.integers(1, 6),
    d_h=st.integers(1, 6),
    d_a=st.integers(1, 6),
)
def test_additive_attention_shapes_and_weights(
    B: int, T_x: int, d_s: int, d_h: int, d_a: int
) -> None:
    torch.manual_seed(0)
    attn = AdditiveAttention(d_s, d_h, d_a)
    c, alpha = attn(torch.randn(B, d_s), torch.randn(B, T_x, d_h))
    assert c.shape == (B, d_h)
    assert alpha.shape == (B, T_x)
    assert torch.all(alpha >= 0)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(B))


def test_weights_have_the_course_shapes() -> None:
    attn = AdditiveAttention(d_s=5, d_h=8, d_a=3)
    assert attn.W_a.weight.shape == (3, 5)
    assert attn.U_a.weight.shape == (3, 8)
    assert attn.v_a.weight.shape == (1, 3)
    assert attn.W_a.bias is None
    assert attn.U_a.bias is None
    assert attn.v_a.bias is None


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), T_x=st.integers(1, 8), n_pad=st.integers(0, 3))
def test_additive_parity_with_numpy_core(
    dtype: torch.dtype, seed: int, T_x: int, n_pad: int
) -> None:
    g = torch.Generator().manual_seed(seed)
    attn = AdditiveAttention(4, 6, 5).to(dtype)
    with torch.no_grad():
        for p in attn.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=dtype))
    B = 3
    s_prev = torch.randn(B, 4, generator=g, dtype=dtype)
    h = torch.randn(B, T_x + n_pad, 6, generator=g, dtype=dtype)
    mask = _lengths_mask([T_x, max(1, T_x - 1), T_x], T_x + n_pad)
    with torch.no_grad():
        c, alpha = attn(s_prev, h, mask)
        e = attn.scores(s_prev, attn.precompute(h))
    W_a, U_a, v_a = (
        w.detach().numpy() for w in (attn.W_a.weight, attn.U_a.weight, attn.v_a.weight[0])
    )
    ref = core.attend(s_prev.numpy(), h.numpy(), W_a, U_a, v_a, mask=mask.numpy())
    np.testing.assert_allclose(
        e.numpy(), core.additive_scores(s_prev.numpy(), h.numpy(), W_a, U_a, v_a), atol=1e-5
    )
    np.testing.assert_allclose(alpha.numpy(), ref.alpha, atol=1e-6, rtol=0)
    np.testing.assert_allclose(c.numpy(), ref.c, atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", ["general", "dot"])
def test_multiplicative_parity_with_numpy_core(kind: str) -> None:
    torch.manual_seed(1)
    attn = MultiplicativeAttention(5, 5, kind=kind).double()
    s, h = torch.randn(2, 5, dtype=torch.float64), torch.randn(2, 7, 5, dtype=torch.float64)
    with torch.no_grad():
        c, alpha = attn(s, h)
    if kind == "general":
        e = core.multiplicative_scores(s.numpy(), h.numpy(), attn.W_a.weight.detach().numpy())
    else:
        e = core.dot_scores(s.numpy(), h.numpy())
    np.testing.assert_allclose(alpha.numpy(), core.softmax(e), atol=1e-6, rtol=0)
    np.testing.assert_allclose(c.numpy(), core.context(core.softmax(e), h.numpy()), atol=1e-6)


def test_multiplicative_general_allows_d_s_different_from_d_h() -> None:
    attn = MultiplicativeAttention(4, 9)
    assert attn.W_a.weight.shape == (4, 9)
    c, alpha = attn(torch.randn(2, 4), torch.randn(2, 3, 9))
    assert c.shape == (2, 9)
    assert alpha.shape == (2, 3)


@pytest.mark.parametrize("attn", [AdditiveAttention(3, 4, 5), MultiplicativeAttention(3, 4)])
def test_pads_get_exactly_zero_weight(attn: torch.nn.Module) -> None:
    torch.manual_seed(2)
    h = torch.randn(3, 6, 4) * 50  # large scores: a mask done by subtracting a constant would leak
    mask = _lengths_mask([6, 2, 1], 6)
    _, alpha = attn(torch.randn(3, 3) * 50, h, mask)
    assert torch.all(alpha[~mask] == 0.0)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(3))
    assert alpha[2, 0] == 1.0


def test_precomputed_keys_give_the_same_step() -> None:
    torch.manual_seed(3)
    attn = AdditiveAttention(3, 4, 5)
    s, h = torch.randn(2, 3), torch.randn(2, 6, 4)
    keys = attn.precompute(h)
    assert keys.shape == (2, 6, 5)
    c1, a1 = attn(s, h)
    c2, a2 = attn(s, h, keys=keys)
    assert torch.equal(a1, a2)
    assert torch.equal(c1, c2)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda a: a(torch.randn(2, 32), torch.randn(2, 5, 8)), ValueError,
         r"AdditiveAttention expects d_s=64 components in s_prev, got 32"),
        (lambda a: a(torch.randn(2, 64), torch.randn(2, 5, 9)), ValueError,
         r"expects d_h=8 components in h, got 9"),
        (lambda a: a(torch.randn(64), torch.randn(2, 5, 8)), ValueError,
         r"s_prev of shape \(B, d_s=64\), got shape \(64,\)"),
        (lambda a: a(torch.randn(2, 64), torch.randn(2, 0, 8)), ValueError, r"T_x = 0"),
        (lambda a: a(torch.randn(3, 64), torch.randn(2, 5, 8)), ValueError,
         r"3 decoder states but 2 sources"),
        (lambda a: a(torch.randn(2, 64), torch.randn(2, 5, 8), torch.ones(2, 5)), TypeError,
         r"bool tensor"),
        (lambda a: a(torch.randn(2, 64), torch.randn(2, 5, 8), torch.ones(2, 4, dtype=torch.bool)),
         ValueError, r"mask of shape \(B, T_x\) = \(2, 5\), got \(2, 4\)"),
        (lambda a: a(torch.randn(2, 64), torch.randn(2, 5, 8), _lengths_mask([3, 0], 5)),
         ValueError, r"no position to attend to .* batch index 1"),
        (lambda a: a(torch.randn(2, 64), torch.randn(2, 5, 8), keys=torch.randn(2, 5, 3)),
         ValueError, r"keys = U_a h of shape \(B, T_x, d_a\) = \(2, 5, 16\)"),
        (lambda a: a([0.0] * 64, torch.randn(2, 5, 8)), TypeError, r"torch.Tensor"),
    ],
)  # fmt: skip
def test_attention_errors_name_what_was_expected(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call(AdditiveAttention(d_s=64, d_h=8, d_a=16))


def test_dot_score_needs_equal_sizes() -> None:
    with pytest.raises(ValueError, match=r"d_s = d_h, but d_s=4 and d_h=6"):
        MultiplicativeAttention(4, 6, kind="dot")


@pytest.mark.parametrize("bad", [0, -1, 2.5])
def test_attention_sizes_are_checked(bad: float) -> None:
    with pytest.raises(ValueError, match="d_a ≥ 1"):
        AdditiveAttention(3, 4, bad)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- encoders
def test_reverse_within_keeps_padding_in_place() -> None:
    x = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0]])
    out = reverse_within(x, torch.tensor([3, 2]))
    assert out.tolist() == [[3, 2, 1, 0], [5, 4, 0, 0]]
    assert torch.equal(reverse_within(out, torch.tensor([3, 2])), x)


def test_bigru_encoder_matches_torch_packed_bidirectional_gru() -> None:
    """An independent reference: nn.GRU(bidirectional=True) on a packed batch."""
    torch.manual_seed(4)
    enc = BiGRUEncoder(V_SRC, emb=5, hidden=4)
    ref = torch.nn.GRU(5, 4, batch_first=True, bidirectional=True)
    with torch.no_grad():
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            getattr(ref, name).copy_(getattr(enc.gru_forward, name))
            getattr(ref, name + "_reverse").copy_(getattr(enc.gru_backward, name))
    lengths = [6, 2, 4, 1]
    src = _src(lengths)[:, :-1]  # drop the last column: rows are only real tokens and pads
    src = torch.where(src == EOS_ID, torch.full_like(src, PAD_ID), src)
    L = torch.tensor(lengths)
    with torch.no_grad():
        h, final = enc(src, L)
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            enc.embedding(src), L, batch_first=True, enforce_sorted=False
        )
        out, h_n = ref(packed)
        h_ref, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
    assert h.shape == (4, 6, 8)
    torch.testing.assert_close(h, h_ref, atol=1e-6, rtol=0)
    torch.testing.assert_close(final, torch.cat([h_n[0], h_n[1]], -1), atol=1e-6, rtol=0)


@pytest.mark.parametrize("encoder", ["birnn", "embedding"])
def test_pad_tokens_never_reach_h_or_the_final_state(encoder: str) -> None:
    model = make_seq2seq(V_SRC, V_TGT, encoder=encoder, **TINY)
    src = _src([5, 2, 3])
    with torch.no_grad():
        h1, f1, mask = model.encode(src)
        # Whatever the <pad> embedding holds, nothing real changes...
        model.encoder.embedding.weight[PAD_ID] = torch.randn(TINY["emb"]) * 10
        h2, f2, _ = model.encode(src)
        # ...and neither does extra padding.
        longer = torch.cat([src, torch.zeros(3, 4, dtype=torch.long)], dim=1)
        h3, f3, _ = model.encode(longer)
    assert torch.equal(h1, h2)
    assert torch.equal(f1, f2)
    assert torch.all(h1[~mask] == 0)
    torch.testing.assert_close(h3[:, : src.shape[1]], h1, atol=1e-6, rtol=0)
    torch.testing.assert_close(f3, f1, atol=1e-6, rtol=0)


def test_d_h_is_twice_the_encoder_size_and_differs_from_d_s() -> None:
    model = make_seq2seq(V_SRC, V_TGT)  # the course's default sizes
    d_h, d_s, d_a = model.encoder.d_h, model.decoder.d_s, model.attention.d_a
    assert d_h == 2 * model.encoder.gru_forward.hidden_size
    assert len({d_h, d_s, d_a}) == 3  # three different sizes: a shape slip cannot hide
    assert model.attention.U_a.weight.shape == (d_a, d_h)
    assert model.attention.W_a.weight.shape == (d_a, d_s)
    model = make_seq2seq(V_SRC, V_TGT, hidden=24, d_s=64, d_a=32)
    h, _, _ = model.encode(_src([3]))
    assert h.shape[-1] == 48
    assert model.attention.W_a.weight.shape == (32, 64)
    assert isinstance(make_seq2seq(V_SRC, V_TGT, encoder="embedding").encoder, EmbeddingEncoder)


# --------------------------------------------------------------------------- decoders
def _manual_first_alpha(model: Seq2Seq, src: torch.Tensor) -> torch.Tensor:
    dec = model.decoder
    h, final, mask = model.encode(src)
    s0 = torch.tanh(dec.W_s(final))
    if model.config.decoder == "luong":  # scores use s_1 = GRU(E <bos> ; h̃_0 = 0, s_0)
        y = dec.embedding(torch.full((src.shape[0],), BOS_ID))
        query = dec.cell(torch.cat([y, torch.zeros_like(s0)], -1), s0)
    else:  # Bahdanau: scores use s_0
        query = s0
    return model.attention(query, h, mask)[1]


@pytest.mark.parametrize("decoder", ["bahdanau", "luong"])
def test_which_state_queries_the_attention(decoder: str) -> None:
    model = make_seq2seq(V_SRC, V_TGT, decoder=decoder, seed=5, **TINY)
    src = _src([4, 6])
    tgt_in = torch.tensor([[BOS_ID, 5, 6], [BOS_ID, 7, 8]])
    with torch.no_grad():
        _, alpha = model(src, tgt_in)
        expected = _manual_first_alpha(model, src)
    torch.testing.assert_close(alpha[:, 0], expected, atol=1e-6, rtol=0)


def _states(model: Seq2Seq, src: torch.Tensor, ys: tuple[int, ...] = (BOS_ID, 4, 5, 6)) -> tuple:
    """Decoder states and logits under teacher forcing with fixed inputs ``ys``."""
    dec = model.decoder
    h, final, mask = model.encode(src)
    mem = dec.memory(h, final, mask)
    s = dec.init_state(final)
    states, logits = [], []
    for y in ys:
        out, s, _ = dec.step(torch.full((src.shape[0],), y), s, mem)
        states.append(s)
        logits.append(out)
    return states, logits


@pytest.mark.parametrize(
    ("context_in", "state_sees_c"), [("both", True), ("state", True), ("output", False)]
)
def test_where_c_t_enters(context_in: str, state_sees_c: bool) -> None:
    """Changing v_a changes α and c_t but not s_0: the states move only if c_t enters them."""
    model = make_seq2seq(V_SRC, V_TGT, context_in=context_in, seed=6, **TINY)
    src = _src([5, 3])
    with torch.no_grad():
        s1, l1 = _states(model, src)
        model.attention.v_a.weight.mul_(-3.0)
        s2, l2 = _states(model, src)
    assert any(not torch.equal(a, b) for a, b in zip(s1, s2, strict=True)) == state_sees_c
    assert not torch.equal(l1[0], l2[0])  # the output sees c_t either way (c_1 in "state" via s_1)


def test_no_attention_baseline_sees_only_the_final_state(monkeypatch: pytest.MonkeyPatch) -> None:
    src, tgt_in = _src([5, 3]), torch.tensor([[BOS_ID, 4, 5], [BOS_ID, 6, 7]])
    for decoder, blind in (("none", True), ("bahdanau", False)):
        model = make_seq2seq(V_SRC, V_TGT, decoder=decoder, seed=7, **TINY)
        with torch.no_grad():
            logits1, alpha = model(src, tgt_in)
            enc_forward = model.encoder.forward
            # keep the final state, scramble every h_i
            monkeypatch.setattr(
                model.encoder,
                "forward",
                lambda s, n, f=enc_forward: (torch.randn_like(f(s, n)[0]), f(s, n)[1]),
            )
            logits2, _ = model(src, tgt_in)
        assert torch.equal(logits1, logits2) == blind
        assert (alpha is None) == blind
        assert model.has_attention != blind


@pytest.mark.parametrize("kw", [{}, {"decoder": "luong"}, {"decoder": "none"}, {"encoder": "embedding"},
                                {"decoder": "luong", "input_feeding": False}, {"score": "general"}])  # fmt: skip
def test_seq2seq_shapes(kw: dict) -> None:
    model = make_seq2seq(V_SRC, V_TGT, **{**TINY, **kw})
    src = _src([4, 7, 1])
    tgt_in = torch.randint(3, V_TGT, (3, 5))
    tgt_in[:, 0] = BOS_ID
    logits, alpha = model(src, tgt_in)
    assert logits.shape == (3, 5, V_TGT)
    if kw.get("decoder") == "none":
        assert alpha is None
    else:
        assert alpha.shape == (3, 5, 8)
        mask = src != PAD_ID
        assert torch.all(alpha[~mask.unsqueeze(1).expand_as(alpha)] == 0)


def test_greedy_stops_at_eos_and_returns_alpha_per_step() -> None:
    torch.manual_seed(0)
    model = make_seq2seq(V_SRC, V_TGT, seed=8, **TINY)
    with torch.no_grad():  # make <eos> the most probable token from the first step
        model.decoder.W_y.bias[EOS_ID] = 50.0
    src = _src([3, 6])
    tokens, alpha = model.greedy(src, max_len=9)
    assert tokens.shape[0] == 2
    assert torch.all(tokens[:, 0] == EOS_ID)
    assert tokens.shape[1] == 1  # everyone finished: decoding stopped early
    assert alpha.shape == (2, 1, src.shape[1])
    torch.testing.assert_close(alpha.sum(-1), torch.ones(2, 1))


def test_greedy_pads_after_eos() -> None:
    model = make_seq2seq(V_SRC, V_TGT, seed=9, **TINY)
    tokens, alpha = model.greedy(_src([4, 2, 6]), max_len=12)
    for row, a in zip(tokens, alpha, strict=True):
        ends = (row == EOS_ID).nonzero()
        if len(ends):
            k = int(ends[0])
            assert torch.all(row[k + 1 :] == PAD_ID)
            assert torch.all(a[k + 1 :] == 0)


def test_greedy_never_generates_pad_or_bos() -> None:
    model = make_seq2seq(V_SRC, V_TGT, seed=9, **TINY)
    with torch.no_grad():
        model.decoder.W_y.bias[PAD_ID] = 100.0
        model.decoder.W_y.bias[BOS_ID] = 90.0
        model.decoder.W_y.bias[EOS_ID] = -100.0
    tokens, _ = model.greedy(_src([4, 2]), max_len=5)
    assert tokens.shape == (2, 5)
    assert torch.all(tokens > EOS_ID)  # ordinary tokens, although <pad> and <bos> score highest


def test_reusing_keys_changes_nothing_but_the_cost() -> None:
    model = make_seq2seq(V_SRC, V_TGT, seed=10, **TINY)
    src = _src([7, 3])
    dec = model.decoder
    with torch.no_grad():
        h, final, mask = model.encode(src)
        mem = dec.memory(h, final, mask)
        assert mem.keys is not None  # U_a h, computed once for the whole output
        outputs = []
        for m in (mem, dataclasses.replace(mem, keys=None)):  # None: recomputed every step
            s, y, steps = dec.init_state(final), torch.full((2,), BOS_ID), []
            for _ in range(6):
                logits, s, alpha = dec.step(y, s, m)
                y = logits.argmax(-1)
                steps.append((logits, alpha))
            outputs.append(steps)
    for (l1, a1), (l2, a2) in zip(*outputs, strict=True):
        torch.testing.assert_close(l1, l2, rtol=0, atol=1e-6)
        torch.testing.assert_close(a1, a2, rtol=0, atol=1e-6)


# --------------------------------------------------------------------------- the score-edit seam
@pytest.mark.parametrize("decoder", ["bahdanau", "luong"])
def test_a_score_edit_decides_alpha_in_greedy_and_teacher_forcing(decoder) -> None:
    model = make_seq2seq(V_SRC, V_TGT, decoder=decoder, seed=13, **TINY)
    src = _src([6, 3])
    seen = []

    def to_last(e, *, query, mask):  # all weight on the last real position (<eos>)
        seen.append((e.shape, query.shape, mask.clone()))
        last = mask.sum(dim=1, keepdim=True) - 1
        out = torch.full_like(e, -1e4).scatter(1, last, 0.0)
        return out.masked_fill(~mask, 1e4)  # a pad's high score must still get α = 0

    with torch.no_grad():
        _, alpha = model.greedy(src, max_len=4, edit=to_last)
        _, tf_alpha = model(src, _src([4, 4], vocab=V_TGT), edit=to_last)
    # src rows: 6 tokens + <eos> (T_x = 7), and 3 tokens + <eos> + 3 pads
    for a in (alpha[:, :1], tf_alpha):  # greedy: step 1 (later rows stop at <eos>); all of TF
        assert torch.allclose(a[0, :, 6], torch.ones(a.shape[1]))
        assert torch.allclose(a[1, :, 3], torch.ones(a.shape[1]))
        assert torch.all(a[1, :, 4:] == 0)
    assert seen[0][0] == (2, 7)
    assert seen[0][1] == (2, model.decoder.d_s)
    assert torch.equal(seen[0][2], src != PAD_ID)
    # without the edit the same model spreads its weight: the edit made the difference
    with torch.no_grad():
        _, free = model.greedy(src, max_len=4)
    assert not torch.allclose(free[0, :1, 6], torch.ones(1))


def test_a_model_without_attention_refuses_a_score_edit() -> None:
    model = make_seq2seq(V_SRC, V_TGT, decoder="none", seed=13, **TINY)
    with pytest.raises(ValueError, match="no attention to intervene on"):
        model.greedy(_src([3]), edit=lambda e, *, query, mask: e)


# --------------------------------------------------------------------------- determinism
def test_same_seed_same_weights_other_seed_other_weights() -> None:
    a = make_seq2seq(V_SRC, V_TGT, seed=11)
    b = make_seq2seq(V_SRC, V_TGT, seed=11)
    c = make_seq2seq(V_SRC, V_TGT, seed=12)
    for (k, x), y, z in zip(
        a.state_dict().items(), b.state_dict().values(), c.state_dict().values(), strict=True
    ):
        assert torch.equal(x, y), k
        if x.numel() > 1 and "bias_hh" not in k and k != "decoder.embedding.weight":
            assert not torch.equal(x, z), k
    src = _src([5, 2])
    assert torch.equal(a.greedy(src)[0], b.greedy(src)[0])


def test_building_a_model_leaves_the_global_rng_alone() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    make_seq2seq(V_SRC, V_TGT, seed=0)
    assert torch.equal(torch.rand(3), expected)


def test_from_config_rebuilds_the_same_model() -> None:
    a = make_seq2seq(V_SRC, V_TGT, decoder="luong", seed=3, **TINY)
    b = Seq2Seq.from_config(a.config)
    assert b.config == a.config
    assert Seq2Seq.from_config(a.config.as_dict()).config == a.config
    for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True):
        assert torch.equal(x, y)


# --------------------------------------------------------------------------- bad input
@pytest.fixture(scope="module")
def tiny_model() -> Seq2Seq:
    return make_seq2seq(V_SRC, V_TGT, **TINY)


@pytest.mark.parametrize(
    ("src", "error", "message"),
    [
        (torch.tensor([[3, 4, 13, 2]]), ValueError,
         r"src has token id 13 at \(batch 0, position 2\), outside the vocabulary of 13 ids \(0 … 12\)"),
        (torch.tensor([[3, -1, 2]]), ValueError, r"token id -1"),
        (torch.tensor([[3, 2], [0, 0]]), ValueError, r"src row 1 is empty"),
        (torch.zeros((2, 0), dtype=torch.long), ValueError, r"src is empty"),
        (torch.zeros((0, 3), dtype=torch.long), ValueError, r"src is empty"),
        (torch.tensor([[3, 0, 4, 2]]), ValueError, r"<pad> \(id 0\) before a real token"),
        (torch.tensor([[3.0, 2.0]]), TypeError, r"integer token ids"),
        (torch.tensor([3, 2]), ValueError, r"shape \(B, T\)"),
        ([[3, 2]], TypeError, r"torch.Tensor"),
    ],
)  # fmt: skip
def test_bad_sources_are_clear_errors(tiny_model: Seq2Seq, src, error, message) -> None:
    with pytest.raises(error, match=message):
        tiny_model.greedy(src)


def test_bad_targets_are_clear_errors(tiny_model: Seq2Seq) -> None:
    with pytest.raises(ValueError, match=r"tgt_in has token id 11 .* vocabulary of 11 ids"):
        tiny_model(_src([3]), torch.tensor([[BOS_ID, 11]]))
    with pytest.raises(ValueError, match=r"src has 2 sequences but tgt_in has 1"):
        tiny_model(_src([3, 2]), torch.tensor([[BOS_ID, 4]]))


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"decoder": "transformer"}, "decoder must be"),
        ({"encoder": "cnn"}, "encoder must be"),
        ({"context_in": "nowhere"}, "context_in must be"),
        ({"score": "cosine"}, "score must be"),
        ({"d_s": 0}, "d_s must be a whole number"),
        ({"decoder": "luong", "score": "dot", "hidden": 16}, r"d_s = d_h, but d_s=48 and d_h=32"),
    ],
)
def test_make_seq2seq_checks_its_arguments(kw: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_seq2seq(V_SRC, V_TGT, **kw)


def test_luong_dot_score_works_when_d_h_equals_d_s() -> None:
    model = make_seq2seq(V_SRC, V_TGT, decoder="luong", score="dot", hidden=32, d_s=64)
    assert model.attention.W_a is None
    assert model.greedy(_src([3]), max_len=2)[1].shape[-1] == 4


def test_vocab_sizes_are_checked() -> None:
    with pytest.raises(ValueError, match="more than 3 ids"):
        make_seq2seq(3, 10)


def test_docstring_examples_run() -> None:
    import doctest

    import attnlib.models

    result = doctest.testmod(attnlib.models)
    assert result.attempted > 0
    assert result.failed == 0


# --------------------------------------------------------------------------- s_0
@pytest.mark.parametrize("decoder", ["bahdanau", "luong", "none"])
def test_s0_backward_reads_only_the_backward_state(decoder: str) -> None:
    """Bahdanau et al.'s s_0 = tanh(W_s ←h_1 + b_s): the forward half of final cannot move it."""
    model = make_seq2seq(V_SRC, V_TGT, decoder=decoder, s0="backward", hidden=8, seed=3)
    dec = model.decoder
    assert dec.W_s.in_features == 8  # ←h_1 only, not [→h_L; ←h_1]
    final = torch.randn(2, 16)
    moved = final.clone()
    moved[:, :8] += 5.0  # change →h_L only
    assert torch.equal(dec.init_state(final), dec.init_state(moved))
    changed = final.clone()
    changed[:, 8:] += 5.0  # change ←h_1
    assert not torch.allclose(dec.init_state(final), dec.init_state(changed))
    want = torch.tanh(final[:, 8:] @ dec.W_s.weight.T + dec.W_s.bias)
    assert torch.allclose(dec.init_state(final)[:, : dec.d_s], want)


def test_s0_final_is_the_default_and_reads_both_directions() -> None:
    model = make_seq2seq(V_SRC, V_TGT, hidden=8, seed=3)
    assert model.config.s0 == "final"
    assert model.decoder.W_s.in_features == 16
    final = torch.randn(2, 16)
    moved = final.clone()
    moved[:, :8] += 5.0
    assert not torch.allclose(model.decoder.init_state(final), model.decoder.init_state(moved))


def test_s0_choices_are_checked() -> None:
    with pytest.raises(ValueError, match="s0 must be 'final' or 'backward'"):
        make_seq2seq(V_SRC, V_TGT, s0="forward")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="only the bidirectional encoder"):
        make_seq2seq(V_SRC, V_TGT, encoder="embedding", s0="backward")
    model = make_seq2seq(V_SRC, V_TGT, s0="backward", seed=1)
    again = Seq2Seq.from_config(model.config)  # the checkpoint path keeps the choice
    assert again.decoder.s0 == "backward"
    for k, v in model.state_dict().items():
        assert torch.equal(v, again.state_dict()[k])


@pytest.mark.parametrize("decoder", ["bahdanau", "luong", "none"])
def test_keep_runs_the_output_layer_only_where_asked(decoder: str) -> None:
    """``keep=`` gives the rows ``logits[keep]`` of the full run, and the same α and gradients."""
    model = make_seq2seq(V_SRC, V_TGT, decoder=decoder, seed=11, **TINY)
    src = _src([5, 2, 4])
    tgt_in = torch.tensor([[BOS_ID, 5, 6, 7], [BOS_ID, 8, PAD_ID, PAD_ID], [BOS_ID, 4, 9, PAD_ID]])
    tgt_out = torch.tensor([[5, 6, 7, EOS_ID], [8, EOS_ID, PAD_ID, PAD_ID], [4, 9, EOS_ID, PAD_ID]])
    keep = tgt_out != PAD_ID
    full, alpha_full = model(src, tgt_in)
    kept, alpha_kept = model(src, tgt_in, keep=keep)
    assert kept.shape == (int(keep.sum()), V_TGT)
    torch.testing.assert_close(kept, full[keep], atol=1e-6, rtol=1e-6)
    if alpha_full is None:
        assert alpha_kept is None
    else:
        torch.testing.assert_close(alpha_kept, alpha_full, atol=0, rtol=0)
    # The loss over the real tokens and its gradient do not depend on which way it was computed.
    grads = []
    for logits, target in ((full.flatten(0, 1), tgt_out.flatten()), (kept, tgt_out[keep])):
        model.zero_grad()
        torch.nn.functional.cross_entropy(logits, target, ignore_index=PAD_ID).backward(
            retain_graph=True
        )
        grads.append([p.grad.clone() for p in model.parameters() if p.grad is not None])
    assert len(grads[0]) == len(grads[1]) > 0
    for g_full, g_kept in zip(*grads, strict=True):
        torch.testing.assert_close(g_kept, g_full, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize(
    "keep",
    [
        torch.ones(2, 4, dtype=torch.bool),
        torch.ones(2, 3),
        torch.ones(3, 3, dtype=torch.bool),
        [1, 1],
    ],
    ids=["wrong T_y", "not bool", "wrong B", "not a tensor"],
)
def test_keep_must_be_a_bool_mask_like_tgt_in(keep: object) -> None:
    model = make_seq2seq(V_SRC, V_TGT, seed=12, **TINY)
    tgt_in = torch.tensor([[BOS_ID, 5, 6], [BOS_ID, 7, 8]])
    with pytest.raises(
        ValueError, match=r"keep must be a bool mask of shape \(B, T_y\) = \(2, 3\)"
    ):
        model(_src([4, 6]), tgt_in, keep=keep)
