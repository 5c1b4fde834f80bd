#!/usr/bin/env bash
# scripts/stack.sh - the agentobs observability backend (OpenTelemetry Collector, Jaeger v2, Prometheus) as plain
# background processes on 127.0.0.1, for tests, CI and machines without a Docker engine.
#
#   scripts/stack.sh build    build the collector (OCB) and Jaeger v2 from the Go module proxy into a version-keyed
#                             cache; a second build is a no-op
#   scripts/stack.sh up       build if needed, install Debian's prometheus if missing, start collector + Jaeger +
#                             Prometheus, wait until each is healthy, print the exports (also written to
#                             <run>/stack.env). Running and healthy services are left alone: `up` twice is harmless.
#   scripts/stack.sh down     stop what this run folder started (its pid files, each with the process's start
#                             time); a listener it did not start is named, never stopped
#   scripts/stack.sh status   one line per service; exit 0 only if all three are healthy
#   scripts/stack.sh env      print the exports (also without a running stack)
#   scripts/stack.sh restart  down, then up (a running service does not re-read a changed config by itself)
#   scripts/stack.sh clean    down, then delete the run folder (archive, Jaeger's Badger data, Prometheus data, logs)
#   scripts/stack.sh ports    "port SETTING" for every port the three services listen on (running or not)
#   scripts/stack.sh bin NAME the path of a service's binary (collector, jaeger, prometheus), built or not
#   scripts/stack.sh prometheus-config
#                             print prometheus/prometheus.yml (a template) filled from the settings below; with
#                             AGENTOBS_PROMETHEUS_TARGET_HOST=collector AGENTOBS_PROMETHEUS_SCRAPE_INTERVAL=5s it
#                             prints prometheus/prometheus.compose.yml, the file docker-compose.yml mounts
#
# Progress goes to stderr and the exports to stdout, so `eval "$(scripts/stack.sh up)"` works.
#
# Settings (environment, defaults in brackets):
#   AGENTOBS_STACK_CACHE   built binaries                    [$HOME/.cache/agentobs/stack]
#   AGENTOBS_STACK_RUN     pids, logs, archive, Jaeger and Prometheus data [<repo>/.stack-run]
#   AGENTOBS_STACK_HOST    bind address                      [127.0.0.1]
#   AGENTOBS_STACK_TIMEOUT seconds to wait for health        [90]
#   ports: AGENTOBS_COLLECTOR_OTLP_GRPC_PORT [14317], AGENTOBS_COLLECTOR_OTLP_HTTP_PORT [14318],
#          AGENTOBS_COLLECTOR_HEALTH_PORT [14133], AGENTOBS_COLLECTOR_TELEMETRY_PORT [14888],
#          AGENTOBS_COLLECTOR_PROMETHEUS_PORT [14889], AGENTOBS_JAEGER_OTLP_GRPC_PORT [24317],
#          AGENTOBS_JAEGER_OTLP_HTTP_PORT [24318], AGENTOBS_JAEGER_QUERY_HTTP_PORT [16686],
#          AGENTOBS_JAEGER_QUERY_GRPC_PORT [16685], AGENTOBS_JAEGER_HEALTH_PORT [23133],
#          AGENTOBS_JAEGER_HEALTH_GRPC_PORT [23132], AGENTOBS_JAEGER_TELEMETRY_PORT [28888],
#          AGENTOBS_PROMETHEUS_PORT [19090]
#   AGENTOBS_SPANMETRICS_FLUSH_INTERVAL [1s], AGENTOBS_PROMETHEUS_SCRAPE_INTERVAL [1s],
#   AGENTOBS_PROMETHEUS_TARGET_HOST [the client host]: where Prometheus finds the collector's two metrics ports
#   AGENTOBS_JAEGER_UI_CONFIG [<repo>/jaeger/ui-config.json]: the Jaeger UI settings (Monitor tab on)
#   AGENTOBS_REDACTION_SUMMARY [debug], AGENTOBS_COLLECTOR_MEMORY_LIMIT_MIB [512], AGENTOBS_COLLECTOR_LOG_LEVEL [info]
#   AGENTOBS_COLLECTOR_ARCHIVE [<run>/archive/traces.jsonl]: kept (appended) across restarts; `clean` removes it
#   AGENTOBS_JAEGER_BADGER_DIR [<run>/jaeger-badger]: Jaeger's trace storage (Badger), kept across down/up and
#     restart; `clean` removes it (when it is inside the run folder)
#   AGENTOBS_JAEGER_SPAN_TTL [72h]: how long Jaeger keeps a span (Badger's TTL; a Go duration such as 168h)
#   AGENTOBS_PROMETHEUS_KEEP_DATA: set to keep Prometheus' TSDB when it starts (default: a fresh TSDB each start)
#   AGENTOBS_PROMETHEUS_RULES [<run>/prometheus/rules]: the folder whose *.yml alerting rules Prometheus loads (e.g.
#     agentobs caps SOURCE --emit prometheus-rules > rules/caps.yml); `up` reloads Prometheus when they changed
#   AGENTOBS_STACK_KEEP_ON_FAILURE: set to leave services running when `up` fails
set -euo pipefail

# ------------------------------------------------------------------------------------------------------------------
# Pinned versions: the one place. collector/builder-config.yaml lists its modules at exactly these versions
# (checked by `build`); jaeger/config.yaml is written for exactly this Jaeger; stack/jaeger-build/go.mod requires
# exactly this Jaeger module version (updated by `build` with `go get -tool` when this line changes).
# docker-compose.yml runs the official images of the same releases (tests/scenarios/project/test_dashboards.py checks
# the tags).
OTELCOL_VERSION="0.161.0"           # collector core "beta" modules, contrib modules and the builder (OCB)
OTELCOL_STABLE_VERSION="1.67.0"     # collector core "stable" modules (confmap providers) of the same release
JAEGER_VERSION="2.13.0"             # Jaeger v2 release ...
JAEGER_MODULE_VERSION="v1.76.0"     # ... and its Go module version (v2 releases are published as v1.x module tags)
PROMETHEUS_DEB_PACKAGE="prometheus" # Debian bookworm: 2.42.0+ds
# ------------------------------------------------------------------------------------------------------------------

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${AGENTOBS_STACK_CACHE:-$HOME/.cache/agentobs/stack}"
RUN="${AGENTOBS_STACK_RUN:-$REPO/.stack-run}"
TIMEOUT="${AGENTOBS_STACK_TIMEOUT:-90}"

export AGENTOBS_STACK_HOST="${AGENTOBS_STACK_HOST:-127.0.0.1}"
export AGENTOBS_COLLECTOR_OTLP_GRPC_PORT="${AGENTOBS_COLLECTOR_OTLP_GRPC_PORT:-14317}"
export AGENTOBS_COLLECTOR_OTLP_HTTP_PORT="${AGENTOBS_COLLECTOR_OTLP_HTTP_PORT:-14318}"
export AGENTOBS_COLLECTOR_HEALTH_PORT="${AGENTOBS_COLLECTOR_HEALTH_PORT:-14133}"
export AGENTOBS_COLLECTOR_TELEMETRY_PORT="${AGENTOBS_COLLECTOR_TELEMETRY_PORT:-14888}"
export AGENTOBS_COLLECTOR_PROMETHEUS_PORT="${AGENTOBS_COLLECTOR_PROMETHEUS_PORT:-14889}"
export AGENTOBS_JAEGER_OTLP_GRPC_PORT="${AGENTOBS_JAEGER_OTLP_GRPC_PORT:-24317}"
export AGENTOBS_JAEGER_OTLP_HTTP_PORT="${AGENTOBS_JAEGER_OTLP_HTTP_PORT:-24318}"
export AGENTOBS_JAEGER_QUERY_HTTP_PORT="${AGENTOBS_JAEGER_QUERY_HTTP_PORT:-16686}"
export AGENTOBS_JAEGER_QUERY_GRPC_PORT="${AGENTOBS_JAEGER_QUERY_GRPC_PORT:-16685}"
export AGENTOBS_JAEGER_HEALTH_PORT="${AGENTOBS_JAEGER_HEALTH_PORT:-23133}"
export AGENTOBS_JAEGER_HEALTH_GRPC_PORT="${AGENTOBS_JAEGER_HEALTH_GRPC_PORT:-23132}"
export AGENTOBS_JAEGER_TELEMETRY_PORT="${AGENTOBS_JAEGER_TELEMETRY_PORT:-28888}"
export AGENTOBS_PROMETHEUS_PORT="${AGENTOBS_PROMETHEUS_PORT:-19090}"
export AGENTOBS_SPANMETRICS_FLUSH_INTERVAL="${AGENTOBS_SPANMETRICS_FLUSH_INTERVAL:-1s}"
export AGENTOBS_PROMETHEUS_SCRAPE_INTERVAL="${AGENTOBS_PROMETHEUS_SCRAPE_INTERVAL:-1s}"
export AGENTOBS_REDACTION_SUMMARY="${AGENTOBS_REDACTION_SUMMARY:-debug}"
export AGENTOBS_COLLECTOR_MEMORY_LIMIT_MIB="${AGENTOBS_COLLECTOR_MEMORY_LIMIT_MIB:-512}"
export AGENTOBS_COLLECTOR_LOG_LEVEL="${AGENTOBS_COLLECTOR_LOG_LEVEL:-info}"

# clients connect to 127.0.0.1 when the listeners bind every interface
if [[ "$AGENTOBS_STACK_HOST" == "0.0.0.0" ]]; then CLIENT_HOST=127.0.0.1; else CLIENT_HOST="$AGENTOBS_STACK_HOST"; fi
export AGENTOBS_JAEGER_OTLP_GRPC_ENDPOINT="$CLIENT_HOST:$AGENTOBS_JAEGER_OTLP_GRPC_PORT"
export AGENTOBS_PROMETHEUS_URL="http://$CLIENT_HOST:$AGENTOBS_PROMETHEUS_PORT"
export AGENTOBS_COLLECTOR_ARCHIVE="${AGENTOBS_COLLECTOR_ARCHIVE:-$RUN/archive/traces.jsonl}"
export AGENTOBS_JAEGER_UI_CONFIG="${AGENTOBS_JAEGER_UI_CONFIG:-$REPO/jaeger/ui-config.json}"
export AGENTOBS_JAEGER_BADGER_DIR="${AGENTOBS_JAEGER_BADGER_DIR:-$RUN/jaeger-badger}"
export AGENTOBS_JAEGER_SPAN_TTL="${AGENTOBS_JAEGER_SPAN_TTL:-72h}"
PROMETHEUS_TARGET_HOST="${AGENTOBS_PROMETHEUS_TARGET_HOST:-$CLIENT_HOST}"
PROMETHEUS_RULES="${AGENTOBS_PROMETHEUS_RULES:-$RUN/prometheus/rules}"

MANIFEST="$REPO/collector/builder-config.yaml"
COLLECTOR_CONFIG="$REPO/collector/config.yaml"
JAEGER_CONFIG="$REPO/jaeger/config.yaml"
PROMETHEUS_TEMPLATE="$REPO/prometheus/prometheus.yml"
JAEGER_BUILD_MODULE="$REPO/stack/jaeger-build"
SERVICES=(jaeger collector prometheus)   # start order; `down` stops in reverse

log() { printf 'stack.sh: %s\n' "$*" >&2; }
die() { printf 'stack.sh: error: %s\n' "$*" >&2; exit 1; }
# die with the last lines of a log file under the one-line error
die_log() {
  local msg="$1" file="$2"
  printf 'stack.sh: error: %s (log: %s)\n' "$msg" "$file" >&2
  if [[ -s "$file" ]]; then tail -n 15 "$file" | sed 's/^/  | /' >&2; fi
  exit 1
}

# ------------------------------------------------------------------------------------------------------------------
# build

collector_dir() {
  local h
  # keyed by the release and by the manifest without its comments: a changed component list rebuilds
  h="$(grep -vE '^\s*(#|$)' "$MANIFEST" | sed 's/\s#.*$//' | sha256sum | cut -c1-12)"
  printf '%s/collector-%s-%s' "$CACHE" "$OTELCOL_VERSION" "$h"
}
collector_bin() { printf '%s/agentobs-otelcol' "$(collector_dir)"; }
jaeger_bin() { printf '%s/jaeger-%s/jaeger' "$CACHE" "$JAEGER_VERSION"; }
prometheus_bin() { command -v prometheus 2>/dev/null || echo /usr/bin/prometheus; }

need_go() { command -v go >/dev/null 2>&1 || die "go is not on PATH (the builds need the Go toolchain)"; }

check_manifest_versions() {
  local bad
  bad="$(grep -E '^\s*- gomod:' "$MANIFEST" | grep -vE " v(${OTELCOL_VERSION//./\\.}|${OTELCOL_STABLE_VERSION//./\\.})\s*$" || true)"
  [[ -z "$bad" ]] || die "collector/builder-config.yaml has modules off the pinned release v$OTELCOL_VERSION/v$OTELCOL_STABLE_VERSION: $(echo "$bad" | tr -s ' \n' ' ')"
}

build_collector() {
  local dir bin blog t0
  dir="$(collector_dir)"; bin="$dir/agentobs-otelcol"
  if [[ -x "$bin" ]]; then log "collector $OTELCOL_VERSION: cached ($bin)"; return 0; fi
  need_go; check_manifest_versions
  mkdir -p "$dir" "$CACHE/logs"
  blog="$CACHE/logs/build-collector-$OTELCOL_VERSION.log"
  log "collector $OTELCOL_VERSION: building with the collector builder (OCB), log $blog"
  t0=$SECONDS
  if ! (cd "$dir" && go run "go.opentelemetry.io/collector/cmd/builder@v$OTELCOL_VERSION" \
          --config "$MANIFEST" --output-path "$dir/src") >"$blog" 2>&1; then
    die_log "collector build failed (OCB v$OTELCOL_VERSION, collector/builder-config.yaml)" "$blog"
  fi
  [[ -x "$dir/src/agentobs-otelcol" ]] || die_log "collector build produced no binary" "$blog"
  if ! "$dir/src/agentobs-otelcol" validate --config "$COLLECTOR_CONFIG" >>"$blog" 2>&1; then
    die_log "the built collector rejects collector/config.yaml" "$blog"
  fi
  mv -f "$dir/src/agentobs-otelcol" "$bin"
  log "collector $OTELCOL_VERSION: built in $((SECONDS - t0))s -> $bin"
}

build_jaeger() {
  local bin dir blog t0 have
  bin="$(jaeger_bin)"; dir="$(dirname "$bin")"
  if [[ -x "$bin" ]]; then log "jaeger $JAEGER_VERSION: cached ($bin)"; return 0; fi
  need_go
  mkdir -p "$dir" "$CACHE/logs"
  blog="$CACHE/logs/build-jaeger-$JAEGER_VERSION.log"
  : >"$blog"
  t0=$SECONDS
  have="$(awk '$1 == "github.com/jaegertracing/jaeger" { print $2 }' "$JAEGER_BUILD_MODULE/go.mod")"
  if [[ "$have" != "$JAEGER_MODULE_VERSION" ]]; then
    log "jaeger: stack/jaeger-build/go.mod has $have, pinned is $JAEGER_MODULE_VERSION: running go get -tool (commit go.mod and go.sum)"
    (cd "$JAEGER_BUILD_MODULE" && go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$JAEGER_MODULE_VERSION") >>"$blog" 2>&1 \
      || die_log "go get -tool github.com/jaegertracing/jaeger/cmd/jaeger@$JAEGER_MODULE_VERSION failed" "$blog"
  fi
  log "jaeger $JAEGER_VERSION: building github.com/jaegertracing/jaeger/cmd/jaeger@$JAEGER_MODULE_VERSION, log $blog"
  if ! (cd "$JAEGER_BUILD_MODULE" && go build -mod=readonly -trimpath \
          -ldflags "-s -w -X github.com/jaegertracing/jaeger/internal/version.latestVersion=v$JAEGER_VERSION" \
          -o "$bin.tmp" github.com/jaegertracing/jaeger/cmd/jaeger) >>"$blog" 2>&1; then
    rm -f "$bin.tmp"
    die_log "jaeger build failed (github.com/jaegertracing/jaeger $JAEGER_MODULE_VERSION = v$JAEGER_VERSION)" "$blog"
  fi
  if ! "$bin.tmp" validate --config "$JAEGER_CONFIG" >>"$blog" 2>&1; then
    rm -f "$bin.tmp"
    die_log "the built jaeger rejects jaeger/config.yaml" "$blog"
  fi
  mv -f "$bin.tmp" "$bin"
  log "jaeger $JAEGER_VERSION: built in $((SECONDS - t0))s -> $bin"
}

ensure_prometheus() {
  if command -v prometheus >/dev/null 2>&1; then return 0; fi
  command -v apt-get >/dev/null 2>&1 || die "prometheus is not installed and there is no apt-get to install it"
  log "prometheus: not installed, installing Debian package $PROMETHEUS_DEB_PACKAGE"
  mkdir -p "$CACHE/logs"
  local alog="$CACHE/logs/apt-prometheus.log" sudo="" policy=/usr/sbin/policy-rc.d made_policy=0
  [[ "$(id -u)" == 0 ]] || sudo="sudo"
  # keep the package's init script from starting a system-wide prometheus on :9090
  if [[ ! -e "$policy" ]]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod 755 "$policy" && made_policy=1
  fi
  local ok=0
  if $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$PROMETHEUS_DEB_PACKAGE" >"$alog" 2>&1; then
    ok=1
  elif $sudo apt-get update >>"$alog" 2>&1 &&
       $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$PROMETHEUS_DEB_PACKAGE" >>"$alog" 2>&1; then
    ok=1
  fi
  if [[ $made_policy == 1 ]]; then $sudo rm -f "$policy"; fi
  [[ $ok == 1 ]] || die_log "apt-get install $PROMETHEUS_DEB_PACKAGE failed" "$alog"
  command -v prometheus >/dev/null 2>&1 || die_log "prometheus still not on PATH after apt-get install" "$alog"
  log "prometheus: installed $(prometheus --version 2>&1 | head -n 1)"
}

cmd_build() {
  build_collector
  build_jaeger
}

# ------------------------------------------------------------------------------------------------------------------
# processes

pidfile() { printf '%s/pids/%s.pid' "$RUN" "$1"; }
logfile() { printf '%s/logs/%s.log' "$RUN" "$1"; }

svc_bin() {
  case "$1" in
    collector) collector_bin ;;
    jaeger) jaeger_bin ;;
    prometheus) prometheus_bin ;;
  esac
}

# A service is ours when this run folder started it: its pid file holds "PID START", START being the process's
# start time (field 22 of /proc/PID/stat, clock ticks since boot), so a pid the system gave to another process
# since is never taken for ours. Never a process found by its binary's path: another checkout's stack runs the
# same cached binaries.

# the start time of process $1, or nothing when there is no such process (or only its zombie is left)
proc_start() {
  local stat fields
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 0
  read -ra fields <<<"${stat##*) }"     # the fields after the command name (which may hold spaces and parens)
  [[ "${fields[0]:-}" != Z ]] || return 0
  echo "${fields[19]:-}"                # field 22: the 20th after the name
}

# is process $1 still the one that started at $2?
same_process() {
  [[ "$1" =~ ^[0-9]+$ && -n "$2" && "$(proc_start "$1")" == "$2" ]]
}

# "port label" lines: every port the service listens on
svc_ports() {
  case "$1" in
    collector)
      echo "$AGENTOBS_COLLECTOR_OTLP_GRPC_PORT AGENTOBS_COLLECTOR_OTLP_GRPC_PORT"
      echo "$AGENTOBS_COLLECTOR_OTLP_HTTP_PORT AGENTOBS_COLLECTOR_OTLP_HTTP_PORT"
      echo "$AGENTOBS_COLLECTOR_HEALTH_PORT AGENTOBS_COLLECTOR_HEALTH_PORT"
      echo "$AGENTOBS_COLLECTOR_TELEMETRY_PORT AGENTOBS_COLLECTOR_TELEMETRY_PORT"
      echo "$AGENTOBS_COLLECTOR_PROMETHEUS_PORT AGENTOBS_COLLECTOR_PROMETHEUS_PORT" ;;
    jaeger)
      echo "$AGENTOBS_JAEGER_OTLP_GRPC_PORT AGENTOBS_JAEGER_OTLP_GRPC_PORT"
      echo "$AGENTOBS_JAEGER_OTLP_HTTP_PORT AGENTOBS_JAEGER_OTLP_HTTP_PORT"
      echo "$AGENTOBS_JAEGER_QUERY_HTTP_PORT AGENTOBS_JAEGER_QUERY_HTTP_PORT"
      echo "$AGENTOBS_JAEGER_QUERY_GRPC_PORT AGENTOBS_JAEGER_QUERY_GRPC_PORT"
      echo "$AGENTOBS_JAEGER_HEALTH_PORT AGENTOBS_JAEGER_HEALTH_PORT"
      echo "$AGENTOBS_JAEGER_HEALTH_GRPC_PORT AGENTOBS_JAEGER_HEALTH_GRPC_PORT"
      echo "$AGENTOBS_JAEGER_TELEMETRY_PORT AGENTOBS_JAEGER_TELEMETRY_PORT" ;;
    prometheus)
      echo "$AGENTOBS_PROMETHEUS_PORT AGENTOBS_PROMETHEUS_PORT" ;;
  esac
}

svc_health_url() {
  case "$1" in
    collector) echo "http://$CLIENT_HOST:$AGENTOBS_COLLECTOR_HEALTH_PORT/" ;;
    jaeger) echo "http://$CLIENT_HOST:$AGENTOBS_JAEGER_HEALTH_PORT/status" ;;
    prometheus) echo "http://$CLIENT_HOST:$AGENTOBS_PROMETHEUS_PORT/-/ready" ;;
  esac
}

# "PID START" of our running instance of a service, or nothing (a stale pid file is removed)
svc_proc() {
  local f pid start
  f="$(pidfile "$1")"
  [[ -f "$f" ]] || return 0
  read -r pid start _ <"$f" 2>/dev/null || true
  # a pid file of an older stack.sh (no start time): its process is ours if it runs in this run folder
  if [[ -z "${start:-}" && "${pid:-}" =~ ^[0-9]+$ ]] &&
     [[ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" == "$(cd "$RUN" 2>/dev/null && pwd -P)" ]]; then
    start="$(proc_start "$pid")"
  fi
  if same_process "${pid:-}" "${start:-}"; then echo "$pid $start"; return 0; fi
  rm -f "$f"
}

# the pid of our running instance of a service, or nothing
svc_pid() {
  local proc
  proc="$(svc_proc "$1")"
  echo "${proc%% *}"
}

healthy() { curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; }

# "pid name" of whatever listens on a TCP port, or nothing
port_holder() {
  local line
  line="$(ss -Hltnp "sport = :$1" 2>/dev/null | head -n 1)"
  [[ -n "$line" ]] || return 0
  if [[ "$line" =~ \(\"([^\"]+)\",pid=([0-9]+) ]]; then
    echo "${BASH_REMATCH[2]} ${BASH_REMATCH[1]}"
  else
    echo "? ?"
  fi
}

check_ports_free() {
  local port label holder
  while read -r port label; do
    holder="$(port_holder "$port")"
    if [[ -n "$holder" ]]; then
      die "port $port ($1, $label) is already in use by pid ${holder% *} (${holder#* }); stop it or set $label to a free port"
    fi
  done < <(svc_ports "$1")
}

# the Prometheus config: the template with every @TOKEN@ filled (stdout); $1: the rules folder
prometheus_config_text() {
  # comment lines keep their @TOKEN@ names (they document the tokens)
  sed -e "/^[[:space:]]*#/!s|@SCRAPE_INTERVAL@|$AGENTOBS_PROMETHEUS_SCRAPE_INTERVAL|g" \
      -e "/^[[:space:]]*#/!s|@COLLECTOR_PROMETHEUS_TARGET@|$PROMETHEUS_TARGET_HOST:$AGENTOBS_COLLECTOR_PROMETHEUS_PORT|g" \
      -e "/^[[:space:]]*#/!s|@COLLECTOR_TELEMETRY_TARGET@|$PROMETHEUS_TARGET_HOST:$AGENTOBS_COLLECTOR_TELEMETRY_PORT|g" \
      -e "/^[[:space:]]*#/!s|@RULES_DIR@|$1|g" \
      "$PROMETHEUS_TEMPLATE"
}

# a line that changes whenever a rules file does (so that `up` reloads Prometheus for new rules)
rules_digest() {
  local digest
  digest="$(find "$PROMETHEUS_RULES" -maxdepth 1 -name '*.yml' -type f -print0 2>/dev/null | sort -z |
            xargs -0r sha256sum | sha256sum | cut -c1-16)"
  printf '# rules in %s: %s\n' "$PROMETHEUS_RULES" "$digest"
}

check_prometheus_tokens() {
  local bad
  bad="$(grep -v '^\s*#' "$1" | grep -o '@[A-Z_]*@' | head -n 1 || true)"
  [[ -z "$bad" ]] || die "prometheus/prometheus.yml has a token stack.sh does not fill: $bad"
}

render_prometheus_config() {
  local out="$RUN/prometheus/prometheus.yml"
  mkdir -p "$RUN/prometheus/data" "$PROMETHEUS_RULES"
  { prometheus_config_text "$PROMETHEUS_RULES"; rules_digest; } >"$out.new"
  check_prometheus_tokens "$out.new"
  if command -v promtool >/dev/null 2>&1 && ! promtool check config "$out.new" >/dev/null 2>"$RUN/logs/promtool.log"; then
    die_log "generated Prometheus config is invalid" "$RUN/logs/promtool.log"
  fi
  if [[ -f "$out" ]] && cmp -s "$out" "$out.new"; then rm -f "$out.new"; return 1; fi
  mv -f "$out.new" "$out"
  return 0
}

# `prometheus-config`: the filled template on stdout, under a header saying how it was made
cmd_prometheus_config() {
  local text
  text="$(prometheus_config_text "${AGENTOBS_PROMETHEUS_RULES:-/etc/prometheus/rules}")"
  check_prometheus_tokens <(printf '%s\n' "$text")
  printf '# GENERATED from prometheus/prometheus.yml by scripts/stack.sh prometheus-config with\n'
  printf '#   AGENTOBS_PROMETHEUS_TARGET_HOST=%s AGENTOBS_PROMETHEUS_SCRAPE_INTERVAL=%s\n' \
    "$PROMETHEUS_TARGET_HOST" "$AGENTOBS_PROMETHEUS_SCRAPE_INTERVAL"
  printf '#   AGENTOBS_COLLECTOR_PROMETHEUS_PORT=%s AGENTOBS_COLLECTOR_TELEMETRY_PORT=%s\n' \
    "$AGENTOBS_COLLECTOR_PROMETHEUS_PORT" "$AGENTOBS_COLLECTOR_TELEMETRY_PORT"
  printf '#   AGENTOBS_PROMETHEUS_RULES=%s\n' "${AGENTOBS_PROMETHEUS_RULES:-/etc/prometheus/rules}"
  printf '# Do not edit: edit the template and regenerate (tests/scenarios/project/test_dashboards.py checks the two agree).\n'
  printf '%s\n' "$text"
}

# `ports`: every port of every service, "port SETTING" per line
cmd_ports() {
  local name
  for name in "${SERVICES[@]}"; do svc_ports "$name"; done
}

svc_command() {
  case "$1" in
    collector) printf '%s\0' "$(collector_bin)" "--config=$COLLECTOR_CONFIG" ;;
    jaeger) printf '%s\0' "$(jaeger_bin)" "--config=$JAEGER_CONFIG" ;;
    prometheus)
      printf '%s\0' "$(prometheus_bin)" \
        "--config.file=$RUN/prometheus/prometheus.yml" \
        "--storage.tsdb.path=$RUN/prometheus/data" \
        "--storage.tsdb.retention.time=2d" \
        "--web.listen-address=$AGENTOBS_STACK_HOST:$AGENTOBS_PROMETHEUS_PORT" ;;
  esac
}

STARTED=()
start_service() {
  local name="$1" pid url cmd=() unset_otel=() v deadline
  url="$(svc_health_url "$name")"
  pid="$(svc_pid "$name")"
  if [[ -n "$pid" ]]; then
    if healthy "$url"; then log "$name: already running and healthy (pid $pid)"; return 0; fi
    log "$name: running (pid $pid) but not healthy yet, waiting"
  else
    check_ports_free "$name"
    # a fresh Prometheus starts with an empty TSDB: series of an earlier run would otherwise answer instant
    # queries for up to 5 minutes (Jaeger's Badger folder and the archive are kept)
    if [[ "$name" == prometheus && -z "${AGENTOBS_PROMETHEUS_KEEP_DATA:-}" ]]; then
      rm -rf -- "$RUN/prometheus/data"; mkdir -p "$RUN/prometheus/data"
    fi
    mapfile -d '' cmd < <(svc_command "$name")
    [[ -x "${cmd[0]}" ]] || die "$name binary missing: ${cmd[0]}"
    # the services must not export their own telemetry through inherited OTEL_* settings
    for v in $(compgen -e | grep '^OTEL_' || true); do unset_otel+=(-u "$v"); done
    : >"$(logfile "$name")"
    # setsid: own session, no SIGHUP from the caller; 9>&-: the service must not inherit the lock
    (cd "$RUN" && exec env "${unset_otel[@]}" setsid "${cmd[@]}") >>"$(logfile "$name")" 2>&1 </dev/null 9>&- &
    pid=$!
    echo "$pid $(proc_start "$pid")" >"$(pidfile "$name")"
    STARTED+=("$name")
    log "$name: started (pid $pid), log $(logfile "$name")"
  fi
  deadline=$((SECONDS + TIMEOUT))
  until healthy "$url"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$(pidfile "$name")"
      die_log "$name exited during start-up" "$(logfile "$name")"
    fi
    if ((SECONDS >= deadline)); then die_log "$name not healthy after ${TIMEOUT}s ($url)" "$(logfile "$name")"; fi
    sleep 0.3
  done
  log "$name: healthy ($url)"
}

# stops process $2 (started at $3) of service $1; a signal goes only to the process that started at $3
stop_pid() {
  local name="$1" pid="$2" start="$3" i
  same_process "$pid" "$start" || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do
    same_process "$pid" "$start" || { log "$name: stopped (pid $pid)"; return 0; }
    sleep 0.1
  done
  log "$name: did not stop in 10s, killing pid $pid"
  same_process "$pid" "$start" && kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do same_process "$pid" "$start" || return 0; sleep 0.1; done
}

# on a failed `up`, stop what this invocation started
cleanup_on_failure() {
  local rc=$? name proc
  if [[ $rc != 0 && ${#STARTED[@]} -gt 0 && -z "${AGENTOBS_STACK_KEEP_ON_FAILURE:-}" ]]; then
    log "up failed: stopping what it started (${STARTED[*]}); set AGENTOBS_STACK_KEEP_ON_FAILURE=1 to keep it"
    for name in "${STARTED[@]}"; do
      proc="$(svc_proc "$name")"
      [[ -z "$proc" ]] || stop_pid "$name" "${proc% *}" "${proc#* }"
      rm -f "$(pidfile "$name")"
    done
  fi
}

lock_run() {
  mkdir -p "$RUN/pids" "$RUN/logs"
  exec 9>"$RUN/.lock"
  flock -w 600 9 || die "another stack.sh holds $RUN/.lock"
}

# The archive holds what the agents did: readable by its owner only. The collector's file exporter creates files
# 0644 (hard-coded in contrib v0.161.0) but appends to an existing file without touching its mode, so the file is
# created 0600 here, before the collector starts, and its folder 0700 when stack.sh creates it (files the exporter
# rotates to at 100 MiB are 0644, inside that folder). A folder the user chose and that exists is left as it is.
private_archive() {
  local dir f
  dir="$(dirname "$AGENTOBS_COLLECTOR_ARCHIVE")"
  [[ -d "$dir" ]] || (umask 077 && mkdir -p "$dir")
  (umask 077 && touch "$AGENTOBS_COLLECTOR_ARCHIVE")
  chmod 600 "$AGENTOBS_COLLECTOR_ARCHIVE"
}

# Jaeger's Badger folder holds the traces too: private like the archive (Badger creates keys/ and values/ 0700)
private_badger_dir() {
  [[ -d "$AGENTOBS_JAEGER_BADGER_DIR" ]] || (umask 077 && mkdir -p "$AGENTOBS_JAEGER_BADGER_DIR")
}

cmd_up() {
  command -v curl >/dev/null 2>&1 || die "curl is needed for the health checks"
  command -v ss >/dev/null 2>&1 || die "ss (iproute2) is needed for the port checks"
  cmd_build
  ensure_prometheus
  lock_run
  private_archive
  private_badger_dir
  trap cleanup_on_failure EXIT
  local changed=0 pid name
  # fail fast, before anything starts, when a port of a service that is not running yet is taken
  for name in "${SERVICES[@]}"; do
    [[ -n "$(svc_pid "$name")" ]] || check_ports_free "$name"
  done
  render_prometheus_config && changed=1
  start_service jaeger
  start_service collector
  pid="$(svc_pid prometheus)"
  if [[ -n "$pid" && $changed == 1 ]]; then
    log "prometheus: config changed, reloading (SIGHUP pid $pid)"
    kill -HUP "$pid"
  fi
  start_service prometheus
  trap - EXIT
  write_env
  log "stack is up; exports in $RUN/stack.env"
  log "send an agent's traces here: export OTEL_EXPORTER_OTLP_ENDPOINT=http://$CLIENT_HOST:$AGENTOBS_COLLECTOR_OTLP_HTTP_PORT  (OTLP/HTTP; gRPC: http://$CLIENT_HOST:$AGENTOBS_COLLECTOR_OTLP_GRPC_PORT with OTEL_EXPORTER_OTLP_PROTOCOL=grpc)"
  log "open Jaeger on http://$CLIENT_HOST:$AGENTOBS_JAEGER_QUERY_HTTP_PORT; reports link to it with export AGENTOBS_JAEGER_URL=http://$CLIENT_HOST:$AGENTOBS_JAEGER_QUERY_HTTP_PORT"
  print_env
}

cmd_down() {
  mkdir -p "$RUN/pids" "$RUN/logs"
  exec 9>"$RUN/.lock"
  flock -w 120 9 || die "another stack.sh holds $RUN/.lock"
  local i name proc port label holder
  for ((i = ${#SERVICES[@]} - 1; i >= 0; i--)); do
    name="${SERVICES[$i]}"
    proc="$(svc_proc "$name")"
    if [[ -n "$proc" ]]; then stop_pid "$name" "${proc% *}" "${proc#* }"; else log "$name: not running"; fi
    rm -f "$(pidfile "$name")"
  done
  # whatever still listens on our ports was not started from this run folder (another checkout's stack, or ours
  # whose run folder was deleted): named, never stopped
  for name in "${SERVICES[@]}"; do
    while read -r port label; do
      holder="$(port_holder "$port")"
      [[ -n "$holder" ]] || continue
      log "warning: port $port ($label) is held by pid ${holder% *} (${holder#* }), which $RUN did not start: left running (stop it from the run folder that started it, or by its pid)"
    done < <(svc_ports "$name")
  done
  log "stack is down"
  return 0
}

cmd_status() {
  local name pid url ok=0 state
  for name in "${SERVICES[@]}"; do
    pid="$(svc_pid "$name")"; url="$(svc_health_url "$name")"
    if [[ -z "$pid" ]]; then state="stopped"; ok=1
    elif healthy "$url"; then state="healthy (pid $pid)"
    else state="running, NOT healthy (pid $pid)"; ok=1
    fi
    printf '%-10s %-34s %s\n' "$name" "$state" "$url"
  done
  return $ok
}

env_lines() {
  cat <<EOF
export AGENTOBS_STACK_RUN='$RUN'
export AGENTOBS_STACK_HOST='$AGENTOBS_STACK_HOST'
export AGENTOBS_COLLECTOR_OTLP_GRPC='$CLIENT_HOST:$AGENTOBS_COLLECTOR_OTLP_GRPC_PORT'
export AGENTOBS_COLLECTOR_OTLP_GRPC_URL='http://$CLIENT_HOST:$AGENTOBS_COLLECTOR_OTLP_GRPC_PORT'
export AGENTOBS_COLLECTOR_OTLP_HTTP='http://$CLIENT_HOST:$AGENTOBS_COLLECTOR_OTLP_HTTP_PORT'
export AGENTOBS_COLLECTOR_HEALTH_URL='http://$CLIENT_HOST:$AGENTOBS_COLLECTOR_HEALTH_PORT/'
export AGENTOBS_COLLECTOR_TELEMETRY_URL='http://$CLIENT_HOST:$AGENTOBS_COLLECTOR_TELEMETRY_PORT/metrics'
export AGENTOBS_COLLECTOR_PROMETHEUS_URL='http://$CLIENT_HOST:$AGENTOBS_COLLECTOR_PROMETHEUS_PORT/metrics'
export AGENTOBS_COLLECTOR_ARCHIVE='$AGENTOBS_COLLECTOR_ARCHIVE'
export AGENTOBS_JAEGER_BADGER_DIR='$AGENTOBS_JAEGER_BADGER_DIR'
export JAEGER_URL='http://$CLIENT_HOST:$AGENTOBS_JAEGER_QUERY_HTTP_PORT'
export JAEGER_GRPC='$CLIENT_HOST:$AGENTOBS_JAEGER_QUERY_GRPC_PORT'
export JAEGER_HEALTH_URL='http://$CLIENT_HOST:$AGENTOBS_JAEGER_HEALTH_PORT/status'
export JAEGER_OTLP_GRPC='$CLIENT_HOST:$AGENTOBS_JAEGER_OTLP_GRPC_PORT'
export PROMETHEUS_URL='$AGENTOBS_PROMETHEUS_URL'
export AGENTOBS_PROMETHEUS_RULES='$PROMETHEUS_RULES'
EOF
}
write_env() { env_lines >"$RUN/stack.env"; }
print_env() { env_lines; }

cmd_clean() {
  cmd_down
  if [[ -d "$RUN" ]]; then rm -rf -- "$RUN"; log "removed $RUN"; fi
}

usage() {
  sed -n '2,/^# Progress goes to stderr/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

case "${1:-}" in
  build) cmd_build ;;
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  env) print_env ;;
  restart) cmd_down && cmd_up ;;
  clean) cmd_clean ;;
  ports) cmd_ports ;;
  bin)
    case "${2:-}" in
      collector|jaeger|prometheus) svc_bin "$2"; echo ;;
      *) die "bin: name a service: collector, jaeger or prometheus" ;;
    esac ;;
  prometheus-config) cmd_prometheus_config ;;
  *) usage ;;
esac
