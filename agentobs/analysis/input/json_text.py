"""Text of parsed JSON that UTF-8 can hold: ``json`` turns an escaped lone UTF-16 surrogate (``"\\ud800"``, half
an emoji cut by a JavaScript substring) into a string that no UTF-8 encoder, Arrow's included, accepts."""
from __future__ import annotations

import re
from typing import Any

from ...contract.otlp_values import text

# an escaped surrogate in the raw bytes: only then can the parsed document hold a lone one (a pair is fine)
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def may_hold_surrogates(raw: bytes) -> bool:
    return _ESCAPED_SURROGATE.search(raw) is not None


def encodes(s: str) -> bool:
    """Whether UTF-8 can hold ``s`` (it holds no lone surrogate)."""
    if s.isascii():
        return True
    try:
        s.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _replaced(s: str) -> str:
    return text(s)          # each lone surrogate becomes U+FFFD, as in our OTLP JSON files and for bad UTF-8


def encodable(s: str) -> str:
    """``s``, or ``s`` with each lone surrogate replaced by U+FFFD when UTF-8 cannot hold it."""
    return s if encodes(s) else _replaced(s)


def clean_strings(doc: Any) -> int:
    """Replaces, in place, every lone surrogate in the strings (values and keys) of a parsed JSON document;
    returns how many strings it changed. Iterative: a document nested as deep as ``json`` reads is walked."""
    changed = 0
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            bad_keys = [k for k in node if isinstance(k, str) and not encodes(k)]
            for k in bad_keys:
                node[_replaced(k)] = node.pop(k)
            changed += len(bad_keys)
            items: Any = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            continue
        fixes = []
        for k, v in items:
            if isinstance(v, str):
                if not encodes(v):
                    fixes.append((k, _replaced(v)))
            elif isinstance(v, (dict, list)):
                stack.append(v)
        for k, v in fixes:
            node[k] = v
        changed += len(fixes)
    return changed

