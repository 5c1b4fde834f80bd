#!/usr/bin/env bash
# The whole test suite: everything the tests need is installed and started here.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin

"$BIN/python" -m pytest -q "$@"
