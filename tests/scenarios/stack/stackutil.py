"""Helpers of the stack tests: HTTP with the standard library, polling, and one canonical form of a span.

A span is compared across sources (the SDK's in-memory copy, OTLP JSON from Jaeger API v3 or the collector's file
archive, Jaeger's legacy JSON) in one canonical form: ids as lowercase hex, the OTLP kind number, nanosecond
times, the status code and message, attributes as {key: (type, value)}, events and links.
"""
from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]               # the repository


def unique_service(label: str) -> str:
    """A service.name no other test (or earlier run against the same Jaeger and Prometheus) uses."""
    return f"agentobs-test-{re.sub(r'[^a-z0-9]+', '-', label.lower()).strip('-')[:40]}-{uuid.uuid4().hex[:8]}"


# -- HTTP ----------------------------------------------------------------------------------------------------


def get(url: str, params: dict[str, Any] | list[tuple[str, Any]] | None = None, timeout: float = 10.0
        ) -> tuple[int, bytes]:
    if params:
        url = f"{url}{'&' if '?' in url else '?'}{urllib.parse.urlencode(params)}"
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def get_json(url: str, params: dict[str, Any] | list[tuple[str, Any]] | None = None, timeout: float = 10.0
             ) -> tuple[int, Any]:
    status, body = get(url, params, timeout)
    try:
        return status, json.loads(body or b"null")
    except ValueError:
        return status, None


def healthy(url: str) -> bool:
    try:
        status, _ = get(url, timeout=2.0)
        return status == 200
    except OSError:
        return False


def wait_for(fn: Callable[[], Any], what: str, timeout: float = 30.0, interval: float = 0.5) -> Any:
    """Calls ``fn`` until it returns something truthy; fails with ``what`` and the last answer on timeout."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = fn()
        except (OSError, AssertionError, KeyError, ValueError) as exc:   # not up yet, not there yet
            last = exc
        else:
            if last:
                return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last answer: {last!r}"[:2000])
        time.sleep(interval)


def free_ports(n: int) -> list[int]:
    """n distinct TCP ports that were free on 127.0.0.1 a moment ago."""
    socks, ports = [], []
    try:
        while len(ports) < n:
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def listening(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


# -- Prometheus ----------------------------------------------------------------------------------------------


def prom_query(base: str, expr: str, at: float | None = None) -> list[dict[str, Any]]:
    params: dict[str, Any] = {"query": expr}
    if at is not None:
        params["time"] = f"{at:.3f}"
    status, body = get_json(f"{base}/api/v1/query", params)
    assert status == 200 and body and body.get("status") == "success", (expr, status, body)
    return body["data"]["result"]


def prom_range(base: str, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
    status, body = get_json(f"{base}/api/v1/query_range",
                            {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"})
    assert status == 200 and body and body.get("status") == "success", (expr, status, body)
    return body["data"]["result"]


def by_labels(result: list[dict[str, Any]], *labels: str) -> dict[tuple[str, ...], float]:
    """Instant vector -> {(label values...): value}."""
    return {tuple(r["metric"].get(k, "") for k in labels): float(r["value"][1]) for r in result}


# -- Jaeger --------------------------------------------------------------------------------------------------


def rfc3339(t_ns: int) -> str:
    secs, ns = divmod(t_ns, 10**9)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{ns:09d}Z"


def v3_search(base: str, service: str, start_ns: int, end_ns: int, num: int = 1000) -> list[dict[str, Any]]:
    """resourceSpans of every trace of the service in the window ([] when Jaeger answers 404 No traces found)."""
    status, body = get_json(f"{base}/api/v3/traces", {
        "query.service_name": service, "query.start_time_min": rfc3339(start_ns),
        "query.start_time_max": rfc3339(end_ns), "query.num_traces": num})
    if status == 404:
        return []
    assert status == 200 and isinstance(body, dict) and "result" in body, (status, body)
    return body["result"].get("resourceSpans") or []


def v3_trace(base: str, trace_id: str) -> list[dict[str, Any]]:
    status, body = get_json(f"{base}/api/v3/traces/{trace_id}")
    assert status == 200 and isinstance(body, dict) and "result" in body, (trace_id, status, body)
    return body["result"].get("resourceSpans") or []


def legacy_search(base: str, service: str, start_ns: int, end_ns: int, limit: int = 1000,
                  tags: dict[str, str] | None = None) -> list[dict[str, Any]]:
    params: dict[str, Any] = {"service": service, "start": start_ns // 1000, "end": end_ns // 1000, "limit": limit}
    if tags:
        params["tags"] = json.dumps(tags)
    status, body = get_json(f"{base}/api/traces", params)
    assert status == 200 and isinstance(body, dict), (status, body)
    assert not body.get("errors"), body.get("errors")
    return body.get("data") or []


# -- canonical spans -----------------------------------------------------------------------------------------

Value = tuple[str, Any]


@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    parent: str | None
    name: str
    kind: int                                  # OTLP numbering: 1 internal, 2 server, 3 client, ...
    start_ns: int
    end_ns: int
    status: tuple[int, str]                    # (code, message): 0 unset, 1 ok, 2 error
    attributes: dict[str, Value] = field(compare=True, hash=False)
    # sorted: Jaeger's query service sorts a span's events and links (its SortCollections adjuster); each event
    # has its own timestamp, so nothing is lost
    events: tuple[tuple[str, int, tuple[tuple[str, Value], ...]], ...] = ()
    links: tuple[tuple[str, str, tuple[tuple[str, Value], ...]], ...] = ()


def _py_value(v: Any) -> Value:
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, float):
        return ("double", v)
    if isinstance(v, str):
        return ("string", v)
    if isinstance(v, (tuple, list)):
        return ("array", tuple(_py_value(x) for x in v))
    raise TypeError(f"attribute value {v!r}")


def _otlp_value(v: dict[str, Any]) -> Value:
    if "stringValue" in v:
        return ("string", v["stringValue"])
    if "boolValue" in v:
        return ("bool", bool(v["boolValue"]))
    if "intValue" in v:
        return ("int", int(v["intValue"]))
    if "doubleValue" in v:
        return ("double", float(v["doubleValue"]))
    if "arrayValue" in v:
        return ("array", tuple(_otlp_value(x) for x in (v["arrayValue"].get("values") or [])))
    if "kvlistValue" in v:
        return ("kvlist", tuple((kv["key"], _otlp_value(kv["value"])) for kv in v["kvlistValue"].get("values") or []))
    if not v:
        return ("empty", None)
    raise ValueError(f"OTLP value {v!r}")


def _otlp_attrs(attrs: Iterable[dict[str, Any]] | None) -> dict[str, Value]:
    return {a["key"]: _otlp_value(a.get("value") or {}) for a in attrs or []}


def from_memory(spans: Iterable[Any]) -> dict[str, Span]:
    """ReadableSpans (the SDK's InMemorySpanExporter) -> {span_id: Span}."""
    out = {}
    for s in spans:
        sid = f"{s.context.span_id:016x}"
        out[sid] = Span(
            trace_id=f"{s.context.trace_id:032x}", span_id=sid,
            parent=f"{s.parent.span_id:016x}" if s.parent is not None else None,
            name=s.name, kind=s.kind.value + 1, start_ns=s.start_time, end_ns=s.end_time,
            status=(s.status.status_code.value, s.status.description or ""),
            attributes={k: _py_value(v) for k, v in (s.attributes or {}).items()},
            events=tuple(sorted((e.name, e.timestamp, tuple(sorted((k, _py_value(v)) for k, v in
                                                                    (e.attributes or {}).items()))) for e in s.events)),
            links=tuple(sorted((f"{lk.context.trace_id:032x}", f"{lk.context.span_id:016x}",
                                tuple(sorted((k, _py_value(v)) for k, v in (lk.attributes or {}).items())))
                               for lk in s.links)),
        )
    return out


def from_otlp(resource_spans: Iterable[dict[str, Any]]) -> tuple[dict[str, Span], list[dict[str, Value]]]:
    """OTLP JSON resourceSpans -> ({span_id: Span}, [resource attributes of each resourceSpans])."""
    out: dict[str, Span] = {}
    resources = []
    for rs in resource_spans:
        resources.append(_otlp_attrs((rs.get("resource") or {}).get("attributes")))
        for ss in rs.get("scopeSpans") or []:
            for s in ss.get("spans") or []:
                st = s.get("status") or {}
                code = st.get("code", 0)
                if isinstance(code, str):
                    code = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}[code]
                sid = s["spanId"].lower()
                out[sid] = Span(
                    trace_id=s["traceId"].lower(), span_id=sid, parent=(s.get("parentSpanId") or "").lower() or None,
                    name=s["name"], kind=int(s.get("kind", 0)), start_ns=int(s["startTimeUnixNano"]),
                    end_ns=int(s["endTimeUnixNano"]), status=(int(code), st.get("message") or ""),
                    attributes=_otlp_attrs(s.get("attributes")),
                    events=tuple(sorted((e["name"], int(e["timeUnixNano"]),
                                         tuple(sorted(_otlp_attrs(e.get("attributes")).items())))
                                        for e in s.get("events") or [])),
                    links=tuple(sorted((lk["traceId"].lower(), lk["spanId"].lower(),
                                        tuple(sorted(_otlp_attrs(lk.get("attributes")).items())))
                                       for lk in s.get("links") or [])),
                )
    return out, resources


JAEGER_WARNINGS = "@jaeger@warnings"


def without_jaeger_warnings(spans: dict[str, Span]) -> dict[str, Span]:
    """Jaeger's query adjusters add a ``@jaeger@warnings`` attribute (e.g. "parent span ID=... is not in the
    trace; skipping clock skew adjustment" on the spans of a crashed segment whose root never ended). Removes it,
    after checking it is only on spans whose parent is missing from the trace."""
    present = {(s.trace_id, s.span_id) for s in spans.values()}
    out = {}
    for sid, s in spans.items():
        if JAEGER_WARNINGS in s.attributes:
            assert s.parent is not None and (s.trace_id, s.parent) not in present, (s, s.attributes[JAEGER_WARNINGS])
            s = Span(**{**s.__dict__, "attributes": {k: v for k, v in s.attributes.items() if k != JAEGER_WARNINGS}})
        out[sid] = s
    return out


def arrays_as_json_text(spans: dict[str, Span]) -> dict[str, Span]:
    """The spans as Jaeger's storages of its v1 span model (Badger, our default; Elasticsearch, OpenSearch,
    Cassandra) give them back: an array attribute becomes its compact JSON text (``["stop"]``), on spans, events
    and links alike. (Its memory storage keeps OTLP as it came.)"""
    def text(v: Value) -> Value:
        return ("string", json.dumps([x[1] for x in v[1]], separators=(",", ":"), ensure_ascii=False)) \
            if v[0] == "array" else v

    def pairs(items: tuple[tuple[str, Value], ...]) -> tuple[tuple[str, Value], ...]:
        return tuple((k, text(v)) for k, v in items)
    return {sid: Span(**{**s.__dict__, "attributes": {k: text(v) for k, v in s.attributes.items()},
                         "events": tuple((n, t, pairs(a)) for n, t, a in s.events),
                         "links": tuple((t, i, pairs(a)) for t, i, a in s.links)})
            for sid, s in spans.items()}


def by_trace(spans: dict[str, Span]) -> dict[str, dict[str, Span]]:
    out: dict[str, dict[str, Span]] = {}
    for sid, s in spans.items():
        out.setdefault(s.trace_id, {})[sid] = s
    return out


def shape(spans: dict[str, Span]) -> list[tuple[str, str | None, str]]:
    """(span id, parent id, name) sorted: the tree of a trace."""
    return sorted((s.span_id, s.parent, s.name) for s in spans.values())


def legacy_tags(tags: Iterable[dict[str, Any]]) -> dict[str, Value]:
    conv = {"string": "string", "bool": "bool", "int64": "int", "float64": "double"}
    out = {}
    for t in tags or []:
        kind = conv.get(t["type"], t["type"])
        v = t["value"]
        out[t["key"]] = (kind, int(v) if kind == "int" else float(v) if kind == "double" else v)
    return out


def legacy_matches(value: Value, tag: Value) -> bool:
    """Does a Jaeger legacy tag carry this attribute value? (arrays become JSON strings there)"""
    kind, v = value
    if kind == "array":
        return tag[0] == "string" and json.loads(tag[1]) == [x[1] for x in v]
    if kind == "double":
        return tag[0] == "double" and abs(tag[1] - v) <= 1e-12 * max(1.0, abs(v))
    return tag == value


# -- what was sent ---------------------------------------------------------------------------------------------


class SentIds:
    """A span exporter that keeps only (trace id, span id) of what it is given: what a process sent, without
    holding every span in memory (10,000 runs are ~160,000 spans). Use beside OTLP with
    ``configure(..., extra_exporters=[("sent", SentIds())])``."""

    def __init__(self) -> None:
        import threading
        self._lock = threading.Lock()
        self.traces: dict[str, set[str]] = {}
        self.count = 0

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult
        with self._lock:
            for s in spans:
                self.traces.setdefault(f"{s.context.trace_id:032x}", set()).add(f"{s.context.span_id:016x}")
                self.count += 1
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def spans(self) -> set[tuple[str, str]]:
        return {(t, s) for t, ss in self.traces.items() for s in ss}


# -- the collector's own metrics (its telemetry endpoint, Prometheus text format) --------------------------------

_SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(url: str) -> list[tuple[str, dict[str, str], float]]:
    """Every sample of a /metrics page: (name, labels, value)."""
    status, body = get(url, timeout=5.0)
    assert status == 200, (url, status)
    out = []
    for line in body.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m:
            out.append((m.group(1), dict(_LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return out


def metric_total(samples: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    """Sum of the samples of ``name`` whose labels fully match the given regexes (e.g. exporter="otlp.*jaeger.*")."""
    return sum(v for n, ls, v in samples if n == name
               and all(re.fullmatch(rx, ls.get(k, "")) for k, rx in labels.items()))


def collector_counts(url: str) -> dict[str, float]:
    """The span counters of the collector that the reliability tests compare (cumulative since it started)."""
    s = scrape(url)
    return {
        "accepted": metric_total(s, "otelcol_receiver_accepted_spans"),
        "refused": metric_total(s, "otelcol_receiver_refused_spans") + metric_total(s, "otelcol_receiver_failed_spans"),
        "sent_jaeger": metric_total(s, "otelcol_exporter_sent_spans", exporter="otlp.*jaeger.*"),
        "failed_jaeger": metric_total(s, "otelcol_exporter_send_failed_spans", exporter="otlp.*jaeger.*"),
        "enqueue_failed_jaeger": metric_total(s, "otelcol_exporter_enqueue_failed_spans", exporter="otlp.*jaeger.*"),
        "queue_jaeger": metric_total(s, "otelcol_exporter_queue_size", exporter="otlp.*jaeger.*",
                                     data_type="traces"),
        "sent_archive": metric_total(s, "otelcol_exporter_sent_spans", exporter="file.*"),
    }


def quiet_collector(url: str, timeout: float = 30.0) -> dict[str, float]:
    """The collector's counters once nothing moves for a second (earlier tests' spans have all gone through)."""
    def settled():
        a = collector_counts(url)
        time.sleep(1.0)
        b = collector_counts(url)
        return b if a == b and b["queue_jaeger"] == 0 else None
    return wait_for(settled, "the collector's span counters to settle", timeout=timeout, interval=0.2)


# -- Jaeger, trace by trace ------------------------------------------------------------------------------------


def jaeger_trace_span_ids(base: str, trace_id: str) -> set[str]:
    """Span ids Jaeger's API v3 holds for one trace (empty when it answers 404: not there (yet))."""
    status, body = get_json(f"{base}/api/v3/traces/{trace_id}")
    if status == 404:
        return set()
    assert status == 200 and isinstance(body, dict) and "result" in body, (trace_id, status, body)
    return {s["spanId"].lower() for rs in body["result"].get("resourceSpans") or []
            for ss in rs.get("scopeSpans") or [] for s in ss.get("spans") or []}


def wait_jaeger_traces(base: str, want: dict[str, set[str]], timeout: float, interval: float = 0.25,
                       complete: Callable[[str, set[str]], bool] | None = None
                       ) -> tuple[dict[str, set[str]], float | None, int]:
    """Polls Jaeger trace by trace until every trace of ``want`` holds its spans (or ``complete(tid, got)``
    says it is done). Traces already complete are not asked again. Returns what Jaeger holds per trace (asked
    once more at the end, all of them), the ``time.monotonic()`` at which the last one was seen complete (None
    on timeout) and the number of passes it took."""
    done = complete or (lambda tid, got: got >= want[tid])
    pending = list(want)
    deadline = time.monotonic() + timeout
    seen_at: float | None = None
    passes = 0
    while True:
        passes += 1
        pending = [tid for tid in pending if not done(tid, jaeger_trace_span_ids(base, tid))]
        if not pending:
            seen_at = time.monotonic()
            break
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    return {tid: jaeger_trace_span_ids(base, tid) for tid in want}, seen_at, passes


# -- the collector's file archive ------------------------------------------------------------------------------


def archive_spans(archive: Path, service: str) -> dict[str, list[str]]:
    """{trace id: [span ids]} of one service in the collector's archive, rotated files included (a span seen
    twice is listed twice). Only lines that mention the service are parsed."""
    needle = service.encode()
    out: dict[str, list[str]] = {}
    files = sorted(archive.parent.glob(f"{archive.stem}*{archive.suffix}")) if archive.parent.exists() else []
    for path in files:
        with open(path, "rb") as f:
            for line in f:
                if needle not in line:
                    continue
                for rs in json.loads(line).get("resourceSpans") or []:
                    attrs = {a["key"]: a.get("value", {}).get("stringValue")
                             for a in (rs.get("resource") or {}).get("attributes") or []}
                    if attrs.get("service.name") != service:
                        continue
                    for ss in rs.get("scopeSpans") or []:
                        for s in ss.get("spans") or []:
                            out.setdefault(s["traceId"].lower(), []).append(s["spanId"].lower())
    return out


# -- a private stack instance (its own ports and run folder, beside the shared one) ------------------------------

STACK_SCRIPT = ROOT / "scripts" / "stack.sh"
STACK_PORT_SETTINGS = [
    "AGENTOBS_COLLECTOR_OTLP_GRPC_PORT", "AGENTOBS_COLLECTOR_OTLP_HTTP_PORT", "AGENTOBS_COLLECTOR_HEALTH_PORT",
    "AGENTOBS_COLLECTOR_TELEMETRY_PORT", "AGENTOBS_COLLECTOR_PROMETHEUS_PORT", "AGENTOBS_JAEGER_OTLP_GRPC_PORT",
    "AGENTOBS_JAEGER_OTLP_HTTP_PORT", "AGENTOBS_JAEGER_QUERY_HTTP_PORT", "AGENTOBS_JAEGER_QUERY_GRPC_PORT",
    "AGENTOBS_JAEGER_HEALTH_PORT", "AGENTOBS_JAEGER_HEALTH_GRPC_PORT", "AGENTOBS_JAEGER_TELEMETRY_PORT",
    "AGENTOBS_PROMETHEUS_PORT",
]


class PrivateStack:
    """Another instance of scripts/stack.sh: every port free, its own run folder (pids, logs, archive); the built
    binaries are shared (the cache). Processes can be killed and restarted without disturbing the shared stack.
    ``down()`` always runs at the end (use it as a context manager or call it from a fixture's teardown)."""

    def __init__(self, run: Path, extra_env: dict[str, str] | None = None):
        import os
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AGENTOBS_", "JAEGER_", "OTEL_")) and k != "PROMETHEUS_URL"}
        if os.environ.get("AGENTOBS_STACK_CACHE"):
            env["AGENTOBS_STACK_CACHE"] = os.environ["AGENTOBS_STACK_CACHE"]
        self.ports = dict(zip(STACK_PORT_SETTINGS, free_ports(len(STACK_PORT_SETTINGS)), strict=True))
        env.update({k: str(v) for k, v in self.ports.items()})
        env["AGENTOBS_STACK_RUN"] = str(run)
        env.update(extra_env or {})
        self.env, self.run = env, run
        self.exports: dict[str, str] = {}

    def script(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(STACK_SCRIPT), *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def up(self) -> dict[str, str]:
        done = self.script("up")
        assert done.returncode == 0, f"scripts/stack.sh up failed:\n{done.stderr[-3000:]}"
        self.exports = {}
        for line in done.stdout.splitlines():
            if line.startswith("export ") and "=" in line:
                k, v = line[len("export "):].split("=", 1)
                self.exports[k] = v.strip("'")
        return self.exports

    def down(self) -> None:
        self.script("down", timeout=120)

    def __enter__(self) -> PrivateStack:
        self.up()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.down()

    def pid(self, service: str) -> int | None:
        f = self.run / "pids" / f"{service}.pid"          # "PID START" (the process's start time)
        try:
            return int(f.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def stop(self, service: str, sig: int | None = None, timeout: float = 15.0) -> None:
        """Stops one service (SIGTERM: a graceful stop; SIGKILL: a crash) and waits until it is gone."""
        import os
        import signal
        pid = self.pid(service)
        assert pid is not None, f"{service} is not running"
        os.kill(pid, signal.SIGTERM if sig is None else sig)
        wait_for(lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid), f"{service} (pid {pid}) to exit",
                 timeout=timeout, interval=0.05)

    @property
    def otlp_grpc(self) -> str:
        return f"http://127.0.0.1:{self.ports['AGENTOBS_COLLECTOR_OTLP_GRPC_PORT']}"

    @property
    def otlp_http(self) -> str:
        return f"http://127.0.0.1:{self.ports['AGENTOBS_COLLECTOR_OTLP_HTTP_PORT']}"

    @property
    def jaeger(self) -> str:
        return f"http://127.0.0.1:{self.ports['AGENTOBS_JAEGER_QUERY_HTTP_PORT']}"

    @property
    def collector_health(self) -> str:
        return f"http://127.0.0.1:{self.ports['AGENTOBS_COLLECTOR_HEALTH_PORT']}/"

    @property
    def jaeger_health(self) -> str:
        return f"http://127.0.0.1:{self.ports['AGENTOBS_JAEGER_HEALTH_PORT']}/status"

    @property
    def collector_telemetry(self) -> str:
        return f"http://127.0.0.1:{self.ports['AGENTOBS_COLLECTOR_TELEMETRY_PORT']}/metrics"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return True
