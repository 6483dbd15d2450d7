"""attnlib.explorables.drag: the attention step the learner drags, in Python and in a real browser.

Fast tests check the Python side (the reference step, the widget's state and its checks, the
shipped assets, the site extension). Slow tests open the built chapter "Score functions" in
headless Chromium with every request outside the local server blocked, and check the explorable
as a learner meets it: drawn from the saved widget state with no kernel, at 390 and 1280 px, in
light and dark mode; dragged by mouse and moved by keyboard, its figure changes and shows the
values of its controls; its JavaScript agrees with :mod:`attnlib.core` to 1e-6 at sample
points; a drag is handled move by move. What a move costs in milliseconds is a benchmark,
``bench/bench_explorable.py`` (with the same :func:`measure_moves`), never a test: a time in a
browser depends on what else the machine runs.

The second half does the same for attnlib.explorables.sliders' slider explorers (attention_step,
softmax and entropy): each slider dragged by mouse and moved by keyboard, the figure compared before and after and read
back (bar heights through the axis ticks, the heatmap's frame, the texts) against attnlib.core for
the values the sliders show; screenshots before and after go to tests/_artifacts/explorables/.

Each page is loaded once per (page, width, mode) and process, in the tab of its width and mode
(``tests/site/site_tabs.py``), and handed to each test of that state as it was loaded: the
controls a test moved are set back as a reader would set them and the result checked against the
page as loaded, or the page is loaded anew (and always after a test failed on it). The tests of a
state run one after the other and, under ``--dist loadgroup``, on one worker (``xdist_group``).
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from site_tabs import Tabs, on_one_worker
from test_site import (
    BACKSTOP_MS,
    SITE,  # the built site: _build/html, or $SITE_DIR
    browser,  # noqa: F401  (the headless Chromium fixture, shared)
)

import attnlib as al
from attnlib.explorables import ASSETS
from attnlib.explorables import drag as explorable
from attnlib.explorables.drag import AttentionDrag, attention_step
from conftest import ROOT

PAGE = "chapters/score_functions.html"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
TOL = 1e-6


# --------------------------------------------------------------------------- the Python side


def _by_hand(s: np.ndarray, h: np.ndarray, score: str, beta: float) -> tuple[Any, Any, Any]:
    """The step written out position by position, from the formulas of score_functions."""
    W_a, U_a, v_a = (
        np.array(x)
        for x in (explorable.DEFAULT_W_A, explorable.DEFAULT_U_A, explorable.DEFAULT_V_A)
    )
    e = []
    for h_i in h:
        if score == "dot":
            e.append(beta * sum(a * b for a, b in zip(s, h_i, strict=True)))
        else:
            hidden = [np.tanh(W_a[k] @ s + U_a[k] @ h_i) for k in range(len(v_a))]
            e.append(beta * sum(v * x for v, x in zip(v_a, hidden, strict=True)))
    weights = [np.exp(x) for x in e]
    alpha = [w / sum(weights) for w in weights]
    c = sum(a * h_i for a, h_i in zip(alpha, h, strict=True))
    return np.array(e), np.array(alpha), c


@pytest.mark.parametrize("score", ["dot", "additive"])
@pytest.mark.parametrize("beta", [0.0, 0.7, 3.0])
def test_attention_step_follows_the_formulas(score: str, beta: float) -> None:
    h = np.array(explorable.DEFAULT_H)
    s = np.array([0.8, -1.3])
    e, alpha, c = attention_step(s, h, score=score, beta=beta)
    e0, alpha0, c0 = _by_hand(s, h, score, beta)
    np.testing.assert_allclose(e, e0, atol=1e-12)
    np.testing.assert_allclose(alpha, alpha0, atol=1e-12)
    np.testing.assert_allclose(c, c0, atol=1e-12)


def test_sharpness_zero_gives_uniform_weights_and_the_mean() -> None:
    h = np.array(explorable.DEFAULT_H)
    for score in explorable.SCORES:
        step = attention_step([2.5, -1.0], h, score=score, beta=0.0)
        np.testing.assert_allclose(step.alpha, np.full(len(h), 1 / len(h)))
        np.testing.assert_allclose(step.c, h.mean(axis=0))


@settings(max_examples=60, deadline=None)
@given(
    x=st.floats(-3, 3),
    y=st.floats(-3, 3),
    beta=st.floats(0.01, 4),
    score=st.sampled_from(explorable.SCORES),
)
def test_the_favourite_does_not_depend_on_beta_and_c_stays_a_weighted_mean(
    x: float, y: float, beta: float, score: str
) -> None:
    h = np.array(explorable.DEFAULT_H)
    step = attention_step([x, y], h, score=score, beta=beta)
    unit = attention_step([x, y], h, score=score, beta=1.0)
    np.testing.assert_allclose(step.e, beta * unit.e, rtol=1e-12, atol=1e-12)
    if np.ptp(unit.e) > 1e-9:
        assert step.alpha.argmax() == unit.alpha.argmax()
    assert np.all(h.min(axis=0) - 1e-12 <= step.c)
    assert np.all(step.c <= h.max(axis=0) + 1e-12)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"score": "cosine"}, 'score must be "dot" or "additive"'),
        ({"beta": -1.0}, "beta must be a finite number ≥ 0"),
        ({"beta": float("nan")}, "beta must be a finite number ≥ 0"),
        ({"beta": True}, "beta must be a number"),
    ],
)
def test_attention_step_rejects_bad_settings(kwargs: dict, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=re.escape(message)):
        attention_step([1.0, 0.0], explorable.DEFAULT_H, **kwargs)


def test_the_widget_state_is_what_the_front_end_needs() -> None:
    w = AttentionDrag(s=(0.5, -1.0), beta=2.0, score="additive")
    state = w.get_state()
    assert state["_model_module"] == "anywidget"
    assert state["_view_module"] == "anywidget"
    assert state["h"] == [list(p) for p in explorable.DEFAULT_H]
    assert state["tokens"] == list(explorable.DEFAULT_TOKENS)
    assert (state["s"], state["beta"], state["score"]) == ([0.5, -1.0], 2.0, "additive")
    assert state["_esm"] == (explorable.ASSETS / "attention_drag.js").read_text(encoding="utf-8")
    assert state["_css"] == (explorable.ASSETS / "attention_drag.css").read_text(encoding="utf-8")
    # the front end is an ES module with a render function
    assert re.search(r"^export default \{ render \};$", state["_esm"], re.M)


def test_the_widget_step_is_the_reference_step() -> None:
    w = AttentionDrag(s=(-2.0, 0.4), beta=1.5, score="additive")
    _, alpha, c = w.step()
    ref = attention_step([-2.0, 0.4], explorable.DEFAULT_H, score="additive", beta=1.5)
    np.testing.assert_array_equal(alpha, ref.alpha)
    np.testing.assert_array_equal(c, ref.c)
    w.score, w.s = "dot", [1.0, 2.0]
    np.testing.assert_allclose(w.step().e, 1.5 * al.dot_scores([1.0, 2.0], explorable.DEFAULT_H))


def test_the_widget_keeps_s_and_beta_in_range_and_rejects_nonsense() -> None:
    w = AttentionDrag(lim=3.0, beta_max=4.0)
    w.s = [7.5, -9.0]
    assert w.s == [3.0, -3.0], "s_{t-1} must stay in the drawn square"
    w.beta = 10.0
    assert w.beta == 4.0
    with pytest.raises(Exception, match="score must be"):
        w.score = "cosine"
    with pytest.raises(Exception, match=r"s must be two finite numbers"):
        w.s = [1.0, 2.0, 3.0]
    with pytest.raises(Exception, match="beta must be a finite number"):
        w.beta = -0.5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"h": [[1.0, 2.0, 3.0]], "tokens": ["x"]}, "h must have shape (T_x, 2)"),
        ({"tokens": ["a", "b"]}, "tokens has 2 words but h has T_x=4 states"),
        ({"v_a": [1.0, 2.0, 3.0]}, "must share d_a"),
        ({"W_a": [[1.0, 2.0, 3.0]]}, "W_a must have shape (d_a, d_s) with d_s = 2"),
    ],
)
def test_the_widget_explains_bad_shapes(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        AttentionDrag(**kwargs)


def test_the_front_end_ships_with_the_package() -> None:
    """pyproject's package-data names the assets, so a wheel (Colab, Binder) carries them."""
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = data["tool"]["setuptools"]["package-data"]["attnlib.explorables"]
    assets = ASSETS.glob("*.[jc]s*")  # the ES modules and stylesheets beside the Python
    shipped = {p.name for p in assets if p.suffix in {".js", ".css"}}
    from fnmatch import fnmatch

    missing = [f for f in shipped if not any(fnmatch(f, pat) for pat in patterns)]
    assert not missing, f"assets not in package-data: {missing}"
    assert {"attention_drag.js", "attention_drag.css"} <= shipped


# --------------------------------------------------------------------------- in the browser

JS_GEOMETRY = """
(root) => {
  const num = (x) => parseFloat(x.replace('−', '-'));
  const attr = (el, a) => parseFloat(el.getAttribute(a));
  const s = root.querySelector('circle.attn-drag__s');
  const c = root.querySelector('rect.attn-drag__c');
  const radio = root.querySelector('input[type=radio]:checked');
  return {
    dots: [...root.querySelectorAll('circle.attn-drag__h')].map(d => [attr(d, 'cx'), attr(d, 'cy')]),
    radii: [...root.querySelectorAll('circle.attn-drag__h')].map(d => attr(d, 'r')),
    s: [attr(s, 'cx'), attr(s, 'cy')],
    c: [attr(c, 'x') + attr(c, 'width') / 2, attr(c, 'y') + attr(c, 'height') / 2],
    e_text: [...root.querySelectorAll('td.attn-drag__e')].map(td => num(td.textContent)),
    alpha_text: [...root.querySelectorAll('td.attn-drag__alpha')].map(td => num(td.textContent)),
    bars: [...root.querySelectorAll('.attn-drag__bar')].map(b => parseFloat(b.style.width) / 100),
    sliders: [...root.querySelectorAll('input[type=range]')].map(r => r.valueAsNumber),
    score: radio ? radio.value : null,
    data: {e: JSON.parse(root.dataset.e), alpha: JSON.parse(root.dataset.alpha),
           c: JSON.parse(root.dataset.c), s: JSON.parse(root.dataset.s)},
    summary: root.querySelector('.attn-drag__summary').textContent,
  };
}
"""

#: SVG user units -> the page's CSS pixels (for the mouse).
JS_TO_SCREEN = """
([root, x, y]) => {
  const m = root.querySelector('svg').getScreenCTM();
  const p = new DOMPoint(x, y).matrixTransform(m);
  return [p.x, p.y];
}
"""

JS_SAMPLES = """
([root, samples]) => samples.map(([s, score, beta]) => root.attnExplorable.step(s, score, beta))
"""

#: Move s_{t-1}'s first slider n times by script, each move followed by a forced style and layout
#: (what the browser must do before it paints): the cost of a move including rendering work.
JS_LAYOUT_COST = """
([root, n]) => {
  const slider = root.querySelector('input.attn-drag__s0');
  const lim = parseFloat(slider.max), step = parseFloat(slider.step);
  const out = [];
  for (let k = 0; k < n; k++) {
    const t0 = performance.now();
    slider.value = -lim + ((k * 7) % Math.round(2 * lim / step)) * step;
    slider.dispatchEvent(new Event('input', {bubbles: true}));
    root.getBoundingClientRect();
    document.body.offsetHeight;
    out.push(performance.now() - t0);
  }
  return out;
}
"""

RUN_AXE_ON = """
async ([selector, impacts]) => {
  const result = await axe.run(document.querySelector(selector), {resultTypes: ['violations']});
  return result.violations.filter(v => impacts.includes(v.impact))
                          .map(v => `${v.id}: ${v.help} at ${v.nodes.map(n => n.target).slice(0, 3)}`);
}
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    if not (SITE / PAGE).is_file():
        pytest.skip(f"no built site with {PAGE}: run `make book` first")
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(SITE))
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


#: How a test finds the page it is handed: the widget's controls, where the focus is, where the
#: page is scrolled. With what the widget draws (``geometry``), it tells a page as it was opened
#: from one a test has changed.
JS_PAGE_STATE = """
(root) => ({
  controls: [...root.querySelectorAll('input')].map(c => [c.type, c.value, c.checked]),
  focused: document.activeElement === document.body || document.activeElement === null,
  scroll: [window.scrollX, window.scrollY],
})
"""

#: Back to the page as it was opened (``state``: JS_PAGE_STATE then): the focus let go, each slider
#: and radio button set to its first value the way a reader moves it (an input or change event,
#: which the widget redraws for), the widget's record of moves emptied, the page scrolled back.
JS_RESTORE = """
([root, state]) => {
  if (document.activeElement && document.activeElement !== document.body) {
    document.activeElement.blur();
  }
  [...root.querySelectorAll('input')].forEach((c, k) => {
    const [type, value, checked] = state.controls[k] || [];
    if (type !== c.type) return;
    if (type === 'radio' && checked && !c.checked) {
      c.checked = true;
      c.dispatchEvent(new Event('change', {bubbles: true}));
    } else if (type === 'range' && c.value !== value) {
      c.value = value;
      c.dispatchEvent(new Event('input', {bubbles: true}));
    }
  });
  for (const handle of [root.attnExplorable, root.xpSliders]) if (handle) handle.costs.length = 0;
  window.scrollTo(...state.scroll);
}
"""

#: The box of an element brought into view, in the viewport's pixels (a screenshot's clip).
JS_INTO_VIEW = """
(el) => {
  el.scrollIntoView({block: 'nearest', inline: 'nearest'});
  const r = el.getBoundingClientRect();
  const x = Math.floor(r.left), y = Math.floor(r.top);
  return {x, y, width: Math.ceil(r.right) - x, height: Math.ceil(r.bottom) - y};
}
"""


class Explorable:
    """The chapter page opened offline at one width and colour mode; ``root`` is the widget.

    The page is loaded in the tab of its width and mode (``tabs``, :mod:`site_tabs`; a tab of its
    own without), once per (page, width, mode) and process, and handed to every test of that
    state (:func:`handed_over`): :meth:`restore` brings it back to how it was opened before each
    test, so that no test depends on what another did to the page, or on whether it ran before.
    """

    #: What of the widget :meth:`figure_png` photographs.
    FIGURE = "svg"

    def __init__(
        self,
        chromium: Any,
        base: str,
        width: int,
        mode: str,
        *,
        page: str = PAGE,
        ready: str = ".attn-drag circle.attn-drag__s",
        root: str = ".attn-drag",
        tabs: Tabs | None = None,
    ) -> None:
        self.label = f"{width}px-{mode}"
        self.rel, self.window, self.mode = page, (width, 900), mode
        self._ready, self._root = ready, root
        self._own_tabs = tabs is None
        self.tabs = Tabs(chromium, base) if tabs is None else tabs
        self._open()

    def _open(self) -> None:
        """Load the page (again) in its tab: settled (:meth:`Tabs.open`: widgets drawn, MathJax
        done, in colour ``mode``), the widget scrolled into view; what went wrong while loading
        is kept in ``loading_problems``."""
        self.tab = self.tabs.open(self.rel, self.window, self.mode)
        self._load = self.tab.loads
        self.page = self.tab.page
        self.page.wait_for_selector(self._ready)  # the widget drawn
        self.root = self.page.query_selector(self._root)
        self.root.scroll_into_view_if_needed()
        self.loading_problems = list(self.tab.problems)
        self.opened = self.snapshot()
        #: Set when a test failed on the page: the next one gets it loaded anew.
        self.spoiled = False
        #: Whether a test has had the page since it was (re)loaded.
        self.handed = False

    @property
    def problems(self) -> list[str]:
        """What went wrong on the page: loading it, and since the test began (console errors,
        uncaught exceptions, failed requests, requests outside the site, blocked)."""
        return self.tab.problems

    def geometry(self) -> dict:
        return self.page.evaluate(JS_GEOMETRY, self.root)

    def snapshot(self) -> dict:
        """What tells this page from the page as it was opened: its controls, focus and scroll
        (JS_PAGE_STATE) and what the widget draws (:meth:`geometry`)."""
        return {"page": self.page.evaluate(JS_PAGE_STATE, self.root), "drawn": self.geometry()}

    def restore(self) -> None:
        """The page as it was opened, for the next test: the controls set back as a reader
        would, the focus let go, the mouse out of the window, the page scrolled back; loaded
        anew if that does not give the opened state, if a test failed on it or if its tab has
        loaded another page since. Only what went wrong while loading stays in ``problems``."""
        if self.tab.loads != self._load:
            self._open()
        elif self.spoiled:
            self.page.mouse.up()  # were a button left down
            self._open()
        elif self.handed:
            self.page.mouse.move(-1, -1)  # out of the window: nothing hovered
            if self.snapshot() != self.opened:
                self.page.evaluate(JS_RESTORE, [self.root, self.opened["page"]])
                if self.snapshot() != self.opened:
                    self._open()
        self.handed = True
        self.tab.problems = list(self.loading_problems)

    def figure_png(self) -> bytes:
        """The figure as drawn on screen (brought into view first)."""
        figure = self.root.query_selector(self.FIGURE)
        return self.page.screenshot(clip=self.page.evaluate(JS_INTO_VIEW, figure))

    def close(self) -> None:
        """Close the page's tab if it has its own (the module's tabs close with the module)."""
        if self._own_tabs:
            self.tabs.close()


def handed_over(request: pytest.FixtureRequest, ex: Explorable) -> Iterator[Any]:
    """``ex`` as it was opened, for one test (the body of the function-scoped fixtures that hand
    a module's pages to its tests); after a failed test, the page is loaded anew for the next."""
    ex.restore()
    failed = request.session.testsfailed
    yield ex
    if request.session.testsfailed > failed:  # this test's report is in (teardown comes after)
        ex.spoiled = True


@pytest.fixture(scope="module")
def tabs(browser: Any, site: str) -> Iterator[Tabs]:  # noqa: F811
    """One tab per width and colour mode, in which the module loads its pages (:mod:`site_tabs`)."""
    shared = Tabs(browser, site)
    try:
        yield shared
    finally:
        shared.close()


#: The (width, colour mode) pairs every explorable is tested at: a desktop and a phone, each mode.
LOOKS = ((1280, "light"), (390, "dark"), (1280, "dark"), (390, "light"))


def kept_open(page: Explorable) -> Iterator[Explorable]:
    """``page`` for the module's tests, closed after them (the body of the module fixtures)."""
    try:
        yield page
    finally:
        page.close()


@pytest.fixture(
    scope="module",
    params=[on_one_worker(look, f"front-ends:{look[0]}px-{look[1]}") for look in LOOKS],
)
def opened_explorable(request: Any, browser: Any, site: str, tabs: Tabs) -> Iterator[Explorable]:  # noqa: F811
    """score_functions' explorable at one width and mode, opened once per module and process."""
    width, mode = request.param
    yield from kept_open(Explorable(browser, site, width, mode, tabs=tabs))


@pytest.fixture
def explorable_page(
    request: pytest.FixtureRequest, opened_explorable: Explorable
) -> Iterator[Explorable]:
    yield from handed_over(request, opened_explorable)


def _to_data(geometry: dict) -> tuple[Any, Any]:
    """The drawn positions of s_{t-1} and c_t in data units, read off via the h_i dots.

    The h_i are drawn at known data positions; an affine fit per axis from them to the SVG
    gives the figure's scale, which turns the drawn s and c back into numbers.
    """
    h = np.array(explorable.DEFAULT_H)
    dots = np.array(geometry["dots"])
    fits = [np.polyfit(h[:, k], dots[:, k], 1) for k in range(2)]
    for k in range(2):
        residual = np.abs(np.polyval(fits[k], h[:, k]) - dots[:, k]).max()
        assert residual < 1e-6, f"the h_i dots are not drawn at their positions (axis {k})"
    inv = lambda p: np.array([(p[k] - fits[k][1]) / fits[k][0] for k in range(2)])  # noqa: E731
    return inv(geometry["s"]), inv(geometry["c"])


def _check_drawn(geometry: dict, where: str) -> None:
    """The figure and table show the controls' values and attnlib's step for them."""
    s_slider = np.array(geometry["sliders"][:2])
    beta = geometry["sliders"][2]
    score = geometry["score"]
    ref = attention_step(s_slider, explorable.DEFAULT_H, score=score, beta=beta)
    s_drawn, c_drawn = _to_data(geometry)
    assert np.allclose(s_drawn, s_slider, atol=1e-3), (
        f"{where}: s drawn at {s_drawn}, sliders {s_slider}"
    )
    assert np.allclose(geometry["data"]["s"], s_slider, atol=1e-9), where
    assert np.allclose(c_drawn, ref.c, atol=1e-3), f"{where}: c drawn at {c_drawn}, attnlib {ref.c}"
    np.testing.assert_allclose(geometry["data"]["e"], ref.e, atol=TOL, err_msg=where)
    np.testing.assert_allclose(geometry["data"]["alpha"], ref.alpha, atol=TOL, err_msg=where)
    np.testing.assert_allclose(geometry["data"]["c"], ref.c, atol=TOL, err_msg=where)
    assert np.allclose(geometry["alpha_text"], ref.alpha, atol=0.0051), f"{where}: table α"
    assert np.allclose(geometry["e_text"], ref.e, atol=0.0051), f"{where}: table e"
    assert np.allclose(geometry["bars"], ref.alpha, atol=0.001), f"{where}: bar lengths"
    order = np.argsort(ref.alpha)
    assert np.all(np.diff(np.array(geometry["radii"])[order]) >= -1e-9), f"{where}: dot sizes"
    top = int(ref.alpha.argmax())
    assert f"on “{explorable.DEFAULT_TOKENS[top]}”" in geometry["summary"], geometry["summary"]


@pytest.mark.slow
def test_the_explorable_is_drawn_offline_from_its_saved_state(explorable_page: Explorable) -> None:
    g = explorable_page.geometry()
    assert g["score"] == "dot", g
    assert g["sliders"] == [1.0, 1.0, 1.0], g
    _check_drawn(g, "initial picture")
    box = explorable_page.root.bounding_box()
    width = explorable_page.page.viewport_size["width"]
    assert box is not None
    assert box["x"] >= 0, f"overflows: {box}"
    assert box["x"] + box["width"] <= width + 0.5, f"overflows: {box}"
    overflow = explorable_page.page.evaluate(
        "(r) => r.scrollWidth - r.clientWidth", explorable_page.root
    )
    assert overflow <= 0, f"the explorable is {overflow}px wider than its box"
    assert not explorable_page.problems, explorable_page.problems


@pytest.mark.slow
def test_the_browser_math_agrees_with_attnlib(explorable_page: Explorable) -> None:
    rng = np.random.default_rng(4)
    samples = [
        ([float(x) for x in rng.uniform(-3, 3, size=2)], score, float(beta))
        for score in explorable.SCORES
        for beta in (0.0, 0.35, 1.0, 2.5, 4.0)
        for _ in range(4)
    ]
    got = explorable_page.page.evaluate(JS_SAMPLES, [explorable_page.root, samples])
    for (s, score, beta), js in zip(samples, got, strict=True):
        ref = attention_step(s, explorable.DEFAULT_H, score=score, beta=beta)
        for key, want in (("e", ref.e), ("alpha", ref.alpha), ("c", ref.c)):
            np.testing.assert_allclose(
                js[key], want, rtol=0, atol=TOL, err_msg=f"{key} at {s}, {score}, β={beta}"
            )


@pytest.mark.slow
def test_dragging_s_by_mouse_moves_the_figure(explorable_page: Explorable) -> None:
    ex = explorable_page
    before, png_before = ex.geometry(), ex.figure_png()
    start = ex.page.evaluate(JS_TO_SCREEN, [ex.root, *before["s"]])
    h = np.array(explorable.DEFAULT_H)
    dots = np.array(before["dots"])
    fits = [np.polyfit(h[:, k], dots[:, k], 1) for k in range(2)]
    for target in ((-1.5, 2.0), (2.4, -1.1)):
        svg_xy = [float(np.polyval(fits[k], target[k])) for k in range(2)]
        end = ex.page.evaluate(JS_TO_SCREEN, [ex.root, *svg_xy])
        ex.page.mouse.move(*start)
        ex.page.mouse.down()
        ex.page.mouse.move(*end, steps=15)
        ex.page.mouse.up()
        after = ex.geometry()
        assert np.allclose(after["sliders"][:2], target, atol=0.051), (after["sliders"], target)
        _check_drawn(after, f"after a mouse drag to {target}")
        start = end
    png_after = ex.figure_png()
    # For review (not committed): the figure before and after the drag, per width and mode.
    shots = ROOT / "tests" / "_artifacts" / "explorables"
    shots.mkdir(parents=True, exist_ok=True)
    (shots / f"attention_drag-{ex.label}-before.png").write_bytes(png_before)
    (shots / f"attention_drag-{ex.label}-after.png").write_bytes(png_after)
    assert png_after != png_before, "the figure did not change"
    assert after["data"]["alpha"] != before["data"]["alpha"]
    assert not ex.problems, ex.problems


@pytest.mark.slow
def test_every_control_works_by_keyboard_and_is_labelled(explorable_page: Explorable) -> None:
    ex = explorable_page
    page = ex.page
    s0 = page.get_by_role("slider", name="component 1")
    s1 = page.get_by_role("slider", name="component 2")
    beta = page.get_by_role("slider", name="sharpness β")
    dot = page.get_by_role("radio", name=re.compile(r"^dot"))
    additive = page.get_by_role("radio", name=re.compile(r"^additive"))
    for control in (s0, s1, beta, dot, additive):
        assert control.count() == 1
    assert page.get_by_role("group", name=re.compile("Score e")).count() == 1

    # (control, keys, what the controls must read afterwards, given what they read before)
    steps = [
        (
            s0,
            ["ArrowLeft"] * 10,
            lambda g0, g: g["sliders"][0] == pytest.approx(g0["sliders"][0] - 0.5),
        ),
        (
            s1,
            ["ArrowDown"] * 12,
            lambda g0, g: g["sliders"][1] == pytest.approx(g0["sliders"][1] - 0.6),
        ),
        (
            beta,
            ["ArrowRight"] * 20,
            lambda g0, g: g["sliders"][2] == pytest.approx(min(4.0, g0["sliders"][2] + 1.0)),
        ),
        (None, ["ArrowDown"], lambda g0, g: g["score"] != g0["score"]),
        (s0, ["End"], lambda g0, g: g["sliders"][0] == pytest.approx(3.0)),
        (beta, ["Home"], lambda g0, g: g["sliders"][2] == 0.0),
    ]
    # what the figure and the controls show before each step: after the one before it
    after, png_after = ex.geometry(), ex.figure_png()
    for control, keys, expected in steps:
        before, png_before = after, png_after
        # the score's radio group: arrow keys move from the checked radio to the other
        (control or (dot if before["score"] == "dot" else additive)).focus()
        for key in keys:
            page.keyboard.press(key)
        after, png_after = ex.geometry(), ex.figure_png()
        what = (
            f"{keys[0]} ×{len(keys)}: {before['sliders']} -> {after['sliders']}, {after['score']}"
        )
        assert expected(before, after), what
        _check_drawn(after, what)
        assert png_after != png_before, f"{what}: the figure did not change"
    # β = 0: every weight 1/T_x, c_t the mean of the h_i
    np.testing.assert_allclose(after["data"]["alpha"], 0.25, atol=TOL)
    assert not ex.problems, ex.problems


def _assert_axe_finds_nothing(ex: Explorable, selector: str) -> None:
    """axe-core on the widget ``selector``: no moderate, serious or critical violation."""
    ex.page.add_script_tag(path=str(AXE))
    violations = ex.page.evaluate(RUN_AXE_ON, [selector, ["moderate", "serious", "critical"]])
    assert not violations, violations
    assert not ex.problems, ex.problems


@pytest.mark.slow
def test_the_explorable_is_accessible(explorable_page: Explorable) -> None:
    """axe-core on the widget, colour contrast included, at both widths and in both modes."""
    _assert_axe_finds_nothing(explorable_page, ".attn-drag")


def measure_moves(
    ex: Explorable, moves: int = 120, *, layout: bool = True
) -> dict[str, list[float]]:
    """Per-move cost in ms: real mouse moves (the widget's own ``performance.now()`` timing of
    event -> redrawn figure) and, if ``layout``, scripted slider moves with style and layout
    forced (the benchmark's second row; the tests read only the mouse moves)."""
    ex.page.evaluate("(r) => { r.attnExplorable.costs.length = 0; }", ex.root)
    g = ex.geometry()
    start = ex.page.evaluate(JS_TO_SCREEN, [ex.root, *g["s"]])
    corner = ex.page.evaluate(JS_TO_SCREEN, [ex.root, *g["dots"][1]])
    other = ex.page.evaluate(JS_TO_SCREEN, [ex.root, *g["dots"][3]])
    ex.page.mouse.move(*start)
    ex.page.mouse.down()
    ex.page.mouse.move(*corner, steps=moves // 2)
    ex.page.mouse.move(*other, steps=moves - moves // 2)
    ex.page.mouse.up()
    mouse = ex.page.evaluate("(r) => r.attnExplorable.costs.slice()", ex.root)
    if not layout:
        return {"mouse": mouse}
    return {"mouse": mouse, "layout": ex.page.evaluate(JS_LAYOUT_COST, [ex.root, moves])}


@pytest.mark.slow
def test_a_mouse_drag_is_handled_move_by_move(explorable_page: Explorable) -> None:
    """Most of 120 mouse moves reach the widget as moves it redraws for (its own record of each,
    which bench/bench_explorable.py times; the time of a move is a benchmark, not a test)."""
    moves = measure_moves(explorable_page, layout=False)
    assert len(moves["mouse"]) >= 60, f"only {len(moves['mouse'])} of 120 mouse moves were handled"


@pytest.mark.slow
def test_the_built_page_is_the_chapter_with_the_explorable() -> None:
    """Guards the slow tests' assumption (the page and its saved anywidget state)."""
    page = SITE / PAGE
    if not page.is_file():
        pytest.skip(f"no built site with {PAGE}: run `make book` first")
    html = page.read_text(encoding="utf-8")
    assert '"model_module": "anywidget"' in html
    assert (
        "_static/anywidget_static.js" in html
    )  # offline_site: no widget manager on anywidget-only pages
    assert "embed-amd.js" not in html
    assert "require.js" not in html  # no widget manager, and no RequireJS to load one
    # The front end travels in the saved state, which the execution cache keeps: a page built
    # before the last edit of the assets would test old JavaScript.
    m = re.search(
        r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', html, re.S
    )
    assert m, "no saved widget state in the page"
    [state] = [
        model["state"]
        for model in json.loads(m.group(1))["state"].values()
        if model["model_module"] == "anywidget"
    ]
    for key, name in (("_esm", "attention_drag.js"), ("_css", "attention_drag.css")):
        assert state[key] == (explorable.ASSETS / name).read_text(encoding="utf-8"), (
            f"the built page has an old {name}: clear the cached execution of score_functions "
            "(_build/.jupyter_cache) and rebuild"
        )


def test_assets_are_small() -> None:
    """A page carries its widget's front end (ES module and stylesheet) in its saved state."""
    sizes = {p.name: p.stat().st_size for p in ASSETS.iterdir() if p.suffix in {".js", ".css"}}
    fronts: dict[str, int] = {}
    for name, size in sizes.items():
        fronts[name.rsplit(".", 1)[0]] = fronts.get(name.rsplit(".", 1)[0], 0) + size
    assert set(fronts) == {"attention_drag", "sliders", "translate"}, sizes
    assert max(fronts.values()) < 20_000, fronts
    assert sum(sizes.values()) < 50_000, sizes


# =========================================================================== the slider explorers
# attnlib.explorables.sliders' three explorers (attention_step, softmax, entropy): one ES module
# (sliders.js), three views.
# Each is opened offline on its built page at both widths and in both modes; its sliders are
# dragged by mouse and moved by keyboard; what is drawn (bar heights read off the SVG through its
# axis ticks, the frame of the heatmap, the texts) is checked against attnlib.core computed here
# for the values the sliders show.

SLIDER_PAGES = {
    "step": "chapters/attention_step.html",
    "softmax": "chapters/softmax.html",
    "temperature": "chapters/entropy.html",
}
SLIDER_ASSETS = ("sliders.js", "sliders.css")

JS_SLIDER_GEOMETRY = """
(root) => {
  const attr = (el, a) => parseFloat(el.getAttribute(a));
  const panels = {};
  for (const svg of root.querySelectorAll('svg[data-panel]')) {
    panels[svg.dataset.panel] = {
      ticks: [...svg.querySelectorAll('line.xp-sl__tick')].map(t => [parseFloat(t.dataset.value), attr(t, 'y1')]),
      bars: [...svg.querySelectorAll('rect.xp-sl__bar')].map(b => [attr(b, 'y'), attr(b, 'height')]),
      top: [...svg.querySelectorAll('rect.xp-sl__bar')].map(b => b.classList.contains('xp-sl__bar--top')),
      ceiling: [...svg.querySelectorAll('line.xp-sl__ceiling')].map(l => attr(l, 'y1')),
      cells: [...new Set([...svg.querySelectorAll('rect.xp-sl__cell')].map(c => attr(c, 'y')))].sort((a, b) => a - b),
      frame: svg.querySelector('rect.xp-sl__frame') ? attr(svg.querySelector('rect.xp-sl__frame'), 'y') : null,
      notes: [...svg.querySelectorAll('text.xp-sl__note')].map(t => t.textContent),
      title: svg.querySelector('title').textContent,
    };
  }
  return {
    view: root.dataset.view,
    sliders: [...root.querySelectorAll('input[type=range]')].map(r => r.valueAsNumber),
    outputs: [...root.querySelectorAll('output')].map(o => parseFloat(o.textContent.replace('−', '-'))),
    panels,
    current: JSON.parse(root.dataset.current),
    summary: root.querySelector('.xp-sl__summary').textContent,
  };
}
"""

JS_SLIDER_MATH = """
([root, samples]) => samples.map(([e, beta]) => {
  const m = root.xpSliders;
  const a = m.softmax(e), b = m.sharpened(e, beta);
  return {softmax: a, sharpened: b, H: m.entropy(b), H_of_softmax: m.entropy(a), top: m.argmax(b)};
})
"""

#: Move the first slider n times by script, each move followed by a forced style and layout.
JS_SLIDER_LAYOUT_COST = """
([root, n]) => {
  const slider = root.querySelector('input[type=range]');
  const lo = parseFloat(slider.min), hi = parseFloat(slider.max), step = parseFloat(slider.step);
  const count = Math.round((hi - lo) / step);
  const out = [];
  for (let k = 0; k < n; k++) {
    const t0 = performance.now();
    slider.value = lo + ((k * 7 + 1) % (count + 1)) * step;
    slider.dispatchEvent(new Event('input', {bubbles: true}));
    root.getBoundingClientRect();
    document.body.offsetHeight;
    out.push(performance.now() - t0);
  }
  return out;
}
"""


def _saved_anywidgets(rel: str) -> list[dict]:
    """The state of every anywidget saved in a built page (the kernel's data, not the JS's)."""
    html = (SITE / rel).read_text(encoding="utf-8")
    m = re.search(
        r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', html, re.S
    )
    assert m, f"no saved widget state in {rel}"
    return [
        model["state"]
        for model in json.loads(m.group(1))["state"].values()
        if model["model_module"] == "anywidget"
    ]


def _saved_state(view: str) -> dict:
    """The explorer's model state as saved in its built page."""
    states = [s for s in _saved_anywidgets(SLIDER_PAGES[view]) if s.get("view") == view]
    assert len(states) == 1, f"expected one {view} explorer, found {len(states)}"
    return states[0]


class SliderExplorer(Explorable):
    FIGURE = ".xp-sl__figure"

    def __init__(
        self,
        chromium: Any,
        base: str,
        width: int,
        mode: str,
        view: str,
        *,
        tabs: Tabs | None = None,
    ) -> None:
        super().__init__(
            chromium,
            base,
            width,
            mode,
            page=SLIDER_PAGES[view],
            ready=f".xp-sl--{view} rect.xp-sl__bar",
            root=f".xp-sl--{view}",
            tabs=tabs,
        )
        self.view = view
        self.label = f"{view}-{width}px-{mode}"
        self.state = _saved_state(view)

    def geometry(self) -> dict:
        return self.page.evaluate(JS_SLIDER_GEOMETRY, self.root)

    def sliders(self) -> list[Any]:
        return self.root.query_selector_all("input[type=range]")


@pytest.fixture(
    scope="module",
    params=[
        on_one_worker((view, width, mode), f"front-ends:{view}-{width}px-{mode}")
        for view in SLIDER_PAGES
        for width, mode in LOOKS
    ],
)
def opened_slider(request: Any, browser: Any, site: str, tabs: Tabs) -> Iterator[SliderExplorer]:  # noqa: F811
    """A slider explorer at one width and mode, opened once per module and process."""
    view, width, mode = request.param
    yield from kept_open(SliderExplorer(browser, site, width, mode, view, tabs=tabs))


@pytest.fixture
def slider_page(
    request: pytest.FixtureRequest, opened_slider: SliderExplorer
) -> Iterator[SliderExplorer]:
    yield from handed_over(request, opened_slider)


def _bar_values(panel: dict) -> np.ndarray:
    """Bar values read off the SVG: a linear fit of the y ticks turns y back into data."""
    ticks = np.array(panel["ticks"])
    fit = np.polyfit(ticks[:, 1], ticks[:, 0], 1)
    assert np.abs(np.polyval(fit, ticks[:, 1]) - ticks[:, 0]).max() < 1e-6, "uneven y axis"
    out = []
    for y, height in panel["bars"]:
        top, bottom = np.polyval(fit, y), np.polyval(fit, y + height)
        out.append(top + bottom)  # one end of a bar is at 0
    return np.array(out)


def _y_of(panel: dict, value: float) -> float:
    ticks = np.array(panel["ticks"])
    return float(np.polyval(np.polyfit(ticks[:, 0], ticks[:, 1], 1), value))


def _check_slider_drawn(ex: SliderExplorer, g: dict, where: str) -> None:
    """The figure shows what attnlib gives for the values the sliders show."""
    assert g["view"] == ex.view
    np.testing.assert_allclose(g["outputs"], g["sliders"], atol=0.0051, err_msg=where)
    np.testing.assert_allclose(g["current"]["controls"], g["sliders"], atol=1e-9, err_msg=where)
    if ex.view == "softmax":
        e = np.array(g["sliders"])
        alpha = al.softmax(e)
        np.testing.assert_allclose(_bar_values(g["panels"]["scores"]), e, atol=1e-6, err_msg=where)
        np.testing.assert_allclose(
            _bar_values(g["panels"]["weights"]), alpha, atol=1e-6, err_msg=where
        )
        np.testing.assert_allclose(g["current"]["alpha"], alpha, atol=TOL, err_msg=where)
        assert g["panels"]["weights"]["notes"] == ["Σᵢ αₜᵢ = 1.000"], where
        assert g["panels"]["weights"]["ceiling"][0] == pytest.approx(
            _y_of(g["panels"]["weights"], 1.0)
        )
        labels = ex.state["labels"]
        assert f"{labels[0]}: e = {e[0]:.2f}".replace("-", "−") in g["summary"], g["summary"]
    elif ex.view == "temperature":
        [beta] = g["sliders"]
        e = np.array(ex.state["e"])
        alpha = al.softmax(beta * e)
        H = float(al.entropy(alpha))
        logT = np.log(len(e))
        np.testing.assert_allclose(
            _bar_values(g["panels"]["weights"]), alpha, atol=1e-6, err_msg=where
        )
        np.testing.assert_allclose(_bar_values(g["panels"]["entropy"]), [H], atol=1e-6)
        np.testing.assert_allclose(g["current"]["alpha"], alpha, atol=TOL, err_msg=where)
        assert g["current"]["H"] == pytest.approx(H, abs=TOL), where
        ceiling = g["panels"]["entropy"]["ceiling"][0]
        assert ceiling == pytest.approx(_y_of(g["panels"]["entropy"], logT)), (
            "ceiling not at log T_x"
        )
        assert f"H = {H:.3f} nats" in g["panels"]["weights"]["notes"][0], where
        top = int(np.argmax(alpha))
        assert g["panels"]["weights"]["top"] == [i == top for i in range(len(e))], where
    else:
        [t] = g["sliders"]
        assert t == int(t)
        row = np.array(ex.state["alpha"][int(t) - 1])
        np.testing.assert_allclose(_bar_values(g["panels"]["row"]), row, atol=1e-6, err_msg=where)
        np.testing.assert_allclose(g["current"]["alpha"], row, atol=TOL, err_msg=where)
        heat = g["panels"]["heatmap"]
        assert len(heat["cells"]) == len(ex.state["alpha"]), "one heatmap row per output step"
        assert heat["frame"] == pytest.approx(heat["cells"][int(t) - 1]), f"{where}: frame"
        top = int(np.argmax(row))
        assert g["panels"]["row"]["top"] == [i == top for i in range(len(row))], where
        word, src = ex.state["tgt_tokens"][int(t) - 1], ex.state["src_tokens"][top]
        assert f"Step t = {int(t)} emits “{word}”" in g["summary"], g["summary"]
        assert f"on “{src}”" in g["summary"], g["summary"]


@pytest.mark.slow
def test_slider_explorer_is_drawn_offline_from_its_saved_state(slider_page: SliderExplorer) -> None:
    ex = slider_page
    g = ex.geometry()
    if ex.view == "softmax":
        start = ex.state["e"]
    else:
        start = [ex.state["beta"]] if ex.view == "temperature" else [1]
    assert g["sliders"] == pytest.approx(start), g["sliders"]
    _check_slider_drawn(ex, g, "initial picture")
    box = ex.root.bounding_box()
    width = ex.page.viewport_size["width"]
    assert box is not None
    assert box["x"] >= 0
    assert box["x"] + box["width"] <= width + 0.5, f"overflows: {box}"
    overflow = ex.page.evaluate("(r) => r.scrollWidth - r.clientWidth", ex.root)
    assert overflow <= 0, f"the explorer is {overflow}px wider than its box"
    assert not ex.problems, ex.problems


@pytest.mark.slow
def test_slider_explorer_math_agrees_with_attnlib(slider_page: SliderExplorer) -> None:
    rng = np.random.default_rng(16)
    samples = [
        ([float(x) for x in rng.uniform(-6, 6, size=n)], float(beta))
        for n in (2, 3, 5, 9)
        for beta in (0.0, 0.3, 1.0, 4.7, 10.0)
    ]
    samples.append(([800.0, -800.0, 0.0], 1.0))  # no overflow: exp is taken after the shift
    samples.append(([1.0, 1.0, 1.0, 1.0], 3.0))  # a tie: the first position wins, as np.argmax
    got = slider_page.page.evaluate(JS_SLIDER_MATH, [slider_page.root, samples])
    for (e, beta), js in zip(samples, got, strict=True):
        where = f"e = {e}, β = {beta}"
        sharp = al.softmax(beta * np.array(e))
        np.testing.assert_allclose(js["softmax"], al.softmax(e), rtol=0, atol=TOL, err_msg=where)
        np.testing.assert_allclose(js["sharpened"], sharp, rtol=0, atol=TOL, err_msg=where)
        assert js["H"] == pytest.approx(float(al.entropy(sharp)), abs=TOL), where
        assert js["H_of_softmax"] == pytest.approx(float(al.entropy(al.softmax(e))), abs=TOL)
        assert js["top"] == int(np.argmax(sharp)), where


def _thumb_x(box: dict, lo: float, hi: float, value: float) -> float:
    """Where a range input's thumb sits for ``value`` (Chromium: thumb 16 px wide, inset 8 px)."""
    return box["x"] + 8 + (value - lo) / (hi - lo) * (box["width"] - 16)


@pytest.mark.slow
def test_dragging_each_slider_by_mouse_moves_the_figure(slider_page: SliderExplorer) -> None:
    ex = slider_page
    first, png_first = ex.geometry(), ex.figure_png()
    # what the figure and the sliders show before each drag: after the one before it
    after, png_after = first, png_first
    for k, slider in enumerate(ex.sliders()):
        before, png_before = after, png_after
        slider.scroll_into_view_if_needed()
        lo, hi = float(slider.get_attribute("min")), float(slider.get_attribute("max"))
        value = before["sliders"][k]
        target = lo + 0.8 * (hi - lo) if value < (lo + hi) / 2 else lo + 0.15 * (hi - lo)
        box = slider.bounding_box()
        y = box["y"] + box["height"] / 2
        ex.page.mouse.move(_thumb_x(box, lo, hi, value), y)
        ex.page.mouse.down()
        ex.page.mouse.move(_thumb_x(box, lo, hi, target), y, steps=12)
        ex.page.mouse.up()
        after, png_after = ex.geometry(), ex.figure_png()
        where = f"slider {k}: {value} -> {after['sliders'][k]} (aimed at {target:.2f})"
        step = float(slider.get_attribute("step"))
        assert abs(after["sliders"][k] - target) <= max(1.01 * step, 0.04 * (hi - lo)), where
        _check_slider_drawn(ex, after, where)
        assert png_after != png_before, f"{where}: the figure did not change"
    png_last = png_after
    # For review (not committed): the figure before and after the drags, per width and mode.
    shots = ROOT / "tests" / "_artifacts" / "explorables"
    shots.mkdir(parents=True, exist_ok=True)
    (shots / f"{ex.label}-before.png").write_bytes(png_first)
    (shots / f"{ex.label}-after.png").write_bytes(png_last)
    assert after["current"] != first["current"]
    assert not ex.problems, ex.problems


@pytest.mark.slow
def test_every_slider_works_by_keyboard_and_is_labelled(slider_page: SliderExplorer) -> None:
    ex = slider_page
    page = ex.page
    if ex.view == "softmax":
        names = [f"score eₜᵢ ({n})" for n in ex.state["labels"]]
    else:
        names = ["sharpness β"] if ex.view == "temperature" else ["output step t"]
    sliders = ex.sliders()
    assert len(sliders) == len(names)
    for name in names:  # the accessible name comes from the <label>
        assert page.get_by_role("slider", name=name, exact=True).count() == 1, name
    # what the figure and the sliders show before each step: after the one before it
    after, png_after = ex.geometry(), ex.figure_png()
    for k, slider in enumerate(sliders):
        lo, hi = float(slider.get_attribute("min")), float(slider.get_attribute("max"))
        step = float(slider.get_attribute("step"))
        for keys, expect in (
            (["Home"], lambda v0: lo),  # noqa: B023
            (["ArrowRight"] * 3, lambda v0: min(hi, v0 + 3 * step)),  # noqa: B023
            (["End"], lambda v0: hi),  # noqa: B023
            (["ArrowLeft"], lambda v0: hi - step),  # noqa: B023
        ):
            before, png_before = after, png_after
            slider.focus()
            for key in keys:
                page.keyboard.press(key)
            after, png_after = ex.geometry(), ex.figure_png()
            v0, v1 = before["sliders"][k], after["sliders"][k]
            where = f"slider {k}, {keys[0]} ×{len(keys)}: {v0} -> {v1}"
            assert v1 == pytest.approx(expect(v0), abs=1e-9), where
            _check_slider_drawn(ex, after, where)
            if v1 != v0:
                assert png_after != png_before, f"{where}: the figure did not change"
    if ex.view == "step":
        assert sliders[0].get_attribute("aria-valuetext").startswith("step ")
    assert not ex.problems, ex.problems


@pytest.mark.slow
def test_slider_explorer_is_accessible(slider_page: SliderExplorer) -> None:
    ex = slider_page
    ex.page.add_script_tag(path=str(AXE))
    selector = f".xp-sl--{ex.view}"
    violations = ex.page.evaluate(RUN_AXE_ON, [selector, ["moderate", "serious", "critical"]])
    assert not violations, violations
    for title in ex.page.eval_on_selector_all(
        f"{selector} svg title", "(ts) => ts.map(t => t.textContent)"
    ):
        assert len(title) > 30, f"figure without a description: {title!r}"
    assert not ex.problems, ex.problems


def measure_slider_moves(
    ex: SliderExplorer, moves: int = 120, *, layout: bool = True
) -> dict[str, list[float]]:
    """Per-move cost in ms: a real mouse drag of the first slider (the widget's own timing of
    input event -> redrawn figure) and, if ``layout``, scripted moves with style and layout
    forced (the benchmark's second row; the tests read only the mouse moves)."""
    ex.page.evaluate("(r) => { r.xpSliders.costs.length = 0; }", ex.root)
    slider = ex.sliders()[0]
    slider.scroll_into_view_if_needed()
    lo, hi = float(slider.get_attribute("min")), float(slider.get_attribute("max"))
    box = slider.bounding_box()
    y = box["y"] + box["height"] / 2
    value = ex.geometry()["sliders"][0]
    ex.page.mouse.move(_thumb_x(box, lo, hi, value), y)
    ex.page.mouse.down()
    for k in range(moves):  # back and forth over the whole range
        frac = abs(((k / 30) % 2) - 1)
        ex.page.mouse.move(_thumb_x(box, lo, hi, lo + frac * (hi - lo)), y)
    ex.page.mouse.up()
    mouse = ex.page.evaluate("(r) => r.xpSliders.costs.slice()", ex.root)
    if not layout:
        return {"mouse": mouse}
    return {"mouse": mouse, "layout": ex.page.evaluate(JS_SLIDER_LAYOUT_COST, [ex.root, moves])}


@pytest.mark.slow
def test_a_slider_drag_is_handled_move_by_move(slider_page: SliderExplorer) -> None:
    """A drag over the whole range changes the slider many times, each change a redraw the widget
    records (bench/bench_explorable.py times them; the time is a benchmark, not a test)."""
    moves = measure_slider_moves(slider_page, layout=False)
    # a drag over a slider with few values (the step slider) fires one event per new value only
    assert len(moves["mouse"]) >= 5, f"only {len(moves['mouse'])} mouse moves changed the slider"


@pytest.mark.slow
@pytest.mark.parametrize("view", list(SLIDER_PAGES))
def test_the_built_page_carries_the_current_front_end(view: str) -> None:
    page = SITE / SLIDER_PAGES[view]
    if not page.is_file():
        pytest.skip(f"no built site with {SLIDER_PAGES[view]}: run `make book` first")
    html = page.read_text(encoding="utf-8")
    assert (
        "_static/anywidget_static.js" in html
    )  # offline_site: no widget manager on anywidget-only pages
    assert "embed-amd.js" not in html
    state = _saved_state(view)
    for key, name in zip(("_esm", "_css"), SLIDER_ASSETS, strict=True):
        assert state[key] == (explorable.ASSETS / name).read_text(encoding="utf-8"), (
            f"the built page has an old {name}: clear the chapter's cached execution "
            "(_build/.jupyter_cache) and rebuild"
        )
    # the old kernel-rendered PNG widget is gone: nothing on the page waits for a kernel
    assert "@jupyter-widgets/controls" not in html or '"_model_name": "ImageModel"' not in html


# =========================================================================== the translate form
# attnlib.explorables.translate's TranslateWidget (real_alignments): one anywidget whose work is done by the
# kernel. Without a site: its front end (translate.js) against a stand-in model in a blank page,
# playing the kernel's part (answers to the "translate" message) and the static page's (no kernel).
# With the built site: the chapter's page draws it from the saved state (anywidget_static.js), and
# says that translating needs the notebook running when the learner asks for a new sentence.

TRANSLATE_PAGE = "chapters/real_alignments.html"
STATIC_NOTE = "needs the notebook running"

#: Loads translate.js as anywidget_static.js does and renders it against a stand-in model that
#: records what the front end sends; ``window.fake`` lets the test answer as the kernel would.
JS_FAKE_MODEL = """
async ([src, values, isStatic]) => {
  const url = URL.createObjectURL(new Blob([src], {type: 'text/javascript'}));
  const widget = (await import(url)).default;
  const handlers = {};
  const sent = [];
  const fire = (event, arg) => (handlers[event] || []).slice().forEach((f) => f(arg));
  const model = {
    get: (k) => values[k],
    set(k, v) { values[k] = v; fire('change:' + k, v); fire('change', v); },
    on(e, f) { (handlers[e] = handlers[e] || []).push(f); },
    off(e, f) { handlers[e] = (handlers[e] || []).filter((g) => g !== f); },
    save_changes() { sent.push({saved: true}); },
    send(msg) { sent.push(msg); },
    widget_manager: isStatic ? {static: true} : {},
  };
  window.fake = {model, sent, fire};
  widget.render({model, el: document.getElementById('host')});
}
"""

#: What the form shows, read off the DOM.
JS_FORM = """
(root) => {
  const q = (s) => root.querySelector(s);
  const label = (input) => root.querySelector(`label[for="${input.id}"]`).textContent;
  const img = q('img.xp-tr__figure');
  return {
    sentence: q('input[type=text]').value,
    sentenceLabel: label(q('input[type=text]')),
    k: q('input[type=range]').valueAsNumber,
    kMin: q('input[type=range]').min, kMax: q('input[type=range]').max,
    kLabel: label(q('input[type=range]')),
    kShown: q('output').textContent,
    button: q('button').textContent, disabled: q('button').disabled,
    busy: q('.xp-tr__out').getAttribute('aria-busy'),
    summary: q('.xp-tr__summary').innerHTML,
    summaryShown: !q('.xp-tr__summary').hidden,
    table: q('.xp-tr__table').innerHTML,
    tableShown: !q('.xp-tr__table').hidden && q('.xp-tr__table').offsetHeight > 0,
    figure: img.getAttribute('src'), alt: img.alt,
    figureShown: !img.hidden && img.offsetHeight > 0,
    figureWidth: img.naturalWidth,
    problem: q('[role=alert]').hidden ? null : q('[role=alert]').textContent,
    note: q('[role=status]').textContent,
  };
}
"""


def _png_base64(width: int = 60, height: int = 40, colour: str = "navy") -> str:
    import base64
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _first_values() -> dict[str, Any]:
    return {
        "sentence": "The red car is mine.",
        "k": 5,
        "max_beam": 10,
        "placeholder": "Type an English sentence",
        "summary": "<p><b>French</b> (beam size k = 5): La voiture rouge est à moi.</p>",
        "table": "<details><summary>The numbers</summary><table><tbody><tr><td>1</td></tr></tbody></table>"
        "</details>",
        "png": _png_base64(),
        "alt": "Heatmap of the attention weights α_ti: first picture",
        "problem": None,
        "busy": False,
    }


class FakeForm:
    """translate.js in a blank page, against a stand-in model (no kernel, no site)."""

    def __init__(self, browser: Any, *, static: bool) -> None:  # noqa: F811
        self.context = browser.new_context(viewport={"width": 900, "height": 900})
        self.context.set_default_timeout(BACKSTOP_MS)  # every wait below ends on an event
        self.page = self.context.new_page()
        self.problems: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.problems.append(m.text))
        self.page.on("pageerror", lambda exc: self.problems.append(f"uncaught: {exc}"))
        self.page.set_content('<!doctype html><html lang="en"><body><div id="host"></div></body>')
        css = (explorable.ASSETS / "translate.css").read_text(encoding="utf-8")
        self.page.add_style_tag(content=css)
        src = (explorable.ASSETS / "translate.js").read_text(encoding="utf-8")
        self.values = _first_values()
        self.page.evaluate(JS_FAKE_MODEL, [src, self.values, static])
        self.root = self.page.wait_for_selector(".xp-tr")

    def form(self) -> dict:
        return self.page.evaluate(JS_FORM, self.root)

    def sent(self) -> list[dict]:
        return self.page.evaluate("window.fake.sent.slice()")

    def kernel_sets(self, **values: Any) -> None:
        """The kernel's updates arrive (one change event per trait, as Backbone fires them)."""
        self.page.evaluate(
            "(vs) => { for (const [k, v] of Object.entries(vs)) window.fake.model.set(k, v); }",
            values,
        )

    def kernel_done(self) -> None:
        self.page.evaluate("window.fake.fire('msg:custom', {type: 'done'})")

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def fake_form(browser: Any) -> Iterator[FakeForm]:  # noqa: F811
    form = FakeForm(browser, static=False)
    try:
        yield form
    finally:
        form.close()


@pytest.mark.slow
def test_translate_form_shows_the_model_and_is_labelled(fake_form: FakeForm) -> None:
    f = fake_form.form()
    first = _first_values()
    assert f["sentence"] == first["sentence"]
    assert f["sentenceLabel"] == "English sentence"
    assert (f["k"], f["kMin"], f["kMax"], f["kShown"]) == (5, "1", "10", "5")
    assert "k" in f["kLabel"].split()
    assert f["button"] == "Translate"
    assert not f["disabled"]
    assert f["busy"] == "false"
    assert f["summary"] == first["summary"]
    assert f["table"] == first["table"]
    assert f["figure"] == "data:image/png;base64," + first["png"]
    assert f["figureWidth"] == 60
    assert f["alt"] == first["alt"]
    assert f["figureShown"]
    assert f["tableShown"]
    assert f["problem"] is None
    assert f["note"] == ""
    assert fake_form.sent() == []  # drawing sends nothing
    assert not fake_form.problems, fake_form.problems


@pytest.mark.slow
def test_translate_form_asks_the_kernel_and_is_busy_until_it_answers(fake_form: FakeForm) -> None:
    page = fake_form.page
    box = fake_form.root.query_selector("input[type=text]")
    box.fill("I see it.")
    box.press("Enter")
    assert fake_form.sent() == [{"type": "translate", "sentence": "I see it.", "k": 5}]
    f = fake_form.form()
    assert f["disabled"]
    assert f["busy"] == "true"
    assert "Translating" in f["note"]
    # the kernel's answer: new traits, then "done"
    png = _png_base64(90, 50, "orange")
    new = {
        "summary": "<p><b>French</b> (beam size k = 5): Je le vois.</p>",
        "table": "<details><summary>t</summary></details>",
        "png": png,
        "alt": "Heatmap of the attention weights α_ti: second picture",
        "sentence": "I see it.",
    }
    fake_form.kernel_sets(busy=True, **new)
    assert fake_form.form()["disabled"]  # still the kernel's turn
    fake_form.kernel_sets(busy=False)
    fake_form.kernel_done()
    f = fake_form.form()
    assert not f["disabled"]
    assert f["busy"] == "false"
    assert f["note"] == ""
    assert f["summary"] == new["summary"]
    assert f["figure"] == "data:image/png;base64," + png
    assert f["figureWidth"] == 90
    assert f["alt"] == new["alt"]
    # the button on an unchanged sentence asks again; so does a new k, from the keyboard
    fake_form.root.query_selector("button").click()
    fake_form.kernel_done()
    fake_form.root.query_selector("input[type=range]").focus()
    page.keyboard.press("ArrowRight")
    assert fake_form.form()["kShown"] == "6"
    fake_form.kernel_done()
    assert fake_form.sent()[1:] == [
        {"type": "translate", "sentence": "I see it.", "k": 5},
        {"type": "translate", "sentence": "I see it.", "k": 6},
    ]
    assert not fake_form.problems, fake_form.problems


@pytest.mark.slow
def test_translate_form_shows_a_problem_without_the_old_figure(fake_form: FakeForm) -> None:
    box = fake_form.root.query_selector("input[type=text]")
    box.fill("   ")
    box.press("Enter")
    why = "There is nothing to translate: type an English sentence"
    fake_form.kernel_sets(problem=why, summary="", table="", png="", alt="")
    fake_form.kernel_done()
    f = fake_form.form()
    assert f["problem"] == f"Cannot translate: {why}"
    assert not f["figureShown"]
    assert not f["tableShown"]
    assert not f["summaryShown"]
    assert f["figure"] is None
    assert not f["disabled"]
    # and a result replaces it
    fake_form.kernel_sets(**{k: v for k, v in _first_values().items() if k != "k"})
    f = fake_form.form()
    assert f["problem"] is None
    assert f["figureShown"]
    assert f["tableShown"]
    assert not fake_form.problems, fake_form.problems


@pytest.mark.slow
def test_translate_form_knows_when_no_kernel_is_there(browser: Any) -> None:  # noqa: F811
    form = FakeForm(browser, static=True)
    try:
        first = _first_values()
        box = form.root.query_selector("input[type=text]")
        box.fill("I see it.")
        box.press("Enter")
        f = form.form()
        assert STATIC_NOTE in f["note"]
        for needed in ("Binder", "Colab", f"“{first['sentence']}”", "k = 5"):
            assert needed in f["note"], f["note"]
        assert not f["disabled"]  # nothing pretends to be working
        assert f["busy"] == "false"
        assert f["summary"] == first["summary"]  # the saved translation stays
        assert f["figure"] == "data:image/png;base64," + first["png"]
        assert form.sent() == []
        assert not form.problems, form.problems
    finally:
        form.close()


def _saved_translate_state() -> dict:
    states = _saved_anywidgets(TRANSLATE_PAGE)
    assert len(states) == 1, f"expected one anywidget (the translate form), found {len(states)}"
    return states[0]


@pytest.mark.slow
def test_the_built_translate_page_carries_the_current_front_end() -> None:
    page = SITE / TRANSLATE_PAGE
    if not page.is_file():
        pytest.skip(f"no built site with {TRANSLATE_PAGE}: run `make book` first")
    html = page.read_text(encoding="utf-8")
    models = set(re.findall(r'"model_module":\s*"([^"]+)"', html))
    assert models == {"anywidget", "@jupyter-widgets/base"}, models
    assert "_static/anywidget_static.js" in html
    assert "embed-amd.js" not in html
    assert "require.js" not in html
    state = _saved_translate_state()
    for key, name in (("_esm", "translate.js"), ("_css", "translate.css")):
        assert state[key] == (explorable.ASSETS / name).read_text(encoding="utf-8"), (
            f"the built page has an old {name}: clear the cached execution of real_alignments "
            "(_build/.jupyter_cache) and rebuild"
        )


class TranslateForm(Explorable):
    """real_alignments' translate form, drawn from its saved state (no kernel)."""

    FIGURE = "img.xp-tr__figure"

    def __init__(
        self, chromium: Any, base: str, width: int, mode: str, *, tabs: Tabs | None = None
    ) -> None:
        super().__init__(
            chromium,
            base,
            width,
            mode,
            page=TRANSLATE_PAGE,
            ready=".xp-tr img[src]",
            root=".xp-tr",
            tabs=tabs,
        )

    def geometry(self) -> dict:
        return self.page.evaluate(JS_FORM, self.root)


@pytest.fixture(
    scope="module",
    params=[
        on_one_worker((width, mode), f"front-ends:translate-{width}px-{mode}")
        for width, mode in ((1280, "light"), (390, "dark"))
    ],
)
def opened_translate(
    request: Any,
    browser: Any,  # noqa: F811
    site: str,
    tabs: Tabs,
) -> Iterator[TranslateForm]:
    """The translate form's page at one width and mode, opened once per module and process."""
    if not (SITE / TRANSLATE_PAGE).is_file():
        pytest.skip(f"no built site with {TRANSLATE_PAGE}: run `make book` first")
    width, mode = request.param
    page = TranslateForm(browser, site, width, mode, tabs=tabs)
    try:
        yield page
    finally:
        page.close()


@pytest.fixture
def translate_page(
    request: pytest.FixtureRequest, opened_translate: TranslateForm
) -> Iterator[TranslateForm]:
    yield from handed_over(request, opened_translate)


@pytest.mark.slow
def test_the_translate_form_is_drawn_offline_and_says_it_needs_a_kernel(
    translate_page: Explorable,
) -> None:
    ex = translate_page
    loaded = [
        u.split("?")[0]
        for u in ex.page.evaluate("performance.getEntriesByType('resource').map((e) => e.name)")
    ]
    assert any(u.endswith("_static/anywidget_static.js") for u in loaded), loaded
    manager = [u for u in loaded if u.endswith(("embed-amd.js", "require.js"))]
    assert not manager, f"the widget manager was loaded: {manager}"
    state = _saved_translate_state()
    f = ex.page.evaluate(JS_FORM, ex.root)
    assert (f["sentence"], f["k"]) == (state["sentence"], state["k"])
    assert f["summary"] == state["summary"]
    assert "French" in f["summary"]
    assert f["table"] == state["table"]
    assert f["figure"] == "data:image/png;base64," + state["png"]
    assert f["figureShown"]
    assert f["figureWidth"] > 300
    assert f["alt"] == state["alt"]
    assert f["problem"] is None
    assert f["note"] == ""
    box = ex.root.bounding_box()
    width = ex.page.viewport_size["width"]
    assert box is not None
    assert box["x"] >= 0
    assert box["x"] + box["width"] <= width + 0.5, f"overflows: {box}"
    # a new sentence, by keyboard: a note, the saved translation unchanged, nothing busy
    sentence = ex.root.query_selector("input[type=text]")
    sentence.fill("I don't like tea.")
    sentence.press("Enter")
    after = ex.page.evaluate(JS_FORM, ex.root)
    assert STATIC_NOTE in after["note"], after["note"]
    assert "Binder" in after["note"]
    assert "Colab" in after["note"]
    assert after["summary"] == state["summary"]
    assert after["figure"] == f["figure"]
    assert after["table"] == state["table"]
    assert not after["disabled"]
    assert after["busy"] == "false"
    # a new k says the same
    ex.page.evaluate("(r) => { r.querySelector('[role=status]').textContent = ''; }", ex.root)
    ex.root.query_selector("input[type=range]").focus()
    ex.page.keyboard.press("ArrowLeft")
    again = ex.page.evaluate(JS_FORM, ex.root)
    assert again["kShown"] == str(state["k"] - 1)
    assert STATIC_NOTE in again["note"]
    assert again["summary"] == state["summary"]
    # For review (not committed): the form after the note, per width and mode.
    shots = ROOT / "tests" / "_artifacts" / "explorables"
    shots.mkdir(parents=True, exist_ok=True)
    ex.root.screenshot(path=str(shots / f"translate-{ex.label}.png"))
    assert not ex.problems, ex.problems


@pytest.mark.slow
def test_the_translate_form_is_accessible(translate_page: Explorable) -> None:
    _assert_axe_finds_nothing(translate_page, ".xp-tr")
