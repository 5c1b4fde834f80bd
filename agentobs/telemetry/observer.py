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
The observer reads nothing but the events (values and snapshots); what it keeps between events is its own
per-run state (``_RunSpans``). Uses only the OpenTelemetry API: the SDK is configured by ``agentobs.telemetry.setup``.

One observer serves every run, concurrent or not. A run's events arrive in the run's own context (its thread,
its asyncio task), so the run in progress is found in a context variable, never in the observer's fields:
``RunStarted`` makes the run current in that context (on top of any run already current there, e.g. an agent
run by a tool of another run) and ``RunFinished``/``RunAborted`` remove it. The ``invoke_agent`` span's parent
is whatever span is current where the run starts (a request span), and the spans attached while a model or a
tool runs are attached and detached in that same context.
"""
from __future__ import annotations

import json
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.metrics import Meter, NoOpMeter
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode, Tracer

from ..contract import events as ev
from ..contract import semconv as sc
from ..contract.vocabulary import RunStatus, StopReason, ToolStatus
from . import labels
from .content import Capture, Redactor
from .instruments import AgentAttrs, Instruments, ModelAttrs, agent_attrs, model_attrs, tool_span_name
from .links import ResumeLinks, format_traceparent, parse_traceparent

_OK_RESULTS = frozenset({ToolStatus.OK.value, ToolStatus.NEEDS_APPROVAL.value})
_DONE, _SUSPENDED, _ABORTED = StopReason.DONE, RunStatus.SUSPENDED, RunStatus.ABORTED
_attach, _detach, _in_context = otel_context.attach, otel_context.detach, trace.set_span_in_context
# (any, on_span, on_event) of each capture mode
_CAPTURE_FLAGS = {c: (c.any, c.on_span, c.on_event) for c in Capture}
_KIND = {"INTERNAL": SpanKind.INTERNAL, "CLIENT": SpanKind.CLIENT}
_AGENT_KIND, _STEP_KIND = _KIND[sc.KIND_INVOKE_AGENT], _KIND[sc.KIND_STEP]
_CHAT_KIND, _TOOL_KIND = _KIND[sc.KIND_CHAT], _KIND[sc.KIND_EXECUTE_TOOL]
# (budget field, span attribute, recorded as a double) of every limit on the invoke_agent span
_BUDGET_ATTRS = tuple((k, sc.BUDGET_PREFIX + k, sc.ATTRIBUTE_TYPES[sc.BUDGET_PREFIX + k] == "double")
                      for k in sc.BUDGET_LIMITS)


@dataclass(kw_only=True, slots=True)
class _RunSpans:
    """What the observer keeps about one run segment in progress, between its events: its open spans and totals."""
    root: Span
    root_ctx: Any
    task_id: str
    agent: str
    elapsed0: float                                  # active time, tokens and dollars before this segment
    tokens0: int
    cost0: float
    limits: ev.Limits | None
    plan_ids: tuple[str, ...]                        # the plan in force (for the step labels)
    m_model: ModelAttrs                             # span and metric attribute sets, shared
    m_agent: AgentAttrs
    tin: int = 0                                     # segment totals
    tout: int = 0
    chats: int = 0
    tools: int = 0
    reply_type: str | None = None                    # of the step in progress
    chat_view: str | None = None                     # the open chat's view, when content goes to events
    chat_input: str | None = None                    # ... and its input messages, redacted once for the span
    chat_start: int = 0
    tool_start: int = 0
    tool_name: str = ""
    tool_args: str = ""
    step: Span | None = None
    step_ctx: Any = None
    chat: Span | None = None
    tool: Span | None = None
    token: Any = None                                # the attached context of the open chat or tool span


class _Frame:
    """A run in progress in this context, for one observer; ``parent``: the runs current before it. Never changed
    once made (contexts copied from this one share it)."""
    __slots__ = ("observer", "parent", "run")

    def __init__(self, observer: OTelObserver, run: _RunSpans, parent: _Frame | None):
        self.observer, self.run, self.parent = observer, run, parent


# the runs in progress in this context (thread, asyncio task), innermost first
_FRAMES: ContextVar[_Frame | None] = ContextVar("agentobs_observer_runs", default=None)
# the last runs ended in this context: (observer, its root span context), the most recent first, a few at most
_LAST: ContextVar[tuple[tuple[weakref.ref[OTelObserver], SpanContext], ...]] = ContextVar(
    "agentobs_observer_last_runs", default=())
_LAST_KEPT = 4
_BY_TASK_KEPT = 10_000


class OTelObserver:
    """Turns kernel events into spans, span events and metrics. One instance serves any number of runs, one after
    another or at once (threads, asyncio tasks): what it keeps of a run is the run's (see the module's docstring).

    ``call_metrics=False`` records only the per-run metrics and leaves the per-call ones (token usage, model
    and tool call durations) to the collector's span metrics (``Telemetry``'s ``call_metrics="collector"``).
    ``links`` is shared by the observers of one ``Telemetry``: a resumed run links to the segment it continues;
    ``resumed_from`` (a traceparent) names that segment explicitly, for a resume in another process: every
    resumed run of this observer links to it, so give that resume an observer of its own.
    """

    def __init__(self, tracer: Tracer, meter: Meter | None = None, *, capture: Capture = Capture.NO_CONTENT,
                 redactor: Redactor | None = None, instruments: Instruments | None = None,
                 links: ResumeLinks | None = None, resumed_from: str | None = None, call_metrics: bool = True):
        self.tracer = tracer
        self.inst = instruments or Instruments(meter or NoOpMeter("agentobs"))
        self.capture = capture                          # and its three flags, read once per event below
        self.redactor = redactor or Redactor()
        self.links = links if links is not None else ResumeLinks()
        self.resumed_from = parse_traceparent(resumed_from) if resumed_from else None
        self.call_metrics = call_metrics
        self._last: SpanContext | None = None          # the last run this observer ended, anywhere
        self._by_task: OrderedDict[str, SpanContext] = OrderedDict()    # the last segment of each task
        self._lock = threading.Lock()

    @property
    def capture(self) -> Capture:
        return self._capture

    @capture.setter
    def capture(self, capture: Capture) -> None:
        self._any, self._on_span, self._on_event = _CAPTURE_FLAGS[capture]
        self._capture = capture

    # -- the Observer interface ----------------------------------------------------------------

    def notify(self, e: ev.Event) -> None:
        handler = _HANDLERS.get(type(e))
        if handler is None:
            return
        if handler is _START:
            self._run_started(e)  # type: ignore[arg-type]
            return
        frame = _FRAMES.get()
        while frame is not None and frame.observer is not self:
            frame = frame.parent
        if frame is not None:
            handler(self, frame.run, e)

    def trace_context(self, task_id: str | None = None) -> str | None:
        """W3C traceparent of a task span: where a resume in another process links to
        (``Telemetry.observer(resumed_from=...)``), or a trace id to show. Without ``task_id``: the run in
        progress in this thread or task, else the last one that ended in it, else the last one this observer
        ended anywhere (which, with concurrent runs, may be another's: pass ``task_id``). With ``task_id``: the
        last segment of that task this observer ended."""
        ctx = self._span_context(task_id)
        return format_traceparent(ctx) if ctx is not None else None

    def trace_id(self, task_id: str | None = None) -> str | None:
        """The trace id (32 hex digits) of the task span ``trace_context`` names."""
        ctx = self._span_context(task_id)
        return format(ctx.trace_id, "032x") if ctx is not None else None

    def _span_context(self, task_id: str | None) -> SpanContext | None:
        if task_id is not None:
            with self._lock:
                return self._by_task.get(task_id)
        run = self._current()
        if run is not None:
            return run.root.get_span_context()
        for ref, ctx in _LAST.get():
            if ref() is self:
                return ctx
        return self._last

    # -- the runs in progress in this context ---------------------------------------------------

    def _current(self) -> _RunSpans | None:
        frame = _FRAMES.get()
        while frame is not None and frame.observer is not self:
            frame = frame.parent
        return frame.run if frame is not None else None

    def _push(self, run: _RunSpans) -> None:
        _FRAMES.set(_Frame(self, run, _FRAMES.get()))

    def _pop(self, run: _RunSpans) -> None:
        """Removes ``run`` from this context's runs (the others stay, whatever their order) and keeps its span
        context as the last run of this observer here."""
        frame = _FRAMES.get()
        if frame is not None and frame.run is run:          # the innermost run: the usual case
            _FRAMES.set(frame.parent)
        else:
            kept: list[_Frame] = []
            while frame is not None and frame.run is not run:
                kept.append(frame)
                frame = frame.parent
            if frame is None:
                return
            rest = frame.parent
            for f in reversed(kept):
                rest = _Frame(f.observer, f.run, rest)
            _FRAMES.set(rest)
        ctx = run.root.get_span_context()
        kept_last = [(weakref.ref(self), ctx)]
        for x in _LAST.get():                  # the others' runs, less those of observers gone
            other = x[0]()
            if other is not None and other is not self:
                kept_last.append(x)
        _LAST.set(tuple(kept_last[:_LAST_KEPT]))
        self._last = ctx
        with self._lock:
            self._by_task[run.task_id] = ctx
            self._by_task.move_to_end(run.task_id)
            if len(self._by_task) > _BY_TASK_KEPT:
                self._by_task.popitem(last=False)

    # -- the current span while foreign code runs ---------------------------------------------

    @staticmethod
    def _detach(run: _RunSpans) -> None:
        token = run.token
        if token is not None:
            run.token = None
            otel_context.detach(token)

    @staticmethod
    def _innermost(run: _RunSpans) -> Span:
        return run.step or run.root

    # -- handlers ------------------------------------------------------------------------------

    def _run_started(self, e: ev.RunStarted) -> None:
        attrs: dict[str, Any] = {
            sc.OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.AGENT_NAME: e.agent_name, sc.REQUEST_MODEL: e.model,
            sc.PROVIDER_NAME: e.provider, sc.TASK_ID: e.task_id, sc.RESUMED: e.resumed,
        }
        if e.conversation_id:
            attrs[sc.CONVERSATION_ID] = e.conversation_id
        limits = e.limits
        if limits is not None:
            for k, key, double in _BUDGET_ATTRS:
                v = getattr(limits, k)
                if v is not None:
                    attrs[key] = float(v) if double else int(v)
        links = []
        if e.resumed:
            prev: SpanContext | None = self.resumed_from or self.links.previous(e.task_id)
            if prev is not None:
                links.append(Link(prev, {sc.LINK_KIND: sc.LINK_RESUMED_FROM}))
        else:
            self.links.started(e.task_id)
        # no context given: the parent is the span current where the run starts (a request span), if any
        root = self.tracer.start_span(f"{sc.OP_INVOKE_AGENT} {e.agent_name}", kind=_AGENT_KIND,
                                      attributes=attrs, links=links, start_time=e.at_ns)
        self._push(_RunSpans(root=root, root_ctx=trace.set_span_in_context(root), task_id=e.task_id, agent=e.agent_name,
                        elapsed0=e.elapsed_s, tokens0=e.tokens, cost0=e.cost_usd, limits=limits,
                        plan_ids=e.plan_step_ids,
                        m_model=model_attrs(e.provider, e.model), m_agent=agent_attrs(e.agent_name)))
        if e.resumed:
            root.add_event(sc.EV_RESUME, {sc.STEP_INDEX: e.step}, timestamp=e.at_ns)

    def _step_started(self, run: _RunSpans, e: ev.StepStarted) -> None:
        run.step = step = self.tracer.start_span(sc.STEP_SPAN, context=run.root_ctx, kind=_STEP_KIND,
                                                 attributes={sc.STEP_INDEX: e.index}, start_time=e.at_ns)
        run.step_ctx = trace.set_span_in_context(step)
        run.reply_type = None

    def _model_called(self, run: _RunSpans, e: ev.ModelCalled) -> None:
        ctx = run.step_ctx if run.step is not None else run.root_ctx
        model = run.m_model
        if model.model != e.model or model.provider != e.provider:     # not the run's model: its own attributes
            model = model_attrs(e.provider, e.model)
        attrs = model.start(e.max_output_tokens)
        content = self._any and run.root.is_recording()     # a run sampled out records no content: none is redacted
        run.chat_input = self._input_messages(e.view) if content and self._on_span else None
        if run.chat_input is not None:
            attrs = {**attrs, sc.INPUT_MESSAGES: run.chat_input}
        run.chat = chat = self.tracer.start_span(model.name, context=ctx, kind=_CHAT_KIND,
                                                 attributes=attrs, start_time=e.at_ns)
        run.token = _attach(_in_context(chat))        # current while the model runs
        run.chat_view = e.view if content and self._on_event else None
        run.chat_start = e.at_ns

    def _model_returned(self, run: _RunSpans, e: ev.ModelReturned) -> None:
        token = run.token
        if token is not None:
            run.token = None
            _detach(token)
        span = run.chat
        if span is None:
            return
        u = e.usage
        attrs: dict[str, Any] = {sc.USAGE_INPUT_TOKENS: u.input_tokens, sc.USAGE_OUTPUT_TOKENS: u.output_tokens,
                                 sc.RESPONSE_FINISH_REASONS: (e.finish_reason,), sc.USAGE_SOURCE: u.source,
                                 sc.RESPONSE_MODEL: e.response_model or e.model}
        if u.cache_read_input_tokens is not None:
            attrs[sc.USAGE_CACHE_READ_INPUT_TOKENS] = u.cache_read_input_tokens
        if u.cache_creation_input_tokens is not None:
            attrs[sc.USAGE_CACHE_CREATION_INPUT_TOKENS] = u.cache_creation_input_tokens
        if u.reasoning_output_tokens is not None:
            attrs[sc.USAGE_REASONING_OUTPUT_TOKENS] = u.reasoning_output_tokens
        if e.cost_usd is not None:
            attrs[sc.CALL_COST_USD] = e.cost_usd
        error = labels.identifier(e.error, self.redactor) if e.error else None
        if error:
            attrs[sc.REPLY_ERROR] = error
            attrs[sc.ERROR_TYPE] = error
        if self._any and e.reply is not None and span.is_recording():
            out = self._output_messages(e.reply, e.finish_reason)
            if self._on_span:
                attrs[sc.OUTPUT_MESSAGES] = out
            if self._on_event:
                details = {sc.OUTPUT_MESSAGES: out}
                if run.chat_view is not None:
                    details[sc.INPUT_MESSAGES] = run.chat_input or self._input_messages(run.chat_view)
                span.add_event(sc.EVENT_INFERENCE_DETAILS, details, timestamp=e.at_ns)
        run.chat_view = run.chat_input = None
        span.set_attributes(attrs)
        if error:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=e.at_ns)
        run.chat = None
        run.tin += u.input_tokens
        run.tout += u.output_tokens
        run.chats += 1
        run.reply_type = e.reply_type
        if self.call_metrics:
            m = run.m_model
            self.inst.token_usage.record(u.input_tokens, m.m_in)
            self.inst.token_usage.record(u.output_tokens, m.m_out)
            self.inst.op_duration.record((e.at_ns - run.chat_start) / 1e9,
                                         {**m.m_chat, sc.ERROR_TYPE: error} if error else m.m_chat)

    def _tool_called(self, run: _RunSpans, e: ev.ToolCalled) -> None:
        name = labels.tool_name(e.name, self.redactor)
        step = labels.plan_step(e.plan_step, run.plan_ids) if e.plan_step else None
        key = labels.call_id(e.key, run.task_id, e.plan_step, step, self.redactor)
        attrs: dict[str, Any] = {sc.OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.TOOL_NAME: name, sc.TOOL_CALL_ID: key,
                                 sc.TOOL_TYPE: sc.TOOL_TYPE_FUNCTION, sc.TOOL_ARGS_DIGEST: e.digest,
                                 sc.TOOL_EFFECT: e.effect}
        if step:
            attrs[sc.TOOL_PLAN_STEP] = step
        if e.held:
            attrs[sc.TOOL_HELD] = True
        if self._any and run.root.is_recording():          # a run sampled out records no content
            args = self.redactor.json(e.args)
            if self._on_span:
                attrs[sc.TOOL_CALL_ARGUMENTS] = args
            run.tool_args = args
        ctx = run.step_ctx if run.step is not None else run.root_ctx    # a held call executed on resume: no step
        run.tool = tool = self.tracer.start_span(tool_span_name(name), context=ctx, kind=_TOOL_KIND,
                                                 attributes=attrs, start_time=e.at_ns)
        run.token = _attach(_in_context(tool))        # current while the tool runs
        run.tool_start = e.at_ns
        run.tool_name = name

    def _tool_retry(self, run: _RunSpans, e: ev.ToolRetry) -> None:
        if run.tool is not None:
            run.tool.add_event(sc.EV_RETRY, {sc.RETRY_ATTEMPT: e.attempt,
                                               sc.ERROR_TYPE: labels.identifier(e.code, self.redactor),
                                               sc.RETRY_BACKOFF_S: e.backoff_s}, timestamp=e.at_ns)

    def _tool_returned(self, run: _RunSpans, e: ev.ToolReturned) -> None:
        token = run.token
        if token is not None:
            run.token = None
            _detach(token)
        span = run.tool
        if span is None:
            return
        status = labels.identifier(e.status, self.redactor)
        attrs: dict[str, Any] = {sc.TOOL_RESULT_STATUS: status, sc.TOOL_REPLAYED: e.replayed,
                                 sc.TOOL_ATTEMPTS: e.attempts}
        failed = status not in _OK_RESULTS
        if failed:
            attrs[sc.ERROR_TYPE] = status
        if self._any and span.is_recording():
            result = self.redactor.json(e.result)
            if self._on_span:
                attrs[sc.TOOL_CALL_RESULT] = result
            if self._on_event:
                span.add_event(sc.EVENT_INFERENCE_DETAILS, {sc.TOOL_CALL_ARGUMENTS: run.tool_args,
                                                            sc.TOOL_CALL_RESULT: result}, timestamp=e.at_ns)
        span.set_attributes(attrs)
        if failed:
            span.set_status(Status(StatusCode.ERROR, status))
        span.end(end_time=e.at_ns)
        run.tool = None
        run.tools += e.attempts
        if not self.call_metrics:
            return
        name = run.tool_name or labels.tool_name(e.name, self.redactor)
        self.inst.tool_duration.record((e.at_ns - run.tool_start) / 1e9,
                                       run.m_agent.tool(name, status if failed else None))

    def _plan_rejected(self, run: _RunSpans, e: ev.PlanRejected) -> None:
        codes = labels.problem_codes(e.problems)      # closed codes: the problems' text quotes the model
        self._innermost(run).add_event(sc.EV_PLAN_REJECTED, {sc.PLAN_PROBLEMS: codes}, timestamp=e.at_ns)

    def _plan_accepted(self, run: _RunSpans, e: ev.PlanAccepted) -> None:
        run.plan_ids = e.plan_step_ids
        self._innermost(run).add_event(sc.EV_PLAN_ACCEPTED, {sc.PLAN_VERSION: e.version, sc.PLAN_STEPS: e.steps},
                                       timestamp=e.at_ns)

    def _final_refused(self, run: _RunSpans, e: ev.FinalRefused) -> None:
        self._innermost(run).add_event(sc.EV_FINAL_REFUSED, {sc.PLAN_OPEN_STEPS: len(e.open_steps)},
                                       timestamp=e.at_ns)

    def _guard(self, run: _RunSpans, e: ev.GuardFired) -> None:
        b = e.breach
        self._innermost(run).add_event(sc.EV_GUARD, {sc.GUARD_LIMIT: b.stop.value,
                                                     sc.GUARD_LIMIT_VALUE: float(b.limit_value),
                                                     sc.GUARD_OBSERVED: float(b.observed)}, timestamp=e.at_ns)

    def _approval_requested(self, run: _RunSpans, e: ev.ApprovalRequested) -> None:
        target = run.tool or self._innermost(run)
        target.add_event(sc.EV_APPROVAL_REQUESTED, {sc.TOOL_NAME: labels.tool_name(e.name, self.redactor),
                                                    sc.TOOL_ARGS_DIGEST: e.digest}, timestamp=e.at_ns)

    def _approval_decided(self, run: _RunSpans, e: ev.ApprovalDecided) -> None:
        target = run.tool or self._innermost(run)
        name = sc.EV_APPROVAL_GRANTED if e.approved else sc.EV_APPROVAL_DENIED
        target.add_event(name, {sc.TOOL_NAME: labels.tool_name(e.name, self.redactor),
                                sc.TOOL_ARGS_DIGEST: e.digest, sc.APPROVAL_BY: self.redactor.text(e.by)},
                         timestamp=e.at_ns)

    def _checkpoint(self, run: _RunSpans, e: ev.CheckpointSaved) -> None:
        self._innermost(run).add_event(sc.EV_CHECKPOINT, {sc.CHECKPOINT_VERSION: e.version}, timestamp=e.at_ns)

    def _step_finished(self, run: _RunSpans, e: ev.StepFinished) -> None:
        span = run.step
        if span is None:
            return
        attrs: dict[str, Any] = {sc.STEP_PROGRESS: e.progress, sc.STEP_STALLS: e.stalls, sc.STEP_OUTCOME: e.outcome}
        if run.reply_type:
            attrs[sc.STEP_REPLY_TYPE] = run.reply_type
        span.set_attributes(attrs)
        span.end(end_time=e.at_ns)
        run.step = None

    def _run_finished(self, run: _RunSpans, e: ev.RunFinished) -> None:
        self._detach(run)
        span, t = run.root, e.totals
        stop = e.stop._value_                  # (a StrEnum's value: .value is a slower property)
        status = e.status
        failed = e.stop is not _DONE and status is not _SUSPENDED
        if run.chat is not None or run.tool is not None or run.step is not None:
            for dangling in (run.chat, run.tool, run.step):     # cut off mid-step (a cancellation)
                if dangling is not None:
                    if failed:
                        dangling.set_attribute(sc.ERROR_TYPE, stop)
                        dangling.set_status(Status(StatusCode.ERROR, stop))
                    dangling.end(end_time=e.at_ns)
            run.chat = run.tool = run.step = None
        attrs: dict[str, Any] = {
            sc.STOP_REASON: stop, sc.STATUS: status._value_, sc.STEPS: t.steps, sc.TOOL_CALLS: t.tool_calls,
            sc.TOKENS: t.tokens, sc.COST_USD: float(t.cost_usd), sc.ELAPSED_S: float(t.elapsed_s),
            sc.USAGE_INPUT_TOKENS: run.tin, sc.USAGE_OUTPUT_TOKENS: run.tout,
            sc.PLAN_STEPS: t.plan_steps, sc.PLAN_OPEN_STEPS: t.open_plan_steps, sc.PLAN_VERSION: t.plan_version,
            sc.UNKNOWN_WRITES: t.unknown_writes, sc.MAX_STALLS: t.max_stalls,
            sc.UNPRICED_CALLS: t.unpriced_calls, sc.MEMORY_NOTES: t.memory_notes,
        }
        if e.outcome:
            attrs[sc.OUTCOME] = e.outcome
        span.set_attributes(attrs)
        if failed:
            span.set_attribute(sc.ERROR_TYPE, stop)
            span.set_status(Status(StatusCode.ERROR, stop))
        span.end(end_time=e.at_ns)
        if status is _SUSPENDED or status is _ABORTED:                            # suspended or cancelled:
            self.links.suspended(e.task_id, span.get_span_context())               # the next segment links here
        self._pop(run)
        attrs_of = run.m_agent
        agent = attrs_of.agent
        inst = self.inst
        inst.agent_duration.record(max(0.0, t.elapsed_s - run.elapsed0),
                                   {**agent, sc.ERROR_TYPE: stop} if failed else agent)
        inst.inference_calls.record(run.chats, agent)
        inst.tool_calls.record(run.tools, agent)
        by_stop = attrs_of.stop(stop)
        inst.runs.add(1, by_stop)
        # what this segment spent: a task suspended and resumed adds up to its totals, never counts a segment twice
        inst.run_tokens.record(max(0, t.tokens - run.tokens0), by_stop)
        inst.run_cost.record(max(0.0, float(t.cost_usd) - run.cost0), by_stop)
        b = run.limits
        if b is None:
            return
        by_limit = attrs_of.by_limit
        record = inst.utilisation.record
        for limit, used, allowed in (("max_steps", t.steps, b.max_steps), ("max_tool_calls", t.tool_calls,
                                                                          b.max_tool_calls),
                                     ("max_tokens", t.tokens, b.max_tokens), ("deadline_s", t.elapsed_s, b.deadline_s),
                                     ("max_usd", t.cost_usd, b.max_usd)):
            if allowed:
                record(min(used / allowed, 1.0), by_limit[limit])

    def _run_aborted(self, run: _RunSpans, e: ev.RunAborted) -> None:
        """An exception escaped the run: every open span ends with ERROR and the exception's type; the run is
        counted in ``agentobs.runs`` and ``gen_ai.invoke_agent.duration`` with that type as ``error.type``."""
        self._detach(run)
        error = labels.identifier(e.error, self.redactor)
        status = Status(StatusCode.ERROR, f"run aborted: {error}")
        for span in (run.chat, run.tool, run.step, run.root):
            if span is not None:
                span.set_attribute(sc.ERROR_TYPE, error)
                span.set_status(status)
                if span is run.root:
                    span.set_attribute(sc.STATUS, RunStatus.ABORTED.value)
                span.end(end_time=e.at_ns)
        run.chat = run.tool = run.step = None
        self._pop(run)
        # counted like a finished run, with the exception's type where a stop reason would be
        attrs = {**run.m_agent.agent, sc.ERROR_TYPE: error}
        self.inst.agent_duration.record(max(0.0, e.totals.elapsed_s - run.elapsed0), attrs)
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


_HANDLERS: dict[type, Callable[..., None]] = {
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
_START = _HANDLERS[ev.RunStarted]
