"""A kernel model on the Anthropic Messages API (``pip install agentobs[anthropic]``)::

    model = AnthropicMessagesModel("claude-haiku-4-5", tools=[...], schemas={...})
    kernel = Kernel(model, toolbox, budget=Budget(max_usd=0.05), clock=RealClock())

The request's view, output cap and time left become the user message, ``max_tokens`` and the request
timeout; tool specs become ``tools`` with ``input_schema`` (one tool call per reply:
``disable_parallel_tool_use``); the reply becomes a proposal. ``input_tokens`` given to the kernel is the
whole prompt: the uncached part plus cache reads and cache writes, which the response also carries apart
(``cache_read_input_tokens``, ``cache_creation_input_tokens``; the thinking tokens when reported).
``propose`` (``anthropic.Anthropic``) and ``apropose`` (``anthropic.AsyncAnthropic``) share every conversion.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..contract.events import TokenUsage
from ..errors import ConfigError, ProposalError
from ..kernel import ModelRequest, ModelResponse, ToolSpec
from . import _common as c

try:
    import anthropic
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError("the Anthropic adapter needs the anthropic SDK: pip install 'agentobs[anthropic]'") from exc


class AnthropicMessagesModel:
    """``Model`` for the kernel on Messages. ``name`` is the requested model (what prices are looked up by)."""

    def __init__(self, model: str, *, tools: Sequence[ToolSpec] = (),
                 schemas: Mapping[str, Mapping[str, Any]] | None = None, base_url: str | None = None,
                 api_key: str | None = None, client: anthropic.Anthropic | None = None,
                 async_client: anthropic.AsyncAnthropic | None = None,
                 provider: str = "anthropic", system_prompt: str = c.SYSTEM_PROMPT):
        if not isinstance(model, str) or not model:
            raise ConfigError("AnthropicMessagesModel: model must be a non-empty model id")
        self.name, self.provider, self.system_prompt = model, provider, system_prompt
        self.tools = c.tool_schemas(tools, schemas)
        self._wire_tools = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                            for t in self.tools]
        # the kernel adds these to its estimate of every request's input (token and dollar limits)
        self.request_overhead_tokens: int = c.overhead_tokens(self.system_prompt, self._wire_tools)
        self._base_url, self._api_key = base_url, api_key
        # the kernel's retry policy is the only one: the SDK's hidden retries are switched off
        self._client = client.with_options(max_retries=0) if client is not None else None
        self._aclient = async_client.with_options(max_retries=0) if async_client is not None else None

    def propose(self, request: ModelRequest) -> ModelResponse:
        kwargs = self._kwargs(request)
        started = time.monotonic()
        try:
            answer = self._sync().messages.with_raw_response.create(**kwargs)
        except anthropic.AnthropicError as exc:
            err, wait = c.failure(exc, timeout_errors=(anthropic.APITimeoutError,), timeout_s=kwargs["timeout"])
            if wait:
                time.sleep(wait)
            raise err from exc
        try:
            raw = answer.parse()
        except (RecursionError, ValueError) as exc:
            return _unreadable(answer.http_response.content, exc, time.monotonic() - started)
        return self._response(raw, time.monotonic() - started)

    async def apropose(self, request: ModelRequest) -> ModelResponse:
        kwargs = self._kwargs(request)
        started = time.monotonic()
        try:
            answer = await self._async().messages.with_raw_response.create(**kwargs)
        except anthropic.AnthropicError as exc:
            err, wait = c.failure(exc, timeout_errors=(anthropic.APITimeoutError,), timeout_s=kwargs["timeout"])
            if wait:
                await asyncio.sleep(wait)
            raise err from exc
        try:
            raw = await answer.parse()
        except (RecursionError, ValueError) as exc:
            return _unreadable(await answer.read(), exc, time.monotonic() - started)
        return self._response(raw, time.monotonic() - started)

    def _kwargs(self, request: ModelRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.name,
            "system": self.system_prompt,
            "messages": [{"role": "user", "content": request.view}],
            "max_tokens": request.max_output_tokens,
            "timeout": c.check_timeout(request.timeout_s),
        }
        if self._wire_tools:
            kwargs["tools"] = self._wire_tools
            kwargs["tool_choice"] = {"type": "auto", "disable_parallel_tool_use": True}
        return kwargs

    def _response(self, raw: Any, latency: float) -> ModelResponse:
        usage = _usage(getattr(raw, "usage", None))
        finish, model = getattr(raw, "stop_reason", None), getattr(raw, "model", None)
        try:
            reply = _reply(list(getattr(raw, "content", None) or []))
        except ProposalError as exc:       # answered and paid for, but no reply: the model is told
            return c.response(None, latency=latency, usage=usage, finish_reason=finish, model=model,
                              malformed=exc.detail)
        return c.response(reply, latency=latency, usage=usage, finish_reason=finish, model=model)

    def _sync(self) -> anthropic.Anthropic:
        if self._client is None:
            self._client = anthropic.Anthropic(base_url=self._base_url, api_key=self._api_key, max_retries=0)
        return self._client

    def _async(self) -> anthropic.AsyncAnthropic:
        if self._aclient is None:
            self._aclient = anthropic.AsyncAnthropic(base_url=self._base_url, api_key=self._api_key, max_retries=0)
        return self._aclient


def _reply(blocks: list[Any]) -> dict[str, Any] | str:
    """A message's content as the kernel's proposal (``ProposalError`` when there is none to read)."""
    use = next((b for b in blocks if getattr(b, "type", None) == "tool_use"), None)
    if use is not None:
        return c.tool_reply(use.name, c.arguments(use.input, use.name))
    if not blocks:
        raise ProposalError("malformed_reply", "the provider answered with no content")
    texts = (getattr(b, "text", "") for b in blocks if getattr(b, "type", None) == "text")
    return c.text_reply("".join(t for t in texts if isinstance(t, str)))


def _unreadable(body: bytes, exc: BaseException, latency: float) -> ModelResponse:
    """An answer whose body is past what Python's JSON reader takes: a malformed reply, charged the body's usage."""
    why, usage = c.unreadable_body(body, exc)
    return c.response(None, latency=latency, usage=_usage(usage), finish_reason=None, model=None, malformed=why)


def _usage(u: Any) -> TokenUsage | None:
    """``usage`` of a message, an SDK object or the raw JSON member: Anthropic counts the uncached input apart from
    cache reads and writes; the kernel's input is their sum."""
    if u is None:
        return None
    uncached = c.count(c.field(u, "input_tokens"))
    read = c.count(c.field(u, "cache_read_input_tokens"))
    created = c.count(c.field(u, "cache_creation_input_tokens"))
    whole = None if uncached is None else uncached + (read or 0) + (created or 0)
    details = c.field(u, "output_tokens_details")
    return c.reported_usage(whole, c.field(u, "output_tokens"), cache_read=read, cache_creation=created,
                            reasoning=c.field(details, "thinking_tokens"))
