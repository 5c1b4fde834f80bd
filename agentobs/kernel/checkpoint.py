"""Checkpoints: the latest state of each task, saved atomically, under a lease with a fencing token.

``SQLiteCheckpointStore`` (standard library) keeps one row per task: the state JSON, its
SHA-256, the state schema version and a save version. ``save`` is a compare-and-set on the
save version, so of two workers resuming one snapshot exactly one proceeds; the other gets
``CheckpointConflict``.

A worker running a task holds its lease: an owner id, an expiry (now + TTL) and a fencing
token that grows by one at every acquisition. While the lease is live no other worker can
acquire it (``CheckpointLeased``, before it runs anything). Every save and every renewal
carries the token and is refused once a newer token was issued, so a paused worker that
wakes up after another took over can neither save nor, through the kernel, write. A crashed
worker's lease simply expires. Lease times come from the store's clock (wall time), so tests
move them with a ``SimClock``.

Anything malformed (not a SQLite file, a truncated file, a missing table or column, a row
failing its checksum, a payload of the wrong shape, a newer schema) raises
``CheckpointCorrupt`` naming the file, and is never overwritten. The database layout is
versioned with ``PRAGMA user_version`` and upgraded by the named steps of ``LAYOUT``. The
file is created readable by its owner only.
"""
from __future__ import annotations

import hashlib
import math
import os
import socket
import sqlite3
import threading
import urllib.parse
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from ..errors import (
    CheckpointConflict,
    CheckpointCorrupt,
    CheckpointError,
    CheckpointLeased,
    CheckpointNotFound,
    ConfigError,
)
from .clock import RealClock
from .state import SCHEMA_VERSION, TaskState

ENV_LEASE_TTL = "AGENTOBS_CHECKPOINT_LEASE_TTL"
DEFAULT_LEASE_TTL = 60.0          # seconds; longer than any one model or tool call should take


def resolve_lease_ttl(ttl: float | None = None, env: Mapping[str, str] | None = None) -> float:
    """The lease TTL in seconds: explicit argument > ``AGENTOBS_CHECKPOINT_LEASE_TTL`` > 60."""
    env = os.environ if env is None else env
    raw: Any = ttl if ttl is not None else env.get(ENV_LEASE_TTL) or DEFAULT_LEASE_TTL
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        source = "lease_ttl" if ttl is not None else ENV_LEASE_TTL
        raise ConfigError(f"{source}={raw!r} must be a positive number of seconds")
    return value


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    state: TaskState
    version: int


@dataclass(frozen=True, kw_only=True)
class Lease:
    """A worker's right to run a task, until ``expires_at`` (wall seconds) unless renewed."""
    task_id: str
    owner: str
    token: int                    # fencing token: grows at every acquisition, never reused
    expires_at: float


class CheckpointStore(Protocol):
    """What the kernel needs from a checkpoint store.

    ``acquire`` takes the task's lease or raises ``CheckpointLeased`` while another owner's
    lease is live; ``renew`` extends a lease and ``save`` stores a state, both refused with
    ``CheckpointLeased`` once a newer token exists; ``release`` ends a lease (no-op if it was
    taken over). ``save`` without a lease is refused while anyone's lease is live.
    """

    def load(self, task_id: str) -> Checkpoint: ...

    def exists(self, task_id: str) -> bool: ...

    def save(self, state: TaskState, expected_version: int | None, *, lease: Lease | None = None) -> int: ...

    def acquire(self, task_id: str, *, owner: str | None = None) -> Lease: ...

    def renew(self, lease: Lease) -> Lease: ...

    def release(self, lease: Lease) -> None: ...


_CHECKPOINTS = """
CREATE TABLE IF NOT EXISTS checkpoints (
    task_id    TEXT PRIMARY KEY,
    version    INTEGER NOT NULL,
    schema     INTEGER NOT NULL,
    status     TEXT NOT NULL,
    payload    TEXT NOT NULL,
    sha256     TEXT NOT NULL,
    saved_at   REAL NOT NULL
)"""
_LEASES = """
CREATE TABLE leases (
    task_id    TEXT PRIMARY KEY,
    owner      TEXT,
    token      INTEGER NOT NULL,
    expires_at REAL NOT NULL
)"""
# Named upgrades of the database layout: step N takes ``PRAGMA user_version`` N to N + 1.
# Layout 0 is a new file or one written before layouts were numbered (the checkpoints table alone).
LAYOUT: dict[int, tuple[str, ...]] = {
    0: (_CHECKPOINTS,),           # 0 -> 1: the checkpoints table
    1: (_LEASES,),                # 1 -> 2: a lease with a fencing token per task
}
LAYOUT_VERSION = len(LAYOUT)
_INT64_MAX = 2**63 - 1            # SQLite's largest integer: a save version or lease token must grow past it
_COLUMNS = {"checkpoints": {"task_id", "version", "schema", "status", "payload", "sha256", "saved_at"},
            "leases": {"task_id", "owner", "token", "expires_at"}}


def new_owner() -> str:
    """An owner id that says where the worker runs: host, process id and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class SQLiteCheckpointStore:
    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, lease_ttl: float | None = None,
                 clock: Any = None):
        self.path = str(path)
        self.lease_ttl = resolve_lease_ttl(lease_ttl)
        self._clock = clock or RealClock()          # anything with wall_ns(); a SimClock in tests
        target = self.path
        if self.path != ":memory:":
            p = Path(self.path)
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
                if not p.exists():
                    os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o600))
            except (OSError, ValueError) as exc:
                raise CheckpointError(f"checkpoint store {self.path!r} cannot be created ({exc}): check the path "
                                      "and its permissions") from None
            # as a URI of the absolute path, so that a name such as "file:x.db?mode=memory" is a file of that name
            # (SQLite reads a name starting with "file:" as a URI when it was built to)
            target = "file:" + urllib.parse.quote(os.path.abspath(p))
        self._lock = threading.Lock()
        with self._sqlite():
            self._db = sqlite3.connect(target, isolation_level=None, check_same_thread=False, timeout=30,
                                       uri=target != ":memory:")
        try:
            with self._transaction() as cur:
                self._upgrade(cur)
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        self._db.close()

    # -- checkpoints -------------------------------------------------------------------------

    def exists(self, task_id: str) -> bool:
        with self._lock, self._sqlite():
            row = self._db.execute("SELECT 1 FROM checkpoints WHERE task_id = ?", (task_id,)).fetchone()
        return row is not None

    def load(self, task_id: str) -> Checkpoint:
        with self._lock, self._sqlite():
            row = self._db.execute("SELECT version, schema, payload, sha256 FROM checkpoints WHERE task_id = ?",
                                   (task_id,)).fetchone()
        if row is None:
            raise CheckpointNotFound(f"no checkpoint for task {task_id!r} in {self.path}")
        self._verify(task_id, row)
        try:
            state = TaskState.from_json(row[2])
        except CheckpointCorrupt as exc:
            raise self._corrupt(task_id, str(exc)) from None
        if state.task_id != task_id:
            raise self._corrupt(task_id, f"the stored state is for task {state.task_id!r}")
        return Checkpoint(state=state, version=row[0])

    def save(self, state: TaskState, expected_version: int | None, *, lease: Lease | None = None) -> int:
        """Saves ``state`` if the stored version is ``expected_version`` (None: no row yet) and ``lease`` is
        still the task's newest (it is renewed). Returns the new version."""
        payload = state.to_json()
        digest = hashlib.sha256(payload.encode()).hexdigest()
        with self._transaction() as cur:
            now = self._now()
            self._check_lease(cur, state.task_id, lease, now)
            row = cur.execute("SELECT version, schema, payload, sha256 FROM checkpoints WHERE task_id = ?",
                              (state.task_id,)).fetchone()
            if row is not None:
                self._verify(state.task_id, row)
            current = None if row is None else row[0]
            if current != expected_version:
                raise CheckpointConflict(
                    f"task {state.task_id!r} was saved by another worker (stored version {current}, "
                    f"this worker holds {expected_version}); reload it instead of continuing")
            new = 1 if current is None else current + 1
            cur.execute("INSERT OR REPLACE INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (state.task_id, new, SCHEMA_VERSION, state.status, payload, digest, now))
        return new

    # -- leases ------------------------------------------------------------------------------

    def acquire(self, task_id: str, *, owner: str | None = None) -> Lease:
        """Takes the task's lease with a new fencing token; ``CheckpointLeased`` while another's is live."""
        owner = owner or new_owner()
        with self._transaction() as cur:
            now = self._now()
            row = self._lease_row(cur, task_id)
            if row is not None and row[0] is not None and row[0] != owner and row[2] > now:
                raise CheckpointLeased(
                    f"task {task_id!r} is being run by worker {_owner(row[0])} (lease token {row[1]}, in {self.path}) "
                    f"until {_iso(row[2])}, {_seconds(row[2] - now)} from now: wait for it to finish; if that worker "
                    "died, recover the task after its lease expires")
            lease = Lease(task_id=task_id, owner=owner, token=(row[1] if row else 0) + 1,
                          expires_at=now + self.lease_ttl)
            cur.execute("INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?)",
                        (task_id, owner, lease.token, lease.expires_at))
        return lease

    def renew(self, lease: Lease) -> Lease:
        """Extends ``lease`` by the TTL; ``CheckpointLeased`` if another worker took the task over."""
        with self._transaction() as cur:
            now = self._now()
            self._check_lease(cur, lease.task_id, lease, now)
        return Lease(task_id=lease.task_id, owner=lease.owner, token=lease.token, expires_at=now + self.lease_ttl)

    def release(self, lease: Lease) -> None:
        """Ends ``lease`` so another worker may take the task at once; nothing if it was taken over."""
        with self._transaction() as cur:
            cur.execute("UPDATE leases SET owner = NULL, expires_at = 0 WHERE task_id = ? AND token = ? AND owner = ?",
                        (lease.task_id, lease.token, lease.owner))

    def _check_lease(self, cur: sqlite3.Cursor, task_id: str, lease: Lease | None, now: float) -> None:
        """Inside a transaction: refuses a stale lease (renewing a valid one), or a save without a lease while
        another worker's is live."""
        row = self._lease_row(cur, task_id)
        if lease is None:
            if row is not None and row[0] is not None and row[2] > now:
                raise CheckpointLeased(f"task {task_id!r} is being run by worker {_owner(row[0])} until {_iso(row[2])} "
                                       f"(in {self.path}): only the lease holder may save it")
            return
        if row is None or row[1] != lease.token or row[0] != lease.owner:
            holder = "nobody" if row is None or row[0] is None else f"worker {_owner(row[0])}"
            raise CheckpointLeased(
                f"this worker ({lease.owner!r}) lost the lease on task {task_id!r}: its token {lease.token} was "
                f"superseded (now {holder}, token {row[1] if row else None}, in {self.path}); stop this run, "
                "its state is stale: the task continues from its checkpoint under the new holder")
        cur.execute("UPDATE leases SET expires_at = ? WHERE task_id = ?", (now + self.lease_ttl, task_id))

    def _lease_row(self, cur: sqlite3.Cursor, task_id: str) -> tuple[Any, Any, Any] | None:
        row = cur.execute("SELECT owner, token, expires_at FROM leases WHERE task_id = ?", (task_id,)).fetchone()
        if row is not None and not (isinstance(row[0], (str, type(None))) and type(row[1]) is int
                                    and isinstance(row[2], (int, float))):
            raise self._corrupt(task_id, "its lease row has columns of the wrong type")
        if row is not None and not 0 <= row[1] < _INT64_MAX:
            raise self._corrupt(task_id, f"its lease token {row[1]} is not one agentobs issues or can follow")
        return row

    # -- the database ------------------------------------------------------------------------

    def _now(self) -> float:
        return self._clock.wall_ns() / 1e9

    def _upgrade(self, cur: sqlite3.Cursor) -> None:
        """Brings the layout to ``LAYOUT_VERSION`` through the named steps, then checks the tables."""
        version = cur.execute("PRAGMA user_version").fetchone()[0]
        if version < 0:
            raise CheckpointCorrupt(f"checkpoint database {self.path} has layout version {version}, which no "
                                    "agentobs writes: restore it from a backup or move it aside to start over")
        if version > LAYOUT_VERSION:
            raise CheckpointCorrupt(f"checkpoint database {self.path} has layout version {version}, newer than "
                                    f"this agentobs knows ({LAYOUT_VERSION}): upgrade agentobs to open it")
        for step in range(version, LAYOUT_VERSION):
            for sql in LAYOUT[step]:
                cur.execute(sql)
        if version < LAYOUT_VERSION:
            cur.execute(f"PRAGMA user_version = {LAYOUT_VERSION}")
        for table, wanted in _COLUMNS.items():
            have = {r[1] for r in cur.execute(f"PRAGMA table_info({table})")}
            if not wanted <= have:
                missing = ", ".join(sorted(wanted - have)) if have else "the whole table"
                raise CheckpointCorrupt(f"checkpoint database {self.path}: table {table} lacks {missing}; "
                                        "it is not an agentobs checkpoint database, or it was damaged: "
                                        "restore it from a backup or move it aside to start over")

    def _verify(self, task_id: str, row: tuple[Any, ...]) -> None:
        version, schema, payload, digest = row
        if not (type(version) is int and type(schema) is int and isinstance(payload, str)
                and isinstance(digest, str)):
            raise self._corrupt(task_id, "its row has columns of the wrong type")
        if not 0 < version < _INT64_MAX:
            raise self._corrupt(task_id, f"its save version {version} is not one agentobs writes or can follow")
        if schema > SCHEMA_VERSION:
            raise CheckpointCorrupt(f"checkpoint of task {task_id!r} in {self.path} has state schema {schema}, "
                                    f"newer than this agentobs reads ({SCHEMA_VERSION}): upgrade agentobs")
        if hashlib.sha256(payload.encode()).hexdigest() != digest:
            raise self._corrupt(task_id, "it fails its checksum: it was truncated or altered")

    def _corrupt(self, task_id: str, reason: str) -> CheckpointCorrupt:
        return CheckpointCorrupt(f"checkpoint of task {task_id!r} in {self.path} is unusable: {reason}; "
                                 "restore it from a backup or delete the row to start over")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        with self._lock, self._sqlite():
            cur = self._db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
                cur.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    cur.execute("ROLLBACK")
                raise

    @contextmanager
    def _sqlite(self) -> Iterator[None]:
        """Turns a sqlite3 error into a CheckpointError that names the file and says what to do."""
        try:
            yield
        except sqlite3.Error as exc:
            name = getattr(exc, "sqlite_errorname", "") or ""
            if isinstance(exc, (sqlite3.ProgrammingError, sqlite3.InterfaceError)):
                raise CheckpointError(f"checkpoint store {self.path} cannot be used: {exc}") from None
            if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
                raise CheckpointError(f"checkpoint database {self.path} stayed locked by another process: "
                                      "retry later") from None
            if name.startswith(("SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_FULL", "SQLITE_PERM",
                                "SQLITE_AUTH", "SQLITE_NOMEM")):
                raise CheckpointError(f"checkpoint database {self.path} cannot be used ({exc}): check the path, "
                                      "its permissions and the free disk space") from None
            raise CheckpointCorrupt(f"checkpoint database {self.path} is damaged or not a checkpoint database "
                                    f"({exc}): restore it from a backup or move it aside to start over") from None


def _iso(seconds: float) -> str:
    try:
        return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    except (OverflowError, ValueError, OSError):
        return f"{seconds} s after the epoch"


def _owner(owner: str) -> str:
    """A lease owner as a message shows it: quoted, and cut short when it is long (the row is data)."""
    text = repr(owner)
    return text if len(text) <= 100 else text[:99] + "…"


def _seconds(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 10**9 else "more than 30 years"
