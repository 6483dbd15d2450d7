"""Tests for attnlib.explorables.sliders: the three explorers' state and their reference values.

The figures are drawn and moved by JavaScript in the browser (tests/explorables/test_front_ends.py checks
that, on the built site). Here, with no browser: each widget carries what its front end needs,
keeps its controls in range, rejects nonsense with a message in the course's notation, and its
``current()`` (what the figure must show) matches values computed here independently.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.explorables import ASSETS
from attnlib.explorables import sliders as widgets


def reference_softmax(e) -> np.ndarray:
    z = np.exp(np.asarray(e, dtype=float) - np.max(e))
    return z / z.sum()


def reference_entropy(p) -> float:
    return float(-sum(x * np.log(x) for x in p if x > 0))


ALPHA = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.3, 0.4, 0.3]])


def test_every_explorer_ships_the_front_end_in_its_state() -> None:
    explorers = {
        "softmax": widgets.softmax_explorer([1.0, 0.0, -1.0]),
        "step": widgets.step_explorer(ALPHA, ["a", "b", "c"], ["X", "Y", "Z"]),
        "temperature": widgets.temperature_explorer([1.0, 2.0, 0.0], beta=1.0),
    }
    js = (ASSETS / "sliders.js").read_text(encoding="utf-8")
    css = (ASSETS / "sliders.css").read_text(encoding="utf-8")
    for view, ex in explorers.items():
        state = ex.get_state()
        assert state["_model_module"] == "anywidget"
        assert state["view"] == view
        assert state["_esm"] == js
        assert state["_css"] == css
    assert re.search(r"^export default \{ render \};$", js, re.M)
    for view in explorers:  # the module has a view for each
        assert re.search(rf"\b{view}: {view}View\b", js), view


# ----------------------------------------------------------------------------- softmax
def test_softmax_explorer_shows_the_scores_and_their_softmax() -> None:
    ex = widgets.softmax_explorer([2.0, 0.5, -1.0], ["x", "y", "z"])
    assert ex.labels == ["x", "y", "z"]
    ex.e = [1.0, 4.0, -1.0]
    now = ex.current()
    np.testing.assert_allclose(now["e"], [1.0, 4.0, -1.0])
    np.testing.assert_allclose(now["alpha"], reference_softmax([1.0, 4.0, -1.0]), rtol=1e-12)


def test_softmax_explorer_keeps_scores_on_the_sliders() -> None:
    ex = widgets.softmax_explorer([0.0, 0.0, 0.0], score_range=6.0)
    assert ex.labels == ["i = 1", "i = 2", "i = 3"]
    ex.e = [9.0, -7.5, 2.0]
    assert ex.e == [6.0, -6.0, 2.0]
    with pytest.raises(Exception, match=r"e must keep T_x=3 scores"):
        ex.e = [1.0, 2.0]
    with pytest.raises(Exception, match="finite"):
        ex.e = [float("nan"), 0.0, 0.0]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-6, 6), min_size=2, max_size=6))
def test_softmax_explorer_weights_always_sum_to_one(e: list[float]) -> None:
    ex = widgets.softmax_explorer(e)
    alpha = ex.current()["alpha"]
    assert alpha.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(alpha > 0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([[1.0, 2.0]],), "e must have shape (T_x,)"),
        (([1.0, 2.0], ["a"]), "labels has 1 names but there are T_x=2 scores"),
        (([1.0, 2.0], None, 0.0), "score_range must be positive"),
    ],
)
def test_softmax_explorer_explains_bad_input(args: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        widgets.softmax_explorer(*args)


# ----------------------------------------------------------------------------- steps
def test_step_explorer_is_one_based_and_shows_row_t() -> None:
    ex = widgets.step_explorer(ALPHA, ["a", "b", "c"], ["X", "Y", "Z"])
    assert ex.t == 1
    ex.t = 2
    now = ex.current()
    np.testing.assert_allclose(now["alpha"], ALPHA[1])
    assert now["top"] == 2  # step 2 leans on position 3
    with pytest.raises(Exception, match=r"between 1 and T_y = 3, got 4"):
        ex.t = 4
    with pytest.raises(Exception, match=r"got 0"):
        ex.t = 0


def test_step_explorer_colours_the_heatmap_by_weight() -> None:
    ex = widgets.step_explorer(ALPHA, ["a", "b", "c"], ["X", "Y", "Z"])
    assert len(ex.colors) == 3
    assert all(len(row) == 3 for row in ex.colors)
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for row in ex.colors for c in row)
    # equal weights, equal colours; cividis gets lighter as the weight grows
    assert ex.colors[0][2] == ex.colors[1][0] == ex.colors[1][1]
    luminance = lambda h: sum(int(h[k : k + 2], 16) for k in (1, 3, 5))  # noqa: E731
    assert luminance(ex.colors[1][2]) > luminance(ex.colors[0][1]) > luminance(ex.colors[1][0])


def test_step_explorer_explains_mismatched_shapes() -> None:
    with pytest.raises(ValueError, match=r"T_y=2 output and T_x=3 source words"):
        widgets.step_explorer(ALPHA, ["a", "b", "c"], ["X", "Y"])
    with pytest.raises(ValueError, match=r"alpha must have shape \(T_y, T_x\)"):
        widgets.step_explorer(ALPHA[0], ["a", "b", "c"], ["X"])


# ----------------------------------------------------------------------------- temperature
def test_temperature_explorer_weights_and_entropy() -> None:
    e = np.array([1.0, 2.0, 0.0, -1.0])
    ex = widgets.temperature_explorer(e, beta=2.5)
    now = ex.current()
    expected = reference_softmax(2.5 * e)
    np.testing.assert_allclose(now["alpha"], expected, rtol=1e-12)
    assert now["H"] == pytest.approx(reference_entropy(expected), rel=1e-12)


def test_temperature_zero_is_uniform_and_hits_the_ceiling() -> None:
    ex = widgets.temperature_explorer([3.0, -2.0, 0.5, 1.0, 0.0], beta=0.0)
    now = ex.current()
    np.testing.assert_allclose(now["alpha"], np.full(5, 0.2))
    assert now["H"] == pytest.approx(np.log(5))


def test_temperature_sharper_means_lower_entropy_and_the_slider_stays_in_range() -> None:
    ex = widgets.temperature_explorer([1.0, 2.0, 0.0], beta=1.0)
    h1 = ex.current()["H"]
    ex.beta = 5.0
    assert ex.current()["H"] < h1
    ex.beta = 50.0
    assert ex.beta == ex.beta_max == 10.0
    with pytest.raises(Exception, match="beta must be a finite number ≥ 0"):
        ex.beta = -0.5
    with pytest.raises(ValueError, match="T_x ≥ 2"):
        widgets.temperature_explorer([1.0])
