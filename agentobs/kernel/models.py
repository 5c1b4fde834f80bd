"""The model interface and deterministic stand-ins that ship with the library.

A model receives the rendered view (a JSON string), the output limit and the time left,
and returns a ``ModelResponse``: a reply (a dict proposing a plan, a tool call or a final
answer) and what the provider reported about the call. The kernel treats the reply as a
proposal; anything malformed becomes an error result the model sees. A model that times out
raises ``TimeoutError`` (or declares a latency above the timeout).

An async model (``AsyncModel``) has ``async def apropose`` (or an ``async def propose``); the async kernel
awaits it, with the time left as a real timeout under a real clock. The async kernel runs a sync ``propose`` in a
worker thread, unless the model says it never blocks (``blocking = False``, as the stand-ins here do).
The stand-ins that keep a script or a call count serve one run at a time (``ConcurrentUseError`` otherwise).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .runs import OneRunAtATime


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelRequest:
    view: str                    # the rendered state (JSON)
    max_output_tokens: int       # the limit on the reply, to send to the provider as max_tokens
    timeout_s: float             # the active time left


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelResponse:
    """What ``Model.propose`` returns. Token counts are the provider's; when input or output is None the kernel
    estimates both from the text. The cache and reasoning counts are parts of the input and output counts
    (never added again); the kernel's token budget counts input + output. An adapter that could not read the
    provider's answer as a reply (tool arguments that are no JSON object, a body nested past Python's limits) returns
    ``reply=None`` with ``malformed`` saying why, and the usage the provider reported: the call was paid for."""
    reply: Any                                      # normally a dict; anything else is a malformed reply
    latency_s: float | None = None                  # declared latency (stand-ins); None = measure with the clock
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None      # input tokens served from the provider's cache
    cache_creation_input_tokens: int | None = None  # input tokens written to the provider's cache
    reasoning_output_tokens: int | None = None      # output tokens spent on reasoning
    finish_reason: str | None = None                # as the provider reported it
    response_model: str | None = None               # the model that answered, when the provider says
    malformed: str | None = None                    # why the provider's answer is no reply (an adapter could not
                                                    # read it): the model is shown a malformed_reply saying so


class Model(Protocol):
    name: str
    provider: str

    def propose(self, request: ModelRequest) -> ModelResponse: ...


class AsyncModel(Protocol):
    """A model the async kernel awaits (``Kernel.arun``); the sync kernel cannot use one."""
    name: str
    provider: str

    async def apropose(self, request: ModelRequest) -> ModelResponse: ...


_ONE_RUN = "give each concurrent run its own instance (a Kernel per run), or a model that reads only the view"


class FunctionModel:
    """A model defined by a function of (view as dict, call number) -> reply. One run at a time."""

    blocking = False              # the async kernel calls it in the event loop: make ``fn`` quick

    def __init__(self, fn: Callable[[dict[str, Any], int], Any], *, latency: float = 1.5,
                 name: str = "function-model", provider: str = "agentobs"):
        self.fn, self.latency, self.name, self.provider = fn, latency, name, provider
        self.calls = 0
        self._one = OneRunAtATime(f"FunctionModel {name!r} (its call number)", _ONE_RUN)

    def propose(self, request: ModelRequest) -> ModelResponse:
        self._one.claim()
        self.calls += 1
        return ModelResponse(reply=self.fn(json.loads(request.view), self.calls), latency_s=self.latency)


class ScriptedModel:
    """Returns the given replies in order, then repeats the last one. One run at a time."""

    blocking = False

    def __init__(self, replies: Sequence[Any], *, latency: float = 1.5, name: str = "scripted-model",
                 provider: str = "agentobs"):
        if not replies:
            raise ValueError("ScriptedModel needs at least one reply")
        self.replies, self.latency, self.name, self.provider = list(replies), latency, name, provider
        self.calls = 0
        self._one = OneRunAtATime(f"ScriptedModel {name!r} (its script)", _ONE_RUN)

    def propose(self, request: ModelRequest) -> ModelResponse:
        self._one.claim()
        reply = self.replies[min(self.calls, len(self.replies) - 1)]
        self.calls += 1
        return ModelResponse(reply=reply, latency_s=self.latency)
