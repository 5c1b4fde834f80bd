"""A scripted model provider on 127.0.0.1, started inside a test, speaking two wire APIs.

``POST /v1/chat/completions`` (OpenAI and compatible servers) and ``POST /v1/messages`` (Anthropic) answer
from one script: a function of the call (its parsed body and its number) that returns a ``Reply``. A reply
is a text answer, tool calls (arguments as a dict, or a raw string to send malformed JSON), or an HTTP
error (429 with ``Retry-After``, 500 ...), optionally after a delay, with a usage block that can report
cached and reasoning tokens. The server counts and logs every request it served, so a test can check
that no call went out past a limit.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(kw_only=True)
class Reply:
    text: str | None = None
    tool_calls: list[tuple[str, dict | str]] = field(default_factory=list)   # (name, args dict or raw text)
    status: int = 200
    retry_after: str | None = None          # Retry-After header of an error reply
    delay_s: float = 0.0                    # wait before answering (a slow provider)
    model: str | None = None                # reported model; default: the requested one
    input_tokens: int | None = None         # default: the request's text, 4 characters a token
    output_tokens: int = 20
    cached_tokens: int | None = None        # OpenAI prompt_tokens_details.cached_tokens / Anthropic cache read
    cache_creation_tokens: int | None = None  # Anthropic cache_creation_input_tokens
    reasoning_tokens: int | None = None     # OpenAI completion_tokens_details.reasoning_tokens
    finish_reason: str | None = None
    refusal: str | None = None              # OpenAI message.refusal (the model declined; content null)


def call(name: str, args: dict | str | None = None, **kw: Any) -> tuple[str, dict | str]:
    return (name, kw if args is None else args)


class RawJSON(str):
    """JSON text sent as it is, in place of a value of the answer (an Anthropic tool call's ``input``): for bodies
    that Python's ``json`` would not write, nested or numbered past its limits."""


@dataclass
class Call:
    """One request as the script sees it."""
    n: int                 # 1-based number of the request on this server
    api: str               # "chat" or "messages"
    body: dict[str, Any]

    @property
    def model(self) -> str:
        return self.body.get("model", "")

    def tool_results(self) -> list[str]:
        """The tool results the client sent back, oldest first, as text."""
        out = []
        for m in self.body.get("messages", []):
            if m.get("role") == "tool":
                out.append(_text(m.get("content")))
            elif isinstance(m.get("content"), list):
                for part in m["content"]:
                    if isinstance(part, dict) and part.get("type") == "tool_result":
                        out.append(_text(part.get("content")))
        return out

    def last_user_text(self) -> str:
        for m in reversed(self.body.get("messages", [])):
            if m.get("role") == "user":
                return _text(m.get("content"))
        return ""

    def calls_made(self, name: str) -> int:
        """How many calls of tool ``name`` the conversation sent holds (chat API)."""
        return sum(1 for m in self.body.get("messages", []) if m.get("role") == "assistant"
                   for tc in m.get("tool_calls") or [] if tc.get("function", {}).get("name") == name)

    def tool_names(self) -> list[str]:
        names = []
        for t in self.body.get("tools", []) or []:
            names.append(t["function"]["name"] if "function" in t else t.get("name"))
        return names


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else json.dumps(content)


Script = Callable[[Call], Reply]


def scripted(*replies: Reply) -> Script:
    """Replies in order, then the last one again."""
    def script(c: Call) -> Reply:
        return replies[min(c.n, len(replies)) - 1]
    return script


class ProviderServer:
    """``with ProviderServer(script) as srv: ... srv.base_url ... srv.count``"""

    def __init__(self, script: Script):
        self.script = script
        self.log: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop_waiting = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:   # quiet
                pass

            def do_POST(self) -> None:
                n_bytes = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n_bytes)
                path = self.path.split("?")[0]
                api = "chat" if path.endswith("/chat/completions") else "messages" if path.endswith("/messages") \
                    else None
                if api is None:
                    return self._send(404, {"error": {"message": f"no route {path}"}})
                try:
                    body = json.loads(raw)
                except ValueError:
                    return self._send(400, {"error": {"message": "body is not JSON"}})
                with outer._lock:
                    c = Call(len(outer.log) + 1, api, body)
                    reply = outer.script(c)
                    outer.log.append({"n": c.n, "api": api, "status": reply.status, "model": c.model,
                                      "body": body, "reply": reply,
                                      "usage": (input_tokens(c, reply), reply.output_tokens)})
                if reply.delay_s:
                    outer._stop_waiting.wait(reply.delay_s)
                if body.get("stream"):
                    return self._send(400, {"error": {"message": "this test server does not stream"}})
                if reply.status != 200:
                    headers = {"retry-after": reply.retry_after} if reply.retry_after is not None else {}
                    kind = "rate_limit_error" if reply.status == 429 else "api_error"
                    payload = ({"type": "error", "error": {"type": kind, "message": "scripted error"}}
                               if api == "messages" else {"error": {"message": "scripted error", "type": kind}})
                    return self._send(reply.status, payload, headers)
                self._send(200, chat_body(c, reply) if api == "chat" else messages_body(c, reply))

            def _send(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
                data = _dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):   # the client gave up (a timeout)
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="provider-server", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    def async_openai(self) -> Any:
        """An ``openai.AsyncOpenAI`` client of this server (the frameworks' clients), without SDK retries."""
        from openai import AsyncOpenAI
        return AsyncOpenAI(base_url=self.openai_base_url, api_key="test", max_retries=0)

    @property
    def count(self) -> int:
        """Requests served (answered or failed) so far."""
        with self._lock:
            return len(self.log)

    def tokens(self) -> int:
        """Input + output tokens of the answered requests, as reported."""
        with self._lock:
            return sum(sum(r["usage"]) for r in self.log if r["status"] == 200)

    @property
    def ok_count(self) -> int:
        with self._lock:
            return sum(1 for r in self.log if r["status"] == 200)

    def __enter__(self) -> ProviderServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop_waiting.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _dumps(payload: dict) -> str:
    """JSON text of an answer, with each ``RawJSON`` value put in verbatim."""
    raws: list[str] = []

    def mark(v: Any) -> Any:
        if isinstance(v, RawJSON):
            raws.append(str(v))
            return f"\u0000raw{len(raws) - 1}\u0000"
        if isinstance(v, dict):
            return {k: mark(x) for k, x in v.items()}
        if isinstance(v, list):
            return [mark(x) for x in v]
        return v
    text = json.dumps(mark(payload))
    for i, raw in enumerate(raws):
        text = text.replace(json.dumps(f"\u0000raw{i}\u0000"), raw, 1)
    return text


def input_tokens(c: Call, r: Reply) -> int:
    """The reported prompt size: scripted, or the request's messages, system text and tools at 4 characters a token."""
    if r.input_tokens is not None:
        return r.input_tokens
    size = sum(len(json.dumps(c.body.get(k), separators=(",", ":"))) for k in ("messages", "system", "tools")
               if c.body.get(k) is not None)
    return (size + 3) // 4


def chat_body(c: Call, r: Reply) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": r.text}
    if r.refusal is not None:
        msg["refusal"] = r.refusal
    if r.tool_calls:
        msg["tool_calls"] = [{"id": f"call_{c.n}_{i}", "type": "function",
                              "function": {"name": name, "arguments": args if isinstance(args, str)
                                           else json.dumps(args)}}
                             for i, (name, args) in enumerate(r.tool_calls)]
    tin = input_tokens(c, r)
    usage: dict[str, Any] = {"prompt_tokens": tin, "completion_tokens": r.output_tokens,
                             "total_tokens": tin + r.output_tokens}
    if r.cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": r.cached_tokens}
    if r.reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": r.reasoning_tokens}
    return {"id": f"chatcmpl-{c.n}", "object": "chat.completion", "created": int(time.time()),
            "model": r.model or c.model,
            "choices": [{"index": 0, "message": msg,
                         "finish_reason": r.finish_reason or ("tool_calls" if r.tool_calls else "stop")}],
            "usage": usage}


def messages_body(c: Call, r: Reply) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if r.text:
        content.append({"type": "text", "text": r.text})
    for i, (name, args) in enumerate(r.tool_calls):
        # a raw string stands for a malformed call: the input is then not an object
        content.append({"type": "tool_use", "id": f"toolu_{c.n}_{i}", "name": name, "input": args})
    cached = (r.cached_tokens or 0) + (r.cache_creation_tokens or 0)
    usage: dict[str, Any] = {"input_tokens": max(0, input_tokens(c, r) - cached), "output_tokens": r.output_tokens,
                             "cache_read_input_tokens": r.cached_tokens or 0,
                             "cache_creation_input_tokens": r.cache_creation_tokens or 0}
    return {"id": f"msg_{c.n}", "type": "message", "role": "assistant", "model": r.model or c.model,
            "content": content, "stop_reason": r.finish_reason or ("tool_use" if r.tool_calls else "end_turn"),
            "stop_sequence": None, "usage": usage}


# -- the seed's scenarios (seed 000) as provider scripts, for the framework guards -----------------------------

@dataclass
class Outcome:
    """What a framework run under a guard left: its stop (a ``BudgetExceeded``, or None), its output, and what the
    server saw (requests served, tokens reported, its log); ``desk``: the tools' backend."""
    stop: Any
    output: Any
    served: int
    tokens: int
    desk: Any
    log: list[dict[str, Any]]


def outcome(srv: ProviderServer, desk: Any, run: Callable[[], Any]) -> Outcome:
    """Runs ``run`` (a framework run against ``srv``) and collects its ``Outcome``; a guard's stop is caught."""
    from agentobs.errors import BudgetExceeded

    stop, output = None, None
    try:
        output = run()
    except BudgetExceeded as exc:
        stop = exc
    return Outcome(stop, output, srv.count, srv.tokens(), desk, list(srv.log))


def desk_tools(desk: Any) -> list[Callable[..., dict]]:
    """The support desk's tools as typed functions (what a framework agent registers)."""
    from agentobs import ToolInvocation

    def invoke(name: str, **args: Any) -> dict:
        return desk.invoke(ToolInvocation(name=name, args=args, user_id="cu_ana", key=f"t1:{name}",
                                          timeout_s=30.0)).result

    def get_order(order_id: str) -> dict:
        """Read an order: status, total and refunded cents."""
        return invoke("get_order", order_id=order_id)

    def issue_refund(order_id: str, amount_cents: int, reason: str = "") -> dict:
        """Refund cents on an order."""
        return invoke("issue_refund", order_id=order_id, amount_cents=amount_cents, reason=reason)

    def send_status_email(order_id: str) -> dict:
        """E-mail the customer the order status."""
        return invoke("send_status_email", order_id=order_id)

    def search_policy(order_id: str = "", q: str = "") -> dict:
        """Search the store's policy texts."""
        return invoke("search_policy", order_id=order_id, q=q)

    return [get_order, issue_refund, send_status_email, search_policy]


def normal(delay_s: float = 0.0) -> Script:
    """A: read the order, refund, e-mail, then answer."""
    def script(c: Call) -> Reply:
        done = len(c.tool_results())
        plan = [call("get_order", order_id="ord_1001"),
                call("issue_refund", order_id="ord_1001", amount_cents=3000, reason="damaged"),
                call("send_status_email", order_id="ord_1001")]
        if done < len(plan):
            return Reply(tool_calls=[plan[done]], delay_s=delay_s)
        return Reply(text="Refund issued and confirmation sent.", delay_s=delay_s)
    return script


def same_call(c: Call) -> Reply:
    """B: the same failing read, again and again."""
    return Reply(tool_calls=[call("get_order", order_id="ord_9999")])


def new_ids(c: Call) -> Reply:
    """C: a different order id every step, each not found."""
    return Reply(tool_calls=[call("get_order", order_id=f"ord_{9000 + c.n}")])


def search_loop(c: Call) -> Reply:
    """D: a tool with large results, called with a new query every step."""
    return Reply(tool_calls=[call("search_policy", order_id="x", q=f"returns policy {c.n}")])


# -- nested agents: a parent agent and the agent it runs (as a tool, by delegation, or by a handoff) -----------------

def delegation(parent_tool: str, *, rounds: int = 3, sub_rounds: int = 4, arg: str = "input",
               same_query: bool = False, parallel: int = 1) -> Script:
    """The parent calls ``parent_tool`` (which runs the sub-agent) ``rounds`` times, ``parallel`` calls per reply,
    then answers; the sub-agent searches the policy texts ``sub_rounds`` times (a new query each time, or the same
    one), then answers. A request is the parent's when it offers ``parent_tool``."""
    def script(c: Call) -> Reply:
        if parent_tool in c.tool_names():
            done = c.calls_made(parent_tool)
            if done < rounds:
                return Reply(tool_calls=[call(parent_tool, **{arg: f"question {done + i + 1}"})
                                         for i in range(min(parallel, rounds - done))])
            return Reply(text="The expert's answers are in.")
        done = c.calls_made("search_policy")
        if done < sub_rounds:
            return Reply(tool_calls=[call("search_policy", order_id="x",
                                          q="returns policy" if same_query else f"returns policy {c.n}")])
        return Reply(text="Refunds within 30 days.")
    return script


def handoff_then_search(target: str, *, sub_rounds: int = 6) -> Script:
    """The first agent hands off to ``target`` (its handoff tool ``transfer_to_<target>``), which searches the
    policy texts ``sub_rounds`` times with a new query each time, then answers."""
    def script(c: Call) -> Reply:
        if f"transfer_to_{target}" in c.tool_names():
            return Reply(tool_calls=[call(f"transfer_to_{target}")])
        if c.calls_made("search_policy") < sub_rounds:
            return Reply(tool_calls=[call("search_policy", order_id="x", q=f"returns policy {c.n}")])
        return Reply(text="Refunds within 30 days.")
    return script
