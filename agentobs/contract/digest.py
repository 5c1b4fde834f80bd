"""The fingerprint of a tool call: tool name and arguments, order-independent, 10 hex digits.

One function for every producer: the kernel's repeat guard and approval decisions, the
``agentobs.tool.args_digest`` attribute, and the analysis of traces and transcripts that carry only the
arguments as a JSON string. Equal calls get equal digests; the digest never reveals the arguments.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from .jsontext import dumps


def digest(name: str, args: Any) -> str:
    """The digest of calling ``name`` with ``args`` (any JSON-like value; keys in any order)."""
    return hashlib.sha256(dumps([name, args], sort_keys=True, default=str).encode()).hexdigest()[:10]


def digest_arguments(name: str, arguments: str) -> str:
    """The digest of a call recorded as a JSON arguments string (``gen_ai.tool.call.arguments``, a transcript's
    ``function.arguments``): the digest of the parsed value, so it equals ``digest(name, args)`` of the call
    that produced the string whatever its spacing or key order; a string that is not JSON is digested as text."""
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return digest(name, arguments)
    return digest(name, parsed)
