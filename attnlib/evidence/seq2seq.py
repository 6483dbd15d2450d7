"""The claims of the chapter "A Bahdanau seq2seq, built from parts" on trained models, any seed.

Two parts of :func:`check_claims`: "reverse", the reversal model finds the anti-diagonal by
itself, and "ablation", the copy model with and without its recurrent encoder (bare
embeddings cannot even copy). Every one of these claims varies with the training seed;
seeds 1 and 2 retrain the recipes with that seed
(:func:`attnlib.evidence._shared.trained_model`). The chapter "True or false" shows the
"ablation" checks again, under its statement 1.

The chapter's other checks are about the model's pieces (shapes, ``init_state``, the torch
module against the numpy reference, the live steps against the recorded ones): they hold
for any weights and stay in the chapter.

See Also
--------
The chapter "A Bahdanau seq2seq, built from parts" (chapters/seq2seq).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attnlib import claims
from attnlib.evidence._shared import Checks, alpha_of, choose_parts, trained_model, with_checks
from attnlib.train import evaluate, translate

__all__ = ["AT_LEAST", "GROUPS", "PARTS", "check_claims"]

#: The groups of checks the chapter displays, one per part.
GROUPS = ("reverse", "ablation")
#: Fewest claims :func:`check_claims` must check (what the chapter shows).
AT_LEAST = 5

#: The parts of :func:`check_claims`.
PARTS = ("reverse", "ablation")


def check_claims(
    seed: int = 0,
    *,
    models: dict[str, Any] | None = None,
    parts: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The chapter's claims that rest on trained models, checked for training seed ``seed``.

    Parameters
    ----------
    seed : int
        Training seed; 0 is the shipped models.
    models : dict, optional
        Pretrained models by recipe name (``"reverse"``, ``"copy"``,
        ``"copy_embedding"``) to use instead of the shipped ones: the chapter
        passes the ones it loaded or retrained.
    parts : sequence of str, optional
        Which parts of :data:`PARTS` to run (default: both).

    Returns
    -------
    dict
        ``reverse``: the final validation exact match, the share of the letter
        steps (first 200 test strings) whose largest weight is on the mirror
        position, and the number of strings; ``ablation``: the test Metrics of
        ``copy`` and ``copy_embedding``, and a test string with a repeated
        letter, the letter, its first two positions and the largest gap between
        their columns of α under the embedding encoder; ``checks`` (the Checked of each
        part run, under its name).
    """
    run = choose_parts(parts, PARTS)
    given = dict(models or {})
    out: dict[str, Any] = {}
    checks: Checks = {}

    def model(name: str) -> Any:
        return given[name] if name in given else trained_model(name, seed)

    if "reverse" in run:
        rev = model("reverse")
        trs = translate(rev.model, rev.task, [s for s, _ in rev.task.test[:200]])
        # the step writing letter t (1-based) of n letters looks at letter n + 1 − t; 0-based,
        # with <eos> last among the len(src) = n + 1 source positions: position n − 1 − k
        hits = [
            int(np.argmax(alpha_of(t)[k])) == len(t.src) - 2 - k
            for t in trs
            for k in range(min(len(t.src) - 1, len(alpha_of(t))))
        ]
        valid = float(rev.history.valid_exact_match[-1])
        out["reverse"] = {"valid": valid, "antidiag": float(np.mean(hits)), "n": len(trs)}
        checks["reverse"] = [
            claims.at_least(
                valid,
                0.99,
                "training ends with nearly every validation string exactly reversed",
                name="last validation exact match",
            ),
            claims.at_least(
                out["reverse"]["antidiag"],
                0.9,
                "the model has found the anti-diagonal without being told",
                name="letter steps whose largest weight is on letter n + 1 − t",
            ),
        ]

    if "ablation" in run:
        cp, emb = model("copy"), model("copy_embedding")
        m_rnn, m_emb = evaluate(cp.model, cp.task), evaluate(emb.model, emb.task)
        source = next(s for s, _ in cp.task.test if len(set(s)) < len(s))
        letter = next(ch for ch in source if source.count(ch) > 1)
        i, j = [k for k, ch in enumerate(source) if ch == letter][:2]
        [tr_emb] = translate(emb.model, emb.task, [source])
        emb_alpha = alpha_of(tr_emb)
        out["ablation"] = {
            "copy": m_rnn,
            "copy_embedding": m_emb,
            "source": source,
            "letter": letter,
            "positions": (i, j),
            "gap": float(np.abs(emb_alpha[:, i] - emb_alpha[:, j]).max()),
        }
        checks["ablation"] = [
            claims.at_least(
                m_rnn.exact_match, 0.98, "with the encoder RNN, copying works", name="exact match"
            ),
            claims.at_most(
                m_emb.exact_match,
                0.05,
                "with bare embeddings, attention alone cannot even copy",
                name="exact match",
            ),
            claims.close(
                emb_alpha[:, i],
                emb_alpha[:, j],
                "two positions with the same letter get the same weight at every step",
                tol=1e-6,
                name=f"largest gap between the columns of '{letter}'",
            ),
        ]
    return with_checks(out, checks)
