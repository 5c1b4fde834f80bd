"""The Jaeger client against a real HTTP server on 127.0.0.1 that answers like Jaeger API v3 and misbehaves on demand.

The fake serves ``/api/v3/services`` and ``/api/v3/traces`` (by service and time window, at most
``query.num_traces`` traces, 404 "No traces found" when there are none) with OTLP JSON
``{"result": {"resourceSpans": [...]}}``; per service it can instead answer 500, trickle a byte at a time,
send more than the size cap, redirect, or answer every page full.
"""
from __future__ import annotations

import base64
import json
import re
import socket
import time
import urllib.parse
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from click.testing import CliRunner
from fake_jaeger import HOUR, T0, WINDOW, FakeJaeger, _starts, _trace, _trace_id
from locations import ROOT

from agentobs.analysis.jaeger.query import (
    ENV_DEADLINE_S,
    ENV_MAX_BYTES,
    ENV_MAX_REQUESTS,
    JaegerLimits,
    fetch,
    parse_url,
    redact,
    resolve_limits,
)
from agentobs.analysis.report.engine import analyze
from agentobs.cli.main import cli
from agentobs.domain.scenarios import SEED000
from agentobs.errors import ConfigError, InputError
from agentobs.telemetry import configure


@pytest.fixture(scope="module")
def seed_traces(tmp_path_factory):
    """Four seed runs as our telemetry exports them, one resourceSpans entry per trace."""
    path = tmp_path_factory.mktemp("seed") / "seed.jsonl"
    tel = configure(traces_out=path, service_name="shop")
    for name in list(SEED000)[:4]:
        SEED000[name]([tel.observer()])
    tel.shutdown()
    by_trace: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    entry = by_trace.setdefault(s["traceId"], {"resource": rs["resource"],
                                                               "scopeSpans": [{"scope": ss["scope"], "spans": []}]})
                    entry["scopeSpans"][0]["spans"].append(s)
    return list(by_trace.values())


@pytest.fixture
def jaeger():
    made: list[FakeJaeger] = []

    def make(*args: Any, **kwargs: Any) -> FakeJaeger:
        made.append(FakeJaeger(*args, **kwargs))
        return made[-1]
    yield make
    for f in made:
        f.close()


def _limits(**kw: Any) -> JaegerLimits:
    return resolve_limits(env={}, **kw)


def _runs_of(ss) -> set[str]:
    return set(ss.spans["trace_id"])


# -- reading --------------------------------------------------------------------------------------------------

def test_the_seed_runs_are_read_back_through_split_windows(jaeger, seed_traces):
    fake = jaeger(seed_traces)
    starts = [t for rs in seed_traces for t in _starts(rs)]
    since = datetime.fromtimestamp(min(starts) / 1e9 - 1800, UTC).isoformat()
    until = datetime.fromtimestamp(max(starts) / 1e9 + 1800, UTC).isoformat()
    url = f"{fake.url}?service=shop&page=4&" + urllib.parse.urlencode({"since": since, "until": until})
    report = analyze([url])
    assert len(report.runs) == 4 and set(report.runs["trace_id"]) == {_trace_id(rs) for rs in seed_traces}
    assert len(report.spans) == sum(len(_starts(rs)) for rs in seed_traces)       # none twice, none lost
    assert report.quality.count("source_error") == 0, report.quality.to_dict()
    assert fake.trace_requests > 1                    # the full first window was split
    assert set(fake.auth) == {None}                   # no credentials given, none sent


def test_a_trace_in_two_windows_is_read_once_and_its_problems_counted_once(jaeger):
    """Windows overlap: a trace with spans in both halves of a split window comes back in both answers. Its spans
    are kept once, and what its decoding counted (here a span kind out of range) is counted once: the second
    answer is decoded without it."""
    mid = T0 + HOUR // 2
    both = _trace(1, T0 + 60 * 10**9)
    both["scopeSpans"][0]["spans"][1].update(kind=99, startTimeUnixNano=str(mid + 60 * 10**9),
                                              endTimeUnixNano=str(mid + 61 * 10**9))
    fake = jaeger([both, _trace(2, T0 + 120 * 10**9), _trace(3, mid + 120 * 10**9)])
    ss = fetch(parse_url(f"{fake.url}?service=shop&page=3&{WINDOW}"), limits=_limits())
    assert fake.trace_requests == 3                         # the full hour, then its two halves
    assert _runs_of(ss) == {f"{n:032x}" for n in (1, 2, 3)}
    assert len(ss.spans) == 6 and not ss.spans.duplicated(["trace_id", "span_id"]).any()
    issue = next(i for i in ss.quality.issues if i.kind == "bad_value")
    assert issue.count == 1 and "span kind: 99" in issue.examples[0], ss.quality.to_dict()
    assert ss.quality.count("source_error") == 0


@pytest.mark.parametrize("line_limit", [None, "4KiB"])
def test_an_answer_is_read_from_its_bytes_by_the_fast_path(jaeger, seed_traces, monkeypatch, line_limit):
    """An answer is not parsed into Python objects first (which took about ten times the time and many times the
    answer's size in memory): the loader reads it as a saved Jaeger answer, even when it is longer than the longest
    line a file may hold (an answer is one line, bounded by the size cap)."""
    import agentobs.analysis.jaeger.query as jaeger_module
    from agentobs.analysis.input.limits import LINE_ENV
    if line_limit:
        monkeypatch.setenv(LINE_ENV, line_limit)
        import agentobs.analysis.otlp._parse as parse_module
        monkeypatch.setattr(parse_module, "_BLOCK", 1024)        # (pyarrow's first block, else the whole answer)

    def no_json(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an answer was parsed in Python")
    monkeypatch.setattr(jaeger_module, "Reader", no_json)
    fake = jaeger(seed_traces)
    starts = [t for rs in seed_traces for t in _starts(rs)]
    since = datetime.fromtimestamp(min(starts) / 1e9 - 1800, UTC).isoformat()
    until = datetime.fromtimestamp(max(starts) / 1e9 + 1800, UTC).isoformat()
    url = f"{fake.url}?service=shop&" + urllib.parse.urlencode({"since": since, "until": until})
    ss = fetch(parse_url(url), limits=_limits())
    monkeypatch.undo()
    assert _runs_of(ss) == {_trace_id(rs) for rs in seed_traces}
    assert [list(v) for v in ss.spellings.values()] == [["Jaeger API answers"]], ss.spellings


def test_the_trace_command_asks_jaeger_for_the_trace_alone_whatever_its_age(jaeger):
    """``agentobs trace ID URL`` asks API v3's trace endpoint: one request, no search of the window, and a trace
    older than the default window (24 hours) is found; it searched every trace of the window and missed it."""
    old = _trace(7, T0 + 60 * 10**9)                        # 2026-01-01, long before the default window
    fake = jaeger([old, _trace(8, T0 + 120 * 10**9)])
    res = CliRunner().invoke(cli, ["trace", f"{7:032X}", f"{fake.url}?service=shop"])
    assert res.exit_code == 0, res.output
    assert "invoke_agent support-agent" in res.output and "agentobs.step" in res.output
    assert fake.hits == [f"/api/v3/traces/{7:032x}"]
    missing = CliRunner().invoke(cli, ["trace", f"{9:032x}", fake.url])
    assert missing.exit_code == 2 and "is not in" in missing.stderr
    assert fake.hits[-1] == f"/api/v3/traces/{9:032x}" and fake.trace_requests == 2


def test_a_trace_endpoint_that_trickles_ends_at_the_deadline_without_a_search(jaeger, monkeypatch):
    fake = jaeger([_trace(7, T0 + 60 * 10**9)])
    fake.by_id = "trickle"
    monkeypatch.setenv(ENV_DEADLINE_S, "2")
    res = CliRunner().invoke(cli, ["trace", f"{7:032x}", f"{fake.url}?service=shop&{WINDOW}"])
    assert res.exit_code == 2 and "deadline of 2 s passed before the trace was read" in res.stderr, res.output
    assert fake.trace_requests == 1                       # no search of the window after it


def test_a_prefix_of_a_trace_id_is_searched_in_the_window(jaeger):
    """A prefix names no trace for the trace endpoint: the window is searched, and the one trace it starts is shown
    (here 64-bit ids, whose padding the prefix skips); an ambiguous prefix lists its traces."""
    ab, cd = 0xAB << 56, 0xCD << 56
    fake = jaeger([_trace(ab, T0 + 60 * 10**9), _trace(cd, T0 + 120 * 10**9)])
    res = CliRunner().invoke(cli, ["trace", "ab", f"{fake.url}?service=shop&{WINDOW}"])
    assert res.exit_code == 0 and "invoke_agent support-agent" in res.output, res.output
    assert res.output.splitlines()[0] == f"trace {ab:032x}: 2 spans"
    assert fake.hits[0] == f"/api/v3/traces/{0xAB:032x}" and any("query.service_name=shop" in h for h in fake.hits)
    both = CliRunner().invoke(cli, ["trace", "0000", f"{fake.url}?service=shop&{WINDOW}"])
    assert both.exit_code == 2 and [line.split()[0] for line in both.stdout.splitlines()] == [f"{ab:032x}",
                                                                                              f"{cd:032x}"]


def test_without_the_trace_endpoint_the_trace_command_searches_the_window(jaeger):
    fake = jaeger([_trace(7, T0 + 60 * 10**9), _trace(8, T0 + 120 * 10**9)])
    fake.by_id = False
    res = CliRunner().invoke(cli, ["trace", f"{7:032x}", f"{fake.url}?service=shop&{WINDOW}"])
    assert res.exit_code == 0 and "invoke_agent support-agent" in res.output, res.output
    assert fake.hits[0] == f"/api/v3/traces/{7:032x}" and any("query.service_name=shop" in h for h in fake.hits)


def test_no_traces_found_is_not_a_failure(jaeger):
    fake = jaeger(default="404")
    ss = fetch(parse_url(f"{fake.url}?service=shop&{WINDOW}"), limits=_limits())
    assert ss.spans.empty and ss.quality.count("source_error") == 0


def test_every_service_is_asked_when_none_is_named(jaeger):
    fake = jaeger([_trace(1, T0 + 10, "a"), _trace(2, T0 + 20, "b")])
    ss = fetch(parse_url(f"{fake.url}?{WINDOW}"), limits=_limits())
    assert _runs_of(ss) == {f"{1:032x}", f"{2:032x}"}
    assert fake.hits[0] == "/api/v3/services"


# -- failures -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode, says", [("500", "HTTP 500"), ("bad_json", "not JSON"),
                                        ("wrong_shape", "not a Jaeger API v3 answer"),
                                        ("deep_json", "nested too deeply"),
                                        ("plain_404", "HTTP 404 that is not Jaeger's answer")])
def test_a_source_where_every_request_failed_is_an_input_error(jaeger, mode, says):
    fake = jaeger(modes={"shop": mode, "cart": mode})
    with pytest.raises(InputError) as err:
        fetch(parse_url(f"{fake.url}?service=shop,cart&{WINDOW}"), limits=_limits())
    msg = str(err.value)
    assert "every request failed (2)" in msg and says in msg and "\n" not in msg, msg


@pytest.mark.parametrize("answer", [{"services": [{"name": "shop"}]}, {"services": "shop"}, ["shop"], "shop"])
def test_a_services_list_of_another_shape_is_an_input_error(jaeger, answer):
    """A services answer that is no list of names asked nothing and read nothing, without a word (found by
    fuzzing). Jaeger's own answer for no service, {}, is an empty list."""
    fake = jaeger([_trace(1, T0 + 10**9)])
    fake.services_answer = answer
    with pytest.raises(InputError, match="not a Jaeger API v3 services list"):
        fetch(parse_url(f"{fake.url}?{WINDOW}"), limits=_limits())
    fake.services_answer = {}
    assert len(fetch(parse_url(f"{fake.url}?{WINDOW}"), limits=_limits()).spans) == 0


def test_an_answer_in_the_spelling_before_otlp_0_15_is_read(jaeger):
    """instrumentationLibrarySpans (OTLP before 0.15) was read from a file but dropped from a Jaeger answer."""
    fake = jaeger([_trace(1, T0 + 10**9), _trace(2, T0 + 2 * 10**9)], modes={"shop": "library_spans"})
    ss = fetch(parse_url(f"{fake.url}?service=shop&{WINDOW}"), limits=_limits())
    assert _runs_of(ss) == {f"{1:032x}", f"{2:032x}"}


def test_an_unreachable_jaeger_is_an_input_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]                  # closed again: nobody listens there
    with pytest.raises(InputError, match="cannot be reached"):
        fetch(parse_url(f"http://127.0.0.1:{port}?service=shop&{WINDOW}"), limits=_limits())


def test_one_window_failing_keeps_the_others_and_is_counted(jaeger):
    # the whole hour comes back full (page=3 of 4 traces) and is split; the first half answers, the second 500s
    early, late = [T0 + 60 * 10**9, T0 + 120 * 10**9], [T0 + HOUR - 120 * 10**9, T0 + HOUR - 60 * 10**9]
    fake = jaeger([_trace(i + 1, t) for i, t in enumerate(early + late)], modes={"shop": "second_half_500"})
    ss = fetch(parse_url(f"{fake.url}?service=shop&page=3&{WINDOW}"), limits=_limits())
    assert _runs_of(ss) == {f"{1:032x}", f"{2:032x}"}
    assert fake.trace_requests == 3
    issue = next(i for i in ss.quality.issues if i.kind == "source_error")
    assert issue.count == 1 and "HTTP 500" in issue.examples[0] and "shop" in issue.examples[0]


@pytest.mark.parametrize("mode", ["huge", "huge_streamed"])
def test_an_answer_over_the_size_cap_is_a_source_error_and_is_not_read_whole(jaeger, mode):
    fake = jaeger([_trace(1, T0 + 10**9)], modes={"big": mode})
    cap = 2**20
    ss = fetch(parse_url(f"{fake.url}?service=shop,big&{WINDOW}"), limits=_limits(max_bytes=cap))
    assert _runs_of(ss) == {f"{1:032x}"}                          # the other service is still read
    issue = next(i for i in ss.quality.issues if i.kind == "source_error")
    assert issue.count == 1 and ENV_MAX_BYTES in issue.examples[0] and f"{cap:,}" in issue.examples[0]
    fake.close()                                                  # let the sender see the hang-up
    assert fake.sent.get(mode, 0) < fake.huge                     # the client stopped reading early


def test_the_size_cap_comes_from_the_environment(jaeger, monkeypatch):
    fake = jaeger(modes={"big": "huge_streamed"})
    monkeypatch.setenv(ENV_MAX_BYTES, str(2**16))
    with pytest.raises(InputError, match=f"cap 65,536 bytes.*{ENV_MAX_BYTES}"):
        fetch(parse_url(f"{fake.url}?service=big&{WINDOW}"))


# -- the deadline ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["trickle_body", "trickle_headers"])
def test_a_trickling_server_is_cut_off_at_the_deadline(jaeger, monkeypatch, mode):
    fake = jaeger(default=mode)
    deadline = 2.0
    monkeypatch.setenv(ENV_DEADLINE_S, str(deadline))
    began = time.monotonic()
    with pytest.raises(InputError) as err:
        fetch(parse_url(f"{fake.url}?service=shop&{WINDOW}"))
    took = time.monotonic() - began
    assert "deadline of 2 s" in str(err.value) and ENV_DEADLINE_S in str(err.value)
    # A safety bound, not a speed target: the full trickle takes over 100 s (200+ bytes, one per 0.5 s),
    # so anything well under that shows the deadline stopped it; 40 s leaves room for a very busy machine.
    assert took < 40, took
    fake.close()
    assert fake.sent.get(mode, 0) < 200


def test_the_deadline_keeps_what_was_read(jaeger):
    fake = jaeger([_trace(1, T0 + 10**9)], modes={"slow": "trickle_body"})
    ss = fetch(parse_url(f"{fake.url}?service=shop,slow&{WINDOW}"), limits=_limits(deadline_s=2))
    assert _runs_of(ss) == {f"{1:032x}"}
    issue = next(i for i in ss.quality.issues if i.kind == "source_error")
    assert "deadline of 2 s" in issue.examples[0] and "traces may be missing" in issue.examples[0]


# -- the request cap ------------------------------------------------------------------------------------------

def test_pages_that_are_always_full_stop_at_the_request_cap(jaeger):
    fake = jaeger(default="full")
    cap = 25
    ss = fetch(parse_url(f"{fake.url}?service=shop,cart&page=5&{WINDOW}"), limits=_limits(max_requests=cap))
    assert fake.trace_requests <= cap
    assert len(_runs_of(ss)) >= 5                         # what was read is kept
    issue = next(i for i in ss.quality.issues if i.kind == "source_error")
    assert ENV_MAX_REQUESTS in issue.examples[0] and "traces may be missing" in issue.examples[0]
    assert any("cart" in h for h in fake.hits)            # the second service was still asked


def test_the_request_cap_comes_from_the_environment(jaeger, monkeypatch):
    fake = jaeger(default="full")
    monkeypatch.setenv(ENV_MAX_REQUESTS, "7")
    fetch(parse_url(f"{fake.url}?service=shop&page=2&{WINDOW}"))
    assert 1 < fake.trace_requests <= 7


# -- redirects ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_redirect_to_another_origin_is_not_followed(jaeger, host):
    other = jaeger([_trace(1, T0 + 10**9)])
    fake = jaeger(modes={"shop": "redirect"})
    fake.redirect_to = f"http://{host}:{other.server.server_address[1]}"
    with pytest.raises(InputError, match=r"redirect to another origin .* refused"):
        fetch(parse_url(f"http://user:secret@127.0.0.1:{fake.server.server_address[1]}?service=shop&{WINDOW}"),
              limits=_limits())
    assert other.hits == []                               # nothing, and no credentials, went there


def test_a_same_origin_redirect_is_followed(jaeger):
    fake = jaeger([_trace(1, T0 + 10**9)], modes={"shop": "redirect"})
    fake.redirect_to = fake.url
    ss = fetch(parse_url(f"{fake.url}?service=shop&{WINDOW}"), limits=_limits())
    assert _runs_of(ss) == {f"{1:032x}"} and fake.hits[-1].startswith("/moved/api/v3/traces")


def test_a_redirect_loop_ends_as_a_failed_request(jaeger):
    fake = jaeger(modes={"shop": "redirect_loop"})
    with pytest.raises(InputError, match=r"every request failed.*redirect"):
        fetch(parse_url(f"{fake.url}?service=shop&{WINDOW}"), limits=_limits())
    assert fake.trace_requests <= 4                       # the request and at most 3 redirects


# -- credentials ----------------------------------------------------------------------------------------------

def test_credentials_are_sent_as_basic_auth_and_never_shown(jaeger):
    fake = jaeger([_trace(1, T0 + 10**9)], modes={"cart": "500"})
    src = parse_url(f"http://al%40ce:s3cr%3At@127.0.0.1:{fake.server.server_address[1]}?service=shop,cart&{WINDOW}")
    ss = fetch(src, limits=_limits())
    assert set(fake.auth) == {"Basic " + base64.b64encode(b"al@ce:s3cr:t").decode()}
    shown = json.dumps(ss.quality.to_dict()) + " ".join(ss.sources) + src.label + repr(src)
    assert "s3cr" not in shown and "al@ce" not in shown and "al%40ce" not in shown
    assert ss.quality.count("source_error") == 1


def test_url_errors_do_not_echo_userinfo_or_unknown_parameters():
    with pytest.raises(InputError) as err:
        parse_url("http://me:hunter2@127.0.0.1:16686?service=x&token=abc123&since=1h&until=2h")
    assert "since must be before until" in str(err.value)
    assert "hunter2" not in str(err.value) and "abc123" not in str(err.value) and "me:" not in str(err.value)
    assert redact("jaeger+https://u:p@h:1/base?token=t&service=s") == "jaeger+https://h:1/base?token=***&service=s"


@pytest.mark.parametrize("url", [
    "http://admin:hun/ter2secret@127.0.0.1:9?service=x",            # the password in the "path"
    "http://admin:hunter2#secret@127.0.0.1:9?service=x",            # in the "fragment"
    "http://admin:hunter2?secret%40x@127.0.0.1:9?service=x",        # in the "query"
    "http://admin:1234/hunter2secret@127.0.0.1:16686?service=x",    # "admin:1234" parses as a host and port
])
def test_a_password_with_a_reserved_character_is_refused_without_showing_it(url):
    """urlsplit ends the authority at the first '/', '?' or '#': a password holding one that was not
    percent-encoded was printed in the error (whole, or its first part), or, with digits before the '/', taken for
    a host and port, sent there, and shown in every span's source (found by fuzzing)."""
    with pytest.raises(InputError) as err:
        parse_url(url)
    msg = str(err.value)
    assert "percent-encode" in msg
    for part in ("admin", "hunter2", "ter2secret", "hun/", "secret", "1234"):
        assert part not in msg, msg
    assert "admin" not in redact(url) and "secret" not in redact(url)


def test_object_store_urls_hide_a_password_with_a_reserved_character():
    from agentobs.analysis.input import remote
    url = "ftp://admin:hunter2#secret@127.0.0.1/x.jsonl"
    assert remote.redacted_url(url) == "ftp://127.0.0.1/x.jsonl"
    assert "hunter2" not in remote.masked(f"cannot read {url}", url)


@pytest.mark.parametrize("param, value, says", [
    ("since", "1000000d", "out of range"),                  # was OverflowError: date value out of range
    ("since", "99999999999d", "out of range"),              # was OverflowError: ... too large to convert to C int
    ("until", "99999999999d", "out of range"),
    ("since", "0001-01-01T00:00:00+01:00", "out of range"),  # year 0 in UTC (it failed at the first request)
    ("until", "9999-12-31T23:59:59-01:00", "out of range"),
    ("since", "\u00b2h", "use a duration"),                  # a superscript two: str.isdigit() but not float()
    ("since", "-5h", "use a duration"),
])
def test_a_time_out_of_range_or_unusable_is_a_one_line_error_before_any_request(param, value, says):
    url = f"http://127.0.0.1:1/?service=x&{param}={urllib.parse.quote(value)}"
    with pytest.raises(InputError, match=f"time {re.escape(repr(value))}.*{says}"):
        parse_url(url)
    result = CliRunner().invoke(cli, ["report", url])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert result.stderr.startswith(f"agentobs: error: time {value!r}")


def test_durations_and_timestamps_are_read_in_utc():
    now = datetime(2026, 1, 2, tzinfo=UTC)
    src = parse_url("http://h:1/?since=1.5h&until=2026-01-02T01:00:00%2B02:00", now=now)
    assert src.start == datetime(2026, 1, 1, 22, 30, tzinfo=UTC)
    assert src.end == datetime(2026, 1, 1, 23, 0, tzinfo=UTC) and src.end.utcoffset() == timedelta(0)
    assert parse_url("http://h:1/?since=.5d", now=now).start == datetime(2026, 1, 1, 12, tzinfo=UTC)


def test_the_cli_gives_one_line_and_exit_2_when_every_request_fails_and_never_shows_the_password(jaeger):
    fake = jaeger(default="500")
    url = f"http://user:secret@127.0.0.1:{fake.server.server_address[1]}?service=x"
    result = CliRunner().invoke(cli, ["report", url])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("agentobs: error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "every request failed" in result.stderr
    assert "secret" not in result.stdout and "secret" not in result.stderr
    assert fake.auth == ["Basic " + base64.b64encode(b"user:secret").decode()]


@pytest.mark.parametrize("fmt", ["table", "json", "html"])
def test_a_report_read_with_credentials_never_shows_them(jaeger, tmp_path, fmt):
    fake = jaeger([_trace(1, T0 + 10**9)])
    url = f"http://user:secret@127.0.0.1:{fake.server.server_address[1]}?service=shop&token=tok123&{WINDOW}"
    out = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["report", url, "--format", fmt] + (["--out", str(out)] if fmt == "html" else []))
    assert result.exit_code == 0, result.output
    text = result.output + (out.read_text() if fmt == "html" else "")
    assert f"127.0.0.1:{fake.server.server_address[1]}" in text          # the source is named...
    assert "secret" not in text and "tok123" not in text and "user:" not in text  # ...without its credentials
    if fmt == "json":
        assert json.loads(result.stdout)["overview"]["runs"] == 1


def test_the_trace_command_does_not_echo_credentials(jaeger):
    fake = jaeger([_trace(1, T0 + 10**9)])
    url = f"http://user:secret@127.0.0.1:{fake.server.server_address[1]}?service=shop&{WINDOW}"
    result = CliRunner().invoke(cli, ["trace", "ab" * 16, url])
    assert result.exit_code == 2 and "is not in http://127.0.0.1:" in result.stderr, result.output
    assert "secret" not in result.output


# -- settings -------------------------------------------------------------------------------------------------

def test_the_limits_and_their_variables_are_documented():
    docs = ROOT / "docs"
    security, analysis = (docs / "security.md").read_text(), (docs / "analysis.md").read_text()
    assert "## Jaeger client" in security
    for name in (ENV_DEADLINE_S, ENV_MAX_BYTES, ENV_MAX_REQUESTS):
        assert f"`{name}`" in security and f"`{name}`" in analysis, name
    d = JaegerLimits()
    assert f"{d.deadline_s:g} s" in security and f"{d.max_bytes}" in security and f"| {d.max_requests} |" in security


def test_limits_resolve_argument_then_environment_then_default():
    env = {ENV_MAX_BYTES: "1000", ENV_DEADLINE_S: "7.5", ENV_MAX_REQUESTS: "9"}
    assert resolve_limits(env={}) == JaegerLimits()
    assert resolve_limits(env=env) == JaegerLimits(max_bytes=1000, deadline_s=7.5, max_requests=9)
    assert resolve_limits(max_requests=3, env=env) == JaegerLimits(max_bytes=1000, deadline_s=7.5, max_requests=3)
    with pytest.raises(ConfigError, match=ENV_MAX_REQUESTS):
        resolve_limits(env={ENV_MAX_REQUESTS: "lots"})
    with pytest.raises(ConfigError, match=ENV_DEADLINE_S):
        resolve_limits(env={ENV_DEADLINE_S: "0"})
    year = 365 * 86400.0                # past a timer's range, the watchdog raised OverflowError in its thread
    for huge in ("1e10", "1e300", "inf"):
        assert resolve_limits(env={ENV_DEADLINE_S: huge}).deadline_s == year
