"""The claims of the chapter "From text to tensors" that vary with a seed: bucketing's padding.

Almost everything this chapter states is about the data (the Tatoeba pairs as shipped, the
normalisation rules, the tokens, the split, the references, the vocabularies and their
``<unk>`` shares) or about arithmetic that holds for any weights (padded positions get
α_1i = 0 exactly): no seed changes them, and the chapter checks them where it computes them.
The split is the data of every seed (the shipped recipe's split; a training seed changes the
initial weights and the batch order, not the test sentences).

One claim depends on a seed: how much padding bucketing saves. The training pairs are
shuffled before they are sorted into runs of similar length, and the random batches it is
compared with are a random order; both come from the batch-order seed, which is the
recipe's seed plus the training seed (as :func:`attnlib.mt.translation.retrain` draws it).
Seed k shuffles with seed k; no model is trained, so ``make test`` runs seeds 1 and 2 in
full.

See Also
--------
The chapter "From text to tensors" (chapters/text_to_tensors).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attnlib import claims
from attnlib.evidence._shared import Checks, with_checks
from attnlib.mt import tatoeba as tb
from attnlib.mt import translation as tr
from attnlib.train import Batch

__all__ = ["AT_LEAST", "GROUPS", "check_claims", "pad_share"]

#: The groups of checks the chapter displays.
GROUPS = ("bucketing",)
#: Fewest claims :func:`check_claims` must check (what the chapter shows).
AT_LEAST = 4


def pad_share(runs: Sequence[Sequence[int]], lengths: Sequence[int]) -> float:
    """The share of pad cells when each run of pair indices is padded to its longest.

    Parameters
    ----------
    runs : sequence of sequences of int
        The pairs of each batch, by index.
    lengths : sequence of int
        Each pair's length (its source or its target, ``<eos>`` included).

    Returns
    -------
    float
        Pad cells ÷ all cells, over every batch.
    """
    cells = sum(len(run) * max(lengths[i] for i in run) for run in runs)
    return 1 - sum(lengths[i] for run in runs for i in run) / cells


def _indices(batch: Batch) -> list[int]:
    """The training pairs of a bucketed batch, by index."""
    if batch.index is None:
        raise ValueError("a bucketed batch must carry its pairs' indices (batch.index)")
    return [int(i) for i in batch.index.tolist()]


def check_claims(seed: int = 0, *, data: tr.Data | None = None) -> dict[str, Any]:
    """Bucketed batches against random ones, shuffled with ``seed``: how much padding each has.

    Parameters
    ----------
    seed : int
        The batch-order seed (0: the attention model's recipe, what the chapter shows).
    data : attnlib.mt.translation.Data, optional
        ``tr.prepare(tr.RECIPES["attention"])``, if the caller has it (the chapter does):
        preparing it again takes a few seconds.

    Returns
    -------
    dict
        ``batch_size``; ``bucketed`` (the batches of :func:`attnlib.mt.tatoeba.batches`);
        ``share`` (pad share by (kind, side), kind "bucketed" or "random", side "source" or
        "target"); ``from_masks`` (the bucketed source pad share read off the batches'
        masks); ``one_length`` (share of bucketed batches whose sources all have one
        length); ``checks`` (group ``"bucketing"``).
    """
    recipe = tr.RECIPES["attention"]
    if data is None:
        data = tr.prepare(recipe)
    shuffle = recipe.seed + seed  # the batch-order seed of training seed ``seed``
    bucketed = list(tb.batches(data.train, recipe.batch_size, seed=shuffle))
    order = np.random.default_rng(shuffle).permutation(len(data.train)).tolist()
    size = recipe.batch_size
    runs = {
        "bucketed": [_indices(b) for b in bucketed],
        "random": [order[j : j + size] for j in range(0, len(order), size)],
    }
    lengths = {"source": [len(s) for s, _ in data.train], "target": [len(t) for _, t in data.train]}
    share = {
        (kind, side): pad_share(runs[kind], lengths[side]) for kind in runs for side in lengths
    }
    from_masks = sum(int((~b.mask).sum()) for b in bucketed) / sum(b.mask.numel() for b in bucketed)
    one_length = float(
        np.mean([int(b.mask.sum(1).min()) == int(b.mask.sum(1).max()) for b in bucketed])
    )
    checks: Checks = {
        "bucketing": [
            claims.close(
                from_masks,
                share["bucketed", "source"],
                "the pad share read off the batches' masks is the same",
                tol=1e-12,
            ),
            claims.greater(
                share["random", "source"],
                share["bucketed", "source"],
                "bucketed batches pad the source less than random ones",
                names=("random", "bucketed"),
            ),
            claims.at_most(
                share["bucketed", "source"] / share["random", "source"],
                0.1,
                "bucketing saves nearly all of the source padding (at least 90 %)",
                name="bucketed / random source pad share",
            ),
            claims.greater(
                share["bucketed", "target"] / share["random", "target"],
                0.5,
                "the target side keeps most of its padding",
                names=("bucketed / random target pad share", "half"),
            ),
        ]
    }
    numbers = {
        "batch_size": size,
        "bucketed": bucketed,
        "share": share,
        "from_masks": from_masks,
        "one_length": one_length,
    }
    return with_checks(numbers, checks)
