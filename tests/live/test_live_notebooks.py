"""The live notebooks: what a learner opens on Binder, on Colab or from the zip.

Fast tests hold each part to hand-written expectations: the MyST-to-Jupyter-Markdown converter
(``_ext/live_markdown.py``) construct by construct, where the course is published
(``attnlib.colab.resolve``: REPO, GITHUB_REPOSITORY, ``_config.yml``, the ref from git), the
launch-button and install-cell rewriting for another repository (``_ext/live_notebooks.py``;
a second full build with another ``REPO`` would take minutes, so these functions are tested
directly), the deploy's link check (``_ext/check_links.py``) on a small hand-made build, and
``.ci/publish-live`` against a local bare repository.

Slow tests read the built site and its live tree (``make book``; ``$SITE_DIR`` checks another
build, as in ``tests/site/test_site.py``): every launch, edit and issue button of every notebook page,
every install cell, no MyST left in any Markdown cell, every link into the website resolving to
a page and anchor of ``_build/html``, and every glued value the same as on the page.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from attnlib import colab
from conftest import ROOT, toc_pages

sys.path.insert(0, str(ROOT / "_ext"))
import check_links
import live_markdown as lm

SITE = Path(os.environ.get("SITE_DIR", ROOT / "_build" / "html")).resolve()
BUILD = SITE.parent
LIVE = BUILD / "live"


class Fake:
    """A resolver with the answers written out by hand."""

    def __init__(self) -> None:
        self.roles = {
            ("glue:text", "bn_max:.2f"): "0.29",
            ("glue:text", "word"): "&lt;eos&gt;",
            ("doc", "softmax"): "[Softmax](https://o.github.io/n/chapters/softmax.html)",
            ("term", "h_i"): "[<i>h</i><sub><i>i</i></sub>](https://o.github.io/n/g.html#term-h_i)",
            (
                "cite:p",
                "bahdanau2015",
            ): "\\[[Bahdanau *et al.*, 2015](https://o.github.io/n/r.html#id3)\\]",
            ("eq", "eq-a"): "(2.1)",
        }

    def role(self, name: str, content: str) -> str:
        if (name, content) not in self.roles:
            raise lm.MystError(f"no {name}:{content}")
        return self.roles[name, content]

    def equation_number(self, label: str) -> str:
        return {"eq-a": "2.1", "eq-b": "2.2"}[label]


def md(source: str) -> str:
    return lm.convert(source, Fake())


# --------------------------------------------------------------------------- the converter
def test_roles_become_what_the_resolver_says_and_are_counted():
    counts: Counter[str] = Counter()
    out = lm.convert(
        "Weight {glue:text}`bn_max:.2f` of {term}`h_i`, see {doc}`softmax` {cite:p}`bahdanau2015`.",
        Fake(),
        counts,
    )
    assert out == (
        "Weight 0.29 of [<i>h</i><sub><i>i</i></sub>](https://o.github.io/n/g.html#term-h_i), see "
        "[Softmax](https://o.github.io/n/chapters/softmax.html) "
        "\\[[Bahdanau *et al.*, 2015](https://o.github.io/n/r.html#id3)\\]."
    )
    assert counts == {"role:glue:text": 1, "role:term": 1, "role:doc": 1, "role:cite:p": 1}


def test_code_spans_code_blocks_and_math_keep_what_looks_like_a_role():
    source = (
        "Type ``{glue:text}`x` `` as ``{doc}`a` `` and $\\{x\\}`$ stays.\n"
        "\n"
        "```python\n"
        "print('{term}`h_i`')\n"
        "```\n"
    )
    assert md(source) == source


def test_a_role_whose_content_runs_over_two_lines_is_read_whole():
    fake = Fake()
    fake.roles["doc", "Softmax <softmax>"] = "[Softmax](u)"
    assert lm.convert("See {doc}`Softmax\n<softmax>` now.", fake) == "See [Softmax](u) now."


def test_an_unknown_role_fails_with_its_name():
    with pytest.raises(lm.MystError, match="no numref:fig-x"):
        md("As {numref}`fig-x` shows.")


def test_a_role_never_closed_fails():
    with pytest.raises(lm.MystError, match="not closed"):
        md("See {doc}`softmax for more.")


def test_labels_comments_and_block_breaks_go():
    assert md("(attention-step)=\n# The attention step\n% a note to authors\n+++\nText.") == (
        "# The attention step\nText."
    )


def test_a_labelled_display_formula_carries_the_number_of_the_page():
    source = (
        "Scores:\n\n$$\ne_{ti} = v_a^\\top \\tanh(W_a s + U_a h_i)\n$$ (eq-a)\n\nthen {eq}`eq-a`."
    )
    assert md(source) == (
        "Scores:\n\n$$\ne_{ti} = v_a^\\top \\tanh(W_a s + U_a h_i)\n\\tag{2.1}\n$$\n\nthen (2.1)."
    )


def test_a_one_line_labelled_formula_and_an_unlabelled_one():
    assert md("$$ c_t = \\sum_i \\alpha_{ti} h_i $$ (eq-b)") == (
        "$$ c_t = \\sum_i \\alpha_{ti} h_i \\tag{2.2} $$"
    )
    assert md("$$\nx = 1\n$$") == "$$\nx = 1\n$$"


def test_a_formula_never_closed_fails():
    with pytest.raises(lm.MystError, match="not closed"):
        md("$$\nx = 1\n")


def test_a_dropdown_becomes_details_whose_inside_is_still_markdown():
    source = "1. Why?\n\n:::{dropdown} Answer\nBecause {glue:text}`bn_max:.2f` **is** small.\n:::\n"
    assert md(source) == (
        "1. Why?\n\n"
        "<details>\n<summary>Answer</summary>\n\n"
        "Because 0.29 **is** small.\n\n"
        "</details>\n"
    )


def test_dropdown_options_open_it_or_only_style_it():
    opened = md(":::{dropdown} Hint & tip\n:open:\n:color: info\n\nLook at $h_i$.\n:::")
    assert opened == (
        "<details open>\n<summary>Hint &amp; tip</summary>\n\nLook at $h_i$.\n\n</details>"
    )
    yaml_options = md(":::{dropdown} Answer\n---\nopen: true\n---\nYes.\n:::")
    assert yaml_options.startswith("<details open>\n")
    with pytest.raises(lm.MystError, match=r"option.*nonsense"):
        md(":::{dropdown} Answer\n:nonsense: 1\nYes.\n:::")


def test_a_role_in_a_dropdown_title_fails_rather_than_show_raw():
    with pytest.raises(lm.MystError, match="title"):
        md(":::{dropdown} About {term}`h_i`\nYes.\n:::")


def test_nested_directives_and_a_backtick_fence():
    source = (
        "::::{dropdown} Answer\n"
        ":::{note}\nIt holds.\n:::\n"
        "```python\nx = 1\n```\n"
        "::::\n"
        "\n"
        "```{admonition} Where the data comes from\n:class: note\nFrom [Tatoeba](https://tatoeba.org).\n```"
    )
    assert md(source) == (
        "<details>\n<summary>Answer</summary>\n\n"
        "> **Note**\n>\n> It holds.\n"
        "```python\nx = 1\n```\n"
        "\n</details>\n"
        "\n"
        "> **Where the data comes from**\n>\n> From [Tatoeba](https://tatoeba.org)."
    )


def test_an_admonition_is_a_block_quote_with_its_title_in_bold():
    source = (
        ":::{admonition} What the paper says\n:class: note\n\n- one {doc}`softmax`\n\n  two\n:::"
    )
    assert md(source) == (
        "> **What the paper says**\n>\n"
        "> - one [Softmax](https://o.github.io/n/chapters/softmax.html)\n>\n>   two"
    )


def test_display_math_inside_an_admonition_fails():
    with pytest.raises(lm.MystError, match="display math"):
        md(":::{note}\n$$\nx\n$$\n:::")


def test_an_indented_directive_keeps_its_indentation():
    assert md("1. Why?\n\n   :::{dropdown} Answer\n   Yes.\n   :::") == (
        "1. Why?\n\n   <details>\n   <summary>Answer</summary>\n\n   Yes.\n\n   </details>"
    )


def test_unknown_directives_and_bare_colon_fences_fail():
    with pytest.raises(lm.MystError, match=r"\{figure\}"):
        md(":::{figure} a.png\nA caption.\n:::")
    with pytest.raises(lm.MystError, match="names no directive"):
        md(":::\ntext\n:::")


def test_escape_shows_plain_text_as_typed():
    assert lm.escape("<eos> a_b *x* [1] | ~ `c` $5 & \\") == (
        "&lt;eos&gt; a\\_b \\*x\\* \\[1\\] \\| \\~ \\`c\\` &#36;5 &amp; \\\\"
    )


@pytest.mark.parametrize(
    ("markdown", "found"),
    [
        ("a {glue:text}`x` b", "a role"),
        (":::{note}\nx\n:::", "a ::: fence"),
        ("```{note}\nx\n```", "a directive fence"),
        ("(my-label)=\n# T", "a (label)= target"),
        ("$$\nx\n$$ (eq-a)", "a labelled formula"),
        ("{{ subst }}", "a substitution"),
    ],
)
def test_leftovers_finds_each_kind_of_myst(markdown, found):
    reported = lm.leftovers(markdown)
    assert reported
    assert all(r.startswith(f"{found}: ") for r in reported), reported


def test_leftovers_ignores_code_and_math():
    assert lm.leftovers("`{doc}`a``\n\n```\n:::{note}\n(x)=\n```\n\n$\\{a\\}`$ and $${{b}}$$") == []


# --------------------------------------------------------------------------- where the course lives
def _config(tmp_path: Path, url: str = "https://github.com/cfg/course") -> Path:
    path = tmp_path / "_config.yml"
    path.write_text(f"repository:\n  url: {url}\n  branch: main\n")
    return path


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
    }
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git checkout with one commit and a _config.yml."""
    _git(tmp_path, "init", "-q", "-b", "main")
    _config(tmp_path)
    _git(tmp_path, "add", "_config.yml")
    _git(tmp_path, "commit", "-qm", "first")
    return tmp_path


def test_repo_beats_github_repository_which_beats_the_config(repo):
    both = {"COURSE_REPOSITORY": "ana/attn", "GITHUB_REPOSITORY": "ci/runs-here"}
    assert colab.resolve(both, root=repo).url == "https://github.com/ana/attn"
    assert colab.resolve({"GITHUB_REPOSITORY": "ci/runs-here"}, root=repo).url == (
        "https://github.com/ci/runs-here"
    )
    assert colab.resolve({}, root=repo).url == "https://github.com/cfg/course"
    blank = {"COURSE_REPOSITORY": " ", "GITHUB_REPOSITORY": ""}  # empty counts as unset
    assert colab.resolve(blank, root=repo).url == "https://github.com/cfg/course"
    chosen = colab.resolve(both, root=repo).chosen
    assert "REPO=" in chosen["repository"]


@pytest.mark.parametrize(
    "spec",
    [
        "ana/attn",
        "https://github.com/ana/attn",
        "https://github.com/ana/attn/",
        "https://github.com/ana/attn.git",
    ],
)
def test_a_repository_is_accepted_as_owner_name_or_its_url(repo, spec):
    home = colab.resolve({"COURSE_REPOSITORY": spec}, root=repo)
    assert (home.owner, home.name, home.url) == ("ana", "attn", "https://github.com/ana/attn")


@pytest.mark.parametrize(
    "spec",
    [
        "attn",
        "ana/attn/tree/main",
        "https://gitlab.com/ana/attn",
        "http://github.com/ana/attn",
        "-ana/attn",
        "ana/..",
        "ana/attn extra",
    ],
)
def test_anything_else_is_refused_naming_the_variable(repo, spec):
    with pytest.raises(ValueError, match=r"REPO= \(COURSE_REPOSITORY\).*owner/name"):
        colab.resolve({"COURSE_REPOSITORY": spec}, root=repo)


def test_a_bad_config_url_is_refused_naming_the_file(tmp_path):
    _config(tmp_path, "https://example.org/course")
    with pytest.raises(ValueError, match=r"_config\.yml"):
        colab.resolve({"COURSE_REF": "v1"}, root=tmp_path)


def test_the_site_is_derived_from_the_repository_unless_site_url_says(repo):
    assert (
        colab.resolve({"COURSE_REPOSITORY": "Ana/attn"}, root=repo).site
        == "https://ana.github.io/attn/"
    )
    own = colab.resolve({"COURSE_REPOSITORY": "ana/ana.github.io"}, root=repo)
    assert own.site == "https://ana.github.io/"
    told = colab.resolve({"COURSE_SITE_URL": "https://course.example.org/attn"}, root=repo)
    assert told.site == "https://course.example.org/attn/"
    with pytest.raises(ValueError, match="SITE_URL"):
        colab.resolve({"COURSE_SITE_URL": "course.example.org"}, root=repo)


def test_the_ref_is_the_commit_at_head_or_the_tag_there(repo):
    commit = _git(repo, "log", "-1", "--format=%H")
    home = colab.resolve({}, root=repo)
    assert (home.ref, home.commit) == (commit, commit)
    assert re.fullmatch(r"[0-9a-f]{40}", home.ref)
    _git(repo, "tag", "v1.0")
    home = colab.resolve({}, root=repo)
    assert (home.ref, home.commit, home.chosen["ref"]) == ("v1.0", commit, "the tag at HEAD")
    (repo / "x").write_text("later\n")
    _git(repo, "add", "x")
    _git(repo, "commit", "-qm", "after the tag")
    later = _git(repo, "log", "-1", "--format=%H")
    assert colab.resolve({}, root=repo).ref == later  # the tag is not at HEAD any more


def test_ref_overrides_and_is_checked(repo):
    assert colab.resolve({"COURSE_REF": "v2.0"}, root=repo).ref == "v2.0"
    for bad in ("v 2", 'v2"', "a..b", "-x", "main@{1}"):
        with pytest.raises(ValueError, match="REF="):
            colab.resolve({"COURSE_REF": bad}, root=repo)


def test_outside_a_git_checkout_the_build_asks_for_ref(tmp_path):
    _config(tmp_path)
    with pytest.raises(RuntimeError, match="REF="):
        colab.resolve({}, root=tmp_path)
    assert colab.resolve({"COURSE_REF": "v1"}, root=tmp_path).commit == ""


# --------------------------------------------------------------------------- the rewriting
def _home(owner: str = "ana", name: str = "attn") -> colab.Home:
    return colab.Home(
        owner=owner,
        name=name,
        branch="main",
        site=f"https://{owner}.github.io/{name}/",
        ref="v9",
        commit="c" * 40,
    )


def _app(home: colab.Home, tmp_path: Path) -> Any:
    """What the extension reads of Sphinx's application, for one notebook chapters/a.ipynb."""
    (tmp_path / "chapters").mkdir(exist_ok=True)
    (tmp_path / "chapters" / "a.ipynb").write_text("{}")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nchapters:\n  - file: chapters/a\n"
    )
    launch = {
        "binderhub_url": "https://mybinder.org",
        "colab_url": "https://colab.research.google.com",
        "notebook_interface": "jupyterlab",
        "thebe": True,
    }
    config = SimpleNamespace(
        html_theme_options={
            "launch_buttons": launch,
            "repository_url": "https://github.com/x/y",
            "repository_branch": "main",
        },
        thebe_config={},
    )
    return SimpleNamespace(_course_home=home, srcdir=str(tmp_path), config=config)


def _theme_buttons(branch: str) -> dict[str, Any]:
    """The launch group sphinx-book-theme puts in a notebook page's context (its layout)."""
    return {
        "header_buttons": [
            {
                "type": "group",
                "label": "launch-buttons",
                "buttons": [
                    {
                        "type": "link",
                        "text": "Binder",
                        "url": f"https://mybinder.org/v2/gh/x/y/{branch}?urlpath=lab/tree/chapters/a.ipynb",
                    },
                    {
                        "type": "link",
                        "text": "Colab",
                        "url": f"https://colab.research.google.com/github/x/y/blob/{branch}/chapters/a.ipynb",
                    },
                    {
                        "type": "javascript",
                        "text": "Live Code",
                        "label": "launch-thebe",
                        "javascript": "initThebeSBT()",
                    },
                ],
            }
        ]
    }


def test_another_repo_changes_every_button_and_the_install_cell(tmp_path):
    import live_notebooks

    app = _app(_home("ana", "attn"), tmp_path)
    live_notebooks.point_at_home(app, app.config)
    assert app.config.html_theme_options["repository_url"] == "https://github.com/ana/attn"
    assert app.config.html_theme_options["repository_branch"] == "main"
    assert app.config.thebe_config == {
        "repository_url": "https://github.com/ana/attn",
        "repository_branch": "live",
    }
    context = _theme_buttons("main")
    live_notebooks.live_launch_buttons(app, "chapters/a", "page.html", context, None)
    urls = [b.get("url") for b in context["header_buttons"][0]["buttons"]]
    assert urls == [
        "https://mybinder.org/v2/gh/ana/attn/live?urlpath=lab/tree/chapters/a.ipynb",
        "https://colab.research.google.com/github/ana/attn/blob/live/chapters/a.ipynb",
        None,
    ]
    cell = colab.install_cell(url=_home().url, ref=_home().ref)
    assert '%pip install --quiet "attnlib @ git+https://github.com/ana/attn@v9"' in cell
    readme = live_notebooks.readme(_home())
    assert "https://ana.github.io/attn/" in readme
    assert "https://github.com/ana/attn" in readme
    assert "c" * 40 in readme


def test_a_page_that_is_not_a_live_notebook_is_left_alone(tmp_path):
    import live_notebooks

    context = _theme_buttons("main")
    live_notebooks.live_launch_buttons(_app(_home(), tmp_path), "intro", "page.html", context, None)
    assert context == _theme_buttons("main")


def test_a_launch_button_the_extension_does_not_know_fails_the_build(tmp_path):
    import live_notebooks
    from sphinx.errors import ExtensionError

    context = _theme_buttons("main")
    context["header_buttons"][0]["buttons"].append(
        {"type": "link", "text": "JupyterHub", "url": "https://hub/x/y"}
    )
    with pytest.raises(ExtensionError, match="JupyterHub"):
        live_notebooks.live_launch_buttons(
            _app(_home(), tmp_path), "chapters/a", "p", context, None
        )
    with pytest.raises(ExtensionError, match="no launch buttons"):
        live_notebooks.live_launch_buttons(
            _app(_home(), tmp_path), "chapters/a", "p", {"header_buttons": []}, None
        )


@pytest.mark.parametrize(
    ("tags", "jupyter"),
    [
        (["hide-input"], {"source_hidden": True}),
        (["hide-output"], {"outputs_hidden": True}),
        (["hide-cell", "other"], {"source_hidden": True, "outputs_hidden": True}),
        (["remove-cell"], None),
    ],
)
def test_hide_tags_fold_the_cell_in_jupyterlab(tags, jupyter):
    import live_notebooks

    cell = {"cell_type": "code", "metadata": {"tags": tags}, "source": ""}
    live_notebooks._fold(cell)
    assert cell["metadata"].get("jupyter") == jupyter


class FakeBuild(Fake):
    """The resolver of one notebook, with a figure and the page's glued values counted."""

    def figure_label(self, name: str) -> str:
        return {"fig-step": "Fig. 2.1"}[name]

    def finish(self) -> None:
        pass


def _notebook(*cells: dict[str, Any]) -> dict[str, Any]:
    return {
        "cells": list(cells),
        "metadata": {"widgets": {"state": {}}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _code(cid: str, source: str, **metadata: Any) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "id": cid,
        "metadata": metadata,
        "source": source,
        "outputs": [{"output_type": "stream", "name": "stdout", "text": "x"}],
        "execution_count": 3,
    }


def _live(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    nb: dict[str, Any],
    rel: str = "chapters/a.ipynb",
) -> dict[str, Any]:
    import live_notebooks

    monkeypatch.setattr(live_notebooks, "SphinxResolver", lambda app, docname: FakeBuild())
    return live_notebooks.live_notebook(_app(_home(), tmp_path), Path(rel), nb, Counter())


def test_a_live_notebook_installs_first_captions_its_figures_and_folds_hidden_cells(
    tmp_path, monkeypatch
):
    nb = _notebook(
        {
            "cell_type": "markdown",
            "id": "m1",
            "metadata": {},
            "source": "(lbl)=\n# A\n\nWeight {glue:text}`bn_max:.2f`.",
        },
        _code("install-attnlib", colab.source_cell(), tags=["remove-cell"]),
        _code(
            "c1", "plot()", mystnb={"figure": {"caption": "Scores {eq}`eq-a`.", "name": "fig-step"}}
        ),
        _code("c2", "answer = 42", tags=["hide-cell"]),
    )
    live = _live(tmp_path, monkeypatch, nb)
    assert [c["id"] for c in live["cells"]] == ["m1", "install-attnlib", "c1", "c1-caption", "c2"]
    assert live["cells"][0]["source"] == ["# A\n", "\n", "Weight 0.29."]
    assert "".join(live["cells"][1]["source"]) == colab.install_cell(
        url="https://github.com/ana/attn", ref="v9"
    )
    assert live["cells"][3] == {
        "cell_type": "markdown",
        "id": "c1-caption",
        "metadata": {},
        "source": ["**Fig. 2.1** Scores (2.1)."],
    }
    assert live["cells"][4]["metadata"]["jupyter"] == {
        "source_hidden": True,
        "outputs_hidden": True,
    }
    assert all(
        c["outputs"] == [] and c["execution_count"] is None
        for c in live["cells"]
        if c["cell_type"] == "code"
    )
    assert "widgets" not in live["metadata"]
    assert nb["cells"][1]["outputs"], "the source notebook is left as it was"


def test_an_exercise_keeps_its_grader_after_the_install(tmp_path, monkeypatch):
    nb = _notebook(_code("e1", colab.source_cell("01_x"), editable=False))
    live = _live(tmp_path, monkeypatch, nb, "exercises/01_x.ipynb")
    source = "".join(live["cells"][0]["source"])
    assert source == colab.install_cell("01_x", url="https://github.com/ana/attn", ref="v9")
    assert source.endswith('grader = student_notebook("01_x.ipynb")')
    assert live["cells"][0]["metadata"] == {"editable": False}


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        (
            {"cell_type": "markdown", "id": "m9", "metadata": {}, "source": ":::{margin}\nx\n:::"},
            r"chapters/a\.ipynb, cell m9: the directive \{margin\}",
        ),
        (
            {
                "cell_type": "markdown",
                "id": "m8",
                "metadata": {},
                "source": "See {numref}`fig-step`.",
            },
            r"chapters/a\.ipynb, cell m8: no numref",
        ),
        (
            _code("install-attnlib", "%pip install attnlib"),
            r"cell install-attnlib: the first code cell is not .*make chapters",
        ),
    ],
)
def test_what_has_no_live_form_fails_the_build_naming_notebook_and_cell(
    tmp_path, monkeypatch, cell, message
):
    from sphinx.errors import ExtensionError

    with pytest.raises(ExtensionError, match=message):
        _live(tmp_path, monkeypatch, _notebook(cell, _code("c", colab.source_cell())))


# --------------------------------------------------------------------------- the link check
def _mini_build(tmp_path: Path, *, link: str = "https://tatoeba.org") -> Path:
    """A build of one notebook page and its live copy, written out by hand."""
    build = tmp_path / "_build"
    (build / "html" / "chapters").mkdir(parents=True)
    (build / "live" / "chapters").mkdir(parents=True)
    record = {
        "repository": "https://github.com/ana/attn",
        "owner": "ana",
        "name": "attn",
        "branch": "main",
        "live_branch": "live",
        "site": "https://ana.github.io/attn/",
        "ref": "v9",
        "commit": "c" * 40,
        "notebooks": ["chapters/a.ipynb"],
    }
    (build / "live" / ".course-build.json").write_text(json.dumps(record))
    page = f"""<a href="https://github.com/ana/attn">repo</a>
<a href="https://github.com/ana/attn/edit/main/chapters/a.ipynb">edit</a>
<a href="https://github.com/ana/attn/issues/new?title=Issue%20on%20page">issue</a>
<a href="https://mybinder.org/v2/gh/ana/attn/live?urlpath=lab/tree/chapters/a.ipynb">Binder</a>
<a href="https://colab.research.google.com/github/ana/attn/blob/live/chapters/a.ipynb">Colab</a>
<a href="{link}">prose</a>
binderOptions: {{ repo: "ana/attn", ref: "live", }}"""
    (build / "html" / "chapters" / "a.html").write_text(page)
    install = '%pip install --quiet "attnlib @ git+https://github.com/ana/attn@v9"'
    nb = {
        "cells": [
            {"cell_type": "markdown", "id": "m", "source": "# A"},
            {"cell_type": "code", "id": "c", "source": install},
        ]
    }
    (build / "live" / "chapters" / "a.ipynb").write_text(json.dumps(nb))
    return build


def test_the_link_check_passes_a_build_that_names_its_repository_only(tmp_path):
    problems, summary = check_links.check(_mini_build(tmp_path), "ana/attn")
    assert problems == []
    assert "github.com/ana/attn only" in summary


def test_the_link_check_fails_on_another_repository_anywhere(tmp_path):
    build = _mini_build(tmp_path, link="https://github.com/someone/else")
    problems, _ = check_links.check(build, "ana/attn")
    assert problems == ["html/chapters/a.html links someone/else (github.com/someone/else)"]
    problems, _ = check_links.check(_mini_build(tmp_path / "2"), "https://github.com/other/repo")
    assert problems == ["the site was built for ana/attn, the deploy expects other/repo"]


def test_the_link_check_fails_on_a_button_or_install_cell_pointing_elsewhere(tmp_path):
    build = _mini_build(tmp_path)
    page = build / "html" / "chapters" / "a.html"
    page.write_text(
        page.read_text()
        .replace("/live?urlpath", "/main?urlpath")
        .replace('ref: "live"', 'ref: "main"')
    )
    live = build / "live" / "chapters" / "a.ipynb"
    live.write_text(live.read_text().replace("@v9", "@main"))
    problems, _ = check_links.check(build)
    assert len(problems) == 3, problems
    assert "no Binder button" in problems[0]
    assert "Live Code opens" in problems[1]
    assert "install cell installs [('https://github.com/ana/attn', 'main')]" in problems[2]


# --------------------------------------------------------------------------- publish-live
@pytest.mark.slow  # a dozen git processes
def test_publish_live_pushes_the_tree_as_one_commit_replacing_the_branch(tmp_path):
    src, remote = tmp_path / "src", tmp_path / "remote.git"
    src.mkdir()
    _git(tmp_path, "init", "-q", "--bare", str(remote))
    _git(src, "init", "-q", "-b", "main")
    _git(src, "remote", "add", "origin", str(remote))
    (src / ".gitignore").write_text("_build/\n*.json\n")  # ignore rules of the source do not apply
    _git(src, "add", ".gitignore")
    _git(src, "commit", "-qm", "source")
    commit = _git(src, "log", "-1", "--format=%H")
    tree = src / "_build" / "live"
    (tree / "binder").mkdir(parents=True)
    (tree / "binder" / "postBuild").write_text("#!/bin/sh\n")
    (tree / "binder" / "postBuild").chmod(0o755)
    (tree / "chapters").mkdir()
    (tree / "chapters" / "a.ipynb").write_text("{}\n")
    record = {
        "live_branch": "live",
        "commit": commit,
        "ref": "v9",
        "repository": "https://github.com/ana/attn",
    }
    (tree / ".course-build.json").write_text(json.dumps(record))
    script = str(ROOT / ".ci" / "publish-live")

    def publish() -> None:
        done = subprocess.run(
            [script],
            cwd=src,
            capture_output=True,
            text=True,
            env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"},
        )
        assert done.returncode == 0, done.stderr

    publish()
    files = _git(remote, "ls-tree", "-r", "--format=%(objectmode) %(path)", "live").splitlines()
    assert files == [
        "100644 .course-build.json",
        "100755 binder/postBuild",
        "100644 chapters/a.ipynb",
    ]
    assert _git(remote, "log", "-1", "--format=%P", "live") == ""  # no parent: one commit
    assert commit in _git(remote, "log", "-1", "--format=%B", "live")
    assert _git(src, "status", "--porcelain") == ""  # the checkout is untouched
    (tree / "chapters" / "a.ipynb").unlink()
    (tree / "chapters" / "b.ipynb").write_text("{}\n")
    publish()
    assert _git(remote, "rev-list", "--count", "live") == "1"  # replaced, not appended to
    assert "chapters/b.ipynb" in _git(remote, "ls-tree", "-r", "--name-only", "live").splitlines()
    assert (
        "chapters/a.ipynb" not in _git(remote, "ls-tree", "-r", "--name-only", "live").splitlines()
    )


def test_publish_live_refuses_a_tree_without_the_build_record(tmp_path):
    done = subprocess.run(
        [str(ROOT / ".ci" / "publish-live"), str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "run `make book` first" in done.stderr


# --------------------------------------------------------------------------- the built site
def _record() -> dict[str, Any]:
    path = LIVE / ".course-build.json"
    if not path.is_file():
        pytest.fail(f"no live notebooks in {LIVE}: run `make book` first")
    return json.loads(path.read_text(encoding="utf-8"))


#: The notebooks of _toc.yml, read independently of the extension (conftest.toc_pages).
NOTEBOOKS = [f"{page}.ipynb" for page in toc_pages() if (ROOT / f"{page}.ipynb").is_file()]


def _cells(rel: str) -> list[dict[str, Any]]:
    return json.loads((LIVE / rel).read_text(encoding="utf-8"))["cells"]


@pytest.mark.slow
def test_the_build_recorded_the_configured_repository_and_the_commit_it_ran_on():
    record = _record()
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]
    if record["chosen"]["repository"] == "_config.yml":
        assert record["repository"] == config["url"]
    assert record["branch"] == config["branch"] == "main"
    assert record["live_branch"] == "live"
    assert re.fullmatch(r"[0-9a-f]{40}", record["commit"]), record["commit"]
    exists = subprocess.run(["git", "cat-file", "-e", f"{record['commit']}^{{commit}}"], cwd=ROOT)
    assert exists.returncode == 0, f"the build recorded {record['commit']}, not a commit here"
    if record["chosen"]["ref"] == "the commit at HEAD":
        assert record["ref"] == record["commit"]
    elif record["chosen"]["ref"] == "the tag at HEAD":
        tags = subprocess.run(
            ["git", "tag", "--points-at", record["commit"]],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert record["ref"] in tags.stdout.split()
    assert record["notebooks"] == NOTEBOOKS
    assert sorted(p.relative_to(LIVE).as_posix() for p in LIVE.glob("*/*.ipynb")) == sorted(
        NOTEBOOKS
    )


@pytest.mark.slow
@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_every_button_of_a_notebook_page_opens_the_live_copy_or_the_source(rel):
    record = _record()
    owner_name = f"{record['owner']}/{record['name']}"
    page = (SITE / rel).with_suffix(".html").read_text(encoding="utf-8")
    hrefs = re.findall(r'href="([^"]+)"', page)
    binder = [h for h in hrefs if "mybinder.org" in h]
    colab_links = [h for h in hrefs if "colab.research.google.com" in h]
    assert binder == [f"https://mybinder.org/v2/gh/{owner_name}/live?urlpath=lab/tree/{rel}"]
    assert colab_links == [f"https://colab.research.google.com/github/{owner_name}/blob/live/{rel}"]
    assert re.search(rf'repo: "{re.escape(owner_name)}",\s*ref: "live"', page), "Live Code"
    github = {h for h in hrefs if h.startswith("https://github.com/")}
    issues = {h for h in github if h.startswith(f"https://github.com/{owner_name}/issues/new?")}
    assert len(issues) == 1, github
    assert github - issues == {
        f"https://github.com/{owner_name}",
        f"https://github.com/{owner_name}/edit/main/{rel}",
    }
    assert (LIVE / rel).is_file()


@pytest.mark.slow
@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_the_install_cell_installs_the_configured_repository_at_the_recorded_ref(rel):
    record = _record()
    code = [c for c in _cells(rel) if c["cell_type"] == "code"]
    first = "".join(code[0]["source"])
    assert re.findall(r'%pip install --quiet "attnlib @ git\+([^@"]+)@([^"]+)"', first) == [
        (record["repository"], record["ref"])
    ]
    assert "except ModuleNotFoundError:" in first
    others = [c["id"] for c in code[1:] if "pip install" in "".join(c["source"])]
    assert not others
    assert all(c.get("outputs") == [] and c.get("execution_count") is None for c in code)


#: MyST that JupyterLab and Colab would show as typed (independent of _ext/live_markdown.py).
RAW_MYST = [
    ("a role", re.compile(r"\{[a-z][\w:-]*\}`")),
    ("a ::: fence", re.compile(r"^\s*:::", re.M)),
    ("a directive fence", re.compile(r"^\s*```+\s*\{", re.M)),
    ("a (label)= line", re.compile(r"^\s*\([^)\s]+\)=\s*$", re.M)),
    ("a labelled formula", re.compile(r"\$\$\s*\([^)\s]+\)\s*$", re.M)),
]


@pytest.mark.slow
@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_no_markdown_cell_of_a_live_notebook_holds_myst(rel):
    problems = []
    for cell in _cells(rel):
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        prose = re.sub(r"(?<![`}])(`+).*?(?<!`)\1(?!`)", "", text)  # a code span may quote MyST
        for what, pattern in RAW_MYST:
            m = pattern.search(text if what != "a role" else prose)
            if m:
                problems.append(
                    f"{cell['id']}: {what}: {text[max(0, m.start() - 30) : m.end() + 30]!r}"
                )
    assert not problems, "\n".join(problems)


#: A Markdown link: [text](url).
LINK = re.compile(r"\]\((https?://[^)\s]+)\)")


@pytest.mark.slow
@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_every_link_into_the_website_reaches_a_page_and_anchor_of_the_build(rel):
    site = _record()["site"]
    links = [
        u
        for c in _cells(rel)
        if c["cell_type"] == "markdown"
        for u in LINK.findall("".join(c["source"]))
    ]
    inside = [u for u in links if u.startswith(site)]
    assert inside, f"{rel} links nothing on the website"
    pages: dict[Path, str] = {}
    problems = []
    for url in inside:
        parts = urlsplit(url[len(site) :])
        page = SITE / parts.path
        if not page.is_file():
            problems.append(f"{url}: no page {page.relative_to(SITE)}")
            continue
        text = pages.setdefault(page, page.read_text(encoding="utf-8"))
        if parts.fragment and f'id="{parts.fragment}"' not in text:
            problems.append(f"{url}: no #{parts.fragment} on {page.relative_to(SITE)}")
    assert not problems, "\n".join(problems)


def _unmarkdown(text: str) -> str:
    """Markdown text back to what it shows: backslash escapes and entities resolved."""
    return html.unescape(re.sub(r"\\([\\`*_\[\]|~])", r"\1", text))


#: The glue roles of a source cell, as myst-nb reads them ({glue:text}`key:format`).
GLUE = re.compile(r"\{glue:text\}`([^`]+)`")


@pytest.mark.slow
@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_every_glued_value_is_the_one_the_page_shows(rel):
    """The page's pasted values, in order, each in the live cell that held its role."""
    page = (SITE / rel).with_suffix(".html").read_text(encoding="utf-8")
    shown = [
        html.unescape(v) for v in re.findall(r'<span class="pasted-text">(.*?)</span>', page, re.S)
    ]
    source = json.loads((ROOT / rel).read_text(encoding="utf-8"))["cells"]
    live = {c["id"]: _unmarkdown("".join(c["source"])) for c in _cells(rel)}
    roles = [
        (c["id"], k)
        for c in source
        if c["cell_type"] == "markdown"
        for k in GLUE.findall("".join(c["source"]))
    ]
    assert len(roles) == len(shown), (
        f"{rel}: {len(roles)} glue roles, the page shows {len(shown)} values"
    )
    missing = [
        f"{cid} {key}: {value!r}"
        for (cid, key), value in zip(roles, shown, strict=True)
        if value not in live[cid]
    ]
    assert not missing, f"{rel}: values of the page missing from the live cell:\n" + "\n".join(
        missing
    )


@pytest.mark.slow
def test_the_tree_carries_what_binder_needs_to_install_attnlib_from_itself(tmp_path):
    tracked = subprocess.run(
        ["git", "ls-files", "attnlib", "binder"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    carried = {
        p.relative_to(LIVE).as_posix()
        for p in LIVE.rglob("*")
        if p.is_file() and p.parts[len(LIVE.parts)] in ("attnlib", "binder")
    }
    assert {t for t in tracked if (ROOT / t).is_file()} <= carried
    assert not [p for p in carried if "__pycache__" in p or p.endswith(".pyc")]
    assert "pip install --no-deps -e ." in (LIVE / "binder" / "postBuild").read_text()
    assert os.access(LIVE / "binder" / "postBuild", os.X_OK)
    readme = (LIVE / "README.md").read_text(encoding="utf-8")
    record = _record()
    for needed in (record["site"], record["repository"], record["commit"]):
        assert needed in readme
    # pip builds attnlib from the tree alone, as binder/postBuild does (a wheel: no install here)
    copy = tmp_path / "live"
    shutil.copytree(LIVE, copy, ignore=shutil.ignore_patterns("chapters", "exercises"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "w"),
            str(copy),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = (tmp_path / "w").glob("attnlib-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "attnlib/colab.py" in names
    assert any(n.startswith("attnlib/checkpoints/") and n.endswith(".pt") for n in names)


@pytest.mark.slow
def test_the_link_check_passes_the_built_site():
    problems, summary = check_links.check(BUILD)
    assert problems == [], "\n".join(problems)
    assert summary
