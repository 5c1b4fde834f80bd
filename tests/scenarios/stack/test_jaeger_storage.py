"""Jaeger's trace storage (issue 14): Badger on disk by default, an OpenSearch configuration checked by Jaeger itself.

- (stack, on a private instance of scripts/stack.sh) traces sent through the collector are still in Jaeger, trace by
  trace with the same span ids, after a graceful restart (`scripts/stack.sh restart`) and after a crash (SIGKILL,
  then `up`); the analysis reads them back from Jaeger with no data-quality note (Badger hands arrays back as JSON
  text, which the loader reads as the arrays); `clean` removes the Badger folder.
- (no server) jaeger/config.yaml and jaeger/config-opensearch.yaml pass `jaeger validate` of the Jaeger we build, a
  wrong key in the storage section does not, and the binary started with the OpenSearch configuration against a
  port where nothing listens stops on connecting to the cluster, not earlier; the two files differ only in the
  storage backend.
"""
from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from stackutil import (
    ROOT,
    STACK_SCRIPT,
    PrivateStack,
    SentIds,
    free_ports,
    get_json,
    healthy,
    unique_service,
    wait_jaeger_traces,
)

JAEGER_DIR = ROOT / "jaeger"
RUNS = 150


def _required() -> bool:
    return os.environ.get("AGENTOBS_REQUIRE_STACK", "") not in ("", "0")


def _load_yaml(path: Path) -> Any:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load(path.read_text())


@pytest.fixture(scope="module")
def jaeger_bin() -> Path:
    """The Jaeger binary scripts/stack.sh builds (not built here: `scripts/stack.sh build` does that)."""
    done = subprocess.run([str(STACK_SCRIPT), "bin", "jaeger"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.strip())
    if not os.access(path, os.X_OK):
        if _required():
            pytest.fail(f"the Jaeger binary is required (AGENTOBS_REQUIRE_STACK=1) but {path} is not built",
                        pytrace=False)
        pytest.skip(f"Jaeger is not built ({path}): run scripts/stack.sh build")
    return path


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTOBS_", "JAEGER_", "OTEL_"))}
    env.update(extra)
    return env


def _validate(binary: Path, config: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary), "validate", f"--config={config}"], env=_clean_env(**env),
                          capture_output=True, text=True, timeout=120)


# -- the configurations, checked by Jaeger itself (no server) -------------------------------------------------------

@pytest.mark.parametrize("name", ["config.yaml", "config-opensearch.yaml"])
def test_jaeger_validates_both_configurations(jaeger_bin, name):
    done = _validate(jaeger_bin, JAEGER_DIR / name)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("name, wrong, expect", [
    ("config.yaml", ("spans: ${env:AGENTOBS_JAEGER_SPAN_TTL:-72h}", "span: 72h"), "invalid keys: span"),
    ("config-opensearch.yaml", ("index_prefix:", "index_prefx:"), "invalid keys: index_prefx"),
])
def test_jaeger_validate_reaches_the_storage_section(jaeger_bin, tmp_path, name, wrong, expect):
    """The control: validation really decodes the storage backends (a misspelt key there is refused)."""
    text = (JAEGER_DIR / name).read_text()
    assert wrong[0] in text
    bad = tmp_path / name
    bad.write_text(text.replace(wrong[0], wrong[1], 1))
    done = _validate(jaeger_bin, bad)
    assert done.returncode != 0 and expect in done.stdout + done.stderr, done.stdout + done.stderr


def test_jaeger_validate_checks_the_values_of_the_settings(jaeger_bin):
    bad_ttl = _validate(jaeger_bin, JAEGER_DIR / "config.yaml", AGENTOBS_JAEGER_SPAN_TTL="three days")
    assert bad_ttl.returncode != 0 and "ttl.spans" in bad_ttl.stdout + bad_ttl.stderr
    bad_url = _validate(jaeger_bin, JAEGER_DIR / "config-opensearch.yaml", AGENTOBS_OPENSEARCH_URL="not-a-url")
    assert bad_url.returncode != 0 and "not-a-url does not validate as url" in bad_url.stdout + bad_url.stderr


def test_jaeger_with_the_opensearch_configuration_stops_only_on_connecting(jaeger_bin, tmp_path):
    """Started for real against a port where nothing listens: the configuration is parsed and validated, the
    OpenSearch backend is built and tries the cluster, and that is where Jaeger stops (no cluster is needed)."""
    ports = free_ports(8)
    names = ["AGENTOBS_JAEGER_OTLP_GRPC_PORT", "AGENTOBS_JAEGER_OTLP_HTTP_PORT", "AGENTOBS_JAEGER_QUERY_HTTP_PORT",
             "AGENTOBS_JAEGER_QUERY_GRPC_PORT", "AGENTOBS_JAEGER_HEALTH_PORT", "AGENTOBS_JAEGER_HEALTH_GRPC_PORT",
             "AGENTOBS_JAEGER_TELEMETRY_PORT"]
    env = _clean_env(**{n: str(p) for n, p in zip(names, ports[:-1], strict=True)},
                     AGENTOBS_OPENSEARCH_URL=f"http://127.0.0.1:{ports[-1]}",
                     AGENTOBS_JAEGER_UI_CONFIG=str(JAEGER_DIR / "ui-config.json"))
    try:
        done = subprocess.run([str(jaeger_bin), f"--config={JAEGER_DIR / 'config-opensearch.yaml'}"], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("Jaeger kept running without an OpenSearch cluster")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out[-2000:]
    assert "failed to initialize storage 'agentobs_opensearch'" in out, out[-2000:]
    assert f"127.0.0.1:{ports[-1]}" in out and "connection refused" in out, out[-2000:]
    assert "decoding failed" not in out and "invalid keys" not in out


def test_the_two_configurations_differ_only_in_the_storage_backend():
    badger = _load_yaml(JAEGER_DIR / "config.yaml")
    opensearch = _load_yaml(JAEGER_DIR / "config-opensearch.yaml")
    (b_name, b_backend), = badger["extensions"]["jaeger_storage"]["backends"].items()
    (o_name, o_backend), = opensearch["extensions"]["jaeger_storage"]["backends"].items()
    assert list(b_backend) == ["badger"] and list(o_backend) == ["opensearch"]
    for cfg, name in ((badger, b_name), (opensearch, o_name)):
        assert cfg["extensions"]["jaeger_query"]["storage"]["traces"] == name
        assert cfg["exporters"]["jaeger_storage_exporter"]["trace_storage"] == name

    def rest(cfg: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(cfg)
        del out["extensions"]["jaeger_storage"]["backends"]
        del out["extensions"]["jaeger_query"]["storage"]["traces"]
        del out["exporters"]["jaeger_storage_exporter"]["trace_storage"]
        return out
    assert rest(badger) == rest(opensearch)


def test_badger_keeps_its_data_in_a_configured_folder_with_a_retention():
    cfg = _load_yaml(JAEGER_DIR / "config.yaml")
    (backend,) = cfg["extensions"]["jaeger_storage"]["backends"].values()
    badger = backend["badger"]
    assert badger["ephemeral"] is False                     # Jaeger's default is ephemeral (a temporary folder)
    assert badger["directories"] == {"keys": "${env:AGENTOBS_JAEGER_BADGER_DIR:-./jaeger-badger}/keys",
                                     "values": "${env:AGENTOBS_JAEGER_BADGER_DIR:-./jaeger-badger}/values"}
    assert badger["ttl"] == {"spans": "${env:AGENTOBS_JAEGER_SPAN_TTL:-72h}"}
    for doc in ("docs/stack.md", "docs/scale.md"):
        text = (ROOT / doc).read_text()
        assert "AGENTOBS_JAEGER_SPAN_TTL" in text and "AGENTOBS_JAEGER_BADGER_DIR" in text, doc


def test_arrays_kept_as_json_text_are_read_back_as_arrays():
    """What Badger (and Jaeger's other v1-model stores) answer for a string[] attribute: its JSON text. The loader
    reads it as the array; text that is not a JSON array is one string (as some instrumentations write a single
    finish reason); a value of another type stays a wrong_type note."""
    from agentobs.analysis.otlp.load import load_request
    from agentobs.contract import semconv as sc

    def span(i: int, value: dict[str, Any]) -> dict[str, Any]:
        return {"traceId": "ab" * 16, "spanId": f"{i + 1:016x}", "name": "chat m", "kind": 3,
                "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001000000000",
                "attributes": [{"key": sc.RESPONSE_FINISH_REASONS, "value": value}]}
    answer = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [
        span(0, {"stringValue": '["stop"]'}),
        span(1, {"stringValue": '["tool_calls","length"]'}),
        span(2, {"arrayValue": {"values": [{"stringValue": "stop"}]}}),
        span(3, {"stringValue": "stop"}),
        span(4, {"intValue": "3"}),
    ]}]}]}
    ss = load_request(answer, "jaeger")
    got = dict(zip(ss.spans["span_id"], ss.spans[sc.RESPONSE_FINISH_REASONS], strict=True))
    as_lists = {k: (list(v) if isinstance(v, (list, tuple)) or hasattr(v, "tolist") else None)
                for k, v in got.items()}
    assert as_lists == {f"{1:016x}": ["stop"], f"{2:016x}": ["tool_calls", "length"], f"{3:016x}": ["stop"],
                        f"{4:016x}": ["stop"], f"{5:016x}": None}
    assert [(i.kind, i.count) for i in ss.quality.issues] == [("wrong_type", 1)]


# -- Badger across restarts (a private stack) ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def private(stack, tmp_path_factory):
    """A stack instance of our own (``stack`` only for the skip/require semantics of the stack tests)."""
    ps = PrivateStack(tmp_path_factory.mktemp("badger") / "run")
    try:
        ps.up()
        yield ps
    finally:
        ps.down()


def _send_runs(private: PrivateStack, service: str, seed: int) -> SentIds:
    from agentobs.domain.population import simulate
    from agentobs.telemetry import configure

    sent = SentIds()
    tel = configure(otlp_endpoint=private.otlp_grpc, otlp_protocol="grpc", service_name=service, traces_out=None,
                    extra_exporters=[("sent", sent)])
    simulate(RUNS, seed=seed, observers=lambda: [tel.observer()])
    report = tel.shutdown()
    assert all(e["lost"] == 0 for e in report.exporters.values()), report.exporters
    assert len(sent.traces) >= RUNS and sent.count > RUNS
    return sent


def _in_jaeger(private: PrivateStack, want: dict[str, set[str]], what: str) -> None:
    held, seen_at, _ = wait_jaeger_traces(private.jaeger, want, timeout=90)
    missing = {t: len(want[t] - held[t]) for t in want if held[t] != want[t]}
    assert seen_at is not None and not missing, (
        f"{what}: {len(missing)} of {len(want)} traces differ in Jaeger (missing spans per trace: "
        f"{dict(list(missing.items())[:5])})")


@pytest.mark.stack
def test_traces_survive_a_restart_and_a_crash_of_jaeger(private):
    badger = Path(private.exports["AGENTOBS_JAEGER_BADGER_DIR"])
    assert badger == private.run / "jaeger-badger" and badger.stat().st_mode & 0o077 == 0   # private, in the run
    first_service, second_service = unique_service("badger-first"), unique_service("badger-second")
    first = _send_runs(private, first_service, seed=1400)
    _in_jaeger(private, first.traces, "before any restart")
    assert sum(f.stat().st_size for f in badger.rglob("*") if f.is_file()) > 0

    # graceful: the script's own restart (down, then up) of the whole stack
    done = private.script("restart")
    assert done.returncode == 0, done.stderr[-3000:]
    assert healthy(private.jaeger_health)
    _in_jaeger(private, first.traces, "after scripts/stack.sh restart")

    # a crash: SIGKILL, no chance to flush or close the store; the script starts it again
    second = _send_runs(private, second_service, seed=1401)
    _in_jaeger(private, second.traces, "before the crash")
    private.stop("jaeger", signal.SIGKILL)
    assert not healthy(private.jaeger_health)
    private.up()
    _in_jaeger(private, {**first.traces, **second.traces}, "after a SIGKILL and up")
    status, body = get_json(f"{private.jaeger}/api/v3/services")             # the service index survives too
    assert status == 200 and {first_service, second_service} <= set(body["services"]), body


@pytest.mark.stack
def test_the_analysis_reads_badger_back_without_data_quality_notes(private):
    """Badger keeps array attributes (gen_ai.response.finish_reasons) as JSON text; the loader reads them back as
    the arrays, so a report from Jaeger has no wrong_type note."""
    service = unique_service("badger-report")
    sent = _send_runs(private, service, seed=1402)
    _in_jaeger(private, sent.traces, "before the report")
    from click.testing import CliRunner

    from agentobs.cli.main import cli
    done = CliRunner().invoke(cli, ["report", f"{private.jaeger}?service={service}&since=30d", "--format", "json"])
    assert done.exit_code == 0, done.output[-3000:]
    report = json.loads(done.stdout)
    assert report["overview"]["runs"] == RUNS                   # a resumed run spans several traces
    assert report["overview"]["spans"] == sent.count
    assert report["data_quality"]["issues"] == [], report["data_quality"]["issues"]


@pytest.mark.stack
def test_clean_removes_the_badger_folder(private):
    badger = Path(private.exports["AGENTOBS_JAEGER_BADGER_DIR"])
    assert badger.is_dir()
    done = private.script("clean", timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not badger.exists() and not private.run.exists()
