"""OTLP JSON (canonical spelling) built from plain values: what the converters emit."""
from __future__ import annotations

from typing import Any

from ...contract.otlp_values import attributes as contract_attributes

# OTLP span kinds by name
KINDS = {"UNSPECIFIED": 0, "INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}
STATUS_CODES = {"UNSET": 0, "OK": 1, "ERROR": 2}


def attributes(pairs: Any) -> list[dict[str, Any]]:
    """OTLP attributes of a mapping of plain values read from a file (not a mapping: none; null values left out)."""
    if not isinstance(pairs, dict):
        return []
    return contract_attributes({str(k): v for k, v in pairs.items() if v is not None})


def hex_id(value: Any, digits: int) -> str:
    """A trace or span id as lower-case hex of ``digits`` digits (leading zeros put back; ``0x`` taken off); an id
    that is not hex stays as it is, for the loader to refuse and count."""
    if not isinstance(value, str):
        return ""
    text = value.lower().removeprefix("0x")
    return text.zfill(digits) if len(text) <= digits and all(c in "0123456789abcdef" for c in text) else text


def request(groups: dict[tuple[str, str, str], list[dict[str, Any]]],
            resources: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """One OTLP request: spans grouped by (resource key, scope name, scope version); ``resources``: the
    attributes of each resource key."""
    by_resource: dict[str, list[dict[str, Any]]] = {}
    for (res, scope, version), spans in groups.items():
        by_resource.setdefault(res, []).append({"scope": {"name": scope, "version": version}, "spans": spans})
    return {"resourceSpans": [{"resource": {"attributes": resources.get(res, [])}, "scopeSpans": scopes}
                              for res, scopes in by_resource.items()]}
