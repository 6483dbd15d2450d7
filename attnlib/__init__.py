"""attnlib: the shared code behind the executable course on additive attention.

The numpy reference implementation (:mod:`attnlib.core`) is re-exported here,
so a chapter can write ``import attnlib as al`` and call ``al.softmax``.
"""

import importlib.metadata

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

try:  # the one version is pyproject.toml's, read from the installed package's metadata
    __version__ = importlib.metadata.version("attnlib")
except importlib.metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
