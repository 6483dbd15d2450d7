"""The grader's checks of every exercise, one module each, gathered in :data:`EXERCISES`.

Trusted side (see :mod:`attnlib.grading.cases` for how a check works). Each
module defines ``EXERCISE``; a new exercise is one more module and one more line here.
"""

from __future__ import annotations

from attnlib.grading.cases import Exercise
from attnlib.grading.questions import (
    ex1_masked_softmax,
    ex2_additive_score,
    ex3_context_entropy,
    ex4_attention_module,
    ex5_spot_the_error,
    ex6_decoding,
    ex7_scaled_dot_product,
)

__all__ = ["EXERCISES"]

EXERCISES: dict[str, Exercise] = {
    m.EXERCISE.name: m.EXERCISE
    for m in (
        ex1_masked_softmax,
        ex2_additive_score,
        ex3_context_entropy,
        ex4_attention_module,
        ex5_spot_the_error,
        ex6_decoding,
        ex7_scaled_dot_product,
    )
}
