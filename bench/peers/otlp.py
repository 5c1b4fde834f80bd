"""The benchmark's traces as OTLP/HTTP requests, and a sender that posts them as an SDK exporter would.

``requests_for(path)`` turns each line of an OTLP JSON lines file (one export request per line) into the
protobuf ``ExportTraceServiceRequest`` bytes that an OpenTelemetry SDK's OTLP/HTTP exporter sends (protobuf's
JSON mapping, ids as base64; ``bench/spellings_data.py``), cached next to the file. ``post_all`` posts them one
after the other (``Content-Type: application/x-protobuf``), retrying a request answered 429, 502, 503 or 504
with exponential backoff (1, 2, 4, 8, 16, 32 s: the SDK exporters' schedule, about a minute in all), as one
``BatchSpanProcessor`` export thread does; what is still refused after that is counted as dropped.
"""
from __future__ import annotations

import struct
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

RETRY_ON = (429, 502, 503, 504)
BACKOFF = (1, 2, 4, 8, 16, 32)


def requests_for(path: Path) -> list[tuple[int, bytes]]:
    """(spans, serialized ExportTraceServiceRequest) per line of ``path``; cached as ``<path>.otlp.pb``."""
    cache = path.with_name(path.name + ".otlp.pb")
    if not cache.exists():
        import json

        from .. import spellings_data
        tmp = cache.with_name(cache.name + ".partial")
        with open(path, encoding="utf-8") as src, open(tmp, "wb") as dst:
            for line in src:
                if not line.strip():
                    continue
                req = json.loads(line)
                n = sum(len(ss.get("spans", [])) for rs in req["resourceSpans"] for ss in rs.get("scopeSpans", []))
                data = spellings_data._message(req).SerializeToString()
                dst.write(struct.pack("<II", n, len(data)))
                dst.write(data)
        tmp.replace(cache)
    out = []
    with open(cache, "rb") as f:
        while head := f.read(8):
            n, size = struct.unpack("<II", head)
            out.append((n, f.read(size)))
    return out


@dataclass
class Sent:
    spans_sent: int = 0
    spans_accepted: int = 0          # in requests answered 2xx (possibly after retries)
    requests: int = 0
    retries: int = 0
    dropped_requests: int = 0        # still refused after the last retry, or a non-retryable answer
    answers: dict[str, int] = field(default_factory=dict)   # HTTP status (or error) -> count, retries included
    first_post: float = 0.0          # time.monotonic()
    last_answer: float = 0.0

    @property
    def seconds(self) -> float:
        return self.last_answer - self.first_post


def post_all(url: str, requests: list[tuple[int, bytes]], headers: dict[str, str] | None = None,
             timeout: float = 60.0) -> Sent:
    s = Sent(first_post=time.monotonic())
    hdrs = {"Content-Type": "application/x-protobuf", **(headers or {})}
    for n, data in requests:
        s.spans_sent += n
        s.requests += 1
        for attempt in range(len(BACKOFF) + 1):
            code = _post(url, data, hdrs, timeout)
            s.answers[code] = s.answers.get(code, 0) + 1
            if code.isdigit() and 200 <= int(code) < 300:
                s.spans_accepted += n
                break
            if attempt < len(BACKOFF) and (not code.isdigit() or int(code) in RETRY_ON):
                s.retries += 1
                time.sleep(BACKOFF[attempt])
                continue
            s.dropped_requests += 1
            break
    s.last_answer = time.monotonic()
    return s


def _post(url: str, data: bytes, headers: dict[str, str], timeout: float) -> str:
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
            return str(r.status)
    except urllib.error.HTTPError as e:
        return str(e.code)
    except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
        return type(e).__name__
