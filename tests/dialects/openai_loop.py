"""A plain OpenAI-client tool loop, as hand-written agents do it (for the dialects without an agent framework).

The model is called with the tools' JSON schemas; every tool call is executed and its result (or the error
text, when the tool raises) appended; the loop ends at the first answer without tool calls. The instrumentation
under test wraps the client (OpenLLMetry, OpenTelemetry's openai-v2) or the functions (decorators).
"""
from __future__ import annotations

import inspect
import json
from typing import Any, Callable

SYSTEM = "[agent:assistant] You answer with the tools."


def schema(f: Callable) -> dict:
    params = {n: {"type": "integer" if p.annotation in (int, "int") else "string"}
              for n, p in inspect.signature(f).parameters.items()}
    return {"type": "function", "function": {"name": f.__name__, "description": (f.__doc__ or "").strip(),
                                             "parameters": {"type": "object", "properties": params,
                                                            "required": list(params)}}}


def tool_loop(client: Any, user: str, tools: dict[str, Callable], *, model: str = "gpt-4o-mini",
              max_turns: int = 8, chat: Callable[..., Any] | None = None) -> str:
    """Runs to the final answer; ``chat(**kwargs)`` replaces ``client.chat.completions.create`` when given."""
    create = chat or client.chat.completions.create
    messages: list[dict] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
    specs = [schema(f) for f in tools.values()]
    for _ in range(max_turns):
        resp = create(model=model, messages=messages, tools=specs, temperature=0)
        msg = resp.choices[0].message
        if not msg.tool_calls:
            return msg.content or ""
        messages.append({"role": "assistant", "content": msg.content,
                         "tool_calls": [{"id": c.id, "type": "function",
                                         "function": {"name": c.function.name, "arguments": c.function.arguments}}
                                        for c in msg.tool_calls]})
        for c in msg.tool_calls:
            try:
                out = str(tools[c.function.name](**json.loads(c.function.arguments or "{}")))
            except Exception as e:  # the model is told, as frameworks do
                out = f"error: {e}"
            messages.append({"role": "tool", "tool_call_id": c.id, "content": out})
    raise RuntimeError("max turns reached")
