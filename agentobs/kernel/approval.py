"""Human approval: a decision applies to exactly the arguments of the held call."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .state import HeldCall


@dataclass(frozen=True, kw_only=True)
class Decision:
    approved: bool
    digest: str          # must equal the held call's digest: a decision for other arguments is refused
    by: str = "human"

    @classmethod
    def approve(cls, held: HeldCall, by: str = "human") -> Decision:
        return cls(approved=True, digest=held.digest, by=by)

    @classmethod
    def deny(cls, held: HeldCall, by: str = "human") -> Decision:
        return cls(approved=False, digest=held.digest, by=by)


# Asked synchronously when a call needs approval; returning None suspends the run instead.
Approver = Callable[[HeldCall], "Decision | None"]
