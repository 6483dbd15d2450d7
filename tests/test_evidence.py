"""attnlib.evidence: the chapters' experiments on trained models, piece by piece.

Whether each chapter's claims hold for three training seeds is tests/test_seeds.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlib import evidence, pretrained
from attnlib.models import make_seq2seq


def _tiny(decoder: str = "bahdanau", encoder: str = "birnn", seed: int = 0):
    return make_seq2seq(12, 11, decoder=decoder, encoder=encoder, emb=5, hidden=6, d_s=7, d_a=4,
                        seed=seed)  # fmt: skip


def test_seq2seq_macs_counts_one_multiply_add_per_weight_and_pair():
    emb, hid, d_s, d_a, V = 5, 6, 7, 4, 11
    d_h = 2 * hid
    T_x, T_y = 9, 5
    m = evidence.seq2seq_macs(_tiny(), T_x, T_y)
    assert m.encoder == T_x * 2 * 3 * (emb * hid + hid * hid)
    assert m.decoder == d_h * d_s + T_y * 3 * ((emb + d_h) * d_s + d_s * d_s)
    assert m.readout == T_y * ((d_s + d_h + emb) * d_s + d_s * V)
    assert m.attention == T_x * d_h * d_a + T_y * d_s * d_a + T_x * T_y * (d_a + d_h)
    assert m.total == m.encoder + m.decoder + m.readout + m.attention
    # the baseline has the same recurrent and output parts and no attention
    none = evidence.seq2seq_macs(_tiny("none"), T_x, T_y)
    assert none.attention == 0
    assert none.total == m.total - m.attention


def test_seq2seq_macs_refuses_what_it_does_not_count():
    with pytest.raises(TypeError, match="recurrent encoder"):
        evidence.seq2seq_macs(_tiny(encoder="embedding"), 3, 3)
    with pytest.raises(ValueError, match="≥ 1"):
        evidence.seq2seq_macs(_tiny(), 0, 3)


def test_crossover_length_is_where_attention_overtakes_the_rest():
    model = _tiny()
    T = evidence.crossover_length(model)
    below, above = (
        evidence.seq2seq_macs(model, math.floor(T), math.floor(T)),
        evidence.seq2seq_macs(model, math.ceil(T) + 1, math.ceil(T) + 1),
    )
    assert below.attention <= below.total - below.attention
    assert above.attention > above.total - above.attention
    with pytest.raises(ValueError, match="no crossover"):
        evidence.crossover_length(_tiny("none"))


def test_count_parts_runs_the_count_as_matrix_products_but_the_contexts_sum():
    """What a forward pass runs is the weights' count less the context's T_x T_y d_h, which runs
    as elementwise products; the attention alone runs the attention's part of it."""
    d_h = 2 * 6
    for T_x, T_y in ((6, 4), (9, 5)):
        counted = evidence.seq2seq_macs(_tiny(), T_x, T_y)
        ran = evidence.count_parts(_tiny(), T_x, T_y)
        assert ran.forward.multiply_adds == counted.total - T_x * T_y * d_h
        assert ran.attention.multiply_adds == counted.attention - T_x * T_y * d_h
        assert ran.attention.calls == 1 + 2 * T_y  # the keys once; a query and scores per step
        assert ran.attention_share == ran.attention.multiply_adds / ran.forward.multiply_adds
        assert evidence.count_parts(_tiny(), T_x, T_y, seed=5) == ran  # not the sentence's


def test_time_parts_gives_positive_times_and_their_ratio():
    """A clock for display (bench/bench_cost.py): only that it measured something is checked."""
    t = evidence.time_parts(_tiny(), 6, 4, repeats=3)
    assert t.forward > 0
    assert t.attention > 0
    assert math.isfinite(t.attention_share)
    assert t.attention_share > 0


def test_decode_from_is_greedy_decoding_and_permuting_h_changes_nothing():
    import torch

    model = _tiny(seed=3)
    src = torch.tensor([[4, 5, 6, 7, 2], [8, 9, 2, 0, 0]])
    tokens, alpha = model.greedy(src, max_len=6)
    with torch.no_grad():
        h, final, mask = model.encode(src)
    mine, mine_alpha = evidence.decode_from(model, h, final, mask, max_len=6)
    for row in range(2):  # the same up to each row's <eos>
        n = int((tokens[row] != 0).sum())
        assert torch.equal(mine[row, :n], tokens[row, :n])
        torch.testing.assert_close(mine_alpha[row, :n], alpha[row, :n])
    perm = torch.tensor([[3, 0, 4, 1, 2], [4, 2, 0, 3, 1]])  # pads move too, with the mask
    rows = torch.arange(2).unsqueeze(1)
    moved, moved_alpha = evidence.decode_from(
        model, h[rows, perm], final, mask[rows, perm], max_len=6
    )
    assert torch.equal(moved, mine)
    torch.testing.assert_close(
        moved_alpha, torch.gather(mine_alpha, 2, perm.unsqueeze(1).expand(-1, 6, -1))
    )


def test_swapping_subject_and_object_moves_the_particles():
    from attnlib.evidence import _swap_subject_object

    src = ("the", "big", "cat", "sees", "a", "dog")
    tgt = ("ookii", "neko", "ga", "inu", "o", "miru")
    assert _swap_subject_object(src, tgt) == (
        ("a", "dog", "sees", "the", "big", "cat"),
        ("inu", "ga", "ookii", "neko", "o", "miru"),
    )
    assert (
        _swap_subject_object(
            ("the", "cat", "sees", "a", "cat"), ("neko", "ga", "neko", "o", "miru")
        )
        is None
    )
    assert _swap_subject_object(("a", "cat", "sees", "a", "dog", "in", "the", "park"),
                                ("neko", "ga", "kouen", "de", "inu", "o", "miru")) is None  # fmt: skip


def test_longer_copy_strings_are_longer_than_any_the_bottleneck_models_saw():
    from attnlib import pretrained
    from attnlib.tasks import make_task

    longer = evidence.longer_copy_task(n_test=50)
    lengths = [len(s) for s, _ in longer.test]
    assert min(lengths) == evidence.LONGER_BUCKETS[0]
    assert max(lengths) <= evidence.LONGER_MAX
    recipe = pretrained.RECIPES[evidence.BOTTLENECK["attention"]]
    assert recipe.task["max_len"] < evidence.LONGER_BUCKETS[0]
    assert longer.src_vocab.itos == make_task(**recipe.task).src_vocab.itos  # the same ids


def test_date_fields_point_each_digit_at_its_field_of_the_source() -> None:
    src = [*"may 3, 1979", "<eos>"]
    out = [*"1979-05-03", "<eos>"]
    fields = evidence.date_fields(src, out)
    assert fields is not None
    year, month, day = set(range(7, 11)), {0, 1, 2}, {4}
    assert fields[:4] == [year] * 4
    assert fields[5:7] == [month] * 2
    assert fields[8:10] == [day] * 2
    assert fields[4] == fields[7] == fields[10] == frozenset()
    assert evidence.date_fields(src, [*"1979-05-04", "<eos>"]) is None  # not the date of the source


def test_entropy_share_and_top1_agreement() -> None:
    one_hot = np.eye(3)
    uniform = np.full((3, 3), 1 / 3)
    assert evidence.entropy_share([one_hot]) == 0.0
    assert evidence.entropy_share([uniform]) == pytest.approx(1.0)
    assert evidence.top1_agreement([one_hot], [one_hot[::-1]]) == pytest.approx(1 / 3)
    assert (
        evidence.top1_agreement([one_hot, np.eye(2)], [one_hot, np.eye(3)]) == 1.0
    )  # shapes must match
    with pytest.raises(ValueError, match="same shape"):
        evidence.top1_agreement([np.eye(2)], [np.eye(3)])


def test_question_1_holds_over_the_nine_shipped_models() -> None:
    found = evidence.context_claims((0, 1, 2))  # raises ClaimError if a claim stops holding
    assert len(found["checks"]) >= 4
    assert all(c.holds for c in found["checks"])
    assert {len(v) for v in found["steps"].values()} == {len((0, 1, 2))}


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("name", sorted(evidence.CONTEXT_IN.values()))
def test_a_seed_checkpoint_is_its_recipe_with_another_training_seed(name: str, seed: int) -> None:
    twin = pretrained.RECIPES[f"{name}_seed{seed}"].as_dict()
    assert twin == {**pretrained.reseeded(name, seed).as_dict(), "name": f"{name}_seed{seed}"}
    assert twin["task"] == pretrained.RECIPES[name].as_dict()["task"]  # the same data


@pytest.mark.slow
def test_a_seed_checkpoint_is_what_retraining_with_that_seed_gives() -> None:
    shipped = pretrained.load("dates_ctx_output_seed1", retrain=False)
    live = pretrained.retrain("dates_ctx_output", seed=1)
    weights = live.model.state_dict()
    for k, v in shipped.model.state_dict().items():
        torch.testing.assert_close(v, weights[k], rtol=0, atol=pretrained.RETRAIN_ATOL, msg=k)
    assert live.metrics == shipped.metrics
    assert live.history.eval_step == shipped.history.eval_step


def test_a_claim_function_runs_only_the_parts_asked_for() -> None:
    got = evidence.seq2seq_claims(parts=["reverse"])
    assert set(got["checks"]) == {"reverse"}
    assert "ablation" not in got
    with pytest.raises(ValueError, match="parts must be among"):
        evidence.why_claims(parts=["nope"])
