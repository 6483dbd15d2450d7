"""What a learner reads on the built site: symbols, code, deliberate errors, figures, paths.

Checked on ``_build/html`` (``$SITE_DIR`` for another build):

- a link to a glossary term, a glossary heading and an index entry show a symbol such as h_i
  with a real subscript, never its plain-text source (``h_i``, ``s_{t-1}``);
- no code cell, output or code block is wider than the text column at a 1280 px window;
- a cell that raises an error on purpose (tag ``raises-exception``) shows the error's final
  ``ErrorType: message`` line, the one the kernel reported (the build's execution cache), whole
  and with no file path;
- no file of the site names a path of the machine that built it;
- the smallest text of every figure from a cell is at least ``MIN_TEXT_PX`` px on screen, as shown
  in the column (a link to the full-size image does not excuse it); four figures that were once
  too small to read (``NAMED_FIGURES``) are on the site, so a rename cannot take them out of it.

The browser checks (Chromium, network cut) reuse the fixtures of ``tests/site/test_site.py``; each
page is opened once per process (the pages one after the other in one tab:
``tests/site/site_tabs.py``) and measured for all of them in one script. The unit tests at the
end check the extension that does the rewriting (``_ext/readable.py``) on its own.
"""

from __future__ import annotations

import importlib
import re
import struct
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from site_tabs import Tabs, on_one_worker, tabs  # noqa: F401  (the fixture, used by name)
from test_site import BOOK, NO_SITE, PAGES, SITE, PageVisit, browser, server  # noqa: F401

from conftest import ROOT

#: The smallest text a figure draws (points); tests/test_plots.py holds attnlib.plots to it.
SMALLEST_FONT_PT = 8
#: The smallest on-screen text size (CSS px) a figure may have at a 1280 px window: body text is
#: 16 px; below 9 px tick labels and cell values stop being readable.
MIN_TEXT_PX = 9.0

#: A path of the machine that built the site: this repository, its Python environment, the
#: temporary folder and the usual places of a checkout.
OUR_PATHS = re.compile(
    "|".join(
        re.escape(str(p)) + r"\b"
        for q in (ROOT, Path(sys.prefix), Path(sysconfig.get_paths()["purelib"]))
        for p in sorted({q, q.resolve()})
    )
    + r"|/tmp/[\w.-]+/|/work/[\w.-]+/|site-packages/"
)
#: Any home folder (Linux, macOS, Windows): checked in every file the build writes, but not in
#: the third-party files served as they are from npm (``_vendor/``: MathJax's speech rules name
#: their author's folder, /Users/...).
HOME_PATHS = re.compile(r"/home/[\w.-]+/|/root/[\w.-]+|/Users/[\w.-]+/|[A-Z]:\\{1,2}Users\\")
MACHINE_PATH = re.compile(f"{OUR_PATHS.pattern}|{HOME_PATHS.pattern}")
TEXT_SUFFIXES = {".html", ".js", ".json", ".txt", ".css", ".ipynb", ".log", ".svg", ".xml", ".md"}


# --------------------------------------------------------------------------- fast: no browser


@pytest.mark.slow  # needs the built site
def test_no_machine_path_anywhere_in_the_site() -> None:
    assert (SITE / "index.html").is_file(), f"no built site in {SITE}: run `make book` first"
    found = []
    for path in sorted(SITE.rglob("*")):
        if path.suffix not in TEXT_SUFFIXES or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        vendored = path.relative_to(SITE).parts[0] == "_vendor"
        for m in (OUR_PATHS if vendored else MACHINE_PATH).finditer(text):
            found.append(
                f"{path.relative_to(SITE)}: …{text[max(0, m.start() - 40) : m.end() + 40]}…"
            )
    assert not found, f"{len(found)} machine paths in the site:\n  " + "\n  ".join(found[:20])


# --------------------------------------------------------------------------- in the browser

MEASURE = r"""
() => {
  const article = document.querySelector('.bd-article') || document.body;
  const column = article.getBoundingClientRect();
  const out = {terms: [], cells: 0, wide: [], errors: [], figures: []};
  // (2) symbols: links to glossary terms (pages, genindex), the glossary's own headings
  const raw = /_|\{|\}|\\[a-zA-Z]/;
  document.querySelectorAll('a[href*="glossary.html#term-"], a[href^="#term-"], dl.glossary > dt')
    .forEach(el => {
      const shown = el.innerText.replace(/#$/, '').trim();
      if (raw.test(shown)) out.terms.push(shown);
    });
  // (3) code within the column: every cell, output and code block
  out.cells = article.querySelectorAll('div.cell').length;
  const blocks = article.querySelectorAll('pre, div.cell');
  blocks.forEach(el => {
    const r = el.getBoundingClientRect();
    if (!r.width) return;
    const scrolls = el.tagName === 'PRE' && el.scrollWidth > el.clientWidth + 1;
    const sticksOut = r.right > column.right + 1;
    if (scrolls || sticksOut) {
      const cell = el.closest('div.cell');
      const id = cell ? Array.from(article.querySelectorAll('div.cell')).indexOf(cell) : -1;
      out.wide.push({cell: id, text: el.innerText.split('\n')[0].slice(0, 60),
                     width: Math.max(el.scrollWidth, r.width), column: column.width});
    }
  });
  // (3) deliberate errors: what the reader sees of each
  // (a folded cell, tag hide-cell, is read as the reader sees it once opened, then closed again)
  article.querySelectorAll('div.cell.tag_raises-exception').forEach(cell => {
    const folds = [...cell.querySelectorAll('details')].filter(d => !d.open);
    folds.forEach(d => { d.open = true; });
    const pre = cell.querySelector('.cell_output .traceback pre') ||
                cell.querySelector('.cell_output pre');
    out.errors.push(pre ? {text: pre.innerText.trim(),
                           cut: pre.scrollWidth > pre.clientWidth + 1 ||
                                pre.scrollHeight > pre.clientHeight + 1} : null);
    folds.forEach(d => { d.open = false; });
  });
  // (4) figures from cells (not a widget's live image)
  article.querySelectorAll('.cell_output img').forEach(img => {
    if (img.closest('.widget-subarea') || !img.naturalWidth) return;
    const r = img.getBoundingClientRect();
    if (!r.width) return;
    const link = img.closest('a[href]');
    out.figures.push({src: new URL(img.currentSrc || img.src).pathname,
                      natural: img.naturalWidth, shown: r.width,
                      link: link ? new URL(link.href).pathname : null,
                      id: (img.closest('figure') || {}).id || ''});
  });
  return out;
}
"""

#: What MEASURE found on each page, by page: measured once per process, whichever test asks first.
_MEASURED: dict[str, dict[str, Any]] = {}


def measured(tabs: Tabs, rel: str) -> dict[str, Any]:  # noqa: F811
    """Open ``rel`` once (1280 × 900, offline, settled) and measure everything this module
    checks (the pages are loaded one after the other in one tab: :mod:`site_tabs`)."""
    assert rel != NO_SITE, f"no built site in {SITE}: run `make book` first"
    if rel not in _MEASURED:
        _MEASURED[rel] = tabs.show(rel).page.evaluate(MEASURE)
    return _MEASURED[rel]


def content_pages() -> list[str]:
    """Pages with a body to read (the root index.html only redirects)."""
    return [p for p in PAGES if p != "index.html"] or [NO_SITE]


def by_page(rels: list[str]) -> Any:
    """Parametrize ``rel`` so that every test of a page runs with the others of that page: one
    after the other (``scope="module"``) and on one worker (``on_one_worker``), which measures it
    once."""
    return pytest.mark.parametrize(
        "rel",
        [on_one_worker(rel, f"site-content:{rel}") if rel != NO_SITE else rel for rel in rels],
        scope="module",
    )


@pytest.mark.slow
@by_page(content_pages())
def test_symbols_show_subscripts_not_tex(tabs: Tabs, rel: str) -> None:  # noqa: F811
    raw = measured(tabs, rel)["terms"]
    assert not raw, f"{rel}: {len(raw)} glossary symbols shown as plain-text source: {raw[:10]}"


@pytest.mark.slow
@by_page(content_pages())
def test_code_stays_within_the_column(tabs: Tabs, rel: str) -> None:  # noqa: F811
    m = measured(tabs, rel)
    wide = m["wide"]
    cells = {w["cell"] for w in wide if w["cell"] >= 0}
    assert not wide, (
        f"{rel}: {len(cells)} of {m['cells']} code cells (and {len(wide)} blocks in all) wider "
        f"than the column at 1280 px: {wide[:5]}"
    )


def executed_errors(rel: str) -> list[str]:
    """``ErrorType: message`` of every raises-exception cell, as the kernel reported it: from the
    build's execution cache (``_build/.jupyter_cache``), not from the page."""
    import nbformat
    from jupyter_cache import get_cache

    cache_dir = SITE.parent / ".jupyter_cache"
    assert cache_dir.is_dir(), f"expected the build's execution cache in {cache_dir}"
    source = (BOOK / rel).with_suffix(".ipynb")  # _sources/ offers the live copy for download
    record = get_cache(str(cache_dir)).match_cache_notebook(nbformat.read(source, as_version=4))
    nb = get_cache(str(cache_dir)).get_cache_bundle(record.pk).nb
    messages = []
    for cell in nb.cells:
        if "raises-exception" in cell.get("metadata", {}).get("tags", []):
            errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            assert errors, f"{rel}: a raises-exception cell raised nothing"
            messages.append(f"{errors[-1]['ename']}: {errors[-1]['evalue']}")
    return messages


def error_pages() -> list[str]:
    return [
        p
        for p in PAGES
        if (BOOK / p).with_suffix(".ipynb").is_file()
        and "raises-exception" in (BOOK / p).with_suffix(".ipynb").read_text("utf-8")
    ] or [NO_SITE]


@pytest.mark.slow
@by_page(error_pages())
def test_deliberate_errors_show_their_final_message(tabs: Tabs, rel: str) -> None:  # noqa: F811
    shown = measured(tabs, rel)["errors"]
    expected = executed_errors(rel)
    assert len(shown) == len(expected), f"{rel}: {len(shown)} error cells, {len(expected)} errors"
    for k, (seen, message) in enumerate(zip(shown, expected, strict=True)):
        assert seen is not None, f"{rel}: error cell {k} shows no output"
        assert seen["text"] == message.strip(), (
            f"{rel}: error cell {k} shows\n{seen['text'][:400]}\nexpected only\n{message}"
        )
        assert not seen["cut"], f"{rel}: error cell {k} does not show its message whole"
        assert not MACHINE_PATH.search(seen["text"]), f"{rel}: a path in error {k}: {seen['text']}"


def png_dpi(path: Path) -> float:
    """The resolution a PNG was saved at (its pHYs chunk; matplotlib writes it), in dpi."""
    data = path.read_bytes()
    at = data.find(b"pHYs")
    assert at > 0, f"{path.name} records no resolution (pHYs)"
    x, _, unit = struct.unpack(">IIB", data[at + 4 : at + 13])
    assert unit == 1, f"{path.name}: pHYs unit {unit}, not metres"
    return x * 0.0254


#: Figures that were once too small to read, now readable in place: the step diagram of
#: attention_step, the longest sentences of bottleneck, Luong's maps in heatmaps and the three
#: maps of one sentence in interpretability.
NAMED_FIGURES = {"fig-step-diagram", "fig-bn-longest", "fig-hm-luong", "fig-int-three-maps"}


def smallest_text_px(fig: dict[str, Any], shown: float) -> float | None:
    """The on-screen size (px) of a figure's 8 pt text when its image is ``shown`` px wide."""
    png = SITE / fig["src"].lstrip("/")
    if png.suffix != ".png" or not png.is_file():
        return None
    return SMALLEST_FONT_PT * png_dpi(png) / 72 * shown / fig["natural"]


@pytest.mark.slow
@by_page(content_pages())
def test_figure_text_is_readable_at_1280px(tabs: Tabs, rel: str) -> None:  # noqa: F811
    """Every figure, as shown in the column (no exception for one that links to its full size)."""
    small = []
    for fig in measured(tabs, rel)["figures"]:
        px = smallest_text_px(fig, fig["shown"])
        if px is None or px >= MIN_TEXT_PX:
            continue
        scale = fig["shown"] / fig["natural"]
        small.append(f"{fig['id'] or fig['src']}: shown at {scale:.0%}, {px:.1f} px")
    assert not small, (
        f"{rel}: figures whose {SMALLEST_FONT_PT} pt text is under {MIN_TEXT_PX} px: {small}"
    )


@pytest.mark.slow
def test_the_named_figures_are_on_the_site() -> None:
    """The figures checked in place above exist (a renamed figure would escape the check)."""
    assert (SITE / "index.html").is_file(), f"no built site in {SITE}: run `make book` first"
    html = "".join(
        (SITE / "chapters" / f"{ch}.html").read_text(encoding="utf-8")
        for ch in ("attention_step", "bottleneck", "heatmaps", "interpretability")
    )
    missing = [name for name in NAMED_FIGURES if f'id="{name}"' not in html]
    assert not missing, f"figures not found: {missing}"


# --------------------------------------------------------------------------- the extension itself


def _readable() -> Any:
    sys.path.insert(0, str(ROOT / "_ext"))
    try:
        return importlib.import_module("readable")
    finally:
        sys.path.remove(str(ROOT / "_ext"))


def glossary_terms() -> list[str]:
    """The terms of chapters/glossary.md: the unindented lines of its ``{glossary}`` block."""
    text = (ROOT / "chapters" / "glossary.md").read_text(encoding="utf-8")
    block = text.split("```{glossary}", 1)[1].split("```", 1)[0]
    return [ln.strip() for ln in block.splitlines() if ln.strip() and not ln.startswith(" ")]


def _visible(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def test_every_glossary_symbol_gets_a_readable_form() -> None:
    ext = _readable()
    terms = glossary_terms()
    assert {"h_i", "s_{t-1}", "α_ti", "c_t", "T_x"} <= set(terms), terms
    for term in terms:
        shown = ext.symbol_html(term)
        if "_" in term:
            assert shown is not None, f"{term!r} is not recognised as a symbol"
        if shown is not None:
            assert not re.search(r"[_{}]", _visible(shown)), f"{term!r} shown as {shown!r}"
    assert ext.symbol_html("mask") is None  # a word is left as it is


def test_symbols_are_drawn_with_a_real_subscript() -> None:
    ext = _readable()
    shown = ext.symbol_html("s_{t-1}")
    assert _visible(shown) == "st\N{MINUS SIGN}1", shown
    assert re.search(r"<sub>.*t.*\N{MINUS SIGN}1</sub>", shown), shown
    assert _visible(ext.symbol_html("α_ti")) == "αti"
    assert "<sub>" not in ext.symbol_html("H")


TRACEBACK = """\
---------------------------------------------------------------------------
ValueError                                Traceback (most recent call last)
Cell In[5], line 1
----> 1 al.context(np.exp(e), h)

File /somewhere/attnlib/core.py:370, in context(alpha, h, check_weights)
    369 if check_weights:
--> 370     _check_weights(alpha)

File /somewhere/attnlib/core.py:125, in _check_weights(alpha, name)
--> 125     raise ValueError(
    126         f"{name} must sum to 1 over i"
    127     )

ValueError: alpha must sum to 1 over i for every step t
did you forget the softmax denominator?"""


def test_a_deliberate_error_keeps_only_its_message() -> None:
    ext = _readable()
    assert ext.final_message(TRACEBACK) == (
        "ValueError: alpha must sum to 1 over i for every step t\n"
        "did you forget the softmax denominator?"
    )
    chained = TRACEBACK.replace(
        "\nValueError: alpha",
        "\nKeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n"
        "\nFile /somewhere/b.py:3, in g()\n----> 3 raise TypeError('no')\n\nTypeError: no\n"
        "ValueError: alpha",
    )
    assert ext.final_message(chained).startswith("TypeError: no")
    assert ext.final_message("no traceback here, just text") == "no traceback here, just text"


def test_png_width_reads_the_header(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(3.0, 1.0), dpi=100)
    fig.savefig(tmp_path / "f.png", dpi=100)
    plt.close(fig)
    assert _readable().png_width(tmp_path / "f.png") == 300
    (tmp_path / "g.png").write_bytes(b"not a png")
    assert _readable().png_width(tmp_path / "g.png") is None


#: Sphinx's search has listed every result, and each has its snippet or its description.
SEARCH_DONE = """
() => /finished/i.test((document.querySelector('#search-results .search-summary') || {}).textContent || '')
      && Array.from(document.querySelectorAll('#search-results li'))
              .every(li => li.querySelector(':scope > p, :scope > span'))
"""


@pytest.mark.slow
def test_search_snippets_write_symbols_in_unicode(browser: Any, server: str) -> None:  # noqa: F811
    """Search snippets are plain text: symbols and inline math read "sₜ₋₁", not "s_{t-1}"."""
    assert (SITE / "search.html").is_file(), f"no built site in {SITE}: run `make book` first"
    visit = PageVisit(browser, server, "search.html")
    try:
        visit.page.goto(server + "search.html?q=encoder+hidden+state", wait_until="load")
        visit.page.wait_for_selector("#search-results li p")
        made = visit.page.evaluate(
            """() => Search.htmlToText('<div role="main"><p>The state <span class="readable-sym">'
                 + '<span class="readable-var">s</span><sub><span class="readable-var">t</span>'
                 + '\\u22121</sub></span> meets <span class="math">\\\\(W_a h_i\\\\)</span>.</p></div>')"""
        )
        # the snippets are filled in as their pages arrive: wait for the search to finish and
        # every result to have its snippet (or its description), and no page still on its way
        visit.page.wait_for_function(SEARCH_DONE)
        visit.settle()
        snippets = visit.page.eval_on_selector_all(
            "#search-results li p", "els => els.map(p => p.innerText)"
        )
    finally:
        visit.close()
    assert made.strip() == "The state sₜ₋₁ meets Wₐ hᵢ.", made
    assert any("hᵢ" in s for s in snippets), f"no snippet writes hᵢ: {snippets[:5]}"
    assert not visit.problems, "\n".join(visit.problems)


@pytest.mark.slow  # needs the built site
def test_citations_name_the_year_their_reference_is_listed_under() -> None:
    """An in-text citation reads the year of its entry's label in the list of references,
    letter included: two Cho et al. 2014 papers are "2014a" and "2014b" in both places."""
    refs = SITE / "chapters" / "references.html"
    assert refs.is_file(), f"no built site in {SITE}: run `make book` first"
    labels = {
        m.group(1): re.sub(r"<[^>]+>|\[|\]", "", m.group(2)).strip()
        for m in re.finditer(
            r'<div class="citation" id="([^"]+)"[^>]*>\s*<span class="label">(.*?)</span>\s*<p>',
            refs.read_text(encoding="utf-8"),
            re.S,
        )
    }
    assert len(labels) >= 10, f"expected the list of references in {refs}, found {labels}"
    letters = [lab for lab in labels.values() if re.search(r"\d{4}[a-z]$", lab)]
    assert letters, "expected two entries told apart by a letter (Cho et al., 2014a/2014b)"
    cited, wrong = 0, []
    for page in SITE.rglob("*.html"):
        if set(page.relative_to(SITE).parts) & {"_static", "_sources", "_vendor", "_images"}:
            continue
        for m in re.finditer(
            r'<a class="reference internal" href="(?:[^"#]*references\.html)?#([^"]+)"[^>]*>'
            r"(.*?)</a>",
            page.read_text(encoding="utf-8"),
        ):
            if m.group(1) not in labels:
                continue
            cited += 1
            year = labels[m.group(1)].rsplit(", ", 1)[-1]
            text = re.sub(r"<[^>]+>", "", m.group(2))
            if not re.search(rf"\b{re.escape(year)}$", text.strip()):
                wrong.append(f"{page.relative_to(SITE)}: {text!r} cites [{labels[m.group(1)]}]")
    assert cited >= 10, f"expected citations of the references, found {cited}"
    assert not wrong, "citations whose year differs from their label:\n  " + "\n  ".join(wrong)
