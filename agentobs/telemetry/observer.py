"""OpenTelemetry spans and metrics from kernel events (an Observer; the loop does not know about it).

Span tree of one task segment::

    invoke_agent {agent}            INTERNAL  (a resumed segment is a new trace, linked to the previous one)
    ├── agentobs.step               INTERNAL  one per loop iteration
    │   ├── chat {model}            CLIENT
    │   └── execute_tool {tool}     INTERNAL
    └── execute_tool {tool}         INTERNAL  the held call executed on resume (agentobs.tool.held = true)

Span times come from the kernel's clock, so simulated runs have the durations they describe.
While a model or a tool call runs, its span is the current span (OpenTelemetry context), so spans that the
model client or the tool make themselves (HTTP, database instrumentations) nest under ``chat`` and
``execute_tool``. An exception escaping the run (RunAborted) ends every open span with ERROR status.
No text the model wrote is recorded unless content capture is on (then redacted): plan step ids, plan problems,
codes and names from outside code get the stand-ins of ``agentobs.telemetry.labels`` in every mode.
Uses only the OpenTelemetry API: the SDK is configured by ``agentobs.telemetry.setup``.
"""
from __future__ import annotations

import json
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.metrics import Meter, NoOpMeter
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, Tracer

from ..kernel import events as ev
from ..kernel.stops import SUSPENDING, StopReason
from . import labels
from . import semconv as sc
from .content import Capture, Redactor

_OK_RESULTS = frozenset({"ok", "needs_approval"})


# (attribute on Instruments, metric name, unit, description, advisory buckets) of every histogram we record
_HISTOGRAMS = (
    ("token_usage", sc.M_TOKEN_USAGE, "{token}", "Tokens used per model call", sc.TOKEN_BUCKETS),
    ("op_duration", sc.M_OPERATION_DURATION, "s", "Model call duration", sc.DURATION_BUCKETS),
    ("agent_duration", sc.M_AGENT_DURATION, "s", "Agent run duration (active time)", sc.AGENT_DURATION_BUCKETS),
    ("inference_calls", sc.M_AGENT_INFERENCE_CALLS, "{inference_call}", "Model calls per agent run",
     sc.CALLS_BUCKETS),
    ("tool_calls", sc.M_AGENT_TOOL_CALLS, "{tool_call}", "Tool calls per agent run", sc.CALLS_BUCKETS),
    ("tool_duration", sc.M_TOOL_DURATION, "s", "Tool call duration", sc.DURATION_BUCKETS),
    ("run_tokens", sc.M_RUN_TOKENS, "{token}", "Tokens per agent run", sc.TOKEN_BUCKETS),
    ("run_cost", sc.M_RUN_COST, "{USD}", "Dollars per agent run", sc.COST_BUCKETS),
    ("utilisation", sc.M_BUDGET_UTILISATION, "1", "Share of each budget limit a run consumed",
     sc.UTILISATION_BUCKETS),
)


class Instruments:
    """The metric instruments of the contract, created once per meter."""

    def __init__(self, meter: Meter):
        for attr, name, unit, description, buckets in _HISTOGRAMS:
            setattr(self, attr, meter.create_histogram(name, unit, description,
                                                       explicit_bucket_boundaries_advisory=buckets))
        self.runs = meter.create_counter(sc.M_RUNS, "{run}", "Agent runs by stop reason")


def traceparent(ctx: SpanContext) -> str:
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


def parse_traceparent(value: str) -> SpanContext | None:
    parts = value.split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or len(parts[2]) != 16:
        return None
    try:
        return SpanContext(int(parts[1], 16), int(parts[2], 16), is_remote=True, trace_flags=TraceFlags(int(parts[3], 16)))
    except ValueError:
        return None


class OTelObserver:
    """Turns kernel events into spans, span events and metrics. One instance per concurrent run."""

    def __init__(self, tracer: Tracer, meter: Meter | None = None, *, capture: Capture = Capture.NO_CONTENT,
                 redactor: Redactor | None = None, instruments: Instruments | None = None):
        self.tracer = tracer
        self.inst = instruments or Instruments(meter or NoOpMeter("agentobs"))
        self.capture = capture
        self.redactor = redactor or Redactor()
        self._root: Any = None
        self._root_ctx: Any = None
        self._step_ctx: Any = None
        self._step: Any = None
        self._chat: Any = None
        self._tool: Any = None
        self._token: Any = None            # the attached context of the open chat or tool span
        self._run: dict[str, Any] = {}

    # -- the Observer interface ----------------------------------------------------------------

    def notify(self, e: ev.Event) -> None:
        handler = _HANDLERS.get(type(e))
        if handler is not None:
            handler(self, e)

    def trace_context(self) -> str | None:
        """W3C traceparent of the current (or last) task span, for linking a resumed segment."""
        span = self._root or self._run.get("last_root")
        return traceparent(span.get_span_context()) if span is not None else None

    # -- the current span while foreign code runs ---------------------------------------------

    def _attach(self, span: Any) -> None:
        self._token = otel_context.attach(trace.set_span_in_context(span))

    def _detach(self) -> None:
        token = self._token
        if token is not None:
            self._token = None
            otel_context.detach(token)

    # -- handlers ------------------------------------------------------------------------------

    def _run_started(self, e: ev.RunStarted) -> None:
        st, b = e.state, e.budget
        attrs: dict[str, Any] = {
            sc.OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.AGENT_NAME: st.agent_name, sc.REQUEST_MODEL: e.model,
            sc.PROVIDER_NAME: e.provider, sc.TASK_ID: st.task_id, sc.RESUMED: e.resumed,
        }
        if st.conversation_id:
            attrs[sc.CONVERSATION_ID] = st.conversation_id
        for k in sc.BUDGET_LIMITS if b is not None else ():
            v = getattr(b, k)
            if v is not None:
                key = sc.BUDGET_PREFIX + k
                attrs[key] = float(v) if sc.ATTRIBUTE_TYPES[key] == "double" else int(v)
        links = []
        if e.resumed and st.links:
            prev = parse_traceparent(st.links[-1])
            if prev is not None:
                links.append(Link(prev, {"agentobs.link": "resumed_from"}))
        self._root = self.tracer.start_span(f"{sc.OP_INVOKE_AGENT} {st.agent_name}", kind=SpanKind.INTERNAL,
                                            attributes=attrs, links=links, start_time=e.at_ns)
        chat = {sc.OPERATION_NAME: sc.OP_CHAT, sc.PROVIDER_NAME: e.provider, sc.REQUEST_MODEL: e.model}
        self._run = {"agent": st.agent_name, "model": e.model, "provider": e.provider, "start_ns": e.at_ns,
                     "state": st,
                     "tin": 0, "tout": 0, "chats": 0, "tools": 0, "budget": b, "elapsed0": st.elapsed,
                     # metric attribute sets, built once per run (low cardinality by construction)
                     "m_in": {**chat, sc.TOKEN_TYPE: "input"}, "m_out": {**chat, sc.TOKEN_TYPE: "output"},
                     "m_chat": chat, "m_agent": {sc.AGENT_NAME: st.agent_name}, "m_tools": {}}
        self._root_ctx = trace.set_span_in_context(self._root)
        if e.resumed:
            self._root.add_event(sc.EV_RESUME, {sc.STEP_INDEX: st.step}, timestamp=e.at_ns)

    def _step_started(self, e: ev.StepStarted) -> None:
        self._step = self.tracer.start_span(sc.STEP_SPAN, context=self._root_ctx, kind=SpanKind.INTERNAL,
                                            attributes={sc.STEP_INDEX: e.index}, start_time=e.at_ns)
        self._step_ctx = trace.set_span_in_context(self._step)
        self._run["reply_type"] = None

    def _model_called(self, e: ev.ModelCalled) -> None:
        ctx = self._step_ctx if self._step is not None else self._root_ctx
        attrs = {sc.OPERATION_NAME: sc.OP_CHAT, sc.PROVIDER_NAME: e.provider, sc.REQUEST_MODEL: e.model,
                 sc.REQUEST_MAX_TOKENS: e.max_output_tokens}
        if self.capture.on_span:
            attrs[sc.INPUT_MESSAGES] = self._input_messages(e.view)
        self._chat = self.tracer.start_span(f"{sc.OP_CHAT} {e.model}", context=ctx, kind=SpanKind.CLIENT,
                                            attributes=attrs, start_time=e.at_ns)
        self._attach(self._chat)
        self._run["chat_view"] = e.view if self.capture.on_event else None
        self._run["chat_start"] = e.at_ns

    def _model_returned(self, e: ev.ModelReturned) -> None:
        self._detach()
        span = self._chat
        if span is None:
            return
        attrs: dict[str, Any] = {sc.USAGE_INPUT_TOKENS: e.input_tokens, sc.USAGE_OUTPUT_TOKENS: e.output_tokens,
                                 sc.RESPONSE_FINISH_REASONS: (e.finish_reason,), sc.USAGE_SOURCE: e.usage_source,
                                 sc.RESPONSE_MODEL: e.response_model or e.model}
        if e.cost_usd is not None:
            attrs[sc.CALL_COST_USD] = e.cost_usd
        error = labels.identifier(e.error, self.redactor) if e.error else None
        if error:
            attrs[sc.REPLY_ERROR] = error
            attrs[sc.ERROR_TYPE] = error
        if self.capture.any and e.reply is not None:
            out = self._output_messages(e.reply, e.finish_reason)
            if self.capture.on_span:
                attrs[sc.OUTPUT_MESSAGES] = out
            if self.capture.on_event:
                details = {sc.OUTPUT_MESSAGES: out}
                if self._run.get("chat_view") is not None:
                    details[sc.INPUT_MESSAGES] = self._input_messages(self._run["chat_view"])
                span.add_event(sc.EVENT_INFERENCE_DETAILS, details, timestamp=e.at_ns)
        span.set_attributes(attrs)
        if error:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=e.at_ns)
        self._chat = None
        run = self._run
        run["tin"] += e.input_tokens
        run["tout"] += e.output_tokens
        run["chats"] += 1
        run["reply_type"] = e.reply_type
        self.inst.token_usage.record(e.input_tokens, run["m_in"])
        self.inst.token_usage.record(e.output_tokens, run["m_out"])
        self.inst.op_duration.record((e.at_ns - run["chat_start"]) / 1e9,
                                     {**run["m_chat"], sc.ERROR_TYPE: error} if error else run["m_chat"])

    def _tool_called(self, e: ev.ToolCalled) -> None:
        parent = self._step or self._root       # a held call executed on resume has no step
        name = labels.tool_name(e.name, self.redactor)
        state = self._run.get("state")
        step = labels.plan_step(e.plan_step, getattr(state, "plan", ())) if e.plan_step else None
        key = labels.call_id(e.key, getattr(state, "task_id", ""), e.plan_step, step, self.redactor)
        attrs: dict[str, Any] = {sc.OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.TOOL_NAME: name,
                                 sc.TOOL_CALL_ID: key, sc.TOOL_TYPE: "function", sc.TOOL_ARGS_DIGEST: e.digest,
                                 sc.TOOL_EFFECT: e.effect}
        if step:
            attrs[sc.TOOL_PLAN_STEP] = step
        if e.held:
            attrs[sc.TOOL_HELD] = True
        if self.capture.any:
            args = self.redactor.json(e.args)
            if self.capture.on_span:
                attrs[sc.TOOL_CALL_ARGUMENTS] = args
            self._run["tool_args"] = args
        ctx = self._step_ctx if parent is self._step else self._root_ctx
        self._tool = self.tracer.start_span(f"{sc.OP_EXECUTE_TOOL} {name}", context=ctx, kind=SpanKind.INTERNAL,
                                            attributes=attrs, start_time=e.at_ns)
        self._attach(self._tool)
        self._run["tool_start"] = e.at_ns
        self._run["tool_name"] = name

    def _tool_retry(self, e: ev.ToolRetry) -> None:
        if self._tool is not None:
            self._tool.add_event(sc.EV_RETRY, {sc.RETRY_ATTEMPT: e.attempt,
                                               sc.ERROR_TYPE: labels.identifier(e.code, self.redactor),
                                               sc.RETRY_BACKOFF_S: e.backoff_s}, timestamp=e.at_ns)

    def _tool_returned(self, e: ev.ToolReturned) -> None:
        self._detach()
        span = self._tool
        if span is None:
            return
        status = labels.identifier(e.status, self.redactor)
        attrs: dict[str, Any] = {sc.TOOL_RESULT_STATUS: status, sc.TOOL_REPLAYED: e.replayed,
                                 sc.TOOL_ATTEMPTS: e.attempts}
        failed = status not in _OK_RESULTS
        if failed:
            attrs[sc.ERROR_TYPE] = status
        if self.capture.any:
            result = self.redactor.json(e.result)
            if self.capture.on_span:
                attrs[sc.TOOL_CALL_RESULT] = result
            if self.capture.on_event:
                span.add_event(sc.EVENT_INFERENCE_DETAILS, {sc.TOOL_CALL_ARGUMENTS: self._run.get("tool_args", ""),
                                                            sc.TOOL_CALL_RESULT: result}, timestamp=e.at_ns)
        span.set_attributes(attrs)
        if failed:
            span.set_status(Status(StatusCode.ERROR, status))
        span.end(end_time=e.at_ns)
        self._tool = None
        self._run["tools"] += e.attempts
        cache = self._run["m_tools"]
        name = self._run.get("tool_name") or labels.tool_name(e.name, self.redactor)
        metric = cache.get((name, status if failed else None))
        if metric is None:
            metric = {sc.TOOL_NAME: name, sc.AGENT_NAME: self._run["agent"]}
            if failed:
                metric[sc.ERROR_TYPE] = status
            cache[(name, status if failed else None)] = metric
        self.inst.tool_duration.record((e.at_ns - self._run["tool_start"]) / 1e9, metric)

    def _plan_rejected(self, e: ev.PlanRejected) -> None:
        codes = labels.problem_codes(e.problems)      # closed codes: the problems' text quotes the model
        (self._step or self._root).add_event(sc.EV_PLAN_REJECTED, {sc.PLAN_PROBLEMS: codes}, timestamp=e.at_ns)

    def _plan_accepted(self, e: ev.PlanAccepted) -> None:
        (self._step or self._root).add_event(sc.EV_PLAN_ACCEPTED, {sc.PLAN_VERSION: e.version,
                                                                   sc.PLAN_STEPS: e.steps}, timestamp=e.at_ns)

    def _final_refused(self, e: ev.FinalRefused) -> None:
        (self._step or self._root).add_event(sc.EV_FINAL_REFUSED, {sc.PLAN_OPEN_STEPS: len(e.open_steps)},
                                             timestamp=e.at_ns)

    def _guard(self, e: ev.GuardFired) -> None:
        (self._step or self._root).add_event(sc.EV_GUARD, {sc.GUARD_LIMIT: e.limit,
                                                           sc.GUARD_LIMIT_VALUE: float(e.limit_value),
                                                           sc.GUARD_OBSERVED: float(e.observed)}, timestamp=e.at_ns)

    def _approval_requested(self, e: ev.ApprovalRequested) -> None:
        (self._tool or self._step or self._root).add_event(
            sc.EV_APPROVAL_REQUESTED, {sc.TOOL_NAME: labels.tool_name(e.name, self.redactor),
                                       sc.TOOL_ARGS_DIGEST: e.digest}, timestamp=e.at_ns)

    def _approval_decided(self, e: ev.ApprovalDecided) -> None:
        name = sc.EV_APPROVAL_GRANTED if e.approved else sc.EV_APPROVAL_DENIED
        (self._tool or self._step or self._root).add_event(
            name, {sc.TOOL_NAME: labels.tool_name(e.name, self.redactor), sc.TOOL_ARGS_DIGEST: e.digest,
                   sc.APPROVAL_BY: self.redactor.text(e.by)}, timestamp=e.at_ns)

    def _checkpoint(self, e: ev.CheckpointSaved) -> None:
        target = self._step or self._root
        if target is not None:
            target.add_event(sc.EV_CHECKPOINT, {sc.CHECKPOINT_VERSION: e.version}, timestamp=e.at_ns)

    def _step_finished(self, e: ev.StepFinished) -> None:
        span = self._step
        if span is None:
            return
        attrs = {sc.STEP_PROGRESS: e.progress, sc.STEP_STALLS: e.stalls, sc.STEP_OUTCOME: e.outcome}
        if self._run.get("reply_type"):
            attrs[sc.STEP_REPLY_TYPE] = self._run["reply_type"]
        span.set_attributes(attrs)
        span.end(end_time=e.at_ns)
        self._step = None

    def _run_finished(self, e: ev.RunFinished) -> None:
        self._detach()
        span, st, run = self._root, e.state, self._run
        if span is None:
            return
        for dangling in (self._chat, self._tool, self._step):     # a guard can end a run mid-step
            if dangling is not None:
                dangling.end(end_time=e.at_ns)
        self._chat = self._tool = self._step = None
        stop = StopReason(st.stop)
        attrs: dict[str, Any] = {
            sc.STOP_REASON: st.stop, sc.STATUS: st.status, sc.STEPS: st.step, sc.TOOL_CALLS: st.tool_calls,
            sc.TOKENS: st.tokens, sc.COST_USD: float(st.cost_usd), sc.ELAPSED_S: float(st.elapsed),
            sc.USAGE_INPUT_TOKENS: run["tin"], sc.USAGE_OUTPUT_TOKENS: run["tout"],
            sc.PLAN_STEPS: len(st.plan), sc.PLAN_OPEN_STEPS: len(st.open_steps()), sc.PLAN_VERSION: st.plan_version,
            sc.UNKNOWN_WRITES: len(st.unknown_writes), sc.MAX_STALLS: st.max_stalls_seen,
            sc.UNPRICED_CALLS: st.unpriced_calls, sc.MEMORY_NOTES: len(st.memory),
        }
        if st.outcome:
            attrs[sc.OUTCOME] = st.outcome
        span.set_attributes(attrs)
        failed = stop is not StopReason.DONE and stop not in SUSPENDING
        if failed:
            span.set_attribute(sc.ERROR_TYPE, st.stop)
            span.set_status(Status(StatusCode.ERROR, st.stop))
        span.end(end_time=e.at_ns)
        run["last_root"] = span
        self._root = None
        agent = run["m_agent"]
        dur_attrs = {**agent, sc.ERROR_TYPE: st.stop} if failed else agent
        self.inst.agent_duration.record(max(0.0, st.elapsed - run["elapsed0"]), dur_attrs)
        self.inst.inference_calls.record(run["chats"], agent)
        self.inst.tool_calls.record(run["tools"], agent)
        by_stop = {**agent, sc.STOP_REASON: st.stop}
        self.inst.runs.add(1, by_stop)
        self.inst.run_tokens.record(st.tokens, by_stop)
        self.inst.run_cost.record(float(st.cost_usd), by_stop)
        b = run["budget"]
        if b is None:
            return
        for limit, used, cap in (("max_steps", st.step, b.max_steps), ("max_tool_calls", st.tool_calls,
                                                                         b.max_tool_calls),
                                 ("max_tokens", st.tokens, b.max_tokens), ("deadline_s", st.elapsed, b.deadline_s),
                                 ("max_usd", st.cost_usd, b.max_usd)):
            if cap:
                self.inst.utilisation.record(min(used / cap, 1.0), {**agent, sc.BUDGET_LIMIT_ATTR: limit})

    def _run_aborted(self, e: ev.RunAborted) -> None:
        """An exception escaped the run: every open span ends with ERROR and the exception's type; the run is
        counted in ``agentobs.runs`` and ``gen_ai.invoke_agent.duration`` with that type as ``error.type``."""
        self._detach()
        error = labels.identifier(e.error, self.redactor)
        status = Status(StatusCode.ERROR, f"run aborted: {error}")
        for span in (self._chat, self._tool, self._step, self._root):
            if span is not None:
                span.set_attribute(sc.ERROR_TYPE, error)
                span.set_status(status)
                if span is self._root:
                    span.set_attribute(sc.STATUS, "aborted")
                span.end(end_time=e.at_ns)
        run, root = self._run, self._root
        self._chat = self._tool = self._step = self._root = None
        if root is None:
            return
        run["last_root"] = root
        # counted like a finished run, with the exception's type where a stop reason would be
        attrs = {**run["m_agent"], sc.ERROR_TYPE: error}
        self.inst.agent_duration.record(max(0.0, e.state.elapsed - run["elapsed0"]), attrs)
        self.inst.runs.add(1, attrs)

    # -- content -------------------------------------------------------------------------------

    def _input_messages(self, view: str) -> str:
        return json.dumps([{"role": "user", "parts": [{"type": "text", "content": self.redactor.json(view)}]}])

    def _output_messages(self, reply: Any, finish: str) -> str:
        if isinstance(reply, dict) and reply.get("type") == "tool":
            part = {"type": "tool_call", "name": self.redactor.text(str(reply.get("name"))),
                    "arguments": json.loads(self.redactor.json(reply.get("args", {})))}
        else:
            part = {"type": "text", "content": self.redactor.json(reply)}
        return json.dumps([{"role": "assistant", "parts": [part], "finish_reason": finish}])


_HANDLERS = {
    ev.RunStarted: OTelObserver._run_started, ev.StepStarted: OTelObserver._step_started,
    ev.ModelCalled: OTelObserver._model_called, ev.ModelReturned: OTelObserver._model_returned,
    ev.ToolCalled: OTelObserver._tool_called, ev.ToolRetry: OTelObserver._tool_retry,
    ev.ToolReturned: OTelObserver._tool_returned, ev.PlanRejected: OTelObserver._plan_rejected,
    ev.PlanAccepted: OTelObserver._plan_accepted, ev.GuardFired: OTelObserver._guard,
    ev.FinalRefused: OTelObserver._final_refused,
    ev.ApprovalRequested: OTelObserver._approval_requested, ev.ApprovalDecided: OTelObserver._approval_decided,
    ev.CheckpointSaved: OTelObserver._checkpoint, ev.StepFinished: OTelObserver._step_finished,
    ev.RunFinished: OTelObserver._run_finished, ev.RunAborted: OTelObserver._run_aborted,
}
