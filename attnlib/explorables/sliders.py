"""Sliders for the ideas that are best felt by dragging, computed in the reader's browser.

Each explorer is an `anywidget <https://anywidget.dev>`_ whose front end
(``attnlib/explorables/sliders.js``, one ES module with three views, and ``sliders.css``) draws
its figure as SVG and redraws it on every slider move **in the browser**: on the course's static
website (where the saved widget state draws it, with no kernel and no network), in Jupyter, on
Binder and on Colab (where the slider values also sync with the kernel).

* :class:`StepExplorer` (chapters/attention_step): a step slider t over a trained model's
  weights α_ti, the heatmap row t framed and drawn as bars (the weights are data: nothing is
  computed per move);
* :class:`SoftmaxExplorer` (chapters/softmax): one slider per score e_ti, bars of e_ti and of
  α_ti = softmax_i(e_ti);
* :class:`TemperatureExplorer` (chapters/entropy): a sharpness slider β, bars of
  softmax_i(β e_ti) and the entropy H against its ceiling log T_x.

Each class's ``current()`` is what the figure shows for the current slider values, computed by
:mod:`attnlib.core`; the browser tests hold the JavaScript to it. The ``*_explorer`` functions are
what the chapters call.

See Also
--------
attnlib.explorables.drag : the drag-the-decoder-state explorable of chapters/score_functions,
    built the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anywidget
import numpy as np
import traitlets
from matplotlib import colormaps
from matplotlib.colors import to_hex
from numpy.typing import ArrayLike

from attnlib.core import entropy, softmax
from attnlib.explorables import ASSETS

__all__ = [
    "SoftmaxExplorer",
    "StepExplorer",
    "TemperatureExplorer",
    "softmax_explorer",
    "step_explorer",
    "temperature_explorer",
]

#: The front end shared by the three explorers.
ESM = (ASSETS / "sliders.js").read_text(encoding="utf-8")
CSS = (ASSETS / "sliders.css").read_text(encoding="utf-8")


def _vector(x: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            f"{name} must have shape (T_x,) with T_x ≥ 1, but it has shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf; the explorer needs finite numbers")
    return arr


def _labels(labels: Sequence[str] | None, n: int) -> list[str]:
    if labels is None:
        return [f"i = {k + 1}" for k in range(n)]
    names = [str(x) for x in labels]
    if len(names) != n:
        raise ValueError(f"labels has {len(names)} names but there are T_x={n} scores")
    return names


class _Explorer(anywidget.AnyWidget):
    _esm = ESM
    _css = CSS
    view = traitlets.Unicode().tag(sync=True)


# --------------------------------------------------------------------------- softmax
class SoftmaxExplorer(_Explorer):
    """One slider per raw score e_ti; bars of the scores and of their softmax weights α_ti.

    Parameters
    ----------
    e : (T_x,)
        The starting scores.
    labels : T_x strings, optional
        Bar and slider names (default ``i = 1`` …).
    score_range : float
        Each slider runs over ``[-score_range, score_range]``.

    See Also
    --------
    The chapter "Why the softmax denominator is not optional" (chapters/softmax).
    """

    e = traitlets.List(traitlets.Float()).tag(sync=True)
    labels = traitlets.List(traitlets.Unicode()).tag(sync=True)
    score_range = traitlets.Float(6.0).tag(sync=True)
    step_size = traitlets.Float(0.1).tag(sync=True)

    def __init__(
        self, e: ArrayLike, labels: Sequence[str] | None = None, score_range: float = 6.0
    ) -> None:
        scores = _vector(e, "e")
        if not score_range > 0:
            raise ValueError(f"score_range must be positive, got {score_range!r}")
        super().__init__(
            view="softmax",
            labels=_labels(labels, scores.size),
            score_range=float(score_range),
            e=scores.tolist(),
        )

    @traitlets.validate("e")
    def _check_e(self, proposal: Any) -> list[float]:
        value = [float(x) for x in proposal["value"]]
        if self.labels and len(value) != len(self.labels):
            raise traitlets.TraitError(f"e must keep T_x={len(self.labels)} scores, got {value!r}")
        if not all(np.isfinite(value)):
            raise traitlets.TraitError(f"e must be finite numbers, got {value!r}")
        r = self.score_range
        return [min(r, max(-r, x)) for x in value]

    def current(self) -> dict[str, np.ndarray]:
        """``{"e", "alpha"}``: the scores and the weights the figure shows."""
        e = np.array(self.e)
        return {"e": e, "alpha": softmax(e)}


def softmax_explorer(
    e: Sequence[float], labels: Sequence[str] | None = None, score_range: float = 6.0
) -> SoftmaxExplorer:
    """Sliders for each raw score, redrawing the scores and their softmax weights.

    See :class:`SoftmaxExplorer`; display the result as the last expression of a cell.

    See Also
    --------
    The chapter "Why the softmax denominator is not optional" (chapters/softmax).
    """
    return SoftmaxExplorer(e, labels, score_range)


# --------------------------------------------------------------------------- steps
class StepExplorer(_Explorer):
    """A slider over output steps t: the heatmap of α with row t framed, row t as bars.

    Parameters
    ----------
    alpha : (T_y, T_x)
        Attention weights of a whole output sentence.
    src_tokens : T_x strings
    tgt_tokens : T_y strings
    t : int
        The step shown first, 1-based (as in the prose: t = 1 … T_y).

    See Also
    --------
    The chapter "The attention step, pictured" (chapters/attention_step).
    """

    alpha = traitlets.List(traitlets.List(traitlets.Float())).tag(sync=True)
    src_tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    tgt_tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    #: the heatmap's cell colours (cividis, as :func:`attnlib.plots.heatmap`), computed here once
    colors = traitlets.List(traitlets.List(traitlets.Unicode())).tag(sync=True)
    t = traitlets.Int(1).tag(sync=True)

    def __init__(
        self,
        alpha: ArrayLike,
        src_tokens: Sequence[str],
        tgt_tokens: Sequence[str],
        t: int = 1,
    ) -> None:
        a = np.asarray(alpha, dtype=float)
        if a.ndim != 2:
            raise ValueError(f"alpha must have shape (T_y, T_x), but it has shape {a.shape}")
        src, tgt = [str(s) for s in src_tokens], [str(s) for s in tgt_tokens]
        if a.shape != (len(tgt), len(src)):
            raise ValueError(
                f"alpha has shape {a.shape} but there are T_y={len(tgt)} output and "
                f"T_x={len(src)} source words"
            )
        cmap = colormaps["cividis"]
        colors = [[to_hex(cmap(float(x))) for x in row] for row in np.clip(a, 0, 1)]
        super().__init__(
            view="step", alpha=a.tolist(), src_tokens=src, tgt_tokens=tgt, colors=colors, t=t
        )

    @traitlets.validate("t")
    def _check_t(self, proposal: Any) -> int:
        t, T_y = int(proposal["value"]), len(self.alpha)
        if not 1 <= t <= T_y:
            raise traitlets.TraitError(
                f"t must be an output step between 1 and T_y = {T_y}, got {t}"
            )
        return t

    def current(self) -> dict[str, Any]:
        """``{"t", "alpha", "top"}``: the step, its weights α_t1 … α_tT_x, their argmax."""
        row = np.array(self.alpha[self.t - 1])
        return {"t": self.t, "alpha": row, "top": int(np.argmax(row))}


def step_explorer(
    alpha: ArrayLike, src_tokens: Sequence[str], tgt_tokens: Sequence[str]
) -> StepExplorer:
    """A slider over output steps t showing which h_i each step leans on.

    See :class:`StepExplorer`.

    See Also
    --------
    The chapter "The attention step, pictured" (chapters/attention_step).
    """
    return StepExplorer(alpha, src_tokens, tgt_tokens, t=1)


# --------------------------------------------------------------------------- temperature
class TemperatureExplorer(_Explorer):
    """A sharpness slider β: bars of α = softmax(β e) and the entropy H against log T_x.

    Parameters
    ----------
    e : (T_x,)
        Fixed raw scores.
    labels : T_x strings, optional
    beta : float
        The starting sharpness (inverse temperature), in ``[0, beta_max]``.
    beta_max : float
        The slider's upper end.

    See Also
    --------
    The chapter "Attention entropy" (chapters/entropy).
    """

    e = traitlets.List(traitlets.Float()).tag(sync=True)
    labels = traitlets.List(traitlets.Unicode()).tag(sync=True)
    beta = traitlets.Float(1.0).tag(sync=True)
    beta_max = traitlets.Float(10.0).tag(sync=True)
    step_size = traitlets.Float(0.1).tag(sync=True)

    def __init__(
        self,
        e: ArrayLike,
        labels: Sequence[str] | None = None,
        beta: float = 1.0,
        beta_max: float = 10.0,
    ) -> None:
        scores = _vector(e, "e")
        if scores.size < 2:
            raise ValueError("e needs T_x ≥ 2 scores: with one, H is always 0")
        super().__init__(
            view="temperature",
            e=scores.tolist(),
            labels=_labels(labels, scores.size),
            beta_max=float(beta_max),
            beta=beta,
        )

    @traitlets.validate("beta")
    def _check_beta(self, proposal: Any) -> float:
        value = proposal["value"]
        if isinstance(value, bool) or not np.isfinite(value) or value < 0:
            raise traitlets.TraitError(f"beta must be a finite number ≥ 0, got {value!r}")
        return min(float(value), self.beta_max)

    def current(self) -> dict[str, Any]:
        """``{"beta", "alpha", "H"}``: the sharpness, the weights and their entropy (nats)."""
        alpha = softmax(self.beta * np.array(self.e))
        return {"beta": self.beta, "alpha": alpha, "H": float(entropy(alpha))}


def temperature_explorer(
    e: Sequence[float], labels: Sequence[str] | None = None, beta: float = 1.0
) -> TemperatureExplorer:
    """A sharpness slider β showing softmax(β e) and its entropy H against log T_x.

    See :class:`TemperatureExplorer`.

    See Also
    --------
    The chapter "Attention entropy" (chapters/entropy).
    """
    return TemperatureExplorer(e, labels, beta)
