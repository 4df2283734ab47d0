# Every target installs what it needs into .venv first; the stamp skips that when nothing changed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
DEMO := /tmp/reins-demo

.PHONY: setup peers test lint bench demo clean

setup: $(STAMP)

# llama-cpp-python comes from a wheel built once for any AVX2 CPU (scripts/build_llama_wheel.sh,
# cached in ~/.cache/reins): pip's own build targets the building CPU, which some VMs misreport.
$(STAMP): pyproject.toml scripts/build_llama_wheel.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q --force-reinstall --no-deps "$$(PYTHON=$(BIN)/python bash scripts/build_llama_wheel.sh)"
	$(BIN)/pip install -q -e '.[dev,server]'
	touch $@

# Real peers the tests talk to that pip does not bring: llama.cpp's llama-server (its Anthropic
# Messages API), built once into ~/.cache/reins (about 8 minutes), then reused.
peers: setup
	PYTHON=$(BIN)/python bash scripts/build_llama_server.sh > /dev/null

test: setup peers
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

bench: setup
	$(BIN)/pip install -q -e '.[dev,server,bench]'
	$(BIN)/pip install -q --no-deps -r benchmarks/bfcl/requirements-nodeps.txt
	$(BIN)/pip install -q -r benchmarks/bfcl/requirements.txt
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/sandbox.py
	$(BIN)/python benchmarks/bfcl/run.py
	$(BIN)/python benchmarks/tasks/oracle.py
	$(BIN)/python benchmarks/tasks/run.py --details /tmp/reins-tasks.json

# The main job: an agent on the embedded model (SmolLM2-135M, in-process, offline), in a scratch
# workspace, then its log. A model this small often fumbles the task; the run still shows the
# whole path: grammar-constrained actions, real tools, the event log.
demo: setup
	rm -rf $(DEMO) && mkdir -p $(DEMO)
	$(BIN)/reins run "Create the file hello.txt containing the text: Hello from reins" \
		--tools write_file,read_file --max-steps 4 --workspace $(DEMO) --store $(DEMO)/.reins \
		|| case $$? in 3|11) ;; *) exit 1 ;; esac  # out of steps (3) or going in circles (11): a model this small may
	$(BIN)/reins show last --store $(DEMO)/.reins
	ls -l $(DEMO)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
