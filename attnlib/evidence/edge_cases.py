"""The claims of the chapter "Edge cases" that rest on trained models, for any training seed.

Case 5 (the first step, scored against s_0, already points right) and case 6 (reversed word
orders are read, not a broken model) are checked on the shipped "reverse" and "svo_sov"
models. Every one of these claims varies with the training seed; seeds 1 and 2 retrain the
two recipes (:func:`attnlib.evidence._shared.trained_model`).

The chapter's other cases (equal scores, T_x = 1, the entropy's ceiling, weights strictly
between 0 and 1, float precision) are arithmetic on given arrays: they do not depend on a
seed and stay in the chapter, under their sentences.

See Also
--------
The chapter "Edge cases" (chapters/edge_cases), cases 5 and 6.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from attnlib import claims
from attnlib.alignment import diagonal_mass
from attnlib.evidence._shared import Checks, alpha_of, trained_model, with_checks
from attnlib.tasks import SVO_VERBS
from attnlib.train import translate
from attnlib.vocab import BOS_ID

__all__ = ["AT_LEAST", "GROUPS", "check_claims"]

#: The groups of checks the chapter displays: case 5 (the first step) and case 6 (reversed
#: orders), each under its own answer.
GROUPS = ("first_step", "reversed")
#: Fewest claims :func:`check_claims` must check (what the chapter shows).
AT_LEAST = 6


def check_claims(seed: int = 0) -> dict[str, Any]:
    """Cases 5 and 6: the first step already points right; reversed orders are read.

    Parameters
    ----------
    seed : int
        Training seed; 0 is the shipped models.

    Returns
    -------
    dict
        ``first_alpha`` (α_1 of the first test string of the reversal model), ``T`` (its
        letters), ``rev`` and ``svo`` (translations), ``rev_hits`` (letter steps whose
        largest weight is on the mirror position), ``rev_band`` (weight within one position
        of the anti-diagonal), ``en`` (the English test sentence), ``verb_step`` and
        ``verb`` (0-based output step and source position of the verb), ``verb_alpha``,
        ``checks`` (groups ``"first_step"`` and ``"reversed"``).
    """
    rev_model = trained_model("reverse", seed)
    model, task = rev_model.model, rev_model.task
    src_tokens = task.test[0][0]
    T = len(src_tokens)
    src = torch.tensor([task.src_vocab.encode(src_tokens)])
    with torch.no_grad():
        h, final, mask = model.encode(src)
        s_0 = model.decoder.init_state(final)
        mem = model.decoder.memory(h, final, mask)
        _, _, alpha_1 = model.decoder.step(torch.tensor([BOS_ID]), s_0, mem)
    if alpha_1 is None:
        raise ValueError("the reversal model has no attention to read α_1 from")
    first = alpha_1[0].numpy()
    first_step = [
        claims.close(first.sum(), 1.0, "the first step's weights sum to 1", tol=1e-6),
        claims.check(
            int(first.argmax()) == T - 1,
            "the first step, scored against s_0, puts its largest weight on the last letter",
            evidence=f"largest α_1i at i = {int(first.argmax()) + 1} of T_x = {T + 1}; "
            f"the last letter is i = {T}",
        ),
    ]
    rev = translate(model, task, [src_tokens])[0]
    rev_alpha = alpha_of(rev)
    hits = int((np.argmax(rev_alpha[:T], axis=1) == T - 1 - np.arange(T)).sum())
    band = diagonal_mass(rev_alpha, width=1, anti=True)
    reversed_ = [
        claims.at_least(
            hits / T,
            0.8,
            "the mirror position gets the largest weight at most letter steps",
            name="share of letter steps on the mirror",
        ),
        claims.at_least(band, 0.75, "most weight lies near the anti-diagonal", name="within ±1"),
    ]

    svo_model = trained_model("svo_sov", seed)
    en = svo_model.task.test[0][0]
    svo = translate(svo_model.model, svo_model.task, [en])[0]
    verb = next(i for i, w in enumerate(en) if w in SVO_VERBS)
    verb_step = svo.out.index(SVO_VERBS[en[verb]])
    row = alpha_of(svo)[verb_step]
    reversed_ += [
        claims.greater(
            verb_step,
            verb,
            "the verb is emitted later than it stands in the source",
            names=("output step", "source position"),
        ),
        claims.check(
            int(row.argmax()) == verb,
            "the step that emits the verb puts its largest weight on the English verb",
            evidence=f"largest weight {row.max():.3f} at i = {int(row.argmax()) + 1}; "
            f"the verb is i = {verb + 1}",
        ),
    ]
    numbers = {
        "first_alpha": first,
        "T": T,
        "rev": rev,
        "rev_hits": hits,
        "rev_band": band,
        "svo": svo,
        "en": en,
        "verb": verb,
        "verb_step": verb_step,
        "verb_alpha": float(row[verb]),
    }
    groups: Checks = {"first_step": first_step, "reversed": reversed_}
    return with_checks(numbers, groups)
