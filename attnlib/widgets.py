"""Sliders for the ideas that are best felt by dragging: ipywidgets over matplotlib.

Each widget is split in two, so that the logic can be tested without a browser:

* a ``draw_*`` function makes the figure once and returns its artists;
* an ``update_*`` function is a plain function that takes those artists and the
  slider values and changes the artists **in place** (``set_height``,
  ``set_data``, ``set_text``); it never makes a new figure.

The ``*_explorer`` functions wire the two to ipywidgets controls. The figure is
shown as an :class:`ipywidgets.Image` holding its PNG, so the built website
(which embeds the widget state) shows the initial state, and on Binder every
slider move redraws the same figure: only the changed artists are drawn again
over a cached background (:class:`Renderer`), which keeps a move under 50 ms.

Figures here are :class:`matplotlib.figure.Figure` objects that pyplot does not
manage: they are shown only inside their widget, never twice.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as widgets
import numpy as np
import traitlets
from IPython.display import display
from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from numpy.typing import ArrayLike
from PIL import Image as PILImage

from attnlib.core import entropy, softmax
from attnlib.plots import ACCENT_COLOR, BAR_COLOR, SOURCE_LABEL, bars, heatmap, set_bar_heights

__all__ = [
    "Explorer",
    "Renderer",
    "SoftmaxArtists",
    "StepArtists",
    "TemperatureArtists",
    "draw_softmax",
    "draw_step",
    "draw_temperature",
    "softmax_explorer",
    "step_explorer",
    "temperature_explorer",
    "update_softmax",
    "update_step",
    "update_temperature",
]


class Renderer:
    """Render a figure to PNG fast, redrawing only the artists that change (blitting).

    The first call draws the whole figure once (axes, ticks, labels, colorbar)
    and keeps that picture as a background; each later call pastes the
    background back and draws only ``dynamic`` artists on top of it. That keeps
    a slider move well under the course's 50 ms budget.

    Parameters
    ----------
    figure : Figure
        A figure whose layout is final.
    dynamic : list of Artist
        The artists an update function changes; they are marked animated so
        the background is drawn without them.

    See Also
    --------
    The chapter "Why the softmax denominator is not optional" (chapters/03_softmax),
    whose sliders use it.
    """

    def __init__(self, figure: Figure, dynamic: Sequence[Artist]) -> None:
        self.figure = figure
        self.dynamic = list(dynamic)
        for artist in self.dynamic:
            artist.set_animated(True)
        self.canvas = FigureCanvasAgg(figure)
        self.canvas.draw()  # computes the layout once, without the animated artists
        figure.set_layout_engine("none")  # freeze it: later draws must not move the axes
        self._background = self.canvas.copy_from_bbox(figure.bbox)

    def png(self) -> bytes:
        """Return the figure as PNG bytes, with the dynamic artists in their current state."""
        self.canvas.restore_region(self._background)
        for artist in self.dynamic:
            self.figure.draw_artist(artist)
        width, height = self.canvas.get_width_height(physical=True)
        picture = PILImage.frombuffer(
            "RGBA", (width, height), self.canvas.buffer_rgba(), "raw", "RGBA", 0, 1
        )
        buffer = io.BytesIO()
        picture.save(buffer, format="png", compress_level=1)
        return buffer.getvalue()


@dataclass
class Explorer:
    """A widget and what it drives.

    Attributes
    ----------
    widget : ipywidgets.Widget
        The layout to display: the controls (stacked) above an
        :class:`ipywidgets.Image` of the figure, which shrinks to the page width.
    figure : Figure
        The one figure the widget redraws.
    artists : object
        The artists the update function changes.
    controls : dict of str to ipywidgets.Widget
        The sliders, by name.
    image : ipywidgets.Image
        Holds the current PNG of the figure.
    renderer : Renderer
        Turns the figure into PNG bytes.
    """

    widget: widgets.Widget
    figure: Figure
    artists: Any
    controls: dict[str, widgets.Widget]
    image: widgets.Image
    renderer: Renderer

    def refresh(self) -> None:
        """Re-render the figure into the widget's image."""
        self.image.value = self.renderer.png()

    def _ipython_display_(self) -> None:
        display(self.widget)


class _FigureImage(widgets.Image):
    """An :class:`ipywidgets.Image` whose tooltip becomes the picture's accessible name.

    The front end's tooltip code reads a ``description`` that a plain Image lacks,
    so the trait is declared here; the tooltip is rendered as the ``<img>`` title.
    """

    description = traitlets.Unicode("").tag(sync=True)


def _figure(figsize: tuple[float, float], ncols: int = 1, **kw: Any) -> tuple[Figure, Any]:
    fig = Figure(figsize=figsize, layout="constrained", dpi=90)
    axes = fig.subplots(1, ncols, **kw)
    return fig, axes


def _bar_artists(container: BarContainer) -> list[Artist]:
    return [*container.patches, *getattr(container, "texts", [])]


def _wire(
    fig: Figure,
    artists: Any,
    dynamic: Sequence[Artist],
    controls: dict[str, widgets.Widget],
    on_change: Callable[[], None],
    alt: str,
) -> Explorer:
    renderer = Renderer(fig, dynamic)
    width = int(fig.get_figwidth() * fig.dpi)
    image = _FigureImage(
        value=renderer.png(),
        format="png",
        tooltip=alt,
        layout=widgets.Layout(width="100%", max_width=f"{width}px", height="auto"),
    )
    box = widgets.VBox(
        [widgets.VBox(list(controls.values())), image],
        layout=widgets.Layout(width="100%", max_width=f"{width}px"),
    )
    explorer = Explorer(box, fig, artists, controls, image, renderer)

    def handler(_change: object) -> None:
        on_change()
        explorer.refresh()

    for control in controls.values():
        control.observe(handler, names="value")
    return explorer


# --------------------------------------------------------------------------- softmax (chapter 3)
@dataclass
class SoftmaxArtists:
    """Artists of the scores-and-weights figure.

    Attributes
    ----------
    scores : BarContainer
        One bar per raw score e_ti (any height).
    weights : BarContainer
        One bar per weight α_ti (heights in [0, 1], summing to 1).
    total : Text
        The text that states Σ_i α_ti.
    """

    scores: BarContainer
    weights: BarContainer
    total: Text


def draw_softmax(
    e: ArrayLike, labels: Sequence[str] | None = None, score_range: float = 6.0
) -> tuple[Figure, SoftmaxArtists]:
    """Draw raw scores e_ti (left) and their softmax weights α_ti (right).

    Parameters
    ----------
    e : (T_x,)
        The raw scores.
    labels : T_x strings, optional
        Bar labels.
    score_range : float
        The left panel's y axis spans ``[-score_range, score_range]``.

    Returns
    -------
    figure, artists : Figure, SoftmaxArtists

    See Also
    --------
    The chapter "Why the softmax denominator is not optional" (chapters/03_softmax).
    """
    e = np.asarray(e, dtype=float)
    fig, (ax_e, ax_a) = _figure((7.5, 3.0), ncols=2)  # 675 px: fits the book's text column
    scores = bars(e, labels, ax=ax_e, ylabel="raw score e_ti", ylim=(-score_range, score_range))
    weights = bars(
        softmax(e), labels, ax=ax_a, ylabel="weight α_ti", ylim=(0, 1.12), color=ACCENT_COLOR
    )
    ax_a.axhline(1.0, color="0.3", linewidth=0.8, linestyle="--")
    total = ax_a.text(0.02, 0.97, "", transform=ax_a.transAxes, va="top", fontsize=9)
    artists = SoftmaxArtists(scores=scores, weights=weights, total=total)
    update_softmax(artists, e)
    return fig, artists


def update_softmax(artists: SoftmaxArtists, e: ArrayLike) -> np.ndarray:
    """Set the score bars to ``e`` and the weight bars to ``softmax(e)``, in place.

    Parameters
    ----------
    artists : SoftmaxArtists
        From :func:`draw_softmax`.
    e : (T_x,)
        The new raw scores.

    Returns
    -------
    alpha : (T_x,)
        The weights now drawn.

    See Also
    --------
    The chapter "Why the softmax denominator is not optional" (chapters/03_softmax).
    """
    e = np.asarray(e, dtype=float)
    alpha = softmax(e)
    set_bar_heights(artists.scores, e)
    set_bar_heights(artists.weights, alpha)
    artists.total.set_text(f"Σ_i α_ti = {alpha.sum():.3f}")
    return alpha


def softmax_explorer(
    e: Sequence[float], labels: Sequence[str] | None = None, score_range: float = 6.0
) -> Explorer:
    """Sliders for each raw score, redrawing the scores and their softmax weights.

    Parameters
    ----------
    e : (T_x,)
        The initial scores (three in chapter 3).
    labels : T_x strings, optional
        Bar and slider labels.
    score_range : float
        Each slider runs over ``[-score_range, score_range]``.

    Returns
    -------
    Explorer
        Display it as the last expression of a cell.

    See Also
    --------
    The chapter "Why the softmax denominator is not optional" (chapters/03_softmax).
    """
    e0 = np.asarray(e, dtype=float)
    names = [str(x) for x in labels] if labels is not None else [str(k + 1) for k in range(e0.size)]
    fig, artists = draw_softmax(e0, names, score_range)
    controls = {
        name: widgets.FloatSlider(
            value=float(v),
            min=-score_range,
            max=score_range,
            step=0.1,
            description=f"score e ({name})",
            continuous_update=True,
            style={"description_width": "110px"},
            layout=widgets.Layout(width="420px"),
        )
        for name, v in zip(names, e0, strict=True)
    }

    def on_change() -> None:
        update_softmax(artists, [c.value for c in controls.values()])

    dynamic = [*_bar_artists(artists.scores), *_bar_artists(artists.weights), artists.total]
    return _wire(
        fig,
        artists,
        dynamic,
        controls,
        on_change,
        alt=(
            "Two bar charts that follow the three score sliders: the raw scores "
            "e_ti on the left, the softmax weights α_ti on the right."
        ),
    )


# --------------------------------------------------------------------------- steps (chapter 2)
@dataclass
class StepArtists:
    """Artists of the step-through figure.

    Attributes
    ----------
    image : AxesImage
        The full (T_y, T_x) heatmap of α.
    frame : Rectangle
        The outline around the current row t.
    weights : BarContainer
        The bars α_t1 … α_tT_x of the current step.
    label : Text
        Names the current step and the position it leans on most.
    """

    image: AxesImage
    frame: Rectangle
    weights: BarContainer
    label: Text
    alpha: np.ndarray = field(repr=False)
    src_tokens: list[str] = field(repr=False)
    tgt_tokens: list[str] = field(repr=False)


def draw_step(
    alpha: ArrayLike, src_tokens: Sequence[str], tgt_tokens: Sequence[str], t: int = 0
) -> tuple[Figure, StepArtists]:
    """Draw the heatmap of α with step ``t`` outlined, and that step's weights as bars.

    Parameters
    ----------
    alpha : (T_y, T_x)
        Attention weights of a whole output sentence.
    src_tokens : T_x strings
        The source words.
    tgt_tokens : T_y strings
        The output words.
    t : int
        The step to show first (0-based row index).

    Returns
    -------
    figure, artists : Figure, StepArtists

    See Also
    --------
    The chapter "The attention step, pictured" (chapters/02_attention_step).
    """
    a = np.asarray(alpha, dtype=float)
    if a.ndim != 2:
        raise ValueError(f"alpha must have shape (T_y, T_x), but it has shape {a.shape}")
    src, tgt = [str(s) for s in src_tokens], [str(s) for s in tgt_tokens]
    # 7.6 in at 90 dpi is 684 px: the width of the book's text column
    fig, (ax_h, ax_b) = _figure((7.6, 3.3 + 0.05 * a.shape[0]), ncols=2, width_ratios=[1.0, 1.1])
    image = heatmap(a, src, tgt, ax=ax_h)
    frame = Rectangle((-0.5, -0.5), a.shape[1], 1.0, fill=False, edgecolor="#d62728", linewidth=2.5)
    ax_h.add_patch(frame)
    weights = bars(a[0], src, ax=ax_b, ylabel="α_ti at this step t", ylim=(0, 1.1))
    ax_b.set_xlabel(SOURCE_LABEL)
    label = ax_b.text(0.02, 0.97, "", transform=ax_b.transAxes, va="top", fontsize=9)
    artists = StepArtists(image, frame, weights, label, a, src, tgt)
    update_step(artists, t)
    return fig, artists


def update_step(artists: StepArtists, t: int) -> np.ndarray:
    """Move the outline to step ``t`` and show α_t1 … α_tT_x as bars, in place.

    Parameters
    ----------
    artists : StepArtists
        From :func:`draw_step`.
    t : int
        0-based output step, ``0 ≤ t < T_y``.

    Returns
    -------
    alpha_t : (T_x,)
        The weights now drawn.

    See Also
    --------
    The chapter "The attention step, pictured" (chapters/02_attention_step).
    """
    T_y = artists.alpha.shape[0]
    if not 0 <= t < T_y:
        raise ValueError(f"t must be an output step between 0 and T_y - 1 = {T_y - 1}, got {t}")
    row = artists.alpha[t]
    artists.frame.set_y(t - 0.5)
    set_bar_heights(artists.weights, row)
    top = int(np.argmax(row))
    for k, patch in enumerate(artists.weights.patches):
        patch.set_facecolor(ACCENT_COLOR if k == top else BAR_COLOR)
    artists.label.set_text(
        f"t = {t + 1} ('{artists.tgt_tokens[t]}'): leans on "
        f"'{artists.src_tokens[top]}' (α = {row[top]:.2f})"
    )
    return row


def step_explorer(
    alpha: ArrayLike, src_tokens: Sequence[str], tgt_tokens: Sequence[str]
) -> Explorer:
    """A slider over output steps t showing which h_i each step leans on.

    Parameters
    ----------
    alpha : (T_y, T_x)
    src_tokens : T_x strings
    tgt_tokens : T_y strings

    Returns
    -------
    Explorer

    See Also
    --------
    The chapter "The attention step, pictured" (chapters/02_attention_step).
    """
    fig, artists = draw_step(alpha, src_tokens, tgt_tokens, t=0)
    slider = widgets.IntSlider(
        value=1,
        min=1,
        max=artists.alpha.shape[0],
        step=1,
        description="output step t",
        continuous_update=True,
        style={"description_width": "110px"},
        layout=widgets.Layout(width="420px"),
    )
    controls = {"t": slider}

    def on_change() -> None:
        update_step(artists, slider.value - 1)

    dynamic = [artists.frame, *_bar_artists(artists.weights), artists.label]
    return _wire(
        fig,
        artists,
        dynamic,
        controls,
        on_change,
        alt=(
            "Heatmap of the attention weights α_ti of a trained model, with the row "
            "of the selected output step t highlighted."
        ),
    )


# --------------------------------------------------------------------------- temperature (ch. 5)
@dataclass
class TemperatureArtists:
    """Artists of the sharpness figure.

    Attributes
    ----------
    weights : BarContainer
        α = softmax(β e), one bar per position.
    entropy_bar : BarContainer
        A single bar of height H (nats).
    ceiling : Line2D
        The line at log T_x, the largest possible H.
    label : Text
        States β and H.
    """

    weights: BarContainer
    entropy_bar: BarContainer
    ceiling: Line2D
    label: Text
    e: np.ndarray = field(repr=False)


def draw_temperature(
    e: ArrayLike, labels: Sequence[str] | None = None, beta: float = 1.0
) -> tuple[Figure, TemperatureArtists]:
    """Draw α = softmax(β e) (left) and its entropy H against log T_x (right).

    Parameters
    ----------
    e : (T_x,)
        Fixed raw scores.
    labels : T_x strings, optional
    beta : float
        Sharpness (inverse temperature) to draw first.

    Returns
    -------
    figure, artists : Figure, TemperatureArtists

    See Also
    --------
    The chapter "Attention entropy" (chapters/05_entropy).
    """
    e = np.asarray(e, dtype=float)
    fig, (ax_a, ax_h) = _figure((7.5, 3.0), ncols=2, width_ratios=[2.2, 1.0])
    weights = bars(softmax(e), labels, ax=ax_a, ylabel="α_ti = softmax(β e_ti)", ylim=(0, 1.12))
    log_T = float(np.log(e.size))
    entropy_bar = bars(
        [0.0],
        ["H"],
        ax=ax_h,
        xlabel="",
        ylabel="entropy H (nats)",
        ylim=(0, 1.15 * log_T),
        color=ACCENT_COLOR,
    )
    ceiling = ax_h.axhline(log_T, color="0.2", linestyle="--", linewidth=1.2)
    ax_h.text(
        0.5,
        log_T,
        f"log T_x = {log_T:.3f}",
        ha="center",
        va="bottom",
        fontsize=8,
        transform=ax_h.get_yaxis_transform(),
    )
    ax_h.set_xlim(-0.8, 0.8)
    label = ax_a.text(0.02, 0.97, "", transform=ax_a.transAxes, va="top", fontsize=9)
    artists = TemperatureArtists(weights, entropy_bar, ceiling, label, e)
    update_temperature(artists, beta)
    return fig, artists


def update_temperature(artists: TemperatureArtists, beta: float) -> tuple[np.ndarray, float]:
    """Redraw the weights softmax(β e) and their entropy H for a new sharpness β, in place.

    Parameters
    ----------
    artists : TemperatureArtists
        From :func:`draw_temperature`.
    beta : float
        The sharpness; β = 0 gives uniform weights, large β nearly one-hot.

    Returns
    -------
    alpha, H : (T_x,), float
        The weights and entropy (nats) now drawn.

    See Also
    --------
    The chapter "Attention entropy" (chapters/05_entropy).
    """
    alpha = softmax(beta * artists.e)
    H = float(entropy(alpha))
    set_bar_heights(artists.weights, alpha)
    set_bar_heights(artists.entropy_bar, [H])
    artists.label.set_text(f"β = {beta:.2f}   H = {H:.3f} nats")
    return alpha, H


def temperature_explorer(
    e: Sequence[float], labels: Sequence[str] | None = None, beta: float = 1.0
) -> Explorer:
    """A sharpness slider β showing softmax(β e) and its entropy H against log T_x.

    Parameters
    ----------
    e : (T_x,)
        Fixed raw scores.
    labels : T_x strings, optional
    beta : float
        The initial sharpness.

    Returns
    -------
    Explorer

    See Also
    --------
    The chapter "Attention entropy" (chapters/05_entropy).
    """
    fig, artists = draw_temperature(e, labels, beta)
    slider = widgets.FloatSlider(
        value=beta,
        min=0.0,
        max=10.0,
        step=0.1,
        description="sharpness β",
        continuous_update=True,
        style={"description_width": "110px"},
        layout=widgets.Layout(width="420px"),
    )
    controls = {"beta": slider}

    def on_change() -> None:
        update_temperature(artists, slider.value)

    dynamic = [*_bar_artists(artists.weights), *_bar_artists(artists.entropy_bar), artists.label]
    return _wire(
        fig,
        artists,
        dynamic,
        controls,
        on_change,
        alt=(
            "Bar chart of the attention weights at the selected sharpness β, with "
            "the entropy H compared with its maximum log T_x."
        ),
    )
