"""What content may be recorded, and redaction applied before anything is recorded.

Capture follows ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``: ``NO_CONTENT``
(default), ``SPAN_ONLY``, ``EVENT_ONLY`` or ``SPAN_AND_EVENT``; any other value warns and
means ``NO_CONTENT``. Even with capture on, the redactor replaces the values of sensitive
keys, strings that look like secrets (API keys, e-mail addresses, card numbers) and the
values of secret-looking environment variables with ``[REDACTED]``.
"""
from __future__ import annotations

import json
import logging
import os
import re
from enum import Enum
from typing import Any, Iterable, Mapping

log = logging.getLogger("agentobs.telemetry")

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
REDACT_KEYS_ENV = "AGENTOBS_REDACT_KEYS"
REDACTED = "[REDACTED]"


class Capture(str, Enum):
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


DEFAULT_KEYS = frozenset({"password", "passwd", "secret", "api_key", "apikey", "token", "access_token",
                          "refresh_token", "authorization", "cookie", "card_number", "card", "cvv", "ssn", "iban"})
_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)", re.I)
_PATTERNS = [
    re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{16,}"),                 # OpenAI/Stripe-style keys
    re.compile(r"\b(?:ghp|gho|ghs|github_pat|xox[abp])_[A-Za-z0-9_]{16,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),   # JWT
    re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}"),   # e-mail addresses
]
_CARD = re.compile(r"\b(?:\d[ \-]?){12,18}\d\b")


def _luhn(digits: str) -> bool:
    total, alt = 0, False
    for ch in reversed(digits):
        d = ord(ch) - 48
        if alt:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
        alt = not alt
    return total % 10 == 0


class Redactor:
    def __init__(self, keys: Iterable[str] | None = None, *, env: Mapping[str, str] | None = None,
                 patterns: bool = True):
        extra = (env if env is not None else os.environ).get(REDACT_KEYS_ENV, "")
        self.keys = frozenset(_norm(k) for k in (*(keys if keys is not None else DEFAULT_KEYS), *extra.split(","))
                              if k.strip())
        self.patterns = patterns
        environ = env if env is not None else os.environ
        self.env_secrets = sorted({v for k, v in environ.items() if _SECRET_ENV.search(k) and len(v) >= 8},
                                  key=len, reverse=True)

    def sensitive_key(self, key: str) -> bool:
        k = _norm(key)
        return k in self.keys or any(k.endswith("_" + t) for t in self.keys)

    def text(self, s: str) -> str:
        for secret in self.env_secrets:
            if secret in s:
                s = s.replace(secret, REDACTED)
        if self.patterns:
            for p in _PATTERNS:
                s = p.sub(REDACTED, s)
            s = _CARD.sub(lambda m: REDACTED if _luhn(re.sub(r"\D", "", m.group())) else m.group(), s)
        return s

    def value(self, v: Any) -> Any:
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, Mapping):
            return {k: (REDACTED if isinstance(k, str) and self.sensitive_key(k) else self.value(x))
                    for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [self.value(x) for x in v]
        return v

    def json(self, v: Any) -> str:
        """Redacts structure and strings, serializes, then redacts the serialized text once more."""
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except ValueError:
                return json.dumps(self.text(v))
        return self.text(json.dumps(self.value(v), sort_keys=True, default=str))


def _norm(key: str) -> str:
    return key.strip().lower().replace("-", "_")
