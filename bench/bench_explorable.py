"""The drag-the-attention-step explorable (attnlib.explorable): cost of a move, size of its parts.

A move is timed in the reader's browser (headless Chromium on the built site, every outside
request blocked), two ways, each over 120 moves of the decoder state s_{t-1}:

1. **mouse**: a real drag (Playwright's mouse); the widget times each pointer event with
   ``performance.now()`` from the event to the redrawn figure (scores, weights, context, SVG
   and table updated in place);
2. **with layout**: s_{t-1}'s slider moved by script, each move followed by a forced style and
   layout of the page, the work the browser must do before it can paint the move.

Target: one frame, ≤ 16 ms (median and 95th percentile). On a machine shared with other jobs
the 95th percentile mostly measures waiting for a core (the load average is reported with it).
The sizes are those of the front end (the ES module and stylesheet, which travel inside the
widget state), the vendored anywidget front end the site serves, and the explorable's saved
state in the chapter page.

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


def _timings() -> dict[str, list[float]]:
    """Per-move costs in ms (``mouse``, ``layout``), measured on the built chapter page."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from playwright.sync_api import sync_playwright

        from test_explorable import PAGE, Explorable, measure_moves
        from test_site import chromium_path
    finally:
        sys.path.remove(str(ROOT / "tests"))
    if not (SITE / PAGE).is_file():
        raise FileNotFoundError(f"no built site with {PAGE}: run `make book` first")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(SITE))
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=chromium_path(),
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
            )
            try:
                ex = Explorable(
                    browser, f"http://127.0.0.1:{httpd.server_address[1]}/", 1280, "light"
                )
                try:
                    measure_moves(ex, 30)  # warm-up
                    return measure_moves(ex, 120)
                finally:
                    ex.close()
            finally:
                browser.close()
    finally:
        httpd.shutdown()
        httpd.server_close()


def _state_bytes() -> int | None:
    """Bytes of the explorable's saved model state in the built chapter page."""
    page = SITE / "chapters" / "04_score_functions.html"
    if not page.is_file():
        return None
    html = page.read_text(encoding="utf-8")
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


def rows() -> list[dict]:
    """Per-move cost (median and 95th percentile, two ways) and the sizes of the parts.

    Returns
    -------
    list of dict
        Keys ``name``, ``value``, ``unit``, ``target``, ``ok``.
    """
    from attnlib.explorable import ASSETS

    out: list[dict] = []
    try:
        timings = _timings()
        for kind, label in (("mouse", "mouse drag"), ("layout", "slider + forced layout")):
            ms = np.array(timings[kind])
            for stat, value in (
                ("median", np.median(ms)),
                ("95th percentile", np.percentile(ms, 95)),
            ):
                out.append(
                    {
                        "name": f"explorable: one move, {label}, {stat} ({len(ms)} moves)",
                        "value": round(float(value), 3),
                        "unit": "ms",
                        "target": f"≤ {TARGET_MS:g} ms",
                        "ok": bool(value <= TARGET_MS),
                    }
                )
            out.append(
                {
                    "name": f"explorable: one move, {label}, slowest",
                    "value": round(float(ms.max()), 3),
                    "unit": "ms",
                    "target": "",
                    "ok": None,
                }
            )
    except Exception as err:  # a missing site or browser: one failing row that says why
        out.append(
            {
                "name": "explorable: one move in the browser",
                "value": f"not measured: {err}",
                "unit": "",
                "target": f"≤ {TARGET_MS:g} ms",
                "ok": False,
            }
        )
    if hasattr(os, "getloadavg"):
        out.append(
            {
                "name": "explorable: load average while measuring (1 min; this machine's cores: "
                f"{os.cpu_count()})",
                "value": round(os.getloadavg()[0], 2),
                "unit": "",
                "target": "",
                "ok": None,
            }
        )
    for path in sorted(ASSETS.iterdir()):
        out.append(
            {
                "name": f"explorable: front end {path.name}",
                "value": round(path.stat().st_size / 1024, 1),
                "unit": "KiB",
                "target": "",
                "ok": None,
            }
        )
    vendored = SITE / "_vendor" / "anywidget" / "index.js"
    if vendored.is_file():
        out.append(
            {
                "name": "explorable: anywidget front end (site _vendor/anywidget/index.js)",
                "value": round(vendored.stat().st_size / 1024, 1),
                "unit": "KiB",
                "target": "",
                "ok": None,
            }
        )
    state = _state_bytes()
    if state is not None:
        out.append(
            {
                "name": "explorable: saved widget state in chapter 04's page",
                "value": round(state / 1024, 1),
                "unit": "KiB",
                "target": "",
                "ok": None,
            }
        )
    return out


if __name__ == "__main__":
    for row in rows():
        print(f"{row['name']:<85} {row['value']!s:>10} {row['unit']:<4} {row['target']}")
