"""Tests for attnlib.widgets: the update functions change the drawn artists in place.

No browser is involved: each test builds a widget (or just its figure), calls the
plain update function or moves a slider, and checks the artists' data against
values computed here independently of the widget code.
"""

from __future__ import annotations

import io

import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from attnlib import widgets


def heights(container) -> np.ndarray:
    return np.array([p.get_height() for p in container.patches])


def reference_softmax(e) -> np.ndarray:
    z = np.exp(np.asarray(e, dtype=float) - np.max(e))
    return z / z.sum()


def png_pixels(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


# ----------------------------------------------------------------------------- softmax (ch. 3)
def test_update_softmax_sets_score_bars_and_weight_bars():
    _fig, artists = widgets.draw_softmax([0.0, 0.0, 0.0], ["a", "b", "c"])
    new = [2.0, -1.0, 0.5]
    widgets.update_softmax(artists, new)
    np.testing.assert_allclose(heights(artists.scores), new)
    np.testing.assert_allclose(heights(artists.weights), reference_softmax(new), rtol=1e-12)
    assert heights(artists.weights).sum() == pytest.approx(1.0)
    assert artists.weights.texts[0].get_text() == f"{reference_softmax(new)[0]:.2f}"
    assert "1.000" in artists.total.get_text()


def test_update_softmax_keeps_the_same_figure_and_artists():
    fig, artists = widgets.draw_softmax([1.0, 2.0, 3.0])
    before_figs = plt.get_fignums()
    patches = list(artists.weights.patches)
    n_children = [len(ax.get_children()) for ax in fig.axes]
    widgets.update_softmax(artists, [3.0, 2.0, 1.0])
    assert plt.get_fignums() == before_figs
    assert list(artists.weights.patches) == patches  # the same objects, changed in place
    assert [len(ax.get_children()) for ax in fig.axes] == n_children


def test_softmax_explorer_slider_move_redraws_the_image():
    ex = widgets.softmax_explorer([1.0, 0.0, -1.0], ["x", "y", "z"])
    first = ex.image.value
    figs = plt.get_fignums()
    ex.controls["y"].value = 4.0
    np.testing.assert_allclose(heights(ex.artists.scores), [1.0, 4.0, -1.0])
    np.testing.assert_allclose(heights(ex.artists.weights), reference_softmax([1.0, 4.0, -1.0]))
    assert ex.image.value != first
    assert png_pixels(ex.image.value).shape == png_pixels(first).shape
    assert plt.get_fignums() == figs


def test_blitted_image_matches_a_full_redraw():
    ex = widgets.softmax_explorer([1.0, 0.0, -1.0])
    ex.controls["1"].value = -3.0
    fast = png_pixels(ex.image.value).astype(int)
    buffer = io.BytesIO()
    ex.figure.canvas.draw()  # full redraw, animated artists are skipped ...
    for artist in ex.renderer.dynamic:  # ... so draw them as the renderer does
        ex.figure.draw_artist(artist)
    Image.fromarray(np.asarray(ex.figure.canvas.buffer_rgba())[..., :3]).save(buffer, "png")
    full = png_pixels(buffer.getvalue()).astype(int)
    assert fast.shape == full.shape
    assert np.abs(fast - full).max() <= 1


def test_weights_stay_in_view_for_extreme_scores():
    _fig, artists = widgets.draw_softmax([0.0, 0.0, 0.0])
    widgets.update_softmax(artists, [6.0, -6.0, -6.0])
    assert heights(artists.weights).max() <= artists.weights.patches[0].axes.get_ylim()[1]


# ----------------------------------------------------------------------------- steps (ch. 2)
ALPHA = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.3, 0.4, 0.3]])


def test_update_step_shows_row_t_and_moves_the_frame():
    _fig, artists = widgets.draw_step(ALPHA, ["a", "b", "c"], ["X", "Y", "Z"])
    widgets.update_step(artists, 1)
    np.testing.assert_allclose(heights(artists.weights), ALPHA[1])
    assert artists.frame.get_y() == pytest.approx(0.5)  # row 1 spans y in [0.5, 1.5]
    assert "'c'" in artists.label.get_text()  # step 2 leans on position 3
    assert "t = 2" in artists.label.get_text()


def test_update_step_highlights_only_the_largest_weight():
    _fig, artists = widgets.draw_step(ALPHA, ["a", "b", "c"], ["X", "Y", "Z"])
    widgets.update_step(artists, 2)
    colours = [tuple(p.get_facecolor()) for p in artists.weights.patches]
    assert colours[1] != colours[0]
    assert colours[0] == colours[2]


def test_update_step_rejects_a_step_outside_the_sentence():
    _fig, artists = widgets.draw_step(ALPHA, ["a", "b", "c"], ["X", "Y", "Z"])
    with pytest.raises(ValueError, match=r"T_y - 1 = 2"):
        widgets.update_step(artists, 3)


def test_step_explorer_slider_is_one_based():
    ex = widgets.step_explorer(ALPHA, ["a", "b", "c"], ["X", "Y", "Z"])
    assert ex.controls["t"].min == 1
    assert ex.controls["t"].max == 3
    ex.controls["t"].value = 3
    np.testing.assert_allclose(heights(ex.artists.weights), ALPHA[2])


# ----------------------------------------------------------------------------- temperature (ch. 5)
def test_update_temperature_weights_and_entropy():
    e = np.array([1.0, 2.0, 0.0, -1.0])
    _fig, artists = widgets.draw_temperature(e)
    alpha, H = widgets.update_temperature(artists, 2.5)
    expected = reference_softmax(2.5 * e)
    np.testing.assert_allclose(alpha, expected, rtol=1e-12)
    np.testing.assert_allclose(heights(artists.weights), expected, rtol=1e-12)
    expected_H = -np.sum(expected * np.log(expected))
    assert pytest.approx(expected_H) == H
    assert heights(artists.entropy_bar)[0] == pytest.approx(expected_H)


def test_temperature_zero_is_uniform_and_hits_the_ceiling():
    e = np.array([3.0, -2.0, 0.5, 1.0, 0.0])
    _fig, artists = widgets.draw_temperature(e)
    widgets.update_temperature(artists, 0.0)
    np.testing.assert_allclose(heights(artists.weights), np.full(5, 0.2))
    assert heights(artists.entropy_bar)[0] == pytest.approx(np.log(5))
    assert artists.ceiling.get_ydata()[0] == pytest.approx(np.log(5))


def test_temperature_explorer_sharper_means_lower_entropy():
    ex = widgets.temperature_explorer([1.0, 2.0, 0.0], beta=1.0)
    h1 = heights(ex.artists.entropy_bar)[0]
    ex.controls["beta"].value = 5.0
    h5 = heights(ex.artists.entropy_bar)[0]
    assert h5 < h1


def test_every_widget_picture_has_alt_text_for_screen_readers():
    explorers = [
        widgets.softmax_explorer([1.0, 0.0, -1.0]),
        widgets.step_explorer(ALPHA, ["a", "b", "c"], ["X", "Y", "Z"]),
        widgets.temperature_explorer([1.0, 2.0, 0.0], beta=1.0),
    ]
    for ex in explorers:
        state = ex.image.get_state()
        assert len(state["tooltip"]) > 20, "the figure image needs a description (alt text)"
        assert "description" in state  # the front end's tooltip code reads it
