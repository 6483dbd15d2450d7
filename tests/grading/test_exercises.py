"""The graded exercises: sources, generated student notebooks, grading, and the website.

One module-scoped build (``otter assign`` on every source, into a temporary
folder) serves the freshness checks and the gradebook; the gradebook test grades
one folder that mixes full, blank, partial and hostile submissions
(tests/fixtures/submissions.py) in one parallel batch with the sandboxed grader.
The grader itself is tested in tests/grading/test_grader.py, tests/grading/test_hostile.py and
tests/grading/test_variants.py.
"""

from __future__ import annotations

import csv
import hashlib
import html
import json
import re
from pathlib import Path

import nbformat
import pytest
import yaml

from attnlib import grading
from attnlib.grading.questions import EXERCISES as GRADED
from conftest import EXERCISES, ROOT, SOLUTIONS
from fixtures import submissions as fx

SOURCES = sorted((EXERCISES / "source").glob("*.ipynb"))
NAMES = [p.stem for p in SOURCES]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exercises")
    grading.build(students=tmp / "students", out=tmp / "build", checks=tmp / "checks")
    return tmp


# --------------------------------------------------------------------------- reading sources
def _blocks(nb):
    """Yield (question config, prompt, solution cells, [(hidden, test source)]) per question."""
    question, stack, prompt, solutions, tests = None, [], None, [], []
    for cell in nb.cells:
        src = cell.source.strip()
        if cell.cell_type == "raw" and src.startswith("# BEGIN QUESTION"):
            question, prompt, solutions, tests = src, None, [], []
            stack = ["question"]
        elif cell.cell_type == "raw" and src.startswith("# BEGIN "):
            stack.append(src.split()[2].lower())
        elif cell.cell_type == "raw" and src.startswith("# END QUESTION"):
            yield question, prompt, solutions, tests
            question, stack = None, []
        elif cell.cell_type == "raw" and src.startswith("# END "):
            stack.pop()
        elif (
            question and stack[-1] == "question" and cell.cell_type == "markdown" and prompt is None
        ):
            prompt = src
        elif question and stack[-1] == "solution":
            solutions.append(src)
        elif question and stack[-1] == "tests":
            tests.append((bool(re.search(r"^hidden:\s*true", src, re.M)), src))


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _secret_lines(source: Path) -> set[str]:
    """Lines only a solution or a hidden test contains (normalised), long enough to be telling."""
    nb = nbformat.read(source, as_version=4)
    secret, public = set(), set()
    for _, _prompt, solutions, tests in _blocks(nb):
        for sol in solutions:
            inside = re.findall(r"# BEGIN SOLUTION\n(.*?)\n\s*# END SOLUTION", sol, re.S)
            for chunk in inside:
                secret |= {_norm(ln) for ln in chunk.splitlines()}
        for hidden, test in tests:
            lines = {_norm(ln) for ln in test.splitlines()}
            (secret if hidden else public).update(lines)
    for cell in nb.cells:  # text the student notebook shows anyway
        if "# BEGIN SOLUTION" not in cell.source and "BEGIN TEST CONFIG" not in cell.source:
            public |= {_norm(ln) for ln in cell.source.splitlines()}
    generic = ("#", '"""', "import ", "from ")
    return {s for s in secret - public if len(s) >= 12 and not s.startswith(generic)}


def _page_text(path: Path) -> str:
    raw = path.read_text(errors="replace")
    if path.suffix == ".html":
        raw = html.unescape(re.sub(r"<[^>]+>", "", raw))
    elif path.suffix == ".ipynb":
        nb = json.loads(raw)
        raw = "\n".join("".join(c.get("source", "")) for c in nb.get("cells", [])) + json.dumps(
            nb.get("metadata", {})
        )
    return _norm(raw)


# --------------------------------------------------------------------------- the sources
def test_every_source_has_its_question_module_which_gives_the_points_the_prompts_state():
    # the two registries, found on disk: the sources and the grader's question modules
    assert NAMES, "no source notebook in exercises/source/"
    assert list(GRADED) == NAMES, "a source without its question module, or the reverse"
    assert [ex.number for ex in GRADED.values()] == [int(name.split("_")[0]) for name in NAMES]
    # fx.POINTS: "**Question 1 (4 points).**" read from each prompt
    assert {
        name: {q.name: q.total for q in ex.questions} for name, ex in GRADED.items()
    } == fx.POINTS


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_each_question_links_its_chapter_and_has_public_tests_only(source):
    # hidden cases are drawn at grading time from a private seed (attnlib/grading/questions/):
    # a hidden test in a public source would not be hidden
    nb = nbformat.read(source, as_version=4)
    blocks = list(_blocks(nb))
    assert blocks, f"{source.name} has no question"
    names = [re.search(r"^name:\s*(\w+)", config, re.M).group(1) for config, *_ in blocks]
    assert names == [q.name for q in GRADED[source.stem].questions]
    for config, prompt, solutions, tests in blocks:
        assert "{doc}`../chapters/" in prompt, f"{config}: the prompt links no chapter"
        assert solutions, f"{config}: no solution"
        assert any(not h for h, _ in tests), f"{config}: no public test"
        assert not any(h for h, _ in tests), f"{config}: a hidden test in a public source"
        assert all("call(" in t or "model" in t for _, t in tests), (
            f"{config}: call learner code via call()"
        )
    title = next(c.source for c in nb.cells if c.cell_type == "markdown")
    assert re.match(r"\(ex-[\w-]+\)=\n# Exercise \d: ", title), title[:80]


# --------------------------------------------------------------------------- the student notebooks
@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_is_up_to_date_with_its_source(built, name):
    committed = json.loads((EXERCISES / f"{name}.ipynb").read_text())
    fresh = json.loads((built / "students" / f"{name}.ipynb").read_text())
    assert committed == fresh, f"exercises/{name}.ipynb is out of date: run `make exercises`"


@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_holds_no_solution_and_no_hidden_test(name):
    secrets = _secret_lines(EXERCISES / "source" / f"{name}.ipynb")
    assert len(secrets) >= 3, "the secret-line extraction found too little to be a real check"
    text = _page_text(EXERCISES / f"{name}.ipynb")
    leaked = sorted(s for s in secrets if s in text)
    assert not leaked, f"{name}.ipynb shows {leaked[:3]}"
    nb = nbformat.read(EXERCISES / f"{name}.ipynb", as_version=4)
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert f'grader = student_notebook("{name}.ipynb")' in first_code.source
    assert all(not re.search(r"hidden=True", t) for t in nb.metadata["otter"]["tests"].values())


# --------------------------------------------------------------------------- the learner's checks
@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_shipped_public_checks_are_up_to_date_and_hold_no_hidden_test(built, name):
    shipped = grading.CHECKS_DIR / f"{name}.json"
    assert shipped.read_text() == (built / "checks" / f"{name}.json").read_text(), (
        f"{shipped.relative_to(ROOT)} is out of date: run `make exercises`"
    )
    student = nbformat.read(EXERCISES / f"{name}.ipynb", as_version=4)
    assert grading.public_checks(name) == dict(student.metadata["otter"]["tests"])
    secrets = _secret_lines(EXERCISES / "source" / f"{name}.ipynb")
    text = _norm(" ".join(json.loads(shipped.read_text())["tests"].values()))
    assert not [s for s in secrets if s in text]
    assert "hidden=True" not in text


@pytest.mark.parametrize("name", NAMES)
def test_the_title_comes_first_and_the_set_up_cell_is_the_first_code(name):
    # the page (and the notebook) opens with its title; the set-up still runs before any code
    cells = nbformat.read(EXERCISES / f"{name}.ipynb", as_version=4).cells
    assert cells[0].cell_type == "markdown"
    assert re.match(r"\(ex-[\w-]+\)=\n# Exercise \d: ", cells[0].source), cells[0].source[:80]
    assert cells[1].cell_type == "code"
    assert "student_notebook(" in cells[1].source


@pytest.mark.parametrize("name", NAMES)
def test_the_first_code_cell_installs_what_the_checks_need_where_it_is_missing(name):
    cells = nbformat.read(EXERCISES / f"{name}.ipynb", as_version=4).cells
    first = next(c for c in cells if c.cell_type == "code")
    assert first.metadata.get("editable") is False
    assert first.metadata.get("deletable") is False
    # The committed cell makes the grader (the build has attnlib); the live copy that Binder,
    # Colab and the zip open installs attnlib first where it is missing, at the site's version
    # (_ext/live_notebooks.py; tests/live/test_live_notebooks.py checks the built copies).
    from attnlib import colab

    assert first.source == colab.source_cell(name)
    assert first.source.endswith(f'grader = student_notebook("{name}.ipynb")')
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    url = config["repository"]["url"]
    live = colab.install_cell(name, url=url, ref="v1.0")
    assert "except ModuleNotFoundError:" in live
    assert f'    %pip install --quiet "attnlib @ git+{url}@v1.0"' in live.splitlines()
    assert live.endswith(first.source.splitlines()[-1])


# The learner's checks run without otter (attnlib.grading.notebook); otter, the instructor's tool,
# is installed here, so the report cell holds the two side by side on the same variables.
REPORT = """\
import json, sys
from attnlib.grading import public_checks
otter_loaded = "otter" in sys.modules  # before anything below imports it
ours = {q: grader.check(q) for q in public_checks("NAME")}
from otter.test_files import ExceptionTestFile
theirs = {}
for q, source in public_checks("NAME").items():
    test_file = ExceptionTestFile.from_string(source, path=q)
    test_file.run(globals())
    theirs[q] = test_file
print("REPORT" + json.dumps({
    "otter_loaded": otter_loaded,
    "ours": {q: {"score": r.score, "possible": r.possible, "status": r.status,
                 "cases": [[c.status, c.points, c.message] for c in r.cases],
                 "text": repr(r), "html": r._repr_html_()} for q, r in ours.items()},
    "otter": {q: {"score": t.score, "possible": t.possible,
                  "cases": [[r.passed, r.test_case.points, r.test_case.success_message,
                             r.test_case.failure_message] for r in t.test_case_results]}
              for q, t in theirs.items()},
}))
"""


def _run_without_the_notebook_file(notebook: Path, name: str, cwd: Path) -> dict:
    """Execute a copy of ``notebook`` from ``cwd``, where no notebook file is (as on Colab)."""
    from nbclient import NotebookClient

    nb = nbformat.read(notebook, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(REPORT.replace("NAME", name)))
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    ).execute()
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("name") == "stdout")
    return json.loads(printed.split("REPORT", 1)[1])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["solution", "blank"])
@pytest.mark.parametrize("name", NAMES)
def test_checks_without_otter_agree_with_otter_where_the_notebook_is_not_on_disk(
    tmp_path, name, kind
):
    notebook = (SOLUTIONS if kind == "solution" else EXERCISES) / f"{name}.ipynb"
    report = _run_without_the_notebook_file(notebook, name, tmp_path)
    assert not list(tmp_path.glob("*.ipynb"))
    assert not report["otter_loaded"], "the learner's checks imported otter"
    ours, otter = report["ours"], report["otter"]
    assert set(ours) == set(otter) == set(fx.POINTS[name])
    for q, mine in ours.items():
        # the same cases, the same points and score as otter's own runner
        assert (mine["score"], mine["possible"]) == (otter[q]["score"], otter[q]["possible"]), q
        assert [c[1] for c in mine["cases"]] == [c[1] for c in otter[q]["cases"]], q
        assert [c[0] == "passed" for c in mine["cases"]] == [c[0] for c in otter[q]["cases"]], q
        assert mine["possible"] > 0
        if kind == "solution":
            assert mine["status"] == "passed", mine["text"]
            # the success message of each case, as otter shows it
            assert [c[2] for c in mine["cases"]] == [c[2] for c in otter[q]["cases"]]
            assert mine["text"].startswith(f"{q}: passed")
        else:
            assert mine["score"] == 0
            assert mine["status"] == "not answered", mine["text"]
            assert mine["text"].splitlines()[0] == f"{q}: not answered yet"
            assert "not answered yet" in mine["html"]
            # not a wall of failures: no failure message, no assertion text
            assert not any(c[3] and c[3] in mine["text"] for c in otter[q]["cases"])


# --------------------------------------------------------------------------- grading
def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.slow
def test_gradebook_of_full_blank_partial_and_hostile_submissions(built, tmp_path):
    subs = tmp_path / "submissions"
    cases = fx.materialise_all(subs, built / "build" / "solutions", EXERCISES)
    before = _digest(subs)
    gradebook = tmp_path / "gradebook.csv"
    grading.grade(subs, gradebook, seed="gradebook-test-4b9e1d7a0c3f6852", jobs=2)
    with open(gradebook, newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["student", "question", "score", "total", "note"]
    got = {
        (r["student"], r["question"]): (float(r["score"]), float(r["total"]), r["note"])
        for r in rows
    }
    # one row per student and question of every exercise in the batch, submitted or not
    students = {c.student for c in cases}
    assert len(got) == len(rows) == len(students) * sum(len(p) for p in fx.POINTS.values())
    wrong = []
    for case in cases:
        for q, total in fx.POINTS[case.exercise].items():
            score, tot, note = got[(case.student, f"{case.exercise}:{q}")]
            if (score, tot) != (case.expect[q], total):
                wrong.append(
                    f"{case.student} {q}: {score}/{tot}, expected {case.expect[q]}/{total} "
                    f"({case.why or case.kind}) {note}"
                )
    assert not wrong, "\n".join(wrong)
    # hostile submissions changed nothing outside their own sandbox
    assert _digest(subs) == before
    assert got[("ana", "01_masked_softmax:q1_softmax")][2].startswith("small scores:")
    assert got[("ana", "02_additive_score:q1_project")][2] == "no submission"


# --------------------------------------------------------------------------- the website
@pytest.mark.slow
def test_the_site_lists_student_notebooks_and_never_a_solution_or_hidden_test():
    site = ROOT / "_build" / "html"
    assert (site / "index.html").exists(), "build the site first (make book; make test does)"
    index = (site / "exercises" / "index.html").read_text()
    for name in NAMES:
        page = site / "exercises" / f"{name}.html"
        assert page.exists(), f"the site has no page for {name}"
        assert f"{name}.html" in index, f"exercises/index does not list {name}"
        assert "mybinder.org" in page.read_text(), f"{name}: no Binder launch button"
        assert "colab" in page.read_text().lower(), f"{name}: no Colab launch button"
    assert not list(site.rglob("source/*.html")), "an instructor source was published"
    secrets = set().union(*(_secret_lines(s) for s in SOURCES))
    leaks = []
    for path in site.rglob("*"):
        if path.is_file() and path.suffix in (
            ".html",
            ".ipynb",
            ".txt",
            ".md",
            ".js",
            ".json",
            ".py",
        ):
            text = _page_text(path)
            leaks += [f"{path.relative_to(site)}: {s}" for s in secrets if s in text]
    assert not leaks, "\n".join(leaks[:10])
