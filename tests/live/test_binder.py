"""Binder's environment: learner-only pins, built fresh, running the live notebooks in JupyterLab 4.

What mybinder.org (repo2docker) does with the live tree (``_build/live``, which ``make book``
writes: the notebooks a learner opens, ``binder/``, ``pyproject.toml`` and ``attnlib/``), done
here in a fresh virtual environment: ``pip install -r binder/requirements.txt``, then
``binder/postBuild`` (attnlib from the tree, no dependencies), then JupyterLab 4, which
repo2docker's image already holds (4.4.9 in its Python 3.11 environment), so
``binder/requirements.txt`` does not list it. Two chapters and an exercise are executed on a
fresh kernel of that environment; then ``jupyter lab`` is started from it and a browser loads
the app once and opens every chapter inside it, one after the other, failing on any raw MyST
markup (a ``{role}``, a ``:::`` fence, a ``(label)=`` target) visible in a rendered markdown
cell. The server also serves a small probe notebook holding each kind of raw markup, which the
check must report, so that a check that finds nothing is seen to be able to find something.

Until the live tree exists (before ``_ext/live_notebooks.py`` is in ``_config.yml``) the
repository itself is the tree; once that extension is configured, a missing ``_build/live``
fails the tests: run ``make book``. ``ATTNLIB_BINDER_TREE=.`` points them at the repository
on purpose: its notebooks hold raw roles, and the JupyterLab test fails on every chapter.

The fast tests check that ``binder/requirements.txt`` is exactly what ``binder/learner_pins.py``
derives from ``requirements.txt`` (so the two cannot drift) and holds nothing for the book, the
tests or the linters. Its size and cold install time against the old ``-r ../requirements.txt``
are measured by ``bench/bench_binder.py``, not here.

Nothing of the repository's ``.venv`` is used by the environment. pip keeps its cache. PyTorch's
CPU index cannot be reached from this machine and pip's default of five retries per package with
back-off would make the install take ~25 minutes, so the environment sets ``PIP_RETRIES=0``: pip
falls through to the other configured sources at once. This changes how pip treats an
unreachable host, not what it installs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
import tomllib
import yaml
from packaging.requirements import Requirement

from conftest import CHAPTERS, CHROMIUM_ARGS, ROOT, chromium_path, run_checked, unexpected_errors

BINDER = ROOT / "binder"
#: A screenshot of each chapter as JupyterLab shows it, for review (not committed).
ARTIFACTS = ROOT / "tests" / "_artifacts" / "binder"
LIVE = ROOT / "_build" / "live"
#: What the Binder button serves: the live tree once ``make book`` has written it. To see the
#: render test fail on raw MyST, point it at the repository: ATTNLIB_BINDER_TREE=. pytest ...
OVERRIDE = os.environ.get("ATTNLIB_BINDER_TREE")
TREE = Path(OVERRIDE).resolve() if OVERRIDE else LIVE if LIVE.is_dir() else ROOT
#: JupyterLab as repo2docker's image has it (repo2docker's environment.py-3.11 lock file).
JUPYTERLAB = "jupyterlab==4.4.9"
#: Executed in the Binder environment: two chapters (the first, and one that loads the shipped
#: checkpoints) and an exercise, as the learner gets them.
RUN = [
    "chapters/symbols.ipynb",
    "chapters/entropy.ipynb",
    "exercises/01_masked_softmax.ipynb",
]
PROBE = """\
import importlib.util, json, sys
import attnlib, torch
print("BINDER-PROBE " + json.dumps({
    "prefix": sys.prefix, "attnlib": attnlib.__file__, "torch": torch.__version__,
    "cuda": torch.backends.cuda.is_built(),
    "otter": importlib.util.find_spec("otter") is not None,
    "myst_nb": importlib.util.find_spec("myst_nb") is not None,
}))
"""
DISTRIBUTIONS = (
    "import json, importlib.metadata as md, re\n"
    "print(json.dumps({re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(): d.version\n"
    "                  for d in md.distributions()}))"
)


def _learner_pins() -> Any:
    spec = importlib.util.spec_from_file_location("learner_pins", BINDER / "learner_pins.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pins(path: Path) -> dict[str, str]:
    """Canonical name → pinned version, of a requirements file of exact pins."""
    return {
        re.sub(r"[-_.]+", "-", req.name).lower(): next(iter(req.specifier)).version
        for line in path.read_text().splitlines()
        if line.strip() and not line.startswith(("#", "-"))
        for req in [Requirement(line)]
    }


# --------------------------------------------------------------------------- the pinned file
def test_binder_requirements_are_exactly_what_the_script_derives():
    committed = (BINDER / "requirements.txt").read_text()
    assert committed == _learner_pins().derive(ROOT), (
        "binder/requirements.txt is out of date with requirements.txt: run `make binder`"
    )


def test_binder_pins_the_learners_dependencies_only_at_the_versions_of_requirements_txt():
    lines = [
        ln.strip()
        for ln in (BINDER / "requirements.txt").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    options = [ln for ln in lines if ln.startswith("-")]
    # no -r line (repo2docker caches the install only when the file stands alone)
    assert options == ["--extra-index-url https://download.pytorch.org/whl/cpu"]
    binder, pinned = _pins(BINDER / "requirements.txt"), _pins(ROOT / "requirements.txt")
    assert {name: pinned.get(name) for name in binder} == binder
    assert binder["torch"].endswith("+cpu")
    for name in ("numpy", "matplotlib", "ipywidgets", "anywidget", "sacrebleu", "sacremoses"):
        assert name in binder
    # nothing any dependency group or the instructor's extra brings for its own sake
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    tools = [r for g in pyproject["dependency-groups"].values() for r in g if isinstance(r, str)]
    tools += pyproject["project"]["optional-dependencies"]["instructor"]
    names = {re.sub(r"[-_.]+", "-", Requirement(r).name).lower() for r in tools}
    names.discard("psutil")  # the test group's, and IPython's at run time (in binder/ for that)
    assert "pytest" in names
    assert "jupyter-book" in names
    assert not names & set(binder), sorted(names & set(binder))
    assert not {"myst-nb", "otter-grader", "sphinx", "playwright", "jupyterlab"} & set(binder)
    assert len(binder) < len(pinned) / 2


def test_binder_installs_attnlib_from_the_tree_without_dependencies_on_python_311():
    assert "python -m pip install --no-deps -e ." in (BINDER / "postBuild").read_text()
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"


# --------------------------------------------------------------------------- a fresh environment
def _live_notebooks_configured() -> bool:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    return "live_notebooks" in (config.get("sphinx", {}).get("local_extensions") or {})


@pytest.fixture(scope="module")
def tree() -> Path:
    """The folder Binder is built from: the live tree, or the repository before it exists."""
    if not OVERRIDE and not LIVE.is_dir() and _live_notebooks_configured():
        pytest.fail(
            "_build/live is missing: Binder serves the live notebooks, which `make book` writes "
            "(_ext/live_notebooks.py); run `make book` first"
        )
    return TREE


#: pip writes no bytecode into the test's environments: the same distributions are installed,
#: and the few modules a test imports are compiled when it imports them (saves ~10 s per venv).
NO_PYC = "--no-compile"


@pytest.fixture(scope="module")
def binder_env(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A fresh venv: binder/requirements.txt, binder/postBuild, then JupyterLab 4."""
    tmp = tmp_path_factory.mktemp("binder")
    venv = tmp / "venv"
    env = {
        k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}
    }
    env["PIP_RETRIES"] = "0"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # Jupyter's own folders inside the test's: no user settings, workspace or kernel leaks in
    for key in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[key] = str(tmp / key.lower())
    run_checked([sys.executable, "-m", "venv", str(venv)], env, tmp)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    python = str(venv / "bin" / "python")
    # repo2docker runs both from the root of the tree it builds
    run_checked(
        [python, "-m", "pip", "install", "--quiet", NO_PYC, "-r", "binder/requirements.txt"],
        env,
        tree,
    )
    installed = json.loads(run_checked([python, "-c", DISTRIBUTIONS], env, tmp))
    run_checked(["bash", "binder/postBuild"], env, tree)
    run_checked([python, "-m", "pip", "install", "--quiet", NO_PYC, JUPYTERLAB], env, tmp)
    with_lab = json.loads(run_checked([python, "-c", DISTRIBUTIONS], env, tmp))
    check = subprocess.run(
        [python, "-m", "pip", "check"], env=env, capture_output=True, text=True, check=False
    )
    return {
        "python": python,
        "venv": venv,
        "env": env,
        "tmp": tmp,
        "installed": installed,
        "with_lab": with_lab,
        "pip_check": check.stdout + check.stderr,
    }


@pytest.mark.slow
def test_the_environment_is_the_pins_and_jupyterlab_keeps_them(binder_env, tree):
    pins = _pins(tree / "binder" / "requirements.txt")
    installed = dict(binder_env["installed"])
    # a fresh venv's own tools, and setuptools raised to what torch needs
    for tool in ("pip", "setuptools"):
        installed.pop(tool, None)
    assert installed == pins, "pip installed something binder/requirements.txt does not pin"
    with_lab = binder_env["with_lab"]
    assert with_lab["jupyterlab"].startswith("4.")
    assert {name: with_lab.get(name) for name in pins} == pins, "JupyterLab changed a pin"
    assert "attnlib" in with_lab
    assert "No broken requirements" in binder_env["pip_check"], binder_env["pip_check"]


def _execute(notebook: Path, binder_env: dict[str, Any], extra: list[str]) -> Any:
    """A copy of ``notebook`` with ``extra`` cells, executed on a fresh kernel of the venv."""
    nb = nbformat.read(notebook, as_version=4)
    nb.cells += [nbformat.v4.new_code_cell(src) for src in extra]
    work = Path(binder_env["tmp"]) / "run" / notebook.parent.name / notebook.name
    work.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, work)
    script = (
        "import sys, nbformat\n"
        "from nbclient import NotebookClient\n"
        "nb = nbformat.read(sys.argv[1], as_version=4)\n"
        "NotebookClient(nb, timeout=600, kernel_name='python3',\n"
        "               resources={'metadata': {'path': sys.argv[2]}}).execute()\n"
        "nbformat.write(nb, sys.argv[1])\n"
    )
    # the kernel works in the notebook's own folder of the tree, as JupyterLab starts it
    run_checked(
        [binder_env["python"], "-c", script, str(work), str(notebook.parent)],
        binder_env["env"],
        notebook.parent,
    )
    return nbformat.read(work, as_version=4)


def _stdout(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


@pytest.mark.slow
@pytest.mark.parametrize("rel", RUN)
def test_chapters_and_an_exercise_run_in_the_binder_environment(binder_env, tree, rel):
    extra = [PROBE]
    if rel.startswith("exercises/"):
        extra.insert(
            0,
            "import json\nreport = grader.check_all()\n"
            "print('CHECKS ' + json.dumps({r.question: r.status for r in report.results}))",
        )
    nb = _execute(tree / rel, binder_env, extra)
    errors = unexpected_errors(nb)
    assert not errors, errors
    text = _stdout(nb.cells[-1])
    assert "BINDER-PROBE " in text, f"the probe cell printed nothing: {nb.cells[-1].outputs}"
    probe = json.loads(text.split("BINDER-PROBE ", 1)[1])
    venv = Path(binder_env["venv"]).resolve()
    assert Path(probe["prefix"]).resolve() == venv, f"the kernel ran in {probe['prefix']}"
    assert Path(probe["attnlib"]).resolve().is_relative_to(tree.resolve() / "attnlib"), (
        f"attnlib came from {probe['attnlib']}, expected the tree (postBuild's -e .)"
    )
    assert probe["torch"].endswith("+cpu"), f"expected torch's CPU build, got {probe['torch']}"
    assert not probe["cuda"]
    assert not probe["otter"]
    assert not probe["myst_nb"]
    if rel.startswith("exercises/"):
        checks = json.loads(_stdout(nb.cells[-2]).split("CHECKS ", 1)[1])
        assert checks
        assert set(checks.values()) == {"not answered"}, checks


# --------------------------------------------------------------------------- JupyterLab
#: Every cell rendered at once (JupyterLab 4 otherwise renders cells as they scroll into view).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
    # no news or update check: the server reaches no network, and the toast hides the page
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}

#: A folder of the served root beside the tree's own, with a notebook that is not the course's.
PROBE_DIR = "raw_myst_probe"
#: The probe's markdown cells: the first holds braces the check must leave alone (in math and in
#: code), each other one kind of raw MyST, with a piece of what the check must report for it.
PROBE_CELLS: list[tuple[str, str | None]] = [
    (
        "The score $e_{ti} = a(s_{t-1}, h_i)$ gives $\\alpha_{ti}$; in code, `{'h_i': 1}`.",
        None,
    ),
    ("The {term}`context vector` $c_t$ sums the $h_i$.", "{term}`context vector`"),
    (":::{note}\nA fence that JupyterLab does not know.\n:::", ":::{note}"),
    ("```{math}\nc_t = \\sum_i \\alpha_{ti} h_i\n```", "a directive shown as code"),
    ("(sec-scores)=\n\n## The scores $e_{ti}$", "a target (sec-scores)="),
]

#: True once the app holds one document, the notebook ``rel``, showing its ``n`` cells, every
#: markdown cell rendered (``filled``: whether each markdown cell has a source, so its rendering
#: must hold something).
ALL_RENDERED = """
([rel, n, filled]) => {
  const current = window.jupyterapp.shell.currentWidget;
  if (!current || !current.context || current.context.path !== rel) return false;
  if (document.querySelectorAll('.jp-NotebookPanel').length !== 1) return false;
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook');
  if (!panel) return false;
  const markdown = [...panel.querySelectorAll('.jp-MarkdownCell')];
  if (panel.querySelectorAll('.jp-Cell').length !== n || markdown.length !== filled.length) {
    return false;
  }
  return markdown.every((c, k) => {
    const out = c.querySelector('.jp-RenderedMarkdown');
    return c.classList.contains('jp-mod-rendered') && out && (!filled[k] || out.childElementCount > 0);
  });
}
"""

#: What a rendered markdown cell shows that is raw MyST: a role before its code span, a role
#: or a ``:::`` fence in the text (math and code set aside), a directive fence as a code block,
#: a ``(label)=`` target as a paragraph of its own.
RAW_MARKUP = r"""
() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook');
  const found = [];
  const role = /\{[A-Za-z][\w:.-]*\}$/;
  const stripMath = s => s.replace(/\$\$[\s\S]*?\$\$/g, ' ').replace(/\$[^$]*\$/g, ' ')
                          .replace(/\\\([\s\S]*?\\\)/g, ' ').replace(/\\\[[\s\S]*?\\\]/g, ' ');
  panel.querySelectorAll('.jp-MarkdownCell').forEach((cell, k) => {
    const copy = cell.querySelector('.jp-RenderedMarkdown').cloneNode(true);
    copy.querySelectorAll('mjx-container, .MathJax, script').forEach(e => e.remove());
    copy.querySelectorAll('pre > code').forEach(code => {
      const lang = [...code.classList].find(c => c.startsWith('language-{'));
      if (lang) found.push(`markdown cell ${k + 1}: a directive shown as code (${lang})`);
    });
    copy.querySelectorAll('code').forEach(code => {
      const before = code.previousSibling;
      const text = before && before.nodeType === Node.TEXT_NODE ? before.textContent : '';
      const m = stripMath(text).match(role);
      if (m) {
        found.push(`markdown cell ${k + 1}: ${m[0]}\`${code.textContent}\``);
        before.textContent = text.replace(role, '');  // reported once, not again below
      }
    });
    copy.querySelectorAll('pre, code').forEach(e => e.remove());
    copy.querySelectorAll('p').forEach(par => {
      const target = par.textContent.trim().match(/^\([\w.:-]+\)=$/);
      if (target) found.push(`markdown cell ${k + 1}: a target ${target[0]}`);
    });
    const text = stripMath(copy.textContent);
    for (const m of text.matchAll(/\{[A-Za-z][\w:.-]*\}|:::+[^\n]{0,30}/g)) {
      found.push(`markdown cell ${k + 1}: ${m[0]}`);
    }
  });
  return found;
}
"""

# Playwright's wait_for_function awaits a predicate that returns a promise, once: the two
# below are one-off actions in the page, with its timeout as a backstop against a hang.
#: The app has started and restored its layout.
LAB_RESTORED = "async () => { await window.jupyterapp.restored; return true; }"
#: Opens ``rel`` in the running app, as a double click in the file browser does.
OPEN = """
async rel => {
  const widget = await window.jupyterapp.commands.execute('docmanager:open', {path: rel});
  await widget.context.ready;
  return widget.context.path;
}
"""
#: Asks every document of the main area to close (the launcher stays; a document closes
#: asynchronously: see NO_DOCUMENT).
CLOSE_DOCUMENTS = """
() => {
  for (const widget of [...window.jupyterapp.shell.widgets('main')]) {
    if (widget.context) widget.close();
  }
}
"""
NO_DOCUMENT = "() => ![...window.jupyterapp.shell.widgets('main')].some(w => w.context)"
#: A backstop against a hang only: the app loads in seconds, a chapter renders in a few.
HANG = 300_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except OSError:
        return 0


def _probe_notebook(metadata: dict[str, Any]) -> Any:
    """A small notebook of PROBE_CELLS' markdown and one code cell, with the chapters' kernel."""
    nb = nbformat.v4.new_notebook(metadata=metadata)
    nb.cells = [nbformat.v4.new_markdown_cell(src) for src, _ in PROBE_CELLS]
    nb.cells.append(nbformat.v4.new_code_cell("c_t = 0.0"))
    return nb


@pytest.fixture(scope="module")
def lab_root(binder_env: dict[str, Any], tree: Path) -> Path:
    """What ``jupyter lab`` serves: the tree's own entries (links to them) and PROBE_DIR.

    The chapters keep their paths (``chapters/<name>.ipynb``); a kernel started for one works in
    the tree's folder, which the link resolves to.
    """
    root = Path(binder_env["tmp"]) / "lab-root"
    root.mkdir()
    assert not (tree / PROBE_DIR).exists(), f"the tree holds {PROBE_DIR}/ of its own"
    for entry in tree.iterdir():
        (root / entry.name).symlink_to(entry)
    (root / PROBE_DIR).mkdir()
    first = nbformat.read(tree / "chapters" / CHAPTER_NAMES[0], as_version=4)
    nbformat.write(_probe_notebook(first.metadata), root / PROBE_DIR / "raw_myst.ipynb")
    return root


@pytest.fixture(scope="module")
def jupyterlab(binder_env: dict[str, Any], tree: Path, lab_root: Path) -> Iterator[str]:
    """``jupyter lab`` from the Binder environment over the tree: no browser, no token.

    ``window.jupyterapp`` is exposed, so that the browser opens each chapter inside one running
    app instead of loading the app again for each.
    """
    tmp = Path(binder_env["tmp"])
    settings = Path(binder_env["venv"]) / "share" / "jupyter" / "lab" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "overrides.json").write_text(json.dumps(LAB_SETTINGS))
    port = _free_port()
    log = (tmp / "jupyterlab.log").open("w")
    proc = subprocess.Popen(
        [
            str(Path(binder_env["venv"]) / "bin" / "jupyter"),
            "lab",
            "--no-browser",
            f"--port={port}",
            "--ip=127.0.0.1",
            "--ServerApp.port_retries=0",
            "--ServerApp.allow_root=True",  # CI runs as root
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            "--ServerApp.disable_check_xsrf=True",
            f"--ServerApp.root_dir={lab_root}",
            f"--LabApp.user_settings_dir={tmp / 'lab-user-settings'}",
            f"--LabApp.workspaces_dir={tmp / 'lab-workspaces'}",
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.expose_app_in_browser=True",
        ],
        env=binder_env["env"],
        cwd=tree,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300  # stops a hang only: it answers within seconds
        while _get(f"{base}/api/status") != 200:
            assert proc.poll() is None, (tmp / "jupyterlab.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "jupyter lab did not answer"
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _load_lab(page: Any, base: str) -> None:
    """Load the JupyterLab app in ``page`` and wait until it has started."""
    page.goto(f"{base}/lab")
    page.wait_for_function("() => window.jupyterapp !== undefined", timeout=HANG)
    page.wait_for_function(LAB_RESTORED, timeout=HANG)


@pytest.fixture(scope="module")
def lab_page(jupyterlab: str) -> Iterator[Any]:
    """A browser page holding the JupyterLab app, loaded once for the module."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=list(CHROMIUM_ARGS))
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            _load_lab(page, jupyterlab)
            yield page
        finally:
            browser.close()


def _shut_down_kernels(base: str) -> None:
    """Delete every session the visit started (JupyterLab starts a kernel per notebook)."""
    with urllib.request.urlopen(f"{base}/api/sessions", timeout=30) as response:
        sessions = json.loads(response.read())
    for session in sessions:
        request = urllib.request.Request(f"{base}/api/sessions/{session['id']}", method="DELETE")
        urllib.request.urlopen(request, timeout=30).close()


def _close_all(page: Any, base: str) -> None:
    """Close every document of the app, wait until they are gone, end their kernels."""
    page.evaluate(CLOSE_DOCUMENTS)
    page.wait_for_function(NO_DOCUMENT, timeout=HANG)
    _shut_down_kernels(base)


def raw_markup_in_jupyterlab(page: Any, base: str, rel: str, notebook: Path) -> list[str]:
    """Open ``rel`` in the running JupyterLab, wait until every cell has rendered, list the raw
    markup; then close it. If anything goes wrong, the app is loaded afresh for the next one."""
    nb = nbformat.read(notebook, as_version=4)
    filled = [bool(c.source.strip()) for c in nb.cells if c.cell_type == "markdown"]
    try:
        _close_all(page, base)  # nothing of an earlier visit is left on the page
        opened = page.wait_for_function(OPEN, arg=rel, timeout=HANG).json_value()
        assert opened == rel, f"JupyterLab opened {opened!r} for {rel!r}"
        # waits for the page's own state, not a clock: the timeout only stops a hang
        page.wait_for_function(ALL_RENDERED, arg=[rel, len(nb.cells), filled], timeout=HANG)
        found = page.evaluate(RAW_MARKUP)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{notebook.stem}.png"))  # the top, for review
        _close_all(page, base)
    except Exception:
        _shut_down_kernels(base)
        _load_lab(page, base)
        raise
    return list(found)


CHAPTER_NAMES = sorted(p.name for p in CHAPTERS.glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("name", CHAPTER_NAMES)
def test_jupyterlab_shows_every_chapter_without_raw_markup(jupyterlab, lab_page, tree, name):
    rel = f"chapters/{name}"
    found = raw_markup_in_jupyterlab(lab_page, jupyterlab, rel, tree / rel)
    assert not found, f"{rel} shows raw MyST in JupyterLab ({len(found)} places):\n" + "\n".join(
        found[:20]
    )


@pytest.mark.slow
def test_jupyterlab_check_reports_each_kind_of_raw_myst_in_a_probe_notebook(
    jupyterlab, lab_page, lab_root
):
    rel = f"{PROBE_DIR}/raw_myst.ipynb"
    found = raw_markup_in_jupyterlab(lab_page, jupyterlab, rel, lab_root / rel)
    for k, (_, expected) in enumerate(PROBE_CELLS, start=1):
        mine = [f for f in found if f.startswith(f"markdown cell {k}: ")]
        if expected is None:
            assert not mine, f"braces in math or code reported as raw MyST: {mine}"
        else:
            assert any(expected in f for f in mine), f"cell {k}: {expected!r} not in {found}"
