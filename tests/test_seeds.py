"""Claims about trained models hold for three training seeds, not one lucky draw.

Each function of attnlib.evidence computes what a chapter states about its trained models and
checks it; here each runs with the shipped checkpoints (seed 0) and with the same recipes
retrained from seeds 1 and 2 (the same data). Each (chapter, seed) is its own test case, and
writes which claim held to tests/_artifacts/seeds/<chapter>-seed<k>.md. Question 1 of "Why?"
compares seeds by itself (evidence.context_claims, over nine shipped checkpoints): see
tests/test_evidence.py.
"""

from __future__ import annotations

import json

import pytest

from attnlib import claims, evidence
from conftest import CHAPTERS, ROOT

ARTIFACTS = ROOT / "tests" / "_artifacts" / "seeds"
SEEDS = (0, 1, 2)
#: Fewest claims each function must check (what its chapter shows), so that a function that
#: silently stops checking fails here.
AT_LEAST = {
    "entropy": 6,
    "seq2seq": 4,
    "bottleneck": 15,
    "heatmaps": 15,
    "interpretability": 20,
    "true_or_false": 7,
    "spot_the_error": 2,
    "why": 10,
    "edge_cases": 6,
}
#: The groups of checks each chapter displays, each under its own sentence.
GROUPS = {
    "bottleneck": ("budget", "longer_budget", "beyond", "heatmap"),
    "heatmaps": ("copy", "reverse", "dates", "svo", "luong", "why", "agreement"),
    "interpretability": (
        "agreement", "disagreement", "eos", "interventions", "adversarial", "trained_uniform", "s0",
    ),
    "true_or_false": ("statement_6", "permute", "reorder", "s_0"),
}  # fmt: skip


def _code(chapter: str) -> str:
    cells = json.loads((CHAPTERS / f"{chapter}.ipynb").read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("chapter", sorted(evidence.BY_CHAPTER))
def test_every_claim_on_a_trained_model_holds_for_each_seed(chapter: str, seed: int) -> None:
    # One case per (chapter, seed), so that no single test holds a worker for minutes: the
    # retrainings of seeds 1 and 2 run side by side. Each writes its column of the table.
    fn = evidence.BY_CHAPTER[chapter]
    table = claims.across_seeds(fn, (seed,))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"{chapter}-seed{seed}.md").write_text(
        f"# {chapter} ({fn.__name__}), seed {seed}\n\n{table.markdown()}\n"
    )
    assert len(table.claims) >= AT_LEAST[chapter], (
        f"{fn.__name__} checked fewer claims than expected with seed {seed}"
    )
    assert not table.failing(), "\n".join(table.failing())


def test_every_claim_function_has_a_minimum_and_is_called_by_its_chapter() -> None:
    assert sorted(AT_LEAST) == sorted(evidence.BY_CHAPTER)
    for chapter, fn in evidence.BY_CHAPTER.items():
        assert f"evidence.{fn.__name__}(" in _code(chapter), f"{chapter} never calls {fn.__name__}"


@pytest.mark.parametrize("chapter", sorted(GROUPS))
def test_each_group_of_checks_is_shown_under_its_section(chapter: str) -> None:
    code = _code(chapter)
    for group in GROUPS[chapter]:
        assert f'["checks"]["{group}"]' in code or f'checks["{group}"]' in code, (
            f"chapter {chapter} never displays the {group!r} checks"
        )
