"""What content may be recorded, and redaction applied before anything is recorded.

Capture follows ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``: ``NO_CONTENT``
(default), ``SPAN_ONLY``, ``EVENT_ONLY`` or ``SPAN_AND_EVENT``; any other value warns and
means ``NO_CONTENT``. Even with capture on, the redactor replaces the values of sensitive
keys, strings that look like secrets (API keys, tokens, private keys, credentials in URLs,
e-mail addresses, card numbers) and the values of secret-looking environment variables with
``[REDACTED]``; the rules are those of ``agentobs.contract.redaction_rules``, which the collector applies too
(``Redactor`` lives in ``agentobs.contract.redaction``: the analysis masks what it shows with it).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from enum import StrEnum

from ..contract.redaction import REDACT_KEYS_ENV, REDACTED, Redactor

__all__ = ["CAPTURE_ENV", "REDACTED", "REDACT_KEYS_ENV", "Capture", "Redactor", "capture_from"]

log = logging.getLogger("agentobs.telemetry")

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


class Capture(StrEnum):
    NO_CONTENT = "NO_CONTENT"
    SPAN_ONLY = "SPAN_ONLY"
    EVENT_ONLY = "EVENT_ONLY"
    SPAN_AND_EVENT = "SPAN_AND_EVENT"

    @property
    def on_span(self) -> bool:
        return self in (Capture.SPAN_ONLY, Capture.SPAN_AND_EVENT)

    @property
    def on_event(self) -> bool:
        return self in (Capture.EVENT_ONLY, Capture.SPAN_AND_EVENT)

    @property
    def any(self) -> bool:
        return self is not Capture.NO_CONTENT


def capture_from(value: str | Capture | None, env: Mapping[str, str] | None = None) -> Capture:
    """Explicit value > environment variable > NO_CONTENT. Invalid values warn and mean NO_CONTENT."""
    if isinstance(value, Capture):
        return value
    raw = value if value is not None else (env if env is not None else os.environ).get(CAPTURE_ENV)
    if raw is None or raw == "":
        return Capture.NO_CONTENT
    try:
        return Capture(raw.strip().upper())
    except ValueError:
        log.warning("%s=%r is not one of NO_CONTENT, SPAN_ONLY, EVENT_ONLY, SPAN_AND_EVENT; recording no content",
                    CAPTURE_ENV, raw)
        return Capture.NO_CONTENT
