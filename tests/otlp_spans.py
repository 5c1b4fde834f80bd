"""Small OTLP JSON lines files written from span dicts, for the view tests (trace trees, tables that fit)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

T0 = 1_767_225_600_000_000_000          # 2026-01-01T00:00:00Z in ns


def span(trace: str, sid: int, parent: int | None, name: str, start_ms: float, end_ms: float,
         attrs: dict[str, Any] | None = None, *, error: str | None = None) -> dict[str, Any]:
    """One span of ``trace`` (32 hex digits): ids are numbers written as 16 hex digits, times in ms after ``T0``."""
    out: dict[str, Any] = {
        "traceId": trace, "spanId": f"{sid:016x}", "name": name, "kind": 1,
        "startTimeUnixNano": str(T0 + int(start_ms * 1e6)), "endTimeUnixNano": str(T0 + int(end_ms * 1e6)),
        "attributes": [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) and not isinstance(v, bool)
                        else {"stringValue": str(v)}} for k, v in (attrs or {}).items()]}
    if parent is not None:
        out["parentSpanId"] = f"{parent:016x}"
    if error is not None:
        out["status"] = {"code": 2, "message": error}
    return out


def agent(name: str) -> dict[str, Any]:
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}


def chat(model: str, tin: int, tout: int) -> dict[str, Any]:
    return {"gen_ai.operation.name": "chat", "gen_ai.request.model": model, "gen_ai.usage.input_tokens": tin,
            "gen_ai.usage.output_tokens": tout}


def tool(name: str, call: str = "") -> dict[str, Any]:
    return {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
            **({"gen_ai.tool.call.id": call} if call else {})}


def write(path: Path, spans: list[dict[str, Any]], per_line: int = 500) -> Path:
    """``spans`` as OTLP JSON lines, ``per_line`` spans a request."""
    with open(path, "w", encoding="utf-8") as f:
        for i in range(0, len(spans), per_line):
            f.write(json.dumps({"resourceSpans": [{"resource": {"attributes": [
                {"key": "service.name", "value": {"stringValue": "tests"}}]},
                "scopeSpans": [{"scope": {"name": "tests"}, "spans": spans[i:i + per_line]}]}]}) + "\n")
    return path
