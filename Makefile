# The two commands a newcomer needs are `make demo` and `make test` (see README.md).
# Everything is installed into .venv/; binaries built once are cached under ~/.cache/hpa/.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
HPA_CACHE ?= $(HOME)/.cache/hpa
export HPA_CACHE
# The install stamp changes with pyproject.toml, so a second run reinstalls nothing.
STAMP := $(VENV)/.installed-$(shell sha256sum pyproject.toml | cut -c1-12)
PYTEST_ARGS ?=

.PHONY: help venv test demo lint typecheck imports pytest unit

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,lint,plot]'
	rm -f $(VENV)/.installed-*
	touch $@

venv: $(STAMP) ## create .venv and install the package with every extra

lint: venv ## ruff lint and format check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: venv ## mypy --strict
	$(BIN)/mypy

imports: venv ## import-linter layer contracts
	$(BIN)/lint-imports

unit: venv ## the tests that need no lab (fast path while developing)
	$(BIN)/pytest -m 'not e2e' $(PYTEST_ARGS)

pytest: venv
	$(BIN)/pytest $(PYTEST_ARGS)

test: venv lint typecheck imports pytest ## install what the tests need, then run lint, types, contracts and all tests

demo: venv ## run the embedded demo (no cluster needed)
	$(BIN)/hpa demo
