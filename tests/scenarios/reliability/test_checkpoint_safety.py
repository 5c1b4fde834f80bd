"""Checkpoint safety (issue 10, point 7): a lease with a fencing token per task, and every malformed
database or payload refused with CheckpointCorrupt naming the file.

Lease times come from a SimClock given to the stores, so expiry is tested without sleeping. Two
workers are two kernels, each with its own store (its own SQLite connection) on one file; the first
runs in a thread and is held inside a tool or model call with threading.Event.
"""
import hashlib
import json
import os
import sqlite3
import threading

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentobs import (
    ApprovalError,
    CheckpointConflict,
    CheckpointCorrupt,
    ConfigError,
    CrashAt,
    Decision,
    Kernel,
    SimClock,
    SimulatedCrash,
    SQLiteCheckpointStore,
    TaskState,
)
from agentobs.domain import policies
from agentobs.domain.scenarios import new_state
from agentobs.domain.support import FACTS, SupportDesk
from agentobs.errors import CheckpointError, CheckpointLeased
from agentobs.kernel.checkpoint import ENV_LEASE_TTL, LAYOUT_VERSION, resolve_lease_ttl
from agentobs.kernel.models import ModelRequest
from agentobs.kernel.state import SCHEMA_VERSION

REFUND, EMAIL = ("refund", "ord_1001", 3000), ("email", "ord_1001")
WAIT = 60          # a guard against a hung thread only; nothing asserts on time


class HeldDesk(SupportDesk):
    """The support desk; the first call of ``hold`` happens in the world, then waits for ``go`` to answer."""

    def __init__(self, hold: str):
        super().__init__()
        self.hold, self.entered, self.go = hold, threading.Event(), threading.Event()

    def invoke(self, call):
        resp = super().invoke(call)
        if call.name == self.hold and not self.entered.is_set():
            self.entered.set()
            self.go.wait(WAIT)
        return resp


class HeldModel(policies.SupportPolicy):
    """The support policy; waits for ``go`` before proposing the refund (a worker paused mid-step)."""

    def __init__(self):
        super().__init__()
        self.entered, self.go = threading.Event(), threading.Event()

    def propose(self, request: ModelRequest):
        resp = super().propose(request)
        if isinstance(resp.reply, dict) and resp.reply.get("name") == "issue_refund" and not self.entered.is_set():
            self.entered.set()
            self.go.wait(WAIT)
        return resp


def _kernel(model, desk, store, **kw):
    return Kernel(model, desk, facts=FACTS, checkpoints=store, **kw)


def _in_thread(fn):
    out = {}

    def body():
        try:
            out["state"] = fn()
        except BaseException as exc:  # the test inspects it
            out["error"] = exc
    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t, out


@pytest.fixture
def two_stores(tmp_path):
    clock = SimClock()
    path = tmp_path / "ckpt.db"
    a = SQLiteCheckpointStore(path, lease_ttl=60, clock=clock)
    b = SQLiteCheckpointStore(path, lease_ttl=60, clock=clock)
    yield a, b, clock, path
    a.close()
    b.close()


# -- the lease -------------------------------------------------------------------------------------

def test_recover_during_a_write_is_refused_then_takes_over_after_the_ttl_and_fences_the_zombie(two_stores):
    store_a, store_b, clock, path = two_stores
    desk = HeldDesk("issue_refund")
    thread, a = _in_thread(lambda: _kernel(policies.SupportPolicy(), desk, store_a).run(new_state()))
    assert desk.entered.wait(WAIT)                 # A is inside the refund: done in the world, not yet answered
    calls = desk.calls
    worker_b = _kernel(policies.SupportPolicy(), desk, store_b)
    with pytest.raises(CheckpointLeased) as exc:
        worker_b.recover("t1")
    msg = str(exc.value)
    assert "being run by worker" in msg and str(path) in msg and "until" in msg and "expires" in msg
    assert "\n" not in msg
    assert desk.calls == calls and desk.effects == [REFUND]     # B ran nothing; one refund so far

    clock.sleep(30)                                 # still inside A's TTL
    with pytest.raises(CheckpointLeased):
        worker_b.recover("t1")
    clock.sleep(31)                                 # A never answered: its lease ran out
    st = worker_b.recover("t1")
    assert st.stop == "done" and st.outcome == "completed"
    assert desk.effects == [REFUND, EMAIL]          # 0 duplicated, 0 lost
    refund = [x for x in st.audit if x.get("tool") == "issue_refund"]
    assert refund[-1]["result"].get("replayed") is True
    saved = store_b.load("t1")

    desk.go.set()                                   # the zombie A wakes up with the refund's answer
    thread.join(WAIT)
    assert isinstance(a.get("error"), CheckpointLeased) and "lost the lease" in str(a["error"])
    assert desk.effects == [REFUND, EMAIL]          # A neither saved nor wrote again
    again = store_b.load("t1")
    assert again.version == saved.version and again.state.to_json() == saved.state.to_json()


def test_a_worker_that_lost_its_lease_does_not_write(two_stores):
    store_a, store_b, clock, _ = two_stores
    desk, model = SupportDesk(), HeldModel()
    thread, a = _in_thread(lambda: _kernel(model, desk, store_a).run(new_state()))
    assert model.entered.wait(WAIT)                 # A is about to propose the refund
    with pytest.raises(CheckpointLeased):
        _kernel(policies.SupportPolicy(), desk, store_b).recover("t1")
    clock.sleep(61)
    st = _kernel(policies.SupportPolicy(), desk, store_b).recover("t1")
    assert st.stop == "done" and desk.effects == [REFUND, EMAIL]
    calls = desk.calls
    model.go.set()                                  # A proposes the refund: the kernel checks its lease first
    thread.join(WAIT)
    assert isinstance(a.get("error"), CheckpointLeased)
    assert desk.calls == calls and desk.effects == [REFUND, EMAIL]


def test_a_crashed_worker_keeps_its_lease_until_the_ttl(two_stores):
    store_a, store_b, clock, _ = two_stores
    desk = SupportDesk()
    with pytest.raises(SimulatedCrash):
        _kernel(policies.SupportPolicy(), desk, store_a, observers=[CrashAt(boundary="after_tool", tool="issue_refund")]
                ).run(new_state())
    worker_b = _kernel(policies.SupportPolicy(), desk, store_b)
    with pytest.raises(CheckpointLeased):
        worker_b.run_or_recover(new_state())
    assert desk.effects == [REFUND]
    clock.sleep(61)
    st = worker_b.run_or_recover(new_state())
    assert st.stop == "done" and desk.effects == [REFUND, EMAIL]


def test_the_lease_is_renewed_at_every_save(two_stores):
    store_a, store_b, clock, _ = two_stores
    attempts = []

    class SlowProgress:                             # 50 s of lease time pass between saves, 60 s TTL
        def notify(self, event):
            if type(event).__name__ == "CheckpointSaved":
                clock.sleep(50)
                try:
                    store_b.acquire("t1")
                    attempts.append("acquired")
                except CheckpointLeased:
                    attempts.append("refused")

    st = _kernel(policies.SupportPolicy(), SupportDesk(), store_a, observers=[SlowProgress()]).run(new_state())
    assert st.stop == "done" and len(attempts) >= 4 and set(attempts) == {"refused"}


def test_the_lease_is_released_when_the_run_ends_or_aborts(two_stores):
    store_a, store_b, _, _ = two_stores
    desk = SupportDesk()
    st = _kernel(policies.SupportPolicy("ord_1004", 8000), desk, store_a).run(new_state())
    assert st.status == "suspended"
    worker_b = _kernel(policies.SupportPolicy("ord_1004", 8000), desk, store_b)
    with pytest.raises(ApprovalError):              # wrong decision: the resume aborts after taking the lease
        worker_b.resume("t1", Decision(approved=True, digest="0" * 12, by="human:x"))
    st = _kernel(policies.SupportPolicy("ord_1004", 8000), desk, store_a).resume(
        "t1", Decision.approve(store_a.load("t1").state.pending))
    assert st.stop == "done" and desk.refunds() == [("refund", "ord_1004", 8000)]

    class Interrupting(SupportDesk):               # Ctrl-C once, during the e-mail
        def invoke(self, call):
            if call.name == "send_status_email" and not self.effects.count(("interrupted",)):
                self.effects.append(("interrupted",))
                raise KeyboardInterrupt
            return super().invoke(call)
    desk = Interrupting()
    with pytest.raises(KeyboardInterrupt):
        _kernel(policies.SupportPolicy(), desk, store_a).run(new_state("t2"))
    st = _kernel(policies.SupportPolicy(), desk, store_b).recover("t2")    # at once: no TTL to wait
    assert st.stop == "done" and desk.effects == [REFUND, ("interrupted",), EMAIL]


class DiesInRefund(SupportDesk):
    """The process dies (SimulatedCrash) inside issue_refund once armed: before the refund takes effect, or after."""

    def __init__(self, when: str):
        super().__init__()
        self.when, self.armed = when, False

    def invoke(self, call):
        if self.armed and call.name == "issue_refund":
            self.armed = False
            if self.when == "after":
                super().invoke(call)
            raise SimulatedCrash("killed in issue_refund")
        return super().invoke(call)


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_crash_while_the_approved_call_runs_keeps_the_decision(tmp_path, when):
    """The decision on a held call is saved with the resumed run's first checkpoint, before the call runs. It was
    saved only after: a crash in the approved refund left the call pending with no decision, so recovery asked the
    person again (killed before the effect) or finished with the call still pending and no approval in the audit
    for a refund that was paid (killed after it; found by fuzzing). Recovery now runs the approved call, once."""
    clock = SimClock()
    store = SQLiteCheckpointStore(tmp_path / "ckpt.db", lease_ttl=60, clock=clock)
    desk = DiesInRefund(when)

    def kernel():
        return _kernel(policies.SupportPolicy("ord_1004", 8000), desk, store, clock=SimClock(per_run=True))
    assert kernel().run(new_state("t")).stop == "needs_approval"
    ck = store.load("t")
    desk.armed = True
    with pytest.raises(SimulatedCrash):
        kernel().resume(ck, Decision.approve(ck.state.pending, "human:maya"))
    saved = store.load("t").state
    assert saved.pending is not None and saved.audit[-1]["approved"] is True
    clock.sleep(61)                                          # the dead worker's lease expires
    final = kernel().recover("t")
    assert (final.stop, final.outcome, final.pending) == ("done", "completed", None)
    assert desk.refunds() == [("refund", "ord_1004", 8000)]
    assert [a["by"] for a in final.audit if "approval" in a] == ["human:maya"]


def test_fencing_at_the_store(two_stores):
    store_a, store_b, clock, _path = two_stores
    state = new_state()
    old = store_a.acquire("t1", owner="worker-a")
    v1 = store_a.save(state, None, lease=old)
    clock.sleep(61)
    new = store_b.acquire("t1", owner="worker-b")
    assert new.token == old.token + 1
    for refused in (lambda: store_a.save(state, v1, lease=old), lambda: store_a.renew(old),
                    lambda: store_a.save(state, v1)):
        with pytest.raises(CheckpointLeased, match="worker-b"):
            refused()
    store_a.release(old)                             # a stale release frees nothing
    with pytest.raises(CheckpointLeased, match="worker-b"):
        store_a.acquire("t1", owner="worker-c")
    assert store_b.save(state, v1, lease=new) == v1 + 1
    with pytest.raises(CheckpointConflict):          # the version check still stands behind the lease
        store_b.save(state, v1, lease=new)
    store_b.release(new)
    third = store_a.acquire("t1", owner="worker-c")
    assert third.token == new.token + 1              # tokens never go back, even after a release


def test_lease_ttl_resolution(monkeypatch, tmp_path):
    assert resolve_lease_ttl(None, {}) == 60
    assert resolve_lease_ttl(None, {ENV_LEASE_TTL: "5"}) == 5
    assert resolve_lease_ttl(7, {ENV_LEASE_TTL: "5"}) == 7
    for bad in ("0", "-1", "soon", "nan", "inf"):
        with pytest.raises(ConfigError, match=ENV_LEASE_TTL):
            resolve_lease_ttl(None, {ENV_LEASE_TTL: bad})
    with pytest.raises(ConfigError, match="lease_ttl"):
        resolve_lease_ttl(0, {})
    monkeypatch.setenv(ENV_LEASE_TTL, "5")
    clock = SimClock()
    store = SQLiteCheckpointStore(tmp_path / "c.db", clock=clock)
    assert store.lease_ttl == 5
    store.acquire("t1", owner="a")
    with pytest.raises(CheckpointLeased):
        store.acquire("t1", owner="b")
    clock.sleep(6)
    assert store.acquire("t1", owner="b").token == 2


# -- corruption ------------------------------------------------------------------------------------

def _saved(tmp_path, tasks=("t1",)):
    path = tmp_path / "ckpt.db"
    store = SQLiteCheckpointStore(path)
    for t in tasks:
        _kernel(policies.SupportPolicy(), SupportDesk(), store).run(new_state(t))
    store.close()
    return path


def _corrupt_message(exc, path):
    msg = str(exc.value)
    assert str(path) in msg and "\n" not in msg
    return msg


def test_a_file_that_is_not_sqlite(tmp_path):
    path = tmp_path / "ckpt.db"
    path.write_bytes(os.urandom(4096))
    with pytest.raises(CheckpointCorrupt) as exc:
        SQLiteCheckpointStore(path)
    assert "not a database" in _corrupt_message(exc, path)


def test_a_truncated_database(tmp_path):
    path = _saved(tmp_path, ("t1", "t2", "t3"))
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(CheckpointCorrupt) as exc:
        SQLiteCheckpointStore(path)
    assert "malformed" in _corrupt_message(exc, path)


def test_missing_tables_and_columns(tmp_path):
    path = tmp_path / "other.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (x)")
    db.execute(f"PRAGMA user_version = {LAYOUT_VERSION}")
    db.commit()
    db.close()
    with pytest.raises(CheckpointCorrupt, match="checkpoints lacks the whole table") as exc:
        SQLiteCheckpointStore(path)
    _corrupt_message(exc, path)
    path = tmp_path / "cols.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE checkpoints (task_id TEXT PRIMARY KEY, version INTEGER, payload TEXT)")
    db.commit()
    db.close()
    with pytest.raises(CheckpointCorrupt, match=r"lacks.*sha256") as exc:
        SQLiteCheckpointStore(path)
    _corrupt_message(exc, path)


def _set_row(path, **cols):
    db = sqlite3.connect(path)
    for col, value in cols.items():
        db.execute(f"UPDATE checkpoints SET {col} = ? WHERE task_id = 't1'", (value,))
    db.commit()
    db.close()


GOOD = new_state().to_dict()
BAD_PAYLOADS = {
    "not json": "{\"task_id\": ",
    "array": "[]",
    "number": "42",
    "string": '"x"',
    "empty object": "{}",
    "wrong types": json.dumps({**GOOD, "step": "three", "plan": {"s1": "done"}}),
    "wrong nested": json.dumps({**GOOD, "plan": [{"id": "s1", "tool": 7}]}),
    "wrong enum": json.dumps({**GOOD, "status": "exploded"}),
    "unknown field": json.dumps({**GOOD, "surprise": 1}),
    "other task": json.dumps({**GOOD, "task_id": "t9"}),
    "bool for int": json.dumps({**GOOD, "tool_calls": True}),
}


@pytest.mark.parametrize("name", BAD_PAYLOADS)
def test_a_payload_of_the_wrong_shape(tmp_path, name):
    path = _saved(tmp_path)
    payload = BAD_PAYLOADS[name]
    _set_row(path, payload=payload, sha256=hashlib.sha256(payload.encode()).hexdigest())
    store = SQLiteCheckpointStore(path)
    with pytest.raises(CheckpointCorrupt) as exc:
        store.load("t1")
    assert "task 't1'" in _corrupt_message(exc, path)
    with pytest.raises(CheckpointCorrupt):             # the kernel's way in says the same
        _kernel(policies.SupportPolicy(), SupportDesk(), store).recover("t1")


def test_a_wrong_checksum_and_wrong_column_types(tmp_path):
    path = _saved(tmp_path)
    _set_row(path, sha256="0" * 64)
    store = SQLiteCheckpointStore(path)
    with pytest.raises(CheckpointCorrupt, match="fails its checksum") as exc:
        store.load("t1")
    _corrupt_message(exc, path)
    _set_row(path, version="seven")
    with pytest.raises(CheckpointCorrupt, match="wrong type"):
        store.load("t1")
    db = sqlite3.connect(path)
    db.execute("UPDATE leases SET token = 'x'")
    db.commit()
    with pytest.raises(CheckpointCorrupt, match="lease row"):
        store.acquire("t1")


def test_newer_schemas_ask_for_an_upgrade(tmp_path):
    path = _saved(tmp_path)
    _set_row(path, schema=SCHEMA_VERSION + 1)
    with pytest.raises(CheckpointCorrupt, match=f"state schema {SCHEMA_VERSION + 1}.*upgrade agentobs") as exc:
        SQLiteCheckpointStore(path).load("t1")
    _corrupt_message(exc, path)
    payload = json.dumps({**GOOD, "schema_version": SCHEMA_VERSION + 1})
    _set_row(path, schema=SCHEMA_VERSION, payload=payload, sha256=hashlib.sha256(payload.encode()).hexdigest())
    with pytest.raises(CheckpointCorrupt, match=r"newer agentobs.*upgrade agentobs"):
        SQLiteCheckpointStore(path).load("t1")
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {LAYOUT_VERSION + 1}")
    db.commit()
    with pytest.raises(CheckpointCorrupt, match=f"layout version {LAYOUT_VERSION + 1}.*upgrade agentobs") as exc:
        SQLiteCheckpointStore(path)
    _corrupt_message(exc, path)


OLD_LAYOUT = """
CREATE TABLE IF NOT EXISTS checkpoints (
    task_id    TEXT PRIMARY KEY,
    version    INTEGER NOT NULL,
    schema     INTEGER NOT NULL,
    status     TEXT NOT NULL,
    payload    TEXT NOT NULL,
    sha256     TEXT NOT NULL,
    saved_at   REAL NOT NULL
)
"""


def test_a_database_of_the_layout_before_leases_is_upgraded(tmp_path):
    path = tmp_path / "old.db"
    state = new_state()
    state.status = "running"
    payload = state.to_json()
    db = sqlite3.connect(path)
    db.execute(OLD_LAYOUT)                    # as the code before leases made it: no user_version, no leases
    db.execute("INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)",
               ("t1", 1, SCHEMA_VERSION, "running", payload, hashlib.sha256(payload.encode()).hexdigest(), 0.0))
    db.commit()
    assert db.execute("PRAGMA user_version").fetchone()[0] == 0
    store = SQLiteCheckpointStore(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == LAYOUT_VERSION
    assert {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} == {"checkpoints",
                                                                                               "leases"}
    assert store.load("t1").version == 1
    desk = SupportDesk()
    st = _kernel(policies.SupportPolicy(), desk, store).recover("t1")
    assert st.stop == "done" and desk.effects == [REFUND, EMAIL]
    SQLiteCheckpointStore(path).close()       # opening an upgraded file again changes nothing
    assert db.execute("PRAGMA user_version").fetchone()[0] == LAYOUT_VERSION


def test_unusable_paths_are_checkpoint_errors(tmp_path):
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(CheckpointError) as exc:
        SQLiteCheckpointStore(tmp_path / "dir.db")
    assert str(tmp_path / "dir.db") in str(exc.value)
    store = SQLiteCheckpointStore(tmp_path / "ok.db")
    store.close()
    with pytest.raises(CheckpointError, match="closed"):
        store.load("t1")


# -- generated damage ------------------------------------------------------------------------------

EXAMPLES = int(os.environ.get("AGENTOBS_PROPERTY_EXAMPLES", "2000"))
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False),
                         st.text(max_size=12))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                                 st.dictionaries(st.text(max_size=8), inner,
                                                                                 max_size=3)), max_leaves=8)


@pytest.fixture(scope="module")
def damaged_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("damage") / "ckpt.db"
    store = SQLiteCheckpointStore(path)
    desk = SupportDesk()
    _kernel(policies.SupportPolicy("ord_1004", 8000), desk, store).run(new_state())     # suspended: has pending
    payload = store._db.execute("SELECT payload FROM checkpoints").fetchone()[0]
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA synchronous = OFF")
    yield store, writer, payload
    writer.close()
    store.close()


def _mutate(data, path, value):
    """Replaces (or deletes, when value is ...) the item at ``path`` (indices into nested containers)."""
    node = data
    for i, step in enumerate(path):
        keys = list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []
        if not keys:
            break
        key = keys[step % len(keys)]
        if i == len(path) - 1 or not isinstance(node[key], (dict, list)):
            if value is ... and isinstance(node, dict):
                del node[key]
            else:
                node[key] = None if value is ... else value
            return data
        node = node[key]
    return value if value is not ... else data


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(kind=st.sampled_from(["value", "delete", "text"]), path=st.lists(st.integers(0, 50), min_size=1, max_size=4),
       value=json_values, cut=st.integers(0, 5000), junk=st.text(max_size=8), rehash=st.booleans())
def test_a_randomly_damaged_payload_loads_or_is_refused(damaged_db, kind, path, value, cut, junk, rehash):
    store, writer, good = damaged_db
    if kind == "text":
        cut %= len(good) + 1
        payload = good[:cut] + junk + good[cut + len(junk) // 2:]
    else:
        payload = json.dumps(_mutate(json.loads(good), path, ... if kind == "delete" else value))
    digest = hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest() if rehash else "0"
    try:
        writer.execute("UPDATE checkpoints SET payload = ?, sha256 = ?", (payload, digest))
    except UnicodeEncodeError:            # a lone surrogate cannot even be stored as SQLite text
        return
    try:
        ckpt = store.load("t1")
    except CheckpointCorrupt as exc:
        assert "\n" not in str(exc) and store.path in str(exc)
        event(f"refused: {str(exc).split(': ')[1][:30]}")
        return
    event("loaded")
    assert rehash
    again = TaskState.from_json(ckpt.state.to_json())      # a state that loads is a whole, valid one
    assert again.to_json() == ckpt.state.to_json() and again.task_id == "t1"
