"""Widget latency: how long one slider move takes in the kernel (target ≤ 50 ms).

A move runs the widget's update function (which changes artists in place) and
renders the figure to the PNG the browser receives (:class:`attnlib.widgets.Renderer`:
the cached background plus the changed artists). Both are timed together; the
transfer to the browser is not. Each row is the median over many moves with
values sweeping the slider's range, after a few warm-up moves.

Run on its own with ``python bench/bench_widgets.py``; ``bench/run.py`` collects
:func:`rows` into the benchmark table.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import matplotlib

matplotlib.use("Agg")

import numpy as np

from attnlib import softmax, widgets

TARGET_MS = 50.0
MOVES = 60
WARMUP = 5


def _median_ms(move: Callable[[int], None], n: int = MOVES) -> tuple[float, float]:
    """Median CPU time and median wall-clock time of one move, in ms."""
    for k in range(WARMUP):
        move(k)
    cpu, wall = [], []
    for k in range(n):
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        move(k)
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start_wall)
    return 1e3 * statistics.median(cpu), 1e3 * statistics.median(wall)


def _softmax_move() -> tuple[float, float]:
    ex = widgets.softmax_explorer([2.0, 0.5, -1.0], ["i = 1", "i = 2", "i = 3"])
    slider = ex.controls["i = 2"]
    values = np.linspace(-6, 6, 37)
    return _median_ms(lambda k: setattr(slider, "value", float(values[k % len(values)])))


def _step_move() -> tuple[float, float]:
    rng = np.random.default_rng(0)
    T_y, T_x = 6, 7
    alpha = softmax(2 * rng.normal(size=(T_y, T_x)), axis=-1)
    ex = widgets.step_explorer(alpha, [f"w{i}" for i in range(T_x)], [f"o{t}" for t in range(T_y)])
    slider = ex.controls["t"]
    return _median_ms(lambda k: setattr(slider, "value", 1 + k % T_y))


def _temperature_move() -> tuple[float, float]:
    ex = widgets.temperature_explorer([0.5, 2.5, 1.0, -0.5, 0.0], ["a", "b", "c", "d", "e"])
    slider = ex.controls["beta"]
    values = np.linspace(0, 10, 41)
    return _median_ms(lambda k: setattr(slider, "value", float(values[k % len(values)])))


def rows() -> list[dict]:
    """Two rows per widget: median CPU and wall-clock time of a slider move (update + PNG).

    The CPU time is what the move costs the kernel and is held to the target;
    the wall-clock time also includes waiting for a core, so it grows when the
    machine is busy, and is reported without a target.

    Returns
    -------
    list of dict
        Keys ``name``, ``value`` (ms), ``unit``, ``target``, ``ok``.
    """
    cases = {
        "widget: softmax score sliders (ch. 3), one move": _softmax_move,
        "widget: step-through t (ch. 2), one move": _step_move,
        "widget: sharpness β (ch. 5), one move": _temperature_move,
    }
    out = []
    for name, case in cases.items():
        cpu, wall = case()
        out.append(
            {
                "name": f"{name} (kernel CPU time)",
                "value": round(cpu, 1),
                "unit": "ms",
                "target": f"≤ {TARGET_MS:g} ms",
                "ok": cpu <= TARGET_MS,
            }
        )
        # Wall clock adds the time spent waiting for a core: shown, but it measures the
        # machine's load as much as the widget, so it carries no pass/fail.
        out.append(
            {
                "name": f"{name} (wall clock, for information)",
                "value": round(wall, 1),
                "unit": "ms",
                "target": "–",
                "ok": None,
            }
        )
    return out


if __name__ == "__main__":
    for row in rows():
        print(
            f"{row['name']:70} {row['value']:7.1f} {row['unit']}  target {row['target']}  "
            f"{ {True: 'ok', False: 'TOO SLOW', None: ''}[row['ok']] }"
        )
