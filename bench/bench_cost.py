"""The clocks behind the chapters' cost claims, which the chapters check on counts instead.

"True or false" (statement 8) and "Gradient flow and cost" (its section "The cost of a layer")
state what attention costs. Their checks rest on counts that load cannot move: multiply-adds
counted from the weights and the matrix products the code runs
(``attnlib.experiments.count_products``). What a clock says about the same computations is
measured here, with the targets the chapters once checked:

* ``true_or_false``: attention's share of the wall-clock time of one sentence's forward pass
  (``attnlib.evidence.true_or_false.time_parts``), at the course's sizes (T = 15, the shipped
  ``long_copy_attention`` model) and at the sizes of Bahdanau et al. (T = 50; 1000 hidden
  units, d_a = 1000, untrained): targets ≤ 0.5 and ≤ 0.35;
* ``gradient_flow_and_cost``: a recurrent layer and a self-attention layer on n = 32 … 1024
  positions of size d = 64 (``attnlib.transformer.gradflow.time_layer``, median of 7 runs, one
  thread): the fitted growth exponents of their times (recurrent within 0.6–1.4;
  self-attention, over n ≥ 256, at least 0.3 above it) and how many more multiply-adds per
  second self-attention runs at n = 1024 (target ≥ 3).

A time depends on what else the machine runs; the load average is reported with the rows.
Run on its own with ``python bench/bench_cost.py``; ``bench/run.py`` collects :func:`rows`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

#: The chapters whose claims the rows measure, as the rows name them.
TF, GF = "true_or_false", "gradient_flow_and_cost"
SIZES = [32, 64, 128, 256, 512, 1024]
D = 64


def _row(name: str, value: Any, unit: str, target: str = "", ok: bool | None = None) -> dict:
    return {"name": name, "value": value, "unit": unit, "target": target, "ok": ok}


def true_or_false() -> list[dict]:
    """Attention's share of the forward pass's time, course and paper sizes."""
    from attnlib import pretrained
    from attnlib.evidence import true_or_false as evidence
    from attnlib.models import make_seq2seq

    course = pretrained.load("long_copy_attention", progress=False).model
    paper = make_seq2seq(100, 100, emb=620, hidden=1000, d_s=1000, d_a=1000)
    out = []
    for name, model, T, repeats, limit in (
        ("course sizes, T = 15", course, 15, 51, 0.5),
        ("paper sizes, T = 50", paper, 50, 3, 0.35),
    ):
        timed = evidence.time_parts(model, T, T, repeats=repeats)
        counted = evidence.count_parts(model, T, T)
        share = timed.attention_share
        out.append(
            _row(
                f"{TF}: attention / forward time, {name} (median of {repeats} pairs)",
                round(share, 3),
                "",
                f"≤ {limit:g}",
                bool(share <= limit),
            )
        )
        out.append(
            _row(
                f"{TF}: attention / forward multiply-adds run, {name} (the chapter's check)",
                round(counted.attention_share, 4),
                "",
            )
        )
    return out


def gradient_flow_and_cost() -> list[dict]:
    """Growth of a layer's time with n, and multiply-adds per second, recurrent vs attention."""
    from attnlib.experiments import fit_growth
    from attnlib.transformer import gradflow as gf

    secs = {k: np.array([gf.time_layer(k, n, D, repeats=7) for n in SIZES]) for k in gf.LAYERS}
    macs = {k: np.array([gf.multiply_adds(k, n, D) for n in SIZES]) for k in gf.LAYERS}
    fit_rnn = fit_growth(SIZES, secs["rnn"])
    fit_att = fit_growth(SIZES[-3:], secs["self-attention"][-3:])
    rate = {k: macs[k] / secs[k] for k in gf.LAYERS}
    ratio = float(rate["self-attention"][-1] / rate["rnn"][-1])
    n = SIZES[-1]
    return [
        _row(
            f"{GF}: recurrent layer's time ~ n^b, b (n = {SIZES[0]} … {n}, d = {D})",
            round(fit_rnn.exponent, 2),
            "",
            "0.6 … 1.4",
            bool(0.6 <= fit_rnn.exponent <= 1.4),
        ),
        _row(
            f"{GF}: self-attention's time ~ n^b, b (n ≥ {SIZES[-3]})",
            round(fit_att.exponent, 2),
            "",
            f"> recurrent + 0.3 = {fit_rnn.exponent + 0.3:.2f}",
            bool(fit_att.exponent > fit_rnn.exponent + 0.3),
        ),
        _row(
            f"{GF}: multiply-adds per second, self-attention / recurrent, n = {n}",
            round(ratio, 1),
            "×",
            "≥ 3",
            bool(ratio >= 3),
        ),
        _row(f"{GF}: recurrent layer, n = {n}", round(1e3 * secs["rnn"][-1], 3), "ms"),
        _row(f"{GF}: self-attention, n = {n}", round(1e3 * secs["self-attention"][-1], 3), "ms"),
    ]


def rows() -> list[dict]:
    """The clock rows of both chapters, and the load average they were measured under.

    Returns
    -------
    list of dict
        Keys ``name``, ``value``, ``unit``, ``target``, ``ok``.
    """
    out = true_or_false() + gradient_flow_and_cost()
    if hasattr(os, "getloadavg"):
        out.append(
            _row(
                f"cost clocks: load average while measuring (1 min; cores: {os.cpu_count()})",
                round(os.getloadavg()[0], 2),
                "",
            )
        )
    return out


if __name__ == "__main__":
    for row in rows():
        print(f"{row['name']:<90} {row['value']!s:>10} {row['unit']:<3} {row['target']}")
