"""attnlib.evidence.true_or_false: statement 8's counts and statement 9's decoder, piece by piece.

Whether the chapter's claims hold for three training seeds is tests/test_seeds.py.
"""

from __future__ import annotations

import math

import pytest
import torch

from attnlib.evidence import true_or_false as tf
from attnlib.models import make_seq2seq
from attnlib.pretrained import load


def _tiny(decoder: str = "bahdanau", encoder: str = "birnn", seed: int = 0):
    return make_seq2seq(12, 11, decoder=decoder, encoder=encoder, emb=5, hidden=6, d_s=7, d_a=4,
                        seed=seed)  # fmt: skip


def test_seq2seq_macs_counts_one_multiply_add_per_weight_and_pair():
    emb, hid, d_s, d_a, V = 5, 6, 7, 4, 11
    d_h = 2 * hid
    T_x, T_y = 9, 5
    m = tf.seq2seq_macs(_tiny(), T_x, T_y)
    assert m.encoder == T_x * 2 * 3 * (emb * hid + hid * hid)
    assert m.decoder == d_h * d_s + T_y * 3 * ((emb + d_h) * d_s + d_s * d_s)
    assert m.readout == T_y * ((d_s + d_h + emb) * d_s + d_s * V)
    assert m.attention == T_x * d_h * d_a + T_y * d_s * d_a + T_x * T_y * (d_a + d_h)
    assert m.total == m.encoder + m.decoder + m.readout + m.attention
    # the baseline has the same recurrent and output parts and no attention
    none = tf.seq2seq_macs(_tiny("none"), T_x, T_y)
    assert none.attention == 0
    assert none.total == m.total - m.attention


def test_seq2seq_macs_refuses_what_it_does_not_count():
    with pytest.raises(TypeError, match="recurrent encoder"):
        tf.seq2seq_macs(_tiny(encoder="embedding"), 3, 3)
    with pytest.raises(ValueError, match="≥ 1"):
        tf.seq2seq_macs(_tiny(), 0, 3)


def test_crossover_length_is_where_attention_overtakes_the_rest():
    model = _tiny()
    T = tf.crossover_length(model)
    below, above = (
        tf.seq2seq_macs(model, math.floor(T), math.floor(T)),
        tf.seq2seq_macs(model, math.ceil(T) + 1, math.ceil(T) + 1),
    )
    assert below.attention <= below.total - below.attention
    assert above.attention > above.total - above.attention
    with pytest.raises(ValueError, match="no crossover"):
        tf.crossover_length(_tiny("none"))


def test_count_parts_runs_the_count_as_matrix_products_but_the_contexts_sum():
    """What a forward pass runs is the weights' count less the context's T_x T_y d_h, which runs
    as elementwise products; the attention alone runs the attention's part of it."""
    d_h = 2 * 6
    for T_x, T_y in ((6, 4), (9, 5)):
        counted = tf.seq2seq_macs(_tiny(), T_x, T_y)
        ran = tf.count_parts(_tiny(), T_x, T_y)
        assert ran.forward.multiply_adds == counted.total - T_x * T_y * d_h
        assert ran.attention.multiply_adds == counted.attention - T_x * T_y * d_h
        assert ran.attention.calls == 1 + 2 * T_y  # the keys once; a query and scores per step
        assert ran.attention_share == ran.attention.multiply_adds / ran.forward.multiply_adds
        assert tf.count_parts(_tiny(), T_x, T_y, seed=5) == ran  # not the sentence's


def test_time_parts_gives_positive_times_and_their_ratio():
    """A clock for display (bench/bench_cost.py): only that it measured something is checked."""
    t = tf.time_parts(_tiny(), 6, 4, repeats=3)
    assert t.forward > 0
    assert t.attention > 0
    assert math.isfinite(t.attention_share)
    assert t.attention_share > 0


def test_decode_from_is_greedy_decoding_and_permuting_h_changes_nothing():
    model = _tiny(seed=3)
    src = torch.tensor([[4, 5, 6, 7, 2], [8, 9, 2, 0, 0]])
    tokens, alpha = model.greedy(src, max_len=6)
    with torch.no_grad():
        h, final, mask = model.encode(src)
    mine, mine_alpha = tf.decode_from(model, h, final, mask, max_len=6)
    for row in range(2):  # the same up to each row's <eos>
        n = int((tokens[row] != 0).sum())
        assert torch.equal(mine[row, :n], tokens[row, :n])
        torch.testing.assert_close(mine_alpha[row, :n], alpha[row, :n])
    perm = torch.tensor([[3, 0, 4, 1, 2], [4, 2, 0, 3, 1]])  # pads move too, with the mask
    rows = torch.arange(2).unsqueeze(1)
    moved, moved_alpha = tf.decode_from(model, h[rows, perm], final, mask[rows, perm], max_len=6)
    assert torch.equal(moved, mine)
    torch.testing.assert_close(
        moved_alpha, torch.gather(mine_alpha, 2, perm.unsqueeze(1).expand(-1, 6, -1))
    )


def test_swapping_subject_and_object_moves_the_particles():
    src = ("the", "big", "cat", "sees", "a", "dog")
    tgt = ("ookii", "neko", "ga", "inu", "o", "miru")
    assert tf._swap_subject_object(src, tgt) == (
        ("a", "dog", "sees", "the", "big", "cat"),
        ("inu", "ga", "ookii", "neko", "o", "miru"),
    )
    assert (
        tf._swap_subject_object(
            ("the", "cat", "sees", "a", "cat"), ("neko", "ga", "neko", "o", "miru")
        )
        is None
    )
    assert tf._swap_subject_object(("a", "cat", "sees", "a", "dog", "in", "the", "park"),
                                   ("neko", "ga", "kouen", "de", "inu", "o", "miru")) is None  # fmt: skip


@pytest.mark.slow
def test_the_parts_run_alone():
    got = tf.check_claims(parts=["statement_6"])
    assert set(got["checks"]) == {"statement_6"}
    assert "permute" not in got
    with pytest.raises(ValueError, match="parts must be among"):
        tf.check_claims(parts=["statement_8"])


def test_the_spy_sees_every_score_computed_from_the_state_before_the_step() -> None:
    rev = load("reverse")
    src = torch.tensor([rev.task.src_vocab.encode(rev.task.test[0][0])])
    steps = tf.score_queries(rev.model, src, steps=5)
    assert [q.t for q in steps] == [1, 2, 3, 4, 5]
    assert all(q.from_s_prev == 0.0 for q in steps)
    assert all(q.from_s_t > 0.01 for q in steps)


def test_the_spy_refuses_a_decoder_that_carries_another_state() -> None:
    luong = load("dates_luong")
    src = torch.tensor([luong.task.src_vocab.encode(luong.task.test[0][0])])
    with pytest.raises(ValueError, match="Bahdanau decoder, got LuongDecoder"):
        tf.score_queries(luong.model, src, steps=2)
