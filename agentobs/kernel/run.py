"""One run of a task: what the kernel keeps about it, and the bounded loop.

    state --render--> view --model--> reply --validate, execute--> result --fold--> state
      ^                                                                             |
      +------------- budgets and progress checked before every model call <---------+

``Kernel.run``, ``resume`` and ``recover`` (and ``arun``, ``aresume``, ``arecover``) each make a ``TaskRun``: the
task's state, its clock, the checkpoint version and the lease are the run's, never the kernel's, so one kernel
serves any number of concurrent runs. The loop is written once, as coroutines; it reaches the outside world only
through ``calls`` (``agentobs.kernel.calls``: directly for the sync entry points, awaited for the async ones),
the clock and the observer point. Every exit sets one StopReason.

A step (``_step``) is four jobs, in this order: calling the model under the retry policy and the deadline
(``_call_model``), charging the call to the task (``_charge``: its time, tokens and dollars; the limits are
checked before every call, ``_budget_breach``), reading the reply as a proposal (``_validate``), and routing the
proposal: a final answer (``_final``), a plan (``_plan``) or a tool call (``_tool_call``, run by ``_execute``).

Cancelling the task of an async run ends it with ``cancelled``: the observers get ``RunFinished`` (status
``aborted``: the spans they opened end with ERROR), nothing more is checkpointed, so ``recover`` continues the
task from its last checkpoint, and the lease is released, unless a write was in flight: then it is left to
expire, so that no other worker takes the task over while that write may still be happening. A cancellation during
the final checkpoint's save waits for it: once the store holds the run's end, that end is what the observers hear.
"""
from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..contract import reported
from ..contract.digest import digest
from ..contract.events import Breach, Limits, TokenUsage
from ..contract.jsontext import dumps
from ..contract.pricing import Prices
from ..contract.retry import RetryPolicy
from ..contract.vocabulary import (
    PERMANENT_CODES,
    Effect,
    ReplyType,
    RunStatus,
    StopReason,
    UsageSource,
    is_transient,
    result_status,
)
from ..errors import (
    ApprovalError,
    CheckpointError,
    ConcurrentUseError,
    ConfigError,
    ProposalError,
    ReplayError,
    SimulatedCrash,
)
from . import events as ev
from . import runs
from .approval import Approver, Decision
from .budget import Budget
from .calls import AsyncCalls, SyncCalls
from .checkpoint import Checkpoint, CheckpointStore, Lease
from .models import Model, ModelRequest, ModelResponse
from .plan import to_plan_steps, validate_plan
from .proposals import FinalProposal, PlanProposal, Proposal, ToolProposal, parse
from .state import DONE, FAILED, HeldCall, TaskState
from .tools import NEEDS_APPROVAL, OK, UNKNOWN, FactPolicy, Toolbox, ToolInvocation, error
from .values import json_problem
from .view import est_tokens, render


class KernelConfig(Protocol):
    """What a run reads of the kernel that made it (``loop.Kernel``): the configuration every run shares. Typed by
    what is used, so that this module does not import the loop that imports it."""

    model: Model | Any
    tools: Toolbox | Any
    budget: Budget
    facts: FactPolicy
    prices: Prices
    price_model: str
    price_provider: Any
    overhead_tokens: int
    checkpoints: CheckpointStore | None
    approver: Approver | None
    memory: Any
    emitter: Callable[[ev.Event], None] | None

    def clock_for_run(self) -> Any: ...

    def retry_policy(self) -> RetryPolicy: ...

    def budget_limits(self) -> Limits: ...

log = logging.getLogger("agentobs.kernel")
_RUN_STATUS = {s.value: s for s in RunStatus}     # RunStatus(value), without the enum's call
# the events, made as calling their classes does, a little cheaper (ev.maker)
_new_step_started = ev.maker(ev.StepStarted)
_new_step_finished = ev.maker(ev.StepFinished)
_new_model_called = ev.maker(ev.ModelCalled)
_new_model_returned = ev.maker(ev.ModelReturned)
_new_final_refused = ev.maker(ev.FinalRefused)
_new_plan_rejected = ev.maker(ev.PlanRejected)
_new_plan_accepted = ev.maker(ev.PlanAccepted)
_new_tool_called = ev.maker(ev.ToolCalled)
_new_tool_retry = ev.maker(ev.ToolRetry)
_new_tool_returned = ev.maker(ev.ToolReturned)
_new_approval_requested = ev.maker(ev.ApprovalRequested)
_new_approval_decided = ev.maker(ev.ApprovalDecided)
_new_guard_fired = ev.maker(ev.GuardFired)
_new_run_started = ev.maker(ev.RunStarted)
_new_run_finished = ev.maker(ev.RunFinished)
_new_checkpoint_saving = ev.maker(ev.CheckpointSaving)
_new_checkpoint_saved = ev.maker(ev.CheckpointSaved)
_new_run_aborted = ev.maker(ev.RunAborted)
_new_token_usage = ev.maker(TokenUsage)


@dataclass(kw_only=True, slots=True)
class _Reply:
    """A model call's answer as charged to the task (``TaskRun._charge``), for its validation. Never changed once made
    (not frozen: one is made per model call, and a frozen dataclass's ``__init__`` costs twice as much)."""
    resp: ModelResponse
    reply: Any                       # the reply, None when it is no JSON (``unusable`` says why)
    unusable: str | None
    finish: str | None               # the provider's finish reason
    tin: int                         # the tokens charged, and whose counts they are
    tout: int
    source: UsageSource
    too_long: bool                   # estimated past max_output_tokens: cut there
    cost: float | None


def _is_cancellation(exc: BaseException) -> bool:
    """An asyncio cancellation (asyncio is imported only by what uses it: without it, nothing was cancelled)."""
    aio = sys.modules.get("asyncio")
    return aio is not None and isinstance(exc, aio.CancelledError)


class TaskRun:
    """One run (a segment of a task): its state, clock, checkpoint version and lease, and the loop."""

    __slots__ = (
        "__weakref__",
        "active",
        "calls",
        "clock",
        "emit",
        "k",
        "lease",
        "running",
        "simulated",
        "state",
        "task_id",
        "version",
        "writing",
    )

    def __init__(self, kernel: KernelConfig, calls: SyncCalls | AsyncCalls):
        self.k = kernel
        self.calls = calls
        self.clock: Any = kernel.clock_for_run()
        self.simulated: bool = getattr(self.clock, "simulated", False)
        self.emit: Callable[[ev.Event], None] | None = kernel.emitter
        self.task_id = ""
        self.active = True                      # until the entry point returns or raises (runs.OneRunAtATime)
        self.running = False                    # between RunStarted and RunFinished
        self.state: TaskState | None = None
        self.version: int | None = None         # the checkpoint version this run holds
        self.lease: Lease | None = None         # this run's lease on its task, when there is a store
        self.writing = False                    # a write tool call is in flight

    # -- the entry points' bodies ----------------------------------------------------------------

    async def guarded(self, body: Callable[..., Awaitable[TaskState]], *args: Any) -> TaskState:
        """Runs an entry point as the current run. An exception escaping a begun run is told to the observers
        (RunAborted), so they can close what they opened, and then goes on to the caller unchanged. The lease is
        released at the end, unless the process 'died' (SimulatedCrash): then it expires after its TTL. A
        cancellation ends the run with ``cancelled`` (see the module's docstring) and goes on to the caller."""
        token = runs.enter(self)
        try:
            st = await body(*args)
            if self.lease is not None:
                await self._release()
            return st
        except BaseException as exc:
            if _is_cancellation(exc):
                await self._cancelled()
            else:
                await self._aborted(exc)
            raise
        finally:
            self.active = False
            runs.leave(token)

    async def start(self, state: TaskState) -> TaskState:
        k = self.k
        self.task_id = state.task_id
        if k.checkpoints is not None:
            await self._claim(state.task_id)
        if k.memory is not None and not state.memory:
            state.memory = list(k.memory.read(state.user_id, state.goal, now=self.clock.wall_ns() / 1e9))
        self._begin(state, resumed=False)
        if k.checkpoints is not None:
            await self._save(state, None)
        return await self._loop(state)

    async def resume(self, snapshot: TaskState | Checkpoint | str, decision: Decision | None) -> TaskState:
        store = self.k.checkpoints
        if isinstance(snapshot, str):
            if store is None:
                raise ConfigError("resume(task_id) needs a checkpoint store; pass the saved TaskState instead")
            await self._claim(snapshot)
            snapshot = await self.calls.store(store.load, snapshot)
        elif store is not None:
            if not isinstance(snapshot, Checkpoint):
                raise ConfigError("with a checkpoint store, resume a Checkpoint (store.load(task_id)) or a task id, "
                                  "so that two workers cannot both continue one snapshot")
            await self._claim(snapshot.state.task_id)
        state = snapshot.state if isinstance(snapshot, Checkpoint) else snapshot
        if state.status == "stopped":
            raise ApprovalError(f"task {state.task_id!r} already stopped ({state.stop}); there is nothing to resume")
        held = state.pending
        if held is not None:
            if decision is None:
                raise ApprovalError(f"task {state.task_id!r} is waiting for a decision on {held.name}: "
                                    "pass Decision.approve(state.pending) or Decision.deny(state.pending)")
            if decision.digest != held.digest:
                raise ApprovalError(f"the decision is for other arguments (digest {decision.digest}) than the held "
                                    f"{held.name} call (digest {held.digest}); decide on exactly the held call")
        self._begin(state, resumed=True)
        if held is not None and decision is not None:
            self._decided(state, held, decision)        # saved with the claim below: a crash keeps the decision
            if not decision.approved:
                state.pending = None
        if isinstance(snapshot, Checkpoint):
            await self._save(state, snapshot.version)    # the claim: raises CheckpointConflict for a second worker
        return await self._continue(state)

    async def _continue(self, state: TaskState) -> TaskState:
        """Runs the held call a person approved (recorded in the audit, saved before it runs), then the loop."""
        held = state.pending
        if held is not None and _approved(state, held):
            state.pending = None
            stop = await self._execute(state, held.name, held.args, held.plan_step, key=held.key, approved=True,
                                       held=True, dg=held.digest)
            if stop is not None:
                return await self._end(state, stop)
        return await self._loop(state)

    async def recover(self, task_id: str) -> TaskState:
        store = self.k.checkpoints
        if store is None:
            raise ConfigError("recover() needs a checkpoint store: "
                              "Kernel(..., checkpoints=SQLiteCheckpointStore(path))")
        await self._claim(task_id)                 # CheckpointLeased while another worker runs it
        ckpt = await self.calls.store(store.load, task_id)
        state = ckpt.state
        if state.status == "stopped":
            return state
        if state.status == "suspended":
            raise ApprovalError(f"task {task_id!r} is suspended on {state.pending.name if state.pending else 'a call'}:"
                                " resume it with a decision")
        self._begin(state, resumed=True)
        await self._save(state, ckpt.version)
        return await self._continue(state)            # an approved call cut off by the crash runs (its key: once)

    # -- the loop --------------------------------------------------------------------------------

    async def _loop(self, st: TaskState) -> TaskState:
        k, emit, clock = self.k, self.emit, self.clock
        b = k.budget
        stop: StopReason | None = None
        sig = st.signature()                     # the signature after a step is the next step's "before"
        while stop is None:
            view = render(st, b)
            tin_est = est_tokens(view) + k.overhead_tokens
            breach = self._budget_breach(st, tin_est)
            if breach is not None:
                stop = self._guard(breach)
                break
            st.step += 1
            before = sig
            seen_obs = len(st.observations)
            if emit:
                emit(_new_step_started(index=st.step, at_ns=clock.wall_ns()))
            stop, finished = await self._step(st, view, tin_est)
            if finished:
                if emit:
                    emit(_new_step_finished(index=st.step, progress=True, stalls=st.stalls,
                                            outcome=StopReason.DONE.value, at_ns=clock.wall_ns()))
                return await self._end(st, StopReason.DONE)
            sig = st.signature()
            progressed = sig != before
            if b.progress == "state_or_observation":
                progressed = progressed or len(st.observations) > seen_obs
            if progressed and b.repeat_window == "since_progress":
                st.seen.clear()
            st.note_stall(progressed)
            if stop is None:
                stalled = b.check_stalls(st.stalls)
                if stalled is not None:
                    stop = self._guard(stalled)
            if emit:
                emit(_new_step_finished(index=st.step, progress=progressed, stalls=st.stalls,
                                        outcome=stop.value if stop else "ok", at_ns=clock.wall_ns()))
            if stop is None and k.checkpoints is not None:
                await self._save(st, self.version)
        return await self._end(st, stop)

    async def _step(self, st: TaskState, view: str, tin_est: int) -> tuple[StopReason | None, bool]:
        """One model call and what follows from it: the call (under the retry policy and the deadline), its
        charge to the task, the reply read as a proposal, and the proposal's route: a final answer ends the task
        (unless plan steps are still open), a plan is validated and set, a tool call is checked and run. Returns
        (stop, finished)."""
        called = await self._call_model(st, view)
        if isinstance(called, StopReason):
            return called, False
        resp, secs = called
        reply = self._charge(st, resp, secs, tin_est)
        prop = self._validate(st, reply)
        if prop is None:
            return None, False
        if isinstance(prop, FinalProposal):
            return None, self._final(st, prop)
        if isinstance(prop, PlanProposal):
            self._plan(st, prop)
            return None, False
        return await self._tool_call(st, prop), False

    # -- calling the model -----------------------------------------------------------------------

    async def _call_model(self, st: TaskState, view: str) -> tuple[ModelResponse, float] | StopReason:
        """Calls the model, again after a provider failure while the retry policy and the deadline allow. Returns
        the response and the seconds it took, or the stop: the provider kept failing, or the call would outlive
        the deadline. An answer the adapter could not read is a response (``malformed``: the model is shown it);
        misuse, a recording run out and a Model's own bug go on to the caller."""
        k, clock = self.k, self.clock
        b, model = k.budget, k.model
        timeout = b.remaining_time(st.elapsed)
        if self.emit:
            self.emit(_new_model_called(step=st.step, model=model.name, provider=model.provider,
                                        max_output_tokens=b.max_output_tokens, timeout_s=timeout, view=view,
                                        at_ns=clock.wall_ns()))
        started = clock.now()
        attempts = 0
        resp: ModelResponse | None
        while True:
            attempts += 1
            try:
                req = ModelRequest(view=view, max_output_tokens=b.max_output_tokens, timeout_s=timeout)
                calls = self.calls
                if isinstance(calls, SyncCalls):
                    resp = calls.propose(req)
                else:                          # awaited, with the time left as a real timeout under a real clock
                    resp = await calls.model(req, None if self.simulated else timeout)
                if not isinstance(resp, ModelResponse):    # a Model's own bug: said, not taken for a timeout
                    raise ConfigError(f"model {k.model.name!r} returned {type(resp).__name__}, not a ModelResponse: "
                                      "its propose must return agentobs.ModelResponse(reply=...)")
                break
            except TimeoutError:
                resp = None
                break
            except (ConcurrentUseError, ReplayError, ConfigError):  # misuse, a recording run out, a Model's bug:
                raise                                                # not the provider's failure
            except ProposalError as exc:       # the model answered, with nothing the kernel can read: shown to it
                resp = ModelResponse(reply=None, malformed=exc.detail)
                break
            except Exception as exc:  # a provider failure must end in a stop reason
                retry = k.retry_policy()
                backoff = retry.wait_s(attempts)
                failed_for = clock.spend(started, 0.0)
                if not retry.may_retry(attempts) or st.elapsed + failed_for + backoff >= b.deadline_s:
                    return self._model_failed(st, exc, attempts, failed_for)
                await self.calls.sleep(clock, backoff)
                st.charge_time(failed_for + backoff)
                timeout = b.remaining_time(st.elapsed)
                started = clock.now()
        return self._within_deadline(st, resp, started, timeout)

    def _model_failed(self, st: TaskState, exc: Exception, attempts: int, failed_for: float) -> StopReason:
        """The provider failed and the retry policy (or the deadline) allows no other attempt: ``model_error``."""
        st.charge_time(failed_for)
        self._model_returned(st, tin=0, tout=0, source="estimated", reply_type=None, finish_reason="error",
                             cost=None, err=type(exc).__name__, reply=None)
        return self._guard(Breach(limit="max_attempts", limit_value=self.k.retry_policy().attempts, observed=attempts,
                                  stop=StopReason.MODEL_ERROR))

    def _within_deadline(self, st: TaskState, resp: ModelResponse | None, started: float,
                         timeout: float) -> tuple[ModelResponse, float] | StopReason:
        """The response and the seconds the call took (as the model declared them, else by the clock), or
        ``deadline`` when it timed out or took longer than the time left."""
        clock, b = self.clock, self.k.budget
        declared = None if resp is None else reported.non_negative(resp.latency_s)
        took = None if resp is None else declared if declared is not None else clock.now() - started
        if resp is None or took is None or took > timeout:
            # the call would outlive the deadline: it is cut off there, and its tokens are not charged
            clock.spend(started, timeout)
            st.elapsed = b.deadline_s
            self._model_returned(st, tin=0, tout=0, source="estimated", reply_type=None, finish_reason="length",
                                 cost=None, err="timeout", reply=None)
            return self._guard(Breach(limit="deadline_s", limit_value=b.deadline_s, observed=b.deadline_s,
                                      stop=StopReason.DEADLINE))
        return resp, clock.spend(started, declared)

    # -- accounting --------------------------------------------------------------------------------

    def _budget_breach(self, st: TaskState, tin_est: int) -> Breach | None:
        """The limit the next model call would pass (its input estimated, its reply the reserve), if any."""
        k = self.k
        b = k.budget
        projected = None
        if b.max_usd is not None:
            projected = k.prices.cost(k.price_model, k.price_provider, tin_est, b.reserve_tokens)
        return b.check_before_model_call(step=st.step, tool_calls=st.tool_calls, elapsed=st.elapsed,
                                         tokens=st.tokens, next_input_tokens=tin_est, cost_usd=st.cost_usd,
                                         projected_usd=projected)

    def _charge(self, st: TaskState, resp: ModelResponse, secs: float, tin_est: int) -> _Reply:
        """Charges the call to the task: its seconds, its tokens (the provider's counts; else estimated from the
        text, 4 characters a token, and the reply cut at max_output_tokens as a provider would cut it) and their
        price. A reply that is no JSON is kept out of the state, which must stay JSON (the model is told)."""
        k = self.k
        b = k.budget
        finish = resp.finish_reason if isinstance(resp.finish_reason, str) else None   # (a model's report: text)
        reply = resp.reply
        unusable = _malformed(resp)
        if unusable is not None:
            reply = None
        source: UsageSource
        rin, rout = reported.count(resp.input_tokens), reported.count(resp.output_tokens)   # (no count: None)
        if rin is not None and rout is not None:
            tin, tout, source = rin, rout, "reported"
        else:                                  # estimated from the text, 4 characters a token
            text = reply if isinstance(reply, str) else dumps(reply, default=str)
            tin, tout, source = tin_est, est_tokens(text), "estimated"
        too_long = source == "estimated" and tout > b.max_output_tokens
        if too_long:                           # a provider would have cut the reply at the limit; so do we
            tout = b.max_output_tokens
        cost = k.prices.cost(k.price_model, k.price_provider, tin, tout)
        st.charge_model(tin, tout, secs, cost)
        return _Reply(resp=resp, reply=reply, unusable=unusable, finish=finish, tin=tin, tout=tout, source=source,
                      too_long=too_long, cost=cost)

    # -- validating the reply ----------------------------------------------------------------------

    def _validate(self, st: TaskState, r: _Reply) -> Proposal | None:
        """The reply as a proposal, and the observers told what the model returned. None: it is none (unreadable,
        cut off, or no proposal); the model is shown why, in the next view."""
        try:
            prop = _proposal(r, self.k.budget.max_output_tokens)
        except ProposalError as exc:
            st.last_result = error(exc.code, detail=exc.detail)
            self._model_returned(st, tin=r.tin, tout=r.tout, source=r.source, reply_type=None,
                                 finish_reason=r.finish or "stop", cost=r.cost, err=exc.code, reply=r.reply,
                                 resp=r.resp)
            return None
        kind: ReplyType = ("tool" if isinstance(prop, ToolProposal) else "plan" if isinstance(prop, PlanProposal)
                           else "final")
        self._model_returned(st, tin=r.tin, tout=r.tout, source=r.source, reply_type=kind,
                             finish_reason=r.finish or ("tool_calls" if kind == "tool" else "stop"),
                             cost=r.cost, err=None, reply=r.reply, resp=r.resp)
        return prop

    # -- routing the proposal ----------------------------------------------------------------------

    def _final(self, st: TaskState, prop: FinalProposal) -> bool:
        """Takes the final answer (True), or refuses a completion while plan steps are open (False)."""
        open_steps = st.open_steps()
        if prop.outcome == "completed" and open_steps:
            st.last_result = error("plan_incomplete", detail=open_steps)
            if self.emit:
                self.emit(_new_final_refused(step=st.step, open_steps=tuple(open_steps), at_ns=self.clock.wall_ns()))
            return False
        st.answer, st.outcome = prop.text, prop.outcome
        return True

    async def _tool_call(self, st: TaskState, prop: ToolProposal) -> StopReason | None:
        """Runs a proposed tool call, unless it repeats past max_repeat (a stop), names no tool, or does not match
        the plan step it names (the model is shown why)."""
        fp = digest(prop.name, prop.args)
        st.seen[fp] = st.seen.get(fp, 0) + 1
        repeated = self.k.budget.check_repeat(st.seen[fp])
        if repeated is not None:
            return self._guard(repeated)
        if self.k.tools.spec(prop.name) is None:
            st.last_result = error("unknown_tool")
            return None
        if prop.plan_step is not None:                 # a step of the plan, run by its own tool only
            step = st.plan_step(prop.plan_step)
            if step is None:
                st.last_result = error("unknown_plan_step", detail=f"no step {prop.plan_step!r} in the plan")
                return None
            if step.tool != prop.name:
                st.last_result = error("plan_step_mismatch",
                                       detail=f"step {step.id!r} runs {step.tool!r}, not {prop.name!r}")
                return None
        return await self._execute(st, prop.name, prop.args, prop.plan_step, dg=fp)

    def _plan(self, st: TaskState, prop: PlanProposal) -> None:
        b = self.k.budget
        if st.plan and not st.replan_requested:
            problems = ["a plan is already set"]
        elif st.plan and st.plan_version > b.max_replans:
            problems = [f"replan budget exhausted ({b.max_replans} replans)"]
        else:
            kept = frozenset(s.id for s in st.plan if s.status != "pending")
            problems = validate_plan(prop.steps, b.max_plan_steps, self.k.tools.spec, kept)
        if problems:
            st.last_result = error("invalid_plan", detail=problems)
            if self.emit:
                self.emit(_new_plan_rejected(step=st.step, problems=tuple(problems), at_ns=self.clock.wall_ns()))
            return
        st.set_plan(to_plan_steps(prop.steps))
        if self.emit:
            self.emit(_new_plan_accepted(step=st.step, version=st.plan_version, steps=len(st.plan),
                                         plan_step_ids=tuple([s.id for s in st.plan]), at_ns=self.clock.wall_ns()))

    async def _execute(self, st: TaskState, name: str, args: dict[str, Any], plan_step: str | None, *,
                       key: str | None = None, approved: bool = False, held: bool = False,
                       dg: str | None = None) -> StopReason | None:
        """Runs one tool call (with retries) and folds the result into the state."""
        k, emit, clock = self.k, self.emit, self.clock
        b = k.budget
        spec = k.tools.spec(name)
        effect = spec.effect if spec else "read"
        key = key or f"{st.task_id}:{plan_step or 'adhoc' + str(st.step)}"
        dg = dg or digest(name, args)
        if emit:
            emit(_new_tool_called(step=st.step, name=name, args=args, key=key, effect=effect, plan_step=plan_step,
                                  digest=dg, held=held, at_ns=clock.wall_ns()))
        attempts = 0
        while True:
            attempts += 1
            result, secs = await self._invoke(st, name, args, key, effect, approved, attempts)
            st.charge_time(secs)
            st.tool_calls += 1
            if not is_transient(result):
                break
            retry = k.retry_policy()
            if not retry.may_retry(attempts):
                break
            backoff = retry.wait_s(attempts)
            breach = b.check_before_tool_call(tool_calls=st.tool_calls, elapsed=st.elapsed + backoff)
            if breach is not None:
                self._returned(st, name, key, effect, result, attempts)
                return self._guard(breach)
            if emit:
                emit(_new_tool_retry(step=st.step, name=name, attempt=attempts, code=result_status(result),
                                     backoff_s=backoff, at_ns=clock.wall_ns()))
            await self.calls.sleep(clock, backoff)
            st.charge_time(backoff)
        if is_transient(result):
            # retries exhausted: the model is told and asked for a new plan
            result = error("tool_unavailable", tool=name, attempts=attempts, replan=True)
            if st.plan:
                st.replan_requested = True
        status = self._returned(st, name, key, effect, result, attempts)
        step = st.plan_step(plan_step)
        if status == OK:
            if step:
                step.status = DONE
            st.facts.update(k.facts.extract(args, result))
        elif status == NEEDS_APPROVAL:
            return await self._needs_approval(st, HeldCall(name=name, args=args, key=key, plan_step=plan_step,
                                                           digest=dg), held)
        elif status == UNKNOWN:
            st.unknown_writes.append(key)
            return StopReason.UNKNOWN_OUTCOME
        elif step and (status in PERMANENT_CODES or status == "tool_unavailable"):
            step.status = FAILED
        return None

    async def _invoke(self, st: TaskState, name: str, args: dict[str, Any], key: str, effect: Effect,
                      approved: bool, attempt: int) -> tuple[dict[str, Any], float]:
        k, clock = self.k, self.clock
        store = k.checkpoints
        if effect == "write" and self.lease is not None and store is not None:
            self.lease = await self.calls.store(store.renew, self.lease)  # CheckpointLeased: another took over
        timeout = k.budget.remaining_time(st.elapsed)
        started = clock.now()
        declared: float | None
        self.writing = effect == "write"
        try:
            call = ToolInvocation(name=name, args=args, user_id=st.user_id, key=key, timeout_s=timeout,
                                  approved=approved, attempt=attempt)
            calls = self.calls
            if isinstance(calls, SyncCalls):
                resp = calls.invoke(call)
            else:
                resp = await calls.tool(call, None if self.simulated else timeout)
            result, declared = resp.result, reported.non_negative(resp.latency_s)
        except TimeoutError:
            result = {"status": UNKNOWN, "code": "timeout"} if effect == "write" else error("timeout")
            declared = timeout
        except ConcurrentUseError:
            raise
        except (ConnectionError, OSError) as exc:
            result, declared = error("tool_exception", detail=type(exc).__name__, transient=True), None
        except Exception as exc:  # a failing tool is a result the model sees
            result, declared = error("tool_exception", detail=type(exc).__name__), None
        self.writing = False
        if not isinstance(result, dict) or not isinstance(result.get("status"), str):
            result = error("malformed_result", detail="a tool result must be an object with a 'status'")
        elif (unusable := json_problem(result)) is not None:
            result = error("malformed_result", detail=f"a tool result must be JSON: it {unusable}")
        return result, clock.spend(started, declared)

    def _returned(self, st: TaskState, name: str, key: str, effect: Effect, result: dict[str, Any],
                  attempts: int) -> str:
        status = result_status(result)
        st.last_result = result
        ofp = digest(name, result)               # the observation's fingerprint: progress by new information
        if ofp not in st.observations:
            st.observations.append(ofp)
        st.audit.append({"step": st.step, "tool": name, "key": key, "effect": effect, "status": status,
                         "attempts": attempts, "result": result})
        if self.emit:
            self.emit(_new_tool_returned(step=st.step, name=name, key=key, effect=effect, result=result,
                                         status=status, replayed=result.get("replayed") is True, attempts=attempts,
                                         at_ns=self.clock.wall_ns()))
        return status

    async def _needs_approval(self, st: TaskState, call: HeldCall, held: bool) -> StopReason | None:
        k = self.k
        if self.emit:
            self.emit(_new_approval_requested(name=call.name, digest=call.digest, key=call.key,
                                              at_ns=self.clock.wall_ns()))
        decision = None if (k.approver is None or held) else await self.calls.approve(k.approver, call)
        if decision is None:
            st.pending = call
            return StopReason.NEEDS_APPROVAL
        if decision.digest != call.digest:
            raise ApprovalError(f"the approver decided on other arguments than the held {call.name} call")
        self._decided(st, call, decision)
        if decision.approved:
            breach = k.budget.check_before_tool_call(tool_calls=st.tool_calls, elapsed=st.elapsed)
            if breach is not None:
                st.pending = call
                return self._guard(breach)
            return await self._execute(st, call.name, call.args, call.plan_step, key=call.key, approved=True,
                                       held=True, dg=call.digest)
        return None

    def _decided(self, st: TaskState, call: HeldCall, decision: Decision) -> None:
        if self.emit:
            self.emit(_new_approval_decided(name=call.name, approved=decision.approved, by=decision.by,
                                            digest=call.digest, at_ns=self.clock.wall_ns()))
        st.audit.append({"step": st.step, "approval": call.name, "key": call.key, "approved": decision.approved,
                         "by": decision.by})
        if not decision.approved:
            st.last_result = error("approval_denied", tool=call.name, by=decision.by)
            step = st.plan_step(call.plan_step)
            if step:
                step.status = FAILED

    # -- bookkeeping -----------------------------------------------------------------------------

    def _model_returned(self, st: TaskState, *, tin: int, tout: int, source: UsageSource,
                        reply_type: ReplyType | None, finish_reason: str, cost: float | None, err: str | None,
                        reply: Any, resp: ModelResponse | None = None) -> None:
        model = self.k.model
        st.audit.append({"step": st.step, "model": model.name, "input_tokens": tin, "output_tokens": tout,
                         "reply": reply, "error": err})
        if self.emit:
            if resp is not None and source == "reported":      # the provider's parts of those counts, if any
                usage = _new_token_usage(input_tokens=tin, output_tokens=tout, source=source,
                                         cache_read_input_tokens=reported.count(resp.cache_read_input_tokens),
                                         cache_creation_input_tokens=reported.count(resp.cache_creation_input_tokens),
                                         reasoning_output_tokens=reported.count(resp.reasoning_output_tokens))
            else:
                usage = _new_token_usage(input_tokens=tin, output_tokens=tout, source=source)
            self.emit(_new_model_returned(step=st.step, model=model.name, provider=model.provider,
                                          response_model=resp.response_model if resp is not None
                                          and isinstance(resp.response_model, str) else None,
                                          usage=usage, reply_type=reply_type, finish_reason=finish_reason,
                                          cost_usd=cost, error=err, reply=reply, at_ns=self.clock.wall_ns()))

    def _guard(self, breach: Breach) -> StopReason:
        if self.emit:
            self.emit(_new_guard_fired(breach=breach, at_ns=self.clock.wall_ns()))
        return breach.stop

    def _begin(self, st: TaskState, resumed: bool) -> None:
        k = self.k
        self.running, self.state, self.task_id = True, st, st.task_id
        st.begin()
        self.version = None
        if self.emit:
            self.emit(_new_run_started(task_id=st.task_id, agent_name=st.agent_name, conversation_id=st.conversation_id,
                                       model=k.model.name, provider=k.model.provider, resumed=resumed,
                                       step=st.step, elapsed_s=st.elapsed, tokens=st.tokens, cost_usd=st.cost_usd,
                                       limits=k.budget_limits(),
                                       plan_step_ids=tuple([s.id for s in st.plan]), at_ns=self.clock.wall_ns()))

    async def _end(self, st: TaskState, stop: StopReason) -> TaskState:
        st.finish(stop, st.answer if stop is StopReason.DONE else None, st.outcome if stop is StopReason.DONE else None)
        if self.k.checkpoints is not None:
            await self._save(st, self.version, ending=stop)
        self._finished(st, stop)
        return st

    def _finished(self, st: TaskState, stop: StopReason) -> None:
        self.running = False
        if self.emit:
            self.emit(_new_run_finished(task_id=st.task_id, stop=stop, status=_RUN_STATUS[st.status],
                                        outcome=st.outcome, totals=st.totals(), at_ns=self.clock.wall_ns()))

    async def _save(self, st: TaskState, expected: int | None, *, ending: StopReason | None = None) -> None:
        """Saves a checkpoint. ``ending``: the run's final one, saved through a cancellation (``store_through``):
        when the save went through before the cancellation came out, the store holds the run's end, so that end
        is what the observers are told (not "cancelled", which recover would contradict); then it goes on."""
        store = self.k.checkpoints
        if store is None:
            return
        if self.emit:
            self.emit(_new_checkpoint_saving(version=(expected or 0) + 1, at_ns=self.clock.wall_ns()))
        if ending is None:
            self.version = await self.calls.store(store.save, st, expected, lease=self.lease)
        else:
            saved: list[int] = []

            def save() -> int:
                saved.append(store.save(st, expected, lease=self.lease))
                return saved[0]
            try:
                self.version = await self.calls.store_through(save)
            except BaseException as exc:
                if saved and _is_cancellation(exc):
                    self.version = saved[0]
                    if self.emit:
                        self.emit(_new_checkpoint_saved(version=self.version, at_ns=self.clock.wall_ns()))
                    self._finished(st, ending)
                raise
        if self.emit:
            self.emit(_new_checkpoint_saved(version=self.version, at_ns=self.clock.wall_ns()))

    async def _claim(self, task_id: str) -> None:
        self.task_id = task_id
        store = self.k.checkpoints
        if store is not None:
            self.lease = await self.calls.claim(store.acquire, _releaser(store), task_id)

    async def _release(self) -> None:
        """Releases the lease (through ``calls``: an async run's event loop never waits for a busy database)."""
        lease, self.lease = self.lease, None
        store = self.k.checkpoints
        if lease is not None and store is not None:
            await self.calls.store(_releaser(store), lease)

    async def _aborted(self, exc: BaseException) -> None:
        """Tells the observers (first: an await below may be cut short), then releases the lease: awaited for an
        exception (an async run's event loop goes on while the database is busy), in place for KeyboardInterrupt
        or SystemExit, never for a SimulatedCrash (the process 'died': the lease expires after its TTL)."""
        st = self.state
        if self.running and self.emit and st is not None:
            self.running = False
            with contextlib.suppress(BaseException):    # the original exception is the one to report
                self.emit(_new_run_aborted(task_id=st.task_id, error=type(exc).__name__, totals=st.totals(),
                                           at_ns=self.clock.wall_ns()))
        if isinstance(exc, Exception):
            await self._release()
        elif not isinstance(exc, SimulatedCrash):
            lease, self.lease = self.lease, None
            store = self.k.checkpoints
            if lease is not None and store is not None:
                _releaser(store)(lease)
        self.lease = None

    async def _cancelled(self) -> None:
        """Ends the run with ``cancelled`` for the observers, then releases the lease (awaited: the event loop goes
        on), unless a write was in flight (see the module's docstring)."""
        st = self.state
        if self.running and st is not None:
            self.running = False
            st.stop, st.status = StopReason.CANCELLED.value, RunStatus.ABORTED.value
            if self.emit:
                with contextlib.suppress(Exception):
                    self.emit(_new_run_finished(task_id=st.task_id, stop=StopReason.CANCELLED,
                                                status=RunStatus.ABORTED, outcome=None, totals=st.totals(),
                                                at_ns=self.clock.wall_ns()))
        if self.writing:
            log.warning("run of task %r cancelled during a write: its lease is left to expire, so that no other "
                        "worker takes the task over while the write may still be happening", self.task_id)
            self.lease = None
        else:
            await self._release()


def _malformed(resp: ModelResponse) -> str | None:
    """Why a response holds no reply the kernel can keep (None: it holds one): what the adapter said it could not
    read, or what keeps the reply from being JSON (``agentobs.kernel.values``)."""
    said = resp.malformed
    if said is not None:
        return (said if isinstance(said, str) else "the provider's answer could not be read") + \
            "; answer with one proposal"
    unusable = json_problem(resp.reply)
    return None if unusable is None else f"the reply {unusable}; answer with a JSON object"


def _proposal(r: _Reply, max_output_tokens: int) -> Proposal:
    """The reply as a proposal, or the ProposalError the model is shown: a reply that is no JSON, one the provider
    ended early, one cut at max_output_tokens, or one that is no proposal (``agentobs.kernel.proposals``)."""
    if r.unusable is not None:
        raise ProposalError("malformed_reply", r.unusable)
    cut = (r.finish or "").lower()
    if cut in _CUT_OFF:                # the provider stopped the reply: whatever it says is not whole
        raise ProposalError("reply_too_long" if cut != "content_filter" else "reply_filtered",
                            f"the provider ended the reply early ({r.finish}); "
                            + ("answer shorter" if cut != "content_filter" else "answer differently"))
    if r.too_long:
        raise ProposalError("reply_too_long", f"the reply passed max_output_tokens ({max_output_tokens}) "
                            "and was cut off; answer shorter")
    return parse(r.reply)


def _approved(st: TaskState, call: HeldCall) -> bool:
    """Whether the last decision in the audit on ``call`` (by its key) approved it."""
    for entry in reversed(st.audit):
        if entry.get("approval") == call.name and entry.get("key") == call.key:
            return bool(entry.get("approved"))
    return False


def _releaser(store: Any) -> Callable[[Lease], None]:
    """``store.release``, logging a failure instead of raising it: the lease then expires after its TTL."""
    def release(lease: Lease) -> None:
        try:
            store.release(lease)
        except CheckpointError as exc:
            log.warning("could not release the lease on task %r: %s", lease.task_id, exc)
    return release


# finish reasons that say the provider cut the reply off: OpenAI "length" and "content_filter", Anthropic
# "max_tokens", Gemini "MAX_TOKENS"
_CUT_OFF = frozenset({"length", "max_tokens", "content_filter"})
