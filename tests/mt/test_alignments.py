"""Tests of attnlib.mt.alignments: BLEU per bucket with bootstrap intervals, monotonicity, features."""

from __future__ import annotations

import dataclasses
import functools
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.mt import alignments as ma
from attnlib.mt import scoring
from attnlib.mt import tatoeba as tb
from attnlib.mt import translation as tr


# --------------------------------------------------------------------------- helpers
def peaks_alpha(peaks: list[int], T_x: int, top: float = 0.7) -> np.ndarray:
    """A (T_y, T_x) heatmap whose row t puts ``top`` on peaks[t] and spreads the rest evenly."""
    a = np.full((len(peaks), T_x), (1 - top) / (T_x - 1))
    a[np.arange(len(peaks)), peaks] = top
    return a


def item(
    source: str,
    out: str,
    peaks: list[int] | None = None,
    references: tuple[str, ...] = (),
    unknown: frozenset[str] = frozenset(),
) -> ma.Aligned:
    """An Aligned built by hand: ``out`` is space-separated French tokens, <eos> added."""
    src = (*(tb.UNK if t in unknown else t for t in tb.tokenise(source, "en")), "<eos>")
    tgt = (*out.split(), "<eos>")
    if peaks is None:  # a diagonal, clipped to the source
        peaks = [min(t, len(src) - 1) for t in range(len(tgt))]
    return ma.Aligned(0, source, references, src, tgt, peaks_alpha(peaks, len(src)))


def evaluation(sources: list[str], hyps: list[str], refs: list[list[str]]) -> Any:
    """What bleu_table reads of an Evaluation."""
    return SimpleNamespace(sources=sources, hypotheses=hyps, references=refs)


SOURCES = ["Go.", "I'm here.", "Tom is very tall.", "Where is the red car?", "I don't like it."]
REFS = [
    ["Va !", "Pars !"],
    ["Je suis là.", "Je suis ici."],
    ["Tom est très grand."],
    ["Où est la voiture rouge ?"],
    ["Je ne l'aime pas.", "Ça ne me plaît pas."],
]


# --------------------------------------------------------------------------- BLEU from statistics
def test_words_counts_tokens_with_a_letter_or_digit() -> None:
    # by hand: "I'm" is the two tokens i 'm; punctuation is no word
    assert [tb.words(s) for s in SOURCES] == [1, 3, 4, 5, 5]
    assert tb.words("In 1992, yes!") == 3


def test_bleu_from_summed_stats_is_corpus_bleu() -> None:
    hyps = ["Va !", "Je suis là.", "Tom est grand.", "Où la voiture rouge ?", "Je l'aime pas."]
    stats = ma.sentence_stats(hyps, REFS)
    assert stats.shape == (5, 10)
    assert ma.bleu_from_stats(stats.sum(axis=0)) == pytest.approx(
        scoring.corpus_bleu(hyps, REFS).score, abs=1e-9
    )
    # any subset is the BLEU of that subset
    sub = [1, 3, 4]
    assert ma.bleu_from_stats(stats[sub].sum(axis=0)) == pytest.approx(
        scoring.corpus_bleu([hyps[i] for i in sub], [REFS[i] for i in sub]).score, abs=1e-9
    )


def test_bleu_from_stats_edge_cases_agree_with_sacrebleu() -> None:
    cases = [
        (["Je suis là."], [["Je suis ici."]]),  # no 4-gram matches: smoothed
        (["Je"], [["Je suis ici maintenant."]]),  # no bigram at all: 0
        (["Rien du tout ici."], [["Je suis là."]]),  # nothing matches: 0
        (["Tom est grand."], [["Tom est très très grand aujourd'hui."]]),  # short: BP < 1
    ]
    for hyps, refs in cases:
        got = ma.bleu_from_stats(ma.sentence_stats(hyps, refs).sum(axis=0))
        assert got == pytest.approx(scoring.corpus_bleu(hyps, refs).score, abs=1e-9)
    assert ma.bleu_from_stats(ma.sentence_stats(["Je"], [["Je suis ici."]])[0]) == 0.0


WORDS = ["le", "chat", "est", "noir", "la", "voiture", "rouge", "je", "suis", "là", "."]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(WORDS), min_size=1, max_size=7),
            st.lists(
                st.lists(st.sampled_from(WORDS), min_size=1, max_size=7), min_size=1, max_size=3
            ),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_bleu_from_stats_matches_sacrebleu_on_random_corpora(corpus: list[Any]) -> None:
    hyps = [" ".join(h) for h, _ in corpus]
    refs = [[" ".join(r) for r in rs] for _, rs in corpus]
    got = ma.bleu_from_stats(ma.sentence_stats(hyps, refs).sum(axis=0))
    assert got == pytest.approx(scoring.corpus_bleu(hyps, refs).score, abs=1e-7)


def test_bleu_from_stats_is_vectorised_and_checks_its_shape() -> None:
    stats = ma.sentence_stats(["Je suis là.", "Va !"], [["Je suis là."], ["Va !"]])
    both = np.stack([stats[0], stats.sum(axis=0)])
    out = ma.bleu_from_stats(both)
    assert isinstance(out, np.ndarray)
    assert out.shape == (2,)
    assert out[0] == pytest.approx(100.0)
    with pytest.raises(ValueError, match="shape"):
        ma.bleu_from_stats(np.zeros((3, 4)))


def test_sentence_stats_rejects_bad_input() -> None:
    with pytest.raises(TypeError, match="list of strings"):
        ma.sentence_stats("Va !", [["Va !"]])
    with pytest.raises(ValueError, match="2 hypotheses but 1"):
        ma.sentence_stats(["a", "b"], [["a"]])


# --------------------------------------------------------------------------- the bucket table
def test_bleu_table_counts_scores_and_intervals() -> None:
    perfect = [r[0] for r in REFS]
    poor = ["Va !", "Je là.", "Tom grand.", "Où voiture ?", "Je pas."]
    evs = {
        "perfect": evaluation(SOURCES, perfect, REFS),
        "poor": evaluation(SOURCES, poor, REFS),
    }
    table = ma.bleu_table(evs, (1, 4, 6), n_boot=200, seed=3)
    # by hand: 1 and 3 words in the first bucket, 4, 5, 5 in the second
    assert table.labels == ["1-3", "4-5"]
    assert table.counts == [2, 3]
    assert table.bleu("perfect") == pytest.approx([100.0, 100.0])
    # on sentences of four tokens or more a perfect model scores 100 on every resample
    assert table.buckets["perfect"][1].low == table.buckets["perfect"][1].high == pytest.approx(100)
    # but a resample that draws "Va !" (two tokens, no 4-gram) alone scores 0: BLEU needs 4-grams
    assert table.buckets["perfect"][0].low == 0.0
    second = scoring.corpus_bleu(poor[2:], REFS[2:]).score
    assert table.bleu("poor")[1] == pytest.approx(second)
    assert table.overall["poor"] == pytest.approx(scoring.corpus_bleu(poor, REFS).score)
    for b in table.buckets["poor"]:
        assert b.low <= b.high <= 100.0
    assert table.samples["poor"].shape == (2, 200)
    # paired resamples: on the second bucket the perfect model is ahead on every one; on the
    # first, the resamples that draw only "Va !" (the same in both) are ties, not wins
    wins = table.wins("perfect", "poor")
    assert wins[1] == 1.0
    assert 0.5 < wins[0] < 1.0
    assert table.wins("poor", "perfect") == [0.0, 0.0]
    assert table.gaps("perfect", "poor")[1] == pytest.approx(100.0 - second)
    assert "| 4-5 | 3 |" in table.markdown()


def test_bleu_table_is_seeded_and_leaves_out_empty_buckets() -> None:
    evs = {"m": evaluation(SOURCES, ["Va !", "Je suis.", "Tom.", "Où ?", "Non."], REFS)}
    a = ma.bleu_table(evs, (1, 2, 3, 8, 10), n_boot=50, seed=1)
    b = ma.bleu_table(evs, (1, 2, 3, 8, 10), n_boot=50, seed=1)
    np.testing.assert_array_equal(a.samples["m"], b.samples["m"])
    assert a.labels == ["1", "3-7"]  # nothing has 2 or 8-9 words
    assert a.counts == [1, 4]


def test_bleu_table_rejects_bad_input() -> None:
    ev = evaluation(SOURCES, [r[0] for r in REFS], REFS)
    with pytest.raises(ValueError, match="at least one"):
        ma.bleu_table({}, (1, 10))
    other = evaluation(SOURCES[::-1], [r[0] for r in REFS], REFS)
    with pytest.raises(ValueError, match="other sources"):
        ma.bleu_table({"a": ev, "b": other}, (1, 10))
    with pytest.raises(ValueError, match="outside the edges"):
        ma.bleu_table({"a": ev}, (1, 5))
    with pytest.raises(ValueError, match="increasing"):
        ma.bleu_table({"a": ev}, (5, 1))
    with pytest.raises(ValueError, match="n_boot"):
        ma.bleu_table({"a": ev}, (1, 10), n_boot=0)
    with pytest.raises(ValueError, match="level"):
        ma.bleu_table({"a": ev}, (1, 10), level=1.5)
    table = ma.bleu_table({"a": ev}, (1, 10), n_boot=10)
    with pytest.raises(ValueError, match="no model 'b'"):
        table.wins("a", "b")


def test_plot_bleu_by_length_draws_a_line_and_intervals_per_model() -> None:
    import matplotlib.pyplot as plt

    evs = {
        "perfect": evaluation(SOURCES, [r[0] for r in REFS], REFS),
        "poor": evaluation(SOURCES, ["Va !", "Je.", "Tom.", "Où ?", "Non."], REFS),
    }
    table = ma.bleu_table(evs, (1, 4, 6), n_boot=20)
    ax = ma.plot_bleu_by_length(table, labels={"poor": "a poor model"}, trained_up_to=3.5)
    legend = ax.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == ["perfect", "a poor model"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1-3", "4-5"]
    assert len(ax.containers) == 2  # one set of error bars per model
    plt.close("all")


# --------------------------------------------------------------------------- monotonicity
def test_backward_share_by_hand() -> None:
    assert ma.backward_share(peaks_alpha([0, 1, 2, 3], 5)) == 0.0
    assert ma.backward_share(peaks_alpha([3, 2, 1, 0], 5)) == 1.0
    assert ma.backward_share(peaks_alpha([0, 2, 1, 3], 5)) == pytest.approx(1 / 3)
    assert ma.backward_share(peaks_alpha([0, 0, 1], 3)) == 0.0  # staying is not moving back
    assert ma.backward_share(peaks_alpha([2], 3)) == 0.0
    with pytest.raises(ValueError, match="T_y, T_x"):
        ma.backward_share(np.ones(3) / 3)


def test_crossing_by_hand() -> None:
    assert ma.crossing(peaks_alpha([0, 1, 2, 3], 5)) == 0.0
    assert ma.crossing(peaks_alpha([3, 2, 1, 0], 5)) == 1.0
    # [0, 2, 1]: of the 3 pairs only (2, 1) crosses
    assert ma.crossing(peaks_alpha([0, 2, 1], 4)) == pytest.approx(1 / 3)
    # one step back, but a long reach: [1, 2, 3, 0] crosses in 3 of 6 pairs
    assert ma.crossing(peaks_alpha([1, 2, 3, 0], 5)) == pytest.approx(0.5)


def test_least_monotonic_ranks_by_backward_moves_then_reach() -> None:
    diagonal = item("I see the cat.", "je vois le chat .", [0, 1, 2, 3, 4, 5])
    one_back = item("I see the cat.", "je vois le chat .", [0, 2, 1, 3, 4, 5])
    far_back = item("I see the cat.", "je le vois chat .", [0, 1, 3, 0, 4, 5])
    reverse = item("I see it.", "le vois je", [2, 1, 0, 3])
    short = item("Go.", "va", [1, 0])
    ranked = ma.least_monotonic([diagonal, one_back, far_back, reverse, short], 3)
    assert [r[0] for r in ranked] == [reverse, far_back, one_back]
    assert ranked[0][1] == pytest.approx(2 / 3)
    # one_back and far_back both move back once in five moves; far_back reaches further
    assert ranked[1][1] == ranked[2][1] == pytest.approx(1 / 5)
    # with min_steps=2 the two-step output, which moves back on its only move, comes first
    assert ma.least_monotonic([diagonal, short], 1, min_steps=2)[0][0] is short
    with pytest.raises(ValueError, match="n must"):
        ma.least_monotonic([diagonal], 0)


# --------------------------------------------------------------------------- adjective–noun swaps
RED_CAR = ("La voiture rouge est à moi.",)


def test_swap_found_and_alpha_crossing_checked() -> None:
    # the red car is mine . <eos>  →  la voiture rouge est à moi . <eos>
    crossing = item("The red car is mine.", "la voiture rouge est à moi .",
                    [0, 2, 1, 3, 4, 4, 5, 6], RED_CAR)  # fmt: skip
    [swap] = ma.adjective_noun_swaps([crossing])
    assert (swap.adjective, swap.noun, swap.q) == ("red", "car", 1)
    assert swap.in_reference
    assert swap.in_output
    assert swap.t == 2
    assert swap.crossing
    assert swap.on_words
    # crossing, one word to the right: "voiture" on "is", "rouge" on "car"
    shifted = item("The red car is mine.", "la voiture rouge est à moi .",
                   [1, 3, 2, 4, 5, 5, 5, 6], RED_CAR)  # fmt: skip
    [swap] = ma.adjective_noun_swaps([shifted])
    assert swap.crossing
    assert not swap.on_words
    # the same words with α that does not cross (both rows on "red")
    flat = item("The red car is mine.", "la voiture rouge est à moi .",
                [0, 1, 1, 3, 4, 4, 5, 6], RED_CAR)  # fmt: skip
    [swap] = ma.adjective_noun_swaps([flat])
    assert swap.in_output
    assert not swap.crossing
    assert not swap.on_words


def test_swap_needs_an_attributive_adjective_and_a_noun_before_the_french_one() -> None:
    predicative = item(
        "The car is red.", "la voiture est rouge .", None, ("La voiture est rouge.",)
    )
    assert ma.adjective_noun_swaps([predicative]) == []
    # the model writes the adjective without its noun: in the reference, not in the output
    dropped = item("The red car is mine.", "la rouge est à moi .", None, RED_CAR)
    [swap] = ma.adjective_noun_swaps([dropped])
    assert swap.in_reference
    assert not swap.in_output
    assert swap.t is None
    assert not swap.crossing
    # an adjective that precedes its noun in French is not in the lexicon
    big = item("The big car is mine.", "la grande voiture est à moi .", None, ("x",))
    assert ma.adjective_noun_swaps([big]) == []


# --------------------------------------------------------------------------- features
def test_each_feature_on_sentences_built_for_it() -> None:
    has = {name: test for name, (_, test) in ma.FEATURES.items()}
    assert has["question"](item("Do you see it?", "le vois-tu ?"))
    assert not has["question"](item("I see it.", "je le vois ."))
    assert has["negation"](item("I don't know.", "je ne sais pas ."))
    assert has["negation"](item("It isn't mine.", "ce n' est pas à moi ."))
    assert not has["negation"](item("I know.", "je sais ."))
    assert has["object pronoun"](item("I see it.", "je le vois ."))
    assert has["object pronoun"](item("I didn't see him.", "je ne l' ai pas vu ."))
    assert not has["object pronoun"](item("I see the dog.", "je vois le chien ."))
    assert has["noun–adjective"](item("The red car is mine.", "la voiture rouge est à moi ."))
    assert not has["noun–adjective"](item("The car is red.", "la voiture est rouge ."))
    assert has["unknown word"](item("I saw a quokka.", "j' ai vu un <unk> ."))
    assert has["unknown word"](item("I saw a quokka.", "j' ai vu .", unknown=frozenset({"quokka"})))
    assert not has["unknown word"](item("I saw a cat.", "j' ai vu un chat ."))
    refs = ("J'ai vu un chat.", "J'ai vu une chatte.")
    assert not has["not a reference"](item("I saw a cat.", "j' ai vu un chat .", None, refs))
    assert has["not a reference"](item("I saw a cat.", "j' ai vu le chat .", None, refs))


def test_feature_table_counts_group_and_split() -> None:
    q1, q2 = item("Is it red?", "est-ce rouge ?"), item("Who is he?", "qui est-il ?")
    plain = [item("I see.", "je vois ."), item("Go.", "va .")]
    rows = {r.name: r for r in ma.feature_table([q1, q2], [q1, q2, *plain])}
    q = rows["question"]
    assert (q.in_group, q.n_group, q.in_all, q.n_all) == (2, 2, 2, 4)
    assert q.group_share == 1.0
    assert q.all_share == 0.5
    assert q.ratio == 2.0
    assert rows["negation"].in_all == 0
    assert rows["negation"].ratio == float("inf")
    assert ma.any_feature(q1)
    assert not ma.any_feature(plain[0])
    assert ma.any_feature(q1, ["question"])
    assert not ma.any_feature(q1, ["negation"])
    with pytest.raises(ValueError, match="no feature"):
        ma.any_feature(q1, ["passive"])
    with pytest.raises(ValueError, match="non-empty"):
        ma.feature_table([], plain)


def test_p_over_is_the_hypergeometric_tail_of_the_group_count() -> None:
    # 10 sentences, 3 with the feature; a group of 2 holding both: 3 of the 45 pairs do
    both = ma.FeatureRow("f", "", in_group=2, in_all=3, n_group=2, n_all=10)
    assert both.p_over == pytest.approx(3 / 45)
    # at least one of the 2: all pairs but the 21 drawn from the 7 without it
    one = dataclasses.replace(both, in_group=1)
    assert one.p_over == pytest.approx(1 - 21 / 45)
    assert dataclasses.replace(both, in_group=0).p_over == pytest.approx(1.0)
    # by simulation: draw groups of 2 at random and count how often both have it
    rng = np.random.default_rng(0)
    has = np.array([True] * 3 + [False] * 7)
    draws = np.array([has[rng.choice(10, size=2, replace=False)].sum() for _ in range(20_000)])
    assert both.p_over == pytest.approx(np.mean(draws >= 2), abs=0.01)
    # a group with the split's share has nothing to explain
    whole = ma.FeatureRow("f", "", in_group=3, in_all=3, n_group=10, n_all=10)
    assert whole.p_over == 1.0


def test_feature_cuts_count_each_top_of_the_ranking() -> None:
    q1, q2 = item("Is it red?", "est-ce rouge ?"), item("Who is he?", "qui est-il ?")
    plain = [item("I see.", "je vois ."), item("Go.", "va .")]
    ranked = [q1, plain[0], q2, plain[1]]
    cuts = ma.feature_cuts(ranked, ranked, (1, 2, 4))
    assert [cuts[n]["question"].in_group for n in (1, 2, 4)] == [1, 1, 2]
    assert cuts[2]["question"].ratio == 1.0  # half of the top 2, half of all
    table = ma.feature_markdown(cuts)
    assert table.splitlines()[0] == "| feature | all test sentences | top 1 | top 2 | top 4 |"
    # the top 1 is a question with probability 2/4; the top 2 holds one or both with 5/6
    assert "| 100% (×2.0, p 0.5) | 50% (×1.0, p 0.83) | 50% (×1.0, p 1) |" in table
    assert ma.feature_markdown(cuts, "ranked").splitlines()[0].startswith("| feature | ranked |")
    with pytest.raises(ValueError, match="every cut"):
        ma.feature_cuts(ranked, ranked, (5,))


def test_row_peaks_reads_the_rows_of_a_token() -> None:
    it = item("The red car is mine.", "la voiture rouge est à moi .", [0, 2, 1, 3, 4, 4, 5, 6])
    [(t, word, weight)] = ma.row_peaks(it, "rouge")
    assert (t, word) == (2, "red")
    assert weight == pytest.approx(0.7)
    [(t, word, weight)] = ma.row_peaks(it, "voiture")
    assert (t, word) == (1, "car")
    assert ma.row_peaks(it, "bleu") == []
    assert it.peaks == [0, 2, 1, 3, 4, 4, 5, 6]
    assert it.text == "la voiture rouge est à moi ."
    assert it.french == "la voiture rouge est à moi."
    assert item("I see the man.", "je vois l' homme .").french == "je vois l'homme."
    assert it.entropy.shape == (8,)


# --------------------------------------------------------------------------- decoding with α
TINY = tr.Recipe(
    limit=300, test_sources=20, valid_sources=10, min_freq=2, emb=8, hidden=8, d_s=8, d_a=8,
    threads=1,
)  # fmt: skip


@functools.cache
def _tiny(attention: bool = True) -> tr.Trained:
    recipe = TINY if attention else dataclasses.replace(TINY, decoder="none")
    data = tr.prepare(recipe, tb.load_pairs()[:300])
    model = tr.build_model(recipe, data)  # untrained: enough for shapes and bookkeeping
    return tr.Trained("custom", recipe, model.eval(), data, tr.History())


@pytest.mark.slow
def test_align_keeps_alpha_with_the_tokens_that_label_it() -> None:
    trained = _tiny()
    items = ma.align(trained)
    refs = trained.data.references["test"]
    assert [it.source for it in items] == [en for en, _ in refs]
    assert [it.index for it in items] == list(range(len(refs)))
    decoded = tr.decode(trained.model, trained.data, [en for en, _ in refs])
    for it, d in zip(items, decoded, strict=True):
        assert it.alpha.shape == (len(it.out), len(it.src))
        np.testing.assert_allclose(it.alpha.sum(axis=1), 1.0, atol=1e-5)
        assert it.src[-1] == "<eos>"
        assert len(it.src) - 1 == len(it.words)
        assert [trained.data.tgt_vocab.stoi[t] for t in it.out if t != "<eos>"] == list(d.tokens)
        for w, s in zip(it.words, it.src, strict=False):  # unknown words read as <unk>
            assert s == (w if w in trained.data.src_vocab.stoi else tb.UNK)
    [mine] = ma.align(trained, ["The zyxwv car is mine."])
    assert mine.index == -1
    assert mine.references == ()
    assert mine.src[1] == tb.UNK
    fig = ma.draw_alignments([*items[:3], mine], ncols=2)
    # 4 heatmaps, 4 entropy panels and the colour bar they share
    assert sum(ax.get_visible() for ax in fig.axes) == 9
    (bar,) = [ax for ax in fig.axes if "same scale" in ax.get_xlabel()]
    assert bar.get_xlim() == (0.0, 1.0)
    import matplotlib.pyplot as plt

    plt.close(fig)


@pytest.mark.slow
def test_forcing_the_models_own_output_gives_back_the_alpha_of_decoding() -> None:
    """Greedy decoding feeds the model its own last word; forcing that same output feeds it
    the same words, so the two α agree (to float32 rounding): forcing changes only what the
    decoder reads, never how it attends. (The untrained model runs to its length limit
    without an <eos>: the forced output ends with one, a row decoding did not reach.)"""
    trained = _tiny()
    items = [it for it in ma.align(trained) if tb.UNK not in it.out]
    assert len(items) >= 5, "too few outputs without <unk> to compare"
    pairs = [(it.source, " ".join(t for t in it.out if t != "<eos>")) for it in items]
    forced = ma.forced_align(trained, pairs, indices=[it.index for it in items])
    for it, f, (_, fr) in zip(items, forced, pairs, strict=True):
        assert (f.index, f.source, f.src, f.references) == (it.index, it.source, it.src, (fr,))
        written = it.out if it.out[-1] == "<eos>" else (*it.out, "<eos>")
        assert f.out == written
        rows = len(it.out)
        np.testing.assert_allclose(f.alpha[:rows], it.alpha, rtol=0, atol=1e-5)


@pytest.mark.slow
def test_forced_swaps_reread_each_pair_on_the_reference_that_writes_the_noun_first() -> None:
    trained = _tiny()
    reference = "La voiture rouge est à moi."
    wrote = item("The red car is mine.", "la rouge est la mienne .", references=(reference,))
    [own] = ma.adjective_noun_swaps([wrote])
    assert (own.in_reference, own.in_output) == (True, False)
    [again] = ma.forced_swaps(trained, [own])
    assert again.item.references == (reference,)
    assert again.item.out == ("la", "voiture", "rouge", "est", "à", "moi", ".", "<eos>")
    assert (again.adjective, again.noun, again.q, again.in_output, again.t) == (
        "red",
        "car",
        1,
        True,
        2,
    )
    peaks = again.item.peaks
    assert again.crossing == (peaks[2] < peaks[1])
    # a pair no reference writes noun first is not forced
    plain = item("The red car is mine.", "la voiture rouge .", references=("C'est à moi.",))
    assert ma.forced_swaps(trained, ma.adjective_noun_swaps([plain])) == []


@pytest.mark.slow
def test_forced_align_refuses_what_it_cannot_force() -> None:
    with pytest.raises(ValueError, match="no attention"):
        ma.forced_align(_tiny(attention=False), [("Go.", "Va !")])
    with pytest.raises(TypeError, match="pairs"):
        ma.forced_align(_tiny(), ["Go."])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="no token"):
        ma.forced_align(_tiny(), [("Go.", "   ")])
    with pytest.raises(ValueError, match="indices"):
        ma.forced_align(_tiny(), [("Go.", "Va !")], indices=[1, 2])


@pytest.mark.slow
def test_align_refuses_a_model_without_attention() -> None:
    with pytest.raises(ValueError, match="no attention"):
        ma.align(_tiny(attention=False), ["Go."])
    with pytest.raises(TypeError, match="list of strings"):
        ma.align(_tiny(), "Go.")
    with pytest.raises(ValueError, match="split"):
        ma.align(_tiny(), split="train")


# --------------------------------------------------------------------------- elision, one-to-many, many-to-one
def test_peak_offsets_counts_from_the_anchor_word() -> None:
    # i like it . <eos> → j' aime ça . <eos>: j' looks at "like", one word after "i"
    ahead = item("I like it.", "j' aime ça .", [1, 1, 2, 3, 4])
    on_i = item("I love it.", "j' adore ça .", [0, 1, 2, 3, 4])
    other = item("We like it.", "nous aimons ça .", [0, 1, 2, 3, 4])  # no "i": not counted
    assert ma.peak_offsets([ahead, on_i, other], "j'", "i") == {0: 1, 1: 1}
    twice = item("I like it.", "j' aime ça .", [1, 1, 2, 3, 4])
    assert ma.peak_offsets([ahead, twice, on_i], "j'", "i") == {1: 2, 0: 1}
    assert ma.peak_offsets([ahead], "l'", "the") == {}
    # two "the": which one "la" translates is unclear, so the sentence is left out
    two = item("The cat saw the dog.", "le chat a vu le chien .", [1, 1, 2, 2, 4, 4, 5, 6])
    assert ma.peak_offsets([two], "le", "the") == {}


def test_copied_offsets_counts_rows_that_write_a_source_word_from_that_word() -> None:
    # tom likes radio . <eos> → tom aime la radio . <eos>
    on_word = item("Tom likes radio.", "tom aime la radio .", [0, 1, 2, 2, 3, 4])
    ahead = item("Tom likes radio.", "tom aime la radio .", [1, 1, 2, 2, 3, 4])  # tom at likes
    assert ma.copied_offsets([on_word]) == {0: 2}  # tom and radio, each on itself
    assert ma.copied_offsets([on_word, ahead]) == {0: 3, 1: 1}
    # short words (a, de), punctuation and <eos> are not copies; nor is a word the source has twice
    short = item("I have a cat.", "j' ai un chat .", [0, 1, 2, 3, 4, 5])
    assert ma.copied_offsets([short]) == {}
    twice = item("Tom saw Tom.", "tom a vu tom .", [0, 1, 1, 2, 3, 4])
    assert ma.copied_offsets([twice]) == {}
    assert ma.copied_offsets([on_word], min_letters=4) == {0: 1}  # radio only


def test_pair_peaks_finds_both_halves_of_a_negation() -> None:
    # i don 't know . <eos> → je ne sais pas . <eos> (Moses splits don't into don 't)
    both = item("I don't know.", "je ne sais pas .", [0, 2, 3, 2, 4, 5])
    split = item("I don't know.", "je ne sais pas .", [0, 1, 3, 2, 4, 5])
    plain = item("I know.", "je sais .", [0, 1, 2, 3])
    pairs = ma.pair_peaks([both, split, plain], ("ne", "n'"), ("pas",))
    assert [p.item for p in pairs] == [both, split]
    assert (pairs[0].t_first, pairs[0].t_second) == (1, 3)
    assert pairs[0].same
    assert pairs[0].words == ("'t", "'t")
    assert not pairs[1].same
    assert pairs[1].words == ("don", "'t")
    # "pas" before "ne" is not a pair
    assert ma.pair_peaks([item("Not me.", "pas ne moi .")], ("ne",), ("pas",)) == []
    with pytest.raises(TypeError, match="lists of tokens"):
        ma.pair_peaks([both], "ne", ("pas",))


def test_split_rows_needs_two_source_words_sharing_the_weight() -> None:
    # i will go . <eos> → j' irai . <eos>: "irai" shares its weight between "will" and "go"
    alpha = np.array(
        [
            [0.8, 0.1, 0.05, 0.03, 0.02],
            [0.05, 0.45, 0.4, 0.05, 0.05],
            [0.02, 0.03, 0.05, 0.5, 0.4],  # "." between "." and <eos>: not words
            [0.0, 0.0, 0.0, 0.1, 0.9],
        ]
    )
    it = ma.Aligned(0, "I will go.", (), ("i", "will", "go", ".", "<eos>"),
                    ("j'", "irai", ".", "<eos>"), alpha)  # fmt: skip
    assert ma.split_rows(it) == [(1, 1, 2)]
    assert ma.split_rows(it, exclusive=True) == [(1, 1, 2)]  # no other word looks at will or go
    assert ma.split_rows(it, min_second=0.45) == []
    # he is a bad boy . <eos> → il est un mauvais garçon . <eos>: "mauvais" also looks at "boy",
    # which has a French word of its own; with exclusive=True it does not count
    bad = np.full((7, 7), 0.01)
    for t, i in enumerate([0, 1, 2, 3, 4, 5, 6]):
        bad[t, i] = 0.6
    bad[3, 3], bad[3, 4] = 0.5, 0.44
    bad /= bad.sum(axis=1, keepdims=True)
    boy = ma.Aligned(0, "He is a bad boy.", (), ("he", "is", "a", "bad", "boy", ".", "<eos>"),
                     ("il", "est", "un", "mauvais", "garçon", ".", "<eos>"), bad)  # fmt: skip
    assert ma.split_rows(boy) == [(3, 3, 4)]
    assert ma.split_rows(boy, exclusive=True) == []
    with pytest.raises(ValueError, match="min_second"):
        ma.split_rows(it, min_second=0.6)
