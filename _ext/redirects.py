"""A page at every old address of a moved chapter, sending the reader to its new one.

Chapters are named by their topic (``chapters/masking.ipynb``), never by a number, so the
site's chapter numbers can change without moving a file. The files used to carry numbers that
could disagree with the site's (the masking chapter was ``chapters/14_masking``); a link or
bookmark to such an old address must keep working. The ``redirects`` setting in
``_config.yml`` maps each old page name to its new one, and after the build this extension
writes, at each old address, a small page that moves the browser on at once (``<meta
http-equiv="refresh">``, and the canonical link for search engines) and, for a reader whose
browser does not follow it, says where the chapter went, with a link.

The build fails if an old name is still a page of the book, or a new name is not one.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Moved: {title}</title>
<link rel="canonical" href="{href}">
<meta http-equiv="refresh" content="0; url={href}">
</head>
<body>
<main>
<h1>This chapter has moved</h1>
<p><a href="{href}">{title}</a> is now at <a href="{href}">{target}</a>.</p>
</main>
</body>
</html>
"""


def page(old: str, new: str, title: str) -> str:
    """The HTML of the page at ``old``.html that sends the reader to ``new``.html."""
    href = os.path.relpath(f"{new}.html", os.path.dirname(f"{old}.html") or ".")
    href = Path(href).as_posix()
    return TEMPLATE.format(
        title=html.escape(title), href=html.escape(href, quote=True), target=html.escape(href)
    )


def _on_build_finished(app: Any, exception: BaseException | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    from sphinx.errors import ExtensionError

    docs = set(app.env.found_docs)
    for old, new in app.config.redirects.items():
        if old in docs:
            raise ExtensionError(f"redirects: {old!r} is still a page of the book")
        if new not in docs:
            raise ExtensionError(f"redirects: {old!r} points to {new!r}, which is not a page")
        title = app.env.titles[new].astext() if new in app.env.titles else new
        target = Path(app.outdir) / f"{old}.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page(old, new, title), encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    """Register ``redirects`` (old page name → new page name) and the hook."""
    app.add_config_value("redirects", {}, "html")
    app.connect("build-finished", _on_build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
