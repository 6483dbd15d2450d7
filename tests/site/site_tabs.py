"""Pages of the built site loaded in one tab per window size and colour mode, for browser tests.

The browser tests of the site (``tests/site/test_site_content.py``,
``tests/site/test_site_shell.py``) and of its explorables (``tests/explorables/test_front_ends.py``)
open many pages at a few window sizes and colour modes. A new tab (or context) per page starts a
renderer process, which costs as much as loading the page; :class:`Tabs` keeps one tab per (size,
mode) for a module and loads each page in it, as a reader goes from page to page. Every load is a
new document, with what :class:`~test_site.PageVisit` records of it: every request outside the
site blocked and counted, console errors, uncaught exceptions, failed requests and HTTP errors.

A page that tests only read is loaded once and read by all of them (:meth:`Tabs.show`); a test
that clicks, types or changes the page gets it loaded anew (:meth:`Tabs.open`), and the next
reader too. What a test sees never depends on which test ran before it or in which process.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_site import BACKSTOP_MS, WAIT_FOR_MATHJAX, PageVisit

#: The window (width, height) of a phone and of a desktop.
PHONE_WINDOW, DESKTOP_WINDOW = (390, 844), (1280, 900)


class Tab(PageVisit):
    """A :class:`PageVisit` whose page is a tab of :class:`Tabs`, loaded with page after page.

    ``PageVisit`` opens a context per page; a tab records the same problems through the same
    handlers, for the page it shows now (``problems`` starts empty at each load).
    """

    def __init__(self, context: Any, base: str) -> None:
        self.base, self.rel = base, ""
        self.problems: list[str] = []
        self.context = context
        self.page = context.new_page()
        self.page.route("**/*", self._route)
        self._watch(self.page)
        #: How many pages the tab has loaded: a page held since an earlier load is gone.
        self.loads = 0
        #: Whether a test may have clicked, typed or started requests on the page it shows.
        self.touched = False

    def load(self, rel: str) -> None:
        """Load ``rel`` as a new document. After a page a test has touched, the mouse leaves
        the window and the tab goes to a blank page first, which ends the page's requests: no
        hover, and no problem of the last page, reaches the new one."""
        if self.touched:
            self.page.mouse.move(-1, -1)
            self.page.goto("about:blank")
            self.touched = False
        self.problems.clear()
        self._inflight.clear()
        self.rel = rel
        self.loads += 1
        self.page.goto(self.base + rel, wait_until="load")


class Tabs:
    """One tab per (window size, colour mode) of a module, and the pages loaded in them.

    ``mode`` ``None`` leaves the colour mode to the theme (light in headless Chromium); "light"
    or "dark" is stored as the reader's choice before the page draws, as the theme's button does.
    """

    def __init__(self, browser: Any, base: str) -> None:
        self.browser, self.base = browser, base
        self._tabs: dict[tuple[int, int, str | None], Tab] = {}
        #: What each tab shows untouched since it loaded it (None: changed by a test).
        self._showing: dict[tuple[int, int, str | None], str | None] = {}

    def _tab(self, size: tuple[int, int], mode: str | None) -> Tab:
        look = (*size, mode)
        if look not in self._tabs:
            context = self.browser.new_context(
                viewport={"width": size[0], "height": size[1]}, service_workers="block"
            )
            context.set_default_timeout(BACKSTOP_MS)
            context.set_default_navigation_timeout(BACKSTOP_MS)
            if mode is not None:
                # The theme reads the reader's choice from localStorage before it draws the page.
                context.add_init_script(
                    f"localStorage.setItem('mode', '{mode}');"
                    f" localStorage.setItem('theme', '{mode}');"
                )
            self._tabs[look] = Tab(context, self.base)
        return self._tabs[look]

    def _load(self, rel: str, size: tuple[int, int], mode: str | None) -> Tab:
        """``rel`` loaded, MathJax done, settled (every font, image, widget and request done:
        :meth:`PageVisit.settle`), and in colour ``mode``."""
        tab = self._tab(size, mode)
        self._showing[(*size, mode)] = None
        tab.load(rel)
        tab.page.evaluate(WAIT_FOR_MATHJAX)
        tab.settle()
        if mode is not None:
            theme = tab.page.evaluate("document.documentElement.dataset.theme")
            assert theme == mode, f"{rel}: expected the page in {mode} mode, it is in {theme} mode"
        return tab

    def show(
        self, rel: str, size: tuple[int, int] = DESKTOP_WINDOW, mode: str | None = None
    ) -> Tab:
        """``rel`` for a test that only reads it: loaded unless its tab shows it untouched."""
        look = (*size, mode)
        if self._showing.get(look) == rel:
            return self._tabs[look]
        tab = self._load(rel, size, mode)
        self._showing[look] = rel
        return tab

    def open(
        self, rel: str, size: tuple[int, int] = DESKTOP_WINDOW, mode: str | None = None
    ) -> Tab:
        """``rel`` loaded anew for a test that changes it (the next test gets it anew too)."""
        tab = self._load(rel, size, mode)
        tab.touched = True
        return tab

    def close(self) -> None:
        for tab in self._tabs.values():
            tab.context.close()
        self._tabs.clear()
        self._showing.clear()


def on_one_worker(value: Any, group: str) -> Any:
    """``value`` as a parameter whose tests run on one worker under ``--dist loadgroup`` (``make
    test``): the tests of one page state are then sent to one worker, which loads the page once,
    where two workers taking turns at the tests would each load it. ``group`` names the state
    (``module:state``); the parameter's id is the state.

    xdist groups the tests whose ids end in ``@group``, an ending ``tests/conftest.py`` must give
    a test with an ``xdist_group`` mark (pytest 9 ignores the one xdist writes); without it the
    tests are spread as any others, and only slower."""
    return pytest.param(value, id=group.split(":", 1)[-1], marks=pytest.mark.xdist_group(group))


@pytest.fixture(scope="module")
def tabs(browser: Any, server: str) -> Iterator[Tabs]:
    """The module's :class:`Tabs` on the site that ``server`` serves (``browser``, ``server``:
    the fixtures of ``tests/site/test_site.py``, which the test module imports)."""
    shared = Tabs(browser, server)
    try:
        yield shared
    finally:
        shared.close()
