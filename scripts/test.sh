#!/usr/bin/env bash
# The whole test suite: everything the tests need is installed and started here, then stopped.
#   - Debian's chromium for the HTML report test
#   - the collector, Jaeger v2 and Prometheus (scripts/stack.sh builds and starts them)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing ${need_apt[*]} (Debian packages)" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

"$BIN/python" -m pytest -q "$@"
