"""How torch code runs in the course: a fixed thread count and eval mode, as context managers.

Both are about getting the same numbers every time. A fixed thread count is
part of bit-for-bit reproducibility (some CPU kernels split their sums by
thread); eval mode is how a model is read, and a function that reads a model
must hand it back in the mode it found it.

See Also
--------
The chapter "A Bahdanau seq2seq, built from parts" (chapters/seq2seq).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch
from torch import nn

__all__ = ["RETRAIN_ENV", "eval_mode", "torch_threads", "want_retrain"]

RETRAIN_ENV = "ATTNLIB_RETRAIN"
"""Set to 1/true/yes/on to retrain every shipped model live instead of loading its checkpoint."""


def want_retrain(retrain: bool | None) -> bool:
    """``retrain`` if given, else whether :data:`RETRAIN_ENV` asks for retraining."""
    if retrain is not None:
        return bool(retrain)
    return os.environ.get(RETRAIN_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``torch.set_num_threads(n)``, then restore (None: leave as is).

    Parameters
    ----------
    n : int or None
        Threads for the block; the previous count comes back afterwards, even
        when the block raises.
    """
    if n is None:
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


@contextlib.contextmanager
def eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    """Put ``model`` in eval mode for the block, then back in the mode it was in.

    Parameters
    ----------
    model : nn.Module

    Yields
    ------
    model : nn.Module
        The same module, for ``with eval_mode(model) as m:``.
    """
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)
