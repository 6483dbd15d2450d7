"""attnlib.evidence: the registry of the chapters' modules, and what each module owes its chapter."""

from __future__ import annotations

import json
import re
import types
from pathlib import Path

import pytest

from attnlib import claims, evidence
from attnlib.evidence import _seeds
from conftest import CHAPTERS, TOC_CHAPTERS

REGISTRY = evidence.chapters()


def _code(slug: str) -> str:
    cells = json.loads((CHAPTERS / f"{slug}.ipynb").read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_every_module_of_the_package_but_the_private_ones_is_a_chapter_of_the_book() -> None:
    folder = Path(evidence.__path__[0])
    package = sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))
    assert sorted(REGISTRY) == package
    in_book = {p.stem for p in TOC_CHAPTERS}
    assert set(REGISTRY) <= in_book, f"no chapter of _toc.yml for {set(REGISTRY) - in_book}"


@pytest.mark.parametrize("slug", sorted(REGISTRY))
def test_each_chapter_imports_its_module_and_calls_it(slug: str) -> None:
    code = _code(slug)
    assert re.search(rf"^from attnlib\.evidence import .*\b{slug}\b", code, re.M), (
        f"chapters/{slug}.ipynb never imports attnlib.evidence.{slug}"
    )
    assert f"{slug}.check_claims(" in code, f"chapters/{slug}.ipynb never calls check_claims"
    over = REGISTRY[slug].over_seeds
    if over is not None:
        assert f"{slug}.{over.__name__}(" in code, f"chapters/{slug}.ipynb never calls it"


@pytest.mark.parametrize("slug", sorted(REGISTRY))
def test_each_group_of_checks_is_shown_in_its_chapter(slug: str) -> None:
    code = _code(slug)
    for group in REGISTRY[slug].groups:
        assert f'checks"]["{group}"]' in code or f'checks["{group}"]' in code, (
            f"chapters/{slug}.ipynb never displays the {group!r} checks"
        )


def _module(name: str = "fake", **attrs: object) -> types.ModuleType:
    module = types.ModuleType(f"attnlib.evidence.{name}")
    base = {"check_claims": lambda seed=0: {"checks": {}}, "GROUPS": ("a",), "AT_LEAST": 1}
    for key, value in {**base, **attrs}.items():
        if value is not None:
            setattr(module, key, value)
    return module


@pytest.mark.parametrize(
    ("attrs", "error", "message"),
    [
        ({"check_claims": None}, TypeError, "must define check_claims"),
        ({"GROUPS": None}, TypeError, "GROUPS must be a non-empty tuple"),
        ({"GROUPS": ["a"]}, TypeError, "GROUPS must be a non-empty tuple"),
        ({"AT_LEAST": 0}, TypeError, "AT_LEAST must be a whole number ≥ 1"),
        ({"AT_LEAST": True}, TypeError, "AT_LEAST must be a whole number ≥ 1"),
        ({"PARTS": ("p", "q"), "SEED_CASES": (("p",),)}, ValueError, "must run each of PARTS"),
        ({"RECORDED_SEEDS": (0, 1)}, ValueError, "seed 0 is always checked live"),
    ],
)
def test_a_module_that_breaks_the_conventions_is_refused_with_its_name(
    attrs: dict, error: type, message: str
) -> None:
    with pytest.raises(error, match=message) as info:
        evidence._read(_module(**attrs))
    assert "attnlib.evidence.fake" in str(info.value)


def test_a_module_is_read_with_its_defaults() -> None:
    chapter = evidence._read(_module())
    assert chapter.slug == "fake"
    assert chapter.cases == (None,)
    assert chapter.recorded_seeds == ()
    assert chapter.does_not_hold == {}
    assert chapter.over_seeds is None


def _fake_chapter(fn: object, monkeypatch: pytest.MonkeyPatch) -> None:
    chapter = evidence._read(_module(check_claims=fn, GROUPS=("a", "b")))
    monkeypatch.setattr(evidence, "chapters", lambda: {"fake": chapter})


def test_run_records_failing_claims_instead_of_raising(monkeypatch: pytest.MonkeyPatch) -> None:
    def check_claims(seed: int = 0) -> dict:
        return {
            "checks": {
                "a": [claims.at_least(seed, 1, "the seed is at least 1", name="seed")],
                "b": [claims.check(True, "this holds", evidence="always")],
            }
        }

    _fake_chapter(check_claims, monkeypatch)
    assert evidence.run("fake", 0) == [
        _seeds.ClaimOutcome("a", 0, "the seed is at least 1", "seed = 0; needs ≥ 1", False),
        _seeds.ClaimOutcome("b", 0, "this holds", "always", True),
    ]
    assert evidence.run("fake", 2)[0].holds


def test_run_refuses_a_claim_checked_but_not_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    def check_claims(seed: int = 0) -> dict:
        claims.check(True, "checked, never shown", evidence="x")
        return {"checks": {"a": [claims.check(True, "shown", evidence="y")]}}

    _fake_chapter(check_claims, monkeypatch)
    with pytest.raises(ValueError, match="checked, never shown"):
        evidence.run("fake", 0)


def test_run_needs_the_checks_by_group(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_chapter(lambda seed=0: {"checks": [claims.check(True, "a", evidence="b")]}, monkeypatch)
    with pytest.raises(TypeError, match="by group under 'checks'"):
        evidence.run("fake", 0)


def test_run_over_seeds_needs_a_function_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_chapter(lambda seed=0: {"checks": {}}, monkeypatch)
    with pytest.raises(ValueError, match="no claims over several seeds"):
        evidence.run("fake", (0, 1, 2))
