#!/usr/bin/env bash
# The whole test suite (`make test`, CI's .ci/run): everything the tests need is installed and started here, then
# stopped.
#   - Debian's chromium for the HTML report test
#   - the collector, Jaeger v2 and Prometheus: scripts/stack.sh builds them (Go module proxy, a version-keyed cache
#     in ~/.cache/agentobs/stack: ~5 minutes cold, nothing warm), installs Debian's prometheus, starts them as plain
#     processes and prints their addresses, which are exported into the test run. AGENTOBS_REQUIRE_STACK=1 makes
#     the stack tests fail (not skip) when a service does not answer.
#   - `up` runs twice: the second must find all three running and restart nothing
#   - the stack is always stopped at the end (trap), and no port of it may still be listening
#   - pytest's temporary folders live in a folder of this run's own (--basetemp), removed at the end: pytest keeps
#     only its last three sessions' folders in the shared default place, so another pytest session on the machine
#     would delete the folders this one's tests are still using
#   - before all that, the gates (scripts/gates.sh, also `make gates`): ruff, the complexity baseline, mypy and the
#     import contracts (lint-imports); any failure stops here
# Arguments go to pytest (e.g. scripts/test.sh -k stack -x).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin
STACK=scripts/stack.sh

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing ${need_apt[*]} (Debian packages)" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

log() { printf 'test.sh: %s\n' "$*" >&2; }

# the gates, before anything is started
VENV=${VENV:-.venv} scripts/gates.sh

# every port of the stack that something still listens on ("port SETTING" lines), or nothing
leftover_ports() {
  local port label
  while read -r port label; do
    if [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; then echo "$port $label"; fi
  done < <("$STACK" ports)
}

finish() {
  local rc=$? left
  trap - EXIT INT TERM
  if [ -n "${BASETEMP:-}" ]; then rm -rf "$BASETEMP"; fi
  log "stopping the stack"
  "$STACK" down || { log "error: scripts/stack.sh down failed"; rc=1; }
  left="$(leftover_ports)"
  if [ -n "$left" ]; then
    log "error: ports of the stack still listening after down:"
    printf '  %s\n' "$left" >&2
    ss -Hltnp 2>/dev/null | grep -E ":($(echo "$left" | cut -d' ' -f1 | paste -sd'|'))\b" | sed 's/^/  | /' >&2 || true
    rc=1
  else
    log "no port of the stack is listening"
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

t0=$SECONDS
log "building (if needed) and starting the stack"
# an assignment keeps `set -e` meaningful: eval "$(...)" would hide a failed `up`
stack_env="$("$STACK" up)"
eval "$stack_env"
log "stack up in $((SECONDS - t0))s"

before="$("$STACK" status)"
t1=$SECONDS
again="$("$STACK" up)"
after="$("$STACK" status)"
if [ "$again" != "$stack_env" ] || [ "$before" != "$after" ]; then
  log "error: a second 'up' changed the stack"
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi
log "a second 'up' took $((SECONDS - t1))s and changed nothing:"
printf '%s\n' "$after" | sed 's/^/  /' >&2

export AGENTOBS_REQUIRE_STACK=1
t2=$SECONDS
BASETEMP="$(mktemp -d -t agentobs-pytest-XXXXXX)"
"$BIN/python" -m pytest -q --basetemp "$BASETEMP" "$@"
log "pytest took $((SECONDS - t2))s"
