"""The contract every part of agentobs shares, in the standard library only, but for RE2 under the redaction rules
(it imports no other agentobs package, only the exception tree of ``agentobs.errors``).

    semconv       every attribute, span, event and metric name we emit, and the conventions' version
    vocabulary    stop reasons, run statuses, tool result statuses, reply kinds (closed enumerations)
    events        the kernel's events as keyword-only frozen dataclasses of values, and ``Observer``
    digest        the one fingerprint of a tool call
    jsontext      ``dumps``: json.dumps' text without its per-call set-up (the kernel's views, digests, signatures)
    pricing       ``Prices``: custom prices, then the genai-prices table (imported on first use)
    retry         ``RetryPolicy``: the one backoff
    files         ``write_text``: the one way a whole file is written (atomically; a link at the name replaced, never
                  followed; FIFOs and devices streamed)
    redaction_rules  what counts as a secret, shared with the collector's configuration
    redaction     ``Redactor`` and ``shown``: the rules applied, in time linear in the text (``linear_rx``: RE2)

The kernel, telemetry, analysis and the CLI import this package; it imports none of them.
"""
from . import semconv
from .digest import digest, digest_arguments
from .events import Breach, Event, Limits, Observer, RunTotals, TokenUsage
from .pricing import Prices
from .retry import RetryPolicy
from .vocabulary import (
                         CATEGORY,
                         SUSPENDING,
                         Category,
                         RunStatus,
                         StopReason,
                         ToolStatus,
                         is_transient,
                         result_status,
                         status_of,
)

__all__ = [
    "Breach", "CATEGORY", "Category", "Event", "Limits", "Observer", "Prices", "RetryPolicy", "RunStatus", "RunTotals",
    "SUSPENDING", "StopReason", "TokenUsage", "ToolStatus", "digest", "digest_arguments", "is_transient",
    "result_status", "semconv", "status_of",
]
