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

Each call is translated into the kernel's own events and handed to the same OTelObserver,
so the two can never drift apart. Times are real (``time.time_ns``) unless a clock is given.
Give ``tools=`` (the names of your toolbox) when tool names may come from the model: a name outside
it is recorded as ``_OTHER`` (it would otherwise name a span and a metric series).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

from ..kernel import events as ev
from ..kernel.budget import Budget
from ..kernel.state import TaskState
from ..kernel.stops import StopReason
from ..kernel.tools import digest, result_status
from .labels import OTHER
from .observer import OTelObserver


class ChatCall:
    def __init__(self, step: StepScope):
        self._step = step
        self.input_tokens = self.output_tokens = 0
        self.reply_type: str | None = None
        self.finish_reason = "stop"
        self.error: str | None = None
        self.reply: Any = None
        self.cost_usd: float | None = None
        self.usage_source = "reported"

    def done(self, *, input_tokens: int, output_tokens: int, reply_type: str | None = None,
             finish_reason: str = "stop", reply: Any = None, cost_usd: float | None = None,
             usage_source: str = "reported") -> None:
        self.input_tokens, self.output_tokens, self.reply_type = input_tokens, output_tokens, reply_type
        self.finish_reason, self.reply, self.cost_usd, self.usage_source = finish_reason, reply, cost_usd, usage_source

    def failed(self, error: str) -> None:
        self.error = error


class ToolCall:
    def __init__(self) -> None:
        self.result: dict[str, Any] = {"status": "ok"}
        self.status: str | None = None
        self.attempts = 1
        self._retries: list[tuple[int, str, float]] = []

    def done(self, result: Any, *, status: str | None = None, attempts: int = 1) -> None:
        self.result = result if isinstance(result, dict) else {"status": status or "ok", "value": result}
        self.status, self.attempts = status, attempts

    def retry(self, attempt: int, code: str, backoff_s: float) -> None:
        self._retries.append((attempt, code, backoff_s))


class StepScope:
    def __init__(self, task: TaskScope):
        self.task = task
        self._progress = True
        self.outcome = "ok"

    def progress(self, made: bool) -> None:
        self._progress = made

    @contextmanager
    def chat(self, *, model: str | None = None, provider: str | None = None, max_tokens: int = 0,
             view: str = "") -> Iterator[ChatCall]:
        t = self.task
        st = t.state
        model, provider = model or t.model, provider or t.provider
        t.emit(ev.ModelCalled(st.step, model, provider, max_tokens, 0.0, view, t.now()))
        call = ChatCall(self)
        try:
            yield call
        except BaseException as exc:
            call.failed(type(exc).__name__)
            raise
        finally:
            st.input_tokens += call.input_tokens
            st.output_tokens += call.output_tokens
            st.tokens += call.input_tokens + call.output_tokens
            if call.cost_usd is not None:
                st.cost_usd += call.cost_usd
            t.emit(ev.ModelReturned(st.step, model, provider, None, call.input_tokens, call.output_tokens,
                                    call.usage_source, call.reply_type, call.finish_reason, call.cost_usd, call.error,
                                    call.reply, t.now()))

    @contextmanager
    def tool(self, name: str, args: dict[str, Any] | None = None, *, effect: str = "read",
             call_id: str | None = None, plan_step: str | None = None) -> Iterator[ToolCall]:
        t = self.task
        st = t.state
        args = args or {}
        key = call_id or f"{st.task_id}:{plan_step or 'adhoc' + str(st.step)}"
        shown = name if t.inst.tools is None or name in t.inst.tools else OTHER
        t.emit(ev.ToolCalled(st.step, shown, args, key, effect, plan_step, digest(name, args), False, t.now()))
        call = ToolCall()
        try:
            yield call
        except BaseException as exc:
            call.result, call.status = {"status": "error", "code": type(exc).__name__}, type(exc).__name__
            raise
        finally:
            for attempt, code, backoff in call._retries:
                t.emit(ev.ToolRetry(st.step, shown, attempt, code, backoff, t.now()))
            st.tool_calls += call.attempts
            status = call.status or result_status(call.result)
            t.emit(ev.ToolReturned(st.step, shown, key, effect, call.result, status,
                                   call.result.get("replayed") is True, call.attempts, t.now()))


class TaskScope:
    def __init__(self, inst: AgentInstrumentation, state: TaskState, model: str, provider: str,
                 budget: Budget | None):
        self.inst, self.state, self.model, self.provider, self.budget = inst, state, model, provider, budget
        self.observer = inst.new_observer()
        self.now = inst.clock
        self._stop: str | None = None

    def emit(self, event: ev.Event) -> None:
        try:
            self.observer.notify(event)
        except Exception:  # noqa: BLE001 - telemetry never breaks the instrumented loop
            pass

    @contextmanager
    def step(self) -> Iterator[StepScope]:
        st = self.state
        st.step += 1
        self.emit(ev.StepStarted(st.step, self.now()))
        scope = StepScope(self)
        try:
            yield scope
        finally:
            st.note_stall(scope._progress)
            self.emit(ev.StepFinished(st.step, scope._progress, st.stalls, scope.outcome, self.now()))

    def guard(self, limit: str, limit_value: float, observed: float) -> None:
        self.emit(ev.GuardFired(limit, limit_value, observed, self.now()))

    def done(self, *, stop: str | StopReason = StopReason.DONE, outcome: str | None = None,
             answer: str | None = None) -> None:
        stop = StopReason(stop)
        self.state.outcome = outcome if stop is StopReason.DONE else None
        self.state.finish(stop, answer, self.state.outcome)
        self._stop = stop.value


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
             goal: str = "", conversation_id: str | None = None, budget: Budget | None = None) -> Iterator[TaskScope]:
        state = TaskState(task_id=task_id, user_id=user_id, goal=goal, agent_name=agent_name,
                          conversation_id=conversation_id)
        scope = TaskScope(self, state, model, provider, budget)
        scope.emit(ev.RunStarted(state, budget, model, provider, False, self.clock()))
        try:
            yield scope
        except BaseException:
            if scope._stop is None:          # an exception out of the loop ends the task as an error
                state.finish(StopReason.MODEL_ERROR)
            raise
        finally:
            if state.stop is None:
                state.finish(StopReason.DONE)
            scope.emit(ev.RunFinished(state, self.clock()))
