"""A kernel model on the OpenAI Chat Completions API (``pip install agentobs[openai]``).

Works with OpenAI and with any compatible server (vLLM, llama.cpp, Ollama, LiteLLM ...) through ``base_url``::

    model = OpenAIChatModel("gpt-4.1-mini",
                            tools=[ToolSpec(name="get_order", effect="read", description="Read an order")],
                            schemas={"get_order": {"type": "object", "properties": {"order_id": {"type": "string"}}}})
    kernel = Kernel(model, toolbox, budget=Budget(max_usd=0.05), clock=RealClock())

The request's view, output cap and time left become the messages, ``max_completion_tokens`` (or
``max_tokens`` with ``token_param="max_tokens"`` for servers that only know the older name) and the
request timeout; the reply becomes a proposal with the provider's usage (cached and reasoning tokens
included), model id and finish reason. ``propose`` (sync, ``openai.OpenAI``) and
``apropose`` (async, ``openai.AsyncOpenAI``) share every conversion.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ..contract.events import TokenUsage
from ..errors import ConfigError, ProposalError
from ..kernel import ModelRequest, ModelResponse, ToolSpec
from . import _common as c

try:
    import openai
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError("the OpenAI adapter needs the openai SDK: pip install 'agentobs[openai]'") from exc

TokenParam = Literal["max_completion_tokens", "max_tokens"]


class OpenAIChatModel:
    """``Model`` for the kernel on Chat Completions. ``name`` is the requested model (what prices are looked up
    by); ``provider`` the genai-prices provider id (``openai`` unless the server serves another vendor's models)."""

    def __init__(self, model: str, *, tools: Sequence[ToolSpec] = (),
                 schemas: Mapping[str, Mapping[str, Any]] | None = None, base_url: str | None = None,
                 api_key: str | None = None, client: openai.OpenAI | None = None,
                 async_client: openai.AsyncOpenAI | None = None,
                 provider: str = "openai", token_param: TokenParam = "max_completion_tokens",
                 system_prompt: str = c.SYSTEM_PROMPT, extra_body: Mapping[str, Any] | None = None):
        if not isinstance(model, str) or not model:
            raise ConfigError("OpenAIChatModel: model must be a non-empty model id")
        if token_param not in ("max_completion_tokens", "max_tokens"):
            raise ConfigError(f"token_param must be 'max_completion_tokens' or 'max_tokens', got {token_param!r}")
        self.name, self.provider, self.token_param = model, provider, token_param
        self.system_prompt = system_prompt
        self.extra_body = dict(extra_body or {})
        self.tools = c.tool_schemas(tools, schemas)
        self._wire_tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                              "parameters": t.parameters}} for t in self.tools]
        # the kernel adds these to its estimate of every request's input (token and dollar limits)
        self.request_overhead_tokens: int = c.overhead_tokens(self.system_prompt, self._wire_tools)
        self._base_url, self._api_key = base_url, api_key
        # the kernel's retry policy is the only one: the SDK's hidden retries are switched off
        self._client = client.with_options(max_retries=0) if client is not None else None
        self._aclient = async_client.with_options(max_retries=0) if async_client is not None else None

    # -- the two entry points: only the transport differs -----------------------------------------

    def propose(self, request: ModelRequest) -> ModelResponse:
        kwargs = self._kwargs(request)
        started = time.monotonic()
        try:
            answer = self._sync().chat.completions.with_raw_response.create(**kwargs)
        except openai.OpenAIError as exc:
            err, wait = c.failure(exc, timeout_errors=(openai.APITimeoutError,), timeout_s=kwargs["timeout"])
            if wait:
                time.sleep(wait)
            raise err from exc
        return self._read(answer, time.monotonic() - started)

    async def apropose(self, request: ModelRequest) -> ModelResponse:
        kwargs = self._kwargs(request)
        started = time.monotonic()
        try:
            answer = await self._async().chat.completions.with_raw_response.create(**kwargs)
        except openai.OpenAIError as exc:
            err, wait = c.failure(exc, timeout_errors=(openai.APITimeoutError,), timeout_s=kwargs["timeout"])
            if wait:
                await asyncio.sleep(wait)
            raise err from exc
        return self._read(answer, time.monotonic() - started)

    # -- conversion, shared ----------------------------------------------------------------------

    def _kwargs(self, request: ModelRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.name,
            "messages": [{"role": "system", "content": self.system_prompt},
                         {"role": "user", "content": request.view}],
            self.token_param: request.max_output_tokens,
            "timeout": c.check_timeout(request.timeout_s),
        }
        if self._wire_tools:
            kwargs["tools"] = self._wire_tools
            kwargs["parallel_tool_calls"] = False
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        return kwargs

    def _read(self, answer: Any, latency: float) -> ModelResponse:
        """The answer (the SDK's raw response): parsed, or, when its body is past what Python's JSON reader takes,
        a malformed reply charged with the body's own usage member."""
        try:
            raw = answer.parse()
        except (RecursionError, ValueError) as exc:
            why, usage = c.unreadable_body(answer.http_response.content, exc)
            return c.response(None, latency=latency, usage=_usage(usage), finish_reason=None, model=None,
                              malformed=why)
        return self._response(raw, latency)

    def _response(self, raw: Any, latency: float) -> ModelResponse:
        usage = _usage(getattr(raw, "usage", None))
        choices = getattr(raw, "choices", None)
        choice = choices[0] if choices else None
        finish, model = getattr(choice, "finish_reason", None), getattr(raw, "model", None)
        try:
            reply = _reply(choice)
        except ProposalError as exc:       # answered and paid for, but no reply: the model is told
            return c.response(None, latency=latency, usage=usage, finish_reason=finish, model=model,
                              malformed=exc.detail)
        return c.response(reply, latency=latency, usage=usage, finish_reason=finish, model=model)

    def _sync(self) -> openai.OpenAI:
        if self._client is None:
            self._client = openai.OpenAI(base_url=self._base_url, api_key=self._api_key, max_retries=0)
        return self._client

    def _async(self) -> openai.AsyncOpenAI:
        if self._aclient is None:
            self._aclient = openai.AsyncOpenAI(base_url=self._base_url, api_key=self._api_key, max_retries=0)
        return self._aclient


def _reply(choice: Any) -> dict[str, Any] | str:
    """A choice's message as the kernel's proposal (``ProposalError`` when there is none to read)."""
    if choice is None:
        raise ProposalError("malformed_reply", "the provider answered without a choice")
    msg = choice.message
    calls = getattr(msg, "tool_calls", None) or []
    if calls:
        fn = calls[0].function
        return c.tool_reply(fn.name, c.arguments(fn.arguments, fn.name))
    if isinstance(getattr(msg, "refusal", None), str) and msg.refusal.strip():
        return {"type": "final", "outcome": "cannot_complete", "text": msg.refusal}   # the model declined
    return c.text_reply(msg.content if isinstance(msg.content, str) else "")


def _usage(u: Any) -> TokenUsage | None:
    """``usage`` of a chat completion, an SDK object or the raw JSON member (a compatible server may leave out any
    part of it)."""
    if u is None:
        return None
    pd, cd = c.field(u, "prompt_tokens_details"), c.field(u, "completion_tokens_details")
    return c.reported_usage(c.field(u, "prompt_tokens"), c.field(u, "completion_tokens"),
                            cache_read=c.field(pd, "cached_tokens"), reasoning=c.field(cd, "reasoning_tokens"))
