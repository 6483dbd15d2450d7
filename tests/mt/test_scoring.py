"""Tests for attnlib.mt.scoring: BLEU and chrF on hand-countable sentences, ragged references.

Expected values are counted by hand from the n-grams written in the comments (13a keeps these
lower-case words as they are), not read back from sacrebleu.
"""

from __future__ import annotations

import math

import pytest
import sacrebleu

from attnlib.mt.scoring import (
    bleu_by_bucket,
    corpus_bleu,
    corpus_chrf,
    reference_streams,
    sentence_bleu,
)

HYP = "the cat sat on a mat"
REF1 = "the cat sat in a mat"
REF2 = "a cat sat on a mat"


# --------------------------------------------------------------------------- BLEU by hand
def test_identical_is_100():
    r = corpus_bleu([HYP], [[HYP]])
    assert r.score == pytest.approx(100.0)
    assert r.precisions == pytest.approx((100.0, 100.0, 100.0, 100.0))
    assert r.matches == (6, 5, 4, 3)
    assert r.totals == (6, 5, 4, 3)
    assert r.brevity_penalty == 1.0
    assert (r.hyp_len, r.ref_len, r.n_sentences) == (6, 6, 1)


def test_no_shared_4gram_unsmoothed_is_zero():
    # vs REF1: unigrams the cat sat a mat (5/6); bigrams "the cat" "cat sat" "a mat" (3/5);
    # trigrams "the cat sat" (1/4); 4-grams none of 3.
    r = corpus_bleu([HYP], [[REF1]], smooth="none")
    assert r.matches == (5, 3, 1, 0)
    assert r.totals == (6, 5, 4, 3)
    assert r.precisions == pytest.approx((500 / 6, 60.0, 25.0, 0.0))
    assert r.score == 0.0
    assert "smooth:none" in r.signature


def test_no_shared_4gram_exp_smoothing_by_hand():
    # sacrebleu's default: the first order with no match gets p = 1 / (2 * total) = 1/6
    r = corpus_bleu([HYP], [[REF1]])
    assert r.precisions[3] == pytest.approx(100 / 6)
    assert r.score == pytest.approx(100 * (5 / 6 * 3 / 5 * 1 / 4 * 1 / 6) ** 0.25)
    assert "smooth:exp" in r.signature


def test_second_reference_raises_the_score():
    # With REF2 too: all 6 unigrams, 5 bigrams, 4 trigrams match somewhere;
    # 4-grams "cat sat on a", "sat on a mat" (in REF2) but not "the cat sat on": 2/3.
    one = corpus_bleu([HYP], [[REF1]], smooth="none")
    two = corpus_bleu([HYP], [[REF1, REF2]], smooth="none")
    assert two.matches == (6, 5, 4, 2)
    assert two.score == pytest.approx(100 * (2 / 3) ** 0.25)
    assert two.score > one.score
    assert "nrefs:2" in two.signature


def test_clipping_counts_a_word_at_most_as_often_as_one_reference_has_it():
    # "the the the the" vs "the cat": p1 = 1/4 (clipped), no bigram matches
    r = corpus_bleu(["the the the the"], [["the cat"]], smooth="none")
    assert r.matches[0] == 1
    assert r.totals[0] == 4


def test_brevity_penalty_by_hand():
    # a 4-token prefix of a 6-token reference: every precision is 1, BP = exp(1 - 6/4)
    r = corpus_bleu(["the cat sat on"], [["the cat sat on the mat"]])
    assert r.precisions == pytest.approx((100.0,) * 4)
    assert r.brevity_penalty == pytest.approx(math.exp(-0.5))
    assert r.score == pytest.approx(100 * math.exp(-0.5))
    assert (r.hyp_len, r.ref_len) == (4, 6)


def test_brevity_penalty_uses_the_closest_reference_length():
    # references of 6 and 5 tokens; the 4-token hypothesis is closest to 5
    r = corpus_bleu(["the cat sat on"], [["the cat sat on the mat", "the cat sat on it"]])
    assert r.ref_len == 5
    assert r.score == pytest.approx(100 * math.exp(1 - 5 / 4))


def test_13a_splits_punctuation_but_not_elision():
    # "Il pleut des cordes." is five tokens (the full stop is one); "L'homme" stays one token
    r = corpus_bleu(["Il pleut des cordes."], [["Il pleut des cordes ."]])
    assert r.score == pytest.approx(100.0)
    assert r.hyp_len == 5
    assert corpus_bleu(["L'homme"], [["L'homme"]]).hyp_len == 1
    assert "tok:13a" in r.signature


def test_corpus_bleu_pools_counts_not_sentence_scores():
    # two sentences: the corpus precision is the pooled ratio, not the mean of the two
    hyps = ["the cat sat on the mat", "a b"]
    refs = [["the cat sat on the mat"], ["a c"]]
    r = corpus_bleu(hyps, refs, smooth="none")
    assert r.matches == (6 + 1, 5 + 0, 4, 3)
    assert r.totals == (6 + 2, 5 + 1, 4, 3)
    assert r.score == pytest.approx(100 * (7 / 8 * 5 / 6) ** 0.25)


# --------------------------------------------------------------------------- ragged references
# Source 0 has two references, source 1 has one; each hypothesis equals one of its references,
# and for source 0 it is the *second* one: done right, BLEU is exactly 100.
RAGGED_HYPS = ["a cat sat on a mat", "it is raining today"]
RAGGED_REFS = [[REF1, REF2], ["it is raining today"]]


def test_reference_streams_pad_with_none():
    assert reference_streams(RAGGED_REFS) == [[REF1, "it is raining today"], [REF2, None]]
    assert reference_streams([["x"], ["y", "z"]]) == [["x", "y"], [None, "z"]]


def test_ragged_references_score_all_references():
    r = corpus_bleu(RAGGED_HYPS, RAGGED_REFS)
    assert r.score == pytest.approx(100.0)
    assert r.n_sentences == 2
    assert "nrefs:var" in r.signature
    # the same as sacrebleu on streams padded by hand
    padded = [[REF1, "it is raining today"], [REF2, None]]
    assert r.score == pytest.approx(sacrebleu.corpus_bleu(RAGGED_HYPS, padded).score)


def test_pitfall_naive_transpose_drops_references():
    # zip(*refs) keeps as many references per source as the poorest source has: REF2 is lost
    naive = [list(s) for s in zip(*RAGGED_REFS, strict=False)]
    assert naive == [[REF1, "it is raining today"]]
    wrong = sacrebleu.corpus_bleu(RAGGED_HYPS, naive)
    assert wrong.score < 99.0
    assert corpus_bleu(RAGGED_HYPS, RAGGED_REFS).score > wrong.score


def test_pitfall_unpadded_streams_drop_sources():
    # streams of unequal length: sacrebleu zips them, so the second source is not scored at all
    ragged = [[REF1, "it is raining today"], [REF2]]
    wrong = sacrebleu.corpus_bleu(["a cat sat on a mat", "something else entirely"], ragged)
    assert wrong.sys_len == 6  # the second hypothesis' 3 tokens are missing
    right = corpus_bleu(
        ["a cat sat on a mat", "something else entirely"],
        [[REF1, REF2], ["it is raining today"]],
    )
    assert right.hyp_len == 9
    assert right.score < wrong.score


def test_pitfall_empty_string_padding_hides_the_brevity_penalty():
    # "yes" (1 token) against "yes of course" (3): ref_len must be 3, BP = exp(1 - 3).
    # Padded with "" instead of None, sacrebleu takes the empty reference (length 0) as the
    # closest one and the penalty disappears; the signature also claims 2 references each.
    hyps = ["the cat sat on a mat", "yes"]
    refs = [[REF1, REF2], ["yes of course"]]
    right = corpus_bleu(hyps, refs)
    assert right.ref_len == 6 + 3
    bleu = sacrebleu.BLEU()
    wrong = bleu.corpus_score(hyps, [[REF1, "yes of course"], [REF2, ""]])
    assert wrong.ref_len == 6 + 0
    assert "nrefs:2" in str(bleu.get_signature())
    assert "nrefs:var" in right.signature


def test_reference_order_within_a_source_does_not_matter():
    a = corpus_bleu([HYP, "yes"], [[REF1, REF2], ["yes of course"]])
    b = corpus_bleu([HYP, "yes"], [[REF2, REF1], ["yes of course"]])
    assert a.score == pytest.approx(b.score)


# --------------------------------------------------------------------------- chrF
def test_chrf_identical_and_best_reference():
    assert corpus_chrf([HYP], [[HYP]]).score == pytest.approx(100.0)
    # scored against its best reference: an unrelated first reference does not lower it
    r = corpus_chrf([HYP], [["zzz qqq", HYP]])
    assert r.score == pytest.approx(100.0)
    assert corpus_chrf([HYP], [["zzz qqq"]]).score < 10.0


def test_chrf_gives_partial_credit_where_bleu_gives_none():
    r_chrf = corpus_chrf(["rouges"], [["rouge"]])
    r_bleu = corpus_bleu(["rouges"], [["rouge"]])
    assert r_bleu.score == 0.0
    assert r_chrf.score > 50.0


def test_chrf_ragged_equals_padded_and_signature():
    r = corpus_chrf(RAGGED_HYPS, RAGGED_REFS)
    padded = [[REF1, "it is raining today"], [REF2, None]]
    assert r.score == pytest.approx(sacrebleu.corpus_chrf(RAGGED_HYPS, padded).score)
    assert r.score == pytest.approx(100.0)
    assert "nrefs:var" in r.signature
    assert "nc:6" in r.signature
    assert "nrefs:1" in corpus_chrf([HYP], [[HYP]]).signature


# --------------------------------------------------------------------------- sentence BLEU
def test_sentence_bleu_smoothed_by_hand():
    r = sentence_bleu(HYP, [REF1])
    assert r.score == pytest.approx(100 * (5 / 6 * 3 / 5 * 1 / 4 * 1 / 6) ** 0.25)
    assert "smooth:exp" in r.signature
    assert "eff:yes" in r.signature


def test_sentence_bleu_effective_order_on_a_short_sentence():
    # "Merci !" is two tokens: no 3- or 4-grams exist. Sentence BLEU uses orders 1-2 only;
    # corpus BLEU of the same single sentence is 0.
    assert sentence_bleu("Merci !", ["Merci !"]).score == pytest.approx(100.0)
    assert corpus_bleu(["Merci !"], [["Merci !"]]).score == 0.0


def test_sentence_bleu_second_smoothed_order_is_halved_again():
    # "the cat sat on a rug" vs "the cat sat in a mat": 1-grams 4/6, 2-grams 2/5,
    # 3-grams 1/4 and 4-grams 0/3 -> p4 = 1/(2*3)
    r = sentence_bleu("the cat sat on a rug", ["the cat sat in a mat"])
    assert r.matches == (4, 2, 1, 0)
    assert r.score == pytest.approx(100 * (4 / 6 * 2 / 5 * 1 / 4 * 1 / 6) ** 0.25)
    # "a b c d" vs "a x y z": 1/4, then 2-, 3-, 4-grams unmatched -> 1/(2*3), 1/(4*2), 1/(8*1)
    r = sentence_bleu("a b c d", ["a x y z"])
    assert r.score == pytest.approx(100 * (1 / 4 * 1 / 6 * 1 / 8 * 1 / 8) ** 0.25)


# --------------------------------------------------------------------------- buckets
def test_bucket_assignment_at_the_edges():
    # lengths 1, 2 | 3, 4 | (5, 6 empty) | 7 with edges [1, 3, 5, 7, 8]
    hyps = ["a", "b", "c", "d", "e"]
    refs = [["a"], ["b"], ["c"], ["d"], ["e"]]
    lengths = [1, 2, 3, 4, 7]
    buckets = bleu_by_bucket(hyps, refs, lengths, [1, 3, 5, 7, 8])
    # lo and hi are both in the bucket: edges [3, 5) hold the lengths 3 and 4
    assert [(b.lo, b.hi, b.n) for b in buckets] == [
        (1, 2, 2),
        (3, 4, 2),
        (5, 6, 0),
        (7, 7, 1),
    ]
    assert [b.label for b in buckets] == ["1-2", "3-4", "5-6", "7"]
    assert [b.end for b in buckets] == [3, 5, 7, 8]  # the edges back
    empty = buckets[2]
    assert empty.scores == {}  # nothing to score is not a score of 0
    with pytest.raises(AttributeError, match="no source has a length in 5-6: no bleu"):
        _ = empty.bleu
    assert buckets[0].bleu == corpus_bleu(hyps[:2], refs[:2]).score


def test_bucket_bleu_is_corpus_bleu_of_its_sentences():
    long_hyp, long_ref = "the cat sat on the mat", "the cat sat on the mat"
    hyps = [HYP, long_hyp, "the cat sat on"]
    refs = [[REF1, REF2], [long_ref], ["the cat sat on the mat"]]
    buckets = bleu_by_bucket(hyps, refs, [2, 5, 6], [1, 5, 10])
    assert buckets[0].bleu == pytest.approx(100 * (2 / 3) ** 0.25)
    # bucket 2: pooled counts 6+4 / 5+3 / 4+2 / 3+1, lengths 10 vs 12
    expected = 100 * math.exp(1 - 12 / 10) * (10 / 10 * 8 / 8 * 6 / 6 * 4 / 4) ** 0.25
    assert buckets[1].bleu == pytest.approx(expected)


def test_bucket_errors():
    hyps, refs = ["a", "b"], [["a"], ["b"]]
    with pytest.raises(ValueError, match="outside"):
        bleu_by_bucket(hyps, refs, [1, 9], [1, 5])
    with pytest.raises(ValueError, match="strictly increasing"):
        bleu_by_bucket(hyps, refs, [1, 2], [1, 3, 3])
    with pytest.raises(ValueError, match="at least two"):
        bleu_by_bucket(hyps, refs, [1, 2], [1])
    with pytest.raises(ValueError, match=r"1 source lengths but 2 hypotheses"):
        bleu_by_bucket(hyps, refs, [1], [1, 5])
    with pytest.raises(TypeError, match="integers"):
        bleu_by_bucket(hyps, refs, [1.5, 2], [1, 5])


# --------------------------------------------------------------------------- input errors
@pytest.mark.parametrize("fn", [corpus_bleu, corpus_chrf])
def test_input_errors(fn):
    with pytest.raises(ValueError, match="2 hypotheses but 1 reference lists"):
        fn(["a", "b"], [["a"]])
    with pytest.raises(ValueError, match="no hypotheses"):
        fn([], [])
    with pytest.raises(ValueError, match="source 1 has no reference"):
        fn(["a", "b"], [["a"], []])
    with pytest.raises(ValueError, match="reference 1 of source 0 is empty"):
        fn(["a"], [["a", " "]])
    with pytest.raises(TypeError, match=r"\[\[r\] for r in refs\]"):
        fn(["a", "b"], ["a", "b"])
    with pytest.raises(TypeError, match="hypotheses must be a list"):
        fn("a", [["a"]])
    with pytest.raises(TypeError, match="detokenise"):
        fn([["a"]], [["a"]])
    with pytest.raises(TypeError, match="reference 0 of source 0 is NoneType"):
        fn(["a"], [[None]])


def test_sentence_bleu_errors():
    with pytest.raises(ValueError, match="no reference"):
        sentence_bleu("a", [])
    with pytest.raises(TypeError, match="not a string"):
        sentence_bleu(["a"], ["a"])
    with pytest.raises(TypeError, match="a list of reference strings"):
        sentence_bleu("a", "a")


def test_an_empty_hypothesis_scores_zero():
    # the decoder may emit <eos> first: that is a legitimate (bad) translation, not an error
    r = corpus_bleu([""], [["the cat"]])
    assert r.score == 0.0
    assert r.hyp_len == 0
