"""The package's import graph: layered, from the numpy reference at the ground up; no cycles."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "attnlib"

#: Each module's layer. A module imports attnlib modules of lower layers only, so the graph
#: has no cycle and nothing reaches up (the numpy reference never imports torch code, a model
#: never imports the trainer, nothing imports the grader).
LAYERS: dict[str, int] = {
    # ground: no attnlib import at all
    "core": 0,  # the numpy reference implementation
    "vocab": 0,  # token ids and vocabularies
    "alignment": 0,  # numbers that describe a heatmap's shape
    "runtime": 0,  # torch thread count and eval mode
    "colab": 0,  # the notebooks' install cell
    "claims": 0,  # claims checked against their evidence
    # built on the ground
    "__init__": 1,
    "plots": 1,
    "experiments": 1,
    "tasks": 1,
    "models": 1,
    # training and interactive views
    "train": 2,
    "widgets": 2,
    # what reads trained models
    "importance": 3,
    "pretrained": 4,  # its uniform-attention recipes run with an importance.attention_intervention
    # the chapters' claims about trained models
    "evidence": 5,
    # the instructors' tool
    "grading": 5,
}


def _imports(path: Path) -> set[str]:
    """The attnlib modules a file imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("attnlib"):
            parts = node.module.split(".")
            found |= {parts[1]} if len(parts) > 1 else {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("attnlib.")}
    return found - {path.stem}


MODULES = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__main__")


def test_every_module_has_a_layer() -> None:
    assert sorted(LAYERS) == MODULES, "place a new module in LAYERS (tests/test_layers.py)"


@pytest.mark.parametrize("module", MODULES)
def test_a_module_imports_only_from_lower_layers(module: str) -> None:
    upward = {
        dep: LAYERS.get(dep)
        for dep in _imports(PACKAGE / f"{module}.py")
        if LAYERS.get(dep, 99) >= LAYERS[module]
    }
    assert not upward, f"attnlib.{module} (layer {LAYERS[module]}) imports {upward}"


def test_the_numpy_reference_imports_no_torch() -> None:
    for module in ("core", "alignment", "experiments"):
        tree = ast.parse((PACKAGE / f"{module}.py").read_text())
        top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        names = {a.name for n in top if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in top if isinstance(n, ast.ImportFrom) and n.module}
        assert not any(n.split(".")[0] == "torch" for n in names), module
