"""Tests of the fast paths of decoding: they must give what the general paths give.

The references are the general code paths themselves, run on the same inputs: the beam search
with k = 1 (``decoding._search``), a greedy loop written here the way ``Seq2Seq.greedy`` was
written before it was sped up (every step masked and argmaxed over the whole vocabulary), the
encoder's padded path (taken whenever gradients are on), and attention with an explicit mask.
The one-sentence path is ``attnlib._decoding_fast``, the private module beside
``attnlib.decoding`` that rearranges the course model's arithmetic for one sentence.
Equality is exact (``torch.equal``, ``==`` on floats) wherever the two paths do the same
arithmetic; ``torch.logsumexp`` is met up to rounding, and so is the one-sentence path of
``beam_search`` with k = 1 (the translate widget's), which rearranges the course model's
arithmetic for a single sentence: there the tokens must be the same and the numbers within
float32 rounding.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor

from attnlib import decoding
from attnlib.decoding import beam_search
from attnlib.models import AdditiveAttention, MultiplicativeAttention, Seq2Seq, make_seq2seq
from attnlib.vocab import BOS_ID, EOS_ID, PAD_ID
from conftest import TINY

V_SRC, V_TGT = 13, 11
DECODERS = ("bahdanau", "luong", "none")
lengths_st = st.lists(st.integers(1, 6), min_size=1, max_size=4)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _src(lengths: list[int], seed: int = 0) -> Tensor:
    """A padded batch: random real ids, then <eos>, then <pad>."""
    g = torch.Generator().manual_seed(seed)
    src = torch.full((len(lengths), max(lengths) + 1), PAD_ID)
    for b, n in enumerate(lengths):
        src[b, :n] = torch.randint(3, V_SRC, (n,), generator=g)
        src[b, n] = EOS_ID
    return src


def _model(decoder: str = "bahdanau", seed: int = 0) -> Seq2Seq:
    """A tiny untrained model with a sharpened output layer (outputs of varied lengths)."""
    model = make_seq2seq(V_SRC, V_TGT, decoder=decoder, seed=seed, **TINY)  # type: ignore[arg-type]
    with torch.no_grad():
        model.decoder.W_y.weight.mul_(4.0)
        model.decoder.W_y.bias.mul_(4.0)
    return model.eval()


def _general_k1(model: Seq2Seq, src: Tensor, **kw: object) -> list[decoding.Decoded]:
    """The general beam search with k = 1, bypassing the k = 1 fast path."""
    max_len = kw.get("max_len")
    length_alpha = float(kw.get("length_alpha", 0.6))  # type: ignore[arg-type]
    ret = bool(kw.get("return_attention", True))
    with torch.no_grad():
        return decoding._search(model, src, 1, max_len, length_alpha, ret)  # type: ignore[arg-type]


def _old_greedy(model: Seq2Seq, src: Tensor, max_len: int) -> tuple[Tensor, Tensor | None]:
    """Greedy decoding as Seq2Seq.greedy did it before: -inf on <pad>/<bos>, mask every step."""
    with torch.no_grad():
        h, final, mask = model.encode(src)
        mem = model.decoder.memory(h, final, mask)
        s = model.decoder.init_state(final)
        B = src.shape[0]
        y = torch.full((B,), BOS_ID, dtype=torch.long)
        done = torch.zeros(B, dtype=torch.bool)
        never = torch.zeros(model.tgt_vocab_size)
        never[[PAD_ID, BOS_ID]] = float("-inf")
        tokens, alphas = [], []
        for _ in range(max_len):
            logits, s, alpha = model.decoder.step(y, s, mem)
            y = (logits + never).argmax(dim=-1).masked_fill(done, PAD_ID)
            tokens.append(y)
            if alpha is not None:
                alphas.append(alpha.masked_fill(done.unsqueeze(1), 0.0))
            done = done | (y == EOS_ID)
            if bool(done.all()):
                break
    return torch.stack(tokens, 1), (torch.stack(alphas, 1) if alphas else None)


def _same(a: decoding.Decoded, b: decoding.Decoded) -> None:
    assert len(a.kbest) == len(b.kbest) == 1
    assert a.tokens == b.tokens
    assert a.finished == b.finished
    assert a.log_prob == b.log_prob  # summed in the same order: bit for bit
    assert a.score == b.score
    if a.alpha is None or b.alpha is None:
        assert a.alpha is None
        assert b.alpha is None
    else:
        assert torch.equal(a.alpha, b.alpha)


def _close(a: decoding.Decoded, b: decoding.Decoded, tol: float = 1e-5) -> None:
    """``_same`` up to float32 rounding: the one-sentence path sums in another order."""
    assert len(a.kbest) == len(b.kbest) == 1
    assert a.tokens == b.tokens
    assert a.finished == b.finished
    assert a.log_prob == pytest.approx(b.log_prob, rel=tol, abs=tol)
    assert a.score == pytest.approx(b.score, rel=tol, abs=tol)
    if a.alpha is None or b.alpha is None:
        assert a.alpha is None
        assert b.alpha is None
    else:
        assert a.alpha.shape == b.alpha.shape
        torch.testing.assert_close(a.alpha, b.alpha, rtol=0, atol=tol)


def _one_sentence_path(model: Seq2Seq, src: Tensor) -> bool:
    return bool(decoding._fast_applies(model, src))


# --------------------------------------------------------------------------- k = 1 fast path
@pytest.mark.parametrize("decoder", DECODERS)
@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    lengths=lengths_st,
    max_len=st.one_of(st.none(), st.integers(1, 9)),
    length_alpha=st.sampled_from([0.0, 0.6, 1.3]),
)
def test_k1_fast_path_is_the_general_search_with_k1(
    decoder: str, seed: int, lengths: list[int], max_len: int | None, length_alpha: float
) -> None:
    model = _model(decoder, seed)
    src = _src(lengths, seed)
    fast = beam_search(model, src, k=1, max_len=max_len, length_alpha=length_alpha)
    slow = _general_k1(model, src, max_len=max_len, length_alpha=length_alpha)
    assert len(fast) == len(slow) == len(lengths)
    # one sentence of the course's Bahdanau model: the one-sentence path, equal up to rounding
    assert _one_sentence_path(model, src) == (len(lengths) == 1 and decoder == "bahdanau")
    check = _close if _one_sentence_path(model, src) else _same
    for a, b in zip(fast, slow, strict=True):
        check(a, b)


def test_k1_fast_path_without_attention_returns_no_alpha() -> None:
    model, src = _model("bahdanau", 4), _src([3, 1, 5], 4)
    fast = beam_search(model, src, k=1, return_attention=False)
    slow = _general_k1(model, src, return_attention=False)
    for a, b in zip(fast, slow, strict=True):
        _same(a, b)
        assert a.alpha is None


@pytest.mark.parametrize("max_len", [1, 14])
@pytest.mark.parametrize("lengths", [[4, 2, 6], [5]])
def test_k1_cuts_unfinished_outputs_at_max_len_like_the_general_search(
    max_len: int, lengths: list[int]
) -> None:
    for seed in range(4):
        model, src = _model("bahdanau", seed), _src(lengths, seed)
        beam_search(model, src, k=1)  # the one-sentence path lays out the weights once ...
        with torch.no_grad():
            model.decoder.W_y.bias[EOS_ID] = -1e4  # ... then never <eos>: every output is cut
        fast = beam_search(model, src, k=1, max_len=max_len)
        check = _close if _one_sentence_path(model, src) else _same
        for a, b in zip(fast, _general_k1(model, src, max_len=max_len), strict=True):
            check(a, b)
            assert not a.finished
            assert a.best.steps == max_len


# --------------------------------------------------------------------------- one sentence
def test_one_sentence_path_is_taken_only_for_the_course_model_on_one_sentence() -> None:
    model = _model("bahdanau", 1)
    assert _one_sentence_path(model, _src([3]))
    assert not _one_sentence_path(model, _src([3, 2]))  # a batch: the general path
    for other in ("luong", "none"):
        assert not _one_sentence_path(_model(other, 1), _src([3]))
    dot = make_seq2seq(V_SRC, V_TGT, score="dot", seed=1, emb=8, hidden=5, d_s=10, d_a=7)
    assert not _one_sentence_path(dot, _src([3]))
    plain = make_seq2seq(V_SRC, V_TGT, encoder="embedding", seed=1, **TINY)  # type: ignore[arg-type]
    assert not _one_sentence_path(plain, _src([3]))
    patched = _model("bahdanau", 1)
    patched.decoder.step = patched.decoder.step  # type: ignore[method-assign]
    assert not _one_sentence_path(patched, _src([3]))


@pytest.mark.parametrize("s0", ["final", "backward"])
@pytest.mark.parametrize("seed", range(6))
def test_one_sentence_path_gives_the_batched_result(s0: str, seed: int) -> None:
    """Each sentence alone (one-sentence path) against the same sentences in one batch."""
    model = make_seq2seq(V_SRC, V_TGT, seed=seed, s0=s0, **TINY)  # type: ignore[arg-type]
    with torch.no_grad():
        model.decoder.W_y.weight.mul_(4.0)
    lengths = [1, 3, 6, 2]
    src = _src(lengths, seed)
    batched = beam_search(model.eval(), src, k=1)
    for b, n in enumerate(lengths):
        one = src[b : b + 1, : n + 1]  # its own length: no padding
        assert _one_sentence_path(model, one)
        [alone] = beam_search(model, one, k=1)
        _close(alone, batched[b])
        padded = src[b : b + 1]  # the same sentence with the batch's trailing <pad>
        [alone_padded] = beam_search(model, padded, k=1)
        _close(alone_padded, batched[b])


def test_one_sentence_path_follows_every_change_of_the_weights() -> None:
    model, src = _model("bahdanau", 2), _src([4], 2)
    before = beam_search(model, src, k=1)[0]
    # in place (what an optimiser step and load_state_dict do)
    with torch.no_grad():
        model.decoder.W_y.bias[EOS_ID] = -1e4
        model.encoder.gru_backward.weight_hh_l0.mul_(-1.0)
    _close(beam_search(model, src, k=1)[0], _general_k1(model, src)[0])
    assert beam_search(model, src, k=1)[0].log_prob != pytest.approx(before.log_prob, abs=1e-3)
    # a new parameter object in place of the old one
    new = torch.nn.Parameter(torch.randn_like(model.decoder.embedding.weight))
    model.decoder.embedding.weight = new
    _close(beam_search(model, src, k=1)[0], _general_k1(model, src)[0])
    # a whole other state
    other = _model("bahdanau", 3)
    model.load_state_dict(other.state_dict())
    _close(beam_search(model, src, k=1)[0], _general_k1(other, src)[0])


@pytest.mark.parametrize(
    ("src", "message"),
    [
        (torch.tensor([[3, 99, EOS_ID]]), "outside the vocabulary"),
        (torch.tensor([[PAD_ID, PAD_ID]]), "empty"),
        (torch.tensor([[3, PAD_ID, 4]]), "padding must come after"),
        (torch.tensor([[3.0, 4.0]]), "integer token ids"),
    ],
)
def test_one_sentence_path_keeps_the_models_input_checks(src: Tensor, message: str) -> None:
    model = _model("bahdanau", 0)
    with pytest.raises((ValueError, TypeError), match=message):
        beam_search(model, src, k=1)


# --------------------------------------------------------------------------- Seq2Seq.greedy
@pytest.mark.parametrize("decoder", DECODERS)
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), lengths=lengths_st, max_len=st.integers(1, 9))
def test_greedy_gives_what_the_old_masked_loop_gives(
    decoder: str, seed: int, lengths: list[int], max_len: int
) -> None:
    model = _model(decoder, seed)
    src = _src(lengths, seed)
    tokens, alpha = model.greedy(src, max_len=max_len)
    want_tokens, want_alpha = _old_greedy(model, src, max_len)
    assert torch.equal(tokens, want_tokens)
    if want_alpha is None:
        assert alpha is None
    else:
        assert alpha is not None
        assert torch.equal(alpha, want_alpha)


def test_greedy_with_logit_ties_takes_the_first_id_like_argmax() -> None:
    model = _model("bahdanau", 1)
    with torch.no_grad():  # every logit equal: the argmax over ids ≥ 2 is <eos>
        model.decoder.W_y.weight.zero_()
        model.decoder.W_y.bias.zero_()
    tokens, _ = model.greedy(_src([3]), max_len=4)
    assert tokens.tolist() == [[EOS_ID]]
    [d] = beam_search(model, _src([3]), k=1)
    assert d.tokens == ()
    assert d.finished


# --------------------------------------------------------------------------- encoder, masks
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), B=st.integers(1, 3), T_x=st.integers(1, 7))
def test_unpadded_encoder_path_equals_the_padded_path(seed: int, B: int, T_x: int) -> None:
    model = _model("bahdanau", seed)
    src = _src([T_x] * B, seed)[:, :-1]  # every row full: no <pad> anywhere
    src[:, -1] = EOS_ID
    lengths = torch.full((B,), T_x)
    with torch.no_grad():  # the flip path
        h_fast, final_fast = model.encoder(src, lengths)
    h_slow, final_slow = model.encoder(src, lengths)  # gradients on: the general path
    assert torch.equal(h_fast, h_slow.detach())
    assert torch.equal(final_fast, final_slow.detach())


def test_a_padded_batch_without_gradients_still_zeroes_the_pads() -> None:
    model = _model("bahdanau", 2)
    src = _src([2, 5], 2)
    with torch.no_grad():
        h, final, mask = model.encode(src)
    h_grad, final_grad, _ = model.encode(src)
    assert torch.equal(h, h_grad.detach())
    assert torch.equal(final, final_grad.detach())
    assert bool((h[~mask] == 0).all())


@pytest.mark.parametrize(
    "attn", [AdditiveAttention(3, 4, 5), MultiplicativeAttention(3, 4)], ids=["additive", "general"]
)
def test_an_all_true_mask_is_the_same_as_no_mask(attn: torch.nn.Module) -> None:
    g = torch.Generator().manual_seed(0)
    s, h = torch.randn(2, 3, generator=g), torch.randn(2, 6, 4, generator=g)
    c0, a0 = attn(s, h)
    c1, a1 = attn(s, h, torch.ones(2, 6, dtype=torch.bool))
    assert torch.equal(c0, c1)
    assert torch.equal(a0, a1)
    mask = torch.ones(2, 6, dtype=torch.bool)
    mask[1, 4:] = False  # padding in one row: its pads get α exactly 0, the other row is unchanged
    c2, a2 = attn(s, h, mask)
    assert torch.equal(c2[0], c0[0])
    assert bool((a2[1, 4:] == 0).all())
    assert torch.equal(a2[0], a0[0])
    assert torch.allclose(a2[1, :4].sum(), torch.tensor(1.0))


def test_an_empty_mask_row_is_still_refused() -> None:
    attn = AdditiveAttention(3, 4, 5)
    mask = torch.ones(2, 6, dtype=torch.bool)
    mask[1] = False
    with pytest.raises(ValueError, match="no position to attend to"):
        attn(torch.zeros(2, 3), torch.zeros(2, 6, 4), mask)


@pytest.mark.parametrize(
    ("src", "message"),
    [
        (torch.tensor([[4, 5, V_SRC]]), "token id 13 at"),  # no padding: the quick path's check
        (torch.tensor([[4, -1, 2]]), "token id -1 at"),
        (torch.tensor([[4, 0, 5, 2]]), "<pad> .* before a real token"),
        (torch.tensor([[4, 2], [0, 0]]), "row 1 is empty"),
    ],
)
def test_bad_sources_are_refused_at_batch_1_and_in_batches(src: Tensor, message: str) -> None:
    model = _model("bahdanau")
    with pytest.raises(ValueError, match=message):
        beam_search(model, src, k=1)
    with pytest.raises(ValueError, match=message):
        model.greedy(src)


def test_small_integer_dtypes_are_still_accepted() -> None:
    model = _model("bahdanau", 3)
    src = _src([4], 3)
    want, _ = model.greedy(src)
    for dtype in (torch.int32, torch.int16, torch.uint8):
        got, _ = model.greedy(src.to(dtype))
        assert torch.equal(got, want)


def test_decoding_memory_drops_only_an_all_zero_bias() -> None:
    from attnlib.models import _unpadded_memory

    model = _model("bahdanau")
    with torch.no_grad():
        for lengths, dropped in (([3, 3], True), ([3, 1], False)):
            h, final, mask = model.encode(_src(lengths))
            mem = model.decoder.memory(h, final, mask)
            assert mem.bias is not None  # what a learner inspects is always there
            assert (_unpadded_memory(mem).bias is None) == dropped


# --------------------------------------------------------------------------- the helpers
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), scale=st.sampled_from([0.1, 1.0, 30.0, 300.0]))
def test_log_normaliser_is_logsumexp(seed: int, scale: float) -> None:
    g = torch.Generator().manual_seed(seed)
    logits = scale * torch.randn(5, 40, generator=g)
    top, tok = logits.max(dim=-1)
    got = decoding._log_normaliser(logits, top, tok)
    want = torch.logsumexp(logits.double(), dim=-1)
    assert got.dtype == torch.float64
    assert torch.allclose(got, want, rtol=1e-6, atol=1e-5)


def test_a_model_in_train_mode_comes_back_in_train_mode_with_the_same_output() -> None:
    model, src = _model("bahdanau", 5), _src([3, 4], 5)
    want = [d.tokens for d in beam_search(model, src, k=1)]
    model.train()
    model.decoder.eval()  # mixed modes: decoding still runs all of it in eval mode
    got = [d.tokens for d in beam_search(model, src, k=1)]
    assert got == want
    assert model.training
    assert model.encoder.training


# --------------------------------------------------------------------------- replaced methods
def test_decoding_runs_a_replaced_method_of_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """A learner's replacement of a decoder method (here the output layer) is what every
    decoder runs: the greedy loop and the one-sentence path, which then steps aside."""
    model = _model("bahdanau", 6)
    monkeypatch.setattr(model.decoder, "readout", lambda parts, y_emb: torch.zeros(1, V_TGT))
    assert not _one_sentence_path(model, _src([3]))
    tokens, _ = model.greedy(_src([3]), max_len=3)
    assert tokens.tolist() == [[EOS_ID]]  # all-zero logits: the first output id wins
    [d] = beam_search(model, _src([3]), k=1)
    assert (d.tokens, d.finished) == ((), True)
