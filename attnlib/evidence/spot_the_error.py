"""The claims of the chapter "Spot the error" that rest on a trained model, for any training seed.

Error 5 ("the heatmap must be a diagonal band") is answered with the shipped copying model:
its heatmap of the first held-out string is a diagonal band, and it copies nearly every
held-out string exactly. Both vary with the training seed; seeds 1 and 2 retrain the
"copy" recipe (:func:`attnlib.evidence._shared.trained_model`).

The chapter's other checks are arithmetic on fixed arrays (a missing softmax denominator,
a transposed product, shapes of the weights) and do not depend on a seed: they stay in the
chapter, under their sentences.

See Also
--------
The chapter "Spot the error" (chapters/spot_the_error), error 5.
"""

from __future__ import annotations

from typing import Any

from attnlib import claims
from attnlib.alignment import diagonal_mass
from attnlib.evidence._shared import Checks, alpha_of, trained_model, with_checks
from attnlib.train import translate

__all__ = ["AT_LEAST", "GROUPS", "check_claims"]

#: The groups of checks the chapter displays, each under its own sentence.
GROUPS = ("band",)
#: Fewest claims :func:`check_claims` must check (what the chapter shows).
AT_LEAST = 2


def check_claims(seed: int = 0) -> dict[str, Any]:
    """Error 5: the copying model draws a diagonal band and copies almost everything.

    Parameters
    ----------
    seed : int
        Training seed; 0 is the shipped model.

    Returns
    -------
    dict
        ``band`` (share of the weight within one position of the diagonal, first test
        string), ``exact`` (held-out exact match), ``result`` (that string's
        :class:`~attnlib.train.Translation`), ``checks`` (group ``"band"``).
    """
    copy = trained_model("copy", seed)
    result = translate(copy.model, copy.task, [copy.task.test[0][0]])[0]
    band = diagonal_mass(alpha_of(result), width=1)
    exact = copy.metrics.exact_match
    groups: Checks = {
        "band": [
            claims.at_least(
                band,
                0.75,
                "the copying model's heatmap is a diagonal band",
                name="weight within ±1",
            ),
            claims.at_least(
                exact, 0.98, "it copies nearly every held-out string exactly", name="exact match"
            ),
        ]
    }
    return with_checks({"band": band, "exact": exact, "result": result}, groups)
