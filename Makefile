# Two commands on a fresh machine: `make demo` (the main job, local files, no servers) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test test-fast bench stack-up stack-down stack-build clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.dev-installed: $(VENV)/.installed
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/agentobs demo

test: $(VENV)/.dev-installed
	scripts/test.sh

test-fast: $(VENV)/.dev-installed
	$(BIN)/python -m pytest -q -m "not stack and not browser and not slow"

bench: $(VENV)/.dev-installed
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .stack-run .pytest_cache .hypothesis
