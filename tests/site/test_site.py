"""The built website as a learner meets it, checked in a real browser with the network cut.

Every page of ``_build/html`` (whatever pages the build has) is opened in headless Chromium
(Debian's ``chromium``; ``make test`` installs it when missing) from a local HTTP server on
127.0.0.1. Every request to any other host is aborted *and* counted as a failure, so a page passes
only if it renders from the site's own files. Per page the test fails on

- a console error or uncaught exception,
- a failed request (HTTP status >= 400, an aborted or blocked request),
- math left raw (``$$``, ``\\(``, ``\\[``, ``\\begin{``, ``$x_i$``) or a MathJax error box,
- a widget whose saved state is not drawn,
- an image that does not load or has no alt text (or other accessible name), a figure from a
  notebook cell without a caption,
- a link to a page or ``#anchor`` of the site that does not exist,
- a serious or critical violation found by axe-core (``node_modules/axe-core``, pinned in
  ``package.json``), injected into the page.

Page weight: everything the pages request in Chromium, offline, summed per page:
the median page at most 1.5 MB and every page with widgets at most 2.5 MB; the theme's icons
are drawn by the cut-down Font Awesome webfont, with a glyph for every icon a page uses.

A full-page screenshot per page goes to ``tests/_artifacts/site/`` for review (not committed).
Other tests check the launch and download buttons of every notebook page and offline search.

Build the site first (``make book``); ``make test`` does it before running the tests.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright

from conftest import CHROMIUM_ARGS, ROOT, TOC_CHAPTERS, chromium_path

#: The built site; $SITE_DIR checks another build (e.g. a scratch copy of the book).
SITE = Path(os.environ.get("SITE_DIR", ROOT / "_build" / "html")).resolve()
BOOK = SITE.parents[1]  # the book's source folder (<book>/_build/html)
ARTIFACTS = ROOT / "tests" / "_artifacts" / "site"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
#: Folders of the built site that hold assets, not pages.
NOT_PAGES = {"_static", "_sources", "_images", "_vendor", "_sphinx_design_static", "_panels_static"}
#: axe-core impacts that fail the test.
FAILING_IMPACTS = ("serious", "critical")
#: Every wait of the browser tests ends on an event the page reports (its load, a DOM state, a
#: request that finished); this backstop only ends a wait for an event that never comes, and is
#: long enough that no machine load reaches it before a real hang does. Every page's context has
#: it as Playwright's default timeout, for navigation and for every action.
BACKSTOP_MS = 300_000


def site_pages() -> list[str]:
    """Every HTML page of the built site, as paths relative to its root (posix)."""
    if not SITE.is_dir():
        return []
    return sorted(
        p.relative_to(SITE).as_posix()
        for p in SITE.rglob("*.html")
        if not (set(p.relative_to(SITE).parts[:-1]) & NOT_PAGES)
        and not any(part.startswith(".") for part in p.relative_to(SITE).parts)
    )


NO_SITE = "<no built site: run `make book` first>"
REDIRECT = re.compile(r'<meta http-equiv="Refresh" content="0; url=([^"]+)"', re.I)
#: Pages that only send the reader on: the root index.html, and each old chapter address
#: (_ext/redirects.py). They are checked by test_every_old_address_sends_the_reader_on.
REDIRECTS = [p for p in site_pages() if REDIRECT.search((SITE / p).read_text(encoding="utf-8"))]
#: Every page with a body: what the browser tests open.
PAGES = [p for p in site_pages() if p not in REDIRECTS]


def notebook_pages() -> list[str]:
    """Pages built from a notebook: the ones with an ``.ipynb`` source in ``_sources/``."""
    return [p for p in PAGES if (SITE / "_sources" / p).with_suffix(".ipynb").is_file()]


# --------------------------------------------------------------------------- fixtures


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serving(folder: Path) -> Iterator[str]:
    """Serve ``folder`` on 127.0.0.1 (a free port); yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """Serve ``_build/html`` on 127.0.0.1 (a free port); yields the base URL."""
    assert (SITE / "index.html").is_file(), f"no built site in {SITE}: run `make book` first"
    with serving(SITE) as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium_path(), args=list(CHROMIUM_ARGS))
        try:
            yield b
        finally:
            b.close()


class PageVisit:
    """One page opened with every non-local request blocked, and what went wrong on it."""

    def __init__(self, browser: Any, base: str, rel: str) -> None:
        self.base, self.rel = base, rel
        self.problems: list[str] = []
        self.context = browser.new_context(
            viewport={"width": 1280, "height": 900}, service_workers="block"
        )
        self.context.set_default_timeout(BACKSTOP_MS)
        self.context.set_default_navigation_timeout(BACKSTOP_MS)
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self._watch(self.page)

    def _watch(self, page: Any) -> None:
        """Record on ``problems`` what goes wrong on ``page``, and track its requests."""
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.problems.append(f"uncaught exception: {exc}"))
        page.on("requestfailed", self._request_failed)
        page.on("response", self._response)
        # requests under way (see settle)
        self._inflight: dict[Any, str] = {}
        page.on("request", self._started)
        page.on("requestfinished", self._ended)
        page.on("requestfailed", self._ended)

    def _route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith(self.base):
            route.continue_()
        else:
            self.problems.append(f"request outside the site (blocked): {url}")
            route.abort("blockedbyclient")

    def _console(self, msg: Any) -> None:
        if msg.type == "error":
            self.problems.append(f"console error: {msg.text} ({msg.location.get('url', '')})")

    def _request_failed(self, request: Any) -> None:
        if request.url.startswith(self.base):
            self.problems.append(f"request failed: {request.url} ({request.failure})")

    def _response(self, response: Any) -> None:
        if response.status >= 400:
            self.problems.append(f"HTTP {response.status}: {response.url}")

    def _started(self, request: Any) -> None:
        self._inflight[request] = request.url

    def _ended(self, request: Any) -> None:
        self._inflight.pop(request, None)

    def awaited(self) -> list[str]:
        """What the page has not yet done of what :meth:`settle` waits for (empty: settled)."""
        state = self.page.evaluate(SETTLE_REPORT)
        left = [f"{what}: {detail}" for what, detail in state.items() if detail]
        if self._inflight:
            left.append(f"requests under way: {sorted(self._inflight.values())[:5]}")
        return left

    def settle(self, backstop_ms: float = BACKSTOP_MS) -> None:
        """Wait until the page has settled: loaded, its fonts and images done, every saved
        widget drawn, two frames painted, and none of its requests under way.

        Each is an event the page reports, so no machine load can end the wait early or make
        it fail: a busy machine only makes it longer. ``backstop_ms`` ends a wait for something
        that never comes, with an AssertionError that names what was still awaited.
        """
        deadline = time.monotonic() + backstop_ms / 1000

        def left_ms() -> float:
            return max(1.0, 1000 * (deadline - time.monotonic()))

        try:
            self.page.wait_for_load_state("load", timeout=left_ms())
            self.page.wait_for_function(SETTLED, timeout=left_ms())
            while True:
                self.page.evaluate(TWO_FRAMES)
                if not self._inflight and not self.awaited():
                    return
                if time.monotonic() > deadline:
                    break
                self.page.wait_for_timeout(50)  # a poll: what ends the wait is the state above
        except PlaywrightTimeout:
            pass
        try:
            left = self.awaited()
        except PlaywrightError as err:  # the page itself would not answer
            left = [f"the page's answer ({err})"]
        raise AssertionError(
            f"{self.rel}: the page did not settle within the backstop of "
            f"{backstop_ms / 1000:g} s; still waiting for: {'; '.join(left) or 'nothing left'}"
        )

    def close(self) -> None:
        self.context.close()


# JavaScript run in the page -------------------------------------------------------

#: What settle waits for, per kind of thing; each entry lists what is not done yet (empty: done).
SETTLE_REPORT = """
() => ({
  'the load event': document.readyState === 'complete' ? '' : `document ${document.readyState}`,
  'fonts': document.fonts.status === 'loaded' ? '' : `fonts ${document.fonts.status}`,
  'images': Array.from(document.images).filter(img => !img.complete)
                 .map(img => (img.currentSrc || img.src).slice(-80)).slice(0, 5).join(', '),
  'widgets drawn': Array.from(document.querySelectorAll(
        'script[type="application/vnd.jupyter.widget-view+json"]'))
      .filter(v => { const p = v.previousElementSibling;
                     return !(p && p.classList.contains('widget-subarea') && p.children.length); })
      .map(v => { try { return JSON.parse(v.textContent).model_id; } catch (e) { return '?'; } })
      .slice(0, 5).join(', '),
})
"""

#: The page's own side of settled: everything SETTLE_REPORT lists is done.
SETTLED = f"() => Object.values(({SETTLE_REPORT.strip()})()).every(v => !v)"

#: Two animation frames: what the page changed before them has been laid out and painted.
TWO_FRAMES = """
() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))
"""

WAIT_FOR_MATHJAX = """
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
    return 'typeset';
  }
  return 'no MathJax on this page';
}
"""

WIDGET_REPORT = """
() => Array.from(document.querySelectorAll(
        'script[type="application/vnd.jupyter.widget-view+json"]'))
      .map(v => { const p = v.previousElementSibling;
                  const drawn = !!(p && p.classList.contains('widget-subarea') && p.children.length);
                  let id = ''; try { id = JSON.parse(v.textContent).model_id; } catch (e) {}
                  return {id, drawn, height: p ? p.getBoundingClientRect().height : 0}; })
"""

# Text a reader sees (not code, not scripts), and what MathJax left behind.
MATH_REPORT = r"""
() => {
  const skip = 'script,style,pre,code,textarea,kbd,samp,mjx-container,.highlight,' +
               '#search-results,.search-button,.bd-search';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const raw = [];
  const patterns = [/\$\$/, /\\\(/, /\\\)/, /\\\[/, /\\\]/, /\\begin\{/,
                    /(^|[^\w$])\$[^\s$][^$\n]*?[_^\\][^$\n]*?\$/];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.parentElement && n.parentElement.closest(skip)) continue;
    const t = n.textContent;
    if (patterns.some(p => p.test(t))) raw.push(t.trim().slice(0, 120));
  }
  const mathNodes = Array.from(document.querySelectorAll('span.math, div.math'));
  const untypeset = mathNodes.filter(m => !m.querySelector('mjx-container'))
                             .map(m => m.textContent.trim().slice(0, 80));
  const errors = Array.from(document.querySelectorAll('mjx-merror'))
                      .map(e => (e.getAttribute('data-mjx-error') || e.textContent).slice(0, 120));
  return {raw, untypeset, errors, math: mathNodes.length,
          typeset: document.querySelectorAll('mjx-container').length};
}
"""

IMAGES_REPORT = """
() => Array.from(document.querySelectorAll('img')).map(img => ({
  src: (img.currentSrc || img.src).slice(0, 100),
  loaded: img.complete && img.naturalWidth > 0,
  // the accessible name: alt, else aria-label, else title (e.g. an ipywidgets.Image's tooltip)
  alt: img.getAttribute('alt') ?? img.getAttribute('aria-label') ?? img.getAttribute('title'),
  visible: img.getClientRects().length > 0,
  // a figure from a notebook cell (not a widget's live image) needs a caption (STYLE.md)
  uncaptioned: !!img.closest('.cell_output') && !img.closest('.widget-subarea') &&
               !(img.closest('figure') && img.closest('figure').querySelector('figcaption')),
}))
"""

LINKS = """
() => Array.from(document.querySelectorAll('a[href]')).map(a => a.href)
"""

RUN_AXE = """
async (impacts) => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations.filter(v => impacts.includes(v.impact)).map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ')),
  }));
}
"""


@functools.cache
def anchors_of(path: Path) -> frozenset[str]:
    """Every ``id``/``name`` a page of the site defines (what ``page.html#x`` can target)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    return frozenset(re.findall(r'\s(?:id|name)="([^"]+)"', text))


def broken_links(base: str, here: str, hrefs: list[str]) -> list[str]:
    """Links into the site whose file or ``#anchor`` does not exist."""
    broken = []
    for href in sorted(set(hrefs)):
        if not href.startswith(base):
            continue  # other sites (GitHub, Binder, Colab, DOIs) are not fetched offline
        parts = urlsplit(href)
        rel = unquote(parts.path[len(urlsplit(base).path) :])
        target = SITE / rel
        if rel == "" or rel.endswith("/"):
            target = target / "index.html"
        if not target.is_file():
            broken.append(f"{href} (from {here}): no file {target.relative_to(SITE)}")
            continue
        fragment = unquote(parts.fragment)
        if fragment and target.suffix == ".html" and fragment not in anchors_of(target):
            broken.append(f"{href} (from {here}): no anchor #{fragment} in {rel or 'index.html'}")
    return broken


def screenshot_path(rel: str) -> Path:
    return ARTIFACTS / (rel.replace("/", "__").removesuffix(".html") + ".png")


# --------------------------------------------------------------------------- tests


NEVER_LOADS = '<!doctype html><html lang="en"><body><img src="never.png" alt="a picture"></body>'
NEVER_IDLE = (
    '<!doctype html><html lang="en"><body><p>Loaded.</p>'
    '<script>addEventListener("load", () => fetch("never.json"));</script></body>'
)


@pytest.mark.slow  # a browser
@pytest.mark.parametrize(
    ("html", "awaited"),
    [(NEVER_LOADS, "the load event"), (NEVER_IDLE, "requests under way")],
    ids=["an-image-never-arrives", "a-fetch-after-load-never-ends"],
)
def test_a_page_that_never_settles_is_reported_with_what_it_waited_for(
    browser: Any, tmp_path: Path, html: str, awaited: str
) -> None:
    """settle waits for events, not for a quiet spell; a page whose request never ends (answered
    by nobody, so only the backstop stops the wait) is reported with what it still waits for."""
    (tmp_path / "page.html").write_text(html, encoding="utf-8")
    with serving(tmp_path) as base:
        visit = PageVisit(browser, base, "page.html")
        try:
            visit.page.route("**/never.*", lambda route: None)  # never answered
            visit.page.goto(base + "page.html", wait_until="commit")
            with pytest.raises(AssertionError, match="did not settle") as info:
                visit.settle(backstop_ms=3_000)
        finally:
            visit.close()
    assert awaited in str(info.value), info.value
    assert "never." in str(info.value), info.value


@pytest.mark.slow  # a browser
def test_a_page_that_settles_is_not_kept_waiting(browser: Any, tmp_path: Path) -> None:
    """The same page with its late request answered settles, and nothing is left awaited."""
    (tmp_path / "page.html").write_text(NEVER_IDLE, encoding="utf-8")
    (tmp_path / "never.json").write_text("{}", encoding="utf-8")
    with serving(tmp_path) as base:
        visit = PageVisit(browser, base, "page.html")
        try:
            visit.page.goto(base + "page.html", wait_until="commit")
            visit.settle()
            left = visit.awaited()
        finally:
            visit.close()
    assert left == []
    assert visit.problems == []


@pytest.mark.slow  # needs the built site: `make book` is the slow part
def test_site_is_built() -> None:
    assert (SITE / "index.html").is_file(), f"no built site in {SITE}: run `make book` first"
    assert PAGES, f"no pages found in {SITE}"


@pytest.mark.slow  # needs the built site: `make book` is the slow part
def test_site_serves_its_own_javascript() -> None:
    """MathJax's fonts are in the site (html_extra_path), and no page loads a script from a CDN.

    Formulas are typeset when the site is built (tests/site/test_static_math.py): the pages need
    MathJax's web fonts, not its JavaScript. Every widget is an anywidget, drawn without
    ipywidgets' widget manager (tests/explorables/test_front_ends.py)."""
    vendor = SITE / "_vendor"
    for f in (
        "mathjax/es5/output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff",
        "mathjax/es5/output/chtml/fonts/woff-v2/MathJax_Math-Italic.woff",
    ):
        assert (vendor / f).is_file(), f"expected {f} in the built site's _vendor/, found none"
    assert not list((SITE / "_static").rglob("embed-amd.js")), "widget manager copied into _static/"
    # Not loaded from a CDN by any page.
    cdn = re.compile(r'<script[^>]+src="https?://[^"]*(mathjax|require|html-manager)', re.I)
    offenders = [p for p in PAGES if cdn.search((SITE / p).read_text(encoding="utf-8"))]
    assert not offenders, f"pages loading MathJax/RequireJS/widgets from a CDN: {offenders}"


@pytest.mark.slow
@pytest.mark.parametrize("rel", PAGES or [NO_SITE])
def test_page_renders_offline(browser: Any, server: str, rel: str) -> None:
    assert rel != NO_SITE, f"no built site in {SITE}: run `make book` first"
    visit = PageVisit(browser, server, rel)
    page, problems = visit.page, visit.problems
    responses = _responses(visit)
    try:
        page.goto(server + rel, wait_until="load")
        page.evaluate(WAIT_FOR_MATHJAX)
        visit.settle()  # widgets drawn, among the rest (a widget never drawn is named)
        if rel not in _WEIGHTS:  # this visit weighs the page for the page-weight tests too
            _record_weight(visit, responses, server, rel)

        for w in page.evaluate(WIDGET_REPORT):
            if not w["drawn"]:
                problems.append(f"widget output missing: model {w['id']} not drawn")

        math = page.evaluate(MATH_REPORT)
        problems += [f"raw math left in the page: {t!r}" for t in math["raw"]]
        problems += [f"math not typeset: {t!r}" for t in math["untypeset"]]
        problems += [f"MathJax error: {t!r}" for t in math["errors"]]

        for img in page.evaluate(IMAGES_REPORT):
            if img["visible"] and not img["loaded"]:
                problems.append(f"image not loaded: {img['src']}")
            if img["alt"] is None or (img["visible"] and not img["alt"].strip()):
                problems.append(f"image without alt text: {img['src']}")
            if img["uncaptioned"]:
                problems.append(f"figure without caption (mystnb.figure.caption): {img['src']}")

        problems += [f"broken link: {b}" for b in broken_links(server, rel, page.evaluate(LINKS))]

        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(screenshot_path(rel)), full_page=True)

        assert AXE.is_file(), f"expected axe-core at {AXE}: run `npm ci` (make book does)"
        page.add_script_tag(path=str(AXE))
        for v in page.evaluate(RUN_AXE, list(FAILING_IMPACTS)):
            problems.append(f"accessibility ({v['impact']}) {v['id']}: {v['help']} at {v['nodes']}")
    finally:
        visit.close()
    assert not problems, f"{rel}:\n  " + "\n  ".join(dict.fromkeys(problems))


def _repository() -> tuple[str, str, str]:
    cfg = yaml.safe_load((BOOK / "_config.yml").read_text(encoding="utf-8"))
    repo = cfg["repository"]
    owner_name = urlsplit(repo["url"]).path.strip("/")
    return owner_name, repo.get("branch", "main"), repo.get("path_to_book", "") or ""


@pytest.mark.slow  # needs the built site: `make book` is the slow part
@pytest.mark.parametrize("rel", notebook_pages() or [NO_SITE])
def test_notebook_page_has_launch_and_download_buttons(rel: str) -> None:
    """Binder, Colab and live code (thebe) buttons open *this* notebook's live copy (branch
    ``live``: tests/live/test_live_notebooks.py checks that tree); .ipynb downloads."""
    assert rel != NO_SITE, f"no notebook pages in {SITE}: run `make book` first"
    html = (SITE / rel).read_text(encoding="utf-8")
    owner_name, _, book = _repository()
    nb = Path(book, rel).with_suffix(".ipynb").as_posix()
    assert (BOOK / nb).is_file(), f"the page {rel} names {nb}, which is not in the repository"
    binder = f"https://mybinder.org/v2/gh/{owner_name}/live?urlpath=lab/tree/{nb}"
    colab = f"https://colab.research.google.com/github/{owner_name}/blob/live/{nb}"
    assert f'href="{binder}"' in html, f"{rel}: expected a Binder button to {binder}"
    assert f'href="{colab}"' in html, f"{rel}: expected a Colab button to {colab}"
    assert 'onclick="initThebeSBT()"' in html, f"{rel}: expected a live-code (thebe) button"
    thebe = rf'repo: "{re.escape(owner_name)}",\s*ref: "live"'
    assert re.search(thebe, html), f"{rel}: thebe is not pointed at {owner_name}, branch live"
    download = re.search(r'href="([^"]*_sources/[^"]*\.ipynb)"', html)
    assert download, f"{rel}: expected a download (.ipynb) button"
    target = (SITE / rel).parent / download.group(1)
    assert target.resolve().is_file(), f"{rel}: the .ipynb download {download.group(1)} is missing"
    assert target.resolve().name == Path(nb).name, f"{rel}: download offers {target.name}"
    # what the button gives is the live copy (as Binder and Colab open it), not the MyST source
    live = (SITE.parent / "live" / nb).read_bytes()
    assert target.resolve().read_bytes() == live, f"{rel}: the download is not the live copy"


def test_binder_files_name_the_pins_and_the_cpu_index() -> None:
    """Binder installs exact pins of its own (no -r line), torch's CPU build from its CPU index
    (the slow end-to-end check of these files is tests/live/test_binder.py)."""
    req = (ROOT / "binder" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    lines = [ln.strip() for ln in req if ln.strip() and not ln.startswith("#")]
    assert not [ln for ln in lines if ln.startswith(("-r", "-c"))], (
        f"binder/requirements.txt reads another file, so repo2docker cannot cache it: {lines}"
    )
    assert any(re.fullmatch(r"torch==\S+\+cpu", ln) for ln in lines), (
        f"binder/requirements.txt pins no CPU build of torch: {lines}"
    )
    assert any("download.pytorch.org/whl/cpu" in ln for ln in lines), (
        f"binder/requirements.txt has no PyTorch CPU index, so Binder would fetch CUDA torch: {lines}"
    )
    pins = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    torch_pin = re.search(r"^torch==(\S+)$", pins, re.M)
    assert torch_pin, "requirements.txt pins no torch version"
    assert torch_pin.group(1).endswith("+cpu"), f"torch pinned as {torch_pin.group(1)}, not +cpu"
    assert os.access(ROOT / "binder" / "postBuild", os.X_OK), "binder/postBuild must be executable"
    assert (
        (ROOT / "binder" / "runtime.txt")
        .read_text(encoding="utf-8")
        .strip()
        .startswith("python-3.11")
    )


@pytest.mark.slow
def test_search_works_offline(browser: Any, server: str) -> None:
    """Sphinx's search runs in the page from searchindex.js; it finds the glossary."""
    visit = PageVisit(browser, server, "search.html")
    try:
        visit.page.goto(server + "search.html?q=glossary", wait_until="load")
        visit.page.wait_for_selector("#search-results li a")  # the results: an event
        hits = visit.page.eval_on_selector_all(
            "#search-results li a", "els => els.map(a => a.href)"
        )
    finally:
        visit.close()
    assert any("chapters/glossary.html" in h for h in hits), f"search for 'glossary' gave {hits}"
    assert not visit.problems, "\n".join(visit.problems)


def chapter_pages() -> list[str]:
    """The chapter notebooks of ``_toc.yml``, as built pages: each must link its symbols to the
    glossary. (Not a pattern over file names: a chapter's file is named by its topic.)"""
    return [f"chapters/{p.stem}.html" for p in TOC_CHAPTERS if f"chapters/{p.stem}.html" in PAGES]


@pytest.mark.slow  # needs the built site: `make book` is the slow part
@pytest.mark.parametrize("rel", chapter_pages() or [NO_SITE])
def test_chapter_links_symbols_to_the_glossary(rel: str) -> None:
    """A chapter links its symbols to the glossary ({term}`h_i` on first use)."""
    assert rel != NO_SITE, f"no chapter pages in {SITE}: run `make book` first"
    html = (SITE / rel).read_text(encoding="utf-8")
    glossary = SITE / "chapters" / "glossary.html"
    assert glossary.is_file(), "the site has no glossary page (chapters/glossary)"
    terms = set(re.findall(r'href="(?:\./)?glossary\.html#(term-[^"]+)"', html))
    assert terms, f"{rel}: no symbol is linked to the glossary ({{term}}`h_i` on first use)"
    missing = terms - anchors_of(glossary)
    assert not missing, f"{rel}: links to glossary terms that do not exist: {sorted(missing)}"


# --------------------------------------------------------------------------- the extension itself


def _offline_site() -> Any:
    import importlib
    import sys

    sys.path.insert(0, str(ROOT / "_ext"))
    try:
        return importlib.import_module("offline_site")
    finally:
        sys.path.remove(str(ROOT / "_ext"))


def test_extension_drops_the_duplicate_thebe_script() -> None:
    from sphinx.builders.html._assets import _JavaScript

    ext = _offline_site()
    thebe = 'const THEBE_JS_URL = "https://unpkg.com/thebe@0.8.2/lib/index.js"'
    scripts = [
        _JavaScript(None, body=thebe),
        _JavaScript("_static/doctools.js"),
        _JavaScript(None, body=thebe),
    ]
    context = {
        "script_files": scripts,
        "pathto": lambda uri, resource=0: f"../{uri}",
        "body": '<div role="list"><div class="citation" role="doc-biblioentry">x</div>',
    }
    ext.fix_script_files(None, "chapters/x", "page.html", context, None)
    bodies = [js.attributes.get("body", "") for js in scripts]
    assert bodies.count(thebe) == 1, f"expected the thebe script once, got {bodies.count(thebe)}"
    assert [js.filename for js in scripts if js.filename] == ["_static/doctools.js"]
    assert 'role="listitem"' in context["body"], context["body"]
    assert "doc-biblioentry" not in context["body"], context["body"]


def test_extension_names_the_sidebar_toggles() -> None:
    ext = _offline_site()
    nav = (
        '<li><a class="reference internal" href="x.html">Exercises</a><details>'
        '<summary><span class="toctree-toggle" role="presentation"></span></summary>'
    )
    named = ext._name_toggles(nav)
    assert '<summary aria-label="Show or hide the pages under Exercises">' in named, named
    bare = '<details><summary><span class="toctree-toggle" role="presentation">'
    assert "<summary aria-label=" in ext._name_toggles(bare)


# --------------------------------------------------------------------------- page weight

#: Everything a page requests (uncompressed), median over the pages and on the pages with
#: widgets: a reader on a slow or metered connection waits for every byte of it.
MEDIAN_PAGE_LIMIT_MB = 1.5
WIDGET_PAGE_LIMIT_MB = 2.5

ICONS_REPORT = """
async () => {
  await document.fonts.ready;
  return Array.from(document.querySelectorAll('i[class*="fa-"]'))
    .filter(i => i.getClientRects().length > 0)
    .map(i => {
      const before = getComputedStyle(i, '::before');
      const family = before.fontFamily;
      const weight = before.fontWeight;
      const name = family.split(',')[0].replace(/["']/g, '').trim();
      // a face of that family (Font Awesome's webfont) has been downloaded and is in use
      const loaded = [...document.fonts].some(
        f => f.family.replace(/["']/g, '') === name && f.status === 'loaded' &&
             String(f.weight) === String(weight));
      return {cls: i.className, content: before.content, family, loaded,
              width: i.getBoundingClientRect().width};
    });
}
"""

_WEIGHTS: dict[str, dict[str, Any]] = {}


def page_weight(browser: Any, server: str, rel: str) -> dict[str, Any]:
    """Open ``rel`` offline; the bytes of every response from the site (each URL once), the
    page's icons, and whether it holds saved widget state. Measured once per page."""
    if rel not in _WEIGHTS:
        visit = PageVisit(browser, server, rel)
        responses = _responses(visit)
        try:
            visit.page.goto(server + rel, wait_until="load")
            visit.page.evaluate(WAIT_FOR_MATHJAX)
            visit.settle()
            _record_weight(visit, responses, server, rel)
        finally:
            visit.close()
    return _WEIGHTS[rel]


def _responses(visit: PageVisit) -> list[Any]:
    """Every response the visit's page receives from now on (attach before ``goto``)."""
    responses: list[Any] = []
    visit.page.on("response", lambda r: responses.append(r))
    return responses


def _record_weight(visit: PageVisit, responses: list[Any], server: str, rel: str) -> None:
    """Keep what :func:`page_weight` reports of a settled visit: any offline visit of ``rel``
    may record it (``test_page_renders_offline`` does, on the page-weight tests' worker), so
    that each page is opened once per process for both."""
    icons = visit.page.evaluate(ICONS_REPORT)
    sizes: dict[str, int] = {}
    for resp in responses:
        url = resp.url.split("#")[0].split("?")[0]
        if url.startswith(server) and url not in sizes and resp.status < 300:
            sizes[url[len(server) :]] = len(resp.body())
    _WEIGHTS[rel] = {
        "bytes": sum(sizes.values()),
        "sizes": sizes,
        "icons": icons,
        "widgets": "application/vnd.jupyter.widget-state+json"
        in (SITE / rel).read_text(encoding="utf-8"),
        "problems": list(visit.problems),
    }


def weighed_pages() -> list[str]:
    """Pages with a body (redirects excluded, as in PAGES)."""
    return list(PAGES)


def _heaviest(w: dict[str, Any]) -> str:
    top = sorted(w["sizes"].items(), key=lambda kv: -kv[1])[:4]
    return ", ".join(f"{path} {n / 1e6:.2f} MB" for path, n in top)


@pytest.mark.slow
def test_median_page_weight(browser: Any, server: str) -> None:
    """Half the pages request at most MEDIAN_PAGE_LIMIT_MB, everything included, offline."""
    assert (SITE / "index.html").is_file(), f"no built site in {SITE}: run `make book` first"
    pages = weighed_pages()
    weights = {rel: page_weight(browser, server, rel) for rel in pages}
    totals = sorted(w["bytes"] / 1e6 for w in weights.values())
    median = (
        totals[len(totals) // 2]
        if len(totals) % 2
        else sum(totals[len(totals) // 2 - 1 : len(totals) // 2 + 1]) / 2
    )
    lightest = min(weights, key=lambda r: weights[r]["bytes"])
    assert median <= MEDIAN_PAGE_LIMIT_MB, (
        f"median page requests {median:.2f} MB (limit {MEDIAN_PAGE_LIMIT_MB} MB); even "
        f"{lightest} requests {weights[lightest]['bytes'] / 1e6:.2f} MB: "
        + _heaviest(weights[lightest])
    )


@pytest.mark.slow
def test_no_page_requests_anything_from_outside_the_site(browser: Any, server: str) -> None:
    weights = {rel: page_weight(browser, server, rel) for rel in weighed_pages()}
    blocked = [p for w in weights.values() for p in w["problems"] if "outside the site" in p]
    assert not blocked, f"pages requested files from outside the site: {blocked[:5]}"


def _widget_models(rel: str) -> set[str]:
    """The model modules of a page's saved widget state (empty for a page without widgets)."""
    html = (SITE / rel).read_text(encoding="utf-8")
    return set(re.findall(r'"model_module":\s*"([^"]+)"', html))


def _over_widget_limit(browser: Any, server: str, pages: list[str]) -> str:
    """The pages of ``pages`` that request more than WIDGET_PAGE_LIMIT_MB, a line each."""
    weights = {r: page_weight(browser, server, r) for r in pages}
    return "\n  ".join(
        f"{r}: {w['bytes'] / 1e6:.2f} MB ({_heaviest(w)})"
        for r, w in weights.items()
        if w["bytes"] / 1e6 > WIDGET_PAGE_LIMIT_MB
    )


@pytest.mark.slow
def test_explorable_pages_stay_under_the_widget_page_limit(browser: Any, server: str) -> None:
    """Pages whose widgets are all anywidgets (the explorables) load no widget manager."""
    assert (SITE / "index.html").is_file(), f"no built site in {SITE}: run `make book` first"
    # an anywidget's saved state also holds its layout model (@jupyter-widgets/base)
    explorable = {"anywidget", "@jupyter-widgets/base"}
    pages = [r for r in weighed_pages() if "anywidget" in _widget_models(r) <= explorable]
    assert len(pages) >= 4, (
        f"expected the explorables of attention_step, softmax, score_functions and entropy, found {pages}"
    )
    heavy = _over_widget_limit(browser, server, pages)
    assert not heavy, f"explorable pages over {WIDGET_PAGE_LIMIT_MB} MB:\n  {heavy}"


@pytest.mark.slow
def test_widget_page_weight(browser: Any, server: str) -> None:
    """Every page with saved widget state requests at most WIDGET_PAGE_LIMIT_MB, offline."""
    assert (SITE / "index.html").is_file(), f"no built site in {SITE}: run `make book` first"
    widget_pages = [r for r in weighed_pages() if page_weight(browser, server, r)["widgets"]]
    assert widget_pages, (
        "expected pages with widgets (the explorables, the translate form) in the site, found none"
    )
    heavy = _over_widget_limit(browser, server, widget_pages)
    assert not heavy, f"widget pages over {WIDGET_PAGE_LIMIT_MB} MB:\n  {heavy}"


@pytest.mark.slow
def test_icons_are_drawn_from_the_webfont_without_the_svg_script(browser: Any, server: str) -> None:
    """The theme's icons (menu, search, download, colour mode...) are drawn by Font Awesome's
    webfont; the 1.5 MB SVG-JS replacement (scripts/fontawesome.js) is not requested."""
    assert (SITE / "index.html").is_file(), f"no built site in {SITE}: run `make book` first"
    for rel in ("intro.html", "chapters/softmax.html"):
        w = page_weight(browser, server, rel)
        assert not [p for p in w["sizes"] if p.endswith("fontawesome.js")], (
            f"{rel} loads Font Awesome's SVG-JS"
        )
        icons = w["icons"]
        assert len(icons) >= 5, f"{rel}: expected the theme's icons, found {len(icons)}"
        bad = [
            i
            for i in icons
            if i["content"] in ("none", "normal", '""')
            or "Font Awesome" not in i["family"]
            or not i["loaded"]
            or i["width"] < 4
        ]
        assert not bad, f"{rel}: icons not drawn by the Font Awesome webfont: {bad[:5]}"


@pytest.mark.slow  # needs the built site
def test_icon_fonts_hold_every_icon_the_pages_show() -> None:
    """The cut-down Font Awesome fonts (``_vendor/fontawesome-subset/``) have a glyph for every
    ``fa-<name>`` icon a page uses, at the code point the theme's stylesheet gives it."""
    from fontTools.ttLib import TTFont

    assert (SITE / "index.html").is_file(), f"no built site in {SITE}: run `make book` first"
    fonts = SITE / "_vendor" / "fontawesome-subset"
    cmap: set[int] = set()
    for name in ("fa-solid-900.woff", "fa-brands-400.woff"):
        assert (fonts / name).is_file(), f"expected {name} in {fonts}"
        cmap |= set(TTFont(fonts / name).getBestCmap() or {})
    css = (SITE / "_static" / "styles" / "pydata-sphinx-theme.css").read_text(encoding="utf-8")
    used: dict[str, str] = {}
    for rel in PAGES:
        for classes in re.findall(r'class="([^"]*\bfa-[^"]*)"', (SITE / rel).read_text("utf-8")):
            for name in re.findall(r"\bfa-([a-z0-9-]+)", classes):
                used.setdefault(name, rel)
    assert {"bars", "magnifying-glass", "github"} <= set(used), f"theme icons not found: {used}"
    missing = []
    for name, rel in sorted(used.items()):
        rule = re.search(r"\.fa-" + re.escape(name) + r':before[^{]*\{content:"\\([0-9a-f]+)"', css)
        if rule is None:
            continue  # a modifier (fa-lg, fa-solid), not an icon
        if int(rule.group(1), 16) not in cmap:
            missing.append(f"fa-{name} (U+{rule.group(1)}, on {rel})")
    assert not missing, f"icons without a glyph in the subset fonts: {missing}"


def _widget_page_scripts(models: list[tuple[str, str]]) -> list[Any]:
    """A widget page's script list as myst-nb leaves it: the saved state (no widget manager)."""
    import json

    from sphinx.builders.html._assets import _JavaScript

    state = {
        "state": {
            f"m{k}": {"model_module": mod, "model_name": name, "state": {}}
            for k, (mod, name) in enumerate(models)
        }
    }
    return [
        _JavaScript("_static/doctools.js"),
        _JavaScript(None, type="application/vnd.jupyter.widget-state+json", body=json.dumps(state)),
    ]


def test_anywidget_pages_load_the_small_renderer() -> None:
    ext = _offline_site()
    scripts = _widget_page_scripts(
        [("anywidget", "AnyModel"), ("@jupyter-widgets/base", "LayoutModel")]
    )
    ext.draw_saved_anywidgets(None, "x", "page.html", {"script_files": scripts}, None)
    files = [str(js.filename) for js in scripts if js.filename]
    assert files == ["_static/doctools.js", "_static/anywidget_static.js"], files
    assert "widget-state+json" in " ".join(str(js.attributes.get("type")) for js in scripts)
    plain = [_widget_page_scripts([])[0]]  # a page without widgets is left alone
    ext.draw_saved_anywidgets(None, "x", "page.html", {"script_files": plain}, None)
    assert [js.filename for js in plain] == ["_static/doctools.js"]


@pytest.mark.parametrize(
    "models",
    [
        [("anywidget", "AnyModel"), ("@jupyter-widgets/controls", "FloatSliderModel")],
        [("@jupyter-widgets/controls", "HTMLModel"), ("@jupyter-widgets/base", "LayoutModel")],
    ],
)
def test_a_page_with_other_widgets_fails_the_build(models: list[tuple[str, str]]) -> None:
    from sphinx.errors import ExtensionError

    ext = _offline_site()
    scripts = _widget_page_scripts(models)
    with pytest.raises(ExtensionError, match="the site draws only anywidgets"):
        ext.draw_saved_anywidgets(None, "x", "page.html", {"script_files": scripts}, None)


@pytest.mark.slow
def test_every_old_address_sends_the_reader_on(browser: Any, server: str) -> None:
    """index.html and each old chapter address (_config.yml, ``redirects``) lead to a page."""
    assert PAGES, f"no built site in {SITE}: run `make book` first"
    old = yaml.safe_load((BOOK / "_config.yml").read_text(encoding="utf-8"))["sphinx"]["config"]
    expected = {f"{name}.html": f"{target}.html" for name, target in old["redirects"].items()}
    assert set(expected) | {"index.html"} == set(REDIRECTS)
    for rel in REDIRECTS:
        href = REDIRECT.search((SITE / rel).read_text(encoding="utf-8")).group(1)
        target = ((SITE / rel).parent / href).resolve().relative_to(SITE.resolve()).as_posix()
        assert target in PAGES, f"{rel} sends the reader to {href}, which is not a page"
        if rel in expected:
            assert target == expected[rel], (rel, target)
    # a browser follows one: the masking chapter's old address shows the chapter
    (masking,) = [name for name, target in old["redirects"].items() if target == "chapters/masking"]
    page = browser.new_page()
    try:
        page.goto(server + f"{masking}.html")
        page.wait_for_url(server + "chapters/masking.html")
        assert page.locator("h1").first.inner_text().startswith("Masking")
    finally:
        page.close()
