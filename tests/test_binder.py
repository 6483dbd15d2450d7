"""Binder's environment, built from the Binder files alone, runs a chapter.

What mybinder.org (repo2docker) does with ``binder/``, done here in a fresh virtual environment:
``pip install -r binder/requirements.txt`` (the same exact pins as the README set-up, torch's
CPU build from PyTorch's CPU index), then ``binder/postBuild`` (installs ``attnlib``), then one
chapter is executed on a fresh kernel *of that environment*, which must import ``attnlib`` from
the repository and ``torch`` as its CPU build.

Nothing of the repository's ``.venv`` is used. pip keeps its cache (a cold Binder start downloads
the same wheels). On this machine PyTorch's CPU index cannot be reached and pip's default of five
retries per package with back-off makes the install take ~25 minutes, so the test sets
``PIP_RETRIES=0``: pip then falls through to the other configured sources at once. This changes
how pip treats an unreachable host, not what it installs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from conftest import CHAPTERS, ROOT

# A fresh venv from binder/ alone takes minutes: `make test` runs this, `make check` does not.
pytestmark = pytest.mark.slow

BINDER = ROOT / "binder"
#: The chapter executed in the Binder environment (the first one a learner opens).
CHAPTER = CHAPTERS / "01_symbols.ipynb"
PROBE = (
    "import json, sys, attnlib, torch\n"
    "print('BINDER-PROBE ' + json.dumps({'prefix': sys.prefix, 'attnlib': attnlib.__file__,\n"
    "      'torch': torch.__version__, 'cuda': torch.backends.cuda.is_built()}))"
)


def _run(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float) -> str:
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, (
        f"`{' '.join(cmd)}` exited {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}"
        f"\n--- stderr\n{proc.stderr[-3000:]}"
    )
    return proc.stdout


@pytest.fixture(scope="module")
def binder_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A fresh venv with binder/requirements.txt and binder/postBuild applied; its timings."""
    venv = tmp_path_factory.mktemp("binder") / "venv"
    env = {
        k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}
    }
    env["PIP_RETRIES"] = "0"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    times: dict[str, float] = {}

    start = time.perf_counter()
    _run([sys.executable, "-m", "venv", str(venv)], env, ROOT, 120)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    python = str(venv / "bin" / "python")
    # repo2docker runs both from the repository root.
    _run(
        [python, "-m", "pip", "install", "--quiet", "-r", str(BINDER / "requirements.txt")],
        env,
        ROOT,
        1800,
    )
    times["pip install -r binder/requirements.txt"] = time.perf_counter() - start
    start = time.perf_counter()
    _run(["bash", str(BINDER / "postBuild")], env, ROOT, 600)
    times["binder/postBuild"] = time.perf_counter() - start
    return {"python": python, "venv": venv, "env": env, "times": times}


def test_a_chapter_runs_in_the_binder_environment(binder_env: dict[str, object]) -> None:
    python, env = str(binder_env["python"]), binder_env["env"]
    assert isinstance(env, dict)
    nb = nbformat.read(CHAPTER, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    work = Path(str(binder_env["venv"])).parent / CHAPTER.name
    nbformat.write(nb, work)
    script = (
        "import sys, nbformat\n"
        "from nbclient import NotebookClient\n"
        "nb = nbformat.read(sys.argv[1], as_version=4)\n"
        "NotebookClient(nb, timeout=120, kernel_name='python3',\n"
        "               resources={'metadata': {'path': sys.argv[2]}}).execute()\n"
        "nbformat.write(nb, sys.argv[1])\n"
    )
    start = time.perf_counter()
    _run([python, "-c", script, str(work), str(CHAPTER.parent)], env, ROOT, 300)
    elapsed = time.perf_counter() - start
    out = nbformat.read(work, as_version=4).cells[-1].outputs
    text = "".join(o.get("text", "") for o in out if o.get("output_type") == "stream")
    assert "BINDER-PROBE " in text, f"the probe cell printed nothing: {out}"
    probe = json.loads(text.split("BINDER-PROBE ", 1)[1])
    venv = Path(str(binder_env["venv"])).resolve()
    assert Path(probe["prefix"]).resolve() == venv, (
        f"the kernel ran in {probe['prefix']}, expected the Binder venv {venv}"
    )
    assert Path(probe["attnlib"]).resolve().is_relative_to(ROOT / "attnlib"), (
        f"attnlib came from {probe['attnlib']}, expected the repository (postBuild's -e .)"
    )
    assert probe["torch"].endswith("+cpu"), f"expected torch's CPU build, got {probe['torch']}"
    assert not probe["cuda"], f"torch {probe['torch']} was built with CUDA"
    times = dict(binder_env["times"])  # type: ignore[call-overload]
    times[f"execute {CHAPTER.relative_to(ROOT)}"] = elapsed
    report = ", ".join(f"{k}: {v:.0f} s" for k, v in times.items())
    print(f"\nBinder environment timings: {report}")
