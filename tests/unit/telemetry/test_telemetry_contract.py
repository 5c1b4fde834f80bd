"""Telemetry on the contract: resume links owned by telemetry, the call-metrics switch, cache and reasoning
tokens, events from a loop that is not ours, and checkpoints written before the links left the state."""
import hashlib
import json
import sqlite3

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.trace import SpanContext, TraceFlags

from agentobs import Decision, FunctionModel, ModelResponse, SimClock, SQLiteCheckpointStore, TaskState
from agentobs.contract import semconv as sc
from agentobs.domain.scenarios import SEED000_SPECS, approve_and_resume, go, kernel_for, run
from agentobs.errors import ConfigError
from agentobs.kernel.state import SCHEMA_VERSION
from agentobs.telemetry import CallMetrics, configure, format_traceparent, parse_traceparent, resolve
from agentobs.telemetry.instrument import AgentInstrumentation
from agentobs.telemetry.links import ResumeLinks

EPOCH = 1_767_225_600_000_000_000
G = SEED000_SPECS[6]          # "G refund needs approval": suspends


def _roots(exporter):
    return [s for s in exporter.get_finished_spans() if s.parent is None]


# -- resume links ----------------------------------------------------------------------------------------------------

def test_traceparent_round_trips_through_the_w3c_propagator():
    ctx = SpanContext(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331, is_remote=False,
                      trace_flags=TraceFlags(1))
    text = format_traceparent(ctx)
    assert text == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    back = parse_traceparent(text)
    assert back is not None and (back.trace_id, back.span_id, back.is_remote) == (ctx.trace_id, ctx.span_id, True)
    for bad in ("", "garbage", "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", "00-xyz-abc-01"):
        assert parse_traceparent(bad) is None


def test_resume_links_are_bounded_and_keep_the_latest_segment():
    links = ResumeLinks(capacity=2)
    a, b, c = (SpanContext(i, i, is_remote=False) for i in (1, 2, 3))
    links.suspended("t1", a)
    links.suspended("t2", b)
    links.suspended("t1", c)              # suspended again: its resume links to the newer segment
    links.suspended("t3", a)              # t2 is the oldest and goes
    assert (links.previous("t1"), links.previous("t2"), links.previous("t3")) == (c, None, a)


def test_the_state_no_longer_carries_trace_context():
    r = run(G, epoch_ns=EPOCH)
    assert "links" not in r.state.to_dict() and r.state.status == "suspended"


def test_a_resume_in_another_process_links_through_an_explicit_traceparent(memory_tracing):
    provider, exporter = memory_tracing
    first_process = configure(tracer_provider=provider)
    obs = first_process.observer()
    r = run(G, [obs], EPOCH)
    saved, parent = r.state.to_json(), obs.trace_context()
    assert parent is not None
    second_process = configure(tracer_provider=provider)          # knows nothing of the first segment
    st = TaskState.from_json(saved)
    kernel_for(G, r.desk, observers=[second_process.observer(resumed_from=parent)],
               clock=SimClock(EPOCH + 10**12)).resume(st, Decision.approve(st.pending))
    a, b = _roots(exporter)
    assert [lk.context.span_id for lk in b.links] == [a.context.span_id]
    assert dict(b.links[0].attributes) == {sc.LINK_KIND: sc.LINK_RESUMED_FROM}
    # without the traceparent, another process's resume has nothing to link to
    exporter.clear()
    st = TaskState.from_json(saved)
    kernel_for(G, r.desk, observers=[configure(tracer_provider=provider).observer()],
               clock=SimClock(EPOCH)).resume(st, Decision.approve(st.pending))
    assert [len(s.links) for s in _roots(exporter)] == [0]


def test_a_resumed_segment_links_to_the_last_suspension_of_its_task(memory_tracing):
    provider, exporter = memory_tracing
    tel = configure(tracer_provider=provider)
    r = approve_and_resume([tel.observer()], EPOCH, twice=True)  # the same snapshot resumed twice
    assert r.state.stop == "done"
    first, *resumed = sorted(_roots(exporter), key=lambda s: s.start_time)
    assert len(resumed) == 2
    assert all([lk.context.span_id for lk in s.links] == [first.context.span_id] for s in resumed)


def test_a_task_id_used_again_never_links_to_the_task_that_had_it_before(memory_tracing):
    from agentobs.domain.scenarios import crash_and_recover
    provider, exporter = memory_tracing
    tel = configure(tracer_provider=provider)
    run(G, [tel.observer()], EPOCH)                                # task t1 suspends
    crash_and_recover(SEED000_SPECS[0], "after_tool", observers=[tel.observer()], epoch_ns=EPOCH + 10**12)
    roots = sorted(_roots(exporter), key=lambda s: s.start_time)   # a new t1 crashed, then recovered
    assert len(roots) == 3 and all(not s.links for s in roots)


def test_a_checkpoint_of_schema_1_with_links_still_loads(tmp_path):
    path = tmp_path / "old.db"
    store = SQLiteCheckpointStore(path)
    r = run(G, checkpoints=store, epoch_ns=EPOCH)
    store.close()
    old = {**r.state.to_dict(), "schema_version": 1,
           "links": ["00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"]}
    payload = json.dumps(old, sort_keys=True)
    db = sqlite3.connect(path)
    db.execute("UPDATE checkpoints SET payload = ?, sha256 = ?, schema = 1 WHERE task_id = 't1'",
               (payload, hashlib.sha256(payload.encode()).hexdigest()))
    db.commit()
    db.close()
    ckpt = SQLiteCheckpointStore(path).load("t1")
    assert ckpt.state.to_dict()["schema_version"] == SCHEMA_VERSION == 2
    assert ckpt.state.pending == r.state.pending and ckpt.state.to_dict() == r.state.to_dict()


# -- the call-metrics switch -------------------------------------------------------------------------------------

def _metric_names(call_metrics, memory_tracing) -> set[str]:
    provider, _ = memory_tracing
    reader = InMemoryMetricReader()
    tel = configure(tracer_provider=provider, meter_provider=MeterProvider(metric_readers=[reader]),
                    call_metrics=call_metrics)
    run(SEED000_SPECS[0], [tel.observer()], EPOCH)
    return {m.name for rm in reader.get_metrics_data().resource_metrics for sm in rm.scope_metrics for m in sm.metrics}


def test_call_metrics_collector_records_only_per_run_metrics(memory_tracing):
    per_call = {sc.M_TOKEN_USAGE, sc.M_OPERATION_DURATION, sc.M_TOOL_DURATION}
    per_run = {sc.M_AGENT_DURATION, sc.M_AGENT_INFERENCE_CALLS, sc.M_AGENT_TOOL_CALLS, sc.M_RUNS, sc.M_RUN_TOKENS,
               sc.M_RUN_COST, sc.M_BUDGET_UTILISATION}
    assert _metric_names(None, memory_tracing) == per_call | per_run
    assert _metric_names("collector", memory_tracing) == per_run


def test_call_metrics_is_resolved_argument_then_environment_then_default():
    assert resolve(env={}).call_metrics is CallMetrics.SDK
    assert resolve(env={"AGENTOBS_CALL_METRICS": "Collector"}).call_metrics is CallMetrics.COLLECTOR
    assert resolve(call_metrics="sdk", env={"AGENTOBS_CALL_METRICS": "collector"}).call_metrics is CallMetrics.SDK
    with pytest.raises(ConfigError, match="AGENTOBS_CALL_METRICS='spans' must be one of sdk, collector"):
        resolve(env={"AGENTOBS_CALL_METRICS": "spans"})
    with pytest.raises(ConfigError, match="call_metrics='x'"):
        resolve(call_metrics="x", env={})


# -- cache and reasoning tokens ------------------------------------------------------------------------------------

def test_cache_and_reasoning_tokens_reach_the_chat_span_and_the_budget_counts_input_plus_output(memory_tracing):
    provider, exporter = memory_tracing
    tel = configure(tracer_provider=provider)
    script = [{"type": "final", "outcome": "completed", "text": "done"}]

    class Reporting(FunctionModel):
        def propose(self, request):
            return ModelResponse(reply=script[0], latency_s=1.0, input_tokens=120, output_tokens=40,
                                 cache_read_input_tokens=100, cache_creation_input_tokens=0,
                                 reasoning_output_tokens=25, finish_reason="end_turn", response_model="m-2026")

    state, _, _ = go(Reporting(lambda v, i: None), observers=[tel.observer()], clock=SimClock(EPOCH))
    assert (state.stop, state.tokens, state.input_tokens, state.output_tokens) == ("done", 160, 120, 40)
    chat = next(s for s in exporter.get_finished_spans() if s.name.startswith("chat"))
    a = chat.attributes
    assert (a[sc.USAGE_INPUT_TOKENS], a[sc.USAGE_OUTPUT_TOKENS], a[sc.USAGE_CACHE_READ_INPUT_TOKENS],
            a[sc.USAGE_CACHE_CREATION_INPUT_TOKENS], a[sc.USAGE_REASONING_OUTPUT_TOKENS]) == (120, 40, 100, 0, 25)
    assert a[sc.RESPONSE_FINISH_REASONS] == ("end_turn",) and a[sc.RESPONSE_MODEL] == "m-2026"
    assert a[sc.USAGE_SOURCE] == "reported"


def test_estimated_usage_records_no_cache_or_reasoning_attributes(memory_tracing):
    provider, exporter = memory_tracing
    run(SEED000_SPECS[0], [configure(tracer_provider=provider).observer()], EPOCH)
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert chats and not [s for s in chats if sc.USAGE_CACHE_READ_INPUT_TOKENS in s.attributes
                          or sc.USAGE_REASONING_OUTPUT_TOKENS in s.attributes]


# -- a loop that is not ours --------------------------------------------------------------------------------------

def test_an_instrumented_loop_drives_the_observer_with_the_kernels_events(memory_tracing):
    from agentobs import Budget
    provider, exporter = memory_tracing
    agent = AgentInstrumentation(configure(tracer_provider=provider), clock=iter(range(EPOCH, EPOCH + 10**6)).__next__)
    with agent.task("support-agent", task_id="p1", model="gpt-4.1-mini", provider="openai",
                    budget=Budget(max_steps=4)) as task:
        with task.step() as step:
            with step.chat(max_tokens=300) as call:
                call.done(input_tokens=50, output_tokens=10, reply_type="tool", finish_reason="tool_calls",
                          cache_read_input_tokens=32)
            with step.tool("get_order", {"order_id": "ord_1"}, plan_step="s1") as tool:
                tool.retry(1, "unavailable", 0.1)
                tool.done({"status": "ok"}, attempts=2)
        with task.step() as step:
            step.progress(False)
            task.guard("max_steps", 4, 4)
        task.done(stop="max_steps")
    root = next(s for s in exporter.get_finished_spans() if s.parent is None)
    a = root.attributes
    assert (a[sc.STOP_REASON], a[sc.STATUS], a[sc.STEPS], a[sc.TOOL_CALLS], a[sc.TOKENS], a[sc.MAX_STALLS]) == \
        ("max_steps", "stopped", 2, 2, 60, 1)
    assert a[sc.BUDGET_PREFIX + "max_steps"] == 4 and sc.OUTCOME not in a
    guard = next(e for s in exporter.get_finished_spans() for e in s.events if e.name == sc.EV_GUARD)
    assert dict(guard.attributes)[sc.GUARD_LIMIT] == "max_steps"
    chat = next(s for s in exporter.get_finished_spans() if s.name.startswith("chat"))
    assert chat.attributes[sc.USAGE_CACHE_READ_INPUT_TOKENS] == 32
