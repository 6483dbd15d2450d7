"""attnlib: the shared code behind the executable course on additive attention.

The numpy reference implementation (:mod:`attnlib.core`) is re-exported here,
so a chapter can write ``import attnlib as al`` and call ``al.softmax``.
"""

from attnlib.core import (
    AttentionStep,
    additive_scores,
    attend,
    context,
    dot_scores,
    entropy,
    multiplicative_scores,
    softmax,
)

__all__ = [
    "AttentionStep",
    "additive_scores",
    "attend",
    "context",
    "dot_scores",
    "entropy",
    "multiplicative_scores",
    "softmax",
]
__version__ = "0.1.0"
