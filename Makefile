# The two commands a fresh clone needs (see README.md):
#   make book   set up .venv and build the site, and the notebooks' zip, into _build/html
#   make test   set up .venv, build the site (warnings are errors) and run every test
# and the developers' fast loop (README, "For developers"):
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

# The JavaScript the site serves itself (widget manager, RequireJS, MathJax) and the browser test's
# accessibility checker (axe-core), at the versions pinned in package-lock.json.
NODE_STAMP := node_modules/.installed
$(NODE_STAMP): package.json package-lock.json
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

book: $(STAMP) $(NODE_STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going
	$(MAKE) --no-print-directory bundle

# Every chapter and exercise notebook in one zip with a one-line set-up (attnlib/bundle.py),
# served by the site next to intro.html, which links it. Part of `make book`.
.PHONY: bundle
bundle: $(STAMP)
	$(BIN)/python -m attnlib.bundle _build/html/attention-course-notebooks.zip

LINTED := attnlib tests bench _ext
lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

# mypy over attnlib, configured in pyproject.toml ([tool.mypy]).
typecheck: $(STAMP)
	$(BIN)/mypy

# The browser test (tests/test_site.py) drives Debian's chromium; install it when missing.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }

# The grader's sandbox (attnlib/grading/sandbox.py) is Debian's bubblewrap; install it when missing.
sandbox:
	@command -v bwrap >/dev/null || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq bubblewrap >/dev/null; }

# Every test, tests/test_binder.py included (a fresh environment from binder/ alone, ~5-10 min).
test: book lint typecheck browser sandbox
	$(BIN)/python -m pytest -n 2 --nbmake tests chapters exercises

# The notebooks changed in the work tree: against git HEAD (deleted ones aside), and untracked.
CHANGED_NOTEBOOKS = $(sort $(filter %.ipynb,$(shell \
	git diff --name-only --diff-filter=d HEAD -- chapters exercises; \
	git ls-files --others --exclude-standard -- chapters exercises)))

# The fast loop: what `make test` runs less the tests marked slow (over ~1 s, or needing the
# built site) and the notebooks nobody touched. No site build, no browser.
check: lint typecheck sandbox
	$(BIN)/python -m pytest -n 2 -m "not slow" tests $(if $(CHANGED_NOTEBOOKS),--nbmake $(CHANGED_NOTEBOOKS))

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
pin: $(STAMP)
	$(BIN)/python -c '$(GROUPS)' > $(VENV)/groups.txt
	$(PIP) install --quiet --upgrade -e ".[exercises,instructor]" -r $(VENV)/groups.txt
	{ head -n 3 requirements.txt; $(BIN)/python -m pip freeze --exclude-editable | grep -v '^attnlib'; } > requirements.txt.new
	mv requirements.txt.new requirements.txt

clean:
	rm -rf _build
