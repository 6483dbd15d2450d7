"""The live notebooks: the copies a learner opens on Binder, on Colab or from the zip.

A local Sphinx extension (``sphinx: local_extensions`` in ``_config.yml``). The committed
notebooks are written for the website's build: their prose is MyST, which JupyterLab and Colab
show as typed (``{glue:text}`bn_max_len```), and their first code cell only imports attnlib,
which the build has installed. A learner needs other copies, and this extension writes them.

Where the course lives
    At ``config-inited`` the extension asks :func:`attnlib.colab.resolve` where the course is
    published (``make book REPO=owner/name``, else ``GITHUB_REPOSITORY``, else ``_config.yml``;
    the ref is the tag or commit at ``HEAD`` unless ``REF=`` says otherwise), logs the answer,
    and points the theme's repository, edit and issue buttons at the source repository and
    branch, and Live Code (sphinx-thebe) at the live branch.

The launch buttons
    sphinx-book-theme builds the Binder and Colab links of a notebook page from one branch, the
    source's. At ``html-page-context``, after the theme (priority 900 > 501), they are rewritten
    to open the same path on the live branch (:data:`attnlib.colab.LIVE_BRANCH`). A notebook
    page without them, or with a launch link this extension does not know, fails the build.

The live tree
    At ``build-finished`` (html builder, no exception) ``_build/live`` is written from scratch:

    - ``chapters/*.ipynb`` and ``exercises/*.ipynb``, every notebook of ``_toc.yml``, without
      outputs; the first code cell is :func:`attnlib.colab.install_cell` with the resolved
      repository and ref; every Markdown cell is converted to Jupyter Markdown
      (``_ext/live_markdown.py``), its roles resolved here from the build itself: glued values
      from the executed notebooks' ``NAME.glue.json`` formatted by myst-nb's own
      ``format_plain_text``, printed as the page prints them (with its smart quotes);
      ``{doc}``, ``{term}``, ``{ref}``, ``{cite:*}`` and ``{eq}`` by Sphinx's own roles and
      references resolver (the text and number the page shows, as a link to the website);
      display equations get the page's number as ``\\tag``; a figure's caption
      (``mystnb.figure``) becomes a Markdown cell under its code cell with the page's number;
      ``hide-input``/``hide-cell`` tags fold the cell in JupyterLab
      (``metadata.jupyter.source_hidden``/``outputs_hidden``);
    - ``binder/`` as in the repository, and what ``binder/postBuild`` (``pip install --no-deps
      -e .``) needs to install attnlib from the tree: ``pyproject.toml`` and ``attnlib/``
      (the files git lists there, tracked or new, not ignored);
    - ``README.md``, which says what the branch is, where the website and the source are, and
      the source commit; and ``.course-build.json``, what the build resolved (the zip, the link
      check and ``.ci/publish-live`` read it).

    A construct the converter does not know fails the build with the notebook and the cell.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urljoin

from docutils import nodes
from docutils.parsers.rst import roles
from docutils.parsers.rst.languages import en as rst_en
from live_markdown import MystError, convert, escape, leftovers
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError, ExtensionError
from sphinx.transforms.post_transforms import ReferencesResolver
from sphinx.util import logging
from sphinx.util.docutils import new_document, sphinx_domains
from sphinx.util.math import get_node_equation_number

from attnlib import bundle, colab

logger = logging.getLogger(__name__)

#: The live tree, next to ``_build/html``.
LIVE = "live"
#: What the build resolved, in the live tree (read by the zip, the link check, publish-live).
MANIFEST = bundle.MANIFEST
#: Files of the source repository the live tree carries (besides the notebooks), as git lists them.
CARRIED = ("binder", "attnlib", "pyproject.toml")


class LiveNotebookError(ExtensionError):
    """A notebook the live copy cannot be written for (the message names the notebook and cell)."""


# --------------------------------------------------------------------------- where the course lives
def home(app: Sphinx) -> colab.Home:
    """What :func:`attnlib.colab.resolve` answered for this build (resolved once)."""
    found = getattr(app, "_course_home", None)
    if found is None:
        try:
            found = colab.resolve(root=Path(app.srcdir))
        except (ValueError, RuntimeError) as exc:
            raise ConfigError(str(exc)) from None
        app._course_home = found  # type: ignore[attr-defined]
        logger.info(f"[live notebooks] {found.describe()}")
    return found


def point_at_home(app: Sphinx, config: Config) -> None:
    """Repository, edit and issue buttons at the source; Live Code at the live branch."""
    where = home(app)
    options = config.html_theme_options
    options["repository_url"] = where.url
    options["repository_branch"] = where.branch
    thebe = dict(config.thebe_config or {})
    thebe["repository_url"] = where.url
    thebe["repository_branch"] = where.live_branch
    config.thebe_config = thebe


def live_paths(app: Sphinx) -> dict[str, Path]:
    """Docname -> path (relative to the book) of every notebook with a live copy."""
    return {p.with_suffix("").as_posix(): p for p in bundle.toc_notebooks(Path(app.srcdir))}


def launch_urls(app: Sphinx, path: Path) -> dict[str, str]:
    """The Binder and Colab links that open ``path`` of the live branch."""
    where = home(app)
    launch = app.config.html_theme_options.get("launch_buttons", {})
    interface = {"classic": "tree", "jupyterlab": "lab/tree"}[
        launch.get("notebook_interface", "classic")
    ]
    urls = {}
    if launch.get("binderhub_url"):
        binder = launch["binderhub_url"].strip("/")
        urls["Binder"] = (
            f"{binder}/v2/gh/{where.owner}/{where.name}/{where.live_branch}"
            f"?urlpath={interface}/{path.as_posix()}"
        )
    if launch.get("colab_url"):
        colab_url = launch["colab_url"].strip("/")
        urls["Colab"] = (
            f"{colab_url}/github/{where.owner}/{where.name}/blob/{where.live_branch}/"
            f"{path.as_posix()}"
        )
    return urls


def live_launch_buttons(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Point a notebook page's Binder and Colab buttons at its live copy."""
    path = live_paths(app).get(pagename)
    if path is None:
        return
    group = next(
        (b for b in context.get("header_buttons", []) if b.get("label") == "launch-buttons"),
        None,
    )
    if group is None:
        raise ExtensionError(f"{pagename}: the theme made no launch buttons to point at {LIVE}")
    urls = launch_urls(app, path)
    seen = set()
    for button in group["buttons"]:
        if button.get("label") == "launch-thebe":  # Live Code: thebe_config names the branch
            continue
        if button.get("text") not in urls:
            raise ExtensionError(
                f"{pagename}: a launch button {button.get('text')!r} "
                f"({button.get('url')}) that _ext/live_notebooks.py does not point at the "
                "live notebooks"
            )
        button["url"] = urls[button["text"]]
        seen.add(button["text"])
    if seen != set(urls):
        raise ExtensionError(f"{pagename}: expected launch buttons {sorted(urls)}, got {seen}")


# --------------------------------------------------------------------------- roles, from the build
class _Inliner:
    """The part of docutils' inliner that Sphinx's roles use."""

    def __init__(self, document: nodes.document, source: str) -> None:
        self.document = document
        self.reporter = document.reporter
        self.parent = document
        self.reporter.get_source_and_line = lambda lineno=None: (source, lineno)  # type: ignore[attr-defined]


class SphinxResolver:
    """Roles and numbers of one notebook, as the website's build resolved them.

    Parameters
    ----------
    app : Sphinx
    docname : str
        The notebook's document name (``chapters/attention_step``).
    """

    def __init__(self, app: Sphinx, docname: str) -> None:
        from myst_nb.ext.glue.crossref import read_glue_cache

        self.app, self.env, self.docname = app, app.env, docname
        self.page = home(app).site + app.builder.get_target_uri(docname)
        self.glue_data = read_glue_cache(self.env.mystnb_config.output_folder, docname)
        # What the page prints for each {glue:text}, in order: myst-nb's text after the
        # page's own transforms (docutils' smart quotes make "We're" read "We’re" there).
        self.pasted = [
            node.astext()
            for node in self.env.get_doctree(docname).findall(nodes.inline)
            if "pasted-text" in node.get("classes", [])
        ]
        self.used = 0

    # -- the converter's interface
    def role(self, name: str, content: str) -> str:
        if name == "glue:text":
            return self._glue_text(content)
        if name.startswith("glue"):
            raise MystError(f"the role {{{name}}} has no live form (only {{glue:text}})")
        if name in ("doc", "term", "ref", "eq") or name == "cite" or name.startswith("cite:"):
            return self._xref(name, content)
        raise MystError(f"the role {{{name}}} has no live form in _ext/live_notebooks.py")

    def equation_number(self, label: str) -> str:
        found = self.env.get_domain("math").equations.get(label)  # type: ignore[attr-defined]
        if not found:
            raise MystError(f"the equation label {label!r} is unknown to the build")
        docname, number = found
        writer = SimpleNamespace(
            builder=SimpleNamespace(
                config=self.app.config,
                name=self.app.builder.name,
                fignumbers=self.env.toc_fignumbers.get(docname, {}),
            )
        )
        node = {"ids": [nodes.make_id(f"equation-{label}")], "number": number}
        return str(get_node_equation_number(writer, node))  # type: ignore[arg-type]

    def figure_label(self, name: str) -> str:
        """``"Fig. 2.1"``: the number the page prints before the caption of figure ``name``."""
        docname, labelid, _ = self.env.get_domain("std").labels.get(  # type: ignore[attr-defined]
            name.lower(), ("", "", "")
        )
        numbers = self.env.toc_fignumbers.get(docname, {}).get("figure", {}).get(labelid)
        if not numbers:
            raise MystError(f"the figure {name!r} has no number in the build")
        return self.app.config.numfig_format["figure"] % ".".join(map(str, numbers))

    # -- glue
    def _glue_text(self, content: str) -> str:
        from myst_nb.core.variables import format_plain_text

        parts = content.rsplit(":", 1)  # as myst-nb's PasteTextRole splits key and format
        key, fmt = (parts[0], parts[1]) if len(parts) == 2 else (parts[0], "s")
        if "::" in key:
            raise MystError(f"glue from another notebook ({content!r}) has no live form")
        if key not in self.glue_data:
            raise MystError(f"nothing was glued as {key!r} when the notebook ran")
        data = self.glue_data[key]["data"]
        if "text/plain" not in data:
            raise MystError(f"the glued value {key!r} has no text/plain form")
        value = format_plain_text(data["text/plain"], fmt)
        if self.used >= len(self.pasted):
            raise MystError(f"the page shows fewer glued values than the notebook has ({key!r})")
        shown = self.pasted[self.used]
        self.used += 1
        if _typed(shown) != _typed(value):
            raise MystError(f"{{glue:text}}`{content}` is {value!r}, the page shows {shown!r}")
        return escape(shown)

    def finish(self) -> None:
        """Fail where the page pasted more glued values than the notebook's roles named."""
        if self.used != len(self.pasted):
            raise MystError(
                f"the page shows {len(self.pasted)} glued values, the notebook names {self.used}"
            )

    # -- cross-references: Sphinx's own roles and resolver
    def _xref(self, name: str, content: str) -> str:
        env = self.env
        document = new_document(str(env.doc2path(self.docname)))
        document.settings.env = env
        paragraph = nodes.paragraph()
        document += paragraph
        saved = dict(env.temp_data)
        env.temp_data["docname"] = self.docname
        try:
            with sphinx_domains(env):
                function, _ = roles.role(name, rst_en, 0, document.reporter)
                if function is None:
                    raise MystError(f"the role {{{name}}} is unknown to the build")
                made, problems = function(
                    name, f"{{{name}}}`{content}`", content, 0, _Inliner(document, self.docname)
                )
            if problems:
                raise MystError(f"{{{name}}}`{content}`: {problems[0].astext()}")
            paragraph += made
            ReferencesResolver(document).apply()
        finally:
            env.temp_data.clear()
            env.temp_data.update(saved)
        import readable  # the site's symbols: h_i as h with a real subscript i

        readable.readable_terms(self.app, document, self.docname)
        if not any(paragraph.findall(nodes.reference)):
            raise MystError(f"{{{name}}}`{content}` does not resolve to anything on the website")
        if name == "eq":
            return self._equation_reference(paragraph)
        return self._markdown(paragraph)

    def _equation_reference(self, paragraph: nodes.paragraph) -> str:
        """An equation of this notebook: its number, as text (it is right there, tagged)."""
        (ref,) = paragraph.findall(nodes.reference)
        target = ref.get("refuri", "")
        if "refid" in ref or target.startswith("#"):
            return escape(ref.astext())
        return self._markdown(paragraph)

    def _url(self, ref: nodes.reference) -> str:
        if "refid" in ref:
            return f"{self.page}#{ref['refid']}"
        return urljoin(self.page, ref["refuri"])

    def _markdown(self, node: nodes.Node) -> str:
        """A resolved reference as Markdown: a link to the website, the text as the page has it."""
        if isinstance(node, nodes.Text):
            return escape(str(node))
        inner = "".join(self._markdown(c) for c in node.children)
        if isinstance(node, nodes.reference):
            return f"[{inner}]({self._url(node).replace(' ', '%20')})"
        if "readable-var" in node.get("classes", []):  # type: ignore[attr-defined]
            return f"<i>{inner}</i>"  # a letter of a symbol, italic as in typeset math
        if isinstance(node, nodes.emphasis):
            return f"*{inner}*"
        if isinstance(node, nodes.strong):
            return f"**{inner}**"
        if isinstance(node, nodes.subscript):
            return f"<sub>{inner}</sub>"
        if isinstance(node, nodes.superscript):
            return f"<sup>{inner}</sup>"
        if isinstance(node, nodes.math):
            return f"${node.astext()}$"
        if isinstance(node, nodes.literal):
            return f"`{node.astext()}`"
        if isinstance(node, (nodes.inline, nodes.paragraph)):
            return inner
        raise MystError(f"a {node.tagname} in a resolved reference has no live form")


#: What docutils' smart quotes print, and what was typed.
_SMART = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "…": "...", "–": "--", "—": "---"})


def _typed(text: str) -> str:
    """``text`` with smart quotes, dashes and ellipses as typed (to compare two spellings)."""
    return text.translate(_SMART)


# --------------------------------------------------------------------------- one notebook
def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _fold(cell: dict[str, Any]) -> None:
    """hide-input / hide-cell / hide-output tags as JupyterLab's folded input and output."""
    tags = set(cell.get("metadata", {}).get("tags", []))
    jupyter = {}
    if tags & {"hide-input", "hide-cell"}:
        jupyter["source_hidden"] = True
    if tags & {"hide-output", "hide-cell"}:
        jupyter["outputs_hidden"] = True
    if jupyter:
        cell["metadata"].setdefault("jupyter", {}).update(jupyter)


def live_notebook(
    app: Sphinx, path: Path, notebook: dict[str, Any], counts: Counter[str]
) -> dict[str, Any]:
    """The live copy of one notebook of the book (``path`` relative to the book)."""
    where = home(app)
    docname = path.with_suffix("").as_posix()
    exercise = path.stem if path.parts[0] == "exercises" else None
    resolver = SphinxResolver(app, docname)
    nb = copy.deepcopy(notebook)
    cells: list[dict[str, Any]] = []
    installed = False
    for cell in nb["cells"]:
        where_ = f"{path.as_posix()}, cell {cell.get('id')}"
        try:
            if cell["cell_type"] == "markdown":
                markdown = convert("".join(cell["source"]), resolver, counts)
                left = leftovers(markdown)
                if left:
                    raise MystError("MyST left after conversion: " + "; ".join(left))
                cell["source"] = _lines(markdown)
                cells.append(cell)
                continue
            if cell["cell_type"] != "code":
                cells.append(cell)
                continue
            cell["outputs"], cell["execution_count"] = [], None
            if not installed:
                if "".join(cell["source"]) != colab.source_cell(exercise):
                    raise MystError(
                        "the first code cell is not attnlib/colab.py's source_cell(); run "
                        + ("`make exercises`" if exercise else "`make chapters`")
                    )
                live = colab.install_cell(exercise, url=where.url, ref=where.ref)
                cell["source"] = _lines(live)
                installed = True
                counts["install cell"] += 1
            _fold(cell)
            if cell["metadata"].get("jupyter"):
                counts["folded cell"] += 1
            cells.append(cell)
            figure = cell["metadata"].get("mystnb", {}).get("figure", {})
            if "caption" in figure:
                if "name" not in figure:
                    raise MystError("a figure caption without a name (mystnb.figure.name)")
                caption = convert(figure["caption"], resolver, counts)
                label = resolver.figure_label(figure["name"])
                cells.append(
                    {
                        "cell_type": "markdown",
                        "id": f"{cell['id']}-caption"[-64:],
                        "metadata": {},
                        "source": _lines(f"**{escape(label)}** {caption}"),
                    }
                )
                counts["figure caption"] += 1
        except MystError as exc:
            raise LiveNotebookError(f"{where_}: {exc}") from None
    if not installed:
        raise LiveNotebookError(f"{path.as_posix()} has no code cell to install attnlib in")
    try:
        resolver.finish()
    except MystError as exc:
        raise LiveNotebookError(f"{path.as_posix()}: {exc}") from None
    nb["cells"] = cells
    nb.get("metadata", {}).pop("widgets", None)
    return nb


# --------------------------------------------------------------------------- the tree
def _git_files(root: Path, paths: tuple[str, ...]) -> list[Path]:
    """The files git lists under ``paths`` (tracked, or new and not ignored) that exist."""
    listing = ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *paths]
    done = subprocess.run(
        ["git", "-C", str(root), *listing],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise ExtensionError(f"git ls-files failed in {root}: {done.stderr.decode().strip()}")
    names = sorted({n for n in done.stdout.decode().split("\0") if n})
    return [Path(n) for n in names if (root / n).is_file()]


def readme(where: colab.Home) -> str:
    """The live branch's README (also attnlib's package description there)."""
    commit = where.commit or "(not a git checkout)"
    return f"""# Attention, run and checked: the live notebooks

This branch, `{where.live_branch}`, holds the notebooks of the course as a learner runs them: the
copies that the website's Binder, Colab and Live Code buttons open. The build writes it from the
source (`make book`, `_build/live`) and every deploy replaces it with one new commit, so do not
edit it here: edit the source.

- The website: {where.site}
- The source: {where.url} (branch `{where.branch}`), commit `{commit}`
- The version of the course package the notebooks install: `{where.ref}`

The Markdown of each notebook is plain Jupyter Markdown: the numbers, cross-references and
citations are those of the website, and the links go to it. The first code cell installs the
course package (`attnlib @ git+{where.url}@{where.ref}`) where it is missing, as on Colab; on
Binder, `binder/postBuild` has installed it from this tree already.
"""


def write_tree(app: Sphinx) -> Path:
    """Write ``_build/live`` (from scratch; the old tree is replaced at once)."""
    where = home(app)
    root = Path(app.srcdir)
    out = Path(app.outdir).parent / LIVE
    stage = out.with_name(f".{LIVE}.partial")
    shutil.rmtree(stage, ignore_errors=True)
    counts: Counter[str] = Counter()
    written = []
    for path, text in (
        (p, (root / p).read_text(encoding="utf-8")) for p in live_paths(app).values()
    ):
        nb = live_notebook(app, path, json.loads(text), counts)
        target = stage / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(path.as_posix())
    for rel in _git_files(root, CARRIED):
        target = stage / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, target)
    (stage / "README.md").write_text(readme(where), encoding="utf-8")
    manifest = where.as_dict() | {"notebooks": written, "converted": dict(sorted(counts.items()))}
    (stage / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    old = out.with_name(f".{LIVE}.old")
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        out.rename(old)
    stage.rename(out)
    shutil.rmtree(old, ignore_errors=True)
    summary = ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))
    logger.info(f"[live notebooks] {len(written)} notebooks in {out}: {summary}")
    return out


def offer_live_downloads(app: Sphinx, tree: Path) -> int:
    """Make each notebook page's download button (.ipynb) give the live copy.

    The theme's button links the page's source as Sphinx copied it to ``_sources/``: the
    committed notebook, whose prose is MyST and whose first cell does not install the course.
    A learner who downloads a notebook wants what Binder and Colab open, so the live copy
    replaces it there. Returns how many were replaced.
    """
    sources = Path(app.outdir) / "_sources"
    done = 0
    for rel in live_paths(app).values():
        target = sources / rel
        if target.is_file():
            shutil.copyfile(tree / rel, target)
            done += 1
    return done


def write_live_tree(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        tree = write_tree(app)
        offer_live_downloads(app, tree)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", point_at_home)
    app.connect("html-page-context", live_launch_buttons, priority=900)
    app.connect("build-finished", write_live_tree)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
