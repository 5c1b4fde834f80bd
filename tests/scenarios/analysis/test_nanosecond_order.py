"""Spans started less than 256 ns apart: as float64, times of today step by 256 ns, so the trace view and the choice
of a run's main agent kept their input order instead of their start order. They compare the integer times."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from agentobs.analysis import derive_runs, load_sources
from agentobs.cli.main import cli

T = 1_767_225_600_000_000_000          # 2026-01-01T00:00:00Z in ns: consecutive float64 values here are 256 ns apart
TRACE = "ab" * 16


def _span(sid: str, parent: str | None, name: str, start: int, attrs: dict[str, str]) -> dict:
    out = {"traceId": TRACE, "spanId": sid, "name": name, "kind": 1, "startTimeUnixNano": str(start),
           "endTimeUnixNano": str(T + 10**9), "attributes": [{"key": k, "value": {"stringValue": v}}
                                                             for k, v in attrs.items()]}
    if parent:
        out["parentSpanId"] = parent
    return out


def _write(path: Path) -> Path:
    """An unnamed agent invocation over two named ones started 10 ns apart (within one float64 step), the later
    one first in the input."""
    agent = {"gen_ai.operation.name": "invoke_agent"}
    spans = [_span("1" * 16, None, "invoke_agent", T, agent),
             _span("3" * 16, "1" * 16, "invoke_agent second", T + 20, {**agent, "gen_ai.agent.name": "second"}),
             _span("2" * 16, "1" * 16, "invoke_agent first", T + 10, {**agent, "gen_ai.agent.name": "first"}),
             _span("4" * 16, "2" * 16, "chat gpt-4o", T + 30, {"gen_ai.operation.name": "chat"}),
             _span("5" * 16, "3" * 16, "chat gpt-4o", T + 40, {"gen_ai.operation.name": "chat"})]
    doc = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]}
    path.write_text(json.dumps(doc) + "\n")
    return path


def test_the_trace_view_orders_spans_by_their_integer_start(tmp_path):
    src = str(_write(tmp_path / "t.jsonl"))
    res = CliRunner().invoke(cli, ["trace", TRACE, src])
    assert res.exit_code == 0, res.output
    names = [line.split()[1:4] for line in res.output.splitlines() if "invoke_agent" in line]
    assert [n for row in names for n in row if n in ("first", "second")] == ["first", "second"], res.output


def test_the_main_agent_is_the_earliest_of_the_highest_named_ones(tmp_path):
    runs, _, _ = derive_runs(load_sources([str(_write(tmp_path / "t.jsonl"))]))
    assert len(runs) == 1 and runs["agent"].iloc[0] == "first", runs[["agent", "sub_agent_names"]]


def test_the_runs_table_orders_calls_by_their_integer_start(tmp_path):
    """The first error of a run: two failed model calls 10 ns apart, the later one first in the input."""
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"}
    spans = [_span("1" * 16, None, "invoke_agent helper", T, agent),
             {**_span("3" * 16, "1" * 16, "chat later", T + 20, {"gen_ai.operation.name": "chat"}),
              "status": {"code": 2, "message": "later"}},
             {**_span("2" * 16, "1" * 16, "chat earlier", T + 10, {"gen_ai.operation.name": "chat"}),
              "status": {"code": 2, "message": "earlier"}}]
    doc = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]}
    path = tmp_path / "e.jsonl"
    path.write_text(json.dumps(doc) + "\n")
    runs, _, _ = derive_runs(load_sources([str(path)]))
    assert runs["first_error"].iloc[0].startswith("chat earlier"), runs["first_error"].iloc[0]
