"""A scripted OpenAI-compatible server on 127.0.0.1 for the dialect fixtures.

It replays, per run, a list of assistant replies: tool calls with arguments (one or several in one reply), a
final answer, or an HTTP error (optionally held longer than the client waits: a timeout). Which run a request
belongs to comes from a marker ``[run:KEY]`` that the driver puts in the user prompt (the first marker found in
the request's messages / input). A run's script can also be endless (``Forever``: a reply made per request, for
the turn-limit shape). Every request served is logged (run key, status, model, usage delivered, tool calls
issued, the agent named in the system prompt by ``[agent:NAME]``, whether a stream was asked for, whether the
request offered the model any tools, and a hash of the canonical request body, so that a retry of the same
request can be told from a new call); the truth of a fixture is computed from this log and the tool-execution
log only. ``stamp()`` orders the two logs.

Endpoints: ``POST /v1/chat/completions`` (JSON, or SSE chunks when ``stream`` is set: tool-call arguments in
fragments, usage in a last chunk when ``stream_options.include_usage``) and ``POST /v1/responses`` (JSON, or the
SSE event sequence of the Responses API when ``stream`` is set: ``response.created``, the output items,
``response.completed`` with usage), both answering from the same script.
"""
from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MARKER = re.compile(r"\[run:([A-Za-z0-9_./-]+)\]")
AGENT = re.compile(r"\[agent:([A-Za-z0-9_.-]+)\]")
RETRY_AFTER_MS = "20"   # sent with every error answer: clients that honour it retry at once

_clock = itertools.count(1)
_clock_lock = threading.Lock()


def stamp() -> int:
    """A process-wide sequence number: orders the server log and the tool log of a fixture."""
    with _clock_lock:
        return next(_clock)


def body_hash(body: Any) -> str:
    """The request body as canonical JSON (sorted keys, no spaces), hashed: equal for a resent request."""
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


@dataclass(kw_only=True)
class Reply:
    """One scripted answer. ``tool_calls`` is a list of (tool name, arguments dict); several are parallel calls.

    A ``status`` other than 200 answers with that HTTP error; ``hold`` (seconds) waits before answering, longer
    than the client's timeout for a timeout attempt.
    """
    tool_calls: list[tuple[str, dict]] = field(default_factory=list)
    content: str | None = None
    status: int = 200
    hold: float = 0.0
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

    def usage_log(self) -> dict:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "cached_tokens": self.cached_tokens, "reasoning_tokens": self.reasoning_tokens}


@dataclass(kw_only=True)
class Forever:
    """An endless script: ``make(i)`` is the reply to the run's i-th request (the turn-limit shape).

    ``forced`` answers a request that offers the model no tools: a framework that, at its limit, asks once more for
    a final answer with the tools taken away (CrewAI, smolagents) gets text, the only answer a real model can give
    there. ``None``: every request gets ``make(i)``.
    """
    make: Callable[[int], Reply]
    forced: Reply | None = None


def call(name: str, **args: Any) -> tuple[str, dict]:
    return (name, args)


class Script:
    """Replies per run key, served in order; the log of what was served."""

    def __init__(self, runs: dict[str, list[Reply] | Forever]):
        self.runs: dict[str, list[Reply] | Forever] = {k: _copy(v) for k, v in runs.items()}
        self.pos: dict[str, int] = {k: 0 for k in runs}
        self.log: list[dict] = []
        self.lock = threading.Lock()
        self.seq = 0

    def add(self, key: str, replies: list[Reply] | Forever) -> None:
        with self.lock:
            self.runs[key] = _copy(replies)
            self.pos[key] = 0

    def next(self, key: str | None, agent: str | None, endpoint: str, body: dict) -> tuple[Reply | None, int]:
        stream = bool(body.get("stream"))
        tools = bool(body.get("tools"))
        with self.lock:
            base = {"run": key, "endpoint": endpoint, "stream": stream, "body_hash": body_hash(body),
                    "tools_offered": tools, "seq": stamp()}
            if key is None or key not in self.runs:
                self.log.append({**base, "status": 404, "unscripted": True})
                return None, 0
            i = self.pos[key]
            script = self.runs[key]
            if isinstance(script, Forever):
                r = script.forced if script.forced is not None and not tools else script.make(i)
            elif i < len(script):
                r = script[i]
            else:
                self.log.append({**base, "status": 404, "exhausted": True})
                return None, 0
            self.pos[key] = i + 1
            self.seq += 1
            ok = r.status == 200
            # a chat stream carries usage only when the client asks for it; every other answer carries it
            usage = ok and (not stream or endpoint == "responses"
                            or bool((body.get("stream_options") or {}).get("include_usage")))
            self.log.append({**base, "index": i, "status": r.status, "agent": agent, "hold": r.hold,
                             "model": r.model if ok else None,
                             "usage": r.usage_log() if usage else None,
                             "tool_calls": [[n, a] for n, a in r.tool_calls] if ok else []})
            return r, self.seq


def _copy(v: list[Reply] | Forever) -> list[Reply] | Forever:
    return v if isinstance(v, Forever) else list(v)


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


def _args(a: dict) -> str:
    return json.dumps(a, sort_keys=True)


def _pieces(text: str) -> list[str]:
    """A text in a few stream deltas (split on spaces, kept whole when short)."""
    words = text.split(" ")
    if len(words) < 3:
        return [text]
    cut = len(words) // 2
    return [" ".join(words[:cut]) + " ", " ".join(words[cut:])]


def chat_completion(r: Reply, seq: int) -> dict:
    msg: dict[str, Any] = {"role": "assistant", "content": r.content, "refusal": None}
    if r.tool_calls:
        msg["tool_calls"] = [{"id": f"call_{seq:04d}_{j}", "type": "function",
                              "function": {"name": n, "arguments": _args(a)}}
                             for j, (n, a) in enumerate(r.tool_calls)]
    return {"id": f"chatcmpl-{seq:06d}", "object": "chat.completion", "created": int(time.time()),
            "model": r.model, "system_fingerprint": "fp_scripted", "service_tier": "default",
            "choices": [{"index": 0, "message": msg, "logprobs": None,
                         "finish_reason": "tool_calls" if r.tool_calls else "stop"}],
            "usage": r.usage_chat()}


def chat_chunks(r: Reply, seq: int, include_usage: bool) -> list[dict]:
    """The chunks of a streamed chat completion, as the API sends them: the role first, the content in deltas,
    each tool call as a chunk with its id and name then one with its arguments, the finish reason, and (when the
    client asked ``stream_options.include_usage``) a last chunk with no choices and the usage."""
    base: dict[str, Any] = {"id": f"chatcmpl-{seq:06d}", "object": "chat.completion.chunk",
                            "created": int(time.time()), "model": r.model, "system_fingerprint": "fp_scripted",
                            "service_tier": "default"}
    if include_usage:
        base["usage"] = None

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
    out = [chunk({"role": "assistant", "content": "" if r.content is not None or not r.tool_calls else None,
                  "refusal": None})]
    for piece in _pieces(r.content) if r.content else []:
        out.append(chunk({"content": piece}))
    for j, (n, a) in enumerate(r.tool_calls):
        out.append(chunk({"tool_calls": [{"index": j, "id": f"call_{seq:04d}_{j}", "type": "function",
                                          "function": {"name": n, "arguments": ""}}]}))
        out.append(chunk({"tool_calls": [{"index": j, "function": {"arguments": _args(a)}}]}))
    out.append(chunk({}, "tool_calls" if r.tool_calls else "stop"))
    if include_usage:
        out.append({**base, "choices": [], "usage": r.usage_chat()})
    return out


def _output_items(r: Reply, seq: int) -> list[dict]:
    items: list[dict] = []
    if r.content is not None:
        items.append({"type": "message", "id": f"msg_{seq:06d}", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": r.content, "annotations": [], "logprobs": []}]})
    for j, (n, a) in enumerate(r.tool_calls):
        items.append({"type": "function_call", "id": f"fc_{seq:04d}_{j}", "call_id": f"call_{seq:04d}_{j}",
                      "name": n, "arguments": _args(a), "status": "completed"})
    return items


def response_object(r: Reply, seq: int, *, status: str = "completed", output: list[dict] | None = None) -> dict:
    done = status == "completed"
    return {"id": f"resp_{seq:06d}", "object": "response", "created_at": int(time.time()), "status": status,
            "error": None, "incomplete_details": None, "instructions": None, "max_output_tokens": None,
            "model": r.model, "output": _output_items(r, seq) if output is None else output,
            "parallel_tool_calls": True, "previous_response_id": None, "reasoning": {"effort": None, "summary": None},
            "service_tier": "default", "store": False, "temperature": 1.0, "text": {"format": {"type": "text"}},
            "tool_choice": "auto", "tools": [], "top_p": 1.0, "truncation": "disabled",
            "usage": r.usage_responses() if done else None, "metadata": {}}


def response_events(r: Reply, seq: int) -> list[dict]:
    """The SSE events of a streamed Responses API answer, in the order the API sends them."""
    events: list[dict] = [{"type": "response.created", "response": response_object(r, seq, status="in_progress",
                                                                                   output=[])},
                          {"type": "response.in_progress", "response": response_object(r, seq, status="in_progress",
                                                                                       output=[])}]
    for k, item in enumerate(_output_items(r, seq)):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append({"type": "response.output_item.added", "output_index": k,
                           "item": {**item, "status": "in_progress", "content": []}})
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            at = {"item_id": item["id"], "output_index": k, "content_index": 0}
            events.append({"type": "response.content_part.added", **at, "part": part})
            for piece in _pieces(text):
                events.append({"type": "response.output_text.delta", **at, "delta": piece, "logprobs": []})
            events.append({"type": "response.output_text.done", **at, "text": text, "logprobs": []})
            events.append({"type": "response.content_part.done", **at, "part": {**part, "text": text}})
        else:
            events.append({"type": "response.output_item.added", "output_index": k,
                           "item": {**item, "arguments": "", "status": "in_progress"}})
            at = {"item_id": item["id"], "output_index": k}
            events.append({"type": "response.function_call_arguments.delta", **at, "delta": item["arguments"]})
            events.append({"type": "response.function_call_arguments.done", **at, "arguments": item["arguments"]})
        events.append({"type": "response.output_item.done", "output_index": k, "item": item})
    events.append({"type": "response.completed", "response": response_object(r, seq)})
    for n, e in enumerate(events):
        e["sequence_number"] = n
    return events


class _Handler(BaseHTTPRequestHandler):
    script: Script

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, events: list[tuple[str | None, dict]], done: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
        if done:
            self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True

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
        r, seq = self.script.next(key, _system_agent(body), endpoint, body)
        if r is None:
            self._send(404, {"error": {"message": f"no scripted reply for run {key!r}", "type": "not_found"}})
            return
        if r.hold:
            time.sleep(r.hold)
        if r.status != 200:
            with contextlib.suppress(OSError):   # OSError: the client gave up waiting (a timeout attempt)
                self._send(r.status, {"error": {"message": "scripted server error", "type": "server_error",
                                                "code": "scripted"}}, {"retry-after-ms": RETRY_AFTER_MS})
            return
        if not body.get("stream"):
            self._send(200, response_object(r, seq) if endpoint == "responses" else chat_completion(r, seq))
        elif endpoint == "responses":
            self._stream([(e["type"], e) for e in response_events(r, seq)], done=False)
        else:
            include = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream([(None, c) for c in chat_chunks(r, seq, include)], done=True)


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

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
