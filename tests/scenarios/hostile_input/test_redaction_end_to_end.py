"""The cases of issue 43 that redaction made slow, end to end, from their shapes (the payloads are made here):

- a report whose agent's name is a megabyte of crafted text (a JWT-like run, PEM key headers), in every output
  format: the terminal report, the JSON and HTML reports, the caps, the runs CSV and a trace's tree (275 s before);
- a 648 KB run of unterminated key headers (64 s before), in the same places;
- a 432 KB tool result with content capture on: redacting it held the agent's own thread for 74 s, where its
  deadline could not fire.

Each is timed against the same case with ordinary text of the same size, in this process (the method of
tests/scenarios/hostile_input/test_redaction_linear.py: CPU time of this process, a ratio rather than seconds).
"""
from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from locations import ROOT
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentobs import Budget, Kernel, ModelResponse, RealClock
from agentobs.cli.main import cli
from agentobs.contract import redaction
from agentobs.contract import semconv as sc
from agentobs.contract.redaction import REDACTED
from agentobs.domain.scenarios import new_state
from agentobs.kernel.tools import ToolInvocation, ToolResponse, ToolSpec
from agentobs.telemetry import configure
from bench import redaction_data as data

FIXTURE = ROOT / "tests" / "dialects" / "fixtures" / "openai_v2.jsonl"
SLOWER = 3.0            # allowed: crafted / ordinary, same size, same place (the old engine: hundreds of times)

CRAFTED = {
    "jwt-like run, 1 MB": lambda: data.shaped("jwt", "prefix", 1 << 20),
    "unterminated key headers, 648 KB": lambda: data.fill("", "-----BEGIN PRIVATE KEY-----", 648_000),
}


def best(fn: Callable[[], object], runs: int = 2) -> float:
    out = float("inf")
    for _ in range(runs):
        t0 = time.process_time()
        fn()
        out = min(out, time.process_time() - t0)
    return max(out, 1e-6)


def _traces(path: Path, name: str) -> Path:
    """The fixture's first request with ``name`` as the agent's name."""
    req = json.loads(FIXTURE.read_text().splitlines()[0])
    for rs in req["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                for a in sp.get("attributes", []):
                    if a["key"] == "gen_ai.agent.name":
                        a["value"] = {"stringValue": name}
    path.write_text(json.dumps(req) + "\n")
    return path


def _every_format(traces: Path, out: Path) -> dict[str, str]:
    """Every output of agentobs for these traces: {format: what it wrote}."""
    runner = CliRunner()
    trace_id = json.loads(traces.read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    outputs = {}
    for fmt, args in {"table": ["report", str(traces), "--segment", "agent"],
                      "json": ["report", str(traces), "--format", "json"],
                      "caps": ["caps", str(traces)], "trace": ["trace", trace_id, str(traces)]}.items():
        r = runner.invoke(cli, args)
        assert r.exit_code == 0, (fmt, r.output[-500:])
        outputs[fmt] = r.output
    for fmt, args, path in (("html", ["report", str(traces), "--format", "html"], out / "r.html"),
                            ("csv", ["runs", str(traces)], out / "runs.csv")):
        r = runner.invoke(cli, [*args, "--out", str(path)])
        assert r.exit_code == 0, (fmt, r.output[-500:])
        outputs[fmt] = path.read_text()
    return outputs


@pytest.mark.parametrize("crafted", list(CRAFTED))
def test_a_crafted_agent_name_costs_a_report_no_more_than_ordinary_text(tmp_path, crafted):
    name = CRAFTED[crafted]()
    plain = data.ordinary(len(name))
    traces = {"crafted": _traces(tmp_path / "crafted.jsonl", name), "plain": _traces(tmp_path / "plain.jsonl", plain)}

    outputs: dict[str, dict[str, str]] = {}

    def report(which: str) -> None:
        redaction._SHOWN.clear()
        outputs[which] = _every_format(traces[which], tmp_path)
    t_plain = best(lambda: report("plain"), runs=1)          # (a report costs seconds: the ratio is generous)
    t_crafted = best(lambda: report("crafted"), runs=1)
    assert t_crafted <= SLOWER * t_plain, f"{crafted}: {t_crafted:.2f} s against {t_plain:.2f} s"
    shown = outputs["crafted"]
    if "key headers" in crafted:           # a key header is masked wherever the name is shown
        for fmt, text in shown.items():
            assert "-----BEGIN PRIVATE KEY-----" not in text, fmt
        assert REDACTED in shown["json"] and REDACTED in shown["csv"]
    else:                                   # a JWT-like run holds no secret: shown as it is (JSON, CSV)
        assert name in shown["json"] and name in shown["csv"]


# -- a tool result with content capture on -----------------------------------------------------------------------


class _CallThenHang:
    """Reads the order, then hangs on the next model call until the deadline cuts it off."""
    name, provider = "hang", "agentobs"

    def __init__(self) -> None:
        self.calls = 0

    async def apropose(self, request):
        self.calls += 1
        if self.calls == 1:
            return ModelResponse(reply={"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001"}},
                                 input_tokens=10, output_tokens=5)
        await asyncio.sleep(60)


class _Notes:
    """A toolbox whose one tool, get_order, returns ``note`` in its result (as a ticket's text would be)."""
    blocking = False

    def __init__(self, note: str) -> None:
        self.note = note

    def spec(self, name: str) -> ToolSpec | None:
        if name != "get_order":
            return None
        return ToolSpec(name="get_order", effect="read", description="Read an order and its notes")

    def invoke(self, call: ToolInvocation) -> ToolResponse:
        return ToolResponse(result={"status": "ok", "order_id": call.args.get("order_id"), "note": self.note},
                            latency_s=0.001)


def _run(note: str, capture: str = "SPAN_AND_EVENT") -> tuple[object, list]:
    """One async run, real clock, deadline 0.3 s, whose get_order returns ``note``."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tel = configure(tracer_provider=provider, capture=capture)
    kernel = Kernel(_CallThenHang(), _Notes(note), budget=Budget(deadline_s=0.3, max_tokens=10_000_000),
                    clock=RealClock(), observers=[tel.observer()])
    state = asyncio.run(kernel.arun(new_state("t-432")))
    spans = exporter.get_finished_spans()
    provider.shutdown()
    return state, spans


@pytest.mark.parametrize("shape", [("jwt", "prefix"), ("pem_private_key", "prefix"), ("email", "prefix")])
def test_a_crafted_tool_result_with_capture_on_leaves_the_deadline_to_fire(shape):
    """The model's second call hangs; the deadline (0.3 s of active time, a real timeout on what the async kernel
    awaits) must cut it off. Redacting the 432 KB result runs in the agent's own thread (the event loop here)
    before that call: it held the loop 74 s of CPU, so the deadline fired 74 s late. The run's CPU time (the
    waits cost none) against the same run with an ordinary 432 KB result."""
    crafted, plain = data.shaped(*shape, 432_000), data.ordinary(432_000)
    t_plain = best(lambda: _run(plain))
    t_crafted = best(lambda: _run(crafted))
    assert t_crafted <= SLOWER * t_plain, f"{shape}: {t_crafted:.2f} s against {t_plain:.2f} s of CPU"
    state, spans = _run(crafted)
    assert state.stop == "deadline"
    tool = next(s for s in spans if s.name == "execute_tool get_order")
    result = json.loads(tool.attributes[sc.TOOL_CALL_RESULT])          # captured, after the redactor
    assert result["note"] == (REDACTED if shape[0] == "pem_private_key" else crafted)


def test_content_of_a_run_sampled_out_is_not_redacted(monkeypatch):
    """Only what will be recorded is scanned: a run whose root span is sampled out records no content, so its
    tool results and messages never reach the redactor."""
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
    calls = []
    real = redaction.Redactor.json
    monkeypatch.setattr(redaction.Redactor, "json", lambda self, v: calls.append(1) or real(self, v))
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tel = configure(tracer_provider=provider, capture="SPAN_AND_EVENT")
    kernel = Kernel(_CallThenHang(), _Notes("a note"), budget=Budget(deadline_s=0.2), clock=RealClock(),
                    observers=[tel.observer()])
    assert asyncio.run(kernel.arun(new_state("t-off"))).stop == "deadline"
    assert calls == [] and exporter.get_finished_spans() == ()
    _, spans = _run("ordinary note")                                     # sampled: content is there
    assert any(sc.TOOL_CALL_RESULT in s.attributes for s in spans)
