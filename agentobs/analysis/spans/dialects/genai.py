"""OpenTelemetry GenAI semantic conventions: the current names, the names before 1.37, Pydantic AI / Logfire.

``gen_ai.operation.name`` says what a span is. Older instrumentations write ``gen_ai.system`` for the provider
and ``gen_ai.usage.prompt_tokens`` / ``completion_tokens``; Pydantic AI adds ``gen_ai.usage.details.*`` and, in
instrumentation versions 1-2, ``agent_name`` and ``tool_arguments``. Spans with no marker at all are read by
their names (``NAMES``: ``invoke_agent ...``, ``chat ...``, ``execute_tool ...``, Logfire's ``agent run`` and
``running tool``).
"""
from __future__ import annotations

from ._table import AGENT, CHAIN, CHAT, NAME, OTHER, RETRIEVAL, TOOL, Dialect, Limit, Rule, Source, SpanName, When

TEXT: dict[str, tuple[Source, ...]] = {
    "agent": ("gen_ai.agent.name", "agent_name", SpanName(roles=(AGENT,), after="invoke_agent "), "gen_ai.agent.id"),
    "model": ("gen_ai.request.model", "gen_ai.response.model", "model_name"),
    "provider": ("gen_ai.provider.name", "gen_ai.system"),
    "tool": ("gen_ai.tool.name",),
    "args": ("gen_ai.tool.call.arguments", "tool_arguments", "gen_ai.tool.input"),
    "error_type": ("error.type",),
    "finish": ("gen_ai.response.finish_reasons",),
}
NUMBERS = {
    "input_tokens": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    "output_tokens": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
    "cache_read_tokens": ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens",
                          "gen_ai.usage.details.cache_read_tokens"),
    "cache_creation_tokens": ("gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens",
                              "gen_ai.usage.details.cache_write_tokens"),
    "reasoning_tokens": ("gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens",
                         "gen_ai.usage.details.reasoning_tokens"),
    "cost": ("agentobs.call.cost_usd", "operation.cost", "gen_ai.usage.cost"),
}
SESSION = ("gen_ai.conversation.id",)
# Pydantic AI's UsageLimitExceeded names the limit; the agent loops the GenAI names describe (Strands, the Google ADK,
# AutoGen, Semantic Kernel) raise their own turn and step limits
LIMITS = (Limit(stop="max_steps", texts=("request_limit", "MaxTurnsExceeded", "max turns", "max_iterations",
                                         "max iterations", "MaxStepsExceeded", "max steps", "MaxEventLoopCycles",
                                         "max_llm_calls", "LlmCallsLimitExceededError")),
          Limit(stop="max_tool_calls", texts=("tool_calls_limit",)),
          Limit(stop="max_tokens", texts=("tokens_limit",)),
          Limit(stop="max_usd", texts=("cost_limit",)))

GENAI = Dialect(
    name="genai", marker="gen_ai.operation.name",
    # (Mastra writes its own operation names: agent.run, model.step per request, tool.execute, model.chunk)
    roles={"invoke_agent": AGENT, "invoke_workflow": CHAIN, "invoke_swarm": CHAIN, "invoke_graph": CHAIN,
           "invoke_team": CHAIN, "agent.run": AGENT, "model.step": CHAT, "tool.execute": TOOL, "model.chunk": OTHER,
           "chat": CHAT, "text_completion": CHAT,
           "generate_content": CHAT, "chat.completions": CHAT, "text.completions": CHAT, "execute_tool": TOOL,
           "create_agent": OTHER, "embeddings": RETRIEVAL, "retrieval": RETRIEVAL},
    # the Google ADK's span for parallel tool calls repeats them: no call of its own
    rules=(Rule(role=OTHER, of_role=TOOL, when=(When(key="gen_ai.tool.name", equals=("(merged tools)",)),)),),
    text=TEXT, numbers=NUMBERS, session=SESSION, limits=LIMITS, offered=("gen_ai.tool.definitions",),
    where="open-telemetry/semantic-conventions-genai docs/gen-ai (before 1.42: open-telemetry/semantic-conventions)")

# spans without any marker attribute, classified by their names (GenAI span names, Logfire's older ones)
NAMES = Dialect(
    name="names",
    rules=(Rule(role=CHAT, when=(When(key=NAME, prefix=("chat ",)),)),
           Rule(role=TOOL, when=(When(key=NAME, prefix=("execute_tool",)),)),
           Rule(role=TOOL, when=(When(key=NAME, equals=("running tool",)),)),
           Rule(role=AGENT, when=(When(key=NAME, prefix=("invoke_agent",)),)),
           Rule(role=AGENT, when=(When(key=NAME, equals=("agent run",)),))),
    text=TEXT, numbers=NUMBERS, session=SESSION, limits=LIMITS,
    where="GenAI span names; pydantic/pydantic-ai _instrumentation.py (versions 1-2: agent run, running tool)")
