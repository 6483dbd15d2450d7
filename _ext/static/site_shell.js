/* Fixes to the page shell (navigation, Live Code, printing). Added to every page, in <head>, by
 * _ext/offline_site.py; it loads nothing from the network.
 *
 * 1. Sidebar toggles. pydata-sphinx-theme 0.17 renders a pair of toggles ("primary-toggle",
 *    "secondary-toggle") in its top navbar, and sphinx-book-theme renders its own pair in the
 *    article header, hiding the navbar pair with CSS. Both themes' scripts bind their click
 *    handlers with document.querySelector(".primary-toggle") / (".secondary-toggle"), which
 *    returns the FIRST match: the hidden navbar button. The visible buttons get no handler and
 *    clicking them does nothing (pydata/pydata-sphinx-theme#2451). We remove the hidden, never
 *    displayed navbar pair after the page is parsed and before either theme binds (the
 *    "interactive" readystatechange runs before deferred scripts and DOMContentLoaded), so the
 *    themes bind the visible pair: a dialog on narrow screens, a collapsing column on wide ones.
 * 2. Contents toggle on wide screens (>= 1200 px). There the theme shows the page's table of
 *    contents as a column and hides its toggle; we show the toggle and let it hide and show that
 *    column, as the navigation toggle does for the left sidebar.
 * 3. Both toggles report aria-expanded (whether their sidebar is shown).
 * 4. Live Code (thebe) loads its library from unpkg.com and a kernel from mybinder.org. Offline
 *    the theme waits forever on "Loading thebe"; we say what it needs instead.
 * 5. Printing opens the dropdowns (answers), and closes again those it opened afterwards (CSS in
 *    offline_site.css does the same where ::details-content is supported).
 * 6. Display formulas that scroll sideways can be reached with the keyboard. MathJax's menu made
 *    every formula focusable; the site's formulas are typeset when it is built, with no menu
 *    (_ext/static_math.py), so each display formula gets tabindex="0" once the page has loaded
 *    (axe: scrollable-region-focusable), and arrow keys scroll it.
 */
(function () {
  "use strict";

  // sphinx-book-theme's breakpoints: the left sidebar is a column from 992 px, the page's
  // table of contents from 1200 px; below, each opens as a dialog.
  var WIDE_NAV = "(min-width: 992px)";
  var WIDE_TOC = "(min-width: 1200px)";
  var TOC_HIDDEN = "site-toc-hidden";

  function articleToggle(kind) {
    return document.querySelector(".bd-header-article ." + kind + "-toggle");
  }

  // 1. ----------------------------------------------------------------------------------------
  function dropHiddenDuplicateToggles() {
    ["primary", "secondary"].forEach(function (kind) {
      if (!articleToggle(kind)) return; // keep the navbar's if it is the only one
      document.querySelectorAll("#pst-header ." + kind + "-toggle").forEach(function (b) {
        b.remove();
      });
    });
  }

  // 3. ----------------------------------------------------------------------------------------
  function shown(kind) {
    var dialog = document.getElementById("pst-" + kind + "-sidebar-modal");
    if (dialog && dialog.open) return true;
    var sidebar = document.getElementById("pst-" + kind + "-sidebar");
    if (!sidebar) return false;
    if (kind === "primary") {
      return matchMedia(WIDE_NAV).matches && !sidebar.classList.contains("pst-sidebar-hidden");
    }
    return matchMedia(WIDE_TOC).matches && !sidebar.classList.contains(TOC_HIDDEN);
  }

  function syncExpanded() {
    ["primary", "secondary"].forEach(function (kind) {
      var button = articleToggle(kind);
      var sidebar = document.getElementById("pst-" + kind + "-sidebar");
      if (!button || !sidebar) return;
      button.setAttribute("aria-controls", sidebar.id);
      button.setAttribute("aria-expanded", shown(kind) ? "true" : "false");
    });
  }

  // 2. ----------------------------------------------------------------------------------------
  // Capture phase on the document: runs before any handler on the button itself.
  document.addEventListener(
    "click",
    function (event) {
      var button = event.target.closest && event.target.closest(".bd-header-article .secondary-toggle");
      if (!button || !matchMedia(WIDE_TOC).matches) return;
      var sidebar = document.getElementById("pst-secondary-sidebar");
      if (!sidebar) return;
      event.preventDefault();
      event.stopPropagation(); // no dialog: the column itself collapses
      sidebar.classList.toggle(TOC_HIDDEN);
      button.blur(); // dismiss its tooltip
      syncExpanded();
    },
    true,
  );
  // Once the themes' own handlers have run (they stop the click's propagation, so listen in the
  // capture phase and wait a tick), and when a dialog closes.
  document.addEventListener(
    "click",
    function (event) {
      if (event.target.closest && event.target.closest(".sidebar-toggle")) setTimeout(syncExpanded, 0);
    },
    true,
  );
  document.addEventListener("close", function () { setTimeout(syncExpanded, 0); }, true);
  window.addEventListener("resize", syncExpanded);

  // 4. ----------------------------------------------------------------------------------------
  var THEBE_HELP =
    "Live Code needs an internet connection: it loads thebe from unpkg.com and starts a " +
    "Python kernel on mybinder.org (Binder). Offline, download this notebook (.ipynb) from " +
    "the download menu and run it in Jupyter.";

  function thebeUnavailable() {
    var button = document.querySelector(".thebe-launch-button");
    if (!button || document.querySelector(".site-thebe-unavailable")) return;
    var note = document.createElement("p");
    note.className = "site-thebe-unavailable";
    note.setAttribute("role", "alert");
    note.textContent = THEBE_HELP;
    button.replaceWith(note);
  }

  function isThebeScript(el) {
    return (
      el && el.tagName === "SCRIPT" && typeof THEBE_JS_URL !== "undefined" && el.src === THEBE_JS_URL
    );
  }

  // A script that fails to load fires "error" on itself only (no bubbling): capture it.
  window.addEventListener(
    "error",
    function (event) {
      if (isThebeScript(event.target)) thebeUnavailable();
    },
    true,
  );
  // A network that neither answers nor fails: give up waiting after 20 s.
  document.addEventListener("click", function (event) {
    if (!(event.target.closest && event.target.closest(".btn-launch-thebe"))) return;
    setTimeout(function () {
      if (typeof thebelab === "undefined") thebeUnavailable();
    }, 20000);
  });

  // 5. ----------------------------------------------------------------------------------------
  var openedForPrint = [];
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll("details:not([open])").forEach(function (d) {
      d.open = true;
      openedForPrint.push(d);
    });
  });
  window.addEventListener("afterprint", function () {
    openedForPrint.forEach(function (d) { d.open = false; });
    openedForPrint = [];
  });

  // ---------------------------------------------------------------------------------------------
  function onParsed() {
    dropHiddenDuplicateToggles();
    var launch = document.querySelector(".btn-launch-thebe");
    if (launch) launch.setAttribute("title", "Live Code: run this page on mybinder.org (needs internet)");
  }
  if (document.readyState === "loading") {
    document.addEventListener("readystatechange", function once() {
      if (document.readyState !== "interactive") return;
      document.removeEventListener("readystatechange", once);
      onParsed();
    });
  } else {
    onParsed();
  }
  document.addEventListener("DOMContentLoaded", syncExpanded);

  // ---------------------------------------------------------------------------------------------
  function focusableFormulas() {
    document.querySelectorAll('mjx-container[display="true"]:not([tabindex])').forEach(function (m) {
      m.setAttribute("tabindex", "0");
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    var mj = window.MathJax;
    // formulas typeset when the site was built (_ext/static_math.py) are there already
    if (mj && mj.startup && mj.startup.promise) mj.startup.promise.then(focusableFormulas);
    else focusableFormulas();
  });
})();
