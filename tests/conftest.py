"""What the test modules share: the repository's paths, hypothesis strategies, small helpers.

Test modules import these by name (``from conftest import ROOT, rand_params``): pytest puts
``tests/`` on ``sys.path`` (its default "prepend" import mode), as it does for ``fixtures/``.

The ``slow`` marker (registered in ``pyproject.toml``) is set on a test, or one of its
parametrised cases, that takes more than about a second or needs the built site (``make book``):
``make check`` deselects them with ``-m "not slow"``, ``make test`` runs them all.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no window, ever: every figure a test draws stays off screen

import numpy as np
import pytest
from _pytest.nodeid import NodeId
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

# No verdict may depend on the clock: hypothesis's default deadline (200 ms per example) and its
# "data generation is too slow" health check fail a correct test on a busy machine, so neither
# applies. A test that hangs is still a hang.
settings.register_profile("course", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("course")

# --------------------------------------------------------------------------- paths
ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
EXERCISES = ROOT / "exercises"
#: Every notebook nbmake executes: the chapters, the student exercises and their sources.
NOTEBOOKS = sorted(
    p
    for d in (CHAPTERS, EXERCISES)
    for p in d.rglob("*.ipynb")
    if ".ipynb_checkpoints" not in p.parts and "_build" not in p.parts
)


#: The chapter notebooks in reading order, as ``_toc.yml`` lists them (the site numbers them so).
TOC_CHAPTERS = [
    ROOT / p
    for p in __import__("attnlib.bundle").bundle.toc_notebooks(ROOT)
    if p.parts[0] == "chapters"
]

#: The solution notebooks the grading tests hand in (``make exercises`` writes them; git ignores
#: them, so a fresh clone has none): built once per run by :func:`exercise_solutions`.
SOLUTIONS = EXERCISES / "_build" / "solutions"


@pytest.fixture(scope="session", autouse=True)
def exercise_solutions() -> Path:
    """``exercises/_build/solutions``, built from the sources when missing or out of date.

    The stamp is a digest of the sources and of the build code; a file lock lets the xdist
    workers share one build. Only the build folder is written (the student notebooks and the
    shipped checks go to a temporary folder: ``tests/grading/test_exercises.py`` checks those).
    """
    from filelock import FileLock

    from attnlib.grading.assign import build

    inputs = sorted((EXERCISES / "source").glob("*.ipynb"))
    inputs += [ROOT / "attnlib" / "grading" / "assign.py", ROOT / "attnlib" / "colab.py"]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in inputs)).hexdigest()
    stamp = SOLUTIONS / ".sources.sha256"
    SOLUTIONS.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(SOLUTIONS.parent / ".build.lock")):
        if not stamp.exists() or stamp.read_text() != digest:
            with tempfile.TemporaryDirectory() as tmp:
                build(
                    students=Path(tmp) / "students",
                    out=SOLUTIONS.parent,
                    checks=Path(tmp) / "checks",
                )
            stamp.write_text(digest)
    return SOLUTIONS


# --------------------------------------------------------------------------- processes, notebooks, browser
def run_checked(cmd: list[str], env: dict[str, str], cwd: Path) -> str:
    """Run ``cmd``; its stdout, or an AssertionError with the command and the tail of its output.

    The timeout only stops a hang: the slowest command run this way (a cold ``pip install``)
    takes minutes.
    """
    import subprocess

    proc = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600, check=False
    )
    assert proc.returncode == 0, (
        f"`{' '.join(cmd)}` exited {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}"
        f"\n--- stderr\n{proc.stderr[-4000:]}"
    )
    return proc.stdout


def unexpected_errors(nb: Any) -> list[Any]:
    """The error outputs of an executed notebook, but those of cells tagged raises-exception."""
    return [
        o
        for c in nb.cells
        if "raises-exception" not in c.metadata.get("tags", [])
        for o in c.get("outputs", [])
        if o.output_type == "error"
    ]


#: How the browser tests start Debian's chromium: headless as root, and quiet on a closed network.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def chromium_path() -> str:
    """Debian's chromium ($CHROMIUM, else on PATH); an AssertionError that says how to get it."""
    import os
    import shutil

    path = (
        os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )
    assert path, (
        "expected Debian's chromium on PATH (or $CHROMIUM), found none: "
        "`apt-get install -y chromium` (make test installs it when missing)"
    )
    return path


# --------------------------------------------------------------------------- strategies
def finite_floats(bound: float = 50.0) -> st.SearchStrategy[float]:
    """Finite floats in [-bound, bound]: one score e_ti, never NaN or inf."""
    return st.floats(-bound, bound, allow_nan=False, allow_infinity=False)


#: One finite score e_ti in [-50, 50].
finite = finite_floats()


def score_vectors(
    min_len: int = 1, max_len: int = 12, bound: float = 50.0
) -> st.SearchStrategy[np.ndarray]:
    """Score vectors e : (T_x,) of float64, min_len ≤ T_x ≤ max_len, entries in [-bound, bound]."""
    return st.integers(min_len, max_len).flatmap(
        lambda n: arrays(np.float64, (n,), elements=finite_floats(bound))
    )


# --------------------------------------------------------------------------- helpers
def rand_params(
    rng: np.random.Generator, d_s: int = 3, d_h: int = 4, d_a: int = 5
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random additive-attention parameters W_a : (d_a, d_s), U_a : (d_a, d_h), v_a : (d_a,)."""
    return rng.normal(size=(d_a, d_s)), rng.normal(size=(d_a, d_h)), rng.normal(size=d_a)


@pytest.fixture
def one_torch_thread() -> Any:
    """torch on one thread for the test: tiny models gain nothing from threads, and lose much
    on a busy machine (a module opts in with ``pytestmark = pytest.mark.usefixtures(...)``)."""
    from attnlib.runtime import torch_threads

    with torch_threads(1):
        yield


#: The sizes of a tiny seq2seq model (``make_seq2seq(..., **TINY)``): fast, not trained.
TINY = {"emb": 8, "hidden": 6, "d_s": 10, "d_a": 7}


# --------------------------------------------------------------------------- slow tests
#: Slow tests in modules that are being rewritten elsewhere, marked here rather than with a
#: decorator in the module (move them to ``@pytest.mark.slow`` there once that work has landed).
#: ``module::test`` marks every parametrised case of the test.
SLOW_ELSEWHERE = {
    "test_pretrained.py::test_the_script_reproduces_a_shipped_checkpoint",  # retrains, ~5 s
    "test_pretrained.py::test_retrain_gives_the_shipped_model",  # ~3-5 s
    "test_pretrained.py::test_a_check_against_another_recipe_is_reported_as_different",  # ~2.5 s
}


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    collected = {f"{item.path.name}::{getattr(item, 'originalname', item.name)}" for item in items}
    for item in items:
        if f"{item.path.name}::{getattr(item, 'originalname', item.name)}" in SLOW_ELSEWHERE:
            item.add_marker(pytest.mark.slow)
    # A renamed test would silently lose its mark: say so when its whole module was collected.
    whole_modules = not any("::" in arg for arg in config.args) and not config.getoption(
        "lf", default=False
    )
    modules = {item.path.name for item in items}
    for name, listed in (("SLOW_ELSEWHERE", SLOW_ELSEWHERE), ("GROUPED_TESTS", GROUPED_TESTS)):
        stale = sorted(n for n in set(listed) - collected if n.split("::")[0] in modules)
        if whole_modules and stale:
            raise pytest.UsageError(f"tests/conftest.py {name} names no test: {stale}")
    _schedule(config, items)


# --------------------------------------------------------------------------- scheduling
#: Modules whose module-scoped fixture is expensive (a class of submissions graded, a fresh
#: environment installed): with ``--dist loadgroup`` (``make test``) all their tests run on one
#: worker, so the fixture is made once per run instead of once per worker.
GROUPED = {
    "test_hostile.py": "hostile",
    "test_binder.py": "binder",
    "test_colab.py": "colab",
    "test_grading_decoding.py": "grading-decoding",
    "test_grading_torch.py": "grading-torch",
    "test_variants.py": "variants",
    "test_exercises.py": "exercises",
}
#: Tests that share a fixture or a per-process cache costlier than the test itself, by
#: ``module::test``: the page-weight tests of the site each read every page's weight, which
#: ``page_weight`` measures once per process, and the offline visit of each page records it.
GROUPED_TESTS = {
    f"test_site.py::{name}": "page-weights"
    for name in (
        "test_page_renders_offline",
        "test_median_page_weight",
        "test_no_page_requests_anything_from_outside_the_site",
        "test_widget_page_weight",
        "test_explorable_pages_stay_under_the_widget_page_limit",
        "test_icons_are_drawn_from_the_webfont_without_the_svg_script",
    )
}
#: The cases of tests/test_seeds.py that retrain with seed 1, and those with seed 2, run on one
#: worker each: chapters that read the same models (the long copy task's, in four chapters)
#: then train them once per seed and share them in that worker's process.
SEED_GROUPS = {1: "seed-1", 2: "seed-2"}
#: The JUnit report of the last ``make test`` (its step over tests/), read for test durations.
REPORT = ROOT / "_build" / "test-report.xml"


#: The "@group" ending :func:`_schedule` gives a grouped test's id, as the JUnit report writes it.
GROUP_SUFFIX = re.compile(r"@[\w:.\-]+\]?$")


def _last_durations() -> dict[str, float]:
    """Each test's duration in the last report, by ``path::name`` (empty without a report)."""
    import xml.etree.ElementTree as ET

    if not REPORT.is_file():
        return {}
    try:
        root = ET.parse(REPORT).getroot()
    except ET.ParseError:
        return {}
    out: dict[str, float] = {}
    for case in root.iter("testcase"):
        module = case.get("classname", "").split(".")
        path = "/".join(
            module[: next((k for k, m in enumerate(module) if m.startswith("test_")), 0) + 1]
        )
        # see _schedule: a grouped test's id ends in "@group", which the report writes
        # "test@group" or, with a parameter, "test[param]@group]"
        name = GROUP_SUFFIX.sub("", case.get("name", ""))
        out[f"{path}.py::{name}"] = float(case.get("time") or 0.0)
    return out


def _group(item: pytest.Item) -> str | None:
    """The xdist group of a test: its seed's in SEED_GROUPS, the one its module marks it with,
    its module's in GROUPED, or its own in GROUPED_TESTS."""
    if item.path.name == "test_seeds.py":
        seed = getattr(item, "callspec", None) and item.callspec.params.get("seed")
        return SEED_GROUPS.get(seed) if isinstance(seed, int) else None
    mark = item.get_closest_marker("xdist_group")
    if mark is not None:  # a group its module gives (tests/site/site_tabs.py, on_one_worker)
        return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
    function = getattr(item, "originalname", item.name)
    return GROUPED.get(item.path.name) or GROUPED_TESTS.get(f"{item.path.name}::{function}")


def _schedule(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group the expensive modules (and the seeds' retrainings, :func:`_group`) and put the
    longest modules first (longest processing time).

    Only the order of whole modules changes (the tests of a module stay together, so a
    module-scoped fixture is made once per worker). A module's length is its tests' durations
    in the last report, or an estimate where there is none (a slow test 5 s, another 0.2 s,
    and 60 s for a grouped module's fixture). The order decides nothing but which worker runs what when.
    """
    for item in items:
        group = _group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
            if getattr(config.option, "loadgroup", False):  # set on a worker of --dist loadgroup
                # xdist sends a test to the worker of its group when its id ends in "@group";
                # it writes that suffix to ``item._nodeid``, which pytest 9 no longer reads (the
                # id is ``item._id``), so the group mark alone would leave the tests scattered.
                item._id = NodeId.parse(f"{item.nodeid}@{group}")
    last = _last_durations()

    def estimate(item: pytest.Item) -> float:
        known = last.get(f"{item.nodeid.split('::')[0]}::{item.name}")
        if known is not None:
            return known
        return 5.0 if item.get_closest_marker("slow") else 0.2

    length: dict[Path, float] = {}
    for item in items:
        if item.path not in length:  # a grouped module's fixture, where no report says better
            length[item.path] = 60.0 if item.path.name in GROUPED and not last else 0.0
        length[item.path] += estimate(item)
    first_seen = {path: k for k, path in enumerate(dict.fromkeys(item.path for item in items))}
    items.sort(key=lambda item: (-length[item.path], first_seen[item.path]))


# --------------------------------------------------------------------------- the book's pages
def toc_pages(root: Path = ROOT) -> list[str]:
    """Every page of ``_toc.yml`` in reading order (``chapters/symbols``, ...), read here.

    A ``glob`` entry (``exercises/[0-9]*``) stands for the pages it matches, sorted, as Sphinx
    reads it: ``*`` stops at a ``/``. Read independently of ``attnlib.bundle.toc_notebooks``,
    which the tests hold to it.
    """
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    pages = [toc["root"]]
    stack = list(toc.get("parts", [])) + list(toc.get("chapters", []))
    while stack:
        entry = stack.pop(0)
        if "file" in entry:
            pages.append(entry["file"])
        if "glob" in entry:
            matched = {
                p.relative_to(root).with_suffix("").as_posix()
                for suffix in (".md", ".ipynb")
                for p in root.glob(entry["glob"] + suffix)
            }
            pages += sorted(matched)
        stack[:0] = list(entry.get("chapters", [])) + list(entry.get("sections", []))
    return pages


# --------------------------------------------------------------------------- gradebooks
def short_of_full_marks(
    rows: dict[tuple[str, str], dict[str, str]], students: list[str], questions: list[str]
) -> list[str]:
    """Each (student, question) of a gradebook's rows that did not get every point, with its note."""
    return [
        f"{student} {q}: {rows[student, q]['score']}/{rows[student, q]['total']} "
        f"{rows[student, q]['note']}"
        for student in students
        for q in questions
        if float(rows[student, q]["score"]) != float(rows[student, q]["total"])
    ]
