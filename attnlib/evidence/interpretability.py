"""The claims of the chapter "Looked at is not caused by", for any training seed.

Every claim the chapter makes about its trained models is computed and checked here: how far
attention, leave-one-out and gradient × input agree (with and without ``<eos>``), what
blanking ``<eos>`` does, Jain and Wallace's test-time interventions and adversarial weights,
Wiegreffe and Pinter's baseline trained with frozen uniform attention, and whether the
answer reaches the decoder through s_0 or through c_t. Every one of them varies with the
training seed; seeds 1 and 2 retrain the four recipes ("reverse", "majority",
"reverse_uniform", "majority_uniform") with that seed
(:func:`attnlib.evidence._shared.trained_model`).

The chapter's own checks are of the definitions on small given arrays and stay there.

See Also
--------
The chapter "Looked at is not caused by" (chapters/interpretability);
:mod:`attnlib.importance`, the measures.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from attnlib import claims, pretrained
from attnlib.evidence._shared import Checks, trained_model, with_checks
from attnlib.importance import (
    Explanation,
    _first,
    adversarial_attention,
    agreement_table,
    attention_intervention,
    blanking_effect,
    explain,
    intervention_effect,
    special_top_share,
    swap_s0,
)
from attnlib.train import evaluate
from attnlib.vocab import SPECIALS

__all__ = ["AT_LEAST", "GROUPS", "N_ADVERSARIAL", "N_EXPLAIN", "N_INTERVENE", "check_claims"]

#: The groups of checks the chapter displays, each under its own sentence.
GROUPS = (
    "agreement", "disagreement", "eos", "interventions", "adversarial", "trained_uniform", "s0",
)  # fmt: skip
#: Fewest claims :func:`check_claims` must check (what the chapter shows).
AT_LEAST = 28

#: What :func:`check_claims` computes on: held-out examples for the three maps, for
#: the interventions and the trained-uniform baselines, and sources for the adversarial search.
N_EXPLAIN, N_INTERVENE, N_ADVERSARIAL = 20, 200, {"reverse": 8, "majority": 30}


def check_claims(seed: int = 0) -> dict[str, Any]:
    """The chapter's claims about trained models, computed and checked for one training seed.

    With ``seed=0`` the shipped checkpoints are read (what the chapter shows); with another
    seed the same recipes are retrained with that training seed
    (:func:`attnlib.evidence._shared.trained_model`). Models: "reverse" and "majority", and
    the same two trained with frozen uniform attention ("reverse_uniform",
    "majority_uniform").

    Parameters
    ----------
    seed : int
        Training seed; 0 is the shipped models.

    Returns
    -------
    dict
        The numbers the chapter glues and the objects it draws, plus
        ``"checks"``: the :class:`~attnlib.claims.Checked` claims, grouped by
        the chapter's sections ("agreement", "disagreement", "eos",
        "interventions", "adversarial", "trained_uniform", "s0"), each a
        list to display under its sentence.

    """
    rev, maj = trained_model("reverse", seed), trained_model("majority", seed)
    rev_u, maj_u = trained_model("reverse_uniform", seed), trained_model("majority_uniform", seed)
    uniform = attention_intervention("uniform")
    found: dict[str, Any] = {"seed": seed}
    checks: Checks = {}

    # -- three maps, with and without <eos>
    exs = [explain(rev.model, rev.task, src) for src, _ in rev.task.test[:N_EXPLAIN]]
    table = agreement_table(exs)
    letters = agreement_table([ex.content() for ex in exs])
    alpha_loo, alpha_loo_letters = table["alpha", "loo"], letters["alpha", "loo"]
    loo_eos = special_top_share(exs, "loo")
    loo_top = [np.abs(ex.loo).argmax(axis=1) for ex in exs]
    disagree = [  # at each step where the two top positions differ: is leave-one-out's <eos>?
        top[t] == len(ex.src) - 1
        for ex, top in zip(exs, loo_top, strict=True)
        for t in range(len(ex.out))
        if top[t] != ex.alpha[t].argmax()
    ]
    eos_of_disagree = float(np.mean(disagree))
    alpha_eos = special_top_share(
        [dataclasses.replace(ex, **_letter_rows(ex)) for ex in exs], "alpha"
    )
    found.update(
        explanations=exs,
        table=table,
        letters=letters,
        loo_eos=loo_eos,
        alpha_eos=alpha_eos,
        eos_of_disagree=eos_of_disagree,
    )
    checks["agreement"] = [
        claims.at_most(
            alpha_loo.top1,
            0.8,
            "counting <eos>, attention and leave-one-out pick different top positions at a fifth "
            "of the steps or more",
            name="top-1 agreement, <eos> included",
        ),
        claims.between(
            loo_eos,
            0.2,
            0.5,
            "blanking <eos> is leave-one-out's top position at a large share of the steps "
            "(a fifth to a half)",
            name="share of steps",
        ),
        claims.at_least(
            eos_of_disagree,
            0.5,
            "most of the steps where the two disagree are steps where leave-one-out's top is <eos>",
            name="share of the disagreeing steps",
        ),
        claims.at_most(
            alpha_eos,
            0.02,
            "attention (almost) never puts its largest weight on <eos> while writing a letter",
            name="share of letter steps",
        ),
        claims.at_least(
            alpha_loo_letters.top1,
            0.9,
            "on the letters alone, attention and leave-one-out agree at nine steps in ten or more",
            name="top-1 agreement, letters only",
        ),
        claims.greater(
            alpha_loo_letters.top1,
            letters["loo", "grad_input"].top1,
            "on the letters, gradient × input agrees with leave-one-out less often than "
            "attention does",
            names=("α vs LOO", "LOO vs G×I"),
        ),
    ]

    # -- the letter steps where attention and leave-one-out disagree
    split = [
        (ex.src[int(ex.loo[t].argmax())] == ex.out[t], abs(int(ex.loo[t].argmax()) - i_alpha) == 1)
        for ex in (e.content() for e in exs)
        for t, i_alpha in enumerate(ex.alpha.argmax(axis=1))
        if int(ex.loo[t].argmax()) != i_alpha
    ]
    pattern = float(np.mean([written and beside for written, beside in split])) if split else 1.0
    found.update(n_disagree=len(split), disagree_pattern=pattern)
    checks["disagreement"] = [
        claims.at_least(
            pattern,
            0.5,
            "at most letter steps where they disagree, leave-one-out's top position holds the "
            "letter being written and attention's top position is next to it",
            name=f"share of the {len(split)} steps",
        )
    ]

    # -- what blanking <eos> does
    sources = [src for src, _ in rev.task.test[:N_INTERVENE]]
    eos, middle = (blanking_effect(rev.model, rev.task, sources, w) for w in ("eos", "middle"))
    found.update(blank_eos=eos, blank_middle=middle)
    checks["eos"] = [
        claims.at_least(
            eos.h_change / middle.h_change,
            3.0,
            "blanking <eos> moves the other h_i several times more than blanking a letter",
            name="ratio of the mean relative changes",
        ),
        claims.at_most(
            eos.h_change_forward,
            1e-6,
            "the forward half →h_i of every letter does not change at all",
            name="mean relative change of →h_i",
        ),
        claims.at_least(
            eos.extra_tokens,
            2.0,
            "without its <eos> the model no longer finds the end: its outputs grow longer",
            name="mean extra output tokens",
        ),
        claims.between(
            middle.extra_tokens,
            -1.0,
            0.0,
            "with a blanked letter the output is shorter, by less than one token on average",
            name="mean extra output tokens",
        ),
    ]

    # -- test-time interventions (Jain & Wallace's permutation, and uniform weights)
    runs = {
        (name, mode): intervention_effect(p.model, p.task, mode, n=N_INTERVENE, seed=0)
        for name, p in (("reverse", rev), ("majority", maj))
        for mode in ("permute", "uniform")
    }
    found["interventions"] = runs
    checks["interventions"] = [
        claims.at_most(
            max(runs["reverse", m].exact_after for m in ("permute", "uniform")),
            0.05,
            "permuted or uniform weights destroy the reversal model's output",
            name="exact match after, the larger",
        ),
        claims.at_least(
            min(runs["majority", m].exact_after for m in ("permute", "uniform")),
            runs["majority", "uniform"].exact_before - 0.05,
            "the majority model barely notices permuted or uniform weights",
            name="exact match after, the smaller",
        ),
        claims.at_most(
            runs["majority", "uniform"].tvd,
            0.05,
            "uniform weights move the majority model's output distributions very little",
            name="mean TVD",
        ),
    ]

    # -- adversarial weights (Jain & Wallace's key test), one decoder step at a time
    adv = {
        name: adversarial_attention(
            p.model, p.task, [src for src, _ in p.task.test[: N_ADVERSARIAL[name]]], seed=0
        )
        for name, p in (("reverse", rev), ("majority", maj))
    }
    kept, kept_adv = adv["reverse"].token_weight()
    rep_, moved = adv["reverse"].repeated(), adv["reverse"].moved()
    found.update(
        adversarial=adv,
        jsd={name: a.median_jsd() for name, a in adv.items()},
        moved_majority=float(np.median(adv["majority"].moved())),
        moved_repeated=float(np.median(moved[rep_])),
        moved_unique=float(np.median(moved[~rep_])),
        copy_repeated=float(adv["reverse"].copy_weight()[rep_].mean()),
        letter_weight=float(kept.mean()),
        letter_weight_adv=float(kept_adv.mean()),
        letter_unique=float(kept[~rep_].mean()),
        letter_unique_adv=float(kept_adv[~rep_].mean()),
        n_repeated=int(rep_.sum()),
    )
    checks["adversarial"] = [
        claims.at_most(
            max(a.tvd.max() for a in adv.values()),
            adv["reverse"].eps,
            "every adversarial α' leaves its step's output distribution within the tolerance",
            name="largest TVD of an output",
        ),
        claims.at_least(
            found["moved_majority"],
            0.5,
            "for the majority model, α' moves more than half of the weight and the answer stays",
            name="median share of the weight moved",
        ),
        claims.at_least(
            found["letter_weight_adv"] / found["letter_weight"],
            0.95,
            "the reversal model's α' keeps as much weight on the letter being written as α, "
            "or more",
            name="ratio of the mean weights on that letter",
        ),
        claims.at_least(
            found["moved_repeated"],
            0.9,
            "when the letter occurs more than once, α' moves nearly all of the weight",
            name="median share moved",
        ),
        claims.at_least(
            found["copy_repeated"],
            0.5,
            "there, most of α' lands on another copy of the same letter",
            name="mean weight of α' on the other copies",
        ),
        claims.at_least(
            found["letter_unique_adv"] / found["letter_unique"],
            0.75,
            "when the letter occurs once, α' keeps most of α's weight on it",
            name="ratio of the mean weights on the letter",
        ),
        claims.greater(
            found["moved_majority"],
            found["moved_unique"],
            "when the letter occurs once, less weight can move than for the majority model",
            names=("majority", "reverse, unique letter"),
            by=0.1,
        ),
    ]

    # -- Wiegreffe & Pinter's baseline: trained with frozen uniform attention
    trained: dict[str, float] = {}
    for name, pu in (("reverse", rev_u), ("majority", maj_u)):
        sub = _first(pu.task, "test", N_INTERVENE)  # the examples of the interventions
        edit = pretrained.score_edit(f"{name}_uniform")  # it runs as it was trained
        trained[name] = evaluate(pu.model, sub, "test", edit=edit).exact_match
    found["trained_uniform"] = trained
    rev_runs, maj_runs = runs["reverse", "uniform"], runs["majority", "uniform"]
    checks["trained_uniform"] = [
        claims.greater(
            rev_runs.exact_before,
            trained["reverse"],
            "trained with uniform attention, the reversal model is far worse",
            names=("learned α", "trained uniform"),
            by=0.4,
        ),
        claims.close(
            trained["majority"],
            maj_runs.exact_before,
            "trained with uniform attention, the majority model does as well",
            tol=0.03,
            name="|exact match difference|",
        ),
        claims.greater(
            trained["reverse"],
            rev_runs.exact_after,
            "a model trained without attention does better than uniform weights swapped in at "
            "test time",
            names=("trained uniform", "swapped at test time"),
        ),
    ]

    # -- where the counts reach the decoder: s_0 or the c_t
    swaps = {
        "majority, uniform α": swap_s0(maj.model, maj.task, edit=uniform),
        "majority_uniform": swap_s0(
            maj_u.model, maj_u.task, edit=pretrained.score_edit("majority_uniform")
        ),
    }
    found["swaps"] = swaps
    checks["s0"] = [
        c
        for label, sw in swaps.items()
        for c in (
            claims.at_least(
                sw.follows_h,
                0.7,
                f"{label}: the answer follows the string whose h_i the decoder averages",
                name="share of answers",
            ),
            claims.at_most(
                sw.follows_s0,
                0.2,
                f"{label}: it rarely follows the string that gave s_0",
                name="share of answers",
            ),
        )
    ]
    return with_checks(found, checks)


def _letter_rows(ex: Explanation) -> dict:
    """The rows of ``ex`` whose output token is a content token (for dataclasses.replace)."""
    rows = [t for t, tok in enumerate(ex.out) if tok not in SPECIALS]
    return {
        "out": [ex.out[t] for t in rows],
        "alpha": ex.alpha[rows],
        "loo": ex.loo[rows],
        "grad_input": ex.grad_input[rows],
    }
