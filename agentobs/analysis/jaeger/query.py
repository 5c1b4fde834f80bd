"""Read traces from Jaeger's API v3 by service and time window, paged by splitting the window.

Jaeger answers ``/api/v3/traces`` with at most ``query.num_traces`` traces and no paging
token, so a window that comes back full is split in two and each half asked again, until
every answer holds fewer traces than the page size. Traces are merged by id; each answer is
decoded on its own, so one bad answer loses only itself. An answer is read by the loader's fast path straight from
its bytes (as a saved Jaeger answer is: ``{"result": ...}``), not parsed into Python objects first, which took about
ten times the time and held many times the answer's size in memory.

A query is bounded (``JaegerLimits``, resolved once: explicit argument >
``AGENTOBS_JAEGER_*`` environment variable > default): an overall deadline, a size cap per
answer and a cap on the number of requests. A lost request is a counted ``source_error`` and
the query goes on; a query where nothing could be read is an ``InputError``. Credentials in
the URL (``http://user:pw@host``) are sent as HTTP Basic auth and never shown: labels and
messages carry the URL without them (``redact``).
"""
from __future__ import annotations

import base64
import os
import re
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from ...errors import ConfigError, InputError
from ..input import remote
from ..input.json_stream import Broken, Reader
from ..input.limits import InputLimits
from ..input.timespec import parse_time
from ..otlp.ids import trace_id_of
from ..otlp.load import load_bytes, load_requests
from ..spans.quality import DataQuality
from ..spans.spanset import SpanSet
from ._http import Client, DeadlinePassed, RequestFailed, without_userinfo

DEFAULT_SINCE = timedelta(hours=24)
PAGE = 200
MIN_WINDOW = timedelta(milliseconds=2)       # a full window this short is not split further
PARAMS = ("service", "since", "until", "page")

ENV_MAX_BYTES = "AGENTOBS_JAEGER_MAX_BYTES"
ENV_DEADLINE_S = "AGENTOBS_JAEGER_DEADLINE_S"
ENV_MAX_REQUESTS = "AGENTOBS_JAEGER_MAX_REQUESTS"
_LONGEST_S = 365 * 86400.0      # a longer deadline (inf too) is a year: past threading.TIMEOUT_MAX, the watchdog's
                                # timer raised OverflowError in its thread


# -- settings ---------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class JaegerLimits:
    """Bounds of one Jaeger query (one source)."""
    max_bytes: int = 256 * 2**20     # per answer
    deadline_s: float = 120.0        # for every request of the query together, slow bodies included
    max_requests: int = 500          # per query: bounds the splitting of full windows


def resolve_limits(*, max_bytes: int | None = None, deadline_s: float | None = None, max_requests: int | None = None,
                   env: Mapping[str, str] | None = None) -> JaegerLimits:
    """Explicit argument > environment variable > default, for every limit; a value <= 0 is a ConfigError."""
    env = os.environ if env is None else env
    d = JaegerLimits()
    return JaegerLimits(max_bytes=int(_setting(max_bytes, env, ENV_MAX_BYTES, d.max_bytes, int)),
                        deadline_s=min(float(_setting(deadline_s, env, ENV_DEADLINE_S, d.deadline_s, float)),
                                       _LONGEST_S),
                        max_requests=int(_setting(max_requests, env, ENV_MAX_REQUESTS, d.max_requests, int)))


def _setting(value: float | None, env: Mapping[str, str], name: str, default: float,
             kind: Callable[[str], float]) -> float:
    if value is None:
        raw = env.get(name, "").strip()
        if not raw:
            return default
        try:
            value = kind(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r} must be a {'whole ' if kind is int else ''}number") from None
    if not value > 0:
        raise ConfigError(f"{name} must be positive, got {value!r}")
    return value


# -- the source -------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class JaegerSource:
    base: str                  # http://host:16686, never with userinfo
    services: tuple[str, ...]  # empty: every service Jaeger knows
    start: datetime
    end: datetime
    page: int = PAGE
    since_given: bool = False  # the URL set since= (else the window starts DEFAULT_SINCE back from now)
    until_given: bool = False  # the URL set until= (else it ends now)
    credentials: tuple[str, str] | None = field(default=None, repr=False, compare=False)   # (user, password)

    @property
    def label(self) -> str:
        return f"jaeger {self.base} {','.join(self.services) or '*'} {self.start:%Y-%m-%dT%H:%M}..{self.end:%H:%M}"

    @property
    def authorization(self) -> str | None:
        if self.credentials is None:
            return None
        return "Basic " + base64.b64encode(":".join(self.credentials).encode()).decode("ascii")


_SCHEMES = ("http", "https", "jaeger", "jaeger+http", "jaeger+https")


def is_jaeger_url(text: str) -> bool:
    """``http://``, ``https://``, ``jaeger://``, ``jaeger+http(s)://``, in any case (URL schemes are
    case-insensitive, RFC 3986 3.1)."""
    return remote.scheme(text) in _SCHEMES


def redact(text: str) -> str:
    """A source URL as it may be shown: no userinfo, and no value of a query parameter other than ours."""
    text = remote.hide_userinfo(text)
    try:
        u = urllib.parse.urlsplit(text)
        pairs = urllib.parse.parse_qsl(u.query, keep_blank_values=True)
    except ValueError:
        return "(an unparsable URL)"
    query = urllib.parse.urlencode([(k, v if k in PARAMS else "***") for k, v in pairs], safe="*,:")
    return urllib.parse.urlunsplit((u.scheme, without_userinfo(u.netloc), u.path, query, ""))



def parse_url(text: str, now: datetime | None = None) -> JaegerSource:
    """``http://[user:pw@]host:16686?service=S&since=2h&until=...&page=200`` (since/until: durations or RFC 3339)."""
    now = now or datetime.now(UTC)
    shown = redact(text)
    sch, _, rest = text.partition("://")
    sch = sch.lower().removeprefix("jaeger+")
    raw = f"{'http' if sch == 'jaeger' else sch}://{rest}"
    try:
        u = urllib.parse.urlsplit(raw)
        u.port                                           # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        authority = re.split(r"[/?#]", rest, maxsplit=1)[0]           # as urlsplit reads it
        if "@" in rest and "@" not in authority:
            raise _reserved_in_userinfo(shown) from None
        raise InputError(f"{shown!r} is not a Jaeger URL (bad host or port): "
                         "use http://HOST:16686?service=NAME&since=2h") from None
    if not u.hostname:
        raise InputError(f"{shown!r} is not a Jaeger URL: use http://HOST:16686?service=NAME&since=2h")
    if "@" in u.path or "@" in u.fragment:
        raise _reserved_in_userinfo(shown)
    q = urllib.parse.parse_qs(u.query)
    services = tuple(s for v in q.get("service", []) for s in v.split(",") if s)
    end = _when(q.get("until", [None])[0], now, now)
    start = _when(q.get("since", [None])[0], now, now - DEFAULT_SINCE)
    if start >= end:
        raise InputError(f"{shown!r}: since must be before until")
    try:
        page = int(q.get("page", [PAGE])[0])
    except ValueError:
        raise InputError(f"{shown!r}: page must be an integer") from None
    base = f"{u.scheme}://{without_userinfo(u.netloc)}{u.path.rstrip('/')}"
    credentials = None
    if u.username is not None or u.password is not None:
        credentials = (urllib.parse.unquote(u.username or ""), urllib.parse.unquote(u.password or ""))
    return JaegerSource(base=base, services=services, start=start, end=end, page=max(1, page), credentials=credentials,
                        since_given="since" in q, until_given="until" in q)


def _reserved_in_userinfo(shown: str) -> InputError:
    """User info with "/", "?" or "#" in it: urlsplit takes part of the password for the host (or its port), and a
    request would go there with the rest of the password in its path."""
    return InputError(f"{shown!r}: the user name or password holds '/', '?' or '#': percent-encode them "
                      "(%2F, %3F, %23)")


def _when(value: str | None, now: datetime, default: datetime) -> datetime:
    """``since``/``until``: a duration back from now (``2h``) or an ISO 8601 / RFC 3339 time, in UTC
    (``timespec``, as ``--since``/``--until`` read it)."""
    return default if value is None else parse_time(value, now)


def _utc(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _rfc3339(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# -- the query --------------------------------------------------------------------------------------

@dataclass
class _Tally:
    answered: int = 0                  # usable answers (200, or 404 "no traces found")
    failed: int = 0
    first_failure: str | None = None
    traces: int = 0
    capped: int = 0                    # windows left full, or not asked, because of the request cap
    crowded: int = 0                   # full windows too short to split
    deadline: bool = False


def fetch(src: JaegerSource, progress: Callable[[int], None] | None = None, *,
          limits: JaegerLimits | None = None) -> SpanSet:
    """The traces of the source's services in its window. Raises InputError when nothing could be read."""
    lim = limits or resolve_limits()
    q = DataQuality()
    parts: list[SpanSet] = []
    t = _Tally()
    with Client(deadline_s=lim.deadline_s, max_bytes=lim.max_bytes, authorization=src.authorization) as client:
        try:
            names, t.capped = (list(src.services), 0) if src.services else _service_names(client, src,
                                                                                        lim.max_requests)
            _walk(client, src, lim, names=names, parts=parts, q=q, t=t, progress=progress)
        except DeadlinePassed:
            t.deadline = True
        requests = client.requests
    _conclude(src, lim, q, t, requests)
    out = SpanSet.concat(parts) if parts else SpanSet(quality=q)
    out.quality = q
    out.sources = [src.label]
    return out


def fetch_trace(src: JaegerSource, trace_id: str, *, limits: JaegerLimits | None = None) -> SpanSet | None:
    """One trace by its id (``trace_id``: 32 lower-case hex digits), asked of API v3's trace endpoint: one request,
    whatever the trace's age or service, where a search would read every trace of the source's window (24 hours by
    default) and miss an older one. A trace Jaeger does not hold gives no span. None when the endpoint gives no
    answer to go by (it failed, or a proxy answered something else): the caller then searches the window. The
    query's deadline passing is an InputError."""
    lim = limits or resolve_limits()
    with Client(deadline_s=lim.deadline_s, max_bytes=lim.max_bytes, authorization=src.authorization) as client:
        try:
            status, body = client.get(f"{src.base}/api/v3/traces/{urllib.parse.quote(trace_id)}")
            if status == 404 and isinstance(body, dict):      # Jaeger's "No traces found"
                return SpanSet(quality=DataQuality(), sources=[src.label])
            if status != 200 or not _ANSWER.match(body):
                return None
            part, got = _load(body, src.label)
        except RequestFailed:
            return None
        except DeadlinePassed:              # (a search of the window would wait as long again)
            raise InputError(f"Jaeger at {src.base}: the deadline of {lim.deadline_s:g} s passed before the trace was "
                             f"read. Raise {ENV_DEADLINE_S}") from None
    got.files = got.lines = 0
    part.quality, part.sources = got, [src.label]
    return part


def fetch_linked(src: JaegerSource, got: SpanSet, start: datetime, *, limits: JaegerLimits | None = None
                 ) -> SpanSet:
    """``got`` (an answer of ``fetch``) with the traces its span links point to and it does not hold (the earlier
    segments of a task resumed in the window), asked for by id, and those they link to in turn: each kept when one
    of its spans starts from ``start`` to the end of the source's window (what a search of that window would have
    returned), within the query's request cap. A trace that cannot be read is a counted ``source_error``."""
    lim = limits or resolve_limits()
    lo, hi = _ns(start), _ns(src.end)
    have = set(got.spans["trace_id"].astype(str)) if len(got.spans) else set()
    todo = sorted(_linked(got) - have)
    parts, asked = [got], 0
    while todo and asked < lim.max_requests:
        tid = todo.pop(0)
        have.add(tid)
        asked += 1
        one = fetch_trace(src, tid, limits=lim)
        if one is None:
            got.quality.add("source_error", src.label, example=f"trace {tid}, linked from the window: no answer")
            continue
        starts = one.spans["start_ns"].dropna().to_numpy(dtype="int64") if len(one.spans) else []
        if not any(lo <= t <= hi for t in starts):
            continue
        parts.append(one)
        todo += sorted(_linked(one) - have - set(todo))
    if todo:
        got.quality.add("source_error", src.label, count=len(todo),
                        example=f"the request cap ({lim.max_requests}, {ENV_MAX_REQUESTS}) left {len(todo)} linked "
                                "traces not asked")
    if len(parts) == 1:
        return got
    out = SpanSet.concat(parts)
    out.quality, out.sources, out.spellings = got.quality, got.sources, got.spellings
    for part in parts[1:]:
        out.quality.extend(part.quality)
    return out


def _linked(ss: SpanSet) -> set[str]:
    links = ss.links
    if links.empty or "linked_trace_id" not in links.columns:
        return set()
    return set(links["linked_trace_id"].dropna().astype(str))


def _ns(t: datetime) -> int:
    delta = t - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000


def _service_names(client: Client, src: JaegerSource, most: int) -> tuple[list[str], int]:
    """The services Jaeger lists (its own left out), the first ``most`` of them (no query asks more windows than
    its request cap), and how many more it listed. The list is read a name at a time (a list of millions of names is
    never held whole)."""
    try:
        status, body = client.get(f"{src.base}/api/v3/services")
    except RequestFailed as exc:
        raise InputError(f"Jaeger at {src.base} did not list its services: {exc.reason}") from None
    except DeadlinePassed:
        raise InputError(f"Jaeger at {src.base} did not list its services within the deadline "
                         f"({ENV_DEADLINE_S} sets it)") from None
    if status != 200:
        raise InputError(f"Jaeger at {src.base} did not list its services (HTTP {status})")
    names: dict[str, None] = {}
    more = 0
    try:
        r = Reader(memoryview(body))
        if r.kind() != "{":
            raise _NotServices
        for key in r.members():
            if key != "services" or r.kind() == "n":                   # (Jaeger writes {} for no service)
                continue
            if r.kind() != "[":
                raise _NotServices
            for _ in r.elements():
                name = r.value()
                if not isinstance(name, str):
                    raise _NotServices
                if name in _JAEGER_ITSELF or name in names:
                    continue
                if len(names) < most:
                    names[name] = None
                else:
                    more += 1
        if not r.at_end():
            raise _NotServices
    except Broken as exc:
        raise InputError(f"Jaeger at {src.base} did not list its services: the answer is not JSON ({exc})") from None
    except _NotServices:
        raise InputError(f"Jaeger at {src.base} did not list its services: the answer is not a Jaeger API v3 "
                         "services list ({\"services\": [names]}); check the URL's base path") from None
    return list(names), more


_JAEGER_ITSELF = frozenset({"jaeger", "jaeger-all-in-one"})


class _NotServices(Exception):
    """The answer is JSON, but not a services list."""


def _walk(client: Client, src: JaegerSource, lim: JaegerLimits, *, names: list[str], parts: list[SpanSet],
          q: DataQuality, t: _Tally, progress: Callable[[int], None] | None) -> None:
    """Depth first over the windows, earliest first. A full window is split only while the request cap
    leaves room for both halves and for every window still waiting: each window is asked at least once."""
    todo = [(service, src.start, src.end) for service in reversed(names)]
    seen: set[str] = set()
    while todo:
        if client.requests >= lim.max_requests:
            t.capped += len(todo)
            return
        service, start, end = todo.pop()
        where = f"service {service} {_utc(start)}..{_utc(end)}"
        try:
            result = _ask(client, src, service, start, end)
            loaded = None if result is None else _load(result, src.label)
        except RequestFailed as exc:
            t.failed += 1
            t.first_failure = t.first_failure or f"{exc.reason} ({where})"
            q.add("source_error", src.label, example=f"{where}: {exc.reason}")
            continue
        t.answered += 1
        if result is None or loaded is None:        # (the one is None when the other is)
            continue
        part, got = loaded
        ids = set(part.spans["trace_id"].astype(str).tolist())
        if len(ids) >= src.page:
            if end - start <= MIN_WINDOW:
                t.crowded += 1
            elif client.requests + len(todo) + 2 <= lim.max_requests:
                mid = start + (end - start) / 2
                todo += [(service, mid, end), (service, start, mid)]
                continue
            else:
                t.capped += 1
        new = ids - seen
        if new != ids and got.issues:
            # traces loaded from an earlier window (windows overlap at their edges) whose problems this answer
            # counted again: the answer is decoded without them, a resource's spans at a time
            part = load_requests(_without(result, seen), src.label, q)
        else:
            _keep_traces(part, new)
            got.files = got.lines = 0
            q.extend(got)
        seen |= new
        if part.spans.empty:
            continue
        parts.append(part)                  # one answer at a time: a bad one loses only itself
        t.traces += len(new)
        if progress:
            progress(len(new))


_ANSWER = re.compile(rb'\s*\{\s*"result"\s*:\s*\{')       # how Jaeger writes its answers: the result first


def _ask(client: Client, src: JaegerSource, service: str, start: datetime, end: datetime
         ) -> bytes | bytearray | None:
    """The answer (``{"result": {...}}``, as bytes), or None for Jaeger's 404 "No traces found"."""
    params = urllib.parse.urlencode({"query.service_name": service, "query.start_time_min": _rfc3339(start),
                                     "query.start_time_max": _rfc3339(end), "query.num_traces": src.page})
    status, body = client.get(f"{src.base}/api/v3/traces?{params}")
    if status == 404:
        if isinstance(body, dict):              # Jaeger's "No traces found" (a JSON error object)
            return None
        raise RequestFailed("HTTP 404 that is not Jaeger's answer: check the URL's host, port and base path")
    if status != 200:
        raise RequestFailed(f"HTTP {status}")
    if not _ANSWER.match(body):
        _result_opens(body)         # another layout (not Jaeger's own): what is no answer fails as one request
    return body                     # (a bytearray: not copied)


def _load(answer: bytes | bytearray, label: str) -> tuple[SpanSet, DataQuality]:
    """The answer's spans (unchecked) and what its decoding counted. An answer that gave no span and counted
    problems is looked at as JSON: what is no answer (not JSON, no result object) fails as its request, naming the
    window, as before the fast path."""
    got = DataQuality()
    # an answer is one line, already bounded by the size cap: a longer line than files may hold is parsed whole by
    # the fast path, not read value by value (an answer of 68 MiB: 0.9 s against 1.2 s)
    limits = InputLimits.resolve()
    limits = replace(limits, max_line_bytes=max(limits.max_line_bytes, len(answer) + 1))
    part = load_bytes(answer, label, got, limits=limits)
    if part.spans.empty and got.issues:
        for _ in _resource_spans(answer):
            pass                    # what is no answer (not JSON, no result object) fails as its request
    return part, got


def _result_opens(answer: bytes | bytearray) -> None:
    """RequestFailed when the answer does not open as a Jaeger API v3 answer: an object with a ``result`` object (the
    members before it are read a value at a time, the result itself not at all)."""
    r = Reader(memoryview(answer))
    try:
        if r.kind() == "{":
            for key in r.members():
                if key == "result" and r.kind() == "{":
                    return
    except Broken as exc:
        raise RequestFailed(f"the answer is not JSON ({exc})") from None
    raise RequestFailed("not a Jaeger API v3 answer (no result object)")


def _resource_spans(answer: bytes | bytearray) -> Iterator[Any]:
    """The elements of the answer's ``result.resourceSpans``, a value at a time (an answer is never parsed whole:
    its Python objects took many times its size); RequestFailed, once they have been read, when the answer is not
    JSON or no Jaeger API v3 answer."""
    r = Reader(memoryview(answer))
    found = False
    try:
        if r.kind() != "{":
            raise RequestFailed("not a Jaeger API v3 answer (no result object)")
        for key in r.members():
            if key != "result" or r.kind() != "{":
                continue
            found = True
            for inner in r.members():
                if inner == "resourceSpans" and r.kind() == "[":
                    for _ in r.elements():
                        yield r.value()
        if not r.at_end():
            raise Broken("more text after the answer", r.line)
    except Broken as exc:
        raise RequestFailed(f"the answer is not JSON ({exc})") from None
    if not found:
        raise RequestFailed("not a Jaeger API v3 answer (no result object)")


def _keep_traces(part: SpanSet, ids: set[str]) -> None:
    """Only the spans, events and links of these traces (the answer's others were loaded from an earlier window)."""
    for name in ("spans", "events", "links"):
        frame = getattr(part, name)
        if len(frame):
            setattr(part, name, frame[frame["trace_id"].astype(str).isin(ids)].reset_index(drop=True))


def _conclude(src: JaegerSource, lim: JaegerLimits, q: DataQuality, t: _Tally, requests: int) -> None:
    """Notes for an incomplete query; an InputError when nothing could be read."""
    failed = f"; {t.failed} of {requests} requests failed, first: {t.first_failure}" if t.failed else ""
    if t.deadline:
        if not t.traces:
            raise InputError(f"Jaeger at {src.base}: the deadline of {lim.deadline_s:g} s passed before any trace "
                             f"was read{failed}. Raise {ENV_DEADLINE_S} or ask for less (a shorter window)")
        q.add("source_error", src.label, example=f"the deadline of {lim.deadline_s:g} s ({ENV_DEADLINE_S}) passed "
                                                  f"after {requests} requests: traces may be missing")
    elif t.failed and not t.answered:
        raise InputError(f"Jaeger at {src.base}: every request failed ({t.failed}), first: {t.first_failure}")
    if t.capped:
        q.add("source_error", src.label, count=t.capped,
              example=f"the request cap ({lim.max_requests}, {ENV_MAX_REQUESTS}) left {t.capped} windows full or "
                      "not asked: traces may be missing; narrow the window or raise page= or the cap")
    if t.crowded:
        q.add("source_error", src.label, count=t.crowded,
              example=f"{t.crowded} windows of {MIN_WINDOW.total_seconds() * 1000:g} ms held page={src.page} traces "
                      "or more: traces may be missing; raise page=")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _trace_id(span: Any) -> str | None:
    tid = span.get("traceId") if isinstance(span, dict) else None
    return tid if isinstance(tid, str) else None


_SCOPES = ("scopeSpans", "instrumentationLibrarySpans")     # the second: OTLP before 0.15, as the loader reads it


def _seen(span: Any, seen: set[str]) -> bool:
    """Whether the span's trace was loaded before (ids as the loader writes them); a span without a usable trace id
    was not, and stays for the loader to count."""
    tid = _trace_id(span)
    return tid is not None and trace_id_of(tid) in seen


def _without(answer: bytes | bytearray, seen: set[str]) -> Iterator[dict[str, Any]]:
    """The answer's requests without the traces already loaded (windows overlap at their edges), a resource's spans
    at a time. Spans without a usable trace id stay, for the loader to count."""
    for rs in _resource_spans(answer):
        kept = {}
        for name in _SCOPES:
            scopes = []
            for ss in _list(rs.get(name)) if isinstance(rs, dict) else []:
                keep = [s for s in _list(ss.get("spans")) if not _seen(s, seen)] if isinstance(ss, dict) else []
                if keep:
                    scopes.append({**ss, "spans": keep})
            if scopes:
                kept[name] = scopes
        if kept:
            yield {"resourceSpans": [{**rs, **kept}]}
