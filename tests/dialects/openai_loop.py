"""A plain OpenAI-client tool loop, as hand-written agents do it (for the dialects without an agent framework).

The model is called with the tools' JSON schemas; every tool call of a reply is executed in order and its result
(or the error text, when the tool raises) appended; the loop ends at the first answer without tool calls, and
raises ``MaxTurnsExceeded`` after ``max_turns`` model calls that all asked for tools (the loop's turn limit).
With ``fatal_tool_errors`` a tool's exception ends the run instead of going back to the model. With ``stream``
the client streams (``stream_options.include_usage``) and the loop assembles the reply from the chunks. The
instrumentation under test wraps the client (OpenLLMetry, OpenTelemetry's openai-v2) or the functions
(decorators).
"""
from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from common import TURN_LIMIT

SYSTEM = "[agent:assistant] You answer with the tools."


class MaxTurnsExceeded(RuntimeError):
    """The loop asked the model ``max_turns`` times and every reply asked for tools."""


def schema(f: Callable) -> dict:
    params = {n: {"type": "integer" if p.annotation in (int, "int") else "string"}
              for n, p in inspect.signature(f).parameters.items()}
    return {"type": "function", "function": {"name": f.__name__, "description": (f.__doc__ or "").strip(),
                                             "parameters": {"type": "object", "properties": params,
                                                            "required": list(params)}}}


def assemble(chunks: Any) -> SimpleNamespace:
    """The assistant message of a streamed chat completion (content and tool calls from the deltas)."""
    content: list[str] = []
    calls: dict[int, dict] = {}
    for chunk in chunks:
        for choice in chunk.choices or []:
            d = choice.delta
            if d.content:
                content.append(d.content)
            for tc in d.tool_calls or []:
                c = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                c["id"] = tc.id or c["id"]
                if tc.function is not None:
                    c["name"] += tc.function.name or ""
                    c["arguments"] += tc.function.arguments or ""
    tool_calls = [SimpleNamespace(id=c["id"], function=SimpleNamespace(name=c["name"], arguments=c["arguments"]))
                  for _, c in sorted(calls.items())]
    return SimpleNamespace(content="".join(content) or None, tool_calls=tool_calls or None)


def tool_loop(client: Any, user: str, tools: dict[str, Callable], *, model: str = "gpt-4o-mini",
              max_turns: int = 8, chat: Callable[..., Any] | None = None, stream: bool = False,
              fatal_tool_errors: bool = False, system: str = SYSTEM) -> str:
    """Runs to the final answer; ``chat(**kwargs)`` replaces ``client.chat.completions.create`` when given."""
    create = chat or client.chat.completions.create
    messages: list[dict] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    specs = [schema(f) for f in tools.values()]
    extra: dict[str, Any] = {"stream": True, "stream_options": {"include_usage": True}} if stream else {}
    for _ in range(max_turns):
        resp = create(model=model, messages=messages, tools=specs, temperature=0, **extra)
        msg = assemble(resp) if stream else resp.choices[0].message
        if not msg.tool_calls:
            return msg.content or ""
        messages.append({"role": "assistant", "content": msg.content,
                         "tool_calls": [{"id": c.id, "type": "function",
                                         "function": {"name": c.function.name, "arguments": c.function.arguments}}
                                        for c in msg.tool_calls]})
        for c in msg.tool_calls:
            try:
                out = str(tools[c.function.name](**json.loads(c.function.arguments or "{}")))
            except Exception as e:  # the model is told, as frameworks do, unless tool errors are fatal
                if fatal_tool_errors:
                    raise
                out = f"error: {e}"
            messages.append({"role": "tool", "tool_call_id": c.id, "content": out})
    raise MaxTurnsExceeded(f"max turns ({max_turns}) reached")


# The shapes a plain loop runs beyond plain/http/two_runs (keys of common.SHAPE_OF), and the loop's options for
# each: the retries runs use a client with retries (the driver's ``retry_client``), the others these arguments.
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fatal", "turn_limit", "multi_agent")
RETRY_KEYS = ("retries", "retries_exhausted")
TRANSLATOR = "[agent:translator] You translate to French."


def options(key: str) -> dict[str, Any]:
    return {"streaming": {"stream": True}, "tool_error_fatal": {"fatal_tool_errors": True},
            "turn_limit": {"max_turns": TURN_LIMIT}}.get(key, {})
