"""The valid spellings of OTLP JSON, as Arrow schemas for the fast path.

OTLP/JSON and protobuf's generic JSON mapping allow several spellings of the same request: proto field
names in lowerCamelCase or snake_case, enum values as integers or as their names (span kind, status
code), 64-bit integers as strings or as numbers, ids as hex (OTLP/JSON) or base64 (generic protobuf
JSON), the request bare or wrapped in a Jaeger API v3 answer's ``result``. ``pyarrow.json`` needs one
type per column, so each combination is its own schema; the loader starts from the spelling of the
previous piece of the file and learns another one from what pyarrow reports (``Spelling.learn``).
Ids are not part of the schema (both are strings): ``_arrow`` converts base64 to hex.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache

import pyarrow as pa
import pyarrow.json as pj

_SNAKE = {
    "resourceSpans": "resource_spans", "scopeSpans": "scope_spans", "traceId": "trace_id", "spanId": "span_id",
    "parentSpanId": "parent_span_id", "startTimeUnixNano": "start_time_unix_nano",
    "endTimeUnixNano": "end_time_unix_nano", "timeUnixNano": "time_unix_nano", "stringValue": "string_value",
    "intValue": "int_value", "doubleValue": "double_value", "boolValue": "bool_value", "arrayValue": "array_value",
    "kvlistValue": "kvlist_value", "bytesValue": "bytes_value",
    "instrumentationLibrarySpans": "instrumentation_library_spans",
}
SPAN_KINDS = ("SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT",
              "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER")
STATUS_CODES = ("STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR")


@dataclass(frozen=True)
class Spelling:
    snake: bool = False          # proto field names (trace_id) instead of lowerCamelCase (traceId)
    kind_names: bool = False     # "SPAN_KIND_CLIENT" instead of 3
    code_names: bool = False     # "STATUS_CODE_ERROR" instead of 2
    time_numbers: bool = False   # 1700000000000000000 instead of "1700000000000000000"
    int_numbers: bool = False    # {"intValue": 5} instead of {"intValue": "5"}
    wrapped: bool = False        # {"result": {...}}: a saved Jaeger API v3 answer

    def name_of(self, camel: str) -> str:
        """The field name in this spelling."""
        return _SNAKE.get(camel, camel) if self.snake else camel

    def describe(self) -> list[str]:
        names = {"snake": "snake_case field names", "kind_names": "span kinds by name",
                 "code_names": "status codes by name", "time_numbers": "timestamps as numbers",
                 "int_numbers": "integer values as numbers", "wrapped": "Jaeger API answers"}
        return [text for key, text in names.items() if getattr(self, key)]

    def label(self) -> str:
        """How the report's "read" section names the spelling: what differs from canonical, or "canonical"."""
        return ", ".join(self.describe()) or "canonical"

    def schema(self, rare: bool = True) -> pa.Schema:
        """The request's schema; without the ``rare`` value fields (bytesValue, kvlistValue: few inputs use them),
        a parse is about a tenth cheaper, as pyarrow fills every field of every attribute value the input leaves out
        (``_parse.parse`` parses again with them when a value holds none of the others)."""
        return _schema(self, rare)

    def value_types(self, rare: bool = True) -> tuple[pa.DataType, pa.DataType]:
        """The types of an attribute value and of an element of an array value, with or without the rare fields."""
        return _value_types(self, rare)

    def parse_options(self, multiline: bool = False, rare: bool = True) -> pj.ParseOptions:
        """pyarrow's options for this spelling; ``multiline``: JSON values written over several lines each;
        ``rare``: with the rare value fields (``schema``)."""
        return _parse_options(self, multiline, rare)

    def learn(self, error: str) -> Spelling | None:
        """The spelling that pyarrow's type error says the input uses, or None if the error says nothing of it.

        pyarrow reports ``Column(/a/[]/b/kind) changed from number to string``: the schema expected the
        first type, the input has the second.
        """
        m = _CHANGED.search(error)
        if not m:
            return None
        path, found = m.group(1).split("/"), m.group(3)
        last = path[-1] if path else ""
        parent = path[-2] if len(path) > 1 else ""
        if last == "kind" and found in ("string", "number"):
            return replace(self, kind_names=found == "string")
        if last == "code" and parent == "status" and found in ("string", "number"):
            return replace(self, code_names=found == "string")
        if last in ("startTimeUnixNano", "endTimeUnixNano", "timeUnixNano", "start_time_unix_nano",
                    "end_time_unix_nano", "time_unix_nano") and found in ("string", "number"):
            return replace(self, time_numbers=found == "number")
        if last in ("intValue", "int_value") and found in ("string", "number"):
            return replace(self, int_numbers=found == "number")
        return None

    @staticmethod
    def sniff(head: bytes) -> Spelling:
        """The spelling the first line of ``head`` shows: the loader's first guess for a file, so a file in one
        spelling is parsed once. Only a guess: what pyarrow reports still corrects it (``learn``)."""
        # each field as its first occurrence spells it: a search that stops there, not a scan of the whole head
        # for a spelling the line may not use (such scans of each line were most of cutting a piece of lines in
        # several spellings by spelling); a field the line does not show is guessed the canonical way
        return Spelling(*(seen is True for seen in Spelling.clues(head)))

    @staticmethod
    def clues(head: bytes) -> tuple[bool | None, ...]:
        """What the first line of ``head`` shows of each of ``sniff``'s guesses (in the order of the fields), None
        where it shows nothing (a line with no span kind, say): two lines that show a field spelt two ways are not
        in one spelling. Each field is looked for with ``find`` within the line, in the names its envelope is spelt
        in (a regular expression searched at a tenth of that speed, and a line that holds no status code, say, is
        searched to its end)."""
        begin = _LINE_START.match(head).end()                           # type: ignore[union-attr]
        end = head.find(b"\n", begin)
        end = len(head) if end < 0 else end
        camel = _key_at(head, b'"resourceSpans"', begin, end)
        snake = None if camel is not None else _key_at(head, b'"resource_spans"', begin, end)
        names = slice(0, 1) if camel is not None else slice(1, 2) if snake is not None else slice(None)
        kind, code = _first_value(head, begin, end, b'"kind"'), _first_value(head, begin, end, b'"code"')
        time = _first_value(head, begin, end, *_TIME_KEYS[names])
        integer = _first_value(head, begin, end, *_INT_KEYS[names])
        return (None if camel is None and snake is None else camel is None,
                None if kind is None else kind == b'"', None if code is None else code == b'"',
                None if time is None else time in _DIGITS, None if integer is None else integer in _DIGITS,
                _SNIFF_WRAPPED.match(head, begin, end) is not None)

    def alternatives(self) -> list[Spelling]:
        """Other shapes of the envelope to try when a piece parses but holds no resourceSpans."""
        return [replace(self, snake=s, wrapped=w) for w in (self.wrapped, not self.wrapped)
                for s in (self.snake, not self.snake) if (s, w) != (self.snake, self.wrapped)]


CANONICAL = Spelling()          # the protobuf JSON mapping (lowerCamelCase, numbers as written): the default

_CHANGED = re.compile(r"Column\(([^)]*)\) changed from (\w+) to (\w+)")
_TIME_KEYS: tuple[bytes, ...] = (b'"startTimeUnixNano"', b'"start_time_unix_nano"')     # camelCase, snake_case
_INT_KEYS: tuple[bytes, ...] = (b'"intValue"', b'"int_value"')
_DIGITS = frozenset(bytes([c]) for c in b"-0123456789")
_SNIFF_WRAPPED = re.compile(rb'\s*\{\s*"result"\s*:')
_LINE_START = re.compile(rb"\s*\[?")                # the first line: after white space (and an array's bracket)
_BLANK = b" \t\r\n\f\v"


def _key_at(text: bytes, key: bytes, begin: int, end: int) -> int | None:
    """Where the first value of the field ``key`` (quoted) starts in ``text[begin:end]``: the text after its colon,
    white space skipped; None when no such field is there (the text quoted as a value is no field)."""
    at = text.find(key, begin, end)
    while at >= 0:
        i = at + len(key)
        while i < end and text[i] in _BLANK:
            i += 1
        if i < end and text[i] == 58:          # ":"
            i += 1
            while i < end and text[i] in _BLANK:
                i += 1
            if i < end:
                return i
        at = text.find(key, at + 1, end)
    return None


def _first_value(text: bytes, begin: int, end: int, *keys: bytes) -> bytes | None:
    """The first character of the first value of any of the fields ``keys`` in ``text[begin:end]``, or None."""
    found = [i for key in keys if (i := _key_at(text, key, begin, end)) is not None]
    return text[min(found):min(found) + 1] if found else None


@cache
def _value_types(sp: Spelling, rare: bool) -> tuple[pa.DataType, pa.DataType]:
    name = sp.name_of
    integer = pa.int64() if sp.int_numbers else pa.string()
    common = [(name("stringValue"), pa.string()), (name("intValue"), integer), (name("doubleValue"), pa.float64()),
              (name("boolValue"), pa.bool_())]
    scalar = pa.struct([*common, (name("bytesValue"), pa.string())] if rare else common)
    nested = [(name("arrayValue"), pa.struct([("values", pa.list_(scalar))]))]
    if rare:
        nested.append((name("kvlistValue"), pa.struct([("values", pa.list_(pa.struct([("key", pa.string()),
                                                                                  ("value", scalar)])))])))
    return pa.struct([*scalar, *nested]), scalar


@cache
def _schema(sp: Spelling, rare: bool = True) -> pa.Schema:
    name = sp.name_of
    time = pa.uint64() if sp.time_numbers else pa.string()
    value, _ = _value_types(sp, rare)
    attrs = pa.list_(pa.struct([("key", pa.string()), ("value", value)]))
    span = pa.struct([
        (name("traceId"), pa.string()), (name("spanId"), pa.string()), (name("parentSpanId"), pa.string()),
        ("name", pa.string()), ("kind", pa.string() if sp.kind_names else pa.int64()),
        (name("startTimeUnixNano"), time), (name("endTimeUnixNano"), time), ("attributes", attrs),
        ("events", pa.list_(pa.struct([(name("timeUnixNano"), time), ("name", pa.string()), ("attributes", attrs)]))),
        ("links", pa.list_(pa.struct([(name("traceId"), pa.string()), (name("spanId"), pa.string()),
                                      ("attributes", attrs)]))),
        ("status", pa.struct([("code", pa.string() if sp.code_names else pa.int64()), ("message", pa.string())])),
    ])
    scope_spans = pa.list_(pa.struct([("scope", pa.struct([("name", pa.string())])), ("spans", pa.list_(span))]))
    library_spans = pa.list_(pa.struct([("instrumentationLibrary", pa.struct([("name", pa.string())])),
                                        ("spans", pa.list_(span))]))
    resource_spans = pa.list_(pa.struct([
        ("resource", pa.struct([("attributes", attrs)])),
        (name("scopeSpans"), scope_spans),
        (name("instrumentationLibrarySpans"), library_spans),
    ]))
    request = pa.struct([(name("resourceSpans"), resource_spans)])
    if sp.wrapped:
        return pa.schema([("result", request)])
    return pa.schema(list(request))


@cache
def _parse_options(sp: Spelling, multiline: bool, rare: bool) -> pj.ParseOptions:
    return pj.ParseOptions(explicit_schema=_schema(sp, rare), unexpected_field_behavior="ignore",
                           newlines_in_values=multiline)
