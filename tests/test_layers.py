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
    "progress": 0,  # a training progress bar that leaves text, not a widget
    "colab": 0,  # the notebooks' install cell
    "claims": 0,  # claims checked against their evidence
    "glue": 0,  # a computed number put into the prose (myst-nb's glue, without myst-nb)
    "trained": 0,  # what both stacks of trained models share: protocols, Bucket, Translation
    "_adam": 0,  # Adam written out, for the few tensors optimised by hand
    "mt.scoring": 1,  # BLEU and chrF of translations (sacrebleu), BLEU per length Bucket
    "bundle": 1,  # the zip of every notebook that the site offers as a download (uses colab)
    # the wings' packages: a docstring naming the chapters they serve (explorables: ASSETS)
    "mt": 0,
    "mt.data": 0,  # the English-French pairs, shipped as package data (no code)
    "transformer": 0,
    "explorables": 0,  # ASSETS: the front ends (ES modules, stylesheets) shipped beside the widgets
    # built on the ground
    "__init__": 1,
    "plots": 1,
    "experiments": 1,
    "transformer.selfattn": 1,  # self-attention and positional encodings, numpy (self_attention)
    "transformer.selfattn_models": 2,  # self_attention's torch models, toy tasks and experiments
    "transformer.qkv": 1,  # queries, keys, values and scaled dot-product attention (on core)
    "tasks": 1,
    "models": 1,
    # training and interactive views
    "train": 2,
    "_decoding_fast": 1,  # greedy decoding of one sentence, rearranged (held to decoding)
    "decoding": 2,  # greedy and beam search over a Seq2Seq
    "mt.tatoeba": 3,  # the English-French pairs: reading, normalising, tokenising, splitting, batches
    "mt.translation": 4,  # the English-French model: recipe, training, translating, BLEU
    "explorables.sliders": 2,
    "explorables.drag": 1,  # the in-browser explorables (anywidget), on the numpy reference
    # what reads trained models
    "importance": 3,
    # gradients of outputs w.r.t. source embeddings; the cost of a layer (gradient_flow_and_cost)
    "transformer.gradflow": 2,
    "pretrained": 4,  # its uniform-attention recipes run with an importance.attention_intervention
    # the chapters' claims about trained models
    "evidence._shared": 5,  # the trained models by seed, and helpers the chapters share
    "evidence._seeds": 0,  # the seed table: written and read back
    "evidence": 7,  # the registry of the chapters' modules (evidence.<slug>: FOLDERS)
    # Part IV's studies of the English-French model, and its translate widget
    "mt.examples": 5,
    "mt.alignments": 5,
    "explorables.translate": 5,
    # the graded exercises (a package): the learner's side and the channel on the ground, the
    # worker on the channel, the trusted grader on top; the package itself re-exports the
    # learner's side and loads build and grade on demand, so it sits above them all
    "grading.reference": 0,
    "grading.checks": 0,
    "grading.channel": 0,
    "grading.notebook": 1,  # the learner's runner of the public checks (uses grading.checks)
    "grading.sandbox": 0,
    "grading.reader": 0,  # reads a submitted notebook in a child process with limits
    "grading.worker": 1,
    "grading.session": 1,
    "grading.cases": 1,
    "grading.assign": 2,
    # grading.questions.<exercise> (one module per exercise): FOLDERS, below
    "grading.questions": 4,
    "grading.grader": 5,
    "grading": 6,
}

#: Packages whose modules all sit on one layer, found on disk rather than listed, so that a new
#: module there needs no line above: the question module of each exercise (one per exercise,
#: gathered by ``attnlib.grading.questions``). A module listed in LAYERS keeps its own layer.
FOLDERS: dict[str, int] = {
    "grading.questions": 3,
    "evidence": 6,  # one module per chapter, named by its slug: its claims, on the models
}


def _name(path: Path) -> str:
    """``core``, ``grading.channel``, ``grading`` (a package's __init__), ``__init__`` (the root)."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def _known(dotted: str) -> str:
    """The longest module in LAYER that ``attnlib.<dotted>`` is or lies in."""
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        if ".".join(parts[:k]) in LAYER:
            return ".".join(parts[:k])
    return parts[0]


def _imports(path: Path, top_only: bool = False) -> set[str]:
    """The attnlib modules a file imports, at the top or (unless ``top_only``) inside a function."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("attnlib"):
            base = node.module.split(".", 1)[1] if "." in node.module else ""
            for a in node.names:
                sub = f"{base}.{a.name}" if base else a.name
                found.add(_known(sub) if sub in LAYER or not base else _known(base))
        elif isinstance(node, ast.Import):
            found |= {
                _known(a.name.split(".", 1)[1]) for a in node.names if a.name.startswith("attnlib.")
            }
    return found - {_name(path)}


FILES = {_name(p): p for p in PACKAGE.rglob("*.py") if p.stem != "__main__"}
MODULES = sorted(FILES)
#: Every module's layer: its line in LAYERS, else the layer of the FOLDERS package it lies in.
LAYER = {
    **{m: FOLDERS[m.rpartition(".")[0]] for m in MODULES if m.rpartition(".")[0] in FOLDERS},
    **LAYERS,
}


def test_every_module_has_a_layer() -> None:
    assert sorted(LAYER) == MODULES, "place a new module in LAYERS (tests/test_layers.py)"


def test_the_question_modules_are_found_in_their_folder() -> None:
    # the folder rule places every exercise's module, none of which LAYERS lists
    questions = [m for m in MODULES if m.startswith("grading.questions.")]
    assert questions, "no question module found under attnlib/grading/questions/"
    assert all(LAYER[m] == FOLDERS["grading.questions"] for m in questions)
    assert not [m for m in questions if m in LAYERS]


@pytest.mark.parametrize("module", MODULES)
def test_a_module_imports_only_from_lower_layers(module: str) -> None:
    upward = {
        dep: LAYER.get(dep)
        for dep in _imports(FILES[module])
        if LAYER.get(dep, 99) >= LAYER[module]
    }
    assert not upward, f"attnlib.{module} (layer {LAYER[module]}) imports {upward}"


def test_the_numpy_reference_imports_no_torch() -> None:
    for module in ("core", "alignment", "experiments", "transformer.selfattn", "transformer.qkv"):
        tree = ast.parse(FILES[module].read_text())
        top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        names = {a.name for n in top if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in top if isinstance(n, ast.ImportFrom) and n.module}
        assert not any(n.split(".")[0] == "torch" for n in names), module


def test_the_worker_needs_nothing_of_the_grading_package_but_the_channel() -> None:
    # the sandbox holds attnlib with only these two files of grading (sandbox.stage)
    assert _imports(FILES["grading.worker"]) == {"grading.channel"}
    assert _imports(FILES["grading.channel"]) == set()


def test_a_learners_kernel_imports_only_the_learners_side() -> None:
    assert _imports(FILES["grading"], top_only=True) == {
        "grading.checks",
        "grading.notebook",
        "grading.reference",
    }
    learners_side = {"grading.checks", "grading.notebook", "grading.reference"}
    for module in learners_side:
        assert _imports(FILES[module]) <= learners_side, module
