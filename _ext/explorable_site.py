"""Serve anywidget's front end from the site, so the explorables (attnlib.explorables) run offline.

A local Sphinx extension (listed under ``sphinx: local_extensions`` in ``_config.yml``).

An anywidget's saved state names its front-end module ``"anywidget"``. The pinned widget manager
(``@jupyter-widgets/html-manager``, ``embed-amd.js``) asks RequireJS for that module and, when
RequireJS cannot find it, fetches it from a CDN (jsDelivr): offline, the widget vanishes. This
extension

1. at ``config-inited`` copies the AMD build of anywidget's front end from the installed Python
   package (``anywidget/nbextension/index.js``; the version is pinned in ``requirements.txt``)
   and its licence into ``_build/.explorable_extra/_vendor/anywidget/``, a folder it adds to
   ``html_extra_path``, so the site serves ``_vendor/anywidget/index.js`` itself;
2. at ``html-page-context``, on pages whose saved widget state holds an anywidget, adds right
   after RequireJS a one-line ``require.config`` mapping the module name ``anywidget`` to that
   copy: the manager's ``require(["anywidget"])`` then succeeds locally and never falls back to
   the CDN.

The explorable's own code (its ES module and stylesheet) travels inside the widget state, so the
page needs nothing else. ``_vendor/versions.json`` (written by ``offline_site``) is left alone; the
served copy's version is in ``_vendor/anywidget/VERSION``.
"""

from __future__ import annotations

import importlib.metadata
import json
import posixpath
import shutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ExtensionError

#: Where anywidget's front end appears in the built site (relative to its root).
ANYWIDGET_URL = "_vendor/anywidget/index.js"
#: The staging folder (relative to the book), added to ``html_extra_path``.
STAGE = "_build/.explorable_extra"


def _anywidget_files() -> tuple[Path, Path, str]:
    """The installed anywidget's AMD front end, its licence and its version."""
    try:
        dist = importlib.metadata.distribution("anywidget")
    except importlib.metadata.PackageNotFoundError:
        raise ExtensionError(
            "explorable_site: the Python package anywidget is not installed; "
            "install the pins: pip install -r requirements.txt"
        ) from None
    front, licence = None, None
    for f in dist.files or []:
        if f.as_posix() == "anywidget/nbextension/index.js":
            front = Path(str(dist.locate_file(f)))
        elif f.name == "LICENSE" and ".dist-info" in f.as_posix():
            licence = Path(str(dist.locate_file(f)))
    if front is None or not front.is_file() or licence is None:
        raise ExtensionError(
            f"explorable_site: anywidget {dist.version} ships no nbextension/index.js "
            "(the AMD front end the widget manager loads) or no LICENSE"
        )
    return front, licence, dist.version


def stage_anywidget(app: Sphinx, config: Config) -> None:
    """Copy anywidget's front end into the staging folder and serve that folder."""
    front, licence, version = _anywidget_files()
    stage = Path(app.confdir) / STAGE
    target = stage / ANYWIDGET_URL
    target.parent.mkdir(parents=True, exist_ok=True)
    for src, dst in ((front, target), (licence, target.with_name("LICENSE"))):
        if not dst.is_file() or dst.read_bytes() != src.read_bytes():
            shutil.copyfile(src, dst)
    target.with_name("VERSION").write_text(version + "\n", encoding="utf-8")
    if STAGE not in config.html_extra_path:
        config.html_extra_path.append(STAGE)


def _uses_anywidget(scripts: list[Any]) -> bool:
    """Whether the page's saved widget state (myst-nb puts it in a script) holds an anywidget."""
    for js in scripts:
        if js.attributes.get("type") == "application/vnd.jupyter.widget-state+json":
            state = json.loads(str(js.attributes.get("body", "{}"))).get("state", {})
            return any(m.get("model_module") == "anywidget" for m in state.values())
    return False


def point_requirejs_at_anywidget(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """After RequireJS, map the AMD module ``anywidget`` to the site's copy (pages that use it)."""
    scripts = context.get("script_files")
    if not scripts or not _uses_anywidget(scripts):
        return
    from sphinx.builders.html._assets import _JavaScript

    path = posixpath.splitext(context["pathto"](ANYWIDGET_URL, 1))[0]  # RequireJS adds ".js"
    config = _JavaScript(
        None, body=f"require.config({{paths: {{anywidget: {json.dumps(path)}}}}});"
    )
    for k, js in enumerate(scripts):
        if str(js.filename or "").endswith("requirejs/require.js"):
            scripts.insert(k + 1, config)
            return
    raise ExtensionError(
        f"explorable_site: page {pagename} shows an anywidget but loads no RequireJS; "
        "expected nb_ipywidgets_js to name the vendored require.js"
    )


def setup(app: Sphinx) -> dict[str, Any]:
    # Before Sphinx's own check (priority 800) drops html_extra_path entries that do not exist.
    app.connect("config-inited", stage_anywidget, priority=450)
    # After offline_site (900), which tidies the script paths this looks for.
    app.connect("html-page-context", point_requirejs_at_anywidget, priority=950)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
