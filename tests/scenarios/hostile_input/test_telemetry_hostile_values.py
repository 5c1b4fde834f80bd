"""What an instrumented loop hands the telemetry is not checked by any type: it must never break the loop, and the
file it writes must stay strict JSON that agentobs reads (found by fuzzing the instrumentation API and the file
exporter)."""
from __future__ import annotations

import json
import os

import pytest

from agentobs.analysis.otlp.load import load_file
from agentobs.analysis.report.engine import analyze
from agentobs.errors import ConfigError
from agentobs.telemetry import configure
from agentobs.telemetry.instrument import AgentInstrumentation


def _strict(path):
    """Every line parses as strict JSON (no NaN or Infinity literals, no lone surrogate escapes)."""
    def refuse(name):
        raise ValueError(f"non-standard literal {name}")
    for line in path.read_text(encoding="utf-8").splitlines():
        assert "\\ud8" not in line.lower() and "\\udc" not in line.lower() and "\\udf" not in line.lower()
        json.loads(line, parse_constant=refuse)


class _BadStr:
    def __str__(self):
        raise RuntimeError("str")

    __repr__ = __str__


@pytest.mark.parametrize("args", ["cycle", {1: "a", "b": 2}, {(1, 2): "a"}, {"x": _BadStr()}])
def test_a_tool_call_with_arguments_no_digest_takes_still_runs(tmp_path, args):
    """step.tool() raised (ValueError, TypeError, RuntimeError) before the tool body ran."""
    if args == "cycle":
        args = {}
        args["self"] = args
    tel = configure(traces_out=tmp_path / "t.jsonl")
    agent = AgentInstrumentation(tel)
    ran = []
    with agent.task("bot", task_id="t", model="m", provider="p") as t, t.step() as s:
        with s.tool("get_order", args) as call:
            ran.append(True)
            call.done({"status": "ok"})
        t.done(stop="done", outcome="completed")
    tel.shutdown()
    assert ran == [True]
    _strict(tmp_path / "t.jsonl")


@pytest.mark.parametrize("done", [dict(input_tokens=None, output_tokens=5), dict(input_tokens="12", output_tokens=1),
                                  dict(input_tokens=1, output_tokens=1, cost_usd="0.1")])
def test_a_bad_count_does_not_hide_the_loops_own_exception(tmp_path, done):
    """call.done(input_tokens=None) made the chat scope's finally raise TypeError, in place of the loop's error."""
    tel = configure(traces_out=tmp_path / "t.jsonl")
    agent = AgentInstrumentation(tel)
    with pytest.raises(TimeoutError, match="mine"), \
            agent.task("bot", task_id="t", model="m", provider="p") as t, t.step() as s, s.chat() as call:
        call.done(**done)
        raise TimeoutError("mine")
    tel.shutdown()
    _strict(tmp_path / "t.jsonl")


def test_nan_huge_integers_and_lone_surrogates_are_written_as_strict_json_agentobs_reads(tmp_path):
    """NaN and Infinity were written as bare literals (no strict parser takes them), a lone surrogate as an escape
    jq refuses, and an integer past 64 bits as an intValue no OTLP reader takes."""
    path = tmp_path / "t.jsonl"
    tel = configure(traces_out=path)
    agent = AgentInstrumentation(tel)
    with agent.task("agent\ud800", task_id="t", model="m", provider="p") as t, t.step() as s:
        with s.chat() as call:
            call.done(input_tokens=10, output_tokens=2, cost_usd=float("nan"))
        with s.tool("get_order", {"big": 10**40, "nan": float("nan"), "inf": float("-inf")}) as tc:
            tc.done({"status": "ok"})
        t.done(stop="done", outcome="completed")
    with tel.tracer_provider.get_tracer("app").start_as_current_span(
            "app span", attributes={"x.nan": float("nan"), "x.inf": float("inf"), "x.big": 10**40}):
        pass
    tel.shutdown()
    _strict(path)
    text = path.read_text()
    assert '"doubleValue":"NaN"' in text and '"doubleValue":"Infinity"' in text and '"doubleValue":1e+40' in text
    ss = load_file(str(path))
    assert len(ss.spans) >= 3 and ss.spans["name"].str.contains("\ufffd").any()
    assert len(analyze([str(path)]).runs) == 1


def test_a_line_cut_short_by_an_earlier_writer_costs_only_itself(tmp_path):
    """A process stopped mid-line (a full disk); the next one appended to that line, so its first batch was lost
    with it. The exporter now ends a torn last line before it writes."""
    path = tmp_path / "t.jsonl"

    def one_run(task_id):
        tel = configure(traces_out=path)
        agent = AgentInstrumentation(tel)
        with agent.task("bot", task_id=task_id, model="m", provider="p") as t, t.step() as s, s.chat() as call:
            call.done(input_tokens=1, output_tokens=1)
            t.done(stop="done", outcome="completed")
        tel.shutdown()
    one_run("first")
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])           # the first process's line, cut
    one_run("second")
    r = analyze([str(path)])
    assert len(r.runs) == 1 and r.quality.count("invalid_json") == 1


@pytest.mark.parametrize("where", ["dir", "under_file", "nul"])
def test_a_traces_file_that_cannot_be_written_is_a_config_error(tmp_path, where):
    (tmp_path / "afile").write_text("x")
    path = {"dir": str(tmp_path), "under_file": str(tmp_path / "afile" / "t.jsonl"),
            "nul": f"{tmp_path}/a\0b.jsonl"}[where]
    with pytest.raises(ConfigError, match="cannot be written"):
        configure(traces_out=path)
    assert os.listdir(tmp_path) == ["afile"]


def test_content_capture_of_text_holding_json_nested_past_pythons_limit(tmp_path, monkeypatch):
    """With content capture on, a tool result holding text that opens a JSON document nested thousands deep
    (a sensitive key at every level) ended the redactor's json.loads in RecursionError: the observer failed, the
    run's spans were lost and a traceback printed. Such text is masked as text: the run's spans are written and
    the secret at its bottom is not."""
    from agentobs import ScriptedModel
    from agentobs.contract.redaction import Redactor
    from agentobs.domain.scenarios import go
    from agentobs.domain.support import SupportDesk
    from agentobs.kernel.tools import ToolResponse

    deep = "{" + '"password":{' * 5000 + '"hunter2"' + "}" * 5001

    class Desk(SupportDesk):
        def invoke(self, call):
            return ToolResponse(result={"status": "ok", "note": deep}, latency_s=super().invoke(call).latency_s)

    assert "hunter2" not in Redactor(env={}).value({"note": deep})["note"]
    assert "hunter2" not in Redactor(env={}).json(deep)
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_AND_EVENT")
    path = tmp_path / "t.jsonl"
    tel = configure(traces_out=str(path), replace_traces=True)
    read = {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001"}}
    fin = {"type": "final", "outcome": "cannot_complete", "text": "x"}
    go(ScriptedModel([read, fin]), desk=Desk(), observers=[tel.observer()])
    report = tel.shutdown()
    assert report.ended > 0 and report.exporters[f"file {path}"]["failed"] == 0
    text = path.read_text()
    assert "hunter2" not in text and "execute_tool" in text
