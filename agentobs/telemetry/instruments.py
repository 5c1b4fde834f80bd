"""The metric instruments of the contract, and the attribute sets the observer shares between runs.

Metric attribute sets, chat span names and start attributes and tool span names are made once per agent, model and
tool and shared by every run of every observer (the SDK copies what it keeps, and nothing here is changed after it
is made). Each cache is bounded: past ``_ATTRS_KEPT`` entries it starts again.
"""
from __future__ import annotations

from typing import Any

from opentelemetry.metrics import Meter

from ..contract import semconv as sc

# (attribute on Instruments, metric name, unit, description, advisory buckets) of every histogram we record
_HISTOGRAMS = (
    ("token_usage", sc.M_TOKEN_USAGE, "{token}", "Tokens used per model call", sc.TOKEN_BUCKETS),
    ("op_duration", sc.M_OPERATION_DURATION, "s", "Model call duration", sc.DURATION_BUCKETS),
    ("agent_duration", sc.M_AGENT_DURATION, "s", "Agent run duration (active time)", sc.AGENT_DURATION_BUCKETS),
    ("inference_calls", sc.M_AGENT_INFERENCE_CALLS, "{inference_call}", "Model calls per agent run",
     sc.CALLS_BUCKETS),
    ("tool_calls", sc.M_AGENT_TOOL_CALLS, "{tool_call}", "Tool calls per agent run", sc.CALLS_BUCKETS),
    ("tool_duration", sc.M_TOOL_DURATION, "s", "Tool call duration", sc.DURATION_BUCKETS),
    ("run_tokens", sc.M_RUN_TOKENS, "{token}", "Tokens per agent run", sc.TOKEN_BUCKETS),
    ("run_cost", sc.M_RUN_COST, "{USD}", "Dollars per agent run", sc.COST_BUCKETS),
    ("utilisation", sc.M_BUDGET_UTILISATION, "1", "Share of each budget limit a run consumed",
     sc.UTILISATION_BUCKETS),
)


_ATTRS_KEPT = 1024


class AgentAttrs:
    """The per-run metric attribute sets of one agent name, made once and shared by its runs (never changed)."""
    __slots__ = ("agent", "by_limit", "by_stop", "by_tool", "name")

    def __init__(self, agent: str):
        self.name = agent
        self.agent: dict[str, Any] = {sc.AGENT_NAME: agent}
        self.by_tool: dict[tuple[str, str | None], dict[str, Any]] = {}
        self.by_stop: dict[str, dict[str, Any]] = {}
        self.by_limit = {limit: {sc.AGENT_NAME: agent, sc.BUDGET_LIMIT_ATTR: limit} for limit in _UTILISATION}

    def stop(self, stop: str) -> dict[str, Any]:
        attrs = self.by_stop.get(stop)
        if attrs is None:
            attrs = self.by_stop[stop] = {**self.agent, sc.STOP_REASON: stop}
        return attrs

    def tool(self, name: str, error: str | None) -> dict[str, Any]:
        """Of a tool's calls (``error``: the status of a failed one)."""
        key = (name, error)
        attrs = self.by_tool.get(key)
        if attrs is None:
            if len(self.by_tool) >= _ATTRS_KEPT:
                self.by_tool.clear()
            attrs = {sc.TOOL_NAME: name, sc.AGENT_NAME: self.name}
            if error is not None:
                attrs[sc.ERROR_TYPE] = error
            self.by_tool[key] = attrs
        return attrs


_UTILISATION = ("max_steps", "max_tool_calls", "max_tokens", "deadline_s", "max_usd")
_AGENTS: dict[str, AgentAttrs] = {}
_MODELS: dict[tuple[str, str], ModelAttrs] = {}
_TOOL_SPANS: dict[str, str] = {}                     # tool label -> span name


def agent_attrs(agent: str) -> AgentAttrs:
    a = _AGENTS.get(agent)
    if a is None:
        if len(_AGENTS) >= _ATTRS_KEPT:
            _AGENTS.clear()
        a = _AGENTS[agent] = AgentAttrs(agent)
    return a


class ModelAttrs:
    """What the chat spans and metrics of one model have in common, made once and shared (never changed): the span
    name, the attributes a chat span starts with (by max output tokens), the metric attribute sets of its calls,
    input tokens and output tokens."""
    __slots__ = ("m_chat", "m_in", "m_out", "model", "name", "provider", "starts")

    def __init__(self, provider: str, model: str):
        self.provider, self.model, self.name = provider, model, f"{sc.OP_CHAT} {model}"
        self.m_chat = {sc.OPERATION_NAME: sc.OP_CHAT, sc.PROVIDER_NAME: provider, sc.REQUEST_MODEL: model}
        self.m_in = {**self.m_chat, sc.TOKEN_TYPE: sc.TOKEN_TYPE_INPUT}
        self.m_out = {**self.m_chat, sc.TOKEN_TYPE: sc.TOKEN_TYPE_OUTPUT}
        self.starts: dict[int, dict[str, Any]] = {}

    def start(self, max_tokens: int) -> dict[str, Any]:
        attrs = self.starts.get(max_tokens)
        if attrs is None:
            if len(self.starts) >= _ATTRS_KEPT:
                self.starts.clear()
            attrs = self.starts[max_tokens] = {**self.m_chat, sc.REQUEST_MAX_TOKENS: max_tokens}
        return attrs


def model_attrs(provider: str, model: str) -> ModelAttrs:
    key = (provider, model)
    m = _MODELS.get(key)
    if m is None:
        if len(_MODELS) >= _ATTRS_KEPT:
            _MODELS.clear()
        m = _MODELS[key] = ModelAttrs(provider, model)
    return m


class Instruments:
    """The metric instruments of the contract, created once per meter."""

    token_usage: Any
    op_duration: Any
    agent_duration: Any
    inference_calls: Any
    tool_calls: Any
    tool_duration: Any
    run_tokens: Any
    run_cost: Any
    utilisation: Any

    def __init__(self, meter: Meter):
        for attr, name, unit, description, buckets in _HISTOGRAMS:
            setattr(self, attr, meter.create_histogram(name, unit, description,
                                                       explicit_bucket_boundaries_advisory=buckets))
        self.runs = meter.create_counter(sc.M_RUNS, "{run}", "Agent runs by stop reason")


def tool_span_name(name: str) -> str:
    """``execute_tool {name}``, made once per tool label."""
    span_name = _TOOL_SPANS.get(name)
    if span_name is None:
        if len(_TOOL_SPANS) >= _ATTRS_KEPT:
            _TOOL_SPANS.clear()
        span_name = _TOOL_SPANS[name] = f"{sc.OP_EXECUTE_TOOL} {name}"
    return span_name


__all__ = ["AgentAttrs", "Instruments", "ModelAttrs", "agent_attrs", "model_attrs", "tool_span_name"]
