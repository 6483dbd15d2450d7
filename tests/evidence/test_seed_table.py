"""attnlib.evidence._seeds: the seed table is written and read back without loss."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnlib.evidence._seeds import ClaimOutcome, Section, parse, render

# what a claim or its evidence can hold once its whitespace is collapsed: pipes and
# backslashes included, the brackets that mark a seed's own words excluded
TEXT = (
    st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="⟦⟧"), min_size=1)
    .map(lambda t: " ".join(t.split()))
    .filter(bool)
)


def _section() -> Section:
    s = Section("demo")
    s.by_seed[0] = [
        ClaimOutcome("g", 0, "largest |Δα| is small", "max |a − b| = 0; needs ≤ 1e-12", True)
    ]
    s.by_seed[1] = [
        ClaimOutcome("g", 0, "largest |Δα| is small", "max |a − b| = 0.2; needs ≤ 1e-12", False)
    ]
    s.over[(0, 1)] = [ClaimOutcome("h", 0, "seeds differ", "range 3", True)]
    return s


def test_a_table_reads_back_as_it_was_written() -> None:
    text = render([_section()], "# Title\n\nSome words | with a pipe.")
    assert text.startswith("# Title")
    assert "largest \\|Δα\\| is small" in text  # a pipe inside a cell is escaped
    back = parse(text)["demo"]
    assert back == _section()


def test_a_seeds_own_words_are_shown_beside_the_rows() -> None:
    s = Section("demo")
    s.by_seed[0] = [ClaimOutcome("g", 0, "in “A.”, the row peaks", "x", True)]
    s.by_seed[2] = [ClaimOutcome("g", 0, "in “B.”, the row peaks", "y", True)]
    text = render([s])
    assert "| ✔ ⟦in “B.”, the row peaks⟧ y |" in text
    assert parse(text)["demo"] == s


def test_a_claim_missing_for_a_seed_is_a_dash() -> None:
    s = Section("demo")
    s.by_seed[0] = [ClaimOutcome("g", 0, "a", "x", True), ClaimOutcome("g", 1, "b", "y", True)]
    s.by_seed[1] = [ClaimOutcome("g", 0, "a", "z", True)]
    text = render([s])
    assert text.splitlines()[-1].endswith("| — |")
    assert parse(text)["demo"] == s


@given(claim=TEXT, evidence=TEXT, group=st.from_regex(r"[a-z_0-9]{1,12}", fullmatch=True))
def test_any_words_and_evidence_survive_the_table(claim: str, evidence: str, group: str) -> None:
    s = Section("demo")
    s.by_seed[0] = [ClaimOutcome(group, 0, claim, evidence, True)]
    s.by_seed[1] = [ClaimOutcome(group, 0, claim, evidence, False)]
    assert parse(render([s]))["demo"] == s


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("## x\n\n| group | # | claim | seed 0 |\n|---|---|---|---|\n| g | 0 | a |\n", "cells"),
        (
            "## x\n\n| group | # | claim | seed 0 |\n|---|---|---|---|\n| g | 0 | a | ? b |\n",
            "starts",
        ),
        ("## x\n\n| group | # | claim | week 0 |\n", "unknown column"),
    ],
)
def test_a_malformed_table_is_refused(table: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse(table)


def test_a_run_that_did_not_finish_is_in_the_table() -> None:
    s = Section("demo")
    s.by_seed[0] = [ClaimOutcome("g", 0, "a", "x", True)]
    s.errors["seed 1"] = "StopIteration: no example | found"
    text = render([s])
    assert "Did not run, seed 1: StopIteration: no example | found" in text
    assert parse(text)["demo"].errors == {"seed 1": "StopIteration: no example | found"}
