"""Tests for attnlib.plots: shapes, labels, colour scales and in-place updates."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from attnlib import plots


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_heatmap_draws_alpha_with_token_labels_and_fixed_scale():
    alpha = np.array([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]])
    image = plots.heatmap(alpha, ["a", "b", "c"], ["X", "Y"])
    ax = image.axes
    np.testing.assert_array_equal(image.get_array(), alpha)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["X", "Y"]
    assert ax.get_xlabel() == "source position i (h_i)"
    assert ax.get_ylabel() == "output step t"
    assert image.get_clim() == (0.0, 1.0)
    assert image.get_cmap().name in {"cividis", "viridis"}
    assert len(ax.figure.axes) == 2  # the heatmap and its colorbar


def test_heatmap_accepts_one_step_and_rejects_mismatched_tokens():
    image = plots.heatmap([0.2, 0.8], ["a", "b"])
    assert image.get_array().shape == (1, 2)
    with pytest.raises(ValueError, match="src_tokens has 3 tokens but alpha has 2"):
        plots.heatmap([[0.2, 0.8]], ["a", "b", "c"])
    with pytest.raises(ValueError, match=r"\(T_y, T_x\)"):
        plots.heatmap(np.zeros((2, 2, 2)))


def test_heatmap_annotations_show_the_weights():
    alpha = np.array([[0.125, 0.875]])
    image = plots.heatmap(alpha, annotate=True, colorbar=False)
    texts = sorted(t.get_text() for t in image.axes.texts)
    assert texts == ["0.12", "0.88"]


def test_bars_heights_labels_and_update():
    container = plots.bars([1.0, -2.0, 0.5], ["a", "b", "c"], ylabel="e_ti")
    ax = container.patches[0].axes
    assert [p.get_height() for p in container.patches] == [1.0, -2.0, 0.5]
    assert ax.get_ylabel() == "e_ti"
    assert [t.get_text() for t in container.texts] == ["1.00", "-2.00", "0.50"]
    plots.set_bar_heights(container, [0.2, 0.3, 0.5])
    assert [p.get_height() for p in container.patches] == [0.2, 0.3, 0.5]
    assert [t.get_text() for t in container.texts] == ["0.20", "0.30", "0.50"]
    assert container.texts[1].get_position() == (1, 0.3)


def test_set_bar_heights_needs_one_value_per_bar():
    container = plots.bars([1.0, 2.0])
    with pytest.raises(ValueError, match=r"expected 2 values .* got shape \(3,\)"):
        plots.set_bar_heights(container, [1.0, 2.0, 3.0])


def test_unit_bar_segments_tile_exactly_one_unit():
    alpha = np.array([0.5, 0.3, 0.2])
    segments = plots.unit_bar(alpha, ["a", "b", "c"])
    lefts = [s.get_x() for s in segments]
    widths = [s.get_width() for s in segments]
    np.testing.assert_allclose(widths, alpha)
    np.testing.assert_allclose(lefts, [0.0, 0.5, 0.8])
    assert lefts[-1] + widths[-1] == pytest.approx(1.0)


def test_curves_and_grouped_bars():
    lines = plots.curves([0, 1, 2], {"a": [1, 2, 3], "b": [3, 2, 1]}, xlabel="k", ylabel="‖c_t‖")
    assert [line.get_label() for line in lines] == ["a", "b"]
    np.testing.assert_array_equal(lines[1].get_ydata(), [3, 2, 1])
    groups = plots.grouped_bars({"x": [0.1, 0.9], "y": [0.6, 0.4]}, ["p", "q"])
    assert [[p.get_height() for p in g.patches] for g in groups] == [[0.1, 0.9], [0.6, 0.4]]
    with pytest.raises(ValueError, match="same shape"):
        plots.grouped_bars({"x": [0.1, 0.9], "y": [1.0]})


def _step_figure(**params):
    rng = np.random.default_rng(0)
    return plots.step_diagram(
        rng.normal(size=(4, 5)),
        rng.normal(size=3),
        rng.normal(size=4),
        np.array([0.1, 0.2, 0.3, 0.4]),
        rng.normal(size=5),
        rng.normal(size=3),
        np.full(6, 1 / 6),
        list("abcd"),
        list("uvwxyz"),
        y_prev="<bos>",
        **params,
    )


def test_step_diagram_has_one_panel_per_quantity():
    fig = _step_figure()
    titles = [ax.get_title(loc) for ax in fig.axes for loc in ("center", "left")]
    for start in (
        "$s_{0}$",
        "$c_{1}$",
        r"$e_{1i} = v_a^\top \tanh(W_a s_{0} + U_a h_i)$",
        r"$\alpha_{1i}",
        "$s_{1} = f(s_{0}, y_{0}, c_{1})$",
        r"$\tilde y_{1} = g(s_{1}, c_{1}, y_{0})$",
    ):
        assert any(t.startswith(start) for t in titles), start
    [ax_alpha] = [ax for ax in fig.axes if ax.get_title().startswith(r"$\alpha_{1i}")]
    np.testing.assert_allclose([p.get_height() for p in ax_alpha.patches], [0.1, 0.2, 0.3, 0.4])
    assert any("<bos>" in t.get_text() for t in fig.texts)


def test_step_diagram_draws_every_arrow_of_the_equations():
    """One arrow per argument of e_ti = v_aᵀ tanh(W_a s_{t-1} + U_a h_i), α = softmax(e),
    c_t = Σ_i α_ti h_i, s_t = f(s_{t-1}, y_{t-1}, c_t) and ỹ_t = g(s_t, c_t, y_{t-1})."""
    arrows = {a.get_gid() for a in _step_figure().artists if a.get_gid()}
    assert arrows == {
        "s_{t-1} -> e", "h_i -> e", "e -> alpha", "alpha -> c_t", "h_i -> c_t",
        "s_{t-1} -> s_t", "y_{t-1} -> s_t", "c_t -> s_t",
        "s_t -> y~_t", "c_t -> y~_t", "y_{t-1} -> y~_t",
    }  # fmt: skip


def test_step_diagram_shows_the_score_parameters_when_given():
    rng = np.random.default_rng(1)
    W_a, U_a, v_a = rng.normal(size=(2, 3)), rng.normal(size=(2, 5)), rng.normal(size=2)
    without = len(_step_figure().axes)
    fig = _step_figure(W_a=W_a, U_a=U_a, v_a=v_a)
    assert len(fig.axes) == without + 3
    by_label = {ax.get_xlabel(): ax for ax in fig.axes}
    for name, m in (("$W_a$", W_a), ("$U_a$", U_a), ("$v_a$", v_a.reshape(-1, 1))):
        np.testing.assert_array_equal(by_label[name].images[0].get_array(), m)


# The website shows a figure at its natural size only up to its text column (about 650 px at a
# 1280 px window, 100 dpi): a wider one is scaled down, its text with it, below what a reader
# can read comfortably.
COLUMN_INCHES = 6.5
#: The smallest text a figure may draw (points): 8 pt is 11 px at 100 dpi.
SMALLEST_FONT_PT = 8


def _texts(fig):
    """Every piece of text in a figure: tick labels, titles, axis labels, annotations."""
    return [t for t in fig.findobj(lambda a: hasattr(a, "get_fontsize")) if t.get_text().strip()]


def _drawn(fig):
    fig.canvas.draw()  # constrained layout and tick labels exist only once drawn
    return fig


@pytest.mark.parametrize("T_x", [3, 8, 21, 31])
def test_heatmaps_fit_the_column_for_any_source_length(T_x):
    rng = np.random.default_rng(T_x)
    alpha = rng.dirichlet(np.ones(T_x), size=T_x - 1)
    src, out = [f"x{i}" for i in range(T_x)], [f"y{t}" for t in range(T_x - 1)]
    for fig in (
        plots.heatmap(alpha, src, out).figure,
        plots.heatmap_entropy(alpha, src, out)[0].figure,
    ):
        width, height = fig.get_size_inches()
        assert width <= COLUMN_INCHES, f"T_x={T_x}: a figure {width:.2f} in wide"
        # the rows keep room for one line of tick labels each (10 pt is 0.14 in)
        assert (height - 1.0) / (T_x - 1) >= 0.15, f"T_x={T_x}: rows {height:.2f} in in all"


def test_small_heatmaps_keep_their_size():
    """Growing with T_x stops only at the column: a 3-position heatmap is not squeezed."""
    narrow = plots.heatmap(np.full((2, 3), 1 / 3)).figure.get_size_inches()[0]
    wider = plots.heatmap(np.full((2, 6), 1 / 6)).figure.get_size_inches()[0]
    assert wider - narrow == pytest.approx(3 * 0.55)


def test_no_text_smaller_than_the_floor():
    """Every text the figures of the course draw is at least 8 pt."""
    figures = [
        plots.heatmap(np.full((3, 4), 0.25), annotate=True).figure,
        plots.heatmap_entropy(np.full((3, 25), 0.04))[0].figure,
        plots.bars(np.linspace(0, 1, 12), annotate=True).patches[0].figure,
        plots.unit_bar(np.full(4, 0.25), list("abcd"))[0].figure,
        _step_figure(W_a=np.ones((2, 3)), U_a=np.ones((2, 5)), v_a=np.ones(2)),
    ]
    for fig in figures:
        sizes = {t.get_text(): t.get_fontsize() for t in _texts(_drawn(fig))}
        small = {text: size for text, size in sizes.items() if size < SMALLEST_FONT_PT}
        assert sizes, "no text found"
        assert not small, f"text smaller than {SMALLEST_FONT_PT} pt: {small}"
