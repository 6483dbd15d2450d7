"""The in-browser explorables: cost of a move, size of their parts.

Four explorables run in the reader's browser (anywidget, no kernel): drag-the-decoder-state in
``score_functions`` (``attnlib.explorables.drag.AttentionDrag``) and the slider explorers of
``attnlib.explorables.sliders``: the step slider (``attention_step``), the score sliders
(``softmax``) and the sharpness slider (``entropy``). A move is timed in headless Chromium on the
built site (every outside request blocked, 1280 px, light mode), two ways, over 120 moves each:

1. **mouse**: a real drag (Playwright's mouse): of s_{t-1} in ``score_functions``, of the first
   slider elsewhere; the widget times each event with ``performance.now()`` from the event to the
   redrawn figure (math, SVG and texts updated in place). A slider fires an event only when its
   value changes, so the step slider (T_y values) yields fewer timed moves;
2. **with layout**: the first slider moved by script, each move followed by a forced style and
   layout of the page, the work the browser must do before it can paint the move.

Target: one frame, ≤ 16 ms (median and 95th percentile). On a machine shared with other jobs
the 95th percentile mostly measures waiting for a core (the load average is reported with it).
These rows are the only place the cost of a move is judged: the browser tests
(``tests/explorables/test_front_ends.py``) once asserted it and now check only that the moves
are handled, since a time in a browser depends on what else the machine runs.
The sizes are those of the front ends (ES modules and stylesheets, which travel inside the
widget state: the three slider explorers share ``sliders.js`` and ``sliders.css``), the vendored
anywidget front end the site serves, and each explorable's saved state in its chapter page.

Needs the built site (``make book``) and Chromium; without them the timing rows fail with the
reason. Run on its own with ``python bench/bench_explorable.py``; ``bench/run.py`` collects
:func:`rows` into the benchmark table.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
TARGET_MS = 16.0
#: explorable -> its chapter page (relative to the site)
PAGES = {
    "drag s_{t-1} (score_functions)": "chapters/score_functions.html",
    "step slider t (attention_step)": "chapters/attention_step.html",
    "score sliders (softmax)": "chapters/softmax.html",
    "sharpness β (entropy)": "chapters/entropy.html",
}
VIEWS = {
    "step slider t (attention_step)": "step",
    "score sliders (softmax)": "softmax",
    "sharpness β (entropy)": "temperature",
}


def _timings() -> dict[str, dict[str, list[float]]]:
    """Per-move costs in ms (``mouse``, ``layout``) of each explorable, on its built page."""
    paths = [str(ROOT / "tests"), str(ROOT / "tests" / "site"), str(ROOT / "tests" / "explorables")]
    sys.path[:0] = paths
    try:
        from playwright.sync_api import sync_playwright
        from test_front_ends import (
            Explorable,
            SliderExplorer,
            measure_moves,
            measure_slider_moves,
        )

        from conftest import chromium_path
    finally:
        for path in paths:
            sys.path.remove(path)
    missing = [p for p in PAGES.values() if not (SITE / p).is_file()]
    if missing:
        raise FileNotFoundError(f"no built site with {missing}: run `make book` first")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(SITE))
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    out: dict[str, dict[str, list[float]]] = {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=chromium_path(),
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
            )
            try:
                for name in PAGES:
                    if name in VIEWS:
                        ex: Any = SliderExplorer(browser, base, 1280, "light", VIEWS[name])
                        measure: Any = measure_slider_moves
                    else:
                        ex, measure = Explorable(browser, base, 1280, "light"), measure_moves
                    try:
                        measure(ex, 30)  # warm-up
                        out[name] = measure(ex, 120)
                    finally:
                        ex.close()
            finally:
                browser.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
    return out


def _state_bytes(page: str) -> int | None:
    """Bytes of the anywidget model state saved in a built chapter page."""
    path = SITE / page
    if not path.is_file():
        return None
    html = path.read_text(encoding="utf-8")
    m = re.search(
        r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', html, re.S
    )
    if not m:
        return None
    state = json.loads(m.group(1))["state"]
    return sum(
        len(json.dumps(model).encode())
        for model in state.values()
        if model.get("model_module") == "anywidget"
    )


def _row(name: str, value: Any, unit: str, target: str = "", ok: bool | None = None) -> dict:
    return {"name": name, "value": value, "unit": unit, "target": target, "ok": ok}


def rows() -> list[dict]:
    """Per-move cost of each explorable (median and 95th percentile, two ways) and sizes.

    Returns
    -------
    list of dict
        Keys ``name``, ``value``, ``unit``, ``target``, ``ok``.
    """
    from attnlib.explorables import ASSETS

    out: list[dict] = []
    target = f"≤ {TARGET_MS:g} ms"
    try:
        timings = _timings()
        for name, kinds in timings.items():
            for kind, label in (("mouse", "mouse drag"), ("layout", "slider + forced layout")):
                ms = np.array(kinds[kind])
                for stat, value in (
                    ("median", np.median(ms)),
                    ("95th percentile", np.percentile(ms, 95)),
                ):
                    out.append(
                        _row(
                            f"explorable {name}: one move, {label}, {stat} ({len(ms)} moves; "
                            "benchmarked here, not tested)",
                            round(float(value), 3),
                            "ms",
                            target,
                            bool(value <= TARGET_MS),
                        )
                    )
                out.append(
                    _row(
                        f"explorable {name}: one move, {label}, slowest",
                        round(float(ms.max()), 3),
                        "ms",
                    )
                )
    except Exception as err:  # a missing site or browser: one failing row that says why
        out.append(
            _row("explorables: one move in the browser", f"not measured: {err}", "", target, False)
        )
    if hasattr(os, "getloadavg"):
        out.append(
            _row(
                "explorables: load average while measuring (1 min; this machine's cores: "
                f"{os.cpu_count()})",
                round(os.getloadavg()[0], 2),
                "",
            )
        )
    for path in sorted(ASSETS.iterdir()):
        out.append(
            _row(f"explorables: front end {path.name}", round(path.stat().st_size / 1024, 1), "KiB")
        )
    vendored = SITE / "_vendor" / "anywidget" / "index.js"
    if vendored.is_file():
        out.append(
            _row(
                "explorables: anywidget front end (site _vendor/anywidget/index.js)",
                round(vendored.stat().st_size / 1024, 1),
                "KiB",
            )
        )
    for name, page in PAGES.items():
        state = _state_bytes(page)
        if state is not None:
            out.append(
                _row(
                    f"explorable {name}: saved widget state in its page (front end included)",
                    round(state / 1024, 1),
                    "KiB",
                )
            )
    return out


if __name__ == "__main__":
    for row in rows():
        print(f"{row['name']:<95} {row['value']!s:>10} {row['unit']:<4} {row['target']}")
