# Two commands on a fresh machine: `make demo` (the main job, local files, no servers) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test gates test-fast test-full bench stack-up stack-down clean dialect-fixtures

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

# ruff, the complexity baseline (scripts/complexity_gate.py; `--update` after lowering a count or moving modules),
# mypy and the import contracts; `make test` runs them first
gates: $(VENV)/.dev-installed
	VENV=$(VENV) scripts/gates.sh

test-fast: $(VENV)/.dev-installed
	$(BIN)/python -m pytest -q -m "not stack and not browser and not slow"

# the full sizes of the reliability checks (10,000 property cases each, 10,000-run load through the stack)
test-full: $(VENV)/.dev-installed
	AGENTOBS_PROPERTY_EXAMPLES=10000 AGENTOBS_FULL=1 scripts/test.sh

bench: $(VENV)/.dev-installed
	$(BIN)/python -m bench.run

# regenerate the span-dialect fixtures (a venv per Python framework, node_modules per JS one, under ~/.cache/agentobs/dialects); DIALECTS=name... for some
dialect-fixtures: $(VENV)/.installed
	$(BIN)/python tests/dialects/generate.py $(DIALECTS)

stack-up:
	scripts/stack.sh up

stack-down:
	scripts/stack.sh down

clean:
	rm -rf $(VENV) .stack-run .pytest_cache .hypothesis
