"""The claims of "The fixed-length bottleneck" and of "True or false" hold for three training seeds.

``attnlib.experiments.bottleneck_claims`` computes what chapter 07 (and statement 6 of
chapter 10) says about the three models of copy 5–20: attention and the no-attention
baseline with one budget, the baseline with four times it, and all of them on strings
longer than any they trained on. ``attnlib.experiments.true_or_false_claims`` computes
statement 9 of chapter 10 on the SVO → SOV model: permuted encoder states, reordered
words, and s_0 rebuilt from permuted states. Seed 0 reads the shipped checkpoints; seeds 1
and 2 retrain every model from the same recipes and data. The tables of which claim held
for which seed are written to ``tests/_artifacts/seeds/bottleneck.md`` and
``true_or_false.md``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnlib import claims
from attnlib.experiments import bottleneck_claims, true_or_false_claims

ARTIFACTS = Path(__file__).resolve().parent / "_artifacts" / "seeds"
CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"
SEEDS = (0, 1, 2)


def _table(fn, name: str, title: str) -> claims.SeedTable:
    table = claims.across_seeds(fn, SEEDS)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"{name}.md").write_text(f"# {title}\n\n{table.markdown()}\n")
    return table


@pytest.mark.slow
def test_the_bottleneck_claims_hold_for_three_training_seeds() -> None:
    table = _table(bottleneck_claims, "bottleneck", "07_bottleneck and statement 6 of 10")
    assert len(table.claims) >= 15, "bottleneck_claims checked fewer claims than chapter 07 shows"
    assert not table.failing(), "\n".join(table.failing())


@pytest.mark.slow
def test_the_permutation_claims_hold_for_three_training_seeds() -> None:
    table = _table(true_or_false_claims, "true_or_false", "10_true_or_false, statement 9")
    assert len(table.claims) >= 7, "true_or_false_claims checked fewer claims than chapter 10 shows"
    assert not table.failing(), "\n".join(table.failing())


@pytest.mark.parametrize(
    ("chapter", "call", "groups"),
    [
        ("07_bottleneck", "bottleneck_claims(", ("budget", "longer_budget", "beyond", "heatmap")),
        ("10_true_or_false", "bottleneck_claims(", ("statement_6",)),
        ("10_true_or_false", "true_or_false_claims(", ("permute", "reorder", "s_0")),
    ],
)
def test_the_chapters_show_the_checks(chapter: str, call: str, groups: tuple[str, ...]) -> None:
    """Each group of checks a claim function returns is displayed in the chapter that states it."""
    cells = json.loads((CHAPTERS / f"{chapter}.ipynb").read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert call in code, f"{chapter} does not call {call}…)"
    for group in groups:
        assert f'["checks"]["{group}"]' in code, f"{chapter} does not show the {group!r} checks"
