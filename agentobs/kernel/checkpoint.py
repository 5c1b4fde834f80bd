"""Checkpoints: the latest state of each task, saved atomically with a version.

``SQLiteCheckpointStore`` (standard library) keeps one row per task: the state JSON, its
SHA-256, the schema version and a save version. ``save`` is a compare-and-set on the save
version, so of two workers resuming one snapshot exactly one proceeds; the other gets
``CheckpointConflict``. A row that fails its checksum raises ``CheckpointCorrupt`` on load
and is never overwritten. The database file is created readable by its owner only.
"""
from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import CheckpointConflict, CheckpointCorrupt, CheckpointNotFound
from .state import SCHEMA_VERSION, TaskState


@dataclass(frozen=True)
class Checkpoint:
    state: TaskState
    version: int


class CheckpointStore(Protocol):
    def load(self, task_id: str) -> Checkpoint: ...

    def save(self, state: TaskState, expected_version: int | None) -> int: ...

    def exists(self, task_id: str) -> bool: ...


_SCHEMA = """
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


class SQLiteCheckpointStore:
    def __init__(self, path: str | os.PathLike[str] = ":memory:"):
        self.path = str(path)
        if self.path != ":memory:":
            p = Path(self.path)
            p.parent.mkdir(parents=True, exist_ok=True)
            if not p.exists():
                os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o600))
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        self._db.execute(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def exists(self, task_id: str) -> bool:
        with self._lock:
            row = self._db.execute("SELECT 1 FROM checkpoints WHERE task_id = ?", (task_id,)).fetchone()
        return row is not None

    def load(self, task_id: str) -> Checkpoint:
        with self._lock:
            row = self._db.execute("SELECT version, payload, sha256 FROM checkpoints WHERE task_id = ?",
                                   (task_id,)).fetchone()
        if row is None:
            raise CheckpointNotFound(f"no checkpoint for task {task_id!r}")
        version, payload, digest = row
        _verify(task_id, payload, digest)
        return Checkpoint(TaskState.from_json(payload), version)

    def save(self, state: TaskState, expected_version: int | None) -> int:
        """Saves ``state`` if the stored version is ``expected_version`` (None: no row yet). Returns the new version."""
        payload = state.to_json()
        digest = hashlib.sha256(payload.encode()).hexdigest()
        with self._lock:
            cur = self._db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                row = cur.execute("SELECT version, payload, sha256 FROM checkpoints WHERE task_id = ?",
                                  (state.task_id,)).fetchone()
                if row is not None:
                    _verify(state.task_id, row[1], row[2])
                current = None if row is None else row[0]
                if current != expected_version:
                    raise CheckpointConflict(
                        f"task {state.task_id!r} was saved by another worker (stored version {current}, "
                        f"this worker holds {expected_version}); reload it instead of continuing")
                new = 1 if current is None else current + 1
                cur.execute("INSERT OR REPLACE INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (state.task_id, new, SCHEMA_VERSION, state.status, payload, digest, time.time()))
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
        return new


def _verify(task_id: str, payload: str, digest: str) -> None:
    if not isinstance(payload, str) or hashlib.sha256(payload.encode()).hexdigest() != digest:
        raise CheckpointCorrupt(f"checkpoint of task {task_id!r} fails its checksum: it was truncated or "
                                "altered; restore it from a backup or delete the row to start over")
