"""Repository hygiene: pins match the declaration, Binder matches the pins, notebooks are clean."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

from attnlib import colab
from conftest import EXERCISES, NOTEBOOKS, ROOT, toc_pages


def pins(path: Path) -> dict[str, Version]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "-")):
            continue
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==", f"{path.name}: {line} is not an exact pin"
        out[req.name.lower().replace("_", "-")] = Version(spec.version)
    return out


def declared() -> list[Requirement]:
    """The package's dependencies, its extras and the dependency groups (PEP 735)."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += extra
    for group in pyproject["dependency-groups"].values():
        reqs += [r for r in group if isinstance(r, str)]  # {include-group = ...} is listed too
    return [Requirement(r) for r in reqs]


def test_every_declared_dependency_is_pinned_within_its_range():
    pinned = pins(ROOT / "requirements.txt")
    for req in declared():
        name = req.name.lower().replace("_", "-")
        assert name in pinned, f"{req.name} is declared in pyproject.toml but not pinned"
        assert req.specifier.contains(pinned[name], prereleases=True), (
            f"{name}=={pinned[name]} in requirements.txt is outside pyproject's range {req.specifier}"
        )


def test_torch_is_the_cpu_build_and_jupyter_book_the_1x_line():
    pinned = pins(ROOT / "requirements.txt")
    assert pinned["torch"].local == "cpu"
    assert pinned["jupyter-book"].major == 1


def test_binder_installs_the_same_pins_and_the_package():
    lines = [
        ln.strip()
        for ln in (ROOT / "binder/requirements.txt").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    # learner-only pins, no -r line (tests/live/test_binder.py), at the versions of the one pinned file
    assert not [ln for ln in lines if ln.startswith(("-r", "-c"))], lines
    binder, pinned = pins(ROOT / "binder/requirements.txt"), pins(ROOT / "requirements.txt")
    assert {name: pinned.get(name) for name in binder} == binder
    assert "pip install --no-deps -e ." in (ROOT / "binder/postBuild").read_text()
    runtime = (ROOT / "binder/runtime.txt").read_text().strip()
    classifier = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert runtime == "python-3.11"
    assert Requirement(f"python{classifier}").specifier.contains("3.11")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_notebooks_are_committed_without_outputs(path):
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        assert "id" in cell, f"{path.name}: a cell has no id (run nbformat's normalize)"
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"{path.name}: strip the outputs"
            assert cell["execution_count"] is None, f"{path.name}: clear execution counts"


def test_toc_lists_every_chapter_and_exercise_once_and_nothing_missing():
    pages = toc_pages()
    assert len(pages) == len(set(pages)), "a page is listed twice in _toc.yml"
    for page in pages:
        assert any((ROOT / page).with_suffix(s).exists() for s in (".md", ".ipynb")), page
    chapters = {
        p.relative_to(ROOT).with_suffix("").as_posix()
        for p in (ROOT / "chapters").glob("*.*")
        if p.suffix in (".md", ".ipynb")
    }
    assert chapters <= set(pages), f"chapters not in _toc.yml: {chapters - set(pages)}"
    # one exercise page per instructor source (`make exercises` writes it), in number order
    sources = sorted(p.stem for p in (EXERCISES / "source").glob("*.ipynb"))
    exercises = [p.split("/")[1] for p in pages if re.fullmatch(r"exercises/\d+_\w+", p)]
    assert exercises == sources, "run `make exercises`: a student notebook differs from the sources"


def test_ci_runs_the_readme_test_command():
    commands = [
        ln.strip()
        for ln in (ROOT / ".ci/run").read_text().splitlines()
        if ln.strip() and not ln.startswith(("#", "set ", "cd "))
    ]
    assert commands == ["make test"]
    readme = (ROOT / "README.md").read_text()
    assert re.search(r"^make test$", readme, re.M)
    assert re.search(r"^make book$", readme, re.M)


@pytest.mark.parametrize(
    "path", [p for p in NOTEBOOKS if p.parent.name == "chapters"], ids=lambda p: p.name
)
def test_each_chapter_opens_with_the_install_cell_made_from_the_template(path):
    # Colab opens the notebook alone: its first code cell must fetch the course package.
    code = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    first = code[0]
    stale = f"{path.name}: its install cell differs from attnlib/colab.py's template; run `make chapters`"
    assert "".join(first["source"]) == colab.source_cell(), stale
    assert first["id"] == colab.CELL_ID, stale
    assert "remove-cell" in first["metadata"].get("tags", []), stale  # runs, but off the website
    again = [c["id"] for c in code[1:] if "%pip install" in "".join(c["source"])]
    assert not again, f"{path.name}: cells {again} install again; the install cell alone does that"


def test_the_install_cell_installs_from_the_configured_repository_only_where_attnlib_is_missing(
    monkeypatch,
):
    import ast
    import sys
    import types

    from IPython.core.inputtransformer2 import TransformerManager

    # The live flavour (what Binder, Colab and the zip open), for the repository of _config.yml
    # and the commit the website would be built from (tests/live/test_live_notebooks.py: overrides).
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    url, branch = config["url"], config["branch"]
    assert colab.repository() == (url, branch)
    home = colab.resolve({}, root=ROOT)
    assert home.url == url
    ref = home.ref
    source = colab.install_cell(url=home.url, ref=ref)
    assert f'"attnlib @ git+{url}@{ref}"' in source
    # What IPython runs: %pip becomes a call, and the rest must be plain, valid Python.
    python = TransformerManager().transform_cell(source)
    tree = ast.parse(python)
    (guard,) = tree.body  # nothing runs outside the guard
    assert isinstance(guard, ast.Try), ast.unparse(guard)
    assert [ast.unparse(n) for n in guard.body] == ["import attnlib"]
    assert [ast.unparse(h.type) for h in guard.handlers] == ["ModuleNotFoundError"]

    calls: list[tuple[str, str]] = []
    shell = types.SimpleNamespace(run_line_magic=lambda magic, line: calls.append((magic, line)))
    run = compile(python, "<install cell>", "exec")
    exec(run, {"get_ipython": lambda: shell})
    assert calls == [], "attnlib is installed here: the cell must not reinstall it"
    # As on Colab: import attnlib now raises ModuleNotFoundError.
    monkeypatch.setitem(sys.modules, "attnlib", None)
    exec(run, {"get_ipython": lambda: shell})
    assert calls == [("pip", f'install --quiet "attnlib @ git+{url}@{ref}"')]

    exercise = colab.install_cell("01_masked_softmax", url=url, ref=ref)  # same template
    assert f'"attnlib @ git+{url}@{ref}"' in exercise
    assert exercise.endswith('grader = student_notebook("01_masked_softmax.ipynb")')
    ast.parse(TransformerManager().transform_cell(exercise))


@pytest.mark.slow
def test_an_installed_attnlib_carries_its_checkpoints_and_the_exercises_public_tests(tmp_path):
    # Colab installs attnlib from git, not in editable mode: the data must be inside the wheel.
    import shutil
    import subprocess
    import sys
    import zipfile

    src = tmp_path / "src"  # a copy, so that setuptools' build/ folder lands outside the repo
    shutil.copytree(ROOT / "attnlib", src / "attnlib", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(ROOT / name, src / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(src),
            "--no-deps",
            "--quiet",
            "-w",
            str(tmp_path),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("attnlib-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    data = [
        p
        for d in ("checkpoints", "exercise_checks")
        for p in sorted((ROOT / "attnlib" / d).iterdir())
        if p.suffix in (".pt", ".json")
    ]
    assert len(data) >= 11 + 5
    missing = [p.name for p in data if p.relative_to(ROOT).as_posix() not in names]
    assert not missing, f"the wheel lacks {missing}"


def test_the_package_reports_the_version_pyproject_declares():
    # One version source: attnlib.__version__ is read from the installed package's metadata.
    import attnlib

    declared_version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert attnlib.__version__ == declared_version


def test_every_attnlib_package_is_installed_by_pip():
    # pyproject lists the packages by name: one left out works in the editable install of this
    # repository but is missing from the wheel Colab installs from git
    import tomllib

    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "attnlib").rglob("__init__.py")
    }
    assert on_disk <= listed, f"add {sorted(on_disk - listed)} to [tool.setuptools] packages"
