"""Math typeset when the site is built, not in the reader's browser, so pages stay light.

MathJax in the browser costs every page with a formula 0.76 MB of JavaScript (its loader, core,
TeX input, CommonHTML output and font data) before the first formula shows. The formulas of a
built page never change, so this extension typesets them once, at build time, with the same
pinned MathJax (``node_modules/mathjax``, run by node in ``_ext/tex2chtml.js``) and the same
output: CommonHTML, with a MathML copy for screen readers. A page then needs only one shared
stylesheet (``_static/static-math.css``, the characters the site uses) and the few MathJax web
fonts its formulas use.

* ``html-page-context``: Sphinx's MathJax scripts (the loader and its ``window.MathJax`` set-up)
  are taken off every page;
* ``build-finished``: every ``\\(...\\)`` and ``\\[...\\]`` that Sphinx wrote into the pages'
  ``math`` elements is sent to node in one batch and replaced by its typeset form, and the
  stylesheet is written. A formula MathJax cannot typeset (an error box, or an unknown command it
  would draw in red) fails the build with the page and the TeX.

Incremental builds rewrite only some pages; pages written earlier are already typeset. The TeX of
every formula typeset so far is kept in the doctree folder so the stylesheet, rebuilt each time,
still covers them.

Typeset math needs no JavaScript, so it also shows with scripts off. What is lost: formulas
added to a page after it loads (ipywidgets' labels) are not typeset; no chapter has any.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

#: The stylesheet every page links to, in ``_static/``.
STYLESHEET = "static-math.css"
#: MathJax's web fonts, as served by the site (staged by ``offline_site.py``), relative to the
#: stylesheet in ``_static/``.
FONT_URL = "../_vendor/mathjax/es5/output/chtml/fonts/woff-v2"
#: Where the TeX of every formula typeset so far is kept (in the doctree folder).
RECORD = "static_math.json"

#: What Sphinx writes for math (sphinx.ext.mathjax): inline and display, with the equation number
#: of a labelled display formula before its TeX.
INLINE = re.compile(r'(<span class="math notranslate nohighlight">)\\\((.*?)\\\)(</span>)', re.S)
DISPLAY = re.compile(
    r'(<div class="math notranslate nohighlight"[^>]*>\s*(?:<span class="eqno">.*?</span>)?)'
    r"\\\[(.*?)\\\](\s*</div>)",
    re.S,
)


def _formulas(page: str) -> list[tuple[str, bool]]:
    """(TeX, display?) of every formula in a page's HTML not yet typeset."""
    found = [(html.unescape(m.group(2)).strip(), False) for m in INLINE.finditer(page)]
    found += [(html.unescape(m.group(2)).strip(), True) for m in DISPLAY.finditer(page)]
    return found


def typeset(formulas: list[tuple[str, bool]], node: str = "node") -> tuple[list[str], str]:
    """Typeset formulas with MathJax in node: (the HTML of each, the stylesheet for all).

    Raises
    ------
    ExtensionError
        If node is missing or fails, or a formula does not typeset.
    """
    script = Path(__file__).with_name("tex2chtml.js")
    job = {"fontURL": FONT_URL, "formulas": [{"tex": t, "display": d} for t, d in formulas]}
    if shutil.which(node) is None:
        raise ExtensionError("static_math: node is needed to typeset the site's math")
    run = subprocess.run(
        [node, str(script)], input=json.dumps(job), capture_output=True, text=True, check=False
    )
    if run.returncode != 0:
        raise ExtensionError(f"static_math: MathJax failed in node:\n{run.stderr[-2000:]}")
    out = json.loads(run.stdout)
    if out["errors"]:
        bad = "\n".join(f"  {formulas[i][0]!r}: {message}" for i, message in out["errors"])
        raise ExtensionError(f"static_math: formulas MathJax cannot typeset:\n{bad}")
    return out["html"], out["css"]


def drop_mathjax(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Take Sphinx's MathJax loader and its set-up off the page (html-page-context)."""
    scripts = context.get("script_files")
    if not scripts:
        return
    loader = str(app.config.mathjax_path).split("?")[0].rsplit("/", 1)[-1]

    def mathjax(js: Any) -> bool:
        name = str(js.filename or "").split("?")[0]
        body = str(js.attributes.get("body", ""))
        return (bool(name) and name.endswith("/" + loader)) or body.startswith("window.MathJax")

    scripts[:] = [js for js in scripts if not mathjax(js)]


def typeset_pages(app: Sphinx, exception: Exception | None) -> None:
    """Typeset the math of every written page in place and write the stylesheet (build-finished)."""
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    record = Path(app.doctreedir) / RECORD
    known: set[tuple[str, bool]] = set()
    if record.exists():
        known = {(t, bool(d)) for t, d in json.loads(record.read_text(encoding="utf-8"))}
    pages: dict[Path, str] = {}
    where: dict[tuple[str, bool], str] = {}
    for path in sorted(outdir.rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        found = _formulas(text)
        if found:
            pages[path] = text
            for f in found:
                where.setdefault(f, str(path.relative_to(outdir)))
    every = sorted(known | set(where))
    try:
        typeset_html, css = typeset(every)
    except ExtensionError as error:
        pages_named = ", ".join(sorted(set(where.values())))
        raise ExtensionError(f"{error}\n(on these pages, among: {pages_named})") from None
    done = dict(zip(every, typeset_html, strict=True))
    for path, text in pages.items():
        text = INLINE.sub(lambda m: m.group(1) + done[(html.unescape(m.group(2)).strip(), False)]
                          + m.group(3), text)  # fmt: skip
        text = DISPLAY.sub(lambda m: m.group(1) + done[(html.unescape(m.group(2)).strip(), True)]
                           + m.group(3), text)  # fmt: skip
        path.write_text(text, encoding="utf-8")
    static = outdir / "_static"
    static.mkdir(exist_ok=True)
    (static / STYLESHEET).write_text(css, encoding="utf-8")
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(every, ensure_ascii=False), encoding="utf-8")


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_css_file(STYLESHEET)
    # after offline_site's script fixes (900, 990)
    app.connect("html-page-context", drop_mathjax, priority=995)
    app.connect("build-finished", typeset_pages)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
