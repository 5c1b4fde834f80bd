"""Long-term memory with a write policy.

Rules (seed 000, "Long-term memory"): only trusted sources may write; every note is scoped
to a user and the scope is applied before any matching; notes expire; notes can be found
and deleted by user and source. Retrieval is word overlap so that the policy, not the
ranking, is what shows. Remembered notes reach the model labelled as context, never as rules.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

TRUSTED_SOURCES = frozenset({"user_message", "validated_tool"})
STORED = "stored"
REJECTED_UNTRUSTED = "rejected: source not trusted for memory"


@dataclass(frozen=True, kw_only=True)
class Note:
    user: str
    text: str
    source: str
    expires: float


def _words(text: str) -> set[str]:
    return {w.rstrip("s") for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3}


class MemoryStore:
    def __init__(self, trusted_sources: frozenset[str] = TRUSTED_SOURCES):
        self.trusted = trusted_sources
        self.notes: list[Note] = []

    def write(self, user_id: str, text: str, source: str, now: float, ttl: float) -> str:
        if source not in self.trusted:
            return REJECTED_UNTRUSTED
        if not user_id or ttl <= 0:
            return "rejected: a note needs a user and a positive lifetime"
        self.notes.append(Note(user=user_id, text=text, source=source, expires=now + ttl))
        return STORED

    def read(self, user_id: str, query: str, now: float, k: int = 2) -> list[str]:
        words = _words(query)
        live = [n for n in self.notes if n.user == user_id and n.expires > now]   # scope and expiry first
        scored = sorted(((len(words & _words(n.text)), i, n) for i, n in enumerate(live)), key=lambda x: (-x[0], x[1]))
        return [n.text for score, _, n in scored[:k] if score > 0]

    def delete(self, user_id: str, source: str | None = None) -> int:
        before = len(self.notes)
        self.notes = [n for n in self.notes if not (n.user == user_id and (source is None or n.source == source))]
        return before - len(self.notes)
