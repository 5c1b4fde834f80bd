"""What the provider adapters share: the protocol the model is told, tool schemas, reply and usage conversion,
and the treatment of provider errors (timeouts, Retry-After).

The kernel shows the model a JSON view of the task state and expects one proposal back: a plan, a tool
call or a final answer. On a provider API all three are tool calls: the task's tools (each with an
optional ``plan_step`` argument naming the plan step it carries out), ``agentobs_plan`` and
``agentobs_final``. A plain text answer is taken as the final answer (or, when it is a JSON object with a
``type``, as the proposal it spells).

Errors: a timeout of the SDK becomes ``TimeoutError`` (the kernel stops with ``deadline``: the call was
given the time left); a provider's ``Retry-After`` is waited inside the call, so the wait is charged to the
run's active time, unless it reaches past the time left (then ``TimeoutError``), and the error then goes
to the kernel like any other (its backoff follows the wait); every other provider error goes to the kernel
unchanged, which retries it under the run's one ``RetryPolicy``
(``Budget.retry_policy()``: ``max_attempts`` tries, ``backoff_s`` doubling) and stops with ``model_error``.
The adapters have no backoff of their own and the SDKs' retries are switched off (``max_retries=0``): the
kernel's policy is the only one.

An answer that came back but cannot be read as a reply is no provider failure: the call was paid for. Tool
arguments that are not a JSON object Python can read (invalid JSON, nested past Python's recursion limit, a number
past its digit limit), an answer without a choice or content, and a body the SDK cannot parse (nested or numbered
past the same limits) become a ``ModelResponse`` with ``reply=None``, ``malformed`` saying why and the usage the
provider reported (read from the body's ``usage`` member alone when the rest is unreadable): the kernel charges it
and shows the model a ``malformed_reply``.

Usage: a provider's usage block becomes the contract's ``TokenUsage`` and then the kernel's ``ModelResponse``
(input and output charged; the cache and reasoning parts passed on to ``ModelReturned.usage``).
"""
from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

from ..contract import reported
from ..contract.events import TokenUsage
from ..contract.vocabulary import OUTCOMES
from ..errors import ConfigError, ProposalError
from ..kernel import ModelResponse, ToolSpec

PLAN_TOOL, FINAL_TOOL = "agentobs_plan", "agentobs_final"
MAX_RETRY_AFTER_S = 60.0          # the longest Retry-After wait honoured inside one call

SYSTEM_PROMPT = (
    "You work inside a bounded agent runtime. Each turn you are shown the task state as JSON: the goal, the "
    "plan with the status of each step, the facts learned so far, the last tool result and the budget that "
    "remains. Answer with exactly one tool call:\n"
    f"- {PLAN_TOOL}: propose the plan (a list of steps, each with an id, the tool it uses and the ids of the "
    "steps it depends on) when there is none yet, or when the last result asks for a replan;\n"
    "- one of the task's tools, with plan_step set to the id of the plan step it carries out;\n"
    f"- {FINAL_TOOL}: finish, with outcome completed, cannot_complete or escalated and a short text for the "
    "user. Finish as completed only when every plan step is done."
)

_ANY_OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolSchema:
    """A tool as a provider sees it: name, description and JSON schema of the arguments."""
    name: str
    description: str
    parameters: dict[str, Any]


def reported_usage(input_tokens: Any, output_tokens: Any, *, cache_read: Any = None, cache_creation: Any = None,
                   reasoning: Any = None) -> TokenUsage | None:
    """A provider's usage block as the contract's ``TokenUsage`` (``input_tokens`` the whole prompt, cached parts
    included), or None when the provider reported no input or output count (the kernel then estimates both).
    A count that is not a non-negative integer is taken as not reported."""
    tin, tout = count(input_tokens), count(output_tokens)
    if tin is None or tout is None:
        return None
    return TokenUsage(input_tokens=tin, output_tokens=tout, source="reported",
                      cache_read_input_tokens=count(cache_read), cache_creation_input_tokens=count(cache_creation),
                      reasoning_output_tokens=count(reasoning))


def count(x: Any) -> int | None:
    """A token count as reported, or None when it is missing or not a count (``agentobs.contract.reported``)."""
    return reported.count(x)


def field(obj: Any, name: str) -> Any:
    """A member of a provider's usage block: an SDK object's attribute, or a key of the raw JSON object."""
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def response(reply: Any, *, latency: float, usage: TokenUsage | None, finish_reason: str | None,
             model: str | None, malformed: str | None = None) -> ModelResponse:
    """The kernel's response (the one place that builds it), with the provider's usage: the kernel charges input
    and output and passes the cache and reasoning parts on (``ModelReturned.usage``). The measured latency is
    declared, so a simulated clock advances by it too; without a usage block the kernel estimates the tokens.
    ``malformed``: why the answer holds no reply (``reply`` is then None)."""
    finish = finish_reason if isinstance(finish_reason, str) else None
    served = model if isinstance(model, str) else None
    if usage is None:
        return ModelResponse(reply=reply, latency_s=latency, finish_reason=finish, response_model=served,
                             malformed=malformed)
    return ModelResponse(reply=reply, latency_s=latency, input_tokens=usage.input_tokens,
                         output_tokens=usage.output_tokens, cache_read_input_tokens=usage.cache_read_input_tokens,
                         cache_creation_input_tokens=usage.cache_creation_input_tokens,
                         reasoning_output_tokens=usage.reasoning_output_tokens, finish_reason=finish,
                         response_model=served, malformed=malformed)


def unreadable_body(body: bytes, exc: BaseException) -> tuple[str, Any]:
    """An answer whose body the SDK could not parse: (why, in words; the body's ``usage`` member, or None)."""
    why = ("nested deeper than Python's JSON reader goes" if isinstance(exc, RecursionError)
           else f"not readable as JSON ({_short(exc)})")
    try:
        text = body.decode("utf-8", errors="replace")
    except Exception:         # (bytes always decode with errors="replace"; anything else is no body)
        return f"the provider's answer is {why}", None
    return f"the provider's answer is {why}", top_level_member(text, "usage")


def _short(exc: BaseException) -> str:
    text = str(exc).split(";")[0]
    return text[:120]


_scanstring: Any = json.decoder.scanstring      # type: ignore[attr-defined]  # json's own string scanner
_STRUCTURE = re.compile(r'["{}\[\],:]')


def top_level_member(text: str, key: str) -> Any:
    """The value of member ``key`` of the JSON object ``text``, read without parsing its other members (which may be
    nested past Python's recursion limit or hold numbers past its digit limit): the text is walked once, strings
    skipped whole by ``json``'s own string scanner, and only that member's text is parsed. None when the member is
    missing or unreadable itself."""
    depth, at, name, start = 0, 0, None, -1
    expect_name = False
    while (m := _STRUCTURE.search(text, at)) is not None:
        ch, pos = m.group(), m.start()
        if ch == '"':
            try:
                value, at = _scanstring(text, pos + 1)
            except ValueError:
                return None
            if depth == 1 and expect_name:
                name, expect_name = value, False
            continue
        at = pos + 1
        if ch in "{[":
            depth += 1
            if depth == 1:
                if ch != "{":
                    return None
                expect_name = True
        elif ch in "}]" or (ch == "," and depth == 1):
            if depth == 1 and start >= 0:
                return _parsed(text[start:pos])
            if ch == ",":
                expect_name = True
            else:
                depth -= 1
                if depth <= 0:
                    return None
        elif ch == ":" and depth == 1 and name == key:
            start = at
    return None


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def overhead_tokens(*parts: Any) -> int:
    """Tokens a request sends besides the view (system prompt, tool schemas), at the kernel's 4 characters a
    token: the kernel adds them to its estimate of the next input (``request_overhead_tokens``)."""
    chars = sum(len(p) if isinstance(p, str) else len(json.dumps(p, separators=(",", ":"))) for p in parts)
    return (chars + 3) // 4


def tool_schemas(tools: Sequence[ToolSpec], schemas: Mapping[str, Mapping[str, Any]] | None = None
                 ) -> list[ToolSchema]:
    """The task's tools (with ``plan_step``) followed by the plan and final pseudo-tools."""
    schemas = dict(schemas or {})
    unknown = sorted(set(schemas) - {t.name for t in tools})
    if unknown:
        raise ConfigError(f"schemas given for tools that are not in tools=: {', '.join(unknown)}")
    out = []
    for t in tools:
        if t.name in (PLAN_TOOL, FINAL_TOOL):
            raise ConfigError(f"tool name {t.name!r} is reserved for the kernel's protocol")
        params = json.loads(json.dumps(schemas.get(t.name, _ANY_OBJECT)))   # a deep copy we may extend
        if params.get("type") != "object":
            raise ConfigError(f"the schema of tool {t.name!r} must be a JSON schema of type 'object'")
        props = params.setdefault("properties", {})
        props.setdefault("plan_step", {"type": "string", "description": "id of the plan step this call carries out"})
        out.append(ToolSchema(name=t.name, description=t.description or t.name, parameters=params))
    out.append(ToolSchema(name=PLAN_TOOL, description="Propose the plan: the steps and their dependencies.",
                          parameters={"type": "object", "required": ["steps"], "properties": {"steps": {
                              "type": "array", "items": {"type": "object", "required": ["id", "tool"], "properties": {
                                  "id": {"type": "string"}, "tool": {"type": "string"},
                                  "depends_on": {"type": "array", "items": {"type": "string"}}}}}}}))
    out.append(ToolSchema(name=FINAL_TOOL, description="Finish the task with an outcome and a text for the user.",
                          parameters={"type": "object", "required": ["outcome", "text"], "properties": {
                              "outcome": {"type": "string", "enum": list(OUTCOMES)}, "text": {"type": "string"}}}))
    return out


def arguments(raw: Any, tool: str) -> dict[str, Any]:
    """A tool call's arguments as an object; anything else is a malformed call (``ProposalError``: the adapter
    returns it as a malformed reply, with the call's usage)."""
    name = tool if isinstance(tool, str) else "the tool"
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            raise ProposalError("malformed_tool_call", f"the arguments of {name!r:.80} are not valid JSON") from None
        except RecursionError:
            raise ProposalError("malformed_tool_call", f"the arguments of {name!r:.80} are nested deeper than "
                                "Python's JSON reader goes") from None
        except ValueError as exc:                 # a number past Python's digit limit
            raise ProposalError("malformed_tool_call", f"the arguments of {name!r:.80} cannot be read: "
                                f"{_short(exc)}") from None
    if not isinstance(raw, dict):
        raise ProposalError("malformed_tool_call", f"the arguments of {name!r:.80} are not a JSON object")
    return raw


def tool_reply(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A provider tool call as the kernel's proposal."""
    if name == PLAN_TOOL:
        return {"type": "plan", "steps": args.get("steps")}
    if name == FINAL_TOOL:
        return {"type": "final", "outcome": args.get("outcome", "completed"), "text": args.get("text", "")}
    args = dict(args)
    step = args.pop("plan_step", None)
    return {"type": "tool", "name": name, "args": args, "plan_step": step}


def text_reply(text: str) -> dict[str, Any] | str:
    """A text answer: the proposal it spells as JSON, or else the final answer; no text at all is no answer (the
    empty string, which the kernel shows the model as a malformed reply)."""
    stripped = text.strip()
    if not stripped:
        return ""
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and "type" in obj:
            return obj
    return {"type": "final", "outcome": "completed", "text": text}


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds from a provider error's ``retry-after-ms`` or ``Retry-After`` header (seconds or an HTTP date)."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            v = float(ms) / 1000
            return v if math.isfinite(v) and v >= 0 else None
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if ra is None:
        return None
    try:
        v = float(ra)
    except ValueError:
        try:
            v = parsedate_to_datetime(ra).timestamp() - time.time()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return max(0.0, v) if math.isfinite(v) else None


def failure(exc: BaseException, *, timeout_errors: tuple[type[BaseException], ...], timeout_s: float
            ) -> tuple[BaseException, float]:
    """What a failed provider call becomes: (the exception to raise, seconds to wait before raising it)."""
    if isinstance(exc, timeout_errors):
        return TimeoutError(f"the provider did not answer within the {timeout_s:.3g} s left"), 0.0
    wait = retry_after_s(exc)
    if wait is None:
        return exc, 0.0
    if wait >= timeout_s:
        return TimeoutError(f"the provider asked to retry after {wait:.3g} s, past the {timeout_s:.3g} s left"), 0.0
    return exc, min(wait, MAX_RETRY_AFTER_S)


def check_timeout(timeout_s: float) -> float:
    if not (isinstance(timeout_s, (int, float)) and math.isfinite(timeout_s)):
        raise ConfigError(f"timeout must be a finite number of seconds, got {timeout_s!r}")
    return max(float(timeout_s), 0.001)
