# The two commands a fresh clone needs (see README.md):
#   make book   set up .venv and build the site, and the notebooks' zip, into _build/html
#   make test   set up .venv, execute every notebook once, build the site from those runs
#               (warnings are errors) and run every test
# and the developers' fast loop (CONTRIBUTING.md):
#   make check  lint, type check, the tests not marked slow, the notebooks changed in the work tree
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PIP := $(BIN)/python -m pip --disable-pip-version-check

.PHONY: book test check lint typecheck browser sandbox bench pin clean exercises grade

# Re-run the install only when the declaration or the pins change.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet -r requirements.txt
	$(PIP) install --quiet --no-deps -e .
	@touch $@

# MathJax (it typesets the formulas at build time; the site serves its fonts) and the browser
# test's accessibility checker (axe-core), at the versions pinned in package-lock.json.
NODE_STAMP := node_modules/.installed
$(NODE_STAMP): package.json package-lock.json
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

# Where the course is published (attnlib/colab.py, resolve(); the build logs what it chose):
#   make book REPO=owner/name   the repository (default: GITHUB_REPOSITORY, else _config.yml)
#   SITE_URL=https://...        the website (default: https://OWNER.github.io/NAME/)
#   REF=v1.0                    what the live notebooks install (default: tag or commit at HEAD)
book: export COURSE_REPOSITORY = $(REPO)
book: export COURSE_SITE_URL = $(SITE_URL)
book: export COURSE_REF = $(REF)
book: $(STAMP) $(NODE_STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going
	$(MAKE) --no-print-directory bundle

# Every chapter and exercise notebook in one zip with a one-line set-up (attnlib/bundle.py),
# served by the site next to intro.html, which links it. Part of `make book`: it zips the live
# copies that build wrote (_build/live), with their repository and ref.
.PHONY: bundle
bundle: $(STAMP)
	$(BIN)/python -m attnlib.bundle _build/html/attention-course-notebooks.zip --live _build/live

# ruff reads the notebooks too (chapters and the exercises' sources; the exercises themselves are
# written from those by `make exercises`): the same rules, long lines allowed (pyproject.toml).
LINTED := attnlib tests bench _ext chapters exercises/source
lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

# mypy over attnlib, configured in pyproject.toml ([tool.mypy]).
typecheck: $(STAMP)
	$(BIN)/mypy

# The browser test (tests/site/test_site.py) drives Debian's chromium; install it when missing.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }

# The grader's sandbox (attnlib/grading/sandbox.py) is Debian's bubblewrap; install it when missing.
sandbox:
	@command -v bwrap >/dev/null || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq bubblewrap >/dev/null; }

# pytest as `make test` and `make check` run it: one worker per core, each taking the next test
# as it frees up, the 25 slowest listed at the end (every test's time is in the JUnit report
# `make test` writes to _build/), and every notebook nbmake runs without an error kept for the
# book build (tests/executed_notebooks.py).
# nbmake's limit per cell is a backstop against a real hang, far above what a busy machine takes.
PYTEST := $(BIN)/python -m pytest -n auto --dist loadgroup --durations=25 -p tests.executed_notebooks \
	--nbmake-timeout=1800

# Every test, in three steps so that each notebook is executed once per run:
#   1. nbmake executes every notebook under chapters/ and exercises/ (a failing claim fails here);
#   2. the site is built from those runs (_ext/notebook_cache.py takes them into the notebook
#      cache; the build executes only a notebook whose code changed since), warnings are errors;
#   3. every test under tests/, the site's and Binder's included.
test: lint typecheck browser sandbox $(STAMP) $(NODE_STAMP)
	@rm -rf _build/.executed
	$(PYTEST) --junitxml=_build/test-notebooks.xml --nbmake chapters exercises
	$(MAKE) --no-print-directory book
	$(PYTEST) --junitxml=_build/test-report.xml tests

# `make test` while two CPU-bound processes share the cores (BUSY=N for another number); the
# load average it saw and the outcome are in _build/test-under-load.log.
.PHONY: test-under-load
test-under-load:
	.ci/test-under-load

# The notebooks changed in the work tree: against git HEAD (deleted ones aside), and untracked.
CHANGED_NOTEBOOKS = $(sort $(filter %.ipynb,$(shell \
	git diff --name-only --diff-filter=d HEAD -- chapters exercises; \
	git ls-files --others --exclude-standard -- chapters exercises)))

# The fast loop: what `make test` runs less the tests marked slow (over ~1 s, or needing the
# built site) and the notebooks nobody touched. No site build, no browser.
check: lint typecheck sandbox
	$(PYTEST) -m "not slow" tests $(if $(CHANGED_NOTEBOOKS),--nbmake $(CHANGED_NOTEBOOKS))

# Every chapter's claims for training seeds 0, 1 and 2, in full: every model of seeds 1 and 2 is
# retrained, the English-French ones too (about an hour on two cores), one chapter after another
# (python -m attnlib.evidence). The table goes to tests/seeds.md and the small models of seeds 1
# and 2 to tests/seed_models/, both committed; `make test` holds the table to the code, reading
# those models instead of retraining them. ONLY="slug ..." reruns those chapters, keeps the rest.
.PHONY: seeds
seeds: $(STAMP)
	$(BIN)/python -m attnlib.evidence tests/seeds.md --seed-models tests/seed_models $(if $(ONLY),--only $(ONLY))

# For instructors (README, "For instructors"): build the exercises, grade a folder of submissions.
# The hidden cases are drawn from a private seed: ATTNLIB_GRADING_SEED=... make grade
SUBMISSIONS ?= submissions
GRADEBOOK ?= gradebook.csv

exercises: $(STAMP)
	$(BIN)/python -m attnlib.grading build

# The chapters' first code cell, the Colab install cell, written from its template (attnlib/colab.py).
# Phony: chapters/ is also a folder, which would otherwise count as up to date.
.PHONY: chapters
chapters: $(STAMP)
	$(BIN)/python -m attnlib.colab

grade: exercises sandbox
	$(BIN)/python -m attnlib.grading grade $(SUBMISSIONS) -o $(GRADEBOOK)

bench: $(STAMP)
	$(BIN)/python bench/run.py

# Refresh the exact pins from the ranges in pyproject.toml (needs a working .venv): the package,
# its grade extra and every dependency group. pip reads groups only from 25.1 on (--group), so
# they are read here with tomllib (an {include-group} entry is skipped: that group is listed too).
GROUPS := import tomllib; groups = tomllib.load(open("pyproject.toml", "rb"))["dependency-groups"]; \
	print("\n".join(r for g in groups.values() for r in g if isinstance(r, str)))
# Then Binder's learner-only pins are derived from them (binder/learner_pins.py; `make binder`).
pin: $(STAMP)
	$(BIN)/python -c '$(GROUPS)' > $(VENV)/groups.txt
	$(PIP) install --quiet --upgrade -e ".[exercises,instructor]" -r $(VENV)/groups.txt
	{ head -n 3 requirements.txt; $(BIN)/python -m pip freeze --exclude-editable | grep -v '^attnlib'; } > requirements.txt.new
	mv requirements.txt.new requirements.txt
	$(MAKE) --no-print-directory binder

# Binder's environment: the pins of requirements.txt that attnlib needs at run time, nothing for
# the book, the tests or the linters (tests/live/test_binder.py checks the file is what this writes).
# Phony: binder/ is also a folder.
.PHONY: binder
binder: $(STAMP)
	$(BIN)/python binder/learner_pins.py > binder/requirements.txt.new
	mv binder/requirements.txt.new binder/requirements.txt

clean:
	rm -rf _build
