"""Training speed, held-out accuracy and memory of the seq2seq models the chapters ship.

Rows:

* For the recipes "copy", "reverse" and "dates" of :mod:`attnlib.pretrained`
  (the same ones that make the shipped checkpoints): wall-clock training time
  until the recipe stops (its valid exact-match target or its step budget),
  exact match on the held-out test split, the CPU time of the same run, and
  the peak memory (max RSS) of the process. Every run is a fresh subprocess,
  so runs do not share memory or warm caches; its max RSS comes from
  ``os.wait4``, like ``/usr/bin/time``.
* The cost of one decoder step when U_a h is computed once per source batch
  (:meth:`attnlib.models.AdditiveAttention.precompute`) against recomputing
  it at every step, and their ratio.

Wall-clock times grow when other processes compete for the two cores; the CPU
time and the load average printed by ``bench/run.py`` tell how busy it was.

Run on its own with ``python bench/bench_models.py``; ``bench/run.py`` collects
:func:`rows` into the benchmark table.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# (recipe, label, time target in s, exact-match target)
TRAINING = [
    ("copy", "copy, lengths 5–15", 20.0, 0.99),
    ("reverse", "reverse, lengths 5–15", 20.0, 0.99),
    ("dates", "date normalisation", 60.0, 0.98),
]
MEMORY_MB = 1024.0


def _child(recipe_name: str, out: str) -> None:
    """Train one recipe in this (fresh) process and write its numbers as JSON."""
    from attnlib.models import make_seq2seq
    from attnlib.pretrained import RECIPES
    from attnlib.tasks import make_task
    from attnlib.train import evaluate, train

    r = RECIPES[recipe_name]
    task = make_task(**r.task)
    model = make_seq2seq(task.src_vocab, task.tgt_vocab, **r.model)
    cpu = time.process_time()
    hist = train(model, task, progress=False, **r.fit)
    cpu = time.process_time() - cpu
    m = evaluate(model, task, "test")
    Path(out).write_text(
        json.dumps({"seconds": hist.seconds, "cpu_seconds": cpu, "steps": hist.steps,
                    "exact_match": m.exact_match, "token_accuracy": m.token_accuracy})
    )  # fmt: skip


def _run_child(recipe_name: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        proc = subprocess.Popen(
            [sys.executable, __file__, "--child", recipe_name, str(out)],
            stdout=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise RuntimeError(f"training {recipe_name!r} failed (exit {proc.returncode})")
        result = json.loads(out.read_text())
    result["max_rss_mb"] = usage.ru_maxrss / 1024  # Linux reports KiB
    return result


def decoder_step_us(
    B: int = 128, T_x: int = 31, T_y: int = 30, repeats: int = 15
) -> tuple[float, float]:
    """Median µs per greedy decoder step with U_a h precomputed, and recomputed each step.

    The precomputed case includes its one U_a h per batch, spread over the T_y steps.
    """
    import torch

    from attnlib.models import make_seq2seq
    from attnlib.pretrained import RECIPES

    torch.set_num_threads(1)
    model = make_seq2seq(23, 23, **RECIPES["copy"].model).eval()
    g = torch.Generator().manual_seed(0)
    src = torch.randint(3, 23, (B, T_x), generator=g)
    src[:, -1] = 2
    dec = model.decoder
    with torch.no_grad():
        h, final, mask = model.encode(src)
        y = torch.randint(3, 23, (B,), generator=g)

        # keys=None: every step recomputes U_a h; with reuse, decoding computes them once.
        bare = dataclasses.replace(dec.memory(h, final, mask), keys=None)

        def decode(reuse: bool) -> None:
            mem = dataclasses.replace(bare, keys=dec.attention.precompute(h)) if reuse else bare
            s = dec.init_state(final)
            for _ in range(T_y):
                _, s, _ = dec.step(y, s, mem)

        times: dict[bool, list[float]] = {True: [], False: []}
        for k in range(2 * repeats + 2):
            reuse = k % 2 == 0
            start = time.perf_counter()
            decode(reuse)
            if k >= 2:  # the first two are warm-up
                times[reuse].append(time.perf_counter() - start)
    reused, recomputed = (1e6 * statistics.median(times[r]) / T_y for r in (True, False))
    return reused, recomputed


def rows() -> list[dict]:
    """Rows for ``bench/run.py``: training runs (in subprocesses) and the decoder step."""
    out: list[dict] = []
    for recipe, label, t_max, acc_min in TRAINING:
        r = _run_child(recipe)
        fast = r["seconds"] <= t_max
        good = r["exact_match"] >= acc_min
        out += [
            {"name": f"{label}: training time to stop ({r['steps']} steps)",
             "value": round(r["seconds"], 1), "unit": "s", "target": f"≤ {t_max:g} s",
             "ok": fast and good},
            {"name": f"{label}: held-out exact match", "value": round(100 * r["exact_match"], 2),
             "unit": "%", "target": f"≥ {100 * acc_min:g} %", "ok": good},
            {"name": f"{label}: training CPU time", "value": round(r["cpu_seconds"], 1),
             "unit": "s", "target": "", "ok": None},
            {"name": f"{label}: peak memory (max RSS of the run)",
             "value": round(r["max_rss_mb"]), "unit": "MB", "target": f"≤ {MEMORY_MB:g} MB",
             "ok": r["max_rss_mb"] <= MEMORY_MB},
        ]  # fmt: skip
    pre, re = decoder_step_us()
    out += [
        {"name": "decoder step, U_a h precomputed once (B=128, T_x=31)", "value": round(pre),
         "unit": "µs", "target": "", "ok": None},
        {"name": "decoder step, U_a h recomputed at every step", "value": round(re),
         "unit": "µs", "target": "", "ok": None},
        {"name": "speed-up of the decoder step from precomputing U_a h",
         "value": round(re / pre, 2), "unit": "×", "target": "> 1", "ok": re / pre > 1},
    ]  # fmt: skip
    return out


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3])
    else:
        for row in rows():
            print(f"{row['name']:62} {row['value']:>8} {row['unit']:3} {row['target']}")
