"""The secrets corpus (tests/data/secrets_corpus.json) as both redactions see it: what the in-process Redactor makes
of an entry, and that result with the collector's mask. Used where the collector's configuration is checked against
the rules (unit/contract/test_redaction_rules.py) and where the real collector redacts the corpus
(scenarios/stack/test_redaction_corpus.py)."""
from __future__ import annotations

from typing import Any

from agentobs.contract import redaction_rules as rules
from agentobs.telemetry.content import REDACTED, Redactor

# where an entry is text of its own, not an attribute's value
NAMES = ("span_name", "event_name", "scope_name", "status_message")


def in_process(redactor: Redactor, entry: dict[str, Any]) -> Any:
    """What the in-process Redactor makes of a corpus entry: a name or status message is text, anything else is
    the value of an attribute under the entry's key."""
    if entry["where"] in NAMES:
        return redactor.value(entry["value"])
    return redactor.value({entry["key"]: entry["value"]})[entry["key"]]


def collector_form(v: Any) -> Any:
    """The in-process result with the collector's mask."""
    if isinstance(v, str):
        return v.replace(REDACTED, rules.MASK_COLLECTOR)
    if isinstance(v, dict):
        return {k: collector_form(x) for k, x in v.items()}
    if isinstance(v, list):
        return [collector_form(x) for x in v]
    return v
