"""``agentobs watch`` polling the real Jaeger, and the caps' alerting rules in the real Prometheus (issue 46).

- Jaeger (the shared stack): live kernel runs exported over OTLP through the collector into Jaeger, some of them
  runaways; ``agentobs watch "JAEGER?service=S"`` reports every runaway while it still runs and no normal run.
- Prometheus (a private stack: its Prometheus starts with the rules in its rules folder): the rules of ``agentobs caps
  --emit prometheus-rules`` for a simulated population pass ``promtool`` (``scripts/stack.sh up`` checks the
  configuration with its rule files), an alert fires for a population of runaways and none for a normal population
  whose metrics Prometheus holds.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cli_process import CLI, child_env
from stackutil import ROOT, PrivateStack, prom_query, prom_range, unique_service, wait_for

CHILD = [sys.executable, str(ROOT / "tests" / "watch_child.py")]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("watch-stack")
    traces = d / "base.jsonl"
    subprocess.run([*CLI, "simulate", "--runs", "600", "--seed", "3", "--traces-out", str(traces), "--manifest",
                    str(d / "m.json")], check=True, capture_output=True, env=child_env())
    caps = d / "caps.py"
    caps.write_text(subprocess.run([*CLI, "caps", str(traces), "--emit", "budget"], capture_output=True, text=True,
                                   env=child_env(), check=True).stdout)
    return traces, caps


def _population(otlp: str, service: str, *, normal: int, runaway: int, delay: float, stagger: float
                ) -> list[dict]:
    done = subprocess.run([*CHILD, "--otlp", otlp, "--service", service, "--normal", str(normal), "--runaway",
                           str(runaway), "--delay", str(delay), "--stagger", str(stagger)],
                          capture_output=True, text=True, timeout=600,
                          env=child_env(OTEL_BSP_SCHEDULE_DELAY="200", OTEL_METRIC_EXPORT_INTERVAL="1000"))
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(x) for x in done.stdout.splitlines()]


# -- watch polling Jaeger -----------------------------------------------------------------------------------------

@pytest.mark.stack
def test_watch_polls_jaeger_and_reports_runaways_while_they_run(stack, baseline, service_name):
    _, caps = baseline
    proc = subprocess.Popen([*CLI, "watch", f"{stack.jaeger}?service={service_name}", "--caps", str(caps), "--format",
                             "json", "--interval", "1s", "--lookback", "5m"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        # 0.4 s a step: a runaway runs on for about 10 s after it crosses its caps, more than the way from an ended
        # span through the collector and Jaeger to the watch's next poll takes on a loaded machine
        ran = _population(stack.otlp_http, service_name, normal=6, runaway=3, delay=0.4, stagger=0.3)
        runaway = {r["trace_id"]: r for r in ran if r["kind"] == "runaway"}
        normal = {r["trace_id"] for r in ran if r["kind"] == "normal"}

        def all_seen():
            got = {json.loads(x)["trace_id"] for x in list(lines) if '"cap_crossed"' in x}
            return set(runaway) <= got
        wait_for(all_seen, "every runaway reported from Jaeger", timeout=60, interval=1)
    finally:
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=30)
        reader.join(timeout=10)
    assert rc == 0, proc.stderr.read()
    events = [d for x in lines if (d := json.loads(x))["event"] == "cap_crossed"]
    assert not {e["trace_id"] for e in events} & normal
    for trace, r in runaway.items():
        first = min((e for e in events if e["trace_id"] == trace), key=lambda e: e["reported_at"])
        assert first["running"], first
        reported = _unix(first["reported_at"])
        assert reported < r["ended_at"], (first, r)


def _unix(iso: str) -> float:
    from datetime import datetime
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


# -- the rules in the real Prometheus ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ruled(stack, baseline, tmp_path_factory):
    """A private stack whose Prometheus starts with the caps' rules (2 minute window, firing at once)."""
    traces, _ = baseline
    d = tmp_path_factory.mktemp("rules")
    rules_dir = d / "rules"
    rules_dir.mkdir()
    text = subprocess.run([*CLI, "caps", str(traces), "--emit", "prometheus-rules", "--alert-window", "2m",
                           "--alert-for", "0s"], capture_output=True, text=True, env=child_env(), check=True).stdout
    (rules_dir / "agentobs-caps.yml").write_text(text)
    ps = PrivateStack(d / "run", extra_env={"AGENTOBS_PROMETHEUS_RULES": str(rules_dir)})
    try:
        ps.up()
        yield ps
    finally:
        ps.down()


@pytest.mark.stack
def test_the_caps_rules_fire_for_runaways_and_stay_silent_for_normal_runs(ruled):
    prom = ruled.exports["PROMETHEUS_URL"]
    loaded = wait_for(lambda: [r for g in _rules(prom) for r in g["rules"]], "the rules loaded", timeout=30)
    assert {r["name"] for r in loaded} >= {"AgentobsRunsPastCap", "AgentobsRunFarPastCap", "AgentobsRunsStoppedAtLimit"}
    assert all(r["health"] != "err" for r in loaded), [r.get("lastError") for r in loaded]
    normal, runaway = unique_service("watch-normal"), unique_service("watch-runaway")
    t0 = time.time()
    _population(ruled.otlp_http, normal, normal=40, runaway=0, delay=0.02, stagger=0.12)
    # Prometheus holds the normal population's metrics: the rules had data, and stayed below their thresholds. (The
    # counter's value, not its increase: a population whose counts all reach the collector before the first scrape
    # that sees them has an increase of 0 in Prometheus, and the wait would be for nothing.)
    counted = f'sum(gen_ai_invoke_agent_inference_calls_count{{exported_job="{normal}"}})'
    try:
        wait_for(lambda: prom_query(prom, f"{counted} >= 30"), "the normal population's metrics in Prometheus",
                 timeout=60)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the counter now: {prom_query(prom, counted)!r}") from None
    _population(ruled.otlp_http, runaway, normal=0, runaway=20, delay=0.012, stagger=0.25)

    def firing():
        alerts = prom_query(prom, f'ALERTS{{alertstate="firing", exported_job="{runaway}"}} or '
                                  f'ALERTS{{alertstate="firing", service_name="{runaway}"}}')
        names = {a["metric"]["alertname"] for a in alerts}
        return names if {"AgentobsRunsPastCap", "AgentobsRunFarPastCap"} <= names else None
    names = wait_for(firing, "the caps' alerts firing for the runaway population", timeout=90, interval=1)
    assert "AgentobsRunsStoppedAtLimit" in names or _stopped_fires(prom, runaway)
    for label in ("exported_job", "service_name"):
        quiet = prom_range(prom, f'ALERTS{{{label}="{normal}"}}', t0, time.time(), 1)
        assert quiet == [], quiet


def _rules(prom: str) -> list[dict]:
    from stackutil import get_json
    status, body = get_json(f"{prom}/api/v1/rules")
    assert status == 200, body
    return body["data"]["groups"]


def _stopped_fires(prom: str, service: str) -> bool:
    return bool(wait_for(lambda: prom_query(prom, f'ALERTS{{alertname="AgentobsRunsStoppedAtLimit", '
                                                  f'service_name="{service}"}}'),
                         "the stop-reason share alert", timeout=30, interval=1))
