"""Model replies, tool results and provider reports the kernel must not trust (found by fuzzing the kernel).

A reply or result that JSON cannot hold, or nested deeper than Python's recursion limit allows, escaped the run as
RecursionError or TypeError, or finished a run whose state could then not be saved. A plan step could be marked done
by any tool, and a model-chosen step id could take the key of a call outside the plan (its write then skipped as a
replay). Each is now an error result the model sees, and the state always saves and loads again.
"""
from __future__ import annotations

import pytest

from agentobs import Budget, ScriptedModel, SQLiteCheckpointStore, TaskState
from agentobs.domain import policies
from agentobs.domain.scenarios import go
from agentobs.domain.support import SupportDesk
from agentobs.kernel.models import ModelResponse
from agentobs.kernel.tools import ToolResponse
from agentobs.kernel.values import MAX_DEPTH, json_problem

FIN = {"type": "final", "outcome": "cannot_complete", "text": "x"}


def _nest(n, leaf="x"):
    for _ in range(n):
        leaf = [leaf]
    return leaf


def _saves(st):
    assert TaskState.from_json(st.to_json()).to_json() == st.to_json()


class _Evil:
    def __repr__(self):
        raise RuntimeError("repr")

    __str__ = __repr__


@pytest.mark.parametrize("reply", [
    _nest(1000),
    {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001", "d": _nest(499)}},
    {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001", 1: "x"}},
    {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001", "b": b"x"}},
    {"type": "final", "outcome": _Evil(), "text": "x"},
    {"type": _Evil()},
    {1, 2},
    b"x",
])
@pytest.mark.parametrize("store", [False, True])
def test_a_reply_json_cannot_hold_is_a_malformed_reply_the_model_sees(reply, store):
    kw = {"checkpoints": SQLiteCheckpointStore(":memory:")} if store else {}
    st, desk, _ = go(ScriptedModel([reply, FIN]), **kw)
    assert st.stop == "done" and st.outcome == "cannot_complete" and desk.effects == []
    bad = [a for a in st.audit if a.get("error") == "malformed_reply"]
    assert len(bad) == 1 and bad[0]["reply"] is None
    _saves(st)


def test_a_cyclic_reply_is_refused_as_nested_too_deeply():
    loop: dict = {"type": "tool", "name": "get_order"}
    loop["args"] = {"order_id": "ord_1001", "self": loop}
    st, _, _ = go(ScriptedModel([loop, FIN]))
    assert any(a.get("error") == "malformed_reply" for a in st.audit)
    _saves(st)


class _Desk(SupportDesk):
    def __init__(self, result=None, latency=None):
        super().__init__()
        self.forced_result, self.forced_latency = result, latency

    def invoke(self, call):
        got = super().invoke(call)
        return ToolResponse(result=self.forced_result if self.forced_result is not None else got.result,
                            latency_s=self.forced_latency if self.forced_latency is not None else got.latency_s)


READ = {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001"}}


@pytest.mark.parametrize("result", [{"status": "ok", "d": _nest(1000)}, {"status": "ok", "b": b"x"},
                                    {"status": "ok", 1: "x"}])
def test_a_tool_result_json_cannot_hold_is_a_malformed_result(result):
    st, _, _ = go(ScriptedModel([READ, FIN]), desk=_Desk(result=result))
    assert st.stop == "done"
    codes = [a.get("status") for a in st.audit if "tool" in a]
    assert codes == ["malformed_result"]
    _saves(st)


@pytest.mark.parametrize("latency", [-1000.0, float("inf"), float("nan"), "1"])
def test_a_tools_nonsense_latency_is_measured_instead(latency):
    """A negative latency gave elapsed -2994 s (the deadline moved back), and a checkpoint that would not load."""
    reads = [{"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001", "n": i}} for i in range(3)]
    st, _, _ = go(ScriptedModel([*reads, FIN]), Budget(deadline_s=5), desk=_Desk(latency=latency))
    assert st.elapsed >= 0 and st.elapsed == st.elapsed
    _saves(st)


class _Seeing:
    """Scripted replies; keeps the last result the model was shown before each reply."""
    name, provider, blocking = "seeing", "agentobs", False

    def __init__(self, replies):
        self.replies, self.shown = replies, []

    def propose(self, request):
        import json
        self.shown.append(json.loads(request.view).get("last_result"))
        return ModelResponse(reply=self.replies[min(len(self.shown) - 1, len(self.replies) - 1)], latency_s=1.0)


def test_a_plan_step_is_done_only_by_its_own_tool_and_must_be_in_the_plan():
    """Three reads tagged with the plan's three step ids marked the refund and the e-mail steps done, so a final
    'completed' passed the plan check with no refund made."""
    reads = [{"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001", "n": i}, "plan_step": s["id"]}
             for i, s in enumerate(policies.PLAN)]
    done = {"type": "final", "outcome": "completed", "text": "Refund issued"}
    m = _Seeing([{"type": "plan", "steps": policies.PLAN}, *reads, done])
    st, desk, _ = go(m, Budget(max_tool_calls=10, max_steps=10))
    assert [s.status for s in st.plan] == ["done", "pending", "pending"]
    assert st.outcome != "completed" and desk.effects == []
    assert [r["code"] for r in m.shown[3:5]] == ["plan_step_mismatch"] * 2
    assert m.shown[3]["detail"] == "step 's2' runs 'issue_refund', not 'get_order'"
    assert st.stop == "no_progress"                      # two rejected calls in a row: no progress, stopped
    m = _Seeing([{**READ, "plan_step": "s9"}, FIN])
    st, desk, _ = go(m)
    assert m.shown[1] == {"status": "error", "code": "unknown_plan_step", "detail": "no step 's9' in the plan"}
    assert st.tool_calls == 0


def test_a_plan_cannot_take_the_key_of_a_call_outside_the_plan():
    """A plan step named adhoc3 shared the idempotency key of the unplanned call at step 3: that refund was then
    skipped as already made, and the model told it succeeded."""
    m = _Seeing([{"type": "plan", "steps": [{"id": "adhoc3", "tool": "get_order", "depends_on": []}]}, FIN])
    st, _, _ = go(m)
    assert st.plan == [] and m.shown[1]["code"] == "invalid_plan"
    assert m.shown[1]["detail"] == ["adhoc3: reserved id (adhoc<n> names calls outside the plan)"]


class _Usage:
    name, provider, blocking = "huge-usage", "agentobs", False

    def __init__(self):
        self.inner = policies.SupportPolicy()

    def propose(self, request):
        r = self.inner.propose(request)
        return ModelResponse(reply=r.reply, latency_s=r.latency_s, input_tokens=10**400, output_tokens=5)


def test_a_reported_count_no_float_holds_is_not_charged():
    """A 400-digit input_tokens raised OverflowError out of the run (or made the cost infinite)."""
    st, _, _ = go(_Usage())
    assert st.stop == "done" and 0 < st.tokens < 10**9
    _saves(st)


def test_json_problem():
    assert json_problem({"a": [1, 2.5, None, True, "x", (1, 2)]}) is None
    assert json_problem(_nest(MAX_DEPTH)) is None
    assert json_problem(_nest(MAX_DEPTH + 1)) == f"nested deeper than {MAX_DEPTH} levels"
    assert "set" in json_problem({"a": {1}})


@pytest.mark.parametrize("returned", [None, {"type": "final", "outcome": "completed", "text": "x"}])
def test_a_model_that_returns_no_model_response_is_said_not_taken_for_a_timeout(returned):
    """A model returning None was taken for a timeout (stop deadline, elapsed set to the deadline, no error); one
    returning a dict raised AttributeError out of the run."""
    from agentobs.errors import ConfigError

    class Broken:
        name, provider, blocking = "broken", "agentobs", False

        def propose(self, request):
            return returned
    with pytest.raises(ConfigError, match=r"model 'broken' returned .*, not a ModelResponse"):
        go(Broken())


# -- numbers past Python's limits, and answers no reply can be read from (issue 43) ----------------------------------

BIG = 10**5000             # past Python's int-to-text limit (4,300 digits by default)


class _Paid:
    """Scripted replies, each reported as a paid call of 120 input and 30 output tokens."""
    name, provider, blocking = "paid", "agentobs", False

    def __init__(self, replies):
        self.replies, self.calls = replies, 0

    def propose(self, request):
        self.calls += 1
        reply = self.replies[min(self.calls, len(self.replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        return ModelResponse(reply=reply, latency_s=1.0, input_tokens=120, output_tokens=30)


@pytest.mark.parametrize("reply", [
    {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001", "n": BIG}},
    {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001", "n": -BIG}},
    {"type": "final", "outcome": "completed", "text": "x", "n": [BIG]},
    BIG,
    {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001", "x": float("nan")}},
    {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001", "x": [float("inf")]}},
    float("-inf"),
], ids=["int-in-args", "negative-int", "int-in-final", "int-alone", "nan", "inf", "-inf-alone"])
@pytest.mark.parametrize("store", [False, True])
def test_a_reply_with_a_number_past_pythons_limits_is_a_malformed_reply_charged_as_reported(reply, store):
    """A reply holding an integer of 5,000 digits escaped Kernel.run as a raw ValueError (digesting it); nan and inf
    were kept in the state, which then was no JSON. Each is a malformed_reply the model sees, charged as reported."""
    kw = {"checkpoints": SQLiteCheckpointStore(":memory:")} if store else {}
    st, desk, _ = go(_Paid([reply, FIN]), **kw)
    assert st.stop == "done" and st.outcome == "cannot_complete" and desk.effects == []
    calls = [a for a in st.audit if "model" in a]
    assert [a["error"] for a in calls] == ["malformed_reply", None] and calls[0]["reply"] is None
    assert (calls[0]["input_tokens"], calls[0]["output_tokens"]) == (120, 30)
    assert st.tokens == 2 * 150
    _saves(st)


@pytest.mark.parametrize("value", [BIG, -BIG, float("nan"), float("inf"), {"deep": [[BIG]]}],
                         ids=["int", "negative-int", "nan", "inf", "nested-int"])
def test_a_tool_result_with_a_number_past_pythons_limits_is_a_malformed_result(value):
    """A tool result holding an integer of 5,000 digits escaped Kernel.run as a raw ValueError."""
    seen = _Seeing([READ, FIN])
    st, _, _ = go(seen, desk=_Desk(result={"status": "ok", "n": value}))
    assert st.stop == "done"
    assert [a.get("status") for a in st.audit if "tool" in a] == ["malformed_result"]
    assert seen.shown[1]["code"] == "malformed_result"
    assert "digits" in seen.shown[1]["detail"] or "not finite" in seen.shown[1]["detail"]
    _saves(st)


def test_a_model_that_raises_proposal_error_is_shown_a_malformed_reply_not_retried():
    """A ProposalError from a model (an adapter's "I could not read this") was retried as a provider failure."""
    from agentobs.errors import ProposalError

    m = _Paid([ProposalError("malformed_tool_call", "the arguments of 'get_order' are not valid JSON"), FIN])
    st, _, _ = go(m, Budget(max_attempts=3, backoff_s=0.01))
    assert m.calls == 2 and st.stop == "done"
    first = next(a for a in st.audit if "model" in a)
    assert first["error"] == "malformed_reply" and (first["input_tokens"], first["output_tokens"]) != (0, 0)


def test_a_response_an_adapter_marks_malformed_is_shown_and_charged_and_replays():
    from agentobs import Recorder, Replayer

    class Adapter(_Paid):
        def propose(self, request):
            self.calls += 1
            if self.calls == 1:
                return ModelResponse(reply=None, malformed="the provider's answer is nested too deeply",
                                     input_tokens=700, output_tokens=9)
            return ModelResponse(reply=FIN, input_tokens=120, output_tokens=30)

    seen = []

    class Watch(Adapter):
        def propose(self, request):
            import json
            seen.append(json.loads(request.view).get("last_result"))
            return super().propose(request)

    rec = Recorder(Watch([]))
    st, _, _ = go(rec)
    assert seen[1] == {"status": "error", "code": "malformed_reply",
                       "detail": "the provider's answer is nested too deeply; answer with one proposal"}
    assert st.tokens == 709 + 150
    replayed, _, _ = go(Replayer.of(rec))
    assert replayed.to_json() == st.to_json()


def test_json_problem_at_pythons_number_limits():
    import sys
    from enum import IntEnum

    limit = sys.get_int_max_str_digits()
    assert json_problem(10**limit - 1) is None and json_problem(-(10**limit - 1)) is None
    assert "more than" in json_problem(10**limit) and "more than" in json_problem({"a": [-(10**limit)]})
    assert json_problem([1.5, -0.0, 1e308, 2**62, -(2**62)]) is None
    assert "not finite" in json_problem({"a": float("nan")})
    Big = IntEnum("Big", {"X": 10**limit})
    assert "more than" in json_problem([Big.X])
    sys.set_int_max_str_digits(1000)                    # the process's own limit is the one that holds
    try:
        assert "more than 1000 digits" in json_problem(10**1000) and json_problem(10**1000 - 1) is None
    finally:
        sys.set_int_max_str_digits(limit)


def test_a_limit_message_names_an_integer_past_pythons_text_limit_by_its_magnitude():
    from agentobs.errors import BudgetExceeded

    assert "observed about 10^5000" in str(BudgetExceeded("max_tokens", 3000, 10**5000))   # (str() would raise)


@pytest.mark.parametrize("latency", [10**400, 10**5000, -(10**400)], ids=["1e400", "1e5000", "-1e400"])
def test_a_declared_latency_past_a_doubles_range_is_measured_instead(latency):
    """A model or tool declaring latency_s=10**400 raised OverflowError out of Kernel.run (no float holds it)."""
    reads = [{"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001", "n": i}} for i in range(2)]

    class Slow(_Paid):
        def propose(self, request):
            resp = super().propose(request)
            return ModelResponse(reply=resp.reply, latency_s=latency, input_tokens=120, output_tokens=30)

    st, _, _ = go(Slow([*reads, FIN]), Budget(deadline_s=5), desk=_Desk(latency=latency))
    assert st.stop == "done" and 0 <= st.elapsed < 5
    _saves(st)


def test_results_and_replies_nested_100000_deep_are_refused_without_recursing():
    deep = _nest(100_000)
    st, _, _ = go(_Paid([deep, READ, FIN]), desk=_Desk(result={"status": "ok", "d": deep}))
    assert next(a.get("error") for a in st.audit if "model" in a) == "malformed_reply"
    assert [a.get("status") for a in st.audit if "tool" in a] == ["malformed_result"]
    _saves(st)


def test_a_models_report_of_the_wrong_types_is_taken_as_not_reported():
    """finish_reason=5 raised AttributeError out of Kernel.run; a response model that is no text reached telemetry."""
    from agentobs.contract.events import ModelReturned
    from agentobs.testing import EventLog

    class Odd(_Paid):
        def propose(self, request):
            resp = super().propose(request)
            return ModelResponse(reply=resp.reply, latency_s=1.0, input_tokens=120, output_tokens=30, finish_reason=5,
                                 response_model=object(), cache_read_input_tokens="x", reasoning_output_tokens=BIG)

    log = EventLog()
    st, _, _ = go(Odd([READ, FIN]), observers=[log])
    assert st.stop == "done"
    returned = log.of(ModelReturned)
    assert all(r.response_model is None and isinstance(r.finish_reason, str) for r in returned)
    assert all(r.usage.cache_read_input_tokens is None and r.usage.reasoning_output_tokens is None for r in returned)


class _UnreadableDict(dict):
    """A mapping of the caller's own class whose items raise when read (JSON's writer calls ``items`` too)."""

    def items(self):
        raise RuntimeError("items")


class _UnreadableList(list):
    def __iter__(self):
        raise RuntimeError("iter")


@pytest.mark.parametrize("make", [lambda: _UnreadableDict(a=1), lambda: _UnreadableList([1])])
def test_a_value_whose_items_raise_when_read_is_refused_never_raised(make):
    """A dict or list subclass whose items raise escaped Kernel.run as its own exception, from a reply, a final
    answer, tool arguments and a tool result alike; each is now a malformed reply or result the model sees."""
    st, _, _ = go(ScriptedModel([make(), FIN]))
    assert [a.get("error") for a in st.audit if a.get("error")] == ["malformed_reply"]
    st, _, _ = go(ScriptedModel([{"type": "final", "outcome": "cannot_complete", "text": make()}, FIN]))
    assert [a.get("error") for a in st.audit if a.get("error")] == ["malformed_reply"]
    st, desk, _ = go(ScriptedModel([{"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001",
                                                                                     "x": make()}}, FIN]))
    assert [a.get("error") for a in st.audit if a.get("error")] == ["malformed_reply"] and desk.effects == []
    st, _, _ = go(ScriptedModel([READ, FIN]), desk=_Desk(result={"status": "ok", "v": make()}))
    assert [a.get("status") for a in st.audit if "tool" in a] == ["malformed_result"]
    _saves(st)
    assert "cannot be read (RuntimeError" in json_problem({"v": make()})
