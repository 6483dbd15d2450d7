"""Tests for attnlib.mt.examples: examples picked by rule, beam traces, final-state sensitivity.

The expected picks come from small test sets built so that each rule has one obvious
answer (a hypothesis equal to its reference, one sharing no word with it, ...); the beam
trace is checked against the model's own softmax, computed here by teacher forcing.
"""

from __future__ import annotations

import functools

import pytest
import torch

from attnlib.models import BiGRUEncoder, Seq2Seq, make_seq2seq
from attnlib.mt import examples as mx
from attnlib.mt import tatoeba as tb
from attnlib.vocab import BOS_ID, EOS_ID, PAD_ID, Vocab

# Five sources, built so that each rule has one answer:
#   0  beam = the reference, greedy shares one word with it   → "beam fixes greedy"
#   1  greedy = the reference, beam shares one word            → "beam breaks greedy"
#   2  the longest source; beam holds <unk> (the only one)     → "longest source", "<unk>"
#   3  beam and greedy share no token with the reference       → "lowest BLEU"
#   4  a one-word output against a nine-piece reference        → "over-short"
#   3  is also the longest output against its references       → "over-long"
SOURCES = [
    "The cat is black.",
    "I like tea.",
    "My old friend lives in a small town near the sea.",
    "Go away now.",
    "Hello.",
]
REFERENCES = [
    ["Le chat est noir."],
    ["J'aime le thé."],
    ["Mon vieil ami vit dans une petite ville près de la mer."],
    ["Va-t'en."],
    ["Bonjour, comment allez-vous, mes chers amis du village ?", "Salut, mes amis !"],
]
GREEDY = [
    "Un chien dort ici.",
    "J'aime le thé.",
    "Mon vieil ami vit dans une petite ville près de la mer.",
    "Partez tout de suite maintenant, vous tous !",
    "Bonjour.",
]
BEAM = [
    "Le chat est noir.",
    "J'adore la tisane.",
    "Mon vieil ami vit dans une <unk> ville près de la mer.",
    "Partez tout de suite maintenant, vous tous !",
    "Bonjour.",
]


def _picks() -> dict[str, mx.Example]:
    return {e.rule: e for e in mx.pick_examples(SOURCES, REFERENCES, GREEDY, BEAM)}


def test_each_rule_picks_the_sentence_built_for_it() -> None:
    picks = _picks()
    assert list(picks) == list(mx.RULES)
    expected = {
        "beam fixes greedy": 0,
        "beam breaks greedy": 1,
        "longest source": 2,
        "<unk>": 2,
        "lowest BLEU": 3,
        "over-short": 4,
        "over-long": 3,
    }
    assert {rule: e.index for rule, e in picks.items()} == expected


def test_an_example_carries_its_sentence_and_its_scores() -> None:
    e = _picks()["beam fixes greedy"]
    assert (e.source, e.references, e.greedy, e.beam) == (
        SOURCES[0], tuple(REFERENCES[0]), GREEDY[0], BEAM[0],
    )  # fmt: skip
    assert e.bleu_beam == pytest.approx(100.0)  # the beam output is the reference
    assert e.bleu_greedy < 20.0
    assert _picks()["lowest BLEU"].bleu_beam == pytest.approx(0.0)  # no shared word


def test_the_unk_rule_is_left_out_when_no_output_has_unk() -> None:
    beam = [b.replace("<unk>", "petite") for b in BEAM]
    rules = [e.rule for e in mx.pick_examples(SOURCES, REFERENCES, GREEDY, beam)]
    assert "<unk>" not in rules
    assert len(rules) == len(mx.RULES) - 1


def test_ties_go_to_the_first_sentence() -> None:
    # two identical rows: every rule must pick the first of them
    picks = mx.pick_examples(["Go.", "Go."], [["Va !"], ["Va !"]], ["Va !"] * 2, ["Va !"] * 2)
    assert {e.index for e in picks} == {0}


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"greedy": GREEDY[:-1]}, ValueError, "greedy has 4 entries but there are 5 sources"),
        ({"beam": "Le chat est noir."}, TypeError, "beam must be a list"),
        ({"references": REFERENCES[:2]}, ValueError, "references has 2 entries"),
    ],
)
def test_mismatched_inputs_are_refused(kwargs: dict, error: type, match: str) -> None:
    args = {"sources": SOURCES, "references": REFERENCES, "greedy": GREEDY, "beam": BEAM}
    with pytest.raises(error, match=match):
        mx.pick_examples(**{**args, **kwargs})


def test_no_sources_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one source"):
        mx.pick_examples([], [], [], [])


def test_pieces_and_words() -> None:
    assert mx.pieces("Prouve-le-moi !") == 3
    assert mx.pieces("L'orchestre joue.") == 3
    assert tb.words("Don't stop, Tom!", "en") == 4  # don, 't, stop, tom: punctuation is no word


def test_reference_disagreement_finds_the_reference_the_others_do_not_word_alike() -> None:
    sources = ["Go.", "I'm cold.", "Thanks."]
    references = [
        ["Va !"],  # one reference: nothing to compare
        ["J'ai froid.", "Je me gèle complètement !"],  # not one token in common
        ["Merci.", "Merci."],  # identical: BLEU 100
    ]
    d = mx.reference_disagreement(sources, references)
    assert (d.index, d.source) == (1, "I'm cold.")
    # both score 0 against the other: the tie goes to the first
    assert d.reference == "J'ai froid."
    assert d.others == ("Je me gèle complètement !",)
    assert d.bleu == pytest.approx(0.0)


def test_reference_disagreement_needs_two_references() -> None:
    with pytest.raises(ValueError, match="two references"):
        mx.reference_disagreement(["Go."], [["Va !"]])


# --------------------------------------------------------------------------- models
V_SRC, V_TGT = 12, 9


@functools.cache
def _model() -> Seq2Seq:
    return make_seq2seq(V_SRC, V_TGT, emb=8, hidden=8, d_s=12, d_a=6, seed=3)


def test_beam_trace_step_1_holds_the_k_most_probable_first_tokens() -> None:
    model, k = _model(), 3
    src = torch.tensor([[4, 7, 5, EOS_ID]])
    trace = mx.beam_trace(model, src, k, steps=3)
    assert len(trace) == 3
    # the model's own distribution of the first token, by teacher forcing with <bos> alone
    with torch.no_grad():
        logits, _ = model(src, torch.tensor([[BOS_ID]]))
    logp = torch.log_softmax(logits[0, 0].double(), dim=-1)
    logp[[PAD_ID, BOS_ID]] = float("-inf")  # never generated
    top = logp.topk(k)
    step1 = sorted(trace[0], key=lambda h: -h.log_prob)
    assert [h.tokens + ((EOS_ID,) if h.finished else ()) for h in step1] == [
        (int(i),) for i in top.indices
    ]
    assert [h.log_prob for h in step1] == pytest.approx(top.values.tolist(), abs=1e-5)
    for t, hyps in enumerate(trace, start=1):
        assert 1 <= len(hyps) <= k
        assert all(h.steps <= t for h in hyps)


def test_beam_trace_refuses_a_batch_and_bad_steps() -> None:
    src = torch.tensor([[4, EOS_ID], [5, EOS_ID]])
    with pytest.raises(ValueError, match=r"src must be \(1, T_x\)"):
        mx.beam_trace(_model(), src, 2, steps=2)
    with pytest.raises(ValueError, match="steps"):
        mx.beam_trace(_model(), src[:1], 2, steps=0)


def test_trace_text_shows_every_hypothesis_of_every_step() -> None:
    vocab = Vocab([f"w{i}" for i in range(V_TGT - 3)])
    trace = mx.beam_trace(_model(), torch.tensor([[4, 7, EOS_ID]]), 2, steps=2)
    text = mx.trace_text(trace, vocab)
    assert len(text.splitlines()) == sum(len(h) for h in trace)
    assert text.startswith("t = 1")


def _vocab() -> Vocab:
    return tb.build_vocab([("the", "cat", "sat", "on", "a", "mat", "dog", ".")], 1, name="English")


def _sentences() -> list[str]:
    return ["The cat sat on a mat.", "A dog sat.", "The dog sat on the cat."]


def test_sensitivity_tells_the_two_directions_apart() -> None:
    vocab = _vocab()
    model = make_seq2seq(len(vocab), V_TGT, emb=8, hidden=8, d_s=12, d_a=6, seed=1)
    # The backward GRU ignores its input: ←h_1 is the same whatever the words, so a change of
    # any word leaves it unchanged, while →h_L still reads them.
    encoder = model.encoder
    assert isinstance(encoder, BiGRUEncoder)
    with torch.no_grad():
        for name, weight in encoder.gru_backward.named_parameters():
            if name.startswith("weight_ih"):  # what the GRU multiplies its input by
                weight.zero_()
    s = mx.final_state_sensitivity(model, vocab, _sentences())
    assert s.n == 3
    assert s.first_backward == pytest.approx(0.0, abs=1e-7)
    assert s.last_backward == pytest.approx(0.0, abs=1e-7)
    assert s.first_forward > 0.0
    assert s.last_forward > 0.0


def test_sensitivity_leaves_out_what_it_cannot_change() -> None:
    vocab = _vocab()
    model = make_seq2seq(len(vocab), V_TGT, emb=8, hidden=8, d_s=12, d_a=6, seed=1)
    # one word only; first word unknown; last word unknown: none can be measured
    s = mx.final_state_sensitivity(
        model, vocab, ["Cat.", "Zebra sat.", "The zebra.", *_sentences()]
    )
    assert s.n == 3
    with pytest.raises(ValueError, match="two known words"):
        mx.final_state_sensitivity(model, vocab, ["Cat.", "Zebra sat."])


def test_sensitivity_needs_the_bidirectional_encoder_and_a_list() -> None:
    vocab = _vocab()
    emb = make_seq2seq(len(vocab), V_TGT, encoder="embedding", emb=8, d_s=12, d_a=6)
    with pytest.raises(ValueError, match="bidirectional GRU"):
        mx.final_state_sensitivity(emb, vocab, _sentences())
    bi = make_seq2seq(len(vocab), V_TGT, emb=8, hidden=8, d_s=12, d_a=6)
    with pytest.raises(TypeError, match="list of sentences"):
        mx.final_state_sensitivity(bi, vocab, "The cat sat.")


def test_html_tables_escape_the_text() -> None:
    e = _picks()["<unk>"]
    table = mx.examples_html([e])
    assert "&lt;unk&gt;" in table
    assert "<unk>" not in table
    assert table.count("<tr>") == 2  # the header and one example
    assert "<br>" not in mx.html_table(["a"], [["x"]])
    assert mx.html_table(["a"], [[["x", "y"]]]).count("<br>") == 1


# --------------------------------------------------------------------------- details carried over
DETAIL_SOURCES = ["Tom has a red car.", "I live in Boston.", "The 3 dogs are black.", "Go home."]
DETAIL_REFS = [
    ["Tom a une voiture rouge."],
    ["Je vis à Boston.", "J'habite à Boston."],
    ["Les 3 chiens sont noirs."],
    ["Rentre chez toi."],
]


def test_carried_details_counts_what_a_reference_carries_over_and_the_output_keeps():
    outputs = [
        "Tom a une voiture bleue.",
        "Je vis à boston.",
        "Les trois chiens sont noires.",
        "Va.",
    ]
    got = mx.carried_details(DETAIL_SOURCES, DETAIL_REFS, outputs)
    # names: Tom and Boston (any case in the output), not "The", "I" or "Go", which no
    # reference writes; numbers: 3; colours: red (dropped) and black (any French form)
    assert (got["names"].kept, got["names"].n) == (2, 2)
    assert (got["numbers"].kept, got["numbers"].n) == (0, 1)
    assert (got["colours"].kept, got["colours"].n) == (1, 2)
    assert (got["all"].kept, got["all"].n) == (3, 5)
    assert got["colours"].share == 0.5
    # a detail no reference carries over is not asked of the output
    free = mx.carried_details(["Tom is red."], [["Il a honte."]], ["Il est rouge."])
    assert free["all"].n == 0
    assert free["names"].share != free["names"].share  # NaN: nothing to count


def test_carried_pairs_counts_the_details_one_output_keeps_and_the_other_drops():
    keeps = ["Tom a une voiture rouge.", "Je vis à Boston.", "Les 3 chiens sont noirs.", "Va."]
    drops = ["Il a une voiture.", "Je vis à Paris.", "Les 3 chiens sont noirs.", "Va."]
    paired = mx.carried_pairs(DETAIL_SOURCES, DETAIL_REFS, keeps, drops)
    assert (paired.a_only, paired.b_only) == (3, 0)  # Tom, red, Boston; 3 and black both keep
    assert paired.p == pytest.approx(1 / 8)  # three heads in three fair coin flips
    reverse = mx.carried_pairs(DETAIL_SOURCES, DETAIL_REFS, drops, keeps)
    assert (reverse.a_only, reverse.b_only, reverse.p) == (0, 3, 1.0)
    same = mx.carried_pairs(DETAIL_SOURCES, DETAIL_REFS, keeps, keeps)
    assert (same.a_only, same.b_only, same.p) == (0, 0, 1.0)
    with pytest.raises(ValueError, match="3 entries but there are 4 sources"):
        mx.carried_pairs(DETAIL_SOURCES, DETAIL_REFS, keeps[:3], drops)
