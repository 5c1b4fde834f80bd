"""What a dialect is, declared as data: which evidence on a span means which role, and where it keeps each value.

A dialect is a table, not a code path. ``marker`` names the attribute whose value says what a span is (``roles``
maps its lower-cased values to roles; a value not in the map marks the span as the dialect's own without a role
the analysis counts). ``rules`` claim or re-classify spans by other evidence (a span name, a second attribute),
each a set of conditions that must all hold. ``text`` and ``numbers`` name, per normalized field, the places the
dialect keeps it (first present wins): an attribute key, or the span's name (``SpanName``); ``usage_json`` reads
numbers inside a JSON text attribute; ``error`` lists what marks a span failed besides an ERROR status;
``session`` the keys of a conversation or session id. ``dialects/_evaluate.py`` evaluates a table over a span
frame; nothing else about a dialect is code.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

# what a span is, once classified (int8 codes in ``Normalized.kind``; names in the spans frame's ``_kind``)
OTHER, AGENT, STEP, CHAT, TOOL, CHAIN, RETRIEVAL, TRANSPORT, HANDOFF, ANSWER = range(10)
KIND_NAMES = np.array(["other", "agent", "step", "chat", "tool", "chain", "retrieval", "transport", "handoff",
                       "answer"], dtype=object)
ROLE_CODES = {str(name): code for code, name in enumerate(KIND_NAMES)}
# orchestration: what a run is made of (an agent invocation, a framework's chain or workflow)
ORCHESTRATION = (AGENT, CHAIN)
# the calls a run is counted in (one logical call per chain of nested spans of the same role: ``analysis.calls``)
CALLS = (CHAT, TOOL)

# the normalized values every dialect may fill: text (Arrow string arrays), numbers (float64, NaN unknown)
TEXT_FIELDS = ("agent", "model", "provider", "tool", "args", "error_type", "finish")
NUMBER_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens",
                 "reasoning_tokens", "cost")

NAME = "@name"          # in a condition: the span's name rather than an attribute


@dataclass(frozen=True, kw_only=True)
class When:
    """One condition on a span's attribute (or its name, ``NAME``). Text is compared lower-cased, trimmed of
    white space and of the quotes MLflow writes around values. With no test given, the value must be present."""
    key: str
    equals: tuple[str, ...] = ()
    prefix: tuple[str, ...] = ()
    contains: tuple[str, ...] = ()
    present: bool = True                 # False: the key has no value on the span (the other tests unused)

    def describe(self) -> str:
        what = self.key if self.key != NAME else "span name"
        if not self.present:
            return f"no {what}"
        if self.equals:
            return f"{what} = {' | '.join(self.equals)}"
        if self.prefix:
            return f"{what} starts with {' | '.join(repr(p) for p in self.prefix)}"
        if self.contains:
            return f"{what} contains {' | '.join(repr(c) for c in self.contains)}"
        return f"{what} present"


@dataclass(frozen=True, kw_only=True)
class Rule:
    """Spans where every condition holds get ``role``. A rule with ``of_role`` re-classifies spans the dialect's
    marker (or an earlier rule) gave that role (an override); without it, it claims spans not yet claimed."""
    role: int
    when: tuple[When, ...]
    of_role: int | None = None

    def describe(self) -> str:
        cond = " and ".join(w.describe() for w in self.when)
        if self.of_role is None:
            return f"{cond} → {KIND_NAMES[self.role]}"
        return f"{KIND_NAMES[self.of_role]} with {cond} → {KIND_NAMES[self.role]}"


@dataclass(frozen=True, kw_only=True)
class SpanName:
    """A text field read from the span's name: on spans of the given roles only (all when empty), the part after
    ``after`` when the name starts with it (the whole name when ``after`` is empty); with ``strip``, only a name that
    ends with one of them, less it (a framework's method suffix: ``translator.run``)."""
    roles: tuple[int, ...] = ()
    after: str = ""
    strip: tuple[str, ...] = ()

    def describe(self) -> str:
        on = f" of {'/'.join(KIND_NAMES[r] for r in self.roles)} spans" if self.roles else ""
        cut = f" less {' / '.join(repr(s) for s in self.strip)}" if self.strip else ""
        return f"span name{on}" + (f" after {self.after!r}" if self.after else "") + cut


@dataclass(frozen=True, kw_only=True)
class Limit:
    """A framework's own limit, recognized in the error that ended a run (an exception event's type or message, an
    ``error.type``, an ERROR status message): any of ``texts``, case aside, means the run stopped at ``stop`` (one
    of the closed stop reasons)."""
    stop: str
    texts: tuple[str, ...]


# what the agent loops every instrumentation wraps say when their turn limit stops them (the OpenAI Agents SDK's
# MaxTurnsExceeded, LangChain's AgentExecutor and LlamaIndex's iteration limits, ...)
LOOP_LIMITS = (Limit(stop="max_steps", texts=("MaxTurnsExceeded", "max turns", "max_iterations", "max iterations",
                                              "iteration limit", "max steps")),)

# the names of tools whose call is a run's final answer (a framework that answers through a tool): a run that
# ends with one of them was not cut off while the model still asked for tools
FINAL_ANSWER_TOOLS = ("final_answer", "final_result", "finalanswer", "submit_final_answer", "finish")
# what the error that ended a run says when a tool's exception ended it (a tool error the framework re-raised)
TOOL_FAILURES = ("ToolInvocationError", "ToolException", "ToolExecutionError", "ToolCallError", "ToolError",
                 "failed to invoke tool")

# what the error that ended a run says when the model provider failed it after the client's retries and the failed
# model call left no span of its own (an instrumentation that never ends a failed call's span): the model clients'
# error classes (OpenAI's and Anthropic's SDKs, LiteLLM, the Vercel AI SDK), besides an HTTP 5xx or 429 status that
# opens the message or follows "status code" / "error code" (``derive/_outcomes.py``)
PROVIDER_FAILURES = ("InternalServerError", "ServiceUnavailableError", "RateLimitError", "APIConnectionError",
                     "APITimeoutError", "OverloadedError", "AI_APICallError", "AI_RetryError")

# the names of tools whose call hands the run over to another agent (a handoff, not a tool call): the exact names,
# then the prefixes followed by the target agent's name (the OpenAI Agents SDK's transfer_to_<agent>)
HANDOFF_TOOLS = ("handoff", "handoff_to_agent", "transfer_to_agent")
HANDOFF_TOOL_PREFIXES = ("transfer_to_", "handoff_to_")
# a transfer to people is an escalation, a tool like the others (tau2's transfer_to_human_agents): no agent takes over
NOT_HANDOFF_PREFIXES = ("transfer_to_human", "handoff_to_human")

Source = str | SpanName
UsagePaths = Mapping[str, Mapping[str, Iterable[tuple[str, ...]]]]


@dataclass(frozen=True, kw_only=True)
class Dialect:
    """One span dialect, declared (see the module docstring)."""
    name: str
    marker: str | None = None
    roles: Mapping[str, int] = field(default_factory=dict)
    rules: tuple[Rule, ...] = ()
    text: Mapping[str, tuple[Source, ...]] = field(default_factory=dict)
    numbers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    usage_json: UsagePaths = field(default_factory=dict)
    error: tuple[When, ...] = ()
    session: tuple[str, ...] = ()
    quoted: bool = False                 # text values are JSON-quoted ("AGENT"): the quotes are trimmed
    limits: tuple[Limit, ...] = ()        # the framework limits its instrumented frameworks raise
    offered: tuple[str, ...] = ()         # attribute keys (or key prefixes) of the tools offered to a model call
    asks: tuple[str, ...] = ()            # attribute keys of a tool call in a model call's answer (it asked for one)
    where: str = ""                      # where the dialect is defined (a specification or a source file)

    @property
    def keys(self) -> set[str]:
        """The span columns this dialect reads."""
        cols = {"name", *self.usage_json, *self.session}
        for sources in self.text.values():
            cols.update(s for s in sources if isinstance(s, str))
        for keys in self.numbers.values():
            cols.update(keys)
        for w in (*self.error, *(w for r in self.rules for w in r.when)):
            if w.key != NAME:
                cols.add(w.key)
        if self.marker:
            cols.add(self.marker)
        return cols
