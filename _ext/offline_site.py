"""Make the built website self-contained: it serves its own JavaScript, offline.

A local Sphinx extension (listed under ``sphinx: local_extensions`` in ``_config.yml``).

What it does
------------
1. **Vendors pinned files.** At ``config-inited`` it copies, from ``node_modules/`` (installed
   by ``npm ci`` from ``package.json``/``package-lock.json``, which ``make book`` runs), the files
   the pages need into a staging folder listed in ``html_extra_path``; Sphinx copies that folder's
   contents to the site root, so the site serves MathJax's web fonts itself (``_vendor/``).
   They are not in ``_static/``: Jupyter Book 1 would add every ``*.js`` there to every page.
2. **Fixes each page's script list** at ``html-page-context``:

   - drops exact duplicate inline scripts (sphinx-thebe's ``const THEBE_JS_URL = ...`` is added
     twice, which every browser reports as ``SyntaxError: Identifier 'THEBE_JS_URL' has already
     been declared``);
   - gives bibliography entries the ``listitem`` role their ``role="list"`` parent requires.

   It also names the sidebar's expand/collapse toggles (axe: ``summary-name``, serious) and adds
   ``_ext/static/offline_site.css``: otter-grader's red "results" text in colours that pass WCAG
   AA in light and dark mode (in dark mode the theme draws HTML outputs on a light panel), the
   wide-screen Contents column's hidden state, the offline Live Code note, and dropdowns
   (answers) printed open.
3. **Adds ``_ext/static/site_shell.js``** to every page's ``<head>`` (commented in the file):

   - makes the sidebar (navigation) and Contents toggles work. pydata-sphinx-theme 0.17 and
     sphinx-book-theme bind their handlers to the first ``.primary-toggle``/``.secondary-toggle``
     in the page, a hidden navbar duplicate (pydata/pydata-sphinx-theme#2451); the script removes
     that duplicate before they bind. On wide screens the Contents toggle also hides/shows the
     table-of-contents column, and both toggles report ``aria-expanded``;
   - Live Code (thebe) needs unpkg.com and mybinder.org: offline, instead of waiting forever on
     "Loading thebe", it says so and points to the .ipynb download;
   - opens every dropdown for printing (``beforeprint``) and closes them again afterwards.
4. **Overrides two theme components** (``_ext/templates/``, put first on ``templates_path``): the
   search button and the colour-mode button, whose accessible names contradicted their visible
   text (axe-core: ``label-content-name-mismatch``, serious).
5. **Keeps pages light**, for readers on slow or metered connections (``bench/bench_site.py
   weight`` measures it):

   - ``_ext/templates/static/webpack-macros.html`` drops the theme's Font Awesome SVG-JS (1.5 MB
     on every page); the icons are drawn from the webfont the theme's stylesheet already
     declares, cut down at ``build-finished`` to the icons the site shows
     (:func:`subset_icon_fonts`, a few kB instead of 274 kB);
   - every widget of the site is an anywidget (the explorables of ``attnlib.explorables``), drawn
     from the state saved in the page by ``static/anywidget_static.js``, which runs each
     explorable's own front end: a few kB, where ipywidgets' widget manager and RequireJS
     would take 3.6 MB (:func:`draw_saved_anywidgets`). ``_config.yml`` sets myst-nb's
     ``nb_ipywidgets_js`` to nothing, so no page loads them; a page that saves any other widget
     fails the build, as nothing could draw it;
   - formulas are typeset when the site is built (``_ext/static_math.py``): pages load no MathJax
     JavaScript (0.76 MB), only the stylesheet and the web fonts their formulas use.

The versions are pinned in ``package.json``.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ExtensionError

#: (package in node_modules, files or folders inside it to serve). Folders are copied whole.
VENDORED: dict[str, tuple[str, ...]] = {
    # Formulas are typeset when the site is built (_ext/static_math.py, with node_modules'
    # MathJax): the pages need only its CommonHTML web fonts, which static-math.css names.
    "mathjax": (
        "es5/output/chtml/fonts/woff-v2",
        "LICENSE",
        "package.json",
    ),
}

#: Where the vendored files appear in the built site (relative to its root).
VENDOR_URL = "_vendor"


def _copy_if_changed(src: Path, dst: Path) -> None:
    st = src.stat()
    if dst.exists():
        dt = dst.stat()
        if dt.st_size == st.st_size and dt.st_mtime >= st.st_mtime:
            return
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


def _stage_vendor(node_modules: Path, stage: Path) -> None:
    """Copy the pinned files of ``VENDORED`` from ``node_modules`` into ``stage/_vendor``.

    A package no longer in ``VENDORED`` is removed from the stage, so that the site does not
    go on serving it from an earlier build.
    """
    kept = {package.split("/")[0] for package in VENDORED} | {"versions.json"}
    old = stage / VENDOR_URL
    for entry in sorted(old.iterdir()) if old.is_dir() else []:
        if entry.name in kept:
            continue
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    for package, patterns in VENDORED.items():
        pkg_dir = node_modules / package
        manifest = pkg_dir / "package.json"
        if not manifest.is_file():
            msg = (
                f"offline_site: expected the npm package {package!r} in {node_modules}, "
                f"found no {manifest}. Run `npm ci` in the repository root (`make book` does)."
            )
            raise ExtensionError(msg)
        for pattern in patterns:
            matches = sorted(pkg_dir.glob(pattern))
            if not matches:
                msg = f"offline_site: {package!r} has no file matching {pattern!r} in {pkg_dir}"
                raise ExtensionError(msg)
            for src in matches:
                files = sorted(p for p in src.rglob("*") if p.is_file()) if src.is_dir() else [src]
                for f in files:
                    rel = f.relative_to(pkg_dir)
                    _copy_if_changed(f, stage / VENDOR_URL / package / rel)


def stage_vendored_files(app: Sphinx, config: Config) -> None:
    """Fill the ``html_extra_path`` entry named by ``offline_site_stage`` (runs at config-inited).

    Also puts ``_ext/templates`` first on ``templates_path``: its two theme components fix
    accessible names that axe-core reports as serious.
    """
    templates = str(Path(__file__).parent / "templates")
    if templates not in config.templates_path:
        config.templates_path.insert(0, templates)
    static = str(Path(__file__).parent / "static")
    if static not in config.html_static_path:
        config.html_static_path.append(static)
    confdir = Path(app.confdir)
    stage = (confdir / config.offline_site_stage).resolve()
    extra = [(confdir / p).resolve() for p in config.html_extra_path]
    if stage not in extra:
        msg = (
            f"offline_site: expected offline_site_stage={config.offline_site_stage!r} to be one "
            f"of html_extra_path, got html_extra_path={config.html_extra_path!r}"
        )
        raise ExtensionError(msg)
    _stage_vendor((confdir / config.offline_site_node_modules).resolve(), stage)
    versions = {
        pkg: json.loads(
            (confdir / config.offline_site_node_modules / pkg / "package.json").read_text(
                encoding="utf-8"
            )
        )["version"]
        for pkg in VENDORED
    }
    (stage / VENDOR_URL / "versions.json").write_text(
        json.dumps(versions, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )


#: Where the subset icon fonts appear in the built site; ``static/offline_site.css`` names them.
ICON_FONTS_URL = f"{VENDOR_URL}/fontawesome-subset"
_ICON_NAME = re.compile(r"\bfa-([a-z0-9]+(?:-[a-z0-9]+)*)")
_ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+:before,?)+)\{content:"\\([0-9a-f]+)"\}')


def icon_codepoints(theme_css: str, names: set[str]) -> dict[str, int]:
    """The code point of each icon ``fa-<name>`` in Font Awesome's CSS.

    The stylesheet holds rules such as ``.fa-bars:before{content:"\\f0c9"}``.
    """
    found = {}
    for m in _ICON_RULE.finditer(theme_css):
        for name in re.findall(r"\.fa-([a-z0-9-]+):before", m.group(1)):
            if name in names:
                found[name] = int(m.group(2), 16)
    return found


def subset_icon_fonts(app: Sphinx, exception: Exception | None) -> None:
    """Font Awesome's solid and brands fonts cut down to the icons the site shows (build-finished).

    pydata-sphinx-theme serves the whole fonts (156 + 118 kB as woff2) for the ~25 icons of the
    page shell. The icon names are read from the built pages and from the two themes' templates
    and scripts (icons their scripts switch to), their code points from the theme's stylesheet;
    fontTools (a matplotlib dependency) writes the subsets from the theme's TrueType files as
    zlib WOFF (woff2 would need brotli) into ``_vendor/fontawesome-subset/``, where
    ``static/offline_site.css`` points Font Awesome's font faces.
    """
    if exception is not None or app.builder.format != "html":
        return
    import pydata_sphinx_theme
    import sphinx_book_theme
    from fontTools import subset

    theme = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
    outdir = Path(app.outdir)
    sources = [theme, Path(sphinx_book_theme.__file__).parent, Path(__file__).parent / "templates"]
    names: set[str] = set()
    for root in sources:
        for f in root.rglob("*"):
            if f.suffix in {".html", ".js", ".py"} and f.name != "fontawesome.js" and f.is_file():
                names |= set(_ICON_NAME.findall(f.read_text(encoding="utf-8", errors="replace")))
    for page in outdir.rglob("*.html"):
        names |= set(_ICON_NAME.findall(page.read_text(encoding="utf-8", errors="replace")))
    css = (theme / "static" / "styles" / "pydata-sphinx-theme.css").read_text(encoding="utf-8")
    unicodes = sorted(set(icon_codepoints(css, names).values()))
    webfonts = theme / "static" / "vendor" / "fontawesome" / "webfonts"
    out_dir = outdir / ICON_FONTS_URL
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("fa-solid-900", "fa-brands-400"):
        src, dst = webfonts / f"{name}.ttf", out_dir / f"{name}.woff"
        options = subset.Options()
        options.flavor = "woff"
        options.layout_features = ["*"]
        font = subset.load_font(str(src), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=unicodes)
        subsetter.subset(font)
        subset.save_font(font, str(dst), options)


_TOGGLE = re.compile(
    r'(<a class="reference internal" href="[^"]*">([^<]*)</a>\s*<details[^>]*>\s*)<summary>'
)


def _name_toggles(html: str) -> str:
    """Give the sidebar's expand/collapse toggles (a bare chevron) an accessible name."""
    html = _TOGGLE.sub(
        lambda m: (
            f'{m.group(1)}<summary aria-label="Show or hide the pages under {m.group(2).strip()}">'
        ),
        html,
    )
    return html.replace(
        '<summary><span class="toctree-toggle"',
        '<summary aria-label="Show or hide the pages of this section"><span class="toctree-toggle"',
    )


#: How myst-nb opens the toggle of a folded cell (myst_nb/sphinx_.py, visit_HideCellInput).
HIDDEN_CELL_SUMMARY = '<summary aria-label="Toggle hidden content">'


def fix_script_files(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Deduplicate the page's ``script_files`` in place; name nav toggles and bibliography items."""
    toctree = context.get("generate_toctree_html")
    if callable(toctree) and not getattr(toctree, "_names_toggles", False):

        def generate_toctree_html(*args: Any, **kwargs: Any) -> str:
            return _name_toggles(str(toctree(*args, **kwargs)))

        generate_toctree_html._names_toggles = True  # type: ignore[attr-defined]
        context["generate_toctree_html"] = generate_toctree_html
    body = context.get("body")
    if isinstance(body, str) and 'role="doc-biblioentry"' in body:
        # docutils marks each entry of a <div role="list"> with the deprecated doc-biblioentry
        # role; a list must hold list items (axe: aria-required-children, critical).
        body = context["body"] = body.replace('role="doc-biblioentry"', 'role="listitem"')
    if isinstance(body, str) and HIDDEN_CELL_SUMMARY in body:
        # myst-nb names the toggle of every folded cell (hide-cell, hide-input, hide-output)
        # "Toggle hidden content", not what it shows ("Show the evidence (statement 1)"):
        # axe label-content-name-mismatch, serious. The visible prompt names it instead.
        context["body"] = body.replace(HIDDEN_CELL_SUMMARY, "<summary>")
    scripts = context.get("script_files")
    if not scripts:
        return

    fixed: list[Any] = []
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for js in scripts:
        key = (js.filename or "", tuple(sorted((k, str(v)) for k, v in js.attributes.items())))
        if key not in seen:
            seen.add(key)
            fixed.append(js)
    scripts[:] = fixed


#: The models an anywidget page holds: the anywidget and the LayoutModel every widget carries.
_ANYWIDGET_ONLY = {("anywidget", "AnyModel"), ("@jupyter-widgets/base", "LayoutModel")}
#: Our renderer of saved anywidgets (``_ext/static/anywidget_static.js``).
ANYWIDGET_STATIC = "anywidget_static.js"


def _saved_models(scripts: list[Any]) -> set[tuple[str, str]] | None:
    """(module, model name) of every widget saved in the page; None if the page has none."""
    for js in scripts:
        if js.attributes.get("type") == "application/vnd.jupyter.widget-state+json":
            state = json.loads(str(js.attributes.get("body", "{}"))).get("state", {})
            return {(m.get("model_module", ""), m.get("model_name", "")) for m in state.values()}
    return None


def draw_saved_anywidgets(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """On a page with saved widgets, add ``anywidget_static.js`` (a few kB): it runs each
    explorable's own front end (saved in the page) against the saved values, with no kernel.

    Raises
    ------
    ExtensionError
        If the page saved a widget that is not an anywidget: nothing on the site could draw it
        (the site loads no ipywidgets widget manager). Make it an explorable of
        ``attnlib.explorables`` (an anywidget), or do not display it.
    """
    scripts = context.get("script_files")
    models = _saved_models(scripts) if scripts else None
    if not scripts or not models:
        return
    others = models - _ANYWIDGET_ONLY
    if others or ("anywidget", "AnyModel") not in models:
        msg = (
            f"offline_site: page {pagename} saves widgets that are not anywidgets "
            f"({sorted(others)}); the site draws only anywidgets (attnlib.explorables), so they "
            "would show as nothing: make the widget an anywidget, or do not display it"
        )
        raise ExtensionError(msg)
    from sphinx.builders.html._assets import _JavaScript

    scripts.append(_JavaScript(f"_static/{ANYWIDGET_STATIC}", priority=500, defer="defer"))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("offline_site_stage", "_build/.site_extra", "html", types=[str])
    app.add_config_value("offline_site_node_modules", "node_modules", "html", types=[str])
    # Before Sphinx's own check (priority 800) drops html_extra_path entries that do not exist.
    app.connect("config-inited", stage_vendored_files, priority=400)
    app.connect("html-page-context", fix_script_files, priority=900)
    app.connect("html-page-context", draw_saved_anywidgets, priority=990)
    app.connect("build-finished", subset_icon_fonts)
    app.add_css_file("offline_site.css")
    # A plain (not deferred) script in <head>: it must run before the themes bind their toggles.
    app.add_js_file("site_shell.js")
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
