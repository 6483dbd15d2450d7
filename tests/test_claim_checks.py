"""attnlib.claims: a claim passes with its evidence shown, and fails loudly when it stops holding."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnlib import claims


def test_a_supported_claim_shows_itself_with_its_evidence() -> None:
    c = claims.greater(0.996, 0.099, "attention copies the long strings", names=("attn", "base"))
    assert c.holds
    assert (
        repr(c)
        == "✔ Checked: attention copies the long strings (attn = 0.996, base = 0.099; needs attn > base)"
    )
    html = c._repr_html_()
    assert "Checked:" in html
    assert "attention copies the long strings" in html


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (
            lambda: claims.at_least(0.4, 0.5, "most steps agree", name="share"),
            "share = 0.4; needs ≥ 0.5",
        ),
        (lambda: claims.at_most(0.6, 0.5, "near zero", name="H"), "H = 0.6; needs ≤ 0.5"),
        (lambda: claims.between(0.9, 0.55, 0.7, "about 62 %"), "value = 0.9; needs 0.55 … 0.7"),
        (lambda: claims.greater(1.0, 1.0, "strictly more"), "needs a > b"),
        (lambda: claims.greater(1.05, 1.0, "clearly more", by=0.1), "needs a > b + 0.1"),
        (lambda: claims.close([1.0, 2.0], [1.0, 2.1], "the same", tol=1e-6), "needs ≤ 1.000e-06"),
        (
            lambda: claims.check(False, "every output unchanged", evidence="3 of 120 changed"),
            "3 of 120",
        ),
    ],
)
def test_an_unsupported_claim_raises_with_the_words_and_the_numbers(call, needle) -> None:
    with pytest.raises(claims.ClaimError, match="the course says") as err:
        call()
    assert needle in str(err.value)


def test_nan_evidence_supports_nothing() -> None:
    with pytest.raises(claims.ClaimError, match="NaN"):
        claims.at_most(math.nan, 1.0, "small", name="H")
    with pytest.raises(claims.ClaimError, match="NaN"):
        claims.close([np.nan], [np.nan], "equal", tol=1.0)


def test_a_claim_needs_words() -> None:
    with pytest.raises(ValueError, match="needs the claim"):
        claims.check(True, "  ", evidence="x")


def test_recording_collects_instead_of_raising() -> None:
    with claims.recording() as results:
        claims.at_least(1.0, 0.5, "big enough")
        claims.at_least(0.1, 0.5, "also big enough")
    assert [r.holds for r in results] == [True, False]
    with pytest.raises(claims.ClaimError):  # outside the block, failures raise again
        claims.at_least(0.1, 0.5, "also big enough")


def test_across_seeds_tabulates_which_claim_holds_for_which_seed() -> None:
    def claim_fn(seed: int) -> None:
        claims.at_least(1.0, 0.5, "always")
        claims.at_least(seed, 1, "not for seed 0", name="seed")

    table = claims.across_seeds(claim_fn, seeds=(0, 1, 2))
    assert table.claims == ("always", "not for seed 0")
    assert table.holds["always"] == {0: True, 1: True, 2: True}
    assert table.holds["not for seed 0"] == {0: False, 1: True, 2: True}
    assert table.failing() == ["'not for seed 0' fails for seed 0: seed = 0; needs ≥ 1"]
    md = table.markdown().splitlines()
    assert md[0] == "| claim | seed 0 | seed 1 | seed 2 |"
    assert md[3].startswith("| not for seed 0 | ✘ seed = 0")


@pytest.mark.parametrize(
    "call",
    [
        lambda **k: claims.check(True, "c lies in the hull", evidence="3 of 3", **k),
        lambda **k: claims.at_least(1.0, 0.5, "c lies in the hull", **k),
        lambda **k: claims.at_most(0.2, 0.5, "c lies in the hull", **k),
        lambda **k: claims.between(0.6, 0.5, 0.7, "c lies in the hull", **k),
        lambda **k: claims.greater(2.0, 1.0, "c lies in the hull", **k),
        lambda **k: claims.close(1.0, 1.0, "c lies in the hull", tol=0.0, **k),
    ],
)
def test_an_identity_says_it_is_one_and_evidence_says_checked(call) -> None:
    """A fact true for any input reads "Identity", on the page and in text; evidence "Checked"."""
    identity, evidence = call(identity=True), call()
    assert repr(identity).startswith("✔ Identity: c lies in the hull (")
    assert repr(evidence).startswith("✔ Checked: c lies in the hull (")
    assert "<strong>Identity:</strong>" in identity._repr_html_()
    assert "by the algebra" in identity._repr_html_()
    assert "<strong>Checked:</strong>" in evidence._repr_html_()
    assert "title=" not in evidence._repr_html_()


def test_a_failing_identity_still_raises() -> None:
    with pytest.raises(claims.ClaimError, match="the hull"):
        claims.at_most(2.0, 1.0, "c lies in the hull", identity=True)
