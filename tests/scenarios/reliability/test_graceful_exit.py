"""SIGTERM and Ctrl-C (SIGINT) flush every span and exit cleanly (128 + signal, no traceback): the web-server example
and the kernel's documented set-up (``graceful_exit(telemetry)``), each in a subprocess of its own."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from locations import ROOT

SIGNALS = [pytest.param(signal.SIGTERM, id="SIGTERM"), pytest.param(signal.SIGINT, id="SIGINT")]


def _start(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "AGENTOBS_TRACES_OUT"):
        env.pop(name, None)
    return subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)


def _first_line(proc: subprocess.Popen, timeout: float = 60) -> str:
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert box and box[0], f"no output from the child; stderr: {proc.stderr.read() if proc.poll() is not None else ''}"
    return box[0]


def _spans(path: Path) -> list[dict]:
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return [s for x in lines for rs in x["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def _stop(proc: subprocess.Popen, sig: signal.Signals) -> tuple[int, str]:
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err


def _exported(err: str, path: Path) -> int:
    """The count from the export report the child logged: 'file <path>: N of N spans exported, 0 lost (...)'."""
    line = next(x for x in err.splitlines() if x.startswith(f"file {path}:"))
    exported, ended = line.split(": ", 1)[1].split(" spans exported")[0].split(" of ")
    assert "0 lost (0 dropped, 0 failed to export)" in line and exported == ended, line
    return int(ended)


def _post(port: int) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/refunds?order=ord_1001", method="POST", data=b"")
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


@pytest.mark.parametrize("sig", SIGNALS)
def test_the_web_server_example_exports_its_spans_when_stopped(tmp_path, sig):
    path = tmp_path / "traces.jsonl"
    proc = _start([str(ROOT / "examples" / "web_server.py"), str(path), "0"])
    try:
        line = _first_line(proc)
        port = int(line.split("http://127.0.0.1:")[1].split(";")[0])
        answers = [_post(port) for _ in range(3)]
        in_flight = threading.Thread(target=lambda: _post_quietly(port), daemon=True)
        in_flight.start()                          # a request still running when the signal arrives
        time.sleep(0.1)
    finally:
        rc, err = _stop(proc, sig)
    assert rc == 128 + sig, err
    assert "Traceback" not in err and "Error" not in err, err
    spans = _spans(path)
    assert len(spans) == _exported(err, path)
    ids = {s["spanId"] for s in spans}
    assert all(s.get("parentSpanId", "") in ids | {""} for s in spans)      # no orphan: every parent was exported
    for a in answers:
        mine = [s for s in spans if s["traceId"] == a["trace_id"]]
        assert len(mine) == 15 and {s["name"] for s in mine} >= {"POST /refunds", "invoke_agent support-agent"}
    others = {s["traceId"] for s in spans} - {a["trace_id"] for a in answers}
    for trace_id in others:                        # the request cut short: its run ended 'cancelled', spans closed
        root = next(s for s in spans if s["traceId"] == trace_id and s["name"].startswith("invoke_agent"))
        attrs = {x["key"]: x["value"] for x in root["attributes"]}
        assert attrs["agentobs.stop_reason"] == {"stringValue": "cancelled"}


def _post_quietly(port: int) -> None:
    with contextlib.suppress(OSError):             # the server stopped before answering: expected
        _post(port)


SCRIPT = textwrap.dedent("""
    import logging, sys, uuid
    from agentobs import Budget, Kernel, TaskState
    from agentobs.domain.policies import SupportPolicy
    from agentobs.domain.support import FACTS, SupportDesks
    from agentobs.telemetry import configure, graceful_exit

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    telemetry = configure(traces_out=sys.argv[1])
    kernel = Kernel(SupportPolicy(), SupportDesks(), budget=Budget(max_steps=8), facts=FACTS,
                    observers=[telemetry.observer()])
    with graceful_exit(telemetry):
        n = 0
        while True:
            state = kernel.run(TaskState(task_id=f"t-{uuid.uuid4().hex[:8]}", user_id="cu_ana",
                                         goal="refund the damaged item on order ord_1001"))
            n += 1
            if n == 20:
                print("running", flush=True)
""")


@pytest.mark.parametrize("sig", SIGNALS)
def test_the_documented_kernel_set_up_exports_its_spans_when_stopped(tmp_path, sig):
    script, path = tmp_path / "agent.py", tmp_path / "traces.jsonl"
    script.write_text(SCRIPT)
    proc = _start([str(script), str(path)])
    try:
        assert _first_line(proc).strip() == "running"
    finally:
        rc, err = _stop(proc, sig)
    assert rc == 128 + sig, err
    assert "Traceback" not in err, err
    spans = _spans(path)
    assert len(spans) == _exported(err, path) > 20 * 10
    roots = [s for s in spans if s["name"].startswith("invoke_agent")]
    statuses = [{x["key"]: x["value"] for x in r["attributes"]}["agentobs.status"]["stringValue"] for r in roots]
    assert statuses.count("stopped") >= 20 and set(statuses) <= {"stopped", "aborted"}   # the last one, cut short
    ids = {s["spanId"] for s in spans}
    assert all(s.get("parentSpanId", "") in ids | {""} for s in spans)


CUT = textwrap.dedent("""
    import logging, os, signal, sys, time
    from agentobs import Budget, Kernel, TaskState
    from agentobs.domain.policies import SupportPolicy
    from agentobs.domain.support import FACTS, SupportDesks
    from agentobs.telemetry import BoundedWaitSpanProcessor, configure, graceful_exit

    ended = BoundedWaitSpanProcessor.on_end
    seen = [0]

    def on_end(self, span):                     # the signal lands after the span was counted, before it is queued
        seen[0] += 1
        if seen[0] == 30:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
        ended(self, span)

    BoundedWaitSpanProcessor.on_end = on_end
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    telemetry = configure(traces_out=sys.argv[1])
    kernel = Kernel(SupportPolicy(), SupportDesks(), budget=Budget(max_steps=8), facts=FACTS,
                    observers=[telemetry.observer()])
    with graceful_exit(telemetry):
        while True:
            kernel.run(TaskState(task_id="t-1", user_id="cu_ana", goal="refund the damaged item on order ord_1001"))
""")


def test_a_signal_in_the_middle_of_ending_a_span_waits_until_it_is_queued(tmp_path):
    """The signal arrived between the end counter and the export queue: the span was counted as ended and never
    queued, so the report said 1 lost (seen under load in the documented set-up). The exit now waits until the
    main thread has left the span machinery."""
    script, path = tmp_path / "agent.py", tmp_path / "traces.jsonl"
    script.write_text(CUT)
    proc = _start([str(script), str(path)])
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err, err
    assert len(_spans(path)) == _exported(err, path) >= 30
