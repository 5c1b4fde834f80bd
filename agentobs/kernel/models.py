"""The model interface and deterministic stand-ins that ship with the library.

A model receives the rendered view (a JSON string), the output cap and the time left,
and returns a reply: a dict proposing a plan, a tool call or a final answer. The kernel
treats the reply as a proposal; anything malformed becomes an error result the model sees.
A model that times out raises ``TimeoutError`` (or declares a latency above the timeout).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence


@dataclass(frozen=True)
class ModelRequest:
    view: str
    max_output_tokens: int
    timeout_s: float


@dataclass(frozen=True)
class ModelResponse:
    reply: Any                              # normally a dict; anything else is a malformed reply
    latency_s: float | None = None          # declared latency (stand-ins); None = measure with the clock
    input_tokens: int | None = None         # provider-reported usage; None = estimate from the text
    output_tokens: int | None = None
    finish_reason: str | None = None
    response_model: str | None = None


class Model(Protocol):
    name: str
    provider: str

    def propose(self, request: ModelRequest) -> ModelResponse: ...


class FunctionModel:
    """A model defined by a function of (view as dict, call number) -> reply."""

    def __init__(self, fn: Callable[[dict[str, Any], int], Any], *, latency: float = 1.5,
                 name: str = "function-model", provider: str = "agentobs"):
        self.fn, self.latency, self.name, self.provider = fn, latency, name, provider
        self.calls = 0

    def propose(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        return ModelResponse(self.fn(json.loads(request.view), self.calls), self.latency)


class ScriptedModel:
    """Returns the given replies in order, then repeats the last one."""

    def __init__(self, replies: Sequence[Any], *, latency: float = 1.5, name: str = "scripted-model",
                 provider: str = "agentobs"):
        if not replies:
            raise ValueError("ScriptedModel needs at least one reply")
        self.replies, self.latency, self.name, self.provider = list(replies), latency, name, provider
        self.calls = 0

    def propose(self, request: ModelRequest) -> ModelResponse:
        reply = self.replies[min(self.calls, len(self.replies) - 1)]
        self.calls += 1
        return ModelResponse(reply, self.latency)
