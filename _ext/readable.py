"""Make the built website readable: symbols, code and deliberate errors.

A local Sphinx extension (listed under ``sphinx: local_extensions`` in ``_config.yml``).

What it does
------------
1. **Symbols read as symbols.** A glossary term named like ``h_i``, ``s_{t-1}`` or ``α_ti`` is
   written in the course's plain-text notation; printed as is, a link to it showed the TeX source
   beside typeset math. After references are resolved (``doctree-resolved``) every term link whose
   text is such a symbol, and every term heading of the glossary, is rewritten to an italic
   letter with a real subscript (``h<sub>i</sub>``, ``s<sub>t−1</sub>``); the link target
   (``glossary.html#term-h_i``) is unchanged; the index (``genindex.html``) lists them the same
   way. Search snippets are plain text: ``readable_static/readable.js`` gives them the Unicode
   form (``hᵢ``, ``sₜ₋₁``) where Unicode has every subscript letter.
2. **Code stays within the column.** ``readable_static/readable.css`` wraps long lines of code
   cells, their outputs and code blocks (``white-space: pre-wrap``) instead of scrolling sideways.
3. **Wide figures open at full size.** A figure from a code cell wider than the text column
   (``readable_enlarge_width`` px, 660 by default: the column at a 1280 px window) is shown
   scaled down; it becomes a link to its full-size image, one click away.
4. **Deliberate errors show their message.** The output of a cell tagged ``raises-exception``
   (an error the chapter raises on purpose) is reduced to its final ``ErrorType: message`` line:
   the frames above it pointed into the build machine's copy of ``attnlib`` (a path no learner
   has) and pushed the message out of view. Errors of untagged cells, real failures, keep their
   full traceback (``nb_execution_show_tb``).
"""

from __future__ import annotations

import html
import re
import struct
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.config import Config

STATIC = Path(__file__).parent / "readable_static"

#: A symbol of the course's notation: one letter (a combining accent allowed, as in ỹ), and
#: optionally ``_`` and a subscript, braced (``s_{t-1}``) or not (``e_ti``).
SYMBOL = re.compile(
    r"(?P<base>[^\W\d_][\u0300-\u036f]?)(?:_(?:\{(?P<braced>[^{}]+)\}|(?P<plain>[^\W_]+)))?"
)


def parse_symbol(text: str) -> tuple[str, str] | None:
    """``"s_{t-1}"`` -> ``("s", "t-1")``; ``"H"`` -> ``("H", "")``; a word (``"mask"``) -> None."""
    m = SYMBOL.fullmatch(text.strip())
    if not m:
        return None
    return m.group("base"), m.group("braced") or m.group("plain") or ""


def _math_run(text: str) -> list[nodes.Node]:
    """Letters in italics (as in typeset math), digits and signs upright, ``-`` as a minus."""
    out: list[nodes.Node] = []
    for run in re.findall(r"[^\W\d_][\u0300-\u036f]*|[^a-zA-Z]", text):
        if run[0].isalpha():
            out.append(nodes.inline(run, run, classes=["readable-var"]))
        else:
            out.append(nodes.Text(run.replace("-", "\N{MINUS SIGN}")))
    return out


def symbol_nodes(text: str) -> list[nodes.Node] | None:
    """The HTML form of a symbol: ``h_i`` -> ``<var>h</var><sub><var>i</var></sub>``, as nodes."""
    parsed = parse_symbol(text)
    if parsed is None:
        return None
    base, sub = parsed
    sym = nodes.inline("", "", classes=["readable-sym"])
    sym += _math_run(base)
    if sub:
        sym += nodes.subscript("", "", *_math_run(sub))
    return [sym]


def _rewrite(node: nodes.Element) -> bool:
    """Replace the text children of ``node`` by the symbol's HTML form; keep other children."""
    text = "".join(c.astext() for c in node.children if isinstance(c, nodes.Text))
    if not any(isinstance(c, nodes.Text) for c in node.children):
        return False
    new = symbol_nodes(text)
    if new is None:
        return False
    keep = [c for c in node.children if not isinstance(c, nodes.Text)]
    node.children = []
    node.extend(new + keep)
    return True


def readable_terms(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Term links and the glossary's term headings: symbols with real subscripts."""
    for ref in list(doctree.findall(nodes.reference)):
        for inline in ref.findall(nodes.inline):
            if "std-term" in inline.get("classes", []):
                _rewrite(inline)
    for glossary in doctree.findall(addnodes.glossary):
        for term in glossary.findall(nodes.term):
            _rewrite(term)


def symbol_html(text: str) -> str | None:
    """The same form as :func:`symbol_nodes`, as HTML (for the index, a template's plain text)."""
    parsed = parse_symbol(text)
    if parsed is None:
        return None

    def run(part: str) -> str:
        return "".join(
            f'<span class="readable-var">{html.escape(n.astext())}</span>'
            if isinstance(n, nodes.inline)
            else html.escape(n.astext())
            for n in _math_run(part)
        )

    base, sub = parsed
    inner = run(base) + (f"<sub>{run(sub)}</sub>" if sub else "")
    return f'<span class="readable-sym">{inner}</span>'


def readable_genindex(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """The index (genindex) lists glossary symbols as they appear on the pages."""
    if pagename != "genindex" or "genindexentries" not in context:
        return
    from markupsafe import Markup

    for _letter, entries in context["genindexentries"]:
        for k, (name, rest) in enumerate(entries):
            shown = symbol_html(str(name))
            if shown is not None:
                entries[k] = (Markup(shown), rest)  # the template escapes text (|e); Markup passes


#: A frame's header in an IPython traceback ("File /path/x.py:12, in f(...)", "Cell In[3], line 1").
_FRAME = re.compile(r"^(File |Cell In\[|Input In \[)")
#: The line that starts the error's message: "ValueError: ..." (or a bare "KeyboardInterrupt").
_MESSAGE = re.compile(r"^[A-Za-z_][\w.]*(:( |$)|$)")


def final_message(traceback: str) -> str:
    """The ``ErrorType: message`` part of an IPython traceback (its last lines), no frames.

    The message starts at the first line after the last frame that is not part of that frame's
    code listing (listings are indented or begin with an arrow ``--->``); a message of several
    lines is kept whole. A traceback with no recognisable message is returned unchanged.
    """
    lines = traceback.rstrip("\n").split("\n")
    last_frame = max((k for k, ln in enumerate(lines) if _FRAME.match(ln)), default=-1)
    for k in range(last_frame + 1, len(lines)):
        if _MESSAGE.match(lines[k]):
            return "\n".join(lines[k:])
    return traceback


def shorten_deliberate_errors(app: Sphinx, doctree: nodes.document) -> None:
    """Reduce the traceback of every ``raises-exception`` cell to its final message."""
    for cell in doctree.findall(nodes.container):
        if "tag_raises-exception" not in cell.get("classes", []):
            continue
        for block in list(cell.findall(nodes.literal_block)):
            if "traceback" not in block.get("classes", []):
                continue
            short = final_message(block.astext())
            block.children = []
            block += nodes.Text(short)
            block.rawsource = short
            block["classes"].append("readable-error")


def png_width(path: Path) -> int | None:
    """The width in pixels of a PNG file (from its header), None if it is not a PNG."""
    try:
        with path.open("rb") as f:
            head = f.read(24)
    except OSError:
        return None
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return int(struct.unpack(">I", head[16:20])[0])


def _in_cell_output(node: nodes.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, nodes.container) and "cell_output" in parent.get("classes", []):
            return True
        parent = parent.parent
    return False


def enlarge_wide_figures(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Link every figure of a cell output wider than the column to its full-size image."""
    if app.builder.format != "html":
        return
    from sphinx.util.osutil import relative_uri

    images = relative_uri(app.builder.get_target_uri(docname), app.builder.imagedir)
    for image in list(doctree.findall(nodes.image)):
        if isinstance(image.parent, nodes.reference) or not _in_cell_output(image):
            continue
        uri = image["uri"]
        if uri not in app.env.images:
            continue
        width = png_width(Path(app.srcdir, uri))
        if width is None or width <= app.config.readable_enlarge_width:
            continue
        link = nodes.reference(
            "",
            "",
            internal=True,
            refuri=f"{images}/{app.env.images[uri][1]}",
            reftitle="Open the figure at full size",
            classes=["readable-enlarge"],
        )
        image.replace_self(link)
        link.append(image)


def add_static(app: Sphinx, config: Config) -> None:
    if str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("readable_enlarge_width", 660, "html", types=[int])
    app.connect("config-inited", add_static)
    app.connect("doctree-read", shorten_deliberate_errors)
    app.connect("doctree-resolved", readable_terms)
    app.connect("doctree-resolved", enlarge_wide_figures)
    app.connect("html-page-context", readable_genindex)
    app.add_css_file("readable.css")
    app.add_js_file("readable.js")
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
