"""Instrument an agent loop that is not ours, with the same span shapes and attributes as the kernel.

    agent = AgentInstrumentation(telemetry)           # or AgentInstrumentation(tracer=..., meter=...)
    with agent.task("support-agent", task_id="t1", model="gpt-4.1", provider="openai") as task:
        with task.step() as step:
            with step.chat(max_tokens=300) as call:
                reply = my_llm(...)
                call.done(input_tokens=40, output_tokens=52, reply_type="tool", finish_reason="tool_calls")
            with step.tool("get_order", {"order_id": "ord_1001"}, effect="read") as tool:
                tool.done(my_get_order(...), status="ok")
            step.progress(True)
        task.done(stop="done", outcome="completed")

Each call is translated into the kernel's own events (``agentobs.contract.events``) and handed to the same
OTelObserver, so the two can never drift apart; the task's counters live here, no kernel state is built.
Times are real (``time.time_ns``) unless a clock is given.
Give ``tools=`` (the names of your toolbox) when tool names may come from the model: a name outside
it is recorded as ``_OTHER`` (it would otherwise name a span and a metric series).
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ..contract import events as ev
from ..contract.digest import digest
from ..contract.reported import count, non_negative
from ..contract.vocabulary import Effect, ReplyType, StopReason, UsageSource, result_status, status_of
from .labels import OTHER
from .observer import OTelObserver


class ChatCall:
    """One model call: say what it returned (``done``) or that it failed (``failed``)."""

    def __init__(self) -> None:
        self.input_tokens = self.output_tokens = 0
        self.cache_read_input_tokens: int | None = None
        self.cache_creation_input_tokens: int | None = None
        self.reasoning_output_tokens: int | None = None
        self.reply_type: ReplyType | None = None
        self.finish_reason = "stop"
        self.response_model: str | None = None
        self.error: str | None = None
        self.reply: Any = None
        self.cost_usd: float | None = None
        self.usage_source: UsageSource = "reported"

    def done(self, *, input_tokens: int, output_tokens: int, reply_type: ReplyType | None = None,
             finish_reason: str = "stop", reply: Any = None, cost_usd: float | None = None,
             usage_source: UsageSource = "reported", cache_read_input_tokens: int | None = None,
             cache_creation_input_tokens: int | None = None, reasoning_output_tokens: int | None = None,
             response_model: str | None = None) -> None:
        self.input_tokens, self.output_tokens, self.reply_type = input_tokens, output_tokens, reply_type
        self.finish_reason, self.reply, self.cost_usd, self.usage_source = finish_reason, reply, cost_usd, usage_source
        self.cache_read_input_tokens = cache_read_input_tokens
        self.cache_creation_input_tokens = cache_creation_input_tokens
        self.reasoning_output_tokens = reasoning_output_tokens
        self.response_model = response_model

    def failed(self, error: str) -> None:
        self.error = error

    def usage(self) -> ev.TokenUsage:
        return ev.TokenUsage(input_tokens=count(self.input_tokens) or 0, output_tokens=count(self.output_tokens) or 0,
                             source=self.usage_source, cache_read_input_tokens=self.cache_read_input_tokens,
                             cache_creation_input_tokens=self.cache_creation_input_tokens,
                             reasoning_output_tokens=self.reasoning_output_tokens)


class ToolCall:
    """One tool call: say what it returned (``done``) and which attempts failed first (``retry``)."""

    def __init__(self) -> None:
        self.result: dict[str, Any] = {"status": "ok"}
        self.status: str | None = None
        self.attempts = 1
        self.retries: list[tuple[int, str, float]] = []

    def done(self, result: Any, *, status: str | None = None, attempts: int = 1) -> None:
        self.result = result if isinstance(result, dict) else {"status": status or "ok", "value": result}
        self.status, self.attempts = status, attempts

    def retry(self, attempt: int, code: str, backoff_s: float) -> None:
        self.retries.append((attempt, code, backoff_s))


class StepScope:
    def __init__(self, task: TaskScope):
        self.task = task
        self.made_progress = True
        self.outcome = "ok"

    def progress(self, made: bool) -> None:
        self.made_progress = made

    @contextmanager
    def chat(self, *, model: str | None = None, provider: str | None = None, max_tokens: int = 0,
             view: str = "") -> Iterator[ChatCall]:
        t = self.task
        model, provider = model or t.model, provider or t.provider
        t.emit(ev.ModelCalled(step=t.steps, model=model, provider=provider, max_output_tokens=max_tokens,
                              timeout_s=0.0, view=view, at_ns=t.now()))
        call = ChatCall()
        try:
            yield call
        except BaseException as exc:
            call.failed(type(exc).__name__)
            raise
        finally:                     # (what the loop said is not checked by any type: a bad value costs telemetry)
            t.tokens += (count(call.input_tokens) or 0) + (count(call.output_tokens) or 0)
            t.cost_usd += non_negative(call.cost_usd) or 0.0
            t.emit_made(lambda: ev.ModelReturned(
                step=t.steps, model=model, provider=provider, response_model=call.response_model, usage=call.usage(),
                reply_type=call.reply_type, finish_reason=call.finish_reason,
                cost_usd=non_negative(call.cost_usd),
                error=call.error, reply=call.reply, at_ns=t.now()))

    @contextmanager
    def tool(self, name: str, args: dict[str, Any] | None = None, *, effect: str = "read",
             call_id: str | None = None, plan_step: str | None = None) -> Iterator[ToolCall]:
        t = self.task
        args = args or {}
        key, shown = f"{t.task_id}:adhoc{t.steps}", OTHER
        kind: Effect = "write" if effect == "write" else "read"
        with contextlib.suppress(Exception):    # arguments no digest takes (a cycle, a key that is no text): the
            key = call_id or f"{t.task_id}:{plan_step or 'adhoc' + str(t.steps)}"     # tool still runs
            shown = name if t.inst.tools is None or name in t.inst.tools else OTHER
        t.emit_made(lambda: ev.ToolCalled(step=t.steps, name=shown, args=args, key=key, effect=kind,
                                          plan_step=plan_step, digest=digest(name, args), held=False, at_ns=t.now()))
        call = ToolCall()
        try:
            yield call
        except BaseException as exc:
            call.result, call.status = {"status": "error", "code": type(exc).__name__}, type(exc).__name__
            raise
        finally:
            for attempt, code, backoff in call.retries:
                t.emit(ev.ToolRetry(step=t.steps, name=shown, attempt=attempt, code=code, backoff_s=backoff,
                                    at_ns=t.now()))
            t.tool_calls += count(call.attempts) or 1
            t.emit_made(lambda: ev.ToolReturned(
                step=t.steps, name=shown, key=key, effect=kind, result=call.result,
                status=call.status or result_status(call.result), replayed=call.result.get("replayed") is True,
                attempts=call.attempts, at_ns=t.now()))


class TaskScope:
    """One task of the instrumented loop, with the counters its spans report."""

    def __init__(self, inst: AgentInstrumentation, *, task_id: str, model: str, provider: str):
        self.inst, self.task_id, self.model, self.provider = inst, task_id, model, provider
        self.observer = inst.new_observer()
        self.now = inst.clock
        self.steps = self.tool_calls = self.tokens = 0
        self.cost_usd = 0.0
        self.stalls = self.max_stalls = 0
        self.stop: StopReason | None = None
        self.outcome: str | None = None

    def emit(self, event: ev.Event) -> None:
        with contextlib.suppress(Exception):     # telemetry never breaks the instrumented loop
            self.observer.notify(event)

    def emit_made(self, make: Callable[[], ev.Event]) -> None:
        """``emit`` of an event built from what the loop gave, which may not build: then it is not sent."""
        with contextlib.suppress(Exception):
            self.observer.notify(make())

    @contextmanager
    def step(self) -> Iterator[StepScope]:
        self.steps += 1
        self.emit(ev.StepStarted(index=self.steps, at_ns=self.now()))
        scope = StepScope(self)
        try:
            yield scope
        finally:
            self.stalls = 0 if scope.made_progress else self.stalls + 1
            self.max_stalls = max(self.max_stalls, self.stalls)
            self.emit(ev.StepFinished(index=self.steps, progress=scope.made_progress, stalls=self.stalls,
                                      outcome=scope.outcome, at_ns=self.now()))

    def guard(self, limit: str, limit_value: float, observed: float, *, stop: str | StopReason | None = None) -> None:
        """A guard of the instrumented loop fired: ``limit`` names what was limited, ``stop`` the stop reason it
        leads to (by default ``limit`` itself, when it is a stop reason)."""
        self.emit(ev.GuardFired(breach=ev.Breach(limit=limit, limit_value=limit_value, observed=observed,
                                                 stop=StopReason(stop if stop is not None else limit)),
                                at_ns=self.now()))

    def done(self, *, stop: str | StopReason = StopReason.DONE, outcome: str | None = None,
             answer: str | None = None) -> None:
        self.stop = StopReason(stop)
        self.outcome = outcome if self.stop is StopReason.DONE else None

    def totals(self) -> ev.RunTotals:
        return ev.RunTotals(steps=self.steps, tool_calls=self.tool_calls, tokens=self.tokens, cost_usd=self.cost_usd,
                            unpriced_calls=0, elapsed_s=0.0, plan_steps=0, open_plan_steps=0, plan_version=0,
                            unknown_writes=0, max_stalls=self.max_stalls, memory_notes=0)


class AgentInstrumentation:
    """Entry point of the instrumentation API. Give it a Telemetry, or a tracer (and optionally a meter)."""

    def __init__(self, telemetry: Any = None, *, tracer: Any = None, meter: Any = None,
                 clock: Callable[[], int] = time.time_ns, tools: Iterable[str] | None = None):
        if telemetry is not None:
            self.new_observer: Callable[[], OTelObserver] = telemetry.observer
        elif tracer is not None:
            self.new_observer = lambda: OTelObserver(tracer, meter)
        else:
            raise TypeError("AgentInstrumentation needs a Telemetry (agentobs.telemetry.configure()) or a tracer")
        self.clock = clock
        self.tools = frozenset(tools) if tools is not None else None

    @contextmanager
    def task(self, agent_name: str, *, task_id: str, model: str, provider: str, user_id: str = "",
             goal: str = "", conversation_id: str | None = None, budget: Any = None) -> Iterator[TaskScope]:
        """One task. ``budget``: the limits it runs under (an ``agentobs.Budget``), recorded on its span."""
        scope = TaskScope(self, task_id=task_id, model=model, provider=provider)
        scope.emit(ev.RunStarted(task_id=task_id, agent_name=agent_name, conversation_id=conversation_id,
                                 model=model, provider=provider, resumed=False, step=0, elapsed_s=0.0,
                                 limits=budget.limits() if budget is not None else None, plan_step_ids=(),
                                 at_ns=self.clock()))
        try:
            yield scope
        except BaseException:
            if scope.stop is None:           # an exception out of the loop ends the task as an error
                scope.stop = StopReason.MODEL_ERROR
            raise
        finally:
            stop = scope.stop or StopReason.DONE
            scope.emit(ev.RunFinished(task_id=task_id, stop=stop, status=status_of(stop),
                                      outcome=scope.outcome if stop is StopReason.DONE else None,
                                      totals=scope.totals(), at_ns=self.clock()))
