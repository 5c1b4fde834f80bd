"""The real collector (the binary scripts/stack.sh builds), started here on free ports of 127.0.0.1 with a ``file``
exporter in ``format: proto`` and ``compression: zstd`` (by default, and with the ``exporter.file.nativeCompression``
feature gate), is sent our scenarios' spans over OTLP/HTTP by the SDK's exporter; agentobs reads the file it
writes into the spans and runs of our own OTLP JSON file of the same spans."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from same_spans import same_spans  # the one comparison of spans, events, runs
from stackutil import STACK_SCRIPT, free_ports, listening, wait_for

pytestmark = pytest.mark.stack

def _required() -> bool:
    return os.environ.get("AGENTOBS_REQUIRE_STACK", "") not in ("", "0")


@pytest.fixture(scope="module")
def collector_bin() -> Path:
    """The collector binary scripts/stack.sh builds (not built here: `scripts/stack.sh build` does that)."""
    done = subprocess.run([str(STACK_SCRIPT), "bin", "collector"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.strip())
    if not os.access(path, os.X_OK):
        if _required():
            pytest.fail(f"the collector binary is required (AGENTOBS_REQUIRE_STACK=1) but {path} is not built",
                        pytrace=False)
        pytest.skip(f"the collector is not built ({path}): run scripts/stack.sh build")
    return path


def _config(tmp: Path, grpc: int, http: int, out: Path) -> Path:
    cfg = tmp / "collector.yaml"
    cfg.write_text(f"""receivers:
  otlp:
    protocols:
      grpc: {{endpoint: "127.0.0.1:{grpc}"}}
      http: {{endpoint: "127.0.0.1:{http}"}}
processors:
  batch: {{timeout: 200ms}}
exporters:
  file:
    path: {out}
    format: proto
    compression: zstd
service:
  telemetry:
    metrics: {{level: none}}
  pipelines:
    traces: {{receivers: [otlp], processors: [batch], exporters: [file]}}
""")
    return cfg


@pytest.mark.parametrize("gate", [None, "exporter.file.nativeCompression"])
def test_the_collectors_proto_zstd_file_gives_the_spans_sent(collector_bin, tmp_path, gate):
    from agentobs.analysis.formats import collector_proto, collector_zstd, reader_of
    from agentobs.analysis.load.sources import load_sources
    from agentobs.analysis.otlp.load import load_file
    from agentobs.domain.scenarios import SEED000
    from agentobs.telemetry import configure

    grpc, http = free_ports(2)
    out = tmp_path / "traces.pb.zst"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTOBS_", "OTEL_"))}
    args = [str(collector_bin), f"--config={_config(tmp_path, grpc, http, out)}"]
    args += [f"--feature-gates={gate}"] if gate else []
    log = tmp_path / "collector.log"
    with open(log, "wb") as log_file:
        proc = subprocess.Popen(args, env=env, cwd=tmp_path, stdout=log_file, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: listening(http) or proc.poll() is not None, "the collector's OTLP/HTTP port", timeout=60)
        assert proc.poll() is None, log.read_text()[-3000:]
        otlp = tmp_path / "traces.jsonl"
        tel = configure(traces_out=otlp, extra_exporters=[
            ("collector", OTLPSpanExporter(endpoint=f"http://127.0.0.1:{http}/v1/traces"))])
        for run in SEED000.values():
            run([tel.observer()])
        tel.shutdown()                                   # every span sent (and written to our own file)
    finally:
        proc.send_signal(signal.SIGTERM)                 # a graceful stop: the exporter flushes and closes its file
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, log.read_text()[-3000:]
    data = out.read_bytes()
    assert data[:4] == collector_zstd.MAGIC if gate else data[4:8] == collector_zstd.MAGIC   # the two layouts

    assert reader_of(out).name == collector_zstd.NAME
    got, want = load_sources([str(out)]), load_file(otlp)
    assert not got.quality.issues, got.quality.to_dict()
    assert set(got.spellings[str(out)]) == {collector_zstd.NAME, collector_proto.NAME}
    same_spans(got, want)
