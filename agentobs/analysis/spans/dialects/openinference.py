"""OpenInference (Arize Phoenix and its instrumentations: OpenAI Agents SDK, LangChain/LangGraph, smolagents,
CrewAI, LlamaIndex, DSPy, Agno, ...): ``openinference.span.kind`` AGENT / CHAIN / LLM / TOOL / RETRIEVER /
RERANKER / EMBEDDING, ``llm.token_count.*``.

Shapes re-classified: LangGraph's nodes come as AGENT or CHAIN spans carrying ``langgraph_node`` in their
``metadata``: a node is a step of the graph, not an agent invocation (the graph is). A handoff is no tool call: the
OpenAI Agents SDK's TOOL span named ``handoff to <agent>`` that runs no tool, LlamaIndex's ``handoff`` tool.
Agent names: ``agent.name``, CrewAI's ``graph.node.id``, else the AGENT span's name less its method
(``translator.run`` in smolagents, ``translator._execute_core`` in CrewAI).
"""
from __future__ import annotations

from ._table import AGENT, CHAIN, CHAT, HANDOFF, NAME, RETRIEVAL, TOOL, Dialect, Limit, Rule, SpanName, When

OPENINFERENCE = Dialect(
    name="openinference", marker="openinference.span.kind",
    roles={"agent": AGENT, "chain": CHAIN, "llm": CHAT, "tool": TOOL, "retriever": RETRIEVAL,
           "reranker": RETRIEVAL, "embedding": RETRIEVAL},
    rules=(Rule(role=CHAIN, of_role=AGENT, when=(When(key="metadata", contains=('"langgraph_node"',)),)),
           # Haystack's Agent component comes as a CHAIN span
           Rule(role=AGENT, of_role=CHAIN, when=(When(key=NAME, equals=("agent.run",)),)),
           Rule(role=HANDOFF, of_role=TOOL, when=(When(key=NAME, prefix=("handoff to ",)),
                                                  When(key="tool.name", present=False))),
           Rule(role=HANDOFF, of_role=TOOL, when=(When(key="tool.name", equals=("handoff",)),))),
    text={"agent": ("agent.name", "graph.node.id",
                    SpanName(roles=(AGENT,), strip=(".run", "._execute_core", ".execute_task"))),
          "model": ("llm.model_name",), "provider": ("llm.provider", "llm.system"),
          "tool": ("tool.name", SpanName(roles=(TOOL,), strip=(".__call__",))),
          "args": ("input.value",), "error_type": ("exception.type", "error.type"),
          "finish": ("llm.finish_reason",)},
    numbers={"input_tokens": ("llm.token_count.prompt",), "output_tokens": ("llm.token_count.completion",),
             "cache_read_tokens": ("llm.token_count.prompt_details.cache_read",),
             "cache_creation_tokens": ("llm.token_count.prompt_details.cache_write",),
             "reasoning_tokens": ("llm.token_count.completion_details.reasoning",),
             "cost": ("llm.cost.total",)},
    session=("session.id",), offered=("llm.tools.",),
    asks=("llm.output_messages.0.message.tool_calls.0.tool_call.function.name",),
    # the frameworks OpenInference instruments: the OpenAI Agents SDK (MaxTurnsExceeded), LangGraph
    # (GraphRecursionError), smolagents (AgentMaxStepsError), LlamaIndex (max iterations), CrewAI and LangChain's
    # AgentExecutor (iteration limit)
    limits=(Limit(stop="max_steps", texts=("MaxTurnsExceeded", "max turns", "GraphRecursionError", "recursion limit",
                                            "AgentMaxStepsError", "max steps", "max_iterations", "max iterations",
                                            "iteration limit")),
            Limit(stop="deadline", texts=("WorkflowTimeoutError", "time limit"))),
    where="Arize-ai/openinference spec/semantic_conventions.md")
