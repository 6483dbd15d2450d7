# The two commands a fresh clone needs (see README.md):
#   make book   set up .venv and build the site into _build/html
#   make test   set up .venv, build the site (warnings are errors) and run every test
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PIP := $(BIN)/python -m pip --disable-pip-version-check

.PHONY: book test lint browser bench pin clean exercises grade

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

lint: $(STAMP)
	$(BIN)/ruff check attnlib tests bench

# The browser test (tests/test_site.py) drives Debian's chromium; install it when missing.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }

# Every test, tests/test_binder.py included (a fresh environment from binder/ alone, ~5-10 min).
test: book lint browser
	$(BIN)/python -m pytest -n 2 --nbmake tests chapters exercises

# For instructors (README, "For instructors"): build the exercises, grade a folder of submissions.
SUBMISSIONS ?= submissions
GRADEBOOK ?= gradebook.csv

exercises: $(STAMP)
	$(BIN)/python -m attnlib.grading build

# The chapters' first code cell, the Colab install cell, written from its template (attnlib/colab.py).
# Phony: chapters/ is also a folder, which would otherwise count as up to date.
.PHONY: chapters
chapters: $(STAMP)
	$(BIN)/python -m attnlib.colab

grade: exercises
	$(BIN)/python -m attnlib.grading grade $(SUBMISSIONS) -o $(GRADEBOOK)

bench: $(STAMP)
	$(BIN)/python bench/run.py

# Refresh the exact pins from the ranges in pyproject.toml (needs a working .venv).
pin: $(STAMP)
	$(PIP) install --quiet --upgrade -e ".[book,test,grade]"
	{ head -n 3 requirements.txt; $(BIN)/python -m pip freeze --exclude-editable | grep -v '^attnlib'; } > requirements.txt.new
	mv requirements.txt.new requirements.txt

clean:
	rm -rf _build
