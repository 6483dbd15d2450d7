"""The claims of the chapter "Gradient flow and cost" that rest on models, for any seed.

How strongly the gradient of an output reaches each source letter, with and without
attention, is measured on the copy task of the chapter "The fixed-length bottleneck" (64
held-out strings of 20 letters), and what the chapter says about it is checked here:

* "untrained": in freshly initialised models, the baseline's gradient decays by a roughly
  constant factor per recurrent step, while attention reaches every letter about equally;
* "trained" (groups "trained" and "length"): in the shipped models "long_copy_attention" and
  "long_copy_none", attention sends the gradient of ỹ_t to the letter it copies, evenly
  along the string and as strongly for 20 letters as for 8; the baseline does neither.

Every one of these claims varies with the seed: seed k draws the untrained models' weights
with the recipe's model seed + k, and retrains the two models with training seed k
(:func:`attnlib.evidence._shared.trained_model`), in ``make test`` too.

What stays in the chapter: the structure and cost of a recurrent layer against a
self-attention layer (sequential operations, path lengths, multiply-adds counted and run,
matrix products): they are counts that depend on the sizes only. The times the chapter
plots are an illustration; no claim rests on them.

See Also
--------
The chapter "Gradient flow and cost" (chapters/gradient_flow_and_cost).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attnlib import claims, pretrained
from attnlib.evidence._shared import LONG_COPY, Checks, choose_parts, trained_model, with_checks
from attnlib.models import make_seq2seq
from attnlib.train import encode_pairs
from attnlib.transformer import gradflow as gf

__all__ = ["AT_LEAST", "GROUPS", "L_SHORT", "PARTS", "L", "check_claims"]

#: The parts of :func:`check_claims`: untrained models, then the trained ones.
PARTS = ("untrained", "trained")
#: The groups of checks the chapter displays, each under its sentence.
GROUPS = ("untrained", "trained", "length")
#: Letters of the strings measured, and of the shorter strings compared with them.
L, L_SHORT = 20, 8
#: Fewest claims :func:`check_claims` must check (what the chapter shows).
AT_LEAST = 11

_ROLES = {"attention": LONG_COPY["attention"], "no attention": LONG_COPY["none"]}


def check_claims(seed: int = 0, *, parts: Sequence[str] | None = None) -> dict[str, Any]:
    """The gradient measurements of the chapter, with ``seed``, and the claims about them.

    Parameters
    ----------
    seed : int
        0: the chapter's models (the untrained ones with the recipe's seed, the shipped
        trained ones); k: model seed + k untrained, training seed k trained.
    parts : sequence of str, optional
        Which parts of :data:`PARTS` to run (default: both).

    Returns
    -------
    dict
        ``batch`` (the 64 strings of :data:`L` letters, encoded); ``untrained``: ``k_i``
        (recurrent steps from each position to the nearer final state), ``by_pos`` (mean
        over t of G_ti by position i, per model), ``end_mid`` (first letter ÷ a middle one)
        and ``decay`` (factor per step of the baseline); ``trained``: ``profile`` (mean G
        by |t − i|), ``aligned`` (G_tt by t), ``share`` (the copied letter's share of the
        gradient of step t), ``peak`` (G at distance 0 ÷ mean G at distances ≥ 10),
        ``end_mid`` (G_tt at t = 0 ÷ in the middle), ``held`` and ``long`` (mean G_tt for
        :data:`L_SHORT` and :data:`L` letters), ``exact`` (exact match by length bucket),
        all per model; ``checks`` (by group).
    """
    run = choose_parts(parts, PARTS)
    task = trained_model(_ROLES["attention"]).task  # the data: the same for every seed
    batch = encode_pairs(task, [p for p in task.test if len(p[0]) == L][:64])
    args = (batch.src, batch.tgt_in, batch.tgt_out)  # (B, T_x), (B, T_y), (B, T_y)
    out: dict[str, Any] = {"seed": seed, "batch": batch}
    checks: Checks = {}

    if "untrained" in run:
        config = dict(pretrained.RECIPES[_ROLES["attention"]].model)
        config["seed"] = config.get("seed", 0) + seed
        fresh = {
            "attention": make_seq2seq(task.src_vocab, task.tgt_vocab, **config),
            "no attention": make_seq2seq(
                task.src_vocab, task.tgt_vocab, **{**config, "decoder": "none"}
            ),
        }
        G0 = {k: gf.source_gradients(m, *args) for k, m in fresh.items()}  # (B, T_y, T_x)
        k_i = gf.recurrent_steps(L + 1)  # GRU steps from x_i to the nearer final state
        by_pos = {k: gf.by_source_position(G)[: L + 1] for k, G in G0.items()}  # (T_x,)
        mid = int(np.argmax(k_i))  # a middle letter, k_i = 10
        end_mid = {k: float(v[0] / v[mid]) for k, v in by_pos.items()}
        decay = gf.decay_per_step(k_i[: mid + 1], by_pos["no attention"][: mid + 1])
        out["untrained"] = {"k_i": k_i, "by_pos": by_pos, "end_mid": end_mid, "decay": decay}
        checks["untrained"] = [
            claims.at_least(
                end_mid["no attention"],
                20.0,
                "untrained, the baseline's gradient reaches a middle letter far weaker than "
                "a letter at the end",
                name="G(first letter) / G(middle letter)",
            ),
            claims.at_most(
                decay,
                0.8,
                "it shrinks by a roughly constant factor per recurrent step",
                name="factor per step (log-linear fit)",
            ),
            claims.between(
                end_mid["attention"],
                0.5,
                2.0,
                "with attention every letter is reached about equally (within a factor of 2)",
                name="G(first letter) / G(middle letter)",
            ),
        ]

    if "trained" in run:
        runs = {k: trained_model(name, seed) for k, name in _ROLES.items()}
        G1 = {k: gf.source_gradients(r.model, *args) for k, r in runs.items()}
        prof = {k: gf.by_distance(G[:, :L, :L]) for k, G in G1.items()}  # letters only
        aligned = {
            k: np.nanmean(np.diagonal(G[:, :L, :L], axis1=1, axis2=2), axis=0)
            for k, G in G1.items()
        }  # G_tt by position t: (L,)
        share = {
            k: float(
                np.nanmean(
                    np.diagonal(G[:, :L, :L], axis1=1, axis2=2) / np.nansum(G[:, :L, :L], axis=2)
                )
            )
            for k, G in G1.items()
        }  # the aligned letter's share of the gradient of step t
        peak = {k: float(p[0] / np.mean(p[10:])) for k, p in prof.items()}
        k_t = gf.recurrent_steps(L + 1)[:L]  # steps from letter t to the nearer final state
        end_mid1 = {k: float(a[0] / a[k_t == k_t.max()].mean()) for k, a in aligned.items()}
        short = encode_pairs(task, [p for p in task.test if len(p[0]) == L_SHORT][:64])
        G8 = {
            k: gf.source_gradients(r.model, short.src, short.tgt_in, short.tgt_out)
            for k, r in runs.items()
        }
        held = {
            k: float(np.nanmean(np.diagonal(G8[k][:, :L_SHORT, :L_SHORT], axis1=1, axis2=2)))
            for k in runs
        }
        long_ = {k: float(np.nanmean(aligned[k])) for k in runs}
        exact = {k: {b.label: b.exact_match for b in r.metrics.by_length} for k, r in runs.items()}
        out["trained"] = {
            "profile": prof,
            "aligned": aligned,
            "share": share,
            "peak": peak,
            "end_mid": end_mid1,
            "held": held,
            "long": long_,
            "exact": exact,
        }
        checks["trained"] = [
            claims.at_least(
                peak["attention"],
                4.0,
                "the trained attention model sends the gradient of ỹ_t to the letter it copies",
                name="G at |t − i| = 0 / mean G at |t − i| ≥ 10",
            ),
            claims.at_most(
                peak["no attention"],
                2.0,
                "the baseline's gradient barely singles it out",
                name="G at |t − i| = 0 / mean G at |t − i| ≥ 10",
            ),
            claims.greater(
                share["attention"],
                1.5 * share["no attention"],
                "the copied letter's share of the gradient is larger with attention, "
                "by more than half again",
                names=("share with attention", "1.5 × share without"),
            ),
        ]
        checks["length"] = [
            claims.at_least(
                end_mid1["no attention"],
                1.5,
                "trained, the baseline still reaches its own letter more weakly in the middle",
                name="G_tt at t = 0 / G_tt in the middle",
            ),
            claims.between(
                end_mid1["attention"],
                0.5,
                2.0,
                "the attention model reaches it about equally everywhere (within a factor of 2)",
                name="G_tt at t = 0 / G_tt in the middle",
            ),
            claims.at_most(
                long_["no attention"] / held["no attention"],
                0.85,
                f"from {L_SHORT} to {L} letters, the baseline's gradient to the copied letter "
                "weakens",
                name=f"mean G_tt, {L} letters / {L_SHORT} letters",
            ),
            claims.at_least(
                long_["attention"] / held["attention"],
                0.9,
                "the attention model's does not",
                name=f"mean G_tt, {L} letters / {L_SHORT} letters",
            ),
            claims.greater(
                exact["attention"]["17–20"],
                exact["no attention"]["17–20"] + 0.5,
                "and the same models copy long strings with attention, not without",
                names=("exact match 17–20, attention", "no attention + 0.5"),
            ),
        ]
    return with_checks(out, checks)
