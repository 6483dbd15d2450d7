"""The claims of "Reading alignment heatmaps" hold for three training seeds, not one lucky draw.

``attnlib.experiments.heatmaps_claims`` computes what chapter 08 says about its trained
models (copy, reverse, dates, SVO → SOV, and Bahdanau turned into Luong one change at a time)
and checks it. Seed 0 reads the shipped checkpoints; seeds 1 and 2 retrain every model from
the same recipes and data. The table of which claim held for which seed is written to
``tests/_artifacts/seeds/heatmaps.md``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from attnlib import claims
from attnlib.experiments import date_fields, entropy_share, heatmaps_claims, top1_agreement

ARTIFACTS = Path(__file__).resolve().parent / "_artifacts" / "seeds"
CHAPTER = Path(__file__).resolve().parents[1] / "chapters" / "08_heatmaps.ipynb"


@pytest.mark.slow
def test_the_heatmap_claims_hold_for_three_training_seeds() -> None:
    table = claims.across_seeds(heatmaps_claims, (0, 1, 2))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "heatmaps.md").write_text(f"# 08_heatmaps\n\n{table.markdown()}\n")
    assert len(table.claims) >= 15, "heatmaps_claims checked fewer claims than the chapter shows"
    assert not table.failing(), "\n".join(table.failing())


def test_the_chapter_shows_every_group_of_checks() -> None:
    """Each group of checks that heatmaps_claims returns is displayed in chapter 08."""
    cells = json.loads(CHAPTER.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert "experiments.heatmaps_claims(" in code
    for group in ("copy", "reverse", "dates", "svo", "luong", "why", "agreement"):
        assert f'["checks"]["{group}"]' in code, f"chapter 08 does not show the {group!r} checks"


def test_date_fields_point_each_digit_at_its_field_of_the_source() -> None:
    src = [*"may 3, 1979", "<eos>"]
    out = [*"1979-05-03", "<eos>"]
    fields = date_fields(src, out)
    assert fields is not None
    year, month, day = set(range(7, 11)), {0, 1, 2}, {4}
    assert fields[:4] == [year] * 4
    assert fields[5:7] == [month] * 2
    assert fields[8:10] == [day] * 2
    assert fields[4] == fields[7] == fields[10] == frozenset()
    assert date_fields(src, [*"1979-05-04", "<eos>"]) is None  # not the date of the source


def test_entropy_share_and_top1_agreement() -> None:
    one_hot = np.eye(3)
    uniform = np.full((3, 3), 1 / 3)
    assert entropy_share([one_hot]) == 0.0
    assert entropy_share([uniform]) == pytest.approx(1.0)
    assert top1_agreement([one_hot], [one_hot[::-1]]) == pytest.approx(1 / 3)
    assert top1_agreement([one_hot, np.eye(2)], [one_hot, np.eye(3)]) == 1.0  # shapes must match
    with pytest.raises(ValueError, match="same shape"):
        top1_agreement([np.eye(2)], [np.eye(3)])
