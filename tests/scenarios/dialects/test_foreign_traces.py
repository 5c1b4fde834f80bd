"""Traces from other instrumentations and transcripts through the same analysis (issue 5, points 3 and 4)."""

import numpy as np
import pytest
from locations import TAU2
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from agentobs.analysis.report.engine import analyze
from agentobs.telemetry.otlp_json import OtlpJsonFileExporter


def test_pydantic_ai_traces_give_what_the_model_function_did(tmp_path):
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    path = tmp_path / "pydantic.jsonl"
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(path)))
    did = []

    def make_model(extra_reads: int):
        calls = {"n": 0}

        def fn(messages, info: AgentInfo) -> ModelResponse:
            calls["n"] += 1
            n = calls["n"]
            plan = ["get_order"] * (1 + extra_reads) + ["issue_refund", "send_status_email"]
            if n <= len(plan):
                tool = plan[n - 1]
                args = {"order_id": "ord_1001"} if tool != "issue_refund" else {"order_id": "ord_1001",
                                                                                "amount_cents": 3000}
                return ModelResponse(parts=[ToolCallPart(tool, args)])
            return ModelResponse(parts=[TextPart("Refund issued and confirmation sent.")])
        return FunctionModel(fn), calls, len(["x"] * (1 + extra_reads)) + 2

    for extra in (0, 1, 3):
        model, calls, tool_calls = make_model(extra)
        agent = Agent(model, name="support-agent")

        @agent.tool_plain
        def get_order(order_id: str) -> dict:
            return {"status": "delivered", "total_cents": 4200}

        @agent.tool_plain
        def issue_refund(order_id: str, amount_cents: int) -> dict:
            return {"refunded_cents": amount_cents}

        @agent.tool_plain
        def send_status_email(order_id: str) -> dict:
            return {"sent": True}

        agent.instrument = InstrumentationSettings(tracer_provider=tp)
        result = agent.run_sync("Refund 3,000 cents on ord_1001 and confirm by email.")
        usage = result.usage
        did.append((calls["n"], tool_calls, usage.input_tokens + usage.output_tokens, extra))
    tp.shutdown()
    report = analyze([str(path)])
    runs = report.runs.sort_values("start").reset_index(drop=True)
    assert len(runs) == 3
    assert (runs["source_kind"] == "genai").all() and (runs["agent"] == "support-agent").all()
    got = list(zip(runs["steps"], runs["tool_calls"], runs["tokens"], strict=True))
    assert got == [(a, b, c) for a, b, c, _ in did]
    # repeats are found from the captured gen_ai.tool.call.arguments
    assert list(runs["max_identical_calls"]) == [1 + e for *_, e in did]


@pytest.mark.skipif(not TAU2.exists(), reason="shared tau2 data not present")
def test_tau2_through_the_importer_reproduces_the_readme():
    report = analyze([str(TAU2)])
    runs = report.runs
    assert len(runs) == 280 and (runs["source_kind"] == "transcript").all()
    src = report.spans.groupby("run_id")["source"].first().astype(str)
    is_ft = runs["run_id"].map(src).str.contains("/ft_")
    expected = {  # README: assistant messages with usage (p50 p90 p99 max), agent tool calls, tokens
        (False, True): (82, [13, 19, 25.9, 30], [7, 17, 25.8, 29], [82559, 155032, 226826, 263301]),
        (False, False): (58, [15, 20, 26, 30], [8, 18.3, 25.6, 29], None),
        (True, True): (111, [13, 20, 30.7, 32], [7, 14, 25.5, 27], [82382, 162390, 240566, 266761]),
        (True, False): (29, [21, 85.4, 99.7, 100], [10, 74.6, 98.4, 99], [166287, 1043366, 1323114, 1381556]),
    }
    for (fine_tuned, success), (n, steps, tools, tokens) in expected.items():
        g = runs[(is_ft == fine_tuned) & (runs["success"] == success)]
        assert len(g) == n
        for col, want in (("steps", steps), ("tool_calls", tools), ("tokens", tokens)):
            if want is None:
                continue
            x = g[col].to_numpy(dtype=float)
            got = [*np.percentile(x, [50, 90, 99]), x.max()]
            digits = 0 if col == "tokens" else 1
            assert [round(v, digits) for v in got] == [round(float(w), digits) for w in want], \
                (fine_tuned, success, col)
    # the five fine-tuned runaways are found: a call repeated dozens of times
    runaway = runs[runs["max_identical_calls"] >= 60]
    assert len(runaway) == 5 and (runaway["signatures"].map(lambda s: "repeated_call" in s)).all()
    caps = {c.dimension: c for c in report.caps}
    assert caps["steps"].successful_runs == 193
