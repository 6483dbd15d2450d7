"""attnlib.evidence.training_and_decoding: the claims about the search, on made-up scores.

The chapter's other claims rest on the shipped English-French models and are checked by
tests/test_seeds.py.
"""

from __future__ import annotations

from typing import Any

from attnlib import claims
from attnlib.evidence import training_and_decoding as td
from attnlib.mt import translation as tr


def _decoded(texts: list[str], scores: list[float], k: int) -> tr.Evaluation:
    """An Evaluation of four made-up sources with these outputs and scores (no BLEU needed)."""
    sources = ["a.", "b.", "c.", "d."]
    return tr.Evaluation(
        bleu=None,  # type: ignore[arg-type]
        chrf=None,  # type: ignore[arg-type]
        by_length=[],
        hypotheses=texts,
        sources=sources,
        references=[["x"]] * len(sources),
        k=k,
        scores=scores,
    )


def _search(greedy: list[float], beam: list[float]) -> tuple[dict[str, Any], list[Any]]:
    out: dict[str, Any] = {}
    with claims.recording():  # a claim that fails is kept, not raised
        checks = td._search_checks(
            out,
            _decoded(["g1", "g2", "g3", "g4"], greedy, 1),
            _decoded(["b1", "b2", "b3", "b4"], beam, td.K),
        )
    return out, checks


def test_a_source_counts_as_missed_only_where_greedy_scores_higher_than_rounding():
    tol = td.SCORE_TOL
    out, checks = _search(greedy=[-1.0, -2.0, -3.0 + tol / 2, -1.5], beam=[-2.0, -1.0, -3.0, -1.6])
    # a (gap 1.0) and d (gap 0.1) are missed, largest gap first; c differs by rounding only
    assert [m["source"] for m in out["missed"]] == ["a.", "d."]
    assert out["missed"][0] == {
        "source": "a.",
        "greedy": "g1",
        "beam": "b1",
        "greedy_score": -1.0,
        "beam_score": -2.0,
    }
    share, some = checks
    assert not share.holds  # 2 of 4 sources: far more than 1 %
    assert some.holds
    assert "2 of 4 sources" in some.evidence
    assert "«a.»" in some.evidence


def test_a_beam_that_never_loses_to_greedy_fails_the_claim_that_it_sometimes_does():
    out, (share, some) = _search(greedy=[-2.0] * 4, beam=[-1.0] * 4)
    assert out["missed"] == []
    assert share.holds
    assert not some.holds
    assert some.evidence == "0 of 4 sources"
