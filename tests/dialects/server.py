"""A scripted OpenAI-compatible server on 127.0.0.1 for the dialect fixtures.

It replays, per run, a list of assistant replies: tool calls with arguments, a final answer, or an
HTTP error. Which run a request belongs to comes from a marker ``[run:KEY]`` that the driver puts in
the user prompt (the first marker found in the request's messages / input). Every served reply is
logged (run key, status, model, usage, tool calls issued, the agent named in the system prompt by
``[agent:NAME]``); the truth of a fixture is computed from this log and the tool-execution log only.

Endpoints: ``POST /v1/chat/completions`` (streaming off, or a minimal SSE stream when a client
insists) and ``POST /v1/responses`` (non-streaming), both answering from the same script.
"""
from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MARKER = re.compile(r"\[run:([A-Za-z0-9_./-]+)\]")
AGENT = re.compile(r"\[agent:([A-Za-z0-9_.-]+)\]")


@dataclass(kw_only=True)
class Reply:
    """One scripted answer. ``tool_calls`` is a list of (tool name, arguments dict)."""
    tool_calls: list[tuple[str, dict]] = field(default_factory=list)
    content: str | None = None
    status: int = 200
    model: str = "gpt-4o-mini-2024-07-18"
    prompt_tokens: int = 100
    completion_tokens: int = 20
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None

    def usage_chat(self) -> dict:
        u: dict[str, Any] = {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                             "total_tokens": self.prompt_tokens + self.completion_tokens}
        if self.cached_tokens is not None:
            u["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        if self.reasoning_tokens is not None:
            u["completion_tokens_details"] = {"reasoning_tokens": self.reasoning_tokens}
        return u

    def usage_responses(self) -> dict:
        return {"input_tokens": self.prompt_tokens, "output_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
                "input_tokens_details": {"cached_tokens": self.cached_tokens or 0},
                "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens or 0}}


def call(name: str, **args: Any) -> tuple[str, dict]:
    return (name, args)


class Script:
    """Replies per run key, served in order; the log of what was served."""

    def __init__(self, runs: dict[str, list[Reply]]):
        self.runs = {k: list(v) for k, v in runs.items()}
        self.pos: dict[str, int] = {k: 0 for k in runs}
        self.log: list[dict] = []
        self.lock = threading.Lock()
        self.seq = 0

    def add(self, key: str, replies: list[Reply]) -> None:
        with self.lock:
            self.runs[key] = list(replies)
            self.pos[key] = 0

    def next(self, key: str | None, agent: str | None, endpoint: str) -> tuple[Reply | None, int]:
        with self.lock:
            if key is None or key not in self.runs:
                self.log.append({"run": key, "status": 404, "endpoint": endpoint, "unscripted": True})
                return None, 0
            i = self.pos[key]
            if i >= len(self.runs[key]):
                self.log.append({"run": key, "status": 404, "endpoint": endpoint, "exhausted": True})
                return None, 0
            self.pos[key] = i + 1
            r = self.runs[key][i]
            self.seq += 1
            self.log.append({"run": key, "index": i, "status": r.status, "endpoint": endpoint, "agent": agent,
                             "model": r.model if r.status == 200 else None,
                             "usage": {"prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens,
                                       "cached_tokens": r.cached_tokens, "reasoning_tokens": r.reasoning_tokens}
                             if r.status == 200 else None,
                             "tool_calls": [[n, a] for n, a in r.tool_calls] if r.status == 200 else []})
            return r, self.seq


def _texts(obj: Any) -> list[str]:
    """Every string inside a JSON value, in document order."""
    out: list[str] = []
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, list):
        for x in obj:
            out.extend(_texts(x))
    elif isinstance(obj, dict):
        for x in obj.values():
            out.extend(_texts(x))
    return out


def _find(pattern: re.Pattern, obj: Any) -> str | None:
    for t in _texts(obj):
        m = pattern.search(t)
        if m:
            return m.group(1)
    return None


def _system_agent(body: dict) -> str | None:
    for m in body.get("messages") or []:
        if m.get("role") in ("system", "developer"):
            a = _find(AGENT, m.get("content"))
            if a:
                return a
    if body.get("instructions"):
        return _find(AGENT, body["instructions"])
    return _find(AGENT, body.get("input"))


def chat_completion(r: Reply, seq: int, request_model: str) -> dict:
    msg: dict[str, Any] = {"role": "assistant", "content": r.content}
    if r.tool_calls:
        msg["tool_calls"] = [{"id": f"call_{seq:04d}_{j}", "type": "function",
                              "function": {"name": n, "arguments": json.dumps(a, sort_keys=True)}}
                             for j, (n, a) in enumerate(r.tool_calls)]
    return {"id": f"chatcmpl-{seq:06d}", "object": "chat.completion", "created": int(time.time()),
            "model": r.model, "system_fingerprint": "fp_scripted",
            "choices": [{"index": 0, "message": msg, "logprobs": None,
                         "finish_reason": "tool_calls" if r.tool_calls else "stop"}],
            "usage": r.usage_chat()}


def chat_chunks(r: Reply, seq: int) -> list[dict]:
    base = {"id": f"chatcmpl-{seq:06d}", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": r.model, "system_fingerprint": "fp_scripted"}
    out = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": r.content or ""},
                                 "finish_reason": None}]}]
    if r.tool_calls:
        out.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": j, "id": f"call_{seq:04d}_{j}", "type": "function",
             "function": {"name": n, "arguments": json.dumps(a, sort_keys=True)}}
            for j, (n, a) in enumerate(r.tool_calls)]}, "finish_reason": None}]})
    out.append({**base, "choices": [{"index": 0, "delta": {},
                                     "finish_reason": "tool_calls" if r.tool_calls else "stop"}]})
    out.append({**base, "choices": [], "usage": r.usage_chat()})
    return out


def response_object(r: Reply, seq: int) -> dict:
    output: list[dict] = []
    for j, (n, a) in enumerate(r.tool_calls):
        output.append({"type": "function_call", "id": f"fc_{seq:04d}_{j}", "call_id": f"call_{seq:04d}_{j}",
                       "name": n, "arguments": json.dumps(a, sort_keys=True), "status": "completed"})
    if r.content is not None:
        output.append({"type": "message", "id": f"msg_{seq:06d}", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": r.content, "annotations": []}]})
    return {"id": f"resp_{seq:06d}", "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": r.model, "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": r.usage_responses()}


class _Handler(BaseHTTPRequestHandler):
    script: Script

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(n) or b"{}")
        except ValueError:
            self._send(400, {"error": {"message": "bad json", "type": "invalid_request_error"}})
            return
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/chat/completions"):
            endpoint = "chat"
            key = _find(MARKER, body.get("messages"))
        elif path.endswith("/responses"):
            endpoint = "responses"
            key = _find(MARKER, body.get("input"))
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        r, seq = self.script.next(key, _system_agent(body), endpoint)
        if r is None:
            self._send(404, {"error": {"message": f"no scripted reply for run {key!r}", "type": "not_found"}})
            return
        if r.status != 200:
            self._send(r.status, {"error": {"message": "scripted server error", "type": "server_error",
                                            "code": "scripted"}})
            return
        if endpoint == "responses":
            self._send(200, response_object(r, seq))
        elif body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for chunk in chat_chunks(r, seq):
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True
        else:
            self._send(200, chat_completion(r, seq, body.get("model", "")))


class ScriptedServer:
    """``with ScriptedServer(script) as srv: srv.base_url`` -> ``http://127.0.0.1:PORT/v1``."""

    def __init__(self, script: Script):
        self.script = script
        handler = type("Handler", (_Handler,), {"script": script})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "ScriptedServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
