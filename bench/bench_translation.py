"""The English→French model: held-out BLEU, retraining, training and decoding speed.

Rows, in four groups (``python bench/bench_translation.py [GROUP ...]`` runs some):

``bleu``
    Corpus BLEU (sacrebleu, every reference of each source) on the held-out test split
    for the shipped attention checkpoint, greedy (k = 1) and beam search (k = 5), each
    ``<unk>`` scored as one wrong word (and, for scale, as the three tokens sacrebleu makes of
    the text ``<unk>``); the no-attention baseline's BLEU (k = 5); attention's margin over
    the baseline overall and in every source-length bucket; and beam search's gain over
    greedy decoding.
``retrain`` (opt-in: ``BENCH_RETRAIN=1``, or ``BENCH_RETRAIN=all`` for the short-sentence
    models too)
    ``attnlib.mt.translation.retrain(name)`` in a fresh subprocess per shipped model:
    wall-clock minutes, peak memory (max RSS from ``os.wait4``) and the largest
    difference between the retrained weights and the shipped checkpoint's. Without the
    variable one row says it was skipped. About 7 minutes per model on a quiet machine.
``train``
    Training throughput, in sentence pairs per second, of the course's model against a
    re-implementation of the PyTorch tutorial's ``AttnDecoderRNN`` (``bench/tutorial_model.py``)
    on the same Tatoeba batches: the same loop (teacher forcing, Adam, gradient clipping),
    in alternating blocks of steps so that the machine's load falls on both alike.
``decode``
    Decoding the whole test split (``attnlib.mt.translation.decode``) at k = 1 and k = 5, in
    sentences per second; one sentence at a time (batch 1, what translating a typed sentence
    does): ``beam_search(k=1)`` and ``Seq2Seq.greedy`` against the tutorial model's greedy
    loop for the same number of steps; and one attention step alone at batch 1.

Timing: ``time.perf_counter``, a warm-up first, medians over repeats, the compared
models alternating within each repeat. The load average is printed in two rows: on a
busy machine read the ratios, not the absolute rates.
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # tutorial_model, beside this file

RETRAIN_ENV = "BENCH_RETRAIN"
THREADS_ENV = "BENCH_THREADS"
BLEU_GOAL = 30.0
RETRAIN_MINUTES = 10.0
RETRAIN_MB = 2048.0
TRAIN_SPEEDUP_GOAL = 1.5
BATCH1_SPEEDUP_GOAL = 1.5
GROUPS = ("bleu", "retrain", "train", "decode")


def _row(name: str, value: Any, unit: str, target: str = "", ok: bool | None = None) -> dict:
    return {"name": name, "value": value, "unit": unit, "target": target, "ok": ok}


def _load_rows(when: str) -> list[dict]:
    one, five, _ = os.getloadavg()
    return [_row(f"load average (1 min / 5 min) {when}", f"{one:.2f} / {five:.2f}", "")]


# --------------------------------------------------------------------------- BLEU
def bleu_rows() -> list[dict]:
    """Held-out BLEU of the shipped checkpoints and the comparisons the course makes."""
    from attnlib.mt import scoring
    from attnlib.mt import translation as tr

    att = tr.load("attention", retrain=False)
    base = tr.load("baseline", retrain=False)
    greedy = att.evaluate("test", k=1)
    beam = att.evaluate("test", k=5)
    base_beam = base.evaluate("test", k=5)
    n = beam.bleu.n_sentences
    # Scored as the text "<unk>", which sacrebleu's 13a tokenizer cuts into three tokens.
    as_text = scoring.corpus_bleu(beam.hypotheses, beam.references).score
    out = [
        _row(f"attention, test BLEU, greedy k=1 ({n} sources)", round(greedy.bleu.score, 2),
             "BLEU", f"≥ {BLEU_GOAL:g}", greedy.bleu.score >= BLEU_GOAL),
        _row(f"attention, test BLEU, beam k=5 ({n} sources)", round(beam.bleu.score, 2), "BLEU",
             f"≥ {BLEU_GOAL:g}", beam.bleu.score >= BLEU_GOAL),
        _row("for scale: attention, k=5, each <unk> scored as 3 wrong tokens (the text <unk>)",
             round(as_text, 2), "BLEU"),
        _row("no-attention baseline, test BLEU, beam k=5", round(base_beam.bleu.score, 2),
             "BLEU"),
        _row("attention − baseline, test BLEU (k=5)",
             round(beam.bleu.score - base_beam.bleu.score, 2), "BLEU", "> 0",
             beam.bleu.score > base_beam.bleu.score),
    ]  # fmt: skip
    for a, b in zip(beam.buckets, base_beam.buckets, strict=True):
        label = f"attention − baseline, BLEU of sources of {a.label} words ({a.n_sentences})"
        if a.bleu is None or b.bleu is None:
            out.append(_row(label, "empty", "", "> 0", None))
            continue
        out.append(_row(label, round(a.bleu - b.bleu, 2), "BLEU", "> 0", a.bleu > b.bleu))
    gain = beam.bleu.score - greedy.bleu.score
    out.append(_row("attention, beam k=5 − greedy, test BLEU", round(gain, 2), "BLEU", "≥ 0",
                    gain >= 0))  # fmt: skip
    return out


# --------------------------------------------------------------------------- retraining
def _retrain_child(name: str, out: str) -> None:
    """In a fresh process: retrain ``name`` from its recipe and compare with the shipped file."""
    import torch

    from attnlib.mt import translation as tr

    shipped = torch.load(tr.checkpoint_path(name), map_location="cpu", weights_only=True)
    start, cpu = time.perf_counter(), time.process_time()
    trained = tr.retrain(name, progress=False)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    mine = trained.model.state_dict()
    theirs = shipped["state_dict"]
    same_layout = list(mine) == list(theirs) and all(mine[k].shape == theirs[k].shape for k in mine)
    diff = (
        max(float((mine[k].float() - theirs[k].float()).abs().max()) for k in mine)
        if same_layout
        else float("inf")
    )
    h = trained.history
    Path(out).write_text(
        json.dumps({
            "seconds": seconds, "cpu_seconds": cpu, "train_seconds": h.seconds,
            "steps": h.steps, "epochs": len(h.valid_loss), "best_epoch": h.best_epoch,
            "stopped": h.stopped, "max_abs_diff": diff, "same_layout": same_layout,
            "same_history": shipped["history"].get("steps") == h.steps
            and shipped["history"].get("best_epoch") == h.best_epoch,
            "shipped_stopped": shipped["history"].get("stopped"),
        })
    )  # fmt: skip


def _run_retrain(name: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        proc = subprocess.Popen(
            [sys.executable, __file__, "--retrain-child", name, str(out)],
            stdout=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise RuntimeError(f"retraining {name!r} failed (exit {proc.returncode})")
        result = json.loads(out.read_text())
    result["max_rss_mb"] = usage.ru_maxrss / 1024  # Linux reports KiB
    return result


def retrain_names() -> list[str]:
    """The models ``BENCH_RETRAIN`` asks for: none, the two full ones, or all four."""
    want = os.environ.get(RETRAIN_ENV, "").strip().lower()
    if want in ("", "0", "no", "false", "off"):
        return []
    names = ["attention", "baseline"]
    return [*names, "attention_short", "baseline_short"] if want == "all" else names


def retrain_rows() -> list[dict]:
    """Retraining each shipped checkpoint in a fresh process (only when asked for)."""
    names = retrain_names()
    if not names:
        return [_row(f"retraining the shipped checkpoints: skipped (set {RETRAIN_ENV}=1, or "
                     "=all for the short ones; ≈ 7 min per model)", "skipped", "",
                     f"≤ {RETRAIN_MINUTES:g} min each", None)]  # fmt: skip
    out = []
    for name in names:
        r = _run_retrain(name)
        minutes = r["seconds"] / 60
        out += [
            _row(f"retrain {name!r} from scratch: wall clock ({r['epochs']} epochs, "
                 f"{r['steps']} steps, stopped by {r['stopped']})", round(minutes, 2), "min",
                 f"≤ {RETRAIN_MINUTES:g} min", minutes <= RETRAIN_MINUTES),
            _row(f"retrain {name!r}: CPU time", round(r["cpu_seconds"] / 60, 2), "min"),
            _row(f"retrain {name!r}: peak memory (max RSS)", round(r["max_rss_mb"]), "MB",
                 f"≤ {RETRAIN_MB:g} MB", r["max_rss_mb"] <= RETRAIN_MB),
            _row(f"retrain {name!r}: max |retrained − shipped weight| (shipped: "
                 f"{r['shipped_stopped']})", r["max_abs_diff"], "", "= 0",
                 r["same_layout"] and r["max_abs_diff"] == 0.0),
        ]  # fmt: skip
    return out


# --------------------------------------------------------------------------- training speed
def _alternate(
    fns: dict[str, Callable[[int], float]], rounds: int, warmup: int = 1
) -> dict[str, list[float]]:
    """Run each fn(round) once per round, in rotating order; the first ``warmup`` rounds are
    not kept. Returns each fn's results per kept round."""
    names = list(fns)
    got: dict[str, list[float]] = {n: [] for n in names}
    for r in range(warmup + rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            value = fns[n](r)
            if r >= warmup:
                got[n].append(value)
    return got


def _threads(default: int) -> int:
    """Torch threads for the speed rows: ``BENCH_THREADS`` if set, else ``default``."""
    v = os.environ.get(THREADS_ENV, "").strip()
    return int(v) if v else default


def training_throughput(block: int = 4, rounds: int = 8) -> dict[str, Any]:
    """Sentence pairs per second of each model on the same batches, alternating blocks.

    Each round takes the next ``block`` batches of epoch 1 (the recipe's batch order) and
    trains every model on them, in an order that rotates from round to round; the first
    round is a warm-up. The models: the course's (``RECIPES["attention"]``), and the
    tutorial's at hidden = d_s (the comparison with the target) and at hidden = d_h.
    """
    import torch
    from torch import nn
    from tutorial_model import TutorialSeq2Seq

    from attnlib.mt import tatoeba as tb
    from attnlib.mt import translation as tr
    from attnlib.runtime import torch_threads
    from attnlib.vocab import PAD_ID

    recipe = tr.RECIPES["attention"]
    data = tr.prepare(recipe)
    batches = list(tb.batches(data.train, recipe.batch_size, seed=recipe.seed * 1000 + 1))
    batches = batches[: (rounds + 1) * block]
    threads = _threads(recipe.threads)
    V_src, V_tgt = len(data.src_vocab), len(data.tgt_vocab)
    sizes = {"tutorial": recipe.d_s, "tutorial, hidden = d_h": 2 * recipe.hidden}
    with torch_threads(threads):
        models: dict[str, nn.Module] = {"course": tr.build_model(recipe, data)}
        for name, hidden in sizes.items():
            models[name] = TutorialSeq2Seq(V_src, V_tgt, hidden=hidden, seed=recipe.seed)

        def loss_of(name: str, b: Any) -> torch.Tensor:
            if name == "course":  # what attnlib.mt.translation.train_model runs
                return tr.batch_loss(models[name], b)
            log_p = models[name](b.src, b.tgt_in)  # the tutorial: log-softmax, then NLLLoss
            return nn.functional.nll_loss(
                log_p.flatten(0, 1), b.tgt_out.flatten(), ignore_index=PAD_ID
            )

        def timed(name: str) -> Callable[[int], float]:
            model = models[name].train()
            opt = torch.optim.Adam(model.parameters(), lr=recipe.lr)

            def run(r: int) -> float:
                chunk = batches[r * block : (r + 1) * block]
                start = time.perf_counter()
                for b in chunk:
                    loss = loss_of(name, b)
                    opt.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(model.parameters(), recipe.clip)
                    opt.step()
                seconds = time.perf_counter() - start
                return sum(int(b.src.shape[0]) for b in chunk) / seconds

            return run

        rates = _alternate({name: timed(name) for name in models}, rounds)
    out: dict[str, Any] = {"rounds": rounds, "threads": threads, "sizes": sizes}
    for name, model in models.items():
        out[name] = {
            "rate": statistics.median(rates[name]),
            "params": sum(p.numel() for p in model.parameters()),
            "ratio": statistics.median(
                c / x for c, x in zip(rates["course"], rates[name], strict=True)
            ),
        }
    return out


def train_rows() -> list[dict]:
    load = _load_rows("before the training-speed rows")
    r = training_throughput()
    c, t, t2 = r["course"], r["tutorial"], r["tutorial, hidden = d_h"]
    h2 = r["sizes"]["tutorial, hidden = d_h"]
    return [
        *load,
        _row(f"training, course's model (d_s=96, d_h=192; {c['params']:,} parameters), "
             f"batch 128, {r['threads']} thread(s)", round(c["rate"]), "pairs/s"),
        _row(f"training, tutorial's model, hidden = d_s = 96 ({t['params']:,} parameters), "
             "same batches", round(t["rate"]), "pairs/s"),
        _row(f"training speed-up, course ÷ tutorial (median of {r['rounds']} alternating "
             "rounds)", round(t["ratio"], 2), "×", f"≥ {TRAIN_SPEEDUP_GOAL:g}",
             t["ratio"] >= TRAIN_SPEEDUP_GOAL),
        _row(f"for scale: tutorial's model at hidden = d_h = {h2} ({t2['params']:,} "
             "parameters)", round(t2["rate"]), "pairs/s"),
        _row(f"for scale: course ÷ tutorial at hidden = {h2}", round(t2["ratio"], 2), "×"),
    ]  # fmt: skip


# --------------------------------------------------------------------------- decoding speed
def _median_times(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """Seconds of each fn per repeat: one warm-up call each, then rotating order."""
    runs: dict[str, Callable[[int], float]] = {
        n: functools.partial(_seconds, f) for n, f in fns.items()
    }
    return _alternate(runs, repeats)


def _seconds(fn: Callable[[], object], _round: int = 0) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def whole_test_split_rates(repeats: int = 3) -> dict[Any, float]:
    """Sentences per second of ``translation.decode`` over the whole test split, k = 1 and 5."""
    from attnlib.mt import translation as tr
    from attnlib.runtime import torch_threads

    t = tr.load("attention", retrain=False)
    sources = t.data.sources("test")
    ks = (1, 5)
    fns: dict[str, Callable[[], object]] = {
        f"k={k}": functools.partial(tr.decode, t.model, t.data, sources, k) for k in ks
    }
    threads = _threads(2)  # evaluate_bleu's default
    with torch_threads(threads):
        times = _median_times(fns, repeats)
    out: dict[Any, float] = {k: len(sources) / statistics.median(times[f"k={k}"]) for k in ks}
    out["threads"] = threads
    return out


def batch1_times(n_sentences: int = 200, repeats: int = 5) -> dict[str, Any]:
    """Milliseconds per sentence at batch 1 and 1 thread, course's model against the tutorial's.

    The sentences are every (2000 / n_sentences)-th test source. The tutorial's model runs
    exactly as many decoder steps per sentence as the course's model takes (to its <eos>).
    Each repeat runs every method once over all sentences, in rotating order; wall clock
    (``perf_counter``) and this thread's CPU time (``thread_time``, which a busy machine
    disturbs less) are both kept.
    """
    import torch
    from tutorial_model import TutorialSeq2Seq

    from attnlib.decoding import beam_search
    from attnlib.mt import tatoeba as tb
    from attnlib.mt import translation as tr
    from attnlib.runtime import torch_threads

    t = tr.load("attention", retrain=False)
    model, data = t.model, t.data
    sources = data.sources("test")
    sources = sources[:: max(1, len(sources) // n_sentences)][:n_sentences]
    srcs = [torch.tensor([tb.encode(tb.tokenise(s, "en"), data.src_vocab)]) for s in sources]
    V_src, V_tgt = len(data.src_vocab), len(data.tgt_vocab)
    d_s, d_h = model.decoder.d_s, model.decoder.d_h
    tutorials = {
        "tutorial": TutorialSeq2Seq(V_src, V_tgt, hidden=d_s).eval(),
        "tutorial, hidden = d_h": TutorialSeq2Seq(V_src, V_tgt, hidden=d_h).eval(),
    }
    with torch_threads(1):
        steps = [beam_search(model, s, 1)[0].best.steps for s in srcs]  # also the warm-up

        def course_beam() -> None:
            for s in srcs:
                beam_search(model, s, 1)

        def course_greedy() -> None:
            for s in srcs:
                model.greedy(s)

        def tut(name: str) -> None:
            for s, n in zip(srcs, steps, strict=True):
                tutorials[name].greedy(s, n)

        fns: dict[str, Callable[[], object]] = {
            "beam_search k=1": course_beam,
            "Seq2Seq.greedy": course_greedy,
            **{name: functools.partial(tut, name) for name in tutorials},
        }
        names = list(fns)
        wall: dict[str, list[float]] = {n: [] for n in names}
        cpu: dict[str, list[float]] = {n: [] for n in names}
        for r in range(repeats + 1):  # round 0: warm-up
            for n in names[r % len(names) :] + names[: r % len(names)]:
                w, c = time.perf_counter(), time.thread_time()
                fns[n]()
                if r:
                    wall[n].append(time.perf_counter() - w)
                    cpu[n].append(time.thread_time() - c)

    def ratio(times: dict[str, list[float]], ref: str, k: str) -> float:
        return statistics.median(a / b for a, b in zip(times[ref], times[k], strict=True))

    course = ("beam_search k=1", "Seq2Seq.greedy")
    return {
        "ms": {k: 1000 * statistics.median(v) / len(srcs) for k, v in wall.items()},
        "ratio": {k: ratio(wall, "tutorial", k) for k in course},
        "cpu_ratio": {k: ratio(cpu, "tutorial", k) for k in course},
        "ratio_d_h": {k: ratio(wall, "tutorial, hidden = d_h", k) for k in course},
        "n": len(srcs),
        "steps": sum(steps) / len(steps),
        "d_h": d_h,
    }


def attention_step_us(T_x: int = 10, n: int = 2000, repeats: int = 7) -> dict[str, float]:
    """µs per attention step alone at batch 1: AdditiveAttention.forward (mask and U_a h given,
    input checks on) against the tutorial's BahdanauAttention (which maps the keys each step)."""
    import torch
    from tutorial_model import BahdanauAttention

    from attnlib.models import AdditiveAttention
    from attnlib.mt import translation as tr
    from attnlib.runtime import torch_threads

    t = tr.load("attention", retrain=False)
    att = t.model.attention
    if not isinstance(att, AdditiveAttention):
        raise TypeError(f"the shipped attention model has {type(att).__name__}")
    d_s, d_h = t.model.decoder.d_s, t.model.decoder.d_h
    g = torch.Generator().manual_seed(0)
    s_prev = torch.randn(1, d_s, generator=g)
    h = torch.randn(1, T_x, d_h, generator=g)
    mask = torch.ones(1, T_x, dtype=torch.bool)
    tut = BahdanauAttention(d_s).eval()
    query = torch.randn(1, 1, d_s, generator=g)
    keys_t = torch.randn(1, T_x, d_s, generator=g)
    with torch.no_grad(), torch_threads(1):
        keys = att.precompute(h)

        def course() -> None:
            for _ in range(n):
                att(s_prev, h, mask, keys=keys)

        def tutorial() -> None:
            for _ in range(n):
                tut(query, keys_t)

        times = _median_times({"course": course, "tutorial": tutorial}, repeats)
    us = {k: 1e6 * statistics.median(v) / n for k, v in times.items()}
    us["ratio"] = statistics.median(
        a / b for a, b in zip(times["tutorial"], times["course"], strict=True)
    )
    return us


def decode_rows() -> list[dict]:
    load = _load_rows("before the decoding rows")
    rates = whole_test_split_rates()
    b1 = batch1_times()
    att = attention_step_us()
    ms, ratio = b1["ms"], b1["ratio"]
    out = [
        *load,
        _row(f"decode the test split (2000 sources, batches of 256, {rates['threads']} "
             "thread(s)), greedy k=1", round(rates[1]), "sentences/s"),
        _row("decode the test split, beam search k=5", round(rates[5]), "sentences/s"),
        _row(f"batch 1, 1 thread: beam_search(k=1) with α, per sentence ({b1['n']} test "
             f"sources, {b1['steps']:.1f} steps on average)", round(ms["beam_search k=1"], 3),
             "ms"),
        _row("batch 1: Seq2Seq.greedy, per sentence", round(ms["Seq2Seq.greedy"], 3), "ms"),
        _row("batch 1: tutorial's greedy loop (hidden = d_s), the same number of steps",
             round(ms["tutorial"], 3), "ms"),
    ]  # fmt: skip
    k = "beam_search k=1"  # the translate widget's path: the goal is set on it
    out.append(
        _row(f"batch-1 speed-up of {k} (the translate widget's path) over the tutorial's model",
             round(ratio[k], 2), "×", f"≥ {BATCH1_SPEEDUP_GOAL:g}", ratio[k] >= BATCH1_SPEEDUP_GOAL)
    )  # fmt: skip
    out.append(
        _row("for scale: Seq2Seq.greedy (the batched loop returning padded tensors) over the "
             "tutorial's model", round(ratio["Seq2Seq.greedy"], 2), "×")
    )  # fmt: skip
    out += [
        _row("the same two speed-ups in CPU time (thread_time; less disturbed by load)",
             " / ".join(f"{b1['cpu_ratio'][k]:.2f}" for k in ("beam_search k=1",
                                                              "Seq2Seq.greedy")), "×"),
        _row(f"for scale: the same two speed-ups against the tutorial at hidden = "
             f"d_h = {b1['d_h']}",
             " / ".join(f"{b1['ratio_d_h'][k]:.2f}" for k in ("beam_search k=1",
                                                              "Seq2Seq.greedy")), "×"),
        _row("one attention step, batch 1, T_x=10: AdditiveAttention.forward (checks, mask, "
             "keys given)", round(att["course"], 1), "µs"),
        _row("one attention step, batch 1: tutorial's BahdanauAttention (U_a keys each step)",
             round(att["tutorial"], 1), "µs"),
        _row("attention step speed-up, course ÷ tutorial", round(att["ratio"], 2), "×"),
        *_load_rows("after the decoding rows"),
    ]  # fmt: skip
    return out


# --------------------------------------------------------------------------- table
SECTIONS: dict[str, Callable[[], list[dict]]] = {
    "bleu": bleu_rows,
    "retrain": retrain_rows,
    "train": train_rows,
    "decode": decode_rows,
}


def rows(groups: tuple[str, ...] = GROUPS) -> list[dict]:
    """Rows for ``bench/run.py``: every group (retraining only with ``BENCH_RETRAIN``)."""
    out: list[dict] = []
    for g in groups:
        out += SECTIONS[g]()
    return out


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--retrain-child":
        _retrain_child(sys.argv[2], sys.argv[3])
        sys.exit(0)
    chosen = tuple(sys.argv[1:]) or GROUPS
    unknown = [g for g in chosen if g not in SECTIONS]
    if unknown:
        sys.exit(f"unknown group(s) {unknown}; choose from {list(SECTIONS)}")
    for row in rows(chosen):
        print(f"{row['name']:100} {row['value']!s:>10} {row['unit']:11} {row['target']:8} "
              f"{ {True: 'yes', False: 'NO', None: '–'}[row['ok']] }")  # fmt: skip
