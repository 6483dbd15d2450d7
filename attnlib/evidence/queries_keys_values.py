"""The claims of the chapter "Queries, keys and values" that rest on random draws, for any seed.

The chapter's experiments are Monte Carlo estimates on seeded random vectors
(:mod:`attnlib.transformer.qkv`), and what it says about them is checked here, one part per
experiment:

* "lookup": a memory whose one vector per slot is only the key, or only the value, returns
  what it was found by; separate keys and values retrieve the value, and so does one vector
  h_i = [k_i; v_i] that holds both, whether a projection U_a h_i or the query [q; 0] picks the
  half that is matched;
* "variance": Var(q·k) = d, and 1 once divided by √d;
* "saturation": without the scaling the softmax saturates and its gradient vanishes as d
  grows; with it, neither moves with d; dividing by d instead flattens the weights
  (groups "saturation" and "over_d");
* "bound": |e_ti| ≤ ‖v_a‖₁, reached by large inputs, far from reached by small ones.

Every number here is one draw, so every one of these claims varies with the seed: seed k
adds k to the seed of each experiment's draw (seed 0 is the chapter's: 3 for the lookup, 0
for the variance, 1 for the saturation, 4 for dividing by d, 2 for the bound). Each part
takes well under a second; the seed test draws seeds 1 and 2 in ``make test``.

What stays in the chapter: the checks that hold for any vectors, exactly (Bahdanau's step
and Luong's scores written as queries, keys and values give the same scores, weights and
context as the course's reference functions).

See Also
--------
The chapter "Queries, keys and values" (chapters/queries_keys_values).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attnlib import claims
from attnlib.evidence._shared import Checks, choose_parts, with_checks
from attnlib.transformer import qkv

__all__ = ["AT_LEAST", "DRAWS", "GROUPS", "PARTS", "check_claims"]

#: The parts of :func:`check_claims`, one per experiment.
PARTS = ("lookup", "variance", "saturation", "bound")
#: The groups of checks the chapter displays, each under its experiment.
GROUPS = ("lookup", "variance", "saturation", "over_d", "bound")
#: The seed of each draw for seed 0 (what the chapter shows); seed k adds k.
DRAWS = {"lookup": 3, "variance": 0, "saturation": 1, "over_d": 4, "bound": 2}
#: Fewest claims :func:`check_claims` must check (what the chapter shows).
AT_LEAST = 17


def check_claims(seed: int = 0, *, parts: Sequence[str] | None = None) -> dict[str, Any]:
    """The chapter's experiments, drawn with ``seed``, and the claims about them.

    Parameters
    ----------
    seed : int
        Added to each experiment's seed in :data:`DRAWS` (0: what the chapter shows).
    parts : sequence of str, optional
        Which parts of :data:`PARTS` to run (default: all).

    Returns
    -------
    dict
        ``lookup`` (:func:`attnlib.transformer.qkv.lookup`), ``variance``
        (:func:`~attnlib.transformer.qkv.dot_variance`), ``dev`` (its largest |Var / d − 1|),
        ``saturation`` (:func:`~attnlib.transformer.qkv.saturation`), ``over_d_max`` (the
        mean largest weight of scores divided by d), ``bound``
        (:func:`~attnlib.transformer.qkv.additive_bound`); ``checks`` (by group).
    """
    run = choose_parts(parts, PARTS)
    out: dict[str, Any] = {"seed": seed}
    checks: Checks = {}

    if "lookup" in run:
        look = qkv.lookup(seed=DRAWS["lookup"] + seed)  # 8 slots, d = 32, 500 queries
        chance = 1 / look.slots
        out["lookup"] = look
        checks["lookup"] = [
            claims.at_least(
                look.separate[0],
                0.95,
                "separate keys and values retrieve the value",
                name="accuracy",
            ),
            claims.at_least(
                look.weight_on_target, 0.8, "the weight falls on the right slot", name="mean α"
            ),
            claims.at_most(
                look.shared_values[0],
                chance + 0.1,
                "K = V = values does no better than chance",
                name="accuracy",
            ),
            claims.at_most(
                look.shared_keys[0],
                chance + 0.1,
                "K = V = keys does no better than chance",
                name="accuracy",
            ),
            claims.close(
                look.projected,
                look.separate,
                "keys U_a h_i, values h_i read as well as separate K, V",
                tol=1e-12,
                identity=True,
            ),
            claims.at_least(
                look.whole[0],
                0.95,
                "K = V = h_i = [k_i; v_i], with the query [q; 0], retrieves the value",
                name="accuracy",
            ),
        ]

    if "variance" in run:
        var = qkv.dot_variance(seed=DRAWS["variance"] + seed)  # d = 4 … 512, 4000 pairs each
        dev = float(np.max(np.abs(var.var_raw / var.d - 1)))
        out.update(variance=var, dev=dev)
        checks["variance"] = [
            claims.at_most(dev, 0.1, "Var(q·k) = d, within sampling error", name="max |Var/d − 1|"),
            claims.close(
                var.var_scaled, np.ones_like(var.d), "Var(q·k/√d) = 1 for every d", tol=0.1
            ),
        ]

    if "saturation" in run:
        sat = qkv.saturation(seed=DRAWS["saturation"] + seed)  # d = 4 … 512, 16 keys, 400 draws
        checks["saturation"] = [
            claims.check(
                bool(np.all(np.diff(sat.max_weight_raw) > 0)),
                "without scaling the softmax gets sharper with every doubling of d",
                evidence=f"mean max α from {sat.max_weight_raw[0]:.2f} (d = {sat.d[0]:g}) "
                f"to {sat.max_weight_raw[-1]:.2f} (d = {sat.d[-1]:g})",
            ),
            claims.at_least(
                float(sat.saturated_raw[-1]),
                0.5,
                "at d = 512 most raw rows are saturated",
                name="share > 0.99",
            ),
            claims.greater(
                float(sat.grad_raw[0]),
                float(sat.grad_raw[-1]),
                "the gradient through the softmax vanishes",
                by=0.2,
                names=("‖J‖ at d = 4", "‖J‖ at d = 512"),
            ),
            claims.at_most(
                float(np.max(sat.saturated_scaled)),
                0.0,
                "scaled, no row saturates at any d",
                name="share > 0.99",
            ),
            claims.at_most(
                float(np.ptp(sat.grad_scaled)),
                0.02,
                "scaled, the gradient's size does not depend on d",
                name="spread of ‖J‖",
            ),
            claims.at_most(
                float(np.ptp(sat.max_weight_scaled)),
                0.03,
                "scaled, the largest weight does not depend on d",
                name="spread of max α",
            ),
        ]
        # the same kind of draws at the largest d, divided by d instead of √d
        d_big, T_k = int(sat.d[-1]), sat.T_k
        over = np.random.default_rng(DRAWS["over_d"] + seed)
        q_big, K_big = over.normal(size=(400, 1, d_big)), over.normal(size=(400, T_k, d_big))
        w_over_d = qkv.scaled_dot_product_attention(q_big, K_big, K_big, scale=float(d_big))
        over_d_max = float(w_over_d.weights[:, 0].max(axis=-1).mean())
        out.update(saturation=sat, over_d_max=over_d_max)
        checks["over_d"] = [
            claims.at_most(
                over_d_max,
                1.25 / T_k,
                "dividing by d flattens the weights towards uniform",
                name="mean max α",
            )
        ]

    if "bound" in run:
        # d_a in (4, 16, 64, 256) × input scale in (0.1, 1, 10, 100) × 25 draws
        bound = qkv.additive_bound(seed=DRAWS["bound"] + seed)
        out["bound"] = bound
        checks["bound"] = [
            claims.at_most(
                float(bound.ratio.max()),
                1 + 1e-12,
                "|e_ti| ≤ ‖v_a‖₁ on every draw",
                name="max |e|/‖v_a‖₁",
                identity=True,
            ),
            claims.at_least(
                float(bound.ratio[bound.input_scale == 100].max()),
                0.999,
                "large inputs reach the bound",
                name="max ratio, inputs × 100",
            ),
            claims.at_most(
                float(bound.ratio[bound.input_scale == 0.1].mean()),
                0.2,
                "small inputs stay far below it",
                name="mean ratio, inputs × 0.1",
            ),
        ]
    return with_checks(out, checks)
