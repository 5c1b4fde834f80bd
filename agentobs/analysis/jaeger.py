"""Read traces from Jaeger's API v3 by service and time window, paged by splitting the window.

Jaeger answers ``/api/v3/traces`` with at most ``query.num_traces`` traces and no paging
token, so a window that comes back full is split in two and each half asked again, until
every answer holds fewer traces than the page size. Traces are merged by id.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

from ..errors import InputError
from .otlp import SpanSet, load_request
from .quality import DataQuality

DEFAULT_SINCE = timedelta(hours=24)
PAGE = 200


@dataclass(frozen=True)
class JaegerSource:
    base: str                  # http://host:16686
    services: tuple[str, ...]  # empty: every service Jaeger knows
    start: datetime
    end: datetime
    page: int = PAGE

    @property
    def label(self) -> str:
        return f"jaeger {self.base} {','.join(self.services) or '*'} {self.start:%Y-%m-%dT%H:%M}..{self.end:%H:%M}"


def is_jaeger_url(text: str) -> bool:
    return text.startswith(("http://", "https://", "jaeger://", "jaeger+http://", "jaeger+https://"))


def parse_url(text: str, now: datetime | None = None) -> JaegerSource:
    """``http://host:16686?service=S&since=2h&until=...&page=200`` (since/until: durations or RFC 3339)."""
    now = now or datetime.now(timezone.utc)
    raw = text.replace("jaeger+", "", 1)
    if raw.startswith("jaeger://"):
        raw = "http://" + raw[len("jaeger://"):]
    u = urllib.parse.urlsplit(raw)
    if not u.hostname:
        raise InputError(f"{text!r} is not a Jaeger URL: use http://HOST:16686?service=NAME&since=2h")
    q = urllib.parse.parse_qs(u.query)
    services = tuple(s for v in q.get("service", []) for s in v.split(",") if s)
    end = _when(q.get("until", [None])[0], now, now)
    start = _when(q.get("since", [None])[0], now, now - DEFAULT_SINCE)
    if start >= end:
        raise InputError(f"{text!r}: since must be before until")
    try:
        page = int(q.get("page", [PAGE])[0])
    except ValueError:
        raise InputError(f"{text!r}: page must be an integer") from None
    base = f"{u.scheme}://{u.netloc}{u.path.rstrip('/')}"
    return JaegerSource(base, services, start, end, max(1, page))


def _when(value: str | None, now: datetime, default: datetime) -> datetime:
    if value is None:
        return default
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    if value[-1:] in units and value[:-1].replace(".", "", 1).isdigit():
        return now - timedelta(seconds=float(value[:-1]) * units[value[-1]])
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"time {value!r}: use a duration like 2h or 30m, or an RFC 3339 timestamp") from None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _get(url: str, timeout: float = 30.0) -> tuple[int, Any]:
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        body = exc.read()
        try:
            return exc.code, json.loads(body or b"null")
        except ValueError:
            return exc.code, None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise InputError(f"Jaeger at {url.split('/api/')[0]} cannot be reached: {getattr(exc, 'reason', exc)}") from None


def services(base: str) -> list[str]:
    status, body = _get(f"{base}/api/v3/services")
    if status != 200 or not isinstance(body, dict):
        raise InputError(f"Jaeger at {base} did not list its services (HTTP {status})")
    return [s for s in body.get("services") or [] if isinstance(s, str)]


def _rfc3339(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def fetch(src: JaegerSource, progress: Callable[[int], None] | None = None) -> SpanSet:
    q = DataQuality()
    names = list(src.services) or [s for s in services(src.base) if s not in ("jaeger", "jaeger-all-in-one")]
    requests: list[dict[str, Any]] = []
    seen: set[str] = set()
    for service in names:
        _window(src, service, src.start, src.end, requests, seen, q, progress, depth=0)
    parts = [load_request(r, src.label, q) for r in requests]
    out = SpanSet.concat(parts) if parts else SpanSet(quality=q)
    out.quality = q
    out.sources = [src.label]
    return out


def _window(src: JaegerSource, service: str, start: datetime, end: datetime, out: list[dict[str, Any]],
            seen: set[str], q: DataQuality, progress: Callable[[int], None] | None, depth: int) -> None:
    params = urllib.parse.urlencode({"query.service_name": service, "query.start_time_min": _rfc3339(start),
                                     "query.start_time_max": _rfc3339(end), "query.num_traces": src.page})
    status, body = _get(f"{src.base}/api/v3/traces?{params}")
    if status == 404:
        return                                   # Jaeger says "No traces found" with a 404
    if status != 200 or not isinstance(body, dict) or not isinstance(body.get("result"), dict):
        q.add("source_error", src.label, example=f"HTTP {status} for {service} {_rfc3339(start)}..{_rfc3339(end)}")
        return
    result = body["result"]
    trace_ids = _trace_ids(result)
    if len(trace_ids) >= src.page and (end - start) > timedelta(milliseconds=2) and depth < 40:
        mid = start + (end - start) / 2
        _window(src, service, start, mid, out, seen, q, progress, depth + 1)
        _window(src, service, mid, end, out, seen, q, progress, depth + 1)
        return
    new = trace_ids - seen
    if not new:
        return
    seen |= new
    out.append(_only(result, new))
    if progress:
        progress(len(new))


def _trace_ids(result: dict[str, Any]) -> set[str]:
    ids = set()
    for rs in result.get("resourceSpans") or []:
        for ss in rs.get("scopeSpans") or []:
            for s in ss.get("spans") or []:
                if isinstance(s, dict) and isinstance(s.get("traceId"), str):
                    ids.add(s["traceId"])
    return ids


def _only(result: dict[str, Any], keep: set[str]) -> dict[str, Any]:
    """The request restricted to traces not loaded yet (windows overlap at their edges)."""
    out = []
    for rs in result.get("resourceSpans") or []:
        scopes = []
        for ss in rs.get("scopeSpans") or []:
            spans = [s for s in ss.get("spans") or [] if isinstance(s, dict) and s.get("traceId") in keep]
            if spans:
                scopes.append({**ss, "spans": spans})
        if scopes:
            out.append({**rs, "scopeSpans": scopes})
    return {"resourceSpans": out}


def fetch_trace(base: str, trace_id: str) -> SpanSet:
    status, body = _get(f"{base}/api/v3/traces/{trace_id}")
    if status != 200 or not isinstance(body, dict) or not isinstance(body.get("result"), dict):
        raise InputError(f"trace {trace_id} not found in Jaeger at {base} (HTTP {status})")
    return load_request(body["result"], f"jaeger {base}")
