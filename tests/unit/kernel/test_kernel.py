"""Kernel behaviours beyond the seeds' tables: budgets, malformed replies, guards, keys, checkpoints."""
import math
import os

import pytest

from agentobs import (
    ApprovalError,
    Budget,
    CheckpointConflict,
    CheckpointCorrupt,
    ConfigError,
    Decision,
    EventLog,
    FunctionModel,
    Kernel,
    Prices,
    ScriptedModel,
    SQLiteCheckpointStore,
    StopReason,
    TaskState,
    ToolSpec,
    closing_message,
)
from agentobs.domain import policies
from agentobs.domain.scenarios import FACTS, SEED000, go, new_state
from agentobs.domain.support import SupportDesk
from agentobs.kernel import events as ev
from agentobs.kernel.state import SCHEMA_VERSION
from agentobs.kernel.stops import ROUTES


@pytest.mark.parametrize("kwargs, needle", [
    ({"max_steps": 0}, "max_steps must be an integer >= 1"),
    ({"max_steps": -3}, "max_steps"),
    ({"max_tokens": 2.5}, "max_tokens"),
    ({"max_tool_calls": True}, "max_tool_calls"),
    ({"deadline_s": 0}, "deadline_s"),
    ({"deadline_s": math.nan}, "deadline_s"),
    ({"max_usd": -1.0}, "max_usd"),
    ({"max_usd": math.inf}, "max_usd"),
    ({"max_output_tokens": 5000}, "max_output_tokens (5000) must be below max_tokens"),
    ({"repeat_window": "forever"}, "repeat_window"),
    ({"progress": "vibes"}, "progress"),
    ({"max_repeat": 0}, "max_repeat"),
])
def test_nonsense_budgets_are_refused_at_construction(kwargs, needle):
    with pytest.raises(ConfigError, match=r"^Budget: ") as exc:
        Budget(**kwargs)
    assert needle in str(exc.value)


def test_dollar_budget_needs_a_price():
    with pytest.raises(ConfigError, match="has no price"):
        Kernel(ScriptedModel([{}], name="mystery-model-9"), SupportDesk(), budget=Budget(max_usd=1.0))
    k = Kernel(ScriptedModel([{"type": "final", "text": "x"}], name="mystery-model-9"), SupportDesk(),
               budget=Budget(max_usd=1.0), prices=Prices({"mystery-model-9": (1.0, 2.0)}))
    st = k.run(new_state())
    assert st.cost_usd == pytest.approx((st.input_tokens * 1.0 + st.output_tokens * 2.0) / 1e6)
    assert st.unpriced_calls == 0


def test_unpriced_calls_are_flagged_not_free():
    k = Kernel(ScriptedModel([{"type": "final", "text": "x"}], name="mystery-model-9"), SupportDesk(),
               prices=Prices(use_genai_prices=True))
    st = k.run(new_state())
    assert st.unpriced_calls == 1 and st.cost_usd == 0.0


def test_stop_routes_and_closing_messages_cover_every_reason():
    assert set(ROUTES) == set(StopReason)
    for stop in StopReason:
        st = new_state()
        st.finish(stop)
        msg = closing_message(st)
        assert msg and "None" not in msg


MALFORMED = [None, "just text", 42, [], {}, {"type": "dance"}, {"type": "tool"}, {"type": "tool", "name": ""},
             {"type": "tool", "name": "get_order", "args": [1, 2]},
             {"type": "tool", "name": "delete_order", "args": {}},
             {"type": "final", "outcome": "maybe"}, {"type": "final", "text": 7}, {"type": "plan"},
             {"type": "plan", "steps": "all of them"}, {"type": "plan", "steps": [1, "x", {"id": 3}]},
             {"type": "tool", "name": "issue_refund", "args": {"order_id": ["x"], "amount_cents": "lots"}},
             {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001"}, "plan_step": 5},
             {"type": "tool", "name": "get_order", "args": {"order_id": "x" * 5000}}]


@pytest.mark.parametrize("reply", MALFORMED, ids=[str(i) for i in range(len(MALFORMED))])
def test_malformed_replies_become_errors_the_model_sees_and_still_count(reply):
    seen = []

    def fn(view, i):
        seen.append(view["last_result"])
        return reply if i == 1 else {"type": "final", "outcome": "cannot_complete", "text": "stop"}
    st, desk, _ = go(FunctionModel(fn))
    assert st.stop == "done" and st.step == 2 and st.tokens > 0
    assert seen[1]["status"] == "error", seen[1]
    assert desk.effects == []


def test_tools_that_raise_become_results():
    class Broken:
        def spec(self, name):
            return ToolSpec(name=name, effect="read")

        def invoke(self, call):
            raise RuntimeError("boom") if call.name == "a" else ConnectionError("down")

    replies = [{"type": "tool", "name": "a", "args": {}}, {"type": "tool", "name": "b", "args": {}},
               {"type": "final", "outcome": "cannot_complete", "text": "x"}]
    log = EventLog()
    st = Kernel(ScriptedModel(replies), Broken(), observers=[log]).run(new_state())
    statuses = [(e.name, e.status, e.attempts) for e in log.of(ev.ToolReturned)]
    assert statuses == [("a", "tool_exception", 1), ("b", "tool_unavailable", 3)]
    assert st.stop == "done" and st.tool_calls == 4


def test_model_failures_retry_then_stop_with_model_error():
    class Down:
        name, provider = "down", "agentobs"

        def propose(self, request):
            raise ConnectionError("provider unreachable")
    st = Kernel(Down(), SupportDesk()).run(new_state())
    assert st.stop == "model_error" and st.tokens == 0 and st.step == 1


def test_every_call_gets_the_remaining_time_as_its_timeout():
    timeouts = []

    class Desk(SupportDesk):
        def invoke(self, call):
            timeouts.append(("tool", call.timeout_s))
            return super().invoke(call)

    class Model(policies.SupportPolicy):
        def propose(self, request):
            timeouts.append(("model", request.timeout_s))
            return super().propose(request)
    go(Model(), desk=Desk())
    assert timeouts[:4] == [("model", 30.0), ("model", 28.5), ("tool", 27.0), ("model", 26.6)]


def test_repeat_window_since_progress_allows_rereads_between_edits():
    # a coding-agent-like run: the same read after every write
    read = {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001"}, "plan_step": None}
    replies = [read, {"type": "tool", "name": "issue_refund", "args": {"order_id": "ord_1001", "amount_cents": 100}},
               read, {"type": "tool", "name": "send_status_email", "args": {"order_id": "ord_1001"}}, read,
               {"type": "final", "outcome": "completed", "text": "ok"}]
    whole, _, _ = go(ScriptedModel(replies))
    since, desk, _ = go(ScriptedModel(replies), Budget(repeat_window="since_progress"))
    assert whole.stop == "repeated_call"
    assert since.stop == "done" and desk.effects == [("refund", "ord_1001", 100), ("email", "ord_1001")]


def test_repeated_logical_write_replays_its_stored_result():
    refund = {"type": "tool", "name": "issue_refund", "plan_step": "s2",
              "args": {"order_id": "ord_1001", "amount_cents": 3000, "reason": "damaged"}}
    replies = [{"type": "plan", "steps": policies.PLAN},
               {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001"}, "plan_step": "s1"},
               refund, refund, {"type": "final", "outcome": "cannot_complete", "text": "x"}]
    st, desk, _ = go(ScriptedModel(replies))
    assert desk.refunds() == [("refund", "ord_1001", 3000)]
    assert st.last_result is None or st.audit[-2]["result"].get("replayed") is True


def test_unknown_outcome_is_never_retried_under_a_new_key():
    r = SEED000["H write times out"]()
    assert r.state.stop == "unknown_outcome" and r.state.unknown_writes == ["t1:s2"]
    assert [a["key"] for a in r.state.audit if a.get("tool") == "issue_refund"] == ["t1:s2"]
    with pytest.raises(ApprovalError, match="already stopped"):
        Kernel(policies.SupportPolicy(), r.desk).resume(r.state)


def test_state_json_round_trip_and_schema_version():
    st = SEED000["G refund needs approval"]().state
    data = st.to_dict()
    assert data["schema_version"] == SCHEMA_VERSION
    again = TaskState.from_json(st.to_json())
    assert again.to_json() == st.to_json() and again.pending == st.pending
    with pytest.raises(CheckpointCorrupt, match="schema_version"):
        TaskState.from_dict({**data, "schema_version": 99})


# -- checkpoints --------------------------------------------------------------------------------

def _suspended_in_store(tmp_path):
    store = SQLiteCheckpointStore(tmp_path / "ckpt.db")
    desk = SupportDesk()
    k = Kernel(policies.SupportPolicy("ord_1004", 8000), desk, facts=FACTS, checkpoints=store)
    st = k.run(new_state())
    assert st.status == "suspended"
    return store, desk


def test_two_workers_resuming_one_snapshot_exactly_one_proceeds(tmp_path):
    store, desk = _suspended_in_store(tmp_path)
    a, b = store.load("t1"), store.load("t1")
    worker_a = Kernel(policies.SupportPolicy("ord_1004", 8000), desk, facts=FACTS, checkpoints=store)
    worker_b = Kernel(policies.SupportPolicy("ord_1004", 8000), desk, facts=FACTS,
                      checkpoints=SQLiteCheckpointStore(tmp_path / "ckpt.db"))
    st = worker_a.resume(a, Decision.approve(a.state.pending))
    assert st.stop == "done"
    calls_before = desk.calls
    with pytest.raises(CheckpointConflict, match="another worker"):
        worker_b.resume(b, Decision.approve(b.state.pending))
    assert desk.calls == calls_before and desk.refunds() == [("refund", "ord_1004", 8000)]


def test_corrupted_checkpoint_is_detected_and_never_overwritten(tmp_path):
    import sqlite3
    store, _desk = _suspended_in_store(tmp_path)
    db = sqlite3.connect(tmp_path / "ckpt.db")
    db.execute("UPDATE checkpoints SET payload = substr(payload, 1, 100)")
    db.commit()
    before = db.execute("SELECT payload, sha256, version FROM checkpoints").fetchone()
    with pytest.raises(CheckpointCorrupt, match="fails its checksum"):
        store.load("t1")
    st = TaskState.from_json(SEED000["G refund needs approval"]().state.to_json())
    with pytest.raises(CheckpointCorrupt):
        store.save(st, before[2])
    assert db.execute("SELECT payload, sha256, version FROM checkpoints").fetchone() == before


def test_checkpoint_file_is_private(tmp_path):
    _suspended_in_store(tmp_path)
    assert os.stat(tmp_path / "ckpt.db").st_mode & 0o777 == 0o600
