# The two commands a fresh clone needs (see README.md):
#   make book   set up .venv and build the site into _build/html
#   make test   set up .venv, build the site (warnings are errors) and run every test
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PIP := $(BIN)/python -m pip --disable-pip-version-check

.PHONY: book test lint bench pin clean

# Re-run the install only when the declaration or the pins change.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet -r requirements.txt
	$(PIP) install --quiet --no-deps -e .
	@touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going

lint: $(STAMP)
	$(BIN)/ruff check attnlib tests bench

test: book lint
	$(BIN)/python -m pytest -n 2 --nbmake tests chapters exercises

bench: $(STAMP)
	$(BIN)/python bench/run.py

# Refresh the exact pins from the ranges in pyproject.toml (needs a working .venv).
pin: $(STAMP)
	$(PIP) install --quiet --upgrade -e ".[book,test,grade]"
	{ head -n 3 requirements.txt; $(BIN)/python -m pip freeze --exclude-editable | grep -v '^attnlib'; } > requirements.txt.new
	mv requirements.txt.new requirements.txt

clean:
	rm -rf _build
