"""The world the realistic traces come from: models and providers, tools and their arguments, agents."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Model:
    name: str
    provider: str            # gen_ai.provider.name (semantic conventions' values where defined)
    system: str              # the older gen_ai.system / vendor name
    host: str                # server.address
    cache_read: bool = False
    cache_write: bool = False
    ms_per_token: float = 20.0
    priced: bool = True      # genai-prices knows it (by design of this table)


MODELS = {m.name: m for m in (
    Model("gpt-4.1-mini", "openai", "openai", "api.openai.com", cache_read=True, ms_per_token=12),
    Model("gpt-4.1", "openai", "openai", "api.openai.com", cache_read=True, ms_per_token=25),
    Model("gpt-4o-mini", "openai", "openai", "api.openai.com", cache_read=True, ms_per_token=10),
    Model("o4-mini", "openai", "openai", "api.openai.com", cache_read=True, ms_per_token=30),
    Model("claude-sonnet-4-5", "anthropic", "anthropic", "api.anthropic.com", True, True, ms_per_token=28),
    Model("claude-3-5-haiku-20241022", "anthropic", "anthropic", "api.anthropic.com", True, True, ms_per_token=14),
    Model("gemini-2.5-pro", "gcp.gemini", "gemini", "generativelanguage.googleapis.com", cache_read=True,
          ms_per_token=30),
    Model("gemini-2.5-flash", "gcp.gemini", "gemini", "generativelanguage.googleapis.com", cache_read=True,
          ms_per_token=8),
    Model("deepseek-chat", "deepseek", "deepseek", "api.deepseek.com", cache_read=True, ms_per_token=35),
    Model("llama-3.3-70b-versatile", "groq", "groq", "api.groq.com", ms_per_token=4),
    Model("mistral-small-latest", "mistral_ai", "mistral_ai", "api.mistral.ai", ms_per_token=10),
    Model("ft:gpt-4.1-mini-2025-04-14:acme:support:Q7x1", "openai", "openai", "api.openai.com", cache_read=True,
          ms_per_token=12, priced=False),
    Model("acme-support-13b", "vllm", "vllm", "llm.internal.acme", ms_per_token=18, priced=False),
    Model("qwen3-coder-30b-local", "ollama", "ollama", "localhost", ms_per_token=40, priced=False),
)}

_WORDS = ("refund", "invoice", "shipping", "delay", "warranty", "battery", "kubernetes", "latency", "pricing",
          "contract", "gdpr", "export", "quarterly", "revenue", "churn", "migration", "postgres", "index",
          "timeout", "retry", "oauth", "token", "cache", "europe", "pacific", "forecast", "anomaly", "supplier")
_DIRS = ("api", "core", "billing", "auth", "jobs", "web", "tests", "infra")
_FILES = ("handlers", "models", "service", "client", "utils", "schema", "views", "tasks", "config")
_TABLES = ("orders", "customers", "invoices", "events", "sessions", "payments", "tickets")


def tool_argument(kind: str, rng: random.Random) -> Any:
    if kind == "order":
        return f"ord_{rng.randrange(10_000, 999_999)}"
    if kind == "customer":
        return f"cu_{rng.randrange(1000, 99_999)}"
    if kind == "ticket":
        return rng.randrange(1, 250_000)
    if kind == "cents":
        return rng.randrange(100, 500_000, 50)
    if kind == "query":
        return " ".join(rng.sample(_WORDS, rng.randint(1, 5)))
    if kind == "url":
        return f"https://{rng.choice(('docs', 'kb', 'status', 'blog'))}.example.com/{rng.choice(_WORDS)}/" \
               f"{rng.randrange(1, 5000)}"
    if kind == "path":
        return f"src/{rng.choice(_DIRS)}/{rng.choice(_FILES)}_{rng.randrange(1, 40)}.py"
    if kind == "sql":
        t = rng.choice(_TABLES)
        return f"SELECT count(*) FROM {t} WHERE created_at > now() - interval '{rng.randint(1, 90)} days'" \
               f" AND region = '{rng.choice(('eu', 'us', 'apac'))}' LIMIT {rng.choice((10, 100, 1000))}"
    if kind == "table":
        return rng.choice(_TABLES)
    if kind == "email":
        return f"{rng.choice(('ana', 'bo', 'chen', 'dara', 'eli', 'femi'))}.{rng.randrange(1, 999)}@example.com"
    if kind == "date":
        return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind == "int":
        return rng.choice((3, 5, 10, 20, 50))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "lines":
        a = rng.randrange(1, 800)
        return [a, a + rng.randrange(5, 120)]
    raise ValueError(kind)


# tool -> (effect, parameters as (name, kind), mean result tokens)
TOOLS: dict[str, tuple[str, tuple[tuple[str, str], ...], int]] = {
    "get_order": ("read", (("order_id", "order"),), 350),
    "lookup_customer": ("read", (("customer_id", "customer"), ("include_history", "bool")), 600),
    "list_tickets": ("read", (("customer_id", "customer"), ("limit", "int")), 900),
    "update_ticket": ("write", (("ticket_id", "ticket"), ("status", "query")), 80),
    "issue_refund": ("write", (("order_id", "order"), ("amount_cents", "cents")), 60),
    "send_email": ("write", (("to", "email"), ("subject", "query")), 40),
    "search_kb": ("read", (("query", "query"), ("top_k", "int")), 1500),
    "web_search": ("read", (("query", "query"), ("top_k", "int")), 2500),
    "fetch_url": ("read", (("url", "url"),), 6000),
    "read_pdf": ("read", (("url", "url"), ("pages", "lines")), 12000),
    "cite": ("read", (("url", "url"),), 120),
    "read_file": ("read", (("path", "path"), ("lines", "lines")), 3000),
    "write_file": ("write", (("path", "path"),), 50),
    "apply_patch": ("write", (("path", "path"), ("hunks", "int")), 150),
    "grep": ("read", (("pattern", "query"), ("path", "path")), 1200),
    "list_dir": ("read", (("path", "path"),), 400),
    "run_tests": ("read", (("path", "path"), ("fail_fast", "bool")), 2200),
    "run_shell": ("write", (("command", "query"),), 1800),
    "list_tables": ("read", (), 200),
    "describe_table": ("read", (("table", "table"),), 500),
    "run_sql": ("read", (("sql", "sql"),), 2000),
    "plot_chart": ("write", (("table", "table"), ("kind", "query")), 100),
    "find_slot": ("read", (("date", "date"), ("duration_min", "int")), 300),
    "book_meeting": ("write", (("date", "date"), ("attendee", "email")), 90),
    "get_invoice": ("read", (("customer_id", "customer"), ("date", "date")), 700),
}


@dataclass(frozen=True)
class Agent:
    name: str
    service: str
    models: tuple[tuple[str, float], ...]
    tools: tuple[str, ...]
    steps: float              # median model calls
    context: float            # median first input tokens
    weight: float


AGENTS = (
    Agent("support-agent", "support-api", (("gpt-4.1-mini", 0.5), ("claude-3-5-haiku-20241022", 0.2),
                                           ("ft:gpt-4.1-mini-2025-04-14:acme:support:Q7x1", 0.2),
                                           ("acme-support-13b", 0.1)),
          ("get_order", "lookup_customer", "list_tickets", "update_ticket", "issue_refund", "send_email", "search_kb"),
          6, 2500, 0.30),
    Agent("triage", "support-api", (("gpt-4o-mini", 0.6), ("gemini-2.5-flash", 0.4)),
          ("lookup_customer", "list_tickets", "search_kb"), 3, 1200, 0.12),
    Agent("billing-bot", "support-api", (("deepseek-chat", 0.5), ("gpt-4.1-mini", 0.3), ("mistral-small-latest", 0.2)),
          ("get_invoice", "lookup_customer", "issue_refund", "send_email"), 5, 2000, 0.10),
    Agent("research-assistant", "research-worker", (("claude-sonnet-4-5", 0.45), ("gemini-2.5-pro", 0.35),
                                                    ("o4-mini", 0.2)),
          ("web_search", "fetch_url", "read_pdf", "cite", "search_kb"), 12, 9000, 0.18),
    Agent("coder", "coder-cli", (("claude-sonnet-4-5", 0.45), ("gpt-4.1", 0.25), ("qwen3-coder-30b-local", 0.15),
                                 ("deepseek-chat", 0.15)),
          ("read_file", "write_file", "apply_patch", "grep", "list_dir", "run_tests", "run_shell"), 18, 15000, 0.15),
    Agent("sql-analyst", "analytics-api", (("gemini-2.5-flash", 0.4), ("llama-3.3-70b-versatile", 0.35),
                                           ("mistral-small-latest", 0.25)),
          ("list_tables", "describe_table", "run_sql", "plot_chart"), 7, 4000, 0.10),
    Agent("scheduler", "assistant-api", (("gpt-4o-mini", 0.7), ("gemini-2.5-flash", 0.3)),
          ("find_slot", "book_meeting", "send_email"), 4, 1500, 0.05),
)
AGENT_BY_NAME = {a.name: a for a in AGENTS}
HANDOFF = {"triage": "support-agent", "billing-bot": "support-agent", "sql-analyst": "sql-analyst"}  # then this one
