"""_ext/static_math.py: the site's formulas typeset at build time, with no MathJax in the browser.

The unit tests run the extension's pieces on their own (node and the pinned MathJax from
``node_modules``); the site tests read the built pages (``make test`` builds them first). The
browser test of ``tests/site/test_site.py`` checks, on every page, that each math element holds a
typeset formula and no error box, and the page-weight rows count what the pages request.
"""

from __future__ import annotations

import importlib
import re
import shutil
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest
from test_site import SITE

from conftest import ROOT

NEEDS_MATHJAX = pytest.mark.skipif(
    shutil.which("node") is None or not (ROOT / "node_modules" / "mathjax").is_dir(),
    reason="node and node_modules/mathjax come with `make book` (npm ci)",
)


@pytest.fixture(scope="module")
def static_math() -> Iterator[ModuleType]:
    sys.path.insert(0, str(ROOT / "_ext"))
    try:
        yield importlib.import_module("static_math")
    finally:
        sys.path.remove(str(ROOT / "_ext"))


PAGE = """<p>the weights <span class="math notranslate nohighlight">\\(\\alpha_{ti} &lt; 1\\)</span>
and <span class="math notranslate nohighlight">\\(h_i\\)</span>:</p>
<div class="math notranslate nohighlight" id="equation-x">
<span class="eqno">(1.2)<a class="headerlink" href="#equation-x">#</a></span>\\[
c_t = \\sum_{i=1}^{T_x} \\alpha_{ti} h_i
\\]</div>
<pre>\\(not math: code\\)</pre>"""


def test_formulas_are_found_in_sphinx_math_elements_only(static_math: ModuleType) -> None:
    found = static_math._formulas(PAGE)
    assert found == [
        ("\\alpha_{ti} < 1", False),  # HTML entities read back as TeX
        ("h_i", False),
        ("c_t = \\sum_{i=1}^{T_x} \\alpha_{ti} h_i", True),
    ]


@NEEDS_MATHJAX
def test_typeset_gives_mathjax_chtml_with_mathml_for_screen_readers(
    static_math: ModuleType,
) -> None:
    out, css = static_math.typeset([("\\alpha_{ti}", False), ("c_t = \\sum_i x", True)])
    inline, display = out
    assert inline.startswith('<mjx-container class="MathJax" jax="CHTML"')
    assert 'display="true"' not in inline
    assert 'display="true"' in display
    # the MathML copy names the symbols a screen reader reads out
    assert re.search(r"<mi>α</mi>.*<mi>t</mi>.*<mi>i</mi>", inline)
    assert "<mo>∑</mo>" in display or '<mo data-mjx-texclass="OP">∑</mo>' in display
    # the stylesheet draws exactly these characters, from the fonts the site serves
    assert ".mjx-c1D6FC" in css  # α (math italic)
    assert ".mjx-c2211" in css  # ∑
    assert ".mjx-c1D6FD" not in css  # β is in no formula sent
    assert static_math.FONT_URL in css


@NEEDS_MATHJAX
@pytest.mark.parametrize(
    ("tex", "why"),
    [
        ("\\frac{a", "Missing close brace"),
        ("h_i \\alphaa", "undefined control sequence \\\\alphaa"),
    ],
)
def test_a_formula_that_cannot_be_typeset_stops_the_build(
    static_math: ModuleType, tex: str, why: str
) -> None:
    from sphinx.errors import ExtensionError

    with pytest.raises(ExtensionError, match=why):
        static_math.typeset([("h_i", False), (tex, False)])


def _pages() -> list[str]:
    return sorted(str(p.relative_to(SITE)) for p in SITE.rglob("*.html"))


@pytest.mark.slow  # needs the built site
def test_no_page_loads_mathjax_or_keeps_raw_tex() -> None:
    assert (SITE / "index.html").is_file(), f"no built site in {SITE}: run `make book` first"
    loads, raw, typeset = [], [], 0
    for rel in _pages():
        text = (SITE / rel).read_text(encoding="utf-8")
        if re.search(r'<script[^>]*src="[^"]*mathjax|window\.MathJax\s*=', text, re.I):
            loads.append(rel)
        if re.search(r'class="math notranslate nohighlight"[^>]*>\s*(<span class="eqno">.*?'
                     r"</span>)?\\[\(\[]", text, re.S):  # fmt: skip
            raw.append(rel)
        typeset += text.count('<mjx-container class="MathJax" jax="CHTML"')
    assert not loads, f"pages still loading MathJax: {loads}"
    assert not raw, f"pages with TeX left untypeset: {raw}"
    assert typeset > 1000  # the chapters hold well over a thousand formulas


@pytest.mark.slow  # needs the built site
def test_the_stylesheet_is_linked_and_its_fonts_are_served() -> None:
    css_path = SITE / "_static" / "static-math.css"
    assert css_path.is_file(), f"no {css_path}: run `make book` first"
    css = css_path.read_text(encoding="utf-8")
    fonts = re.findall(r'url\("?([^")]+\.woff)"?\)', css)
    assert fonts, "the stylesheet names no font"
    missing = [f for f in fonts if not (css_path.parent / f).resolve().is_file()]
    assert not missing, f"fonts the stylesheet names but the site lacks: {missing}"
    unlinked = [
        rel
        for rel in _pages()
        if "<mjx-container" in (text := (SITE / rel).read_text(encoding="utf-8"))
        and "static-math.css" not in text
    ]
    assert not unlinked, f"pages with formulas but no stylesheet: {unlinked}"
