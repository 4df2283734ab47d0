# Every target installs what it needs into .venv first; the stamp skips that when nothing changed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
DEMO := /tmp/reins-demo

.PHONY: setup test lint bench demo clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,server]'
	touch $@

test: setup
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

bench: setup
	$(BIN)/pip install -q -e '.[dev,server,bench]'
	$(BIN)/python benchmarks/run.py

demo: setup
	rm -rf $(DEMO) && mkdir -p $(DEMO)
	$(BIN)/reins run "Create hello.txt saying 'Hello from reins', check it, and finish." \
		--model script:examples/hello.json --workspace $(DEMO) --store $(DEMO)/.reins
	$(BIN)/reins sessions --store $(DEMO)/.reins

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
