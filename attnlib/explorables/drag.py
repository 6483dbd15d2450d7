"""The attention step as a picture the learner drags, computed in the browser (no kernel needed).

:class:`AttentionDrag` is an `anywidget <https://anywidget.dev>`_: its front end
(``attnlib/explorables/attention_drag.js``, an ES module, and its stylesheet) computes the scores
e_ti, the weights α_ti and the context c_t in the reader's browser and draws them as SVG. The
learner drags the decoder state s_{t-1} (or moves its sliders), sets a sharpness β and picks the
score:

* dot: e_ti = β s_{t-1}ᵀ h_i;
* additive: e_ti = β v_aᵀ tanh(W_a s_{t-1} + U_a h_i), with fixed W_a, U_a, v_a.

The same widget runs in Jupyter, on Binder and on Colab (the kernel holds its state ``s``,
``beta`` and ``score``), and on the course's static website, where the embedded widget state draws
it and the page's own JavaScript moves it. :func:`attention_step` is the same computation in
Python, through :mod:`attnlib.core`: the browser tests hold the JavaScript to it.

See Also
--------
The chapter "Score functions" (chapters/score_functions), section "Drag the decoder state".
"""

from __future__ import annotations

from typing import Any

import anywidget
import numpy as np
import traitlets
from numpy.typing import ArrayLike

from attnlib.core import AttentionStep, additive_scores, context, dot_scores, softmax
from attnlib.explorables import ASSETS

__all__ = [
    "DEFAULT_H",
    "DEFAULT_TOKENS",
    "DEFAULT_U_A",
    "DEFAULT_V_A",
    "DEFAULT_W_A",
    "SCORES",
    "AttentionDrag",
    "attention_step",
]

#: The front ends the widgets ship to the browser: ``attention_drag.*`` (here) and ``sliders.*``
#: (:mod:`attnlib.explorables.sliders`' step, softmax and temperature explorers), ES modules and
#: stylesheets.
SCORES = ("dot", "additive")

#: Four encoder states in 2-D. "cat" lies inside the triangle of the other three.
DEFAULT_TOKENS = ("the", "black", "cat", "slept")
DEFAULT_H = ((2.0, 0.5), (-1.5, 1.5), (0.3, 0.2), (-0.5, -2.0))
#: Fixed parameters of the additive score (d_a = 2, d_s = d_h = 2).
DEFAULT_W_A = ((-1.5, -0.4), (0.0, 0.4))
DEFAULT_U_A = ((-1.0, 1.2), (0.2, -0.5))
DEFAULT_V_A = (-2.3, -1.0)


def attention_step(
    s_prev: ArrayLike,
    h: ArrayLike,
    *,
    score: str = "dot",
    beta: float = 1.0,
    W_a: ArrayLike = DEFAULT_W_A,
    U_a: ArrayLike = DEFAULT_U_A,
    v_a: ArrayLike = DEFAULT_V_A,
) -> AttentionStep:
    """Scores, weights and context of the explorable, computed by :mod:`attnlib.core`.

    Parameters
    ----------
    s_prev : (..., d_s)
        The decoder state s_{t-1}.
    h : (T_x, d_h)
        The encoder states.
    score : {"dot", "additive"}
        ``"dot"``: e_ti = β s_{t-1}ᵀ h_i (needs d_s = d_h); ``"additive"``:
        e_ti = β v_aᵀ tanh(W_a s_{t-1} + U_a h_i).
    beta : float
        The sharpness β ≥ 0 that multiplies every score (β = 0 gives uniform weights).
    W_a : (d_a, d_s)
    U_a : (d_a, d_h)
    v_a : (d_a,)
        The additive score's parameters (ignored by the dot score).

    Returns
    -------
    AttentionStep
        ``(e, alpha, c)`` of shapes ``(..., T_x)``, ``(..., T_x)``, ``(..., d_h)``.

    See Also
    --------
    The chapter "Score functions" (chapters/score_functions).
    """
    if score not in SCORES:
        raise ValueError(f'score must be "dot" or "additive", got {score!r}')
    beta = _sharpness(beta)
    raw = dot_scores(s_prev, h) if score == "dot" else additive_scores(s_prev, h, W_a, U_a, v_a)
    e = beta * raw
    alpha = softmax(e)
    return AttentionStep(e=e, alpha=alpha, c=context(alpha, h))


def _sharpness(beta: object) -> float:
    if isinstance(beta, bool) or not isinstance(beta, (int, float, np.floating, np.integer)):
        raise TypeError(f"beta must be a number, got {beta!r}")
    value = float(beta)
    if not (np.isfinite(value) and value >= 0):
        raise ValueError(f"beta must be a finite number ≥ 0, got {beta!r}")
    return value


def _matrix(x: ArrayLike, name: str, shape: str, cols: int | None = None) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 2 or (cols is not None and arr.shape[1] != cols):
        raise ValueError(f"{name} must have shape {shape}, but it has shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf; the explorable needs finite numbers")
    return arr


class AttentionDrag(anywidget.AnyWidget):
    """The attention step in 2-D: drag s_{t-1}, watch e_ti, α_ti and c_t follow.

    Parameters
    ----------
    h : (T_x, 2)
        The encoder states h_i, drawn as points.
    tokens : sequence of T_x str
        The word of each position.
    s : (2,)
        The starting decoder state s_{t-1}.
    beta : float
        The starting sharpness β.
    score : {"dot", "additive"}
    W_a, U_a : (d_a, 2)
    v_a : (d_a,)
        The fixed parameters of the additive score.
    lim : float
        The figure shows [-lim, lim]²; s_{t-1} stays in it.

    Notes
    -----
    The kernel holds ``s``, ``beta`` and ``score``, synced with the front end; :meth:`step`
    gives what the figure shows, computed by :mod:`attnlib.core`.

    See Also
    --------
    The chapter "Score functions" (chapters/score_functions).
    """

    _esm = (ASSETS / "attention_drag.js").read_text(encoding="utf-8")
    _css = (ASSETS / "attention_drag.css").read_text(encoding="utf-8")

    h = traitlets.List(traitlets.List(traitlets.Float())).tag(sync=True)
    tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    W_a = traitlets.List(traitlets.List(traitlets.Float())).tag(sync=True)
    U_a = traitlets.List(traitlets.List(traitlets.Float())).tag(sync=True)
    v_a = traitlets.List(traitlets.Float()).tag(sync=True)
    s = traitlets.List(traitlets.Float(), [0.0, 0.0]).tag(sync=True)
    beta = traitlets.Float(1.0).tag(sync=True)
    score = traitlets.Unicode("dot").tag(sync=True)
    lim = traitlets.Float(3.0).tag(sync=True)
    beta_max = traitlets.Float(4.0).tag(sync=True)
    #: the sliders' step; a drag lands on the same grid
    step_size = traitlets.Float(0.05).tag(sync=True)

    def __init__(
        self,
        h: ArrayLike = DEFAULT_H,
        tokens: tuple[str, ...] | list[str] = DEFAULT_TOKENS,
        *,
        s: ArrayLike = (1.0, 1.0),
        beta: float = 1.0,
        score: str = "dot",
        W_a: ArrayLike = DEFAULT_W_A,
        U_a: ArrayLike = DEFAULT_U_A,
        v_a: ArrayLike = DEFAULT_V_A,
        lim: float = 3.0,
        beta_max: float = 4.0,
        **kwargs: Any,
    ) -> None:
        h_arr = _matrix(h, "h", "(T_x, 2): one 2-D point per encoder state", cols=2)
        if len(tokens) != len(h_arr):
            raise ValueError(f"tokens has {len(tokens)} words but h has T_x={len(h_arr)} states")
        W = _matrix(W_a, "W_a", "(d_a, d_s) with d_s = 2", cols=2)
        U = _matrix(U_a, "U_a", "(d_a, d_h) with d_h = 2", cols=2)
        v = np.asarray(v_a, dtype=float)
        if W.shape[0] != U.shape[0] or v.shape != (W.shape[0],):
            raise ValueError(
                f"W_a {W.shape}, U_a {U.shape} and v_a {v.shape} must share d_a "
                "(shapes (d_a, 2), (d_a, 2), (d_a,))"
            )
        if not lim > 0:
            raise ValueError(f"lim must be positive, got {lim!r}")
        super().__init__(
            h=h_arr.tolist(),
            tokens=[str(t) for t in tokens],
            W_a=W.tolist(),
            U_a=U.tolist(),
            v_a=v.tolist(),
            lim=float(lim),
            beta_max=float(beta_max),
            s=[float(x) for x in np.asarray(s, dtype=float).ravel()],
            beta=beta,
            score=score,
            **kwargs,
        )

    @traitlets.validate("s")
    def _check_s(self, proposal: Any) -> list[float]:
        value = [float(x) for x in proposal["value"]]
        if len(value) != 2 or not all(np.isfinite(value)):
            raise traitlets.TraitError(f"s must be two finite numbers (d_s = 2), got {value!r}")
        return [min(self.lim, max(-self.lim, x)) for x in value]

    @traitlets.validate("beta")
    def _check_beta(self, proposal: Any) -> float:
        try:
            value = _sharpness(proposal["value"])
        except (TypeError, ValueError) as err:
            raise traitlets.TraitError(str(err)) from None
        return min(value, self.beta_max)

    @traitlets.validate("score")
    def _check_score(self, proposal: Any) -> str:
        if proposal["value"] not in SCORES:
            raise traitlets.TraitError(
                f'score must be "dot" or "additive", got {proposal["value"]!r}'
            )
        return str(proposal["value"])

    def step(self) -> AttentionStep:
        """``(e, alpha, c)`` for the current ``s``, ``beta`` and ``score`` (what is drawn)."""
        return attention_step(
            self.s,
            self.h,
            score=self.score,
            beta=self.beta,
            W_a=self.W_a,
            U_a=self.U_a,
            v_a=self.v_a,
        )
