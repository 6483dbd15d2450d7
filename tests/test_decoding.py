"""Tests for attnlib.decoding: greedy and beam search over a Seq2Seq.

The reference points are independent of the code under test: Seq2Seq.greedy's tokens, the
log-probabilities teacher forcing gives through ``model(src, tgt_in)``, an exhaustive list of
every possible output, and probabilities written down by hand in a toy next-token table.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor, nn

from attnlib.decoding import Decoded, Hypothesis, beam_search, greedy, length_penalty
from attnlib.models import Seq2Seq, SourceMemory, make_seq2seq
from attnlib.vocab import BOS_ID, EOS_ID, PAD_ID
from conftest import TINY

V_SRC, V_TGT = 13, 11
DECODERS = ("bahdanau", "luong", "none")


def _src(lengths: list[int], seed: int = 0, vocab: int = V_SRC) -> Tensor:
    """A padded batch: random real ids, then <eos>, then <pad>."""
    g = torch.Generator().manual_seed(seed)
    src = torch.full((len(lengths), max(lengths) + 1), PAD_ID)
    for b, n in enumerate(lengths):
        src[b, :n] = torch.randint(3, vocab, (n,), generator=g)
        src[b, n] = EOS_ID
    return src


def _model(decoder: str = "bahdanau", seed: int = 0, v_tgt: int = V_TGT) -> Seq2Seq:
    """A tiny untrained model with a sharpened output layer.

    Untrained, its next-token distributions are almost uniform; W_y × 4 spreads the logits, so
    outputs vary in length and near-ties (where rounding could flip a choice) are rare.
    """
    model = make_seq2seq(V_SRC, v_tgt, decoder=decoder, seed=seed, **TINY)  # type: ignore[arg-type]
    with torch.no_grad():
        model.decoder.W_y.weight.mul_(4.0)
        model.decoder.W_y.bias.mul_(4.0)
    return model.eval()


def _greedy_rows(model: Seq2Seq, src: Tensor, max_len: int) -> list[list[int]]:
    """Seq2Seq.greedy's ids per row, cut before <eos> (and the <pad> after it)."""
    tokens, _ = model.greedy(src, max_len=max_len)
    rows = []
    for row in tokens.tolist():
        rows.append(row[: row.index(EOS_ID)] if EOS_ID in row else row)
    return rows


def _teacher_log_prob(model: Seq2Seq, src_row: Tensor, hyp: Hypothesis) -> float:
    """log p(y | x) of a hypothesis, recomputed by teacher forcing through model.forward."""
    targets = list(hyp.tokens) + ([EOS_ID] if hyp.finished else [])
    tgt_in = torch.tensor([[BOS_ID, *targets[:-1]]])
    with torch.no_grad():
        logits, _ = model(src_row.unsqueeze(0), tgt_in)
    logp = torch.log_softmax(logits[0].double(), dim=-1)
    return float(logp[torch.arange(len(targets)), torch.tensor(targets)].sum())


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _assert_close(got: Tensor, want: Tensor) -> None:
    """Same shape, equal to float32 rounding (torch.testing would add ~1 s of imports)."""
    assert got.shape == want.shape
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), (got, want)


lengths_st = st.lists(st.integers(1, 6), min_size=1, max_size=4)


# --------------------------------------------------------------------------- greedy
@pytest.mark.parametrize("decoder", DECODERS)
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**16), lengths=lengths_st, max_len=st.integers(1, 9))
def test_k1_and_greedy_give_seq2seq_greedy_tokens(
    decoder: str, seed: int, lengths: list[int], max_len: int
) -> None:
    model = _model(decoder, seed)
    src = _src(lengths, seed)
    expected = _greedy_rows(model, src, max_len)
    beam1 = beam_search(model, src, k=1, max_len=max_len)
    plain = greedy(model, src, max_len=max_len)
    assert [list(d.tokens) for d in beam1] == expected
    assert [list(d.tokens) for d in plain] == expected
    for d in beam1:
        assert len(d.kbest) == 1


def test_greedy_attention_is_seq2seq_greedy_attention() -> None:
    model = _model("bahdanau", 3)
    src = _src([4, 2, 6], 3)
    tokens, alpha = model.greedy(src, max_len=10)
    assert alpha is not None
    for b, d in enumerate(greedy(model, src, max_len=10)):
        assert d.alpha is not None
        T_x = int((src[b] != PAD_ID).sum())
        _assert_close(d.alpha, alpha[b, : d.best.steps, :T_x])
        if d.finished:  # the <eos> step is the last row of α
            assert int(tokens[b, d.best.steps - 1]) == EOS_ID


# --------------------------------------------------------------------------- scores
@pytest.mark.parametrize("decoder", DECODERS)
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**16), lengths=lengths_st, k=st.integers(1, 4))
def test_raw_score_is_the_teacher_forced_log_probability(
    decoder: str, seed: int, lengths: list[int], k: int
) -> None:
    model = _model(decoder, seed)
    src = _src(lengths, seed)
    for b, d in enumerate(beam_search(model, src, k=k, max_len=6, length_alpha=0)):
        for hyp in d.kbest:  # finished and cut hypotheses alike
            assert hyp.score == hyp.log_prob
            assert hyp.score == pytest.approx(_teacher_log_prob(model, src[b], hyp), abs=1e-4)


def test_length_penalty_is_gnmt() -> None:
    assert length_penalty(1, 0.6) == 1.0  # (5 + 1) / 6 = 1
    assert length_penalty(7, 0.6) == pytest.approx(2.0**0.6)  # (5 + 7) / 6 = 2
    assert length_penalty(13, 1.0) == pytest.approx(3.0)
    assert length_penalty(9, 0.0) == 1.0


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**16), length_alpha=st.floats(0.1, 2.0))
def test_scores_are_normalised_and_sorted(seed: int, length_alpha: float) -> None:
    model = _model("bahdanau", seed)
    src = _src([3, 5], seed)
    for b, d in enumerate(beam_search(model, src, k=4, max_len=7, length_alpha=length_alpha)):
        scores = [h.score for h in d.kbest]
        assert scores == sorted(scores, reverse=True)
        assert len({(h.tokens, h.finished) for h in d.kbest}) == len(d.kbest)  # distinct
        for h in d.kbest:
            lp = ((5 + len(h.tokens) + h.finished) / 6) ** length_alpha
            assert h.score == pytest.approx(h.log_prob / lp)
            assert h.log_prob == pytest.approx(_teacher_log_prob(model, src[b], h), abs=1e-4)


def _every_output(v_tgt: int, max_len: int) -> list[tuple[tuple[int, ...], bool]]:
    """All outputs of at most max_len steps: finished ones (ids, then <eos>) and cut ones."""
    real = range(EOS_ID + 1, v_tgt)
    outs = [(y, True) for n in range(max_len) for y in itertools.product(real, repeat=n)]
    return outs + [(y, False) for y in itertools.product(real, repeat=max_len)]


@pytest.mark.parametrize(("decoder", "length_alpha"), [("bahdanau", 0.0), ("luong", 0.6)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_beam_wider_than_every_prefix_is_an_exact_search(
    decoder: str, length_alpha: float, seed: int
) -> None:
    # Two real target tokens and 3 steps: 15 possible outputs, at most 8 live prefixes.
    v_tgt, max_len = 5, 3
    model = _model(decoder, seed, v_tgt=v_tgt)
    src = _src([4], seed)
    hyp_like = [Hypothesis(y, 0.0, 0.0, fin, None) for y, fin in _every_output(v_tgt, max_len)]
    exact = sorted(
        (
            _teacher_log_prob(model, src[0], h) / length_penalty(h.steps, length_alpha),
            h.tokens,
            h.finished,
        )
        for h in hyp_like
    )[::-1]
    [d] = beam_search(model, src, k=16, max_len=max_len, length_alpha=length_alpha)
    assert [(h.tokens, h.finished) for h in d.kbest] == [(y, f) for _, y, f in exact]
    assert [h.score for h in d.kbest] == pytest.approx([s for s, _, _ in exact], abs=1e-4)
    # So the beam's best is never below greedy's, which is one of the 15.
    [g] = greedy(model, src, max_len=max_len, length_alpha=length_alpha)
    assert d.score >= g.score - 1e-5  # the same output scored in a batch of 16 lanes, or 1


# --------------------------------------------------------------------------- batches
@pytest.mark.parametrize("decoder", DECODERS)
@settings(max_examples=8, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    lengths=st.lists(st.integers(1, 7), min_size=2, max_size=5),
    k=st.integers(1, 4),
)
def test_a_batch_decodes_as_its_sentences_one_by_one(
    decoder: str, seed: int, lengths: list[int], k: int
) -> None:
    model = _model(decoder, seed)
    src = _src(lengths, seed)
    batch = beam_search(model, src, k=k)  # default max_len: each sentence's own 2 T_x + 2
    for b, n in enumerate(lengths):
        [alone] = beam_search(model, src[b : b + 1, : n + 1], k=k)
        got = batch[b]
        assert [(h.tokens, h.finished) for h in got.kbest] == [
            (h.tokens, h.finished) for h in alone.kbest
        ]
        assert [h.score for h in got.kbest] == pytest.approx([h.score for h in alone.kbest])
        for h_b, h_1 in zip(got.kbest, alone.kbest, strict=True):
            if decoder == "none":
                assert h_b.alpha is None
                assert h_1.alpha is None
            else:
                assert h_b.alpha is not None
                assert h_1.alpha is not None
                _assert_close(h_b.alpha, h_1.alpha)


@pytest.mark.parametrize("decoder", ["bahdanau", "luong"])
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**16), lengths=lengths_st, k=st.integers(1, 4))
def test_attention_rows_sum_to_one_over_the_real_source(
    decoder: str, seed: int, lengths: list[int], k: int
) -> None:
    model = _model(decoder, seed)
    src = _src(lengths, seed)
    for n, d in zip(lengths, beam_search(model, src, k=k, max_len=6), strict=True):
        for h in d.kbest:
            assert h.alpha is not None
            # Rows cover the sentence's own T_x = n + 1 positions; they hold all the mass,
            # so the batch's padding columns (cut away) got exactly 0.
            assert h.alpha.shape == (h.steps, n + 1)
            assert bool((h.alpha >= 0).all())
            _assert_close(h.alpha.sum(dim=1), torch.ones(h.steps))


def test_return_attention_false_and_no_attention_model_give_none() -> None:
    src = _src([3, 6, 2], 5)
    for d in beam_search(_model("bahdanau", 5), src, k=3, return_attention=False):
        assert all(h.alpha is None for h in d.kbest)
    baseline = _model("none", 5)
    out = beam_search(baseline, src, k=3)
    assert len(out) == 3
    for d in out:
        assert d.alpha is None
        assert 1 <= len(d.kbest) <= 3


# --------------------------------------------------------------------------- max_len
@pytest.mark.parametrize("max_len", [1, 2, 5])
def test_max_len_bounds_every_hypothesis(max_len: int) -> None:
    model = _model("bahdanau", 7)
    src = _src([2, 5, 6], 7)
    for d in beam_search(model, src, k=3, max_len=max_len):
        for h in d.kbest:
            assert h.steps <= max_len
            if not h.finished:  # cut: exactly max_len tokens, none of them <eos>
                assert len(h.tokens) == max_len
            assert EOS_ID not in h.tokens
            assert PAD_ID not in h.tokens
            assert BOS_ID not in h.tokens


def test_default_max_len_is_two_source_lengths_plus_two() -> None:
    # A table model that never says <eos>: every output is cut at max_len.
    model = TableModel({}, default={3: 1.0})
    src = torch.tensor([[5, 5, EOS_ID, PAD_ID, PAD_ID], [5, 5, 5, 5, EOS_ID]])
    short, long = beam_search(model, src, k=2)
    assert len(short.tokens) == 2 * 3 + 2
    assert len(long.tokens) == 2 * 5 + 2
    assert not short.finished


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, "beam size k must be a whole number ≥ 1, got 0"),
        ({"k": 2.5}, "beam size k must be a whole number ≥ 1, got 2.5"),
        ({"k": True}, "beam size k"),
        ({"max_len": 0}, "max_len must be a whole number ≥ 1"),
        ({"length_alpha": -0.5}, "length_alpha must be a finite number ≥ 0"),
        ({"length_alpha": float("nan")}, "length_alpha must be a finite number ≥ 0"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        beam_search(_model(), _src([3]), **kwargs)  # type: ignore[arg-type]


def test_bad_sources_get_the_models_messages() -> None:
    model = _model()
    with pytest.raises(ValueError, match=r"<pad> .* before a real token"):
        beam_search(model, torch.tensor([[4, PAD_ID, 5, EOS_ID]]))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        beam_search(model, torch.tensor([[4, V_SRC, EOS_ID]]))
    with pytest.raises(TypeError, match="integer token ids"):
        greedy(model, torch.tensor([[4.0, 2.0]]))
    with pytest.raises(ValueError, match=r"shape \(B, T\)"):
        greedy(model, torch.tensor([4, 5, EOS_ID]))
    with pytest.raises(TypeError, match="needs a seq2seq model"):
        beam_search(nn.Linear(2, 2), _src([3]))


def test_the_model_comes_back_in_the_mode_it_was_in() -> None:
    model = _model().train()
    beam_search(model, _src([3]), k=2)
    assert model.training
    model.eval()
    greedy(model, _src([3]))
    assert not model.training


# --------------------------------------------------------------------------- a toy table
A, B, C, D = 3, 4, 5, 6  # four target words after <pad> <bos> <eos>


class _TableDecoder(nn.Module):
    """The decoder interface over a next-token table; the state s is the prefix so far."""

    def __init__(self, log_probs: Callable[[tuple[int, ...]], Tensor], vocab_size: int) -> None:
        super().__init__()
        self.log_probs, self.vocab_size = log_probs, vocab_size

    def memory(self, h: Tensor, final: Tensor, mask: Tensor) -> SourceMemory:
        return SourceMemory(h, None, None, mask)

    def init_state(self, final: Tensor) -> Tensor:
        return torch.full((final.shape[0], 32), -1.0)  # room for 32 tokens; -1 = empty

    def step(
        self, y_prev: Tensor, s_prev: Tensor, mem: SourceMemory
    ) -> tuple[Tensor, Tensor, None]:
        s = s_prev.clone()
        logits = torch.empty(len(y_prev), self.vocab_size)
        for row, (y, state) in enumerate(zip(y_prev.tolist(), s.tolist(), strict=True)):
            prefix = tuple(int(v) for v in state if v >= 0)
            if y != BOS_ID:
                s[row, len(prefix)] = y
                prefix = (*prefix, y)
            logits[row] = self.log_probs(prefix)
        return logits, s, None


class TableModel(nn.Module):
    """A stand-in for Seq2Seq: p(y_t | y_<t) read from a table, the source ignored.

    ``table[prefix]`` maps next tokens to probabilities; a prefix not in the table uses
    ``default``. Tokens not listed get probability 1e-9.
    """

    def __init__(self, table: dict[tuple[int, ...], dict[int, float]], default: dict[int, float]):
        super().__init__()
        self.table, self.default = table, default
        self.tgt_vocab_size = 7
        self.decoder = _TableDecoder(self.log_probs, self.tgt_vocab_size)

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        mask = src != PAD_ID
        return torch.zeros(*src.shape, 1), torch.zeros(src.shape[0], 1), mask

    def log_probs(self, prefix: tuple[int, ...]) -> Tensor:
        p = torch.full((self.tgt_vocab_size,), 1e-9, dtype=torch.float64)
        for tok, q in self.table.get(prefix, self.default).items():
            p[tok] = q
        return torch.log(p / p.sum()).float()


def test_beam_finds_what_greedy_misses() -> None:
    # Greedy takes A (0.5) and ends A C <eos>: 0.5 × 0.35 × 0.6 = 0.105.
    # B (0.4) looked worse, but B <eos> has 0.4 × 0.9 = 0.36: a beam of 2 keeps B and finds it.
    table = {
        (): {A: 0.5, B: 0.4, EOS_ID: 0.1},
        (A,): {C: 0.35, D: 0.33, B: 0.22, EOS_ID: 0.1},
        (A, C): {EOS_ID: 0.6, D: 0.4},
        (B,): {EOS_ID: 0.9, A: 0.1},
    }
    model = TableModel(table, default={EOS_ID: 0.7, A: 0.3})
    src = torch.tensor([[A, EOS_ID]])
    [g] = greedy(model, src, max_len=6, length_alpha=0)
    [b] = beam_search(model, src, k=2, max_len=6, length_alpha=0)
    assert g.tokens == (A, C)
    assert g.score == pytest.approx(math.log(0.5 * 0.35 * 0.6), abs=1e-6)
    assert b.tokens == (B,)
    assert b.score == pytest.approx(math.log(0.4 * 0.9), abs=1e-6)
    # Length normalisation (which favours longer outputs) does not change the verdict here.
    [g6] = greedy(model, src, max_len=6)
    [b6] = beam_search(model, src, k=2, max_len=6)
    assert (g6.tokens, b6.tokens) == ((A, C), (B,))
    assert b6.score > g6.score


def test_beam_search_is_a_heuristic_and_can_lose_to_greedy() -> None:
    # Greedy: A (0.5), A (0.28), <eos> (0.99): 0.1386. A beam of 2 prefers B C (0.156) and
    # B D (0.144) to A A (0.14) at step 2, drops greedy's path, and finds nothing as good.
    table = {
        (): {A: 0.5, B: 0.3, C: 0.2},
        (A,): {A: 0.28, B: 0.25, C: 0.24, D: 0.23},
        (B,): {C: 0.52, D: 0.48},
        (A, A): {EOS_ID: 0.99, B: 0.01},
    }
    model = TableModel(table, default={EOS_ID: 0.1, A: 0.31, B: 0.30, C: 0.29})
    src = torch.tensor([[A, EOS_ID]])
    [g] = greedy(model, src, max_len=5, length_alpha=0)
    [b] = beam_search(model, src, k=2, max_len=5, length_alpha=0)
    assert g.tokens == (A, A)
    assert g.score == pytest.approx(math.log(0.5 * 0.28 * 0.99), abs=1e-6)
    assert b.tokens[:2] in ((B, C), (B, D))
    assert b.score < g.score
    # A wide enough beam keeps greedy's path and is at least as good.
    [wide] = beam_search(model, src, k=4, max_len=5, length_alpha=0)
    assert wide.score >= g.score


def test_results_are_per_sentence_and_typed() -> None:
    out = beam_search(_model(), _src([2, 4]), k=3)
    assert len(out) == 2
    assert all(isinstance(d, Decoded) for d in out)
    assert all(isinstance(h, Hypothesis) for d in out for h in d.kbest)
    assert all(d.best is d.kbest[0] for d in out)
