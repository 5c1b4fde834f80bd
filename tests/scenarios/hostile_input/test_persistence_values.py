"""What the kernel reads back that it wrote earlier (checkpoints, recordings) is checked for its values, not only
its shape, and what a model reports is taken only when it is a value (found by fuzzing the kernel's persistence).

A checkpoint's checksum is not keyed: anyone who can write the file can rehash it. So the checks here are on
what a checkpoint says, whatever its checksum: a held call whose digest is not its own, negative or non-finite
totals (each lifts a budget), nesting that could not be saved again, integers at SQLite's limit.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3

import pytest

from agentobs import Budget, CheckpointCorrupt, Decision, Kernel, Recorder, Replayer, SQLiteCheckpointStore, TaskState
from agentobs.domain import policies
from agentobs.domain.scenarios import new_state
from agentobs.domain.support import FACTS, SupportDesk
from agentobs.errors import CheckpointError, ReplayError
from agentobs.kernel.models import ModelResponse


def _kernel(desk, store, model=None, **kw):
    return Kernel(model or policies.SupportPolicy("ord_1004", 8000), desk, facts=FACTS, checkpoints=store, **kw)


def _rewrite(path, change):
    """Rewrites task t1's payload with ``change(dict)`` and a matching checksum, as someone with the file can."""
    db = sqlite3.connect(path)
    data = json.loads(db.execute("SELECT payload FROM checkpoints WHERE task_id = 't1'").fetchone()[0])
    change(data)
    payload = json.dumps(data, sort_keys=True, allow_nan=True)
    db.execute("UPDATE checkpoints SET payload = ?, sha256 = ? WHERE task_id = 't1'",
               (payload, hashlib.sha256(payload.encode()).hexdigest()))
    db.commit()
    db.close()


def test_an_approval_cannot_be_moved_to_other_arguments_by_editing_the_checkpoint(tmp_path):
    """The human approved a refund of 8000; the held call's amount was then changed to 15000 in the file (its
    stored digest kept): the resumed run paid 15000. The digest is now recomputed from the held call on load."""
    path = tmp_path / "appr.db"
    desk = SupportDesk()
    st = _kernel(desk, SQLiteCheckpointStore(path)).run(new_state())
    assert st.pending is not None and st.pending.args["amount_cents"] == 8000
    ok = Decision.approve(st.pending, "human:maya")
    _rewrite(path, lambda d: d["pending"]["args"].update(amount_cents=15000))
    with pytest.raises(CheckpointCorrupt, match=r"pending\.digest is not the digest") as exc:
        _kernel(desk, SQLiteCheckpointStore(path)).resume("t1", ok)
    assert str(path) in str(exc.value) and "\n" not in str(exc.value)
    assert desk.refunds() == []


@pytest.mark.parametrize("field,value", [("cost_usd", math.nan), ("cost_usd", -1.0), ("elapsed", math.inf),
                                         ("elapsed", -1e9), ("tool_calls", -50), ("step", -100),
                                         ("tokens", -10**6), ("seen", {"abc": -3})])
def test_totals_that_would_lift_a_budget_are_refused(tmp_path, field, value):
    """NaN or negative totals in a checkpoint switched the budgets off (a NaN cost never exceeds max_usd; a step
    of -100 grants a hundred more): the run then made refunds a budget of 0.0001 USD would have stopped."""
    path = tmp_path / "c.db"
    store = SQLiteCheckpointStore(path)
    store.save(new_state(), None)
    store.close()
    _rewrite(path, lambda d: d.update({field: value}))
    desk = SupportDesk()
    with pytest.raises(CheckpointCorrupt, match=f"state.{field}"):
        Kernel(policies.SupportPolicy(), desk, facts=FACTS, budget=Budget(max_usd=0.0001), price_as="gpt-4.1-mini",
               checkpoints=SQLiteCheckpointStore(path)).recover("t1")
    assert desk.effects == []


def test_a_state_nested_too_deeply_to_be_saved_again_is_refused_on_load(tmp_path):
    """Facts nested 600 deep loaded, then the kernel's first save raised RecursionError."""
    path = tmp_path / "deep.db"
    store = SQLiteCheckpointStore(path)
    store.save(new_state(), None)
    store.close()
    deep: dict = {}
    node = deep
    for _ in range(600):
        node["a"] = {}
        node = node["a"]
    _rewrite(path, lambda d: d["facts"].update(k=deep))
    with pytest.raises(CheckpointCorrupt, match="too deeply"):
        Kernel(policies.SupportPolicy(), SupportDesk(), facts=FACTS,
               checkpoints=SQLiteCheckpointStore(path)).recover("t1")


def test_integers_at_sqlites_limit_and_a_negative_layout_are_corrupt_not_overflow_errors(tmp_path):
    path = tmp_path / "ov.db"
    store = SQLiteCheckpointStore(path)
    store.save(new_state(), None)
    store.acquire("t1", owner="w")
    store.close()
    db = sqlite3.connect(path)
    db.execute("UPDATE checkpoints SET version = ?", (2**63 - 1,))
    db.execute("UPDATE leases SET token = ?, owner = NULL, expires_at = 0", (2**63 - 1,))
    db.commit()
    db.close()
    store = SQLiteCheckpointStore(path)
    with pytest.raises(CheckpointCorrupt, match="save version"):
        store.load("t1")
    with pytest.raises(CheckpointCorrupt, match="lease token"):
        store.acquire("t1")
    store.close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = -1")
    db.commit()
    db.close()
    with pytest.raises(CheckpointCorrupt, match="layout version -1"):
        SQLiteCheckpointStore(path)


def test_unusable_paths_are_checkpoint_errors_naming_them(tmp_path):
    (tmp_path / "afile").write_text("x")
    for p in (tmp_path / "afile" / "ckpt.db", tmp_path / ("a" * 300), f"{tmp_path}/a\0b.db"):
        with pytest.raises(CheckpointError, match="cannot be created") as exc:
            SQLiteCheckpointStore(p)
        assert "\n" not in str(exc.value)


def test_a_path_that_looks_like_a_uri_is_a_file_of_that_name(tmp_path, monkeypatch):
    """SQLite reads a name starting with "file:" as a URI: "file:ckpt.db?mode=memory" kept the checkpoints in
    memory (lost at a crash) beside an empty decoy file. It is now the file of that name."""
    monkeypatch.chdir(tmp_path)
    name = "file:ckpt.db?mode=memory"
    store = SQLiteCheckpointStore(name)
    store.save(new_state(), None)
    store.close()
    assert os.listdir(tmp_path) == [name] and os.path.getsize(tmp_path / name) > 0
    assert SQLiteCheckpointStore(name).exists("t1")


# -- recordings and model reports ------------------------------------------------------------------------

def _recording(tmp_path, change=None):
    rec = Recorder(policies.SupportPolicy())
    Kernel(rec, SupportDesk(), facts=FACTS).run(new_state())
    data = rec.to_dict()
    if change:
        change(data)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("field,value,said", [
    ("latency_s", "1.5", "latency_s"), ("latency_s", -3.0, "latency_s"), ("latency_s", float("nan"), "latency_s"),
    ("input_tokens", "10", "input_tokens"), ("input_tokens", -500, "input_tokens"), ("output_tokens", True,
                                                                                     "output_tokens"),
    ("finish_reason", 7, "finish_reason")])
def test_a_recording_with_values_of_the_wrong_kind_is_refused_at_load(tmp_path, field, value, said):
    """Such a recording loaded, then the run raised TypeError (latency "1.5") or ran with negative tokens or time."""
    path = _recording(tmp_path, lambda d: d["responses"][0].update({field: value}))
    with pytest.raises(ReplayError, match=f"reply 1: {said}") as exc:
        Replayer.load(path)
    assert str(path) in str(exc.value)


@pytest.mark.parametrize("version", [True, 1.0])
def test_a_recording_schema_version_must_be_the_integer(tmp_path, version):
    with pytest.raises(ReplayError, match="schema_version"):
        Replayer.load(_recording(tmp_path, lambda d: d.update(schema_version=version)))


def test_a_recording_nested_past_the_recursion_limit_is_a_replay_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"schema_version": 1, "responses": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ReplayError, match="not a recorded run"):
        Replayer.load(path)


def test_a_replay_cut_short_ends_the_run_with_the_replay_error(tmp_path):
    """The kernel took the ReplayError for a provider failure: it retried with backoff charged and ended with
    model_error, the message lost. Running out of recorded replies is the replay's error, raised to the caller."""
    rec = Recorder(policies.SupportPolicy())
    Kernel(rec, SupportDesk(), facts=FACTS).run(new_state())
    desk = SupportDesk()
    with pytest.raises(ReplayError, match="only 3 were recorded"):
        Kernel(Replayer(rec.responses[:3]), desk, facts=FACTS).run(new_state())


class _Reporting:
    """A model that reports nonsense usage and latency with its replies (a broken adapter)."""
    name, provider, blocking = "broken", "agentobs", False

    def __init__(self, **report):
        self.inner, self.report = policies.SupportPolicy(), report

    def propose(self, request):
        r = self.inner.propose(request)
        return ModelResponse(reply=r.reply, **{"latency_s": r.latency_s, **self.report})


@pytest.mark.parametrize("report", [{"latency_s": math.nan}, {"latency_s": -5.0},
                                    {"input_tokens": -100, "output_tokens": 5},
                                    {"input_tokens": True, "output_tokens": 5}])
def test_a_models_nonsense_latency_or_usage_is_not_charged(report):
    """A NaN latency left elapsed NaN (no deadline could fire) and was checkpointed as non-standard JSON; negative
    token counts were charged as reported. The kernel now measures the call, or estimates the tokens, instead."""
    st = Kernel(_Reporting(**report), SupportDesk(), facts=FACTS, budget=Budget(deadline_s=600)).run(new_state())
    assert st.stop == "done"
    assert math.isfinite(st.elapsed) and st.elapsed >= 0
    assert st.tokens > 0 and st.input_tokens >= 0 and st.output_tokens >= 0
    TaskState.from_json(st.to_json())


def test_a_lease_row_with_a_huge_owner_or_expiry_gives_a_short_message(tmp_path):
    """A 10 MB owner name was copied whole into the message, and an expiry of 1e308 printed a 309-digit count."""
    from agentobs.errors import CheckpointLeased
    path = tmp_path / "lease.db"
    store = SQLiteCheckpointStore(path)
    store.acquire("t1", owner="w")
    db = sqlite3.connect(path)
    db.execute("UPDATE leases SET owner = ?, expires_at = ?", ("x" * 10_000_000, 1e308))
    db.commit()
    db.close()
    with pytest.raises(CheckpointLeased) as exc:
        store.acquire("t1", owner="other")
    assert len(str(exc.value)) < 500 and "more than 30 years" in str(exc.value)


@pytest.mark.parametrize("status,stop", [("stopped", None), ("running", "done"), ("suspended", "done"),
                                         ("stopped", "needs_approval")])
def test_a_status_that_does_not_go_with_the_stop_is_refused(tmp_path, status, stop):
    """status "stopped" with no stop reason was returned by recover as a finished run with stop None."""
    path = tmp_path / "s.db"
    store = SQLiteCheckpointStore(path)
    store.save(new_state(), None)
    store.close()
    _rewrite(path, lambda d: d.update(status=status, stop=stop))
    with pytest.raises(CheckpointCorrupt, match=r"does not go with state\.stop"):
        SQLiteCheckpointStore(path).load("t1")
