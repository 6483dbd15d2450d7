"""The page shell of the built website on a phone (390 px) and a desktop (1280 px), light and dark.

What ``_ext/static/site_shell.js`` and ``_ext/static/offline_site.css`` promise, checked in headless
Chromium with the network cut (the fixtures and :class:`PageVisit` of ``tests/site/test_site.py``):

- the navigation (left sidebar) and Contents (page table of contents) toggles show and hide
  their sidebar, at both widths and in both colour modes, and report it in ``aria-expanded``;
- axe-core finds no serious or critical violation in dark mode at 1280 px nor in light mode at
  390 px, on every exercise page and a few chapters (``tests/site/test_site.py`` runs axe in light
  mode at 1280 px on every page);
- at 390 px no display equation reaches outside the text column (a formula may scroll inside its
  own box) and no equation number overlaps its formula;
- printing opens the dropdowns that hold the answers;
- "Live Code" (thebe), clicked offline, says it needs the internet and Binder instead of
  spinning forever.

The pages of one width and colour mode are loaded one after the other in one tab
(``tests/site/site_tabs.py``). A page that tests only read (accessibility, equations) is loaded
and settled once per (page, width, mode) and process, and the tests that read it run one after
the other (the parameter of ``look`` groups them); a test that clicks, presses a key or prints
gets the page loaded anew, and so does the test after it.

Build the site first (``make book``); every test here skips when there is no built site.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

# The fixtures `browser`, `server` and `tabs` are used by name: importing them makes them
# available here.
from site_tabs import DESKTOP_WINDOW, PHONE_WINDOW, Tab, Tabs, on_one_worker, tabs
from test_site import AXE, FAILING_IMPACTS, PAGES, RUN_AXE, SITE, browser, server

__all__ = ["browser", "server", "tabs"]  # re-exported fixtures (keeps linters from dropping them)

pytestmark = pytest.mark.slow  # needs the built site: `make book` is the slow part

PHONE, DESKTOP = PHONE_WINDOW[0], DESKTOP_WINDOW[0]
MODES = ("light", "dark")


def _need_site() -> None:
    if not PAGES:
        pytest.skip(f"no built site in {SITE}: run `make book` first")


def _html(rel: str) -> str:
    return (SITE / rel).read_text(encoding="utf-8")


def exercise_pages() -> list[str]:
    return [p for p in PAGES if re.fullmatch(r"exercises/\d\d_[^/]+\.html", p)]


def math_pages() -> list[str]:
    """Pages with at least one display equation."""
    return [p for p in PAGES if '<div class="math notranslate' in _html(p)]


def dropdown_pages() -> list[str]:
    return [p for p in PAGES if "sd-dropdown" in _html(p)]


def toc_page() -> str:
    """A numbered chapter with section headings, hence a Contents sidebar."""
    pages = [p for p in math_pages() if p.startswith("chapters/") and 'class="page-toc' in _html(p)]
    return pages[0] if pages else "<none>"


def axe_sample() -> list[str]:
    """Every exercise page, the first chapter with equations and the first with dropdowns."""
    sample = exercise_pages()
    for extra in (math_pages(), dropdown_pages()):
        chapters = [p for p in extra if p.startswith("chapters/") and p not in sample]
        sample += chapters[:1]
    return sample or ["<none>"]


def window(width: int) -> tuple[int, int]:
    """The window of ``width`` px: a phone's or a desktop's."""
    return PHONE_WINDOW if width == PHONE else DESKTOP_WINDOW


def open_page(tabs: Tabs, rel: str, width: int, mode: str) -> Tab:
    """``rel`` opened offline at ``width`` px in colour ``mode`` (as if chosen with the button),
    settled, and loaded anew: for a test that changes the page."""
    return tabs.open(rel, window(width), mode)


@pytest.fixture(scope="module")
def look(request: pytest.FixtureRequest) -> tuple[str, int, str]:
    """(rel, width, mode) of a page that tests only read. Module-scoped, so that pytest runs the
    tests of one page, width and mode one after the other, and the page is loaded once for them
    (it is its parameter, ``looks``, that groups them)."""
    _need_site()
    assert request.param[0] != "<none>", "no pages to check"
    return request.param


@pytest.fixture
def read_only_page(look: tuple[str, int, str], tabs: Tabs) -> Tab:
    """The page of ``look``, opened offline and settled, for a test that only reads it."""
    rel, width, mode = look
    return tabs.show(rel, window(width), mode)


def looks(rels: list[str], windows: list[tuple[int, str]]) -> Any:
    """Parametrize ``look`` over every page of ``rels`` at every (width, mode) of ``windows``;
    the tests of one look run on one worker (``on_one_worker``)."""
    return pytest.mark.parametrize(
        "look",
        [
            on_one_worker((rel, width, mode), f"site-shell:{rel}-{mode}-{width}")
            for rel in rels
            for width, mode in windows
        ],
        indirect=True,
        scope="module",
    )


# --------------------------------------------------------------------------- toggles

#: What each toggle shows: the site's navigation, the page's table of contents.
SIDEBAR_CONTENT = {"primary": "nav.bd-docs-nav", "secondary": "nav.page-toc"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("width", [PHONE, DESKTOP])
@pytest.mark.parametrize("kind", ["primary", "secondary"])
def test_sidebar_toggle_shows_and_hides_its_sidebar(
    tabs: Tabs,
    kind: str,
    width: int,
    mode: str,
) -> None:
    _need_site()
    rel = toc_page()
    assert rel != "<none>", "no chapter with equations and a table of contents to test on"
    visit = open_page(tabs, rel, width, mode)
    page = visit.page
    toggle = page.locator(f".bd-header-article .{kind}-toggle")
    content = page.locator(SIDEBAR_CONTENT[kind])
    assert toggle.count() == 1, f"expected one {kind} toggle in the article header"
    assert toggle.is_visible(), f"{kind} toggle not visible at {width} px"

    def shown() -> bool:
        return content.count() == 1 and content.is_visible()

    def expanded() -> str | None:
        return toggle.get_attribute("aria-expanded")

    def becomes(state: str) -> None:
        """Wait for the sidebar to show or hide ("visible", "hidden") and the toggle to say
        so: events (the theme animates the sidebar), ended only by the backstop."""
        with contextlib.suppress(PlaywrightTimeout):
            content.wait_for(state=state)
            page.wait_for_function(
                "([el, v]) => el.getAttribute('aria-expanded') === v",
                arg=[toggle.element_handle(), "true" if state == "visible" else "false"],
            )

    if width == PHONE:
        # Sidebars start hidden; the toggle opens one as a dialog; Escape closes it.
        assert not shown(), f"{kind} sidebar visible before the toggle is clicked"
        assert expanded() == "false"
        toggle.click()
        becomes("visible")
        assert shown(), f"clicking the {kind} toggle at {width} px did not show its sidebar"
        assert expanded() == "true"
        page.keyboard.press("Escape")
        becomes("hidden")
        assert not shown(), f"Escape did not close the {kind} sidebar at {width} px"
        assert expanded() == "false"
    else:
        # Both sidebars start as columns; the toggle hides and shows the column.
        assert shown(), f"{kind} sidebar not visible at {width} px before any click"
        assert expanded() == "true"
        toggle.click()
        becomes("hidden")  # the theme animates the left sidebar out
        assert not shown(), f"clicking the {kind} toggle at {width} px did not hide it"
        assert expanded() == "false"
        toggle.click()
        becomes("visible")
        assert shown(), f"a second click on the {kind} toggle did not show it again"
        assert expanded() == "true"
        dialog = page.locator(f"#pst-{kind}-sidebar-modal")
        assert not dialog.evaluate("d => d.open"), "a dialog opened on a wide screen"
    assert not visit.problems, "\n".join(visit.problems)


# --------------------------------------------------------------------------- accessibility


@looks(axe_sample(), [(DESKTOP, "dark"), (PHONE, "light")])
def test_no_serious_accessibility_violations(
    look: tuple[str, int, str], read_only_page: Tab
) -> None:
    assert AXE.is_file(), f"expected axe-core at {AXE}: run `npm ci` (make book does)"
    read_only_page.page.add_script_tag(path=str(AXE))
    violations = read_only_page.page.evaluate(RUN_AXE, list(FAILING_IMPACTS))
    found = [f"({v['impact']}) {v['id']}: {v['help']} at {v['nodes']}" for v in violations]
    rel, width, mode = look
    assert not found, f"{rel}, {mode} mode, {width} px:\n  " + "\n  ".join(found)


# --------------------------------------------------------------------------- equations on a phone

#: For every display equation: is the formula inside the text column, does it scroll inside its
#: own box when wider, and does its number (Sphinx's span.eqno) stay clear of it?
EQUATIONS_REPORT = """
() => {
  const column = document.querySelector('article.bd-article').getBoundingClientRect();
  const out = [];
  document.querySelectorAll('div.math').forEach((div, i) => {
    const jax = div.querySelector('mjx-container');
    if (!jax) { out.push({i, problem: 'not typeset'}); return; }
    const box = jax.getBoundingClientRect();
    const text = (div.id || div.textContent.trim()).slice(0, 60);
    const problems = [];
    if (box.left < column.left - 0.5 || box.right > column.right + 0.5 ||
        box.right > window.innerWidth + 0.5) {
      problems.push(`formula box ${Math.round(box.left)}..${Math.round(box.right)} px outside ` +
                    `the column ${Math.round(column.left)}..${Math.round(column.right)} px`);
    }
    const scrolls = ['auto', 'scroll'].includes(getComputedStyle(jax).overflowX);
    if (jax.scrollWidth > jax.clientWidth + 1 && !scrolls) {
      problems.push(`formula ${jax.scrollWidth} px wide in a ${jax.clientWidth} px box ` +
                    'that does not scroll');
    }
    // What is drawn: the formula's content, clipped to its box.
    const inner = jax.firstElementChild ? jax.firstElementChild.getBoundingClientRect() : box;
    const drawn = {left: Math.max(box.left, inner.left), right: Math.min(box.right, inner.right),
                   top: Math.max(box.top, inner.top), bottom: Math.min(box.bottom, inner.bottom)};
    const eqno = div.querySelector('span.eqno');
    if (eqno) {
      const n = eqno.getBoundingClientRect();
      const overlap = Math.min(n.right, drawn.right) - Math.max(n.left, drawn.left);
      const vertical = Math.min(n.bottom, drawn.bottom) - Math.max(n.top, drawn.top);
      if (overlap > 0.5 && vertical > 0.5) {
        problems.push(`equation number overlaps the formula by ${Math.round(overlap)} px`);
      }
    }
    if (problems.length) out.push({i, text, problem: problems.join('; ')});
  });
  return out;
}
"""


@looks(math_pages() or ["<none>"], [(PHONE, "light")])
def test_equations_fit_the_column_on_a_phone(read_only_page: Tab) -> None:
    bad = read_only_page.page.evaluate(EQUATIONS_REPORT)
    assert not bad, f"{read_only_page.rel} at {PHONE} px:\n  " + "\n  ".join(
        f"equation {b['i']} ({b.get('text', '')}): {b['problem']}" for b in bad
    )


# --------------------------------------------------------------------------- print


def test_printed_page_opens_the_answers(tabs: Tabs) -> None:
    _need_site()
    pages = dropdown_pages()
    assert pages, "no page with dropdowns (answers) in the site"
    rel = pages[0]
    visit = open_page(tabs, rel, DESKTOP, "light")
    page = visit.page
    answers = page.locator("details.sd-dropdown .sd-summary-content")
    n = answers.count()
    assert n > 0, f"{rel}: expected dropdown answers"
    on_screen = [answers.nth(i).is_visible() for i in range(n)]
    assert not any(on_screen), f"{rel}: answers shown on screen before being opened"
    page.emulate_media(media="print")
    try:
        printed = [answers.nth(i).is_visible() for i in range(n)]
    finally:
        page.emulate_media(media="null")  # the screen again, for the next page of the tab
    assert all(printed), f"{rel}: {printed.count(False)} of {n} answers hidden when printed"


# --------------------------------------------------------------------------- Live Code offline


def test_live_code_offline_says_what_it_needs(tabs: Tabs) -> None:
    _need_site()
    pages = [p for p in exercise_pages() if "btn-launch-thebe" in _html(p)]
    assert pages, "no exercise page with a Live Code button"
    rel = pages[0]
    visit = open_page(tabs, rel, DESKTOP, "light")
    page = visit.page
    page.locator(".dropdown-launch-buttons > button").click()
    page.locator(".btn-launch-thebe").click()
    note = page.locator(".site-thebe-unavailable")
    note.wait_for(state="visible")  # an event; only the backstop ends a wait for a note
    text = note.inner_text()
    spinner = page.locator(".thebe-launch-button")
    left_spinning = spinner.count() > 0 and spinner.is_visible()
    assert "internet" in text, text
    assert "Binder" in text, text
    assert ".ipynb" in text, text
    assert not left_spinning, f"{rel}: the 'Loading thebe' spinner is still shown"
    # Offline, the only failure allowed is the blocked request for thebe itself.
    others = [p for p in visit.problems if "thebe" not in p and "ERR_BLOCKED_BY_CLIENT" not in p]
    assert not others, "\n".join(others)
