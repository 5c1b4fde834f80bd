"""The README's kernel example runs as printed: a real OpenAI client against a provider on 127.0.0.1 (OPENAI_BASE_URL),
the real clock, the example's own toolbox; the model proposes a plan, carries out each step by its plan_step and
finishes, and the run's trace reads back as a tree. (The example ran on the simulated clock and showed neither a
model nor a toolbox.)"""
from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("openai")

from click.testing import CliRunner
from locations import ROOT
from providers import Call, ProviderServer, Reply, call

from agentobs.cli.main import cli

README = ROOT / "README.md"


def _example() -> str:
    text = README.read_text()
    section = text[text.index("## Using the kernel"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _planner(c: Call) -> Reply:
    """A model that reads the state it is shown (the kernel's view, not a transcript): plans, reads, refunds (the
    write depends on the read), then finishes."""
    view = json.loads(c.last_user_text())
    status = {s["id"]: s["status"] for s in view["plan"]}
    if not status:
        return Reply(tool_calls=[call("agentobs_plan", steps=[{"id": "read", "tool": "get_order", "depends_on": []},
                                                             {"id": "pay", "tool": "refund", "depends_on": ["read"]}])])
    if status["read"] == "pending":
        return Reply(tool_calls=[call("get_order", order_id="ord_1001", plan_step="read")])
    if status["pay"] == "pending":
        return Reply(tool_calls=[call("refund", order_id="ord_1001", plan_step="pay")])
    return Reply(tool_calls=[call("agentobs_final", outcome="completed", text="Order ord_1001 is refunded.")])


def test_the_readme_kernel_example_runs_as_printed(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with ProviderServer(_planner) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        ns: dict = {"__name__": "readme"}
        exec(compile(_example(), "README.md", "exec"), ns)
        requests = srv.count
    state = ns["state"]
    assert state.stop == "done" and state.status == "stopped" and state.answer == "Order ord_1001 is refunded."
    assert [(s.id, s.tool, s.status) for s in state.plan] == [("read", "get_order", "done"), ("pay", "refund", "done")]
    assert ns["REFUNDS"] == {"t-42:pay": "re_1"} and ns["ORDERS"]["ord_1001"]["refunded"] is True
    assert requests == 4 and state.elapsed > 0                          # the real clock measured the calls
    printed = capsys.readouterr().out
    assert "done stopped Order ord_1001 is refunded." in printed
    # the run's trace, written by the example's telemetry, reads back as a tree
    trace_id = json.loads((tmp_path / "traces.jsonl").read_text().splitlines()[0])["resourceSpans"][0][
        "scopeSpans"][0]["spans"][0]["traceId"]
    res = CliRunner().invoke(cli, ["trace", trace_id[:12], str(tmp_path / "traces.jsonl")], env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output
    assert "execute_tool refund" in res.output and "chat gpt-4.1-mini" in res.output
