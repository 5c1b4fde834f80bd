"""Zipkin API v2 JSON: a JSON array of spans (what ``POST /api/v2/spans`` receives, what the OpenTelemetry Zipkin
JSON exporters send, what Zipkin's "Download JSON" and ``GET /api/v2/trace/{id}`` give), a JSON array of traces,
each an array of spans (``GET /api/v2/traces``), and, as the same reader takes them, JSON lines of spans or of span
arrays and spans written one after another. Zipkin v1 JSON (``binaryAnnotations``) is not read (counted).

A span: ``traceId`` (16 or 32 hex digits), ``id``, ``parentId``, ``kind`` (absent: an internal span), ``name``,
``timestamp`` and ``duration`` (microseconds; a span without both is counted by the loader as ``bad_span``),
``localEndpoint.serviceName`` (the resource's ``service.name``), ``remoteEndpoint`` (``peer.service``,
``network.peer.address``, ``network.peer.port`` unless the tags hold them), ``tags``, ``annotations``.

Converted as the OpenTelemetry Zipkin exporters convert OTLP, backwards where that is unambiguous: the tags
``otel.status_code`` (with ``error``, the status description, or ``otel.status_description``) become the status, a
lone ``error`` tag an error status; ``otel.scope.name``/``otel.scope.version`` (or the older ``otel.library.*``)
the scope; ``otel.dropped_{attributes,events,links}_count`` the dropped counts. The exporter writes the resource's
attributes into every span's tags: tags of the resource namespaces (``service.``, ``telemetry.``, ``host.``,
``process.``...) go back to the resource. An annotation whose value is the exporter's JSON ``{"event name":
{attributes}}`` is that event; any other annotation is an event named by its value. Tags are text: a tag whose
attribute the contract types (``ATTRIBUTE_TYPES``) as a number or a boolean is read back as one when its text is
exactly one, a ``string[]`` one from its JSON array text; other tags stay text (arrays too). Zipkin has no links
(lost), ``debug`` is the exporter's sampled flag (ignored). A ``shared`` span (the server half of a span id shared
with its client, B3 style) whose id its client holds in the same file gets an id of its own, as a child of the
client span; its service's spans under that id follow it. Spans are kept in one OTLP request for the whole file.

Recognized by the first span's keys: a hex ``traceId`` and ``id``, and no key a Zipkin span has not (as far as the
first 8 KiB go), so a JSON array of OTLP requests or spans, Jaeger's JSON and chat transcripts are not taken. The
layouts are read as the console exporter's objects are (``values_as_lines``): a value that is not JSON (a file cut
short, a corrupt span) costs one ``invalid_json`` and the values after it are read; in an array of traces, that
value is the whole trace.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import re
from collections.abc import Callable, Iterator
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any, BinaryIO

from ...contract.otlp_values import any_value
from ...contract.semconv import ATTRIBUTE_TYPES
from ..input.json_stream import Broken, Reader
from ..spans.quality import DataQuality
from ._build import KINDS, STATUS_CODES, hex_id, nanos, request

NAME = "Zipkin JSON (API v2)"

# the fields of a Zipkin span (v2; ``binaryAnnotations`` is v1's, sniffed to be counted)
_FIELDS = frozenset({"traceId", "id", "parentId", "kind", "name", "timestamp", "duration", "localEndpoint",
                     "remoteEndpoint", "tags", "annotations", "debug", "shared", "binaryAnnotations"})
_OPEN = re.compile(r"\s*(?:\[\s*){0,2}\{")
_OTLP = re.compile(rb'"resource_?[sS]pans"')                  # an OTLP request, in either spelling
_SPACE = re.compile(r"\s*")
_TRACE_ID = re.compile(r"[0-9a-fA-F]{1,32}")
_SPAN_ID = re.compile(r"[0-9a-fA-F]{1,16}")

_KINDS = {"CLIENT": KINDS["CLIENT"], "SERVER": KINDS["SERVER"], "PRODUCER": KINDS["PRODUCER"],
          "CONSUMER": KINDS["CONSUMER"]}
_SCOPE_TAGS = ("otel.scope.name", "otel.scope.version", "otel.library.name", "otel.library.version")
_DROPPED = {"otel.dropped_attributes_count": "droppedAttributesCount",
            "otel.dropped_events_count": "droppedEventsCount", "otel.dropped_links_count": "droppedLinksCount"}
# attribute namespaces that only a resource holds (the exporter writes the resource's attributes into the tags)
_RESOURCE_PREFIXES = ("service.", "telemetry.", "host.", "os.", "process.", "container.", "k8s.", "cloud.",
                      "deployment.", "faas.", "device.", "webengine.")
_INT = re.compile(r"-?\d{1,19}")
_FLOAT = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def matches(head: bytes) -> bool:
    """The first object (maybe inside one or two arrays) has a hex ``traceId`` and a hex ``id``, and no key (as far as
    the head goes) that a Zipkin span has not."""
    if b'"traceId"' not in head or _OTLP.search(head, 0, 256):   # (the scan below walks the first object)
        return False
    text = head.decode("utf-8", "replace")
    m = _OPEN.match(text)
    if m is None:
        return False
    keys = _first_keys(text, m.end())
    trace_id, span_id = keys.get("traceId"), keys.get("id")
    return (keys.keys() <= _FIELDS and isinstance(trace_id, str) and _TRACE_ID.fullmatch(trace_id) is not None
            and isinstance(span_id, str) and _SPAN_ID.fullmatch(span_id) is not None)


def _first_keys(text: str, pos: int) -> dict[str, str | None]:
    """The keys of the object opened before ``pos`` (to its end, or to the end of the text), each with its value
    when that is a string."""
    keys: dict[str, str | None] = {}
    depth = 1
    while pos < len(text) and depth > 0:
        c = text[pos]
        if c == '"':
            try:
                word, pos = scanstring(text, pos + 1)
            except ValueError:                      # cut short by the end of the head
                break
            after = _SPACE.match(text, pos).end()   # type: ignore[union-attr]
            if depth == 1 and text[after:after + 1] == ":":
                value_at = _SPACE.match(text, after + 1).end()   # type: ignore[union-attr]
                keys[word] = None
                if text[value_at:value_at + 1] == '"':
                    try:
                        keys[word], pos = scanstring(text, value_at + 1)
                    except ValueError:
                        break
                else:
                    pos = value_at
            continue
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
        pos += 1
    return keys


def requests(data: bytes, source: str, q: DataQuality) -> list[dict[str, Any]]:
    """``stream`` of a document held in memory, as a list."""
    return list(stream(lambda: io.BytesIO(data), source, q))


BATCH = 2000                    # spans in one request


def stream(document: Callable[[], BinaryIO], source: str, q: DataQuality) -> Iterator[dict[str, Any]]:
    """OTLP requests of ``BATCH`` spans (grouped by resource and scope), the file read a value (a span, or a trace's
    array of spans) at a time. A ``shared`` span needs the ids of the whole file: the file is read once for the shared
    spans (usually none), once more for their clients' ids when there are some, then converted."""
    moved = _shared_ids(document)
    resources: dict[str, list[dict[str, Any]]] = {}
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    held = v1 = 0
    for n, item in _items(document, source, q):
        if not isinstance(item, dict):
            q.add("bad_span", source, example=f"line {n}: not a Zipkin span ({type(item).__name__})")
            continue
        if "binaryAnnotations" in item:
            v1 += 1
            continue
        try:
            span, res_key, res_attrs, scope = _span(item, source, q)
        except RecursionError:                            # (values are flattened to text before)
            q.add("bad_span", source, example=f"line {n}: a span nested too deeply to convert")
            continue
        resources.setdefault(res_key, res_attrs)
        if moved:
            _own_id(span, res_key, item.get("shared") is True, moved)
        groups.setdefault((res_key, *scope), []).append(span)
        held += 1
        if held >= BATCH:
            yield request(groups, resources)
            groups, held = {}, 0
    if v1:
        q.add("unknown_format", source, count=v1, example="Zipkin v1 JSON (binaryAnnotations): only v2 is read")
    if groups:
        yield request(groups, resources)


def _items(document: Callable[[], BinaryIO], source: str, q: DataQuality | None) -> Iterator[tuple[int, Any]]:
    """(line, item) of each span of the file (an item that is not an object too); a value that is not JSON is
    counted in ``q`` (when given: the file is read more than once) and skipped."""
    with document() as f:
        for n, value in Reader(f, strict=False).values():
            if isinstance(value, Broken):
                if q is not None:
                    q.add("invalid_json", source, example=f"line {n}: {value.reason[:120]}")
                continue
            for item in value if isinstance(value, list) else [value]:
                yield n, item


def _key(item: dict[str, Any]) -> tuple[str, str]:
    return hex_id(item.get("traceId"), 32), hex_id(item.get("id"), 16)


def _shared_ids(document: Callable[[], BinaryIO]) -> dict[tuple[str, str, str], str]:
    """(trace, old id, resource key) -> new id of each shared span whose id an unshared span of its trace holds."""
    shared: dict[tuple[str, str], set[str]] = {}
    for _, item in _items(document, "", None):
        if isinstance(item, dict) and item.get("shared") is True and "binaryAnnotations" not in item:
            try:
                _, res_key, _, _ = _span(item, "", DataQuality())
            except RecursionError:
                continue
            shared.setdefault(_key(item), set()).add(res_key)
    if not shared:
        return {}
    clients = {_key(item) for _, item in _items(document, "", None)
               if isinstance(item, dict) and item.get("shared") is not True and _key(item) in shared}
    return {(*old, key): hashlib.sha256(f"{old[0]}:{old[1]}:{key}:shared".encode()).hexdigest()[:16]
            for old, keys in shared.items() if old in clients for key in keys}


def _own_id(span: dict[str, Any], key: str, shared: bool, moved: dict[tuple[str, str, str], str]) -> None:
    """A shared span whose id its client holds: its own id, as that span's child; the spans of its service whose
    parent is that id become its children."""
    new = moved.get((span["traceId"], span["spanId"], key)) if shared else None
    if new is not None:
        span["spanId"], span["parentSpanId"] = new, span["spanId"]
        return
    child_of = moved.get((span["traceId"], span.get("parentSpanId", ""), key))
    if child_of is not None and span["spanId"] != child_of:
        span["parentSpanId"] = child_of


def _span(item: dict[str, Any], source: str, q: DataQuality
          ) -> tuple[dict[str, Any], str, list[dict[str, Any]], tuple[str, str]]:
    """The OTLP span, its resource's key and attributes, and its scope (name, version)."""
    raw = item.get("tags")
    if raw is not None and not isinstance(raw, dict):
        q.add("bad_value", source, example=f"span {item.get('id')}: tags are not an object (left out)")
    tags: dict[str, Any] = {str(k): _plain(v) for k, v in raw.items() if v is not None} if isinstance(raw, dict) else {}
    taken: set[str] = set(_SCOPE_TAGS) | set(_DROPPED)

    local = item["localEndpoint"] if isinstance(item.get("localEndpoint"), dict) else {}
    res = {k: v for k, v in tags.items() if k.startswith(_RESOURCE_PREFIXES)}
    taken |= set(res)
    service = local.get("serviceName")
    if isinstance(res.get("service.name"), str):          # as written (Zipkin keeps service names lower-cased)
        service = res["service.name"]
    if isinstance(service, str) and service:
        res["service.name"] = service
    res_attrs = [{"key": k, "value": any_value(v)} for k, v in sorted(res.items())]
    res_key = json.dumps(res_attrs, sort_keys=True)

    kind_text = item.get("kind")
    kind = KINDS["INTERNAL"] if kind_text is None else _KINDS.get(str(kind_text).upper(), KINDS["UNSPECIFIED"])
    if kind_text is not None and kind == KINDS["UNSPECIFIED"]:
        q.add("bad_value", source, example=f"span {item.get('id')}: kind {str(kind_text)[:40]!r}")

    code = STATUS_CODES.get(str(tags.get("otel.status_code", "")).upper(), 0)
    message = tags.get("otel.status_description")
    if "otel.status_code" in tags:
        taken |= {"otel.status_code", "otel.status_description"}
    if "error" in tags and code in (0, STATUS_CODES["ERROR"]):    # Zipkin's error tag: its value is the message
        code = STATUS_CODES["ERROR"]
        message = message or tags["error"]
        taken |= {"error", "otel.status_description"}

    out: dict[str, Any] = {
        "traceId": hex_id(item.get("traceId"), 32), "spanId": hex_id(item.get("id"), 16),
        "name": str(item.get("name") or ""), "kind": kind,
        "attributes": [{"key": k, "value": any_value(_typed(k, v))} for k, v in tags.items() if k not in taken]
        + _remote(item.get("remoteEndpoint"), tags) + _local(local, tags),
        "status": {"code": code},
    }
    if message and isinstance(message, str):
        out["status"]["message"] = message
    parent = item.get("parentId")
    if parent and hex_id(parent, 16).strip("0"):
        out["parentSpanId"] = hex_id(parent, 16)
    start, duration = _micros(item.get("timestamp")), _micros(item.get("duration"))
    if start is not None and duration is not None:
        out["startTimeUnixNano"] = nanos(start)
        out["endTimeUnixNano"] = nanos(start + duration)
    for tag, field in _DROPPED.items():
        count = _typed("", tags.get(tag), "int")
        if isinstance(count, int) and count > 0:
            out[field] = count
    annotations = item.get("annotations")
    if annotations is not None and not isinstance(annotations, list):
        q.add("bad_value", source, example=f"span {item.get('id')}: annotations are not a list (left out)")
        annotations = None
    events = [_event(a, source, q) for a in annotations or [] if isinstance(a, dict)]
    if any(e is None for e in events):
        q.add("bad_value", source, count=sum(e is None for e in events),
              example=f"span {item.get('id')}: an annotation without a timestamp in microseconds (left out)")
    if any(events):
        out["events"] = [e for e in events if e is not None]
    scope = (str(tags.get("otel.scope.name", tags.get("otel.library.name", ""))),
             str(tags.get("otel.scope.version", tags.get("otel.library.version", ""))))
    return out, res_key, res_attrs, scope


def _typed(key: str, value: Any, expected: str | None = None) -> Any:
    """A tag's text as the contract's type of its attribute when it is exactly one; otherwise as it is."""
    expected = expected or ATTRIBUTE_TYPES.get(key)
    if not isinstance(value, str) or expected in (None, "string"):
        return value
    text = value.strip()
    if expected == "int" and _INT.fullmatch(text):
        number = int(text)
        return number if -(2 ** 63) <= number < 2 ** 63 else value
    if expected == "double" and _FLOAT.fullmatch(text):
        d = float(text)
        return d if math.isfinite(d) else value
    if expected == "bool" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if expected == "string[]" and text.startswith("["):
        try:
            items = json.loads(text)
        except (ValueError, RecursionError):
            return value
        if isinstance(items, list) and all(not isinstance(x, (list, dict)) for x in items):
            return [x if isinstance(x, str) else json.dumps(x) for x in items if x is not None]
    return value


def _plain(value: Any) -> Any:
    """A value as an attribute takes it: a scalar, or a list of scalars (an OpenTelemetry array); anything else (a
    map, a list of lists, which no OpenTelemetry attribute is) as its JSON text."""
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, list) and all(isinstance(x, (str, int, float, bool)) for x in value):
        return value
    return json.dumps(value)


def _remote(endpoint: Any, tags: dict[str, Any]) -> list[dict[str, Any]]:
    if not isinstance(endpoint, dict):
        return []
    found = {"peer.service": endpoint.get("serviceName"),
             "network.peer.address": endpoint.get("ipv4") or endpoint.get("ipv6"),
             "network.peer.port": endpoint.get("port")}
    return [{"key": k, "value": any_value(v)} for k, v in found.items() if v not in (None, "") and k not in tags]


def _local(endpoint: dict[str, Any], tags: dict[str, Any]) -> list[dict[str, Any]]:
    found = {"network.local.address": endpoint.get("ipv4") or endpoint.get("ipv6"),
             "network.local.port": endpoint.get("port")}
    return [{"key": k, "value": any_value(v)} for k, v in found.items() if v not in (None, "") and k not in tags]


def _micros(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value >= 0 else None


def _event(annotation: dict[str, Any], source: str, q: DataQuality) -> dict[str, Any] | None:
    ts = _micros(annotation.get("timestamp"))
    if ts is None:
        return None
    value = annotation.get("value")
    name, attrs = str(value if value is not None else ""), {}
    if isinstance(value, str) and value.startswith("{"):
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict) and len(parsed) == 1:        # the exporter's {"event name": {attributes}}
            (key, inner), = parsed.items()
            if isinstance(inner, dict):
                name, attrs = key, {k: _plain(v) for k, v in inner.items() if v is not None}
    return {"timeUnixNano": nanos(ts), "name": name,
            "attributes": [{"key": k, "value": any_value(v)} for k, v in attrs.items()]}
