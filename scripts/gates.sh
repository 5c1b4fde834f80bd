#!/usr/bin/env bash
# The gates (`make gates`; scripts/test.sh runs them before the tests): lint, complexity, types, and the import
# contract between the packages. Configured in pyproject.toml ([tool.ruff], [tool.mypy], [tool.importlinter]) and
# scripts/complexity-baseline.json; docs/architecture.md ("How the rules are kept") says why. Stops at the first
# that fails.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin
log() { printf 'gates: %s\n' "$*" >&2; }

log "ruff (agentobs bench tests examples scripts)"
"$BIN/ruff" check agentobs bench tests examples scripts
log "complexity: C901, PLR0913, PLR0917 per file within scripts/complexity-baseline.json"
"$BIN/python" scripts/complexity_gate.py
log "mypy"
"$BIN/mypy"
log "import contracts"
"$BIN/lint-imports" --no-cache >/dev/null || "$BIN/lint-imports" --no-cache
