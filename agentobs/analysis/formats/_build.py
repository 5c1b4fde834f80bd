"""OTLP JSON (canonical spelling) built from plain values: what the converters emit."""
from __future__ import annotations

import json
from typing import Any

from ...contract.otlp_values import attributes as contract_attributes
from ..spans.quality import DataQuality

# OTLP span kinds by name
KINDS = {"UNSPECIFIED": 0, "INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}
STATUS_CODES = {"UNSET": 0, "OK": 1, "ERROR": 2}


class Fields:
    """Reads the fields of one span of a converted format: a value of the wrong shape is counted (``bad_value``,
    the example naming ``where`` it is, a span or a line) and read as empty or unspecified; the span is kept."""

    def __init__(self, source: str, q: DataQuality, where: str):
        self.source, self.q, self.where = source, q, where

    def value(self, key: str, v: Any, read_as: str, where: str | None = None) -> None:
        self.q.add("bad_value", self.source, example=f"{where or self.where}: {key} {json.dumps(v, default=str)[:40]} "
                                                     f"is not usable (read as {read_as})")

    def list(self, owner: dict[str, Any], key: str, where: str | None = None) -> list[Any]:
        v = owner.get(key)
        if v is None or isinstance(v, list):
            return v or []
        self.value(key, v, "empty", where)
        return []

    def text(self, owner: dict[str, Any], key: str) -> str:
        v = owner.get(key)
        if v is None or isinstance(v, str):
            return v or ""
        self.value(key, v, "empty")
        return ""

    def code(self, owner: dict[str, Any], key: str, codes: dict[str, int], prefix: str = "") -> int:
        """A span kind or status code by its name (0, unspecified, when absent or unknown)."""
        v = owner.get(key)
        if v is None:
            return 0
        code = codes.get(v.removeprefix(prefix)) if isinstance(v, str) else None
        if code is None:
            self.value(key, v, "unspecified")
            return 0
        return code


def attributes(pairs: Any) -> list[dict[str, Any]]:
    """OTLP attributes of a mapping of plain values read from a file (not a mapping: none; null values left out)."""
    if not isinstance(pairs, dict):
        return []
    return contract_attributes({str(k): v for k, v in pairs.items() if v is not None})


_MICROS_HELD = (1 << 64) // 1000          # microseconds that 64-bit nanoseconds hold (the loader checks the rest)


def nanos(micros: int) -> str:
    """Microseconds as OTLP's nanoseconds text. A count too large for 64-bit nanoseconds becomes text the loader
    counts as a bad value, naming it, without writing its digits out (past 4,300 digits, Python refuses to)."""
    if -_MICROS_HELD < micros < _MICROS_HELD:
        return str(micros * 1000)
    return f"{'-' if micros < 0 else ''}{micros.bit_length()}-bit count of microseconds"


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
