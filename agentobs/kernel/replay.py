"""Recording a run's model replies and replaying them without the model.

A replay fixes the model's replies (and their declared latencies and usage), so the
kernel runs deterministically to the same final state and the same effects. Recorded runs
are JSON files with a schema version. Both keep one sequence of replies, so each serves one run at a time
(``ConcurrentUseError`` otherwise): record or replay concurrent runs with one of each per run.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..contract import reported
from ..contract.files import write_text
from ..errors import ReplayError
from .calls import propose_async
from .models import Model, ModelRequest, ModelResponse
from .runs import OneRunAtATime

_ONE_RUN = "make one per run (a Kernel per run) to record or replay concurrent runs"

RECORDING_SCHEMA = 1


class Recorder:
    """Wraps a model and keeps every response it gives."""

    def __init__(self, inner: Model | Any):
        self.inner = inner
        self.name, self.provider = inner.name, inner.provider
        self.blocking = getattr(inner, "blocking", True)
        self.responses: list[ModelResponse] = []
        self._one = OneRunAtATime(f"Recorder of {inner.name!r} (its sequence of replies)", _ONE_RUN)

    def propose(self, request: ModelRequest) -> ModelResponse:
        self._one.claim()
        resp = self.inner.propose(request)
        self.responses.append(resp)
        return resp

    async def apropose(self, request: ModelRequest) -> ModelResponse:
        """Under the async kernel: the inner model called as the async kernel would call it."""
        self._one.claim()
        resp = await propose_async(self.inner, request)
        self.responses.append(resp)
        return resp

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": RECORDING_SCHEMA, "model": self.name, "provider": self.provider,
                "responses": [asdict(r) for r in self.responses]}

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the recording whole or not at all (readable by its owner only when it is created)."""
        write_text(path, json.dumps(self.to_dict(), sort_keys=True), mode=0o600)


class Replayer:
    """Returns recorded responses in order; asking for more than were recorded is an error."""

    blocking = False

    def __init__(self, responses: list[ModelResponse], name: str = "replay", provider: str = "agentobs"):
        self.responses, self.name, self.provider, self.i = list(responses), name, provider, 0
        self._one = OneRunAtATime(f"Replayer {name!r} (its sequence of replies)", _ONE_RUN)

    @classmethod
    def of(cls, recorder: Recorder) -> Replayer:
        return cls(recorder.responses, recorder.name, recorder.provider)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Replayer:
        """The recording at ``path``, checked: ``ReplayError`` naming the file and what is wrong otherwise."""
        try:
            data = json.loads(Path(path).read_text())
            version = data.get("schema_version")
            if type(version) is not int or version != RECORDING_SCHEMA:
                raise ReplayError(f"{path}: recording schema_version {version!r} is not {RECORDING_SCHEMA}")
            responses = [ModelResponse(**r) for r in data["responses"]]
        except ReplayError:
            raise
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise ReplayError(f"{path}: not a recorded run ({exc})") from None
        for i, r in enumerate(responses, start=1):
            problem = _problem(r)
            if problem:
                raise ReplayError(f"{path}: reply {i}: {problem}")
        return cls(responses, data.get("model", "replay"), data.get("provider", "agentobs"))

    def propose(self, request: ModelRequest) -> ModelResponse:
        """The next recorded reply; ``ReplayError`` when the run asks for more than were recorded (the kernel lets
        it end the run: it is not a model failure to retry)."""
        self._one.claim()
        if self.i >= len(self.responses):
            raise ReplayError(f"the replay asked for reply {self.i + 1} but only {len(self.responses)} were recorded")
        resp = self.responses[self.i]
        self.i += 1
        return resp


_COUNTS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
           "reasoning_output_tokens")


def _problem(r: ModelResponse) -> str | None:
    """What is wrong with a recorded reply's values (None: nothing): counts are integers, not negative; the latency
    a finite number of seconds, not negative; the provider's texts are text."""
    for name in _COUNTS:
        v = getattr(r, name)
        if v is not None and reported.count(v) is None:
            return f"{name} {v!r:.40} is not a token count"
    lat = r.latency_s
    if lat is not None and reported.non_negative(lat) is None:
        return f"latency_s {lat!r:.40} is not a number of seconds"
    for name in ("finish_reason", "response_model", "malformed"):
        if getattr(r, name) is not None and not isinstance(getattr(r, name), str):
            return f"{name} must be text"
    return None
