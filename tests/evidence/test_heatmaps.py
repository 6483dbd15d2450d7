"""attnlib.evidence.heatmaps: the measures its claims are made of."""

from __future__ import annotations

import numpy as np
import pytest

from attnlib.evidence import heatmaps


def test_date_fields_point_each_digit_at_its_field_of_the_source() -> None:
    src = [*"may 3, 1979", "<eos>"]
    out = [*"1979-05-03", "<eos>"]
    fields = heatmaps.date_fields(src, out)
    assert fields is not None
    year, month, day = set(range(7, 11)), {0, 1, 2}, {4}
    assert fields[:4] == [year] * 4
    assert fields[5:7] == [month] * 2
    assert fields[8:10] == [day] * 2
    assert fields[4] == fields[7] == fields[10] == frozenset()
    assert heatmaps.date_fields(src, [*"1979-05-04", "<eos>"]) is None  # not the source's date


def test_entropy_share_and_top1_agreement() -> None:
    one_hot = np.eye(3)
    uniform = np.full((3, 3), 1 / 3)
    assert heatmaps.entropy_share([one_hot]) == 0.0
    assert heatmaps.entropy_share([uniform]) == pytest.approx(1.0)
    assert heatmaps.top1_agreement([one_hot], [one_hot[::-1]]) == pytest.approx(1 / 3)
    # pairs of different shapes (another output length) are left out
    assert heatmaps.top1_agreement([one_hot, np.eye(2)], [one_hot, np.eye(3)]) == 1.0
    with pytest.raises(ValueError, match="same shape"):
        heatmaps.top1_agreement([np.eye(2)], [np.eye(3)])
