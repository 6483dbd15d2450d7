"""The chapters' claims about trained models, one function per chapter, for any training seed.

A sentence such as "the reversal model puts its largest weight on the mirror
position" rests on a trained model, and a trained model is one draw of its
initial weights and batch order. Each function here computes the numbers a
chapter states, checks its claims with :mod:`attnlib.claims`, and returns the
numbers for the chapter to glue. With ``seed=0`` it reads the shipped
checkpoints (what the chapter shows); with another seed it retrains the same
recipes (:func:`attnlib.pretrained.retrain`). ``tests/test_seeds.py`` runs
every function for three seeds, so a claim that holds for one lucky seed only
cannot stay in the course.

See Also
--------
attnlib.claims : the checks and :func:`attnlib.claims.across_seeds`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from attnlib import claims
from attnlib.alignment import diagonal_mass
from attnlib.pretrained import Pretrained, load, retrain
from attnlib.train import Translation, translate

__all__ = ["BY_CHAPTER", "edge_cases_claims", "model_for", "spot_the_error_claims"]


def _shown(results: list[claims.Checked], numbers: dict[str, Any]) -> dict[str, Any]:
    """The numbers, plus the checks under ``"checks"`` for the chapter to display."""
    return {**numbers, "checks": list(results)}


def model_for(name: str, seed: int = 0) -> Pretrained:
    """The shipped model ``name`` for seed 0; the same recipe retrained with ``seed`` otherwise."""
    return load(name) if seed == 0 else retrain(name, seed=seed)


def _first_test(p: Pretrained) -> Translation:
    model, task = p.model, p.task
    return translate(model, task, [task.test[0][0]])[0]


def spot_the_error_claims(seed: int = 0) -> dict[str, Any]:
    """Chapter 11, error 5: the copying model draws a diagonal band and copies almost everything.

    Returns
    -------
    dict
        ``band`` (share of the weight within one position of the diagonal, first
        test string), ``exact`` (held-out exact match), ``result`` (that string's
        :class:`~attnlib.train.Translation`), ``checks`` (the claims checked).

    See Also
    --------
    The chapter "Spot the error" (chapters/11_spot_the_error), error 5.
    """
    copy = model_for("copy", seed)
    result = _first_test(copy)
    band = diagonal_mass(result.alpha, width=1)
    exact = copy.metrics.exact_match
    checks = [
        claims.at_least(
            band, 0.75, "the copying model's heatmap is a diagonal band", name="weight within ±1"
        ),
        claims.at_least(
            exact, 0.98, "it copies nearly every held-out string exactly", name="exact match"
        ),
    ]
    return _shown(checks, {"band": band, "exact": exact, "result": result})


def edge_cases_claims(seed: int = 0) -> dict[str, Any]:
    """Chapter 13, cases 5 and 6: the first step already points right; reversed orders are read.

    Returns
    -------
    dict
        ``first_alpha`` (α_1 of the first test string of the reversal model),
        ``rev`` and ``svo`` (translations), ``rev_hits`` (letter steps whose
        largest weight is on the mirror position), ``rev_band`` (weight within
        one position of the anti-diagonal), ``verb_step`` and ``verb`` (0-based
        output step and source position of the verb), ``verb_alpha``, ``checks``.

    See Also
    --------
    The chapter "Edge cases" (chapters/13_edge_cases), cases 5 and 6.
    """
    import torch

    from attnlib.tasks import BOS_ID, SVO_VERBS

    rev_model = model_for("reverse", seed)
    model, task = rev_model.model, rev_model.task
    src_tokens = task.test[0][0]
    T = len(src_tokens)
    src = torch.tensor([task.src_vocab.encode(src_tokens)])
    with torch.no_grad():
        h, final, mask = model.encode(src)
        s_0 = model.decoder.init_state(final)
        mem = model.decoder.memory(h, final, mask)
        _, _, alpha_1 = model.decoder.step(torch.tensor([BOS_ID]), s_0, mem)
    first = alpha_1[0].numpy()
    checks: list[claims.Checked] = []
    add = checks.append
    add(claims.close(first.sum(), 1.0, "the first step's weights sum to 1", tol=1e-6))
    add(
        claims.check(
            int(first.argmax()) == T - 1,
            "the first step, scored against s_0, puts its largest weight on the last letter",
            evidence=f"largest α_1i at i = {int(first.argmax()) + 1} of T_x = {T + 1}; "
            f"the last letter is i = {T}",
        )
    )
    rev = translate(model, task, [src_tokens])[0]
    hits = int((np.argmax(rev.alpha[:T], axis=1) == T - 1 - np.arange(T)).sum())
    band = diagonal_mass(rev.alpha, width=1, anti=True)
    add(
        claims.at_least(
            hits / T,
            0.8,
            "the mirror position gets the largest weight at most letter steps",
            name="share of letter steps on the mirror",
        )
    )
    add(claims.at_least(band, 0.75, "most weight lies near the anti-diagonal", name="within ±1"))

    svo_model = model_for("svo_sov", seed)
    en = svo_model.task.test[0][0]
    svo = translate(svo_model.model, svo_model.task, [en])[0]
    verb = next(i for i, w in enumerate(en) if w in SVO_VERBS)
    verb_step = svo.out.index(SVO_VERBS[en[verb]])
    row = svo.alpha[verb_step]
    add(
        claims.greater(
            verb_step,
            verb,
            "the verb is emitted later than it stands in the source",
            names=("output step", "source position"),
        )
    )
    add(
        claims.check(
            int(row.argmax()) == verb,
            "the step that emits the verb puts its largest weight on the English verb",
            evidence=f"largest weight {row.max():.3f} at i = {int(row.argmax()) + 1}; "
            f"the verb is i = {verb + 1}",
        )
    )
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
    return _shown(checks, numbers)


#: Every claim function, by the chapter that shows its checks (``tests/test_seeds.py`` runs each
#: for three seeds).
BY_CHAPTER: dict[str, Callable[[int], dict[str, Any]]] = {
    "11_spot_the_error": spot_the_error_claims,
    "13_edge_cases": edge_cases_claims,
}
