"""Colab as it is: the live install cell on Colab's preinstalled stack, a chapter and an exercise.

Colab runs Python 3.13 with its own packages preinstalled (``googlecolab/backend-info``,
``pip-freeze.txt`` of August 2026): among them ipywidgets 7.7.1, anywidget 0.9.21, IPython
7.34, ipykernel 6.17, numpy 2.1, matplotlib 3.10 and torch. This machine reaches no CPU torch
wheel for Python 3.13 (PyPI's Linux torch is the CUDA build; the one CPU wheel here is
``/opt/wheels/torch-2.13.0+cpu-cp311``), so the stack is reproduced on **Python 3.11**, with
Colab's versions of every other package it preinstalls that attnlib or the kernel uses
(:data:`COLAB`), pip 24.1 (Colab's) and that torch in place of Colab's 2.11.

The test then does what a learner's first cell does there: it runs the live install cell,
exactly as :func:`attnlib.colab.install_cell` writes it, with the repository URL pointed at a
local ``git+file://`` clone of the work tree (uncommitted work included, committed in the
temporary clone only), in a fresh kernel of that environment. It checks that the cell added
attnlib and only what Colab lacks, replaced no preinstalled package (ipywidgets stays 7.7.1,
anywidget 0.9.21), installed neither myst-nb nor otter-grader; then it executes a Part I
chapter with its explorable (an anywidget) and an exercise's ``grader.check``, answered and
blank, each on a fresh kernel of that environment.

pip keeps its cache between runs (the wheels are the same); the environment and the clone are
made anew each time. Minutes: ``make test`` runs this, ``make check`` does not (all but the
first test are marked slow).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from attnlib import colab
from conftest import CHAPTERS, EXERCISES, ROOT, SOLUTIONS, run_checked, unexpected_errors

#: The newest Python here that a CPU torch wheel exists for (Colab's is 3.13).
PYTHON = "/root/.pyenv/versions/3.11.7/bin/python"
TORCH = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")

#: Colab's versions (googlecolab/backend-info, pip-freeze.txt, commit a724079 of 2026-08-19, the
#: switch to Python 3.13) of what it preinstalls among attnlib's dependencies, theirs, and the
#: kernel's. setuptools is left to torch (the 2.13 wheel needs a newer one than Colab's 75.2).
COLAB = (
    "ipywidgets==7.7.1",
    "anywidget==0.9.21",
    "widgetsnbextension==3.6.10",
    "jupyterlab_widgets==3.0.16",
    "psygnal==0.15.1",
    "traitlets==5.7.1",
    "ipython==7.34.0",
    "ipykernel==6.17.1",
    "jupyter_client==7.4.9",
    "nbclient==0.10.4",
    "nbformat==5.11.1",
    "numpy==2.1.3",
    "matplotlib==3.10.0",
    "pillow==11.3.0",
    "tqdm==4.67.3",
    "typing_extensions==4.16.0",
    # what sacrebleu and sacremoses need that Colab already has
    "regex==2025.11.3",
    "tabulate==0.9.0",
    "lxml==6.1.1",
    "click==8.4.2",
    "joblib==1.5.3",
    "PyYAML==6.0.3",
)
#: What Colab lacks of attnlib's dependencies: all the install cell may add, with attnlib.
MISSING_ON_COLAB = {"attnlib", "sacrebleu", "sacremoses", "portalocker", "colorama"}
#: The Part I chapter run there: its explorable is an anywidget (sliders over e_ti).
CHAPTER = "softmax"
EXERCISE = "01_masked_softmax"

DISTRIBUTIONS = (
    "import json, importlib.metadata as md, re\n"
    "print(json.dumps({re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(): d.version\n"
    "                  for d in md.distributions()}))"
)
RUN = """\
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, timeout=900, kernel_name="python3",
               resources={"metadata": {"path": sys.argv[2]}}).execute()
nbformat.write(nb, sys.argv[1])
"""
PROBE = """\
import importlib.util, json, sys
import anywidget, attnlib, ipywidgets
print("COLAB-PROBE " + json.dumps({
    "prefix": sys.prefix, "attnlib": attnlib.__file__,
    "ipywidgets": ipywidgets.__version__, "anywidget": anywidget.__version__,
    "otter": importlib.util.find_spec("otter") is not None,
    "myst_nb": importlib.util.find_spec("myst_nb") is not None,
}))
"""


def _git(*args: str, cwd: Path) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=600, check=True
    )
    return proc.stdout


def commit_work_tree(dest: Path) -> tuple[Path, str]:
    """A clone of the repository whose last commit is the work tree as it is now.

    The repository itself is only read: its HEAD is cloned, then every tracked or untracked
    (not ignored) file of the work tree is copied over, deleted ones removed, and the result
    committed in the clone.

    Returns
    -------
    clone : Path
    sha : str
        The commit that holds the work tree.
    """
    clone = dest / "attention-course"
    _git("clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone), cwd=dest)
    listed = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    for rel in sorted(set(filter(None, listed.split("\0")))):
        src, dst = ROOT / rel, clone / rel
        if src.is_file() or src.is_symlink():
            dst.parent.mkdir(parents=True, exist_ok=True)
            if dst.is_symlink() or dst.exists():
                dst.unlink()
            shutil.copy2(src, dst, follow_symlinks=False)
        elif dst.is_file() or dst.is_symlink():
            dst.unlink()
    _git("add", "-A", cwd=clone)
    _git(
        "-c",
        "user.name=test_colab",
        "-c",
        "user.email=test_colab@localhost",
        "-c",
        "commit.gpgsign=false",
        "commit",
        "--quiet",
        "--no-verify",
        "--allow-empty",
        "-m",
        "the work tree, for tests/live/test_colab.py",
        cwd=clone,
    )
    return clone, _git("rev-parse", "HEAD", cwd=clone).strip()


def _with_install_cell(notebook: Path, source: str) -> nbformat.NotebookNode:
    """``notebook`` with its first code cell (the install cell) replaced by ``source``."""
    nb = nbformat.read(notebook, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    first.source = source
    return nb


def _execute(nb: nbformat.NotebookNode, colab_env: dict, name: str) -> nbformat.NotebookNode:
    """``nb`` executed on a fresh kernel of the Colab environment, in a folder of its own."""
    work = Path(colab_env["tmp"]) / f"run-{name}"
    work.mkdir()
    path = work / f"{name}.ipynb"
    nbformat.write(nb, path)
    run_checked([colab_env["python"], "-c", RUN, str(path), str(work)], colab_env["env"], work)
    return nbformat.read(path, as_version=4)


def _stdout(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


def _probe(cell: nbformat.NotebookNode) -> dict:
    text = _stdout(cell)
    assert "COLAB-PROBE " in text, f"the probe printed nothing: {cell.outputs}"
    return json.loads(text.split("COLAB-PROBE ", 1)[1])


def test_every_front_end_keeps_the_module_contract_of_colabs_anywidget():
    # anywidget 0.9 (Colab's) loads `export default { render }`; a module exporting `render`
    # itself still loads there but is the form it deprecates (and later releases drop)
    modules = sorted((ROOT / "attnlib" / "explorables").glob("*.js"))
    assert [m.name for m in modules] == ["attention_drag.js", "sliders.js", "translate.js"]
    for module in modules:
        text = module.read_text(encoding="utf-8")
        assert re.search(r"^export default \{ render \};$", text, re.M), module.name
        assert not re.search(r"^export (async )?function render\b", text, re.M), module.name
        assert not re.search(r"^export \{[^}]*\brender\b", text, re.M), module.name
        assert not re.search(r"^import ", text, re.M), f"{module.name} imports a module"


@pytest.fixture(scope="module")
def colab_env(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Colab's stack in a fresh venv, then the live install cell run in a kernel of it."""
    tmp = tmp_path_factory.mktemp("colab")
    clone, sha = commit_work_tree(tmp)
    venv = tmp / "venv"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PIP_NO_CACHE_DIR"}
    }
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    run_checked([PYTHON, "-m", "venv", str(venv)], env, tmp)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--quiet", "--no-compile"]  # no .pyc: ~10 s less
    run_checked([*pip, "pip==24.1.2"], env, tmp)  # Colab's pip
    run_checked([*pip, *COLAB, str(TORCH)], env, tmp)
    before = json.loads(run_checked([python, "-c", DISTRIBUTIONS], env, tmp))

    cell = colab.install_cell(url=f"file://{clone}", ref=sha)
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(cell), nbformat.v4.new_code_cell(PROBE)]
    )
    colab_env = {"python": python, "env": env, "tmp": tmp}
    nb = _execute(nb, colab_env, "install")
    after = json.loads(run_checked([python, "-c", DISTRIBUTIONS], env, tmp))
    return {
        **colab_env,
        "venv": venv,
        "clone": clone,
        "sha": sha,
        "cell": cell,
        "before": before,
        "after": after,
        "install": nb,
    }


@pytest.mark.slow
def test_the_install_cell_adds_attnlib_and_what_colab_lacks_and_replaces_nothing(colab_env):
    before, after = colab_env["before"], colab_env["after"]
    assert f'%pip install --quiet "attnlib @ git+file://{colab_env["clone"]}@' in colab_env["cell"]
    assert "attnlib" not in before
    assert (before["ipywidgets"], before["anywidget"]) == ("7.7.1", "0.9.21")
    changed = {
        name: (version, after.get(name))
        for name, version in before.items()
        if after.get(name) != version
    }
    assert not changed, f"the install cell replaced packages under the kernel: {changed}"
    added = set(after) - set(before)
    assert added == MISSING_ON_COLAB, f"added {sorted(added)}"
    assert not {"myst-nb", "otter-grader", "jupyter-book"} & set(after)
    probe = _probe(colab_env["install"].cells[-1])
    venv = Path(colab_env["venv"]).resolve()
    assert Path(probe["prefix"]).resolve() == venv, "the kernel did not run in the Colab venv"
    # installed from the clone into the environment, not imported from a checkout
    assert Path(probe["attnlib"]).resolve().is_relative_to(venv)
    assert (probe["ipywidgets"], probe["anywidget"]) == ("7.7.1", "0.9.21")
    assert not probe["otter"]
    assert not probe["myst_nb"]


@pytest.mark.slow
def test_a_part_i_chapter_runs_with_its_explorable_on_colabs_widgets(colab_env):
    live = ROOT / "_build" / "live" / "chapters" / f"{CHAPTER}.ipynb"
    source = live if live.exists() else CHAPTERS / f"{CHAPTER}.ipynb"
    nb = _with_install_cell(source, colab_env["cell"])
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    nb = _execute(nb, colab_env, CHAPTER)
    # a cell tagged raises-exception shows a deliberate error; any other error is a failure
    errors = unexpected_errors(nb)
    assert not errors, errors
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert "%pip" not in _stdout(first), "attnlib was installed already: the cell must do nothing"
    # the explorable: a widget view of an anywidget whose front end is attnlib's ES module
    views = [
        o.data["application/vnd.jupyter.widget-view+json"]["model_id"]
        for c in nb.cells
        for o in c.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert views, "the chapter showed no widget"
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    for model_id in views:
        model = state[model_id]
        assert model["model_module"] == "anywidget"
        assert model["state"]["view"] == "softmax"
        assert "export default { render }" in model["state"]["_esm"]
    probe = _probe(nb.cells[-1])
    assert (probe["ipywidgets"], probe["anywidget"]) == ("7.7.1", "0.9.21")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["answered", "blank"])
def test_grader_check_on_colab(colab_env, kind):
    notebook = (SOLUTIONS if kind == "answered" else EXERCISES) / f"{EXERCISE}.ipynb"
    cell = colab.install_cell(EXERCISE, url=f"file://{colab_env['clone']}", ref=colab_env["sha"])
    nb = _with_install_cell(notebook, cell)
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "import json\n"
            "report = grader.check_all()\n"
            "print('CHECKS ' + json.dumps({r.question: [r.status, r.score, r.possible, repr(r)]\n"
            "                               for r in report.results}))"
        )
    )
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    nb = _execute(nb, colab_env, f"{EXERCISE}-{kind}")
    checks = json.loads(_stdout(nb.cells[-2]).split("CHECKS ", 1)[1])
    assert set(checks) == {"q1_softmax", "q2_masked_softmax"}
    for question, (status, score, possible, text) in checks.items():
        assert possible > 0
        if kind == "answered":
            assert (status, score) == ("passed", possible), text
        else:
            assert (status, score) == ("not answered", 0), text
            assert text.startswith(f"{question}: not answered yet")
    # every grader.check cell of the notebook showed its result, without otter
    shown = [
        o
        for c in nb.cells
        if c.cell_type == "code" and c.source.startswith("grader.check(")
        for o in c.outputs
        if o.output_type == "execute_result"
    ]
    assert len(shown) == 2
    assert all("text/html" in o.data for o in shown)
    assert not _probe(nb.cells[-1])["otter"]
