"""Memory bounded by the input (issue 43, point 2): every reader streams, or parses through the Arrow path, or
refuses up front what it will not hold, with a one-line error naming the limit.

Peak memory is measured in a child process of its own by its VmHWM (``bench.memory_child``; ru_maxrss would carry
this process's peak across exec). The default tests read a small and a larger input of a kind and bound what the
larger one costs beyond the small one per byte (the fixed costs of a read, Arrow's pools and the like, cancel out);
the ``slow`` ones read 32 MiB of every kind, as the benchmark (``bench.memory_bench``) reads 64 MiB.
"""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agentobs import InputError
from agentobs.analysis.assess.labels import read_labels
from agentobs.analysis.jaeger.query import fetch, parse_url
from agentobs.analysis.load.sources import load_sources
from agentobs.analysis.otlp import _parse as _otlp_parse
from agentobs.analysis.otlp.load import load_bytes
from bench.memory_bench import KINDS, _content_bytes
from bench.memory_child import measure
from bench.memory_data import make

MIB = 1 << 20


def _per_byte(kind, tmp_path, small=1 * MIB, large=9 * MIB):
    """What reading ``kind`` costs beyond a small input of it, per byte: (peak growth at ``large`` less at
    ``small``) / (the difference of their sizes)."""
    a, b = make(kind, small, tmp_path), make(kind, large, tmp_path)
    ga, gb = measure(kind, a), measure(kind, b)
    assert not ga["error"] and not gb["error"], (ga, gb)
    return (gb["growth_mib"] - ga["growth_mib"]) * MIB / (b.stat().st_size - a.stat().st_size)


@pytest.mark.parametrize("kind", ["jaeger-ui", "labels-json", "tau2"])
def test_documents_once_parsed_whole_cost_a_few_times_their_size(tmp_path, kind):
    """A Jaeger UI download, a labels file and tau2-bench results were parsed whole with json: 18 to 26 times their
    size at 16 MiB, some 15 times per byte past the fixed costs. Read a value at a time, each costs a few times its
    size (at these small sizes Arrow's pools grow in steps: the bound leaves room for them)."""
    assert _per_byte(kind, tmp_path) <= 8.0


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_input_kind_stays_within_its_multiple_of_its_size(tmp_path_factory, kind):
    path = make(kind, 32 * MIB, tmp_path_factory.mktemp("memory"))
    got = measure(kind, path)
    assert not got["error"] and (got["spans"] > 0 or kind == "services"), got     # (a services list holds no span)
    ratio = got["growth_mib"] * MIB / _content_bytes(kind, path)        # (zstd: against the JSON it holds)
    # at 32 MiB the fixed costs of a read (about 60 MiB: Arrow's pools, the pieces in flight) weigh more than at
    # the benchmark's 64 MiB: 2 more than its target
    assert ratio <= KINDS[kind][1] + 2, (kind, ratio, got)


# -- what is read a value at a time gives what the whole reading gave ------------------------------------------------

def _request(trace: int, spans: int, bad: int | None = None) -> dict:
    out = []
    for i in range(spans):
        span = {"traceId": f"{trace:032x}", "spanId": f"{trace * 1000 + i + 1:016x}", "name": f"s{i}", "kind": 1,
                "startTimeUnixNano": str(1_780_000_000 * 10**9 + i), "endTimeUnixNano": str(1_780_000_001 * 10**9),
                "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]}
        if i == bad:
            span["name"] = {"a value": "of the wrong type"}
        out.append(span)
    return {"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": f"svc{trace}"}}]},
            "scopeSpans": [{"scope": {"name": "t"}, "spans": out}]}


@pytest.mark.parametrize("wrapped", [False, True], ids=["request", "Jaeger answer"])
def test_a_long_line_the_fast_path_cannot_take_is_read_a_resource_at_a_time(monkeypatch, wrapped):
    """A line over ``WHOLE_LINE`` holding one bad value was parsed whole with json on the careful path (a 64 MiB
    Jaeger answer: 19.6 x its size); its resources are taken one by one now, with the same spans and counts."""
    body = {"resourceSpans": [_request(t, 5, bad=2 if t == 3 else None) for t in range(1, 8)]}
    line = (json.dumps({"result": body} if wrapped else body) + "\n").encode()
    whole = load_bytes(line, "s")
    monkeypatch.setattr(_otlp_parse, "WHOLE_LINE", 512)
    by_resource = load_bytes(line, "s")
    cols = ["trace_id", "span_id", "name", "start_ns"]
    assert by_resource.spans[cols].sort_values("span_id").reset_index(drop=True).equals(
        whole.spans[cols].sort_values("span_id").reset_index(drop=True))
    assert len(by_resource.spans) == 35
    kinds = {i.kind: i.count for i in whole.quality.issues if i.kind != "careful_path"}
    assert {i.kind: i.count for i in by_resource.quality.issues if i.kind != "careful_path"} == kinds


def test_a_long_line_that_is_not_json_costs_itself_read_a_resource_at_a_time(monkeypatch):
    body = json.dumps({"resourceSpans": [_request(t, 3) for t in range(1, 5)]})
    monkeypatch.setattr(_otlp_parse, "WHOLE_LINE", 256)
    ss = load_bytes((body[: len(body) - 40] + "\n").encode(), "s")        # cut short in its last resource
    assert ss.quality.count("invalid_json") == 1
    assert len(ss.spans) == 9                                               # the resources before the cut


# -- a services list is read a name at a time, and only what can be asked is kept ------------------------------------

class _Services:
    def __init__(self, names):
        body = json.dumps({"services": names}).encode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                data = body if self.path.startswith("/api/v3/services") else b'{"result":{"resourceSpans":[]}}'
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_a_services_list_longer_than_the_request_cap_keeps_only_what_can_be_asked():
    from agentobs.analysis.jaeger.query import resolve_limits
    names = ["jaeger", *(f"svc-{n:05d}" for n in range(20_000)), "svc-00001"]
    fake = _Services(names)
    try:
        ss = fetch(parse_url(f"{fake.url}?since=2h"), limits=resolve_limits(max_requests=10, env={}))
    finally:
        fake.close()
    (issue,) = [i for i in ss.quality.issues if i.kind == "source_error"]
    # the list took one request of the ten, nine services were asked; a repeated name and Jaeger's own are not
    assert issue.count == 20_000 - 9 and "request cap (10" in issue.examples[0]


# -- the labels file has a cap like every other input ----------------------------------------------------------------

def test_a_labels_file_over_the_document_limit_is_refused_up_front(tmp_path, monkeypatch):
    labels = tmp_path / "labels.csv"
    labels.write_text("run_id,success\n" + "".join(f"r{n},true\n" for n in range(2000)))
    monkeypatch.setenv("AGENTOBS_MAX_DOCUMENT_BYTES", "8K")
    with pytest.raises(InputError) as err:
        read_labels(labels)
    msg = str(err.value)
    assert msg.startswith(f"labels file {labels}: larger than 8 KiB") and "AGENTOBS_MAX_DOCUMENT_BYTES" in msg
    assert "\n" not in msg
    monkeypatch.setenv("AGENTOBS_MAX_DOCUMENT_BYTES", "1M")
    assert len(read_labels(labels)[0]) == 2000


def test_a_gzip_labels_file_over_the_limit_is_refused_as_it_is_read(tmp_path, monkeypatch):
    import gzip
    labels = tmp_path / "labels.json.gz"
    labels.write_bytes(gzip.compress(json.dumps([{"run_id": f"r{n}", "success": True} for n in range(5000)])
                                     .encode()))
    monkeypatch.setenv("AGENTOBS_MAX_DOCUMENT_BYTES", "16K")
    with pytest.raises(InputError, match=r"larger than 16 KiB.*AGENTOBS_MAX_DOCUMENT_BYTES"):
        read_labels(labels)


@pytest.mark.parametrize("kind", ["jaeger-ui", "zipkin", "console", "tau2"])
def test_a_document_over_the_limit_is_refused_with_the_limit_named(tmp_path, monkeypatch, kind):
    path = make(kind, 256 << 10, tmp_path)
    monkeypatch.setenv("AGENTOBS_MAX_DOCUMENT_BYTES", "64K")
    with pytest.raises(InputError, match=r"larger than 64 KiB.*set AGENTOBS_MAX_DOCUMENT_BYTES to raise it"):
        load_sources([str(path)])
