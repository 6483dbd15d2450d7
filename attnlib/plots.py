"""Figures for the course, drawn with matplotlib in one consistent style.

Every function draws onto an ``ax`` it is given (or a new figure if ``ax`` is
None) and returns the artist it made, so a widget can later change that artist
in place (``set_data``, ``set_height``) instead of drawing a new figure.

Conventions: colour-blind-safe colormaps (cividis for weights, viridis for
everything else), axis labels in the course's notation, token labels on every
heatmap axis and a colorbar beside it. Captions and alt text belong to the
notebook cell (``mystnb`` metadata), not to ``ax.set_title``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import Colormap
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from numpy.typing import ArrayLike

__all__ = [
    "MAX_SCALED_WIDTH",
    "MAX_WIDTH",
    "MIN_FONT_PT",
    "SOURCE_LABEL",
    "STEP_LABEL",
    "bars",
    "by_length",
    "curves",
    "grouped_bars",
    "growth",
    "heatmap",
    "heatmap_entropy",
    "new_axes",
    "set_bar_heights",
    "step_diagram",
    "unit_bar",
    "vector",
]

#: x-axis label of every heatmap: the source positions.
SOURCE_LABEL = "source position i (h_i)"
#: y-axis label of every heatmap: the decoder steps.
STEP_LABEL = "output step t"

#: The widest figure (inches) that the website shows at its natural size: its text column is
#: about 650 px wide at a 1280 px window, and figures are saved at 100 dpi. A wider figure is
#: scaled down, and its text with it; figures grow with T_x only up to this width.
MAX_WIDTH = 6.4
#: The widest any figure may be (inches): scaled into the text column (660 px at a 1280 px window,
#: about 650 px inside an answer's dropdown) its MIN_FONT_PT text still shows at >= 9 px:
#: 8 pt x (650 px / 7.5 in, the saved width with its margin) / 72 = 9.6 px. Side-by-side panels
#: use this width.
MAX_SCALED_WIDTH = 7.4
#: The smallest font (points) of any text these functions draw: 8 pt is 11 px at 100 dpi, so a
#: figure no wider than MAX_WIDTH shows it at 11 px, one scaled to 80 % at 9 px.
MIN_FONT_PT = 8.0

#: The two colours the course uses for bars (from the cividis colormap).
BAR_COLOR = plt.get_cmap("cividis")(0.25)
ACCENT_COLOR = plt.get_cmap("cividis")(0.85)


def new_axes(ax: Axes | None = None, figsize: tuple[float, float] = (5.0, 3.2)) -> Axes:
    """Return ``ax``, or the axes of a new figure of size ``figsize`` if ``ax`` is None."""
    if ax is not None:
        return ax
    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _cell_size(T_x: int, largest: float, margin: float) -> float:
    """Width (inches) of one heatmap column: ``largest``, less when T_x columns and ``margin``
    (labels, colorbar) would make the figure wider than MAX_WIDTH."""
    return min(largest, (MAX_WIDTH - margin) / max(T_x, 1))


def _row_size(cell: float, largest: float) -> float:
    """Height (inches) of one heatmap row: close to square with the columns, but never less than
    a line of 10 pt tick labels needs."""
    return min(largest, max(0.18, 0.85 * cell))


def _labels(tokens: Sequence[str] | None, n: int, what: str) -> list[str]:
    if tokens is None:
        return [str(k + 1) for k in range(n)]
    tokens = [str(t) for t in tokens]
    if len(tokens) != n:
        raise ValueError(f"{what} has {len(tokens)} tokens but alpha has {n} along that axis")
    return tokens


def heatmap(
    alpha: ArrayLike,
    src_tokens: Sequence[str] | None = None,
    tgt_tokens: Sequence[str] | None = None,
    ax: Axes | None = None,
    *,
    cmap: str | Colormap = "cividis",
    vmin: float = 0.0,
    vmax: float = 1.0,
    colorbar: bool = True,
    colorbar_label: str = "α_ti",
    annotate: bool = False,
    fmt: str = "{:.2f}",
) -> AxesImage:
    """Draw attention weights α as a (T_y, T_x) image with token labels.

    Parameters
    ----------
    alpha : (T_y, T_x) or (T_x,)
        Attention weights; row t holds α_t1 … α_tT_x. A single row is drawn as
        one step.
    src_tokens : T_x strings, optional
        Labels of the source positions i (x axis); default ``1 … T_x``.
    tgt_tokens : T_y strings, optional
        Labels of the output steps t (y axis); default ``1 … T_y``.
    ax : matplotlib Axes, optional
        Where to draw; a new figure is made if None.
    cmap : colormap name or Colormap
        A colour-blind-safe colormap; cividis by default.
    vmin, vmax : float
        The colour scale, fixed to [0, 1] by default so that two heatmaps can be
        compared by eye.
    colorbar : bool
        Add a colorbar labelled ``colorbar_label``.
    annotate : bool
        Write each weight in its cell (for small T_x, T_y).
    fmt : str
        Format of the annotations.

    Returns
    -------
    image : AxesImage
        Change the weights later with ``image.set_data(new_alpha)``.

    Raises
    ------
    ValueError
        If alpha is not 1-D or 2-D, or the token lists do not match its shape.

    See Also
    --------
    The chapters "The attention step, pictured" (chapters/attention_step) and
    "Attention entropy" (chapters/entropy).
    """
    a = np.asarray(alpha, dtype=float)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2:
        raise ValueError(f"alpha must have shape (T_y, T_x) or (T_x,), but it has shape {a.shape}")
    T_y, T_x = a.shape
    xs = _labels(src_tokens, T_x, "src_tokens")
    ys = _labels(tgt_tokens, T_y, "tgt_tokens")
    cell = _cell_size(T_x, 0.55, 1.6)
    ax = new_axes(ax, figsize=(1.2 + cell * T_x, 1.0 + _row_size(cell, 0.45) * T_y))
    image = ax.imshow(a, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
    if max(map(len, xs)) * T_x > 30:  # long labels: slant them so they do not overlap
        ax.set_xticks(range(T_x), xs, rotation=45, ha="right", rotation_mode="anchor")
    else:
        ax.set_xticks(range(T_x), xs)
    ax.set_yticks(range(T_y), ys)
    ax.set_xlabel(SOURCE_LABEL)
    ax.set_ylabel(STEP_LABEL)
    if annotate:
        mid = (vmin + vmax) / 2
        for t in range(T_y):
            for i in range(T_x):
                ax.text(
                    i,
                    t,
                    fmt.format(a[t, i]),
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="black" if a[t, i] > mid else "white",
                )
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label=colorbar_label, shrink=0.9)
    return image


def bars(
    values: ArrayLike,
    labels: Sequence[str] | None = None,
    ax: Axes | None = None,
    *,
    xlabel: str = SOURCE_LABEL,
    ylabel: str = "α_ti",
    ylim: tuple[float, float] | None = None,
    color: object = BAR_COLOR,
    annotate: bool = True,
    fmt: str = "{:.2f}",
    zero_line: bool = True,
) -> BarContainer:
    """Draw one bar per source position: scores e_ti or weights α_ti.

    Parameters
    ----------
    values : (T_x,)
        The heights (scores may be negative).
    labels : T_x strings, optional
        Tick labels (tokens or ``i = 1 …``); default ``1 … T_x``.
    ax : matplotlib Axes, optional
        Where to draw; a new figure is made if None.
    xlabel, ylabel : str
        Axis labels in the course's notation (``"e_ti"`` for scores).
    ylim : (low, high), optional
        Fix the y range, e.g. ``(0, 1)`` for weights, so bars can be compared
        across figures and across slider moves.
    color : matplotlib colour
        Bar colour; a cividis shade by default.
    annotate : bool
        Write each value above its bar; the texts are kept in
        ``container.texts`` so :func:`set_bar_heights` can update them.
    fmt : str
        Format of the annotations.
    zero_line : bool
        Draw a thin line at height 0.

    Returns
    -------
    container : BarContainer
        Change the heights later with :func:`set_bar_heights`.

    See Also
    --------
    The chapter "Why the softmax denominator is not optional" (chapters/softmax).
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 1:
        raise ValueError(f"values must have shape (T_x,), but it has shape {v.shape}")
    xs = _labels(labels, v.size, "labels")
    ax = new_axes(ax, figsize=(min(MAX_SCALED_WIDTH, max(3.0, 1.2 + 0.6 * v.size)), 3.0))
    container = ax.bar(range(v.size), v, color=color, edgecolor="black", linewidth=0.6)
    if max(map(len, xs)) * v.size > 30:  # long labels: slant them so they do not overlap
        ax.set_xticks(range(v.size), xs, rotation=45, ha="right", rotation_mode="anchor")
    else:
        ax.set_xticks(range(v.size), xs)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    if zero_line:
        ax.axhline(0.0, color="0.3", linewidth=0.8)
    container.texts = []  # type: ignore[attr-defined]
    container.fmt = fmt  # type: ignore[attr-defined]
    if annotate:
        for k in range(v.size):
            container.texts.append(  # type: ignore[attr-defined]
                ax.text(
                    k, 0.0, "", ha="center", va="bottom", fontsize=9 if v.size <= 6 else MIN_FONT_PT
                )
            )
        set_bar_heights(container, v)
    return container


def set_bar_heights(container: BarContainer, values: ArrayLike) -> None:
    """Set the heights of the bars made by :func:`bars` in place, with their labels.

    Parameters
    ----------
    container : BarContainer
        Returned by :func:`bars`.
    values : (T_x,)
        The new heights, one per bar.

    See Also
    --------
    The chapter "Why the softmax denominator is not optional" (chapters/softmax).
    """
    v = np.asarray(values, dtype=float)
    patches = container.patches
    if v.shape != (len(patches),):
        raise ValueError(
            f"expected {len(patches)} values (one per bar, shape ({len(patches)},)), "
            f"but got shape {v.shape}"
        )
    texts = getattr(container, "texts", [])
    fmt = getattr(container, "fmt", "{:.2f}")
    for k, (patch, value) in enumerate(zip(patches, v, strict=True)):
        patch.set_height(value)
        if texts:
            texts[k].set_position((k, value))
            texts[k].set_va("bottom" if value >= 0 else "top")
            texts[k].set_text(fmt.format(value))


def unit_bar(
    alpha: ArrayLike,
    labels: Sequence[str] | None = None,
    ax: Axes | None = None,
    *,
    cmap: str | Colormap = "cividis",
    xlabel: str = "share of the whole, Σ_i α_ti = 1",
) -> list:
    """Draw weights as the segments of one bar of length exactly 1.

    The picture of "proportions": each α_ti is a slice of a single unit, so
    nothing can leak in or out.

    Parameters
    ----------
    alpha : (T_x,)
        Non-negative weights summing to 1.
    labels : T_x strings, optional
        Segment labels.
    ax : matplotlib Axes, optional
    cmap : colormap name or Colormap
        Segment colours are taken evenly from it.
    xlabel : str

    Returns
    -------
    segments : list of Rectangle
        One patch per position, left to right.

    See Also
    --------
    The chapter "Why the softmax denominator is not optional" (chapters/softmax).
    """
    a = np.asarray(alpha, dtype=float)
    if a.ndim != 1:
        raise ValueError(f"alpha must have shape (T_x,), but it has shape {a.shape}")
    names = _labels(labels, a.size, "labels")
    ax = new_axes(ax, figsize=(5.0, 1.6))
    colours = plt.get_cmap(cmap)(np.linspace(0.15, 0.9, a.size))
    left = np.concatenate([[0.0], np.cumsum(a)[:-1]])
    segments = list(
        ax.barh(0, a, left=left, color=colours, edgecolor="black", linewidth=0.6, height=0.6)
    )
    for k in range(a.size):
        if a[k] > 0.06:
            shade = "black" if k >= a.size / 2 else "white"
            ax.text(
                left[k] + a[k] / 2,
                0,
                f"{names[k]}\n{a[k]:.2f}",
                ha="center",
                va="center",
                fontsize=8,
                color=shade,
            )
    ax.axvline(1.0, color="0.2", linestyle="--", linewidth=1.0)
    ax.set_xlim(0, 1.15)
    ax.set_ylim(-0.6, 0.6)
    ax.set_yticks([])
    ax.set_xlabel(xlabel)
    return segments


def curves(
    x: ArrayLike,
    ys: dict[str, ArrayLike],
    ax: Axes | None = None,
    *,
    xlabel: str = "",
    ylabel: str = "",
    logy: bool = False,
    hline: tuple[float, str] | None = None,
) -> list:
    """Draw one line per entry of ``ys`` against ``x``, with a legend.

    Parameters
    ----------
    x : (n,)
    ys : dict of label to (n,) array
        Colours are taken from viridis; line styles differ too, so the curves
        stay apart in greyscale.
    ax : matplotlib Axes, optional
    xlabel, ylabel : str
        Axis labels in the course's notation.
    logy : bool
        Logarithmic y axis.
    hline : (y, label), optional
        A dashed reference line, e.g. ``(np.log(T_x), "log T_x")``.

    Returns
    -------
    lines : list of Line2D

    See Also
    --------
    The chapters "Why the softmax denominator is not optional" (chapters/softmax)
    and "Attention entropy" (chapters/entropy).
    """
    ax = new_axes(ax, figsize=(5.0, 3.2))
    xv = np.asarray(x, dtype=float)
    colours = plt.get_cmap("viridis")(np.linspace(0.0, 0.8, max(len(ys), 1)))
    styles = ["-", "--", "-.", ":"]
    lines = []
    for k, (label, y) in enumerate(ys.items()):
        (line,) = ax.plot(
            xv,
            np.asarray(y, dtype=float),
            styles[k % 4],
            color=colours[k],
            linewidth=2,
            label=label,
        )
        lines.append(line)
    if hline is not None:
        ax.axhline(hline[0], color="0.3", linestyle=":", linewidth=1.2, label=hline[1])
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False, fontsize=8)
    return lines


def grouped_bars(
    values: dict[str, ArrayLike],
    labels: Sequence[str] | None = None,
    ax: Axes | None = None,
    *,
    xlabel: str = SOURCE_LABEL,
    ylabel: str = "α_ti",
    ylim: tuple[float, float] | None = None,
) -> list[BarContainer]:
    """Draw several weight vectors side by side, one group of bars per position.

    Parameters
    ----------
    values : dict of label to (T_x,) array
        E.g. ``{"additive": alpha_add, "multiplicative": alpha_mul}``.
    labels : T_x strings, optional
    ax : matplotlib Axes, optional
    xlabel, ylabel : str
    ylim : (low, high), optional

    Returns
    -------
    containers : list of BarContainer, one per entry of ``values``

    See Also
    --------
    The chapter "Score functions" (chapters/score_functions).
    """
    arrays = {k: np.asarray(v, dtype=float) for k, v in values.items()}
    sizes = {v.shape for v in arrays.values()}
    if len(sizes) != 1 or len(next(iter(sizes))) != 1:
        raise ValueError(f"every entry of values must have the same shape (T_x,), got {sizes}")
    T_x = next(iter(sizes))[0]
    names = _labels(labels, T_x, "labels")
    ax = new_axes(ax, figsize=(min(MAX_SCALED_WIDTH, max(4.0, 1.5 + 0.9 * T_x)), 3.0))
    n = len(arrays)
    width = 0.8 / n
    colours = plt.get_cmap("cividis")(np.linspace(0.2, 0.85, n))
    hatches = ["", "//", "..", "xx"]
    containers = []
    for k, (label, v) in enumerate(arrays.items()):
        offset = (k - (n - 1) / 2) * width
        containers.append(
            ax.bar(
                np.arange(T_x) + offset,
                v,
                width,
                label=label,
                color=colours[k],
                edgecolor="black",
                linewidth=0.6,
                hatch=hatches[k % 4],
            )
        )
    ax.set_xticks(range(T_x), names)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.legend(frameon=False, fontsize=8)
    return containers


def vector(
    v: ArrayLike,
    ax: Axes,
    *,
    name: str,
    cmap: str | Colormap = "viridis",
    vlim: float | None = None,
    labels: Sequence[str] | None = None,
) -> AxesImage:
    """Draw a vector (d,) or a stack of vectors (d, n) as a column of cells with their values.

    Parameters
    ----------
    v : (d,) or (d, n)
        The components run down the column; ``n`` columns side by side.
    ax : matplotlib Axes
    name : str
        The symbol, drawn as the axes title (e.g. ``"c_t"``).
    cmap : colormap name or Colormap
    vlim : float, optional
        Colour scale ``[-vlim, vlim]``; default the largest absolute value.
    labels : n strings, optional
        Column labels (e.g. the source tokens for the h_i).

    Returns
    -------
    image : AxesImage

    See Also
    --------
    The chapter "The attention step, pictured" (chapters/attention_step).
    """
    a = np.asarray(v, dtype=float)
    a = a[:, None] if a.ndim == 1 else a
    lim = float(np.max(np.abs(a))) if vlim is None else vlim
    lim = lim or 1.0
    image = ax.imshow(a, cmap=cmap, vmin=-lim, vmax=lim, aspect="auto")
    for (r, c), value in np.ndenumerate(a):
        ax.text(
            c,
            r,
            f"{value:.2f}",
            ha="center",
            va="center",
            fontsize=MIN_FONT_PT,
            color="black" if value > 0 else "white",
        )
    ax.set_yticks([])
    if labels is not None:
        ax.set_xticks(range(a.shape[1]), [str(s) for s in labels], fontsize=8)
    else:
        ax.set_xticks([])
    ax.set_title(name, fontsize=10)
    return image


def step_diagram(
    h: ArrayLike,
    s_prev: ArrayLike,
    e: ArrayLike,
    alpha: ArrayLike,
    c: ArrayLike,
    s: ArrayLike,
    y_tilde: ArrayLike,
    src_tokens: Sequence[str],
    vocab: Sequence[str],
    t: int = 1,
    *,
    y_prev: str | None = None,
    W_a: ArrayLike | None = None,
    U_a: ArrayLike | None = None,
    v_a: ArrayLike | None = None,
) -> Figure:
    """Draw one decoder step from real numbers, with one arrow per dependency of its equations.

    The figure draws, in three lanes,

    - top: the score parameters W_a, U_a, v_a (if given), the encoder states
      h_i (one column per source word) and the context c_t = Σ_i α_ti h_i;
    - middle: the previous state s_{t-1}, the scores
      e_ti = v_aᵀ tanh(W_a s_{t-1} + U_a h_i) and the weights α_ti = softmax(e_t);
    - bottom: the word fed in, y_{t-1}, the new state s_t = f(s_{t-1}, y_{t-1}, c_t)
      and the prediction ỹ_t = g(s_t, c_t, y_{t-1}).

    Arrows (each one has the gid ``"source -> target"``, e.g. ``"s_{t-1} -> s_t"``):
    h_i → e, s_{t-1} → e, e → α, α → c, h_i → c, s_{t-1} → s_t, y_{t-1} → s_t,
    c_t → s_t, s_t → ỹ_t, c_t → ỹ_t, y_{t-1} → ỹ_t. Vector and parameter values
    are written in their cells, coloured on one viridis scale.

    Parameters
    ----------
    h : (T_x, d_h)
    s_prev : (d_s,)
    e, alpha : (T_x,)
    c : (d_h,)
    s : (d_s,)
    y_tilde : (V,)
        The predicted distribution over the output words.
    src_tokens : T_x strings
    vocab : V strings
    t : int
        The step number shown in the labels.
    y_prev : str, optional
        The word fed in at this step (e.g. ``"<bos>"`` at t = 1).
    W_a : (d_a, d_s), optional
    U_a : (d_a, d_h), optional
    v_a : (d_a,), optional
        The score parameters, drawn with their values when given.

    Returns
    -------
    Figure

    See Also
    --------
    The chapter "The attention step, pictured" (chapters/attention_step).
    """
    from matplotlib.patches import FancyArrowPatch
    from matplotlib.path import Path

    h = np.asarray(h, dtype=float)
    ev, p = np.asarray(e, dtype=float), np.asarray(y_tilde, dtype=float)
    named = (("W_a", W_a), ("U_a", U_a), ("v_a", v_a))
    params = [(n, np.asarray(m, dtype=float)) for n, m in named if m is not None]
    shown = [h, np.asarray(s_prev, dtype=float), np.asarray(c, dtype=float)]
    shown += [np.asarray(s, dtype=float)] + [m for _, m in params]
    lim = float(max(np.max(np.abs(a)) for a in shown)) or 1.0
    tm, ts = f"{t - 1}", f"{t}"
    red = "#b2182b"
    fig = plt.figure(figsize=(8.0, 7.6))

    def column(
        v: ArrayLike,
        rect: tuple[float, float, float, float],
        title: str,
        labels: Sequence[str] | None = None,
    ) -> AxesImage:
        ax = fig.add_axes(rect)
        image = vector(v, ax, name="", vlim=lim, labels=labels)
        ax.set_title(title, fontsize=11, loc="center" if len(title) < 30 else "left")
        for txt in ax.texts:
            txt.set_fontsize(9)
        return image

    def arrow(
        pts: list[tuple[float, float]], gid: str, label: str = "", at: tuple[float, float] = (0, 0)
    ) -> None:
        codes = [Path.MOVETO] + [Path.LINETO] * (len(pts) - 1)
        patch = FancyArrowPatch(
            path=Path(pts, codes),
            transform=fig.transFigure,
            arrowstyle="-|>",
            color=red,
            linewidth=1.6,
            mutation_scale=15,
        )
        patch.set_gid(gid)
        fig.add_artist(patch)
        if label:
            fig.text(*at, label, fontsize=10, color=red)

    # Top lane: the parameters, the encoder states, the context made from them.
    column(h.T, (0.36, 0.74, 0.27, 0.19), "encoder states $h_i$", labels=src_tokens)
    column(c, (0.925, 0.74, 0.06, 0.19), f"$c_{{{ts}}}$")
    if params:
        fig.text(0.02, 0.955, "score parameters (the same at every step)", fontsize=10)
        spots = {"W_a": (0.02, 0.86), "v_a": (0.215, 0.86), "U_a": (0.02, 0.745)}
        for name, m in params:
            m2 = m.reshape(-1, 1) if m.ndim == 1 else m
            ax = fig.add_axes((*spots[name], 0.055 * m2.shape[1], 0.03 * m2.shape[0]))
            vector(m2, ax, name="", vlim=lim)
            for txt in ax.texts:
                txt.set_fontsize(9)
            ax.set_xlabel(f"${name[0]}_a$", fontsize=10, labelpad=2)
    # Middle lane: scores and weights.
    image = column(s_prev, (0.04, 0.44, 0.07, 0.18), f"$s_{{{tm}}}$")
    ax_e = fig.add_axes((0.36, 0.44, 0.27, 0.16))
    bars(ev, src_tokens, ax=ax_e, xlabel="", ylabel="")
    lo, hi = min(ev.min(), 0.0), max(ev.max(), 0.0)
    ax_e.set_ylim(lo - 0.25 * (hi - lo or 1.0), hi + 0.25 * (hi - lo or 1.0))
    ax_e.set_title(rf"$e_{{{ts}i}} = v_a^\top \tanh(W_a s_{{{tm}}} + U_a h_i)$", fontsize=11)
    ax_a = fig.add_axes((0.68, 0.44, 0.22, 0.16))
    bars(alpha, src_tokens, ax=ax_a, xlabel="", ylabel="", ylim=(0, 1.15))
    ax_a.set_title(rf"$\alpha_{{{ts}i}} = \mathrm{{softmax}}_i(e_{{{ts}i}})$", fontsize=11)
    for ax in (ax_e, ax_a):
        ax.set_yticks([])
        ax.tick_params(axis="x", labelsize=9)
    # Bottom lane: the word fed in, the new state, the prediction.
    word = y_prev if y_prev is not None else "the previous word"
    box = {"boxstyle": "round,pad=0.4", "facecolor": "white", "edgecolor": "0.3"}
    fig.text(0.02, 0.10, f"$y_{{{tm}}}$ = {word}", fontsize=11, bbox=box)
    column(s, (0.40, 0.07, 0.07, 0.18), f"$s_{{{ts}}} = f(s_{{{tm}}}, y_{{{tm}}}, c_{{{ts}}})$")
    ax_y = fig.add_axes((0.72, 0.07, 0.26, 0.18))
    ax_y.barh(range(p.size), p, color=BAR_COLOR, edgecolor="black", linewidth=0.6)
    for k, value in enumerate(p):
        ax_y.text(value + 0.02, k, f"{value:.2f}", va="center", fontsize=9)
    ax_y.set_yticks(range(p.size), [str(w) for w in vocab], fontsize=9)
    ax_y.invert_yaxis()
    ax_y.set_xlim(0, 1.3)
    ax_y.set_xticks([])
    ax_y.set_xlabel("P(next word)", fontsize=9, loc="right")
    ax_y.set_title(rf"$\tilde y_{{{ts}}} = g(s_{{{ts}}}, c_{{{ts}}}, y_{{{tm}}})$", fontsize=11)
    fig.colorbar(image, cax=fig.add_axes((0.14, 0.29, 0.2, 0.015)), orientation="horizontal")
    fig.text(0.24, 0.315, "value in a cell", fontsize=9, ha="center")
    # One arrow per dependency in the equations (figure coordinates).
    arrow([(0.495, 0.705), (0.495, 0.635)], "h_i -> e", "$U_a h_i$", (0.505, 0.66))
    arrow([(0.115, 0.53), (0.345, 0.53)], "s_{t-1} -> e", f"$W_a s_{{{tm}}}$", (0.13, 0.54))
    arrow([(0.635, 0.53), (0.675, 0.53)], "e -> alpha")
    arrow([(0.87, 0.635), (0.935, 0.725)], "alpha -> c_t")
    sum_label = rf"$c_{{{ts}}} = \sum_i \alpha_{{{ts}i}} h_i$"
    arrow([(0.64, 0.835), (0.915, 0.835)], "h_i -> c_t", sum_label, (0.655, 0.855))
    arrow([(0.075, 0.435), (0.075, 0.20), (0.395, 0.20)], "s_{t-1} -> s_t")
    arrow([(0.14, 0.115), (0.395, 0.115)], "y_{t-1} -> s_t")
    arrow([(0.06, 0.085), (0.06, 0.025), (0.76, 0.025), (0.76, 0.065)], "y_{t-1} -> y~_t")
    arrow([(0.955, 0.735), (0.955, 0.36), (0.435, 0.36), (0.435, 0.285)], "c_t -> s_t")
    arrow([(0.955, 0.36), (0.955, 0.285)], "c_t -> y~_t")
    arrow([(0.475, 0.16), (0.62, 0.16)], "s_t -> y~_t")
    return fig


def growth(
    series: dict[str, tuple[ArrayLike, ArrayLike, float, float]],
    ax: Axes | None = None,
    *,
    xlabel: str = "problem size",
    ylabel: str = "seconds",
) -> list:
    """Measurements against size on log–log axes, each with its fitted power law.

    Parameters
    ----------
    series : dict of label to ``(x, y, exponent, prefactor)``
        Sizes, measurements and the fit ``y ≈ prefactor · x**exponent`` (e.g.
        from :func:`attnlib.experiments.fit_growth`); the legend shows the
        exponent.
    ax : matplotlib Axes, optional
    xlabel, ylabel : str
        Axis labels in the course's notation (e.g. ``"T_x = T_y"``).

    Returns
    -------
    lines : list of Line2D
        The measured points (markers), one per series.

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 8.
    """
    from matplotlib.ticker import NullFormatter

    ax = new_axes(ax, figsize=(5.0, 3.4))
    colours = plt.get_cmap("viridis")(np.linspace(0.0, 0.75, max(len(series), 1)))
    markers = ["o", "s", "^", "D"]
    lines = []
    for k, (label, (x, y, exponent, prefactor)) in enumerate(series.items()):
        xv, yv = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        (pts,) = ax.plot(xv, yv, markers[k % 4], color=colours[k], label=f"{label} (measured)")
        xs = np.geomspace(xv.min(), xv.max(), 50)
        ax.plot(
            xs,
            prefactor * xs**exponent,
            "--",
            color=colours[k],
            linewidth=1.5,
            label=f"fit ∝ size^{exponent:.2f}",
        )
        lines.append(pts)
    ax.set_xscale("log")
    ax.set_yscale("log")
    sizes = np.unique(np.concatenate([np.asarray(v[0], dtype=float) for v in series.values()]))
    if sizes.size <= 12:  # label the measured sizes themselves, not 3×10^1 …
        ax.set_xticks(sizes, [f"{v:g}" for v in sizes])
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False, fontsize=8)
    return lines


class _Bucket(Protocol):
    """What :func:`by_length` reads of a bucket (:class:`attnlib.trained.Bucket`)."""

    @property
    def lo(self) -> int: ...
    @property
    def hi(self) -> int: ...
    @property
    def label(self) -> str: ...


def by_length(
    series: Mapping[str, Sequence[_Bucket]],
    ax: Axes | None = None,
    *,
    metric: str = "exact_match",
    xlabel: str = "source length (bucket)",
    ylabel: str | None = None,
    ylim: tuple[float, float] = (0.0, 1.05),
) -> list:
    """Held-out accuracy per source-length bucket, one line per model.

    The shape of Bahdanau et al.'s quality-against-length figure: a model whose
    line stays up on the long buckets is not limited by a fixed-length summary.

    Parameters
    ----------
    series : dict of label to buckets
        Each bucket has ``lo``, ``hi`` (source lengths, inclusive), ``label``
        and the attribute named by ``metric``, e.g. the ``by_length`` list of
        :class:`attnlib.train.Metrics`. Points sit at the bucket centres and
        carry the bucket labels as ticks.
    ax : matplotlib Axes, optional
    metric : {"exact_match", "token_accuracy"}
        Which attribute of the buckets to draw.
    xlabel : str
    ylabel : str, optional
        Default: "exact match" or "token accuracy".
    ylim : (low, high)

    Returns
    -------
    lines : list of Line2D, one per entry of ``series``

    Raises
    ------
    ValueError
        If a series is empty or its buckets lack ``metric``.

    See Also
    --------
    The chapter "The fixed-length bottleneck" (chapters/bottleneck).
    """
    ax = new_axes(ax, figsize=(5.5, 3.4))
    colours = plt.get_cmap("viridis")(np.linspace(0.0, 0.75, max(len(series), 1)))
    markers, styles = ["o", "s", "^", "D"], ["-", "--", "-.", ":"]
    lines, ticks = [], {}
    for k, (label, buckets) in enumerate(series.items()):
        if len(buckets) == 0:
            raise ValueError(f"series {label!r} has no buckets")
        missing = [b for b in buckets if not hasattr(b, metric)]
        if missing:
            raise ValueError(f"the buckets of {label!r} have no attribute {metric!r}")
        x = [(b.lo + b.hi) / 2 for b in buckets]
        y = [float(getattr(b, metric)) for b in buckets]
        ticks.update({xi: b.label for xi, b in zip(x, buckets, strict=True)})
        (line,) = ax.plot(
            x, y, styles[k % 4], marker=markers[k % 4], color=colours[k], linewidth=2, label=label
        )
        lines.append(line)
    ax.set_xticks(sorted(ticks), [ticks[x] for x in sorted(ticks)])
    ax.set_ylim(*ylim)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel or metric.replace("_", " "))
    ax.legend(frameon=False, fontsize=8)
    return lines


def heatmap_entropy(
    alpha: ArrayLike,
    src_tokens: Sequence[str] | None = None,
    tgt_tokens: Sequence[str] | None = None,
    axes: Sequence[Axes] | None = None,
    *,
    colorbar: bool = True,
) -> tuple[AxesImage, BarContainer]:
    """A heatmap of α with the entropy H_t of each step as a bar beside its row.

    Parameters
    ----------
    alpha : (T_y, T_x)
        Attention weights, one row per output step.
    src_tokens : T_x strings, optional
    tgt_tokens : T_y strings, optional
    axes : two matplotlib Axes, optional
        Where to draw the heatmap and the bars; a new figure if None.
    colorbar : bool
        Add the heatmap's colorbar.

    Returns
    -------
    image : AxesImage
    bars : BarContainer
        One horizontal bar per output step t, of length H_t in nats; a dashed
        line marks the ceiling log T_x (uniform attention).

    See Also
    --------
    The chapters "Attention entropy" (chapters/entropy) and "Reading alignment
    heatmaps" (chapters/heatmaps).
    """
    from attnlib.core import entropy

    a = np.asarray(alpha, dtype=float)
    if a.ndim != 2:
        raise ValueError(f"alpha must have shape (T_y, T_x), but it has shape {a.shape}")
    T_y, T_x = a.shape
    if axes is None:
        _, axes = plt.subplots(
            1,
            2,
            figsize=(
                2.6 + _cell_size(T_x, 0.5, 2.8) * T_x,
                1.0 + _row_size(_cell_size(T_x, 0.5, 2.8), 0.42) * T_y,
            ),
            layout="constrained",
            width_ratios=[max(T_x, 3), 3],
        )
    ax_map, ax_H = axes
    image = heatmap(a, src_tokens, tgt_tokens, ax=ax_map, colorbar=colorbar)
    H = np.asarray(entropy(a), dtype=float)
    container = ax_H.barh(range(T_y), H, color=BAR_COLOR, edgecolor="black", linewidth=0.6)
    ax_H.axvline(np.log(T_x), color="0.3", linestyle="--", linewidth=1.0)
    ax_H.set_ylim(T_y - 0.5, -0.5)  # rows in the same order as the heatmap
    ax_H.set_yticks(range(T_y), _labels(tgt_tokens, T_y, "tgt_tokens"))
    ax_H.set_xlim(0, 1.1 * np.log(T_x))
    ax_H.set_xlabel("$H_t$ (nats)\n" r"dashed: $\log T_x$")
    return image, container
