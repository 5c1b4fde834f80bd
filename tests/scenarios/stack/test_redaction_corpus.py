"""The secrets corpus through the REAL collector: it masks what the in-process Redactor masks (issue 10, point 4).

tests/data/secrets_corpus.json holds one entry per secret family and per place a secret can sit. Each entry
becomes one span of its own, sent as OTLP/HTTP JSON (so that every place can be filled: array and map attributes,
link attributes, scope names, status messages, which the Python SDK cannot all produce), and is read back from
the collector's file archive. Every secret is gone, every control comes out unchanged with its type, and the
collector's text equals the in-process Redactor's with its mask ("****" for "[REDACTED]"). Link attributes are
out of the collector's reach in contrib v0.161.0: their entry pins that documented gap.

Also here: the archive file is private (0600), and error.type cannot blow up the span-metric series.
"""
from __future__ import annotations

import json
import os
import random
import stat
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from locations import TESTS
from redaction_corpus import collector_form, in_process
from stackutil import prom_query, unique_service, wait_for

from agentobs.contract import redaction_rules as rules
from agentobs.contract.otlp_values import any_value
from agentobs.telemetry.content import REDACTED, Redactor

pytestmark = pytest.mark.stack

CORPUS = json.loads((TESTS / "data" / "secrets_corpus.json").read_text())
SUMMARY = {"redaction.masked.keys", "redaction.masked.count"}


# -- OTLP JSON out, Python values back -------------------------------------------------------------------------


def py_value(v: dict[str, Any]) -> Any:
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return v["boolValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "arrayValue" in v:
        return [py_value(x) for x in v["arrayValue"].get("values") or []]
    if "kvlistValue" in v:
        return {kv["key"]: py_value(kv.get("value") or {}) for kv in v["kvlistValue"].get("values") or []}
    return None


def attrs(kv: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {a["key"]: py_value(a.get("value") or {}) for a in kv or []}


def entry_span(entry: dict[str, Any], service: str, trace_id: str, span_id: str, t0: int) -> dict[str, Any]:
    """One resourceSpans holding the entry's value at its place."""
    where, key, value = entry["where"], entry.get("key"), entry["value"]
    kv = [{"key": key, "value": any_value(value)}] if key is not None else []
    span: dict[str, Any] = {
        "traceId": trace_id, "spanId": span_id, "name": value if where == "span_name" else f"corpus {entry['id']}",
        "kind": 1, "startTimeUnixNano": str(t0), "endTimeUnixNano": str(t0 + 1_000_000),
        "attributes": kv if where in ("attribute", "array", "kvlist") else [],
        "events": [{"timeUnixNano": str(t0 + 1000), "name": value if where == "event_name" else "corpus.event",
                    "attributes": kv if where == "event_attribute" else []}],
        "links": [{"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
                   "attributes": kv if where == "link_attribute" else []}],
        "status": {"code": 2, "message": value} if where == "status_message" else {},
    }
    resource = [{"key": "service.name", "value": {"stringValue": service}}]
    if where == "resource_attribute":
        resource += kv
    return {"resource": {"attributes": resource},
            "scopeSpans": [{"scope": {"name": value if where == "scope_name" else "corpus"}, "spans": [span]}]}


def post_otlp(base: str, resource_spans: list[dict[str, Any]]) -> None:
    req = urllib.request.Request(f"{base}/v1/traces", data=json.dumps({"resourceSpans": resource_spans}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200, resp.status


def archived(archive: Path, trace_id: str) -> dict[str, tuple[dict, dict, dict]]:
    """{span id: (resource attributes, scope, span)} of one trace in the collector's archive."""
    out = {}
    if not archive.exists():
        return out
    for line in archive.read_text().splitlines():
        if trace_id not in line:
            continue
        for rs in json.loads(line).get("resourceSpans") or []:
            res = attrs((rs.get("resource") or {}).get("attributes"))
            for ss in rs.get("scopeSpans") or []:
                for s in ss.get("spans") or []:
                    if s["traceId"].lower() == trace_id:
                        out[s["spanId"].lower()] = (res, ss.get("scope") or {}, s)
    return out


def read_back(entry: dict[str, Any], res: dict, scope: dict, span: dict) -> Any:
    where, key = entry["where"], entry.get("key")
    if where == "span_name":
        return span["name"]
    if where == "event_name":
        return span["events"][0]["name"]
    if where == "scope_name":
        return scope.get("name", "")
    if where == "status_message":
        return (span.get("status") or {}).get("message", "")
    if where == "resource_attribute":
        return res.get(key)
    if where == "event_attribute":
        return attrs(span["events"][0].get("attributes")).get(key)
    if where == "link_attribute":
        return attrs(span["links"][0].get("attributes")).get(key)
    return attrs(span.get("attributes")).get(key)


# -- the corpus ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_run(stack):
    service = unique_service("redaction-corpus")
    trace_id = uuid.uuid4().hex
    entries = CORPUS["secrets"] + CORPUS["controls"]
    t0 = time.time_ns() - 60 * 10**9
    ids = {e["id"]: f"{i + 1:016x}" for i, e in enumerate(entries)}
    post_otlp(stack.otlp_http, [entry_span(e, service, trace_id, ids[e["id"]], t0) for e in entries])
    got = wait_for(lambda: (lambda a: a if len(a) >= len(entries) else None)(archived(stack.archive, trace_id)),
                   "every corpus span in the collector's archive", timeout=60)
    return {e["id"]: (e, got[ids[e["id"]]]) for e in entries}


def test_the_collector_masks_every_secret_the_redactor_masks(corpus_run):
    redactor = Redactor(env={})
    checked = 0
    for entry in CORPUS["secrets"]:
        _, (res, scope, span) = corpus_run[entry["id"]]
        out = read_back(entry, res, scope, span)
        mine = in_process(redactor, entry)
        text = json.dumps(out)
        if entry.get("collector") == "not_reached":
            # the documented gap (docs/security.md): contrib v0.161.0 cannot touch link attributes
            assert out == entry["value"], (entry["id"], out)
            assert not any(s in json.dumps(mine) for s in entry["secret"])          # in process it is masked
            continue
        for secret in entry["secret"]:
            assert secret not in text, (entry["id"], secret, out)
        assert out != entry["value"] and rules.MASK_COLLECTOR in text, (entry["id"], out)
        if isinstance(entry["value"], str):
            # the same text on both sides, up to the mask
            assert out == collector_form(mine), (entry["id"], out, mine)
        elif isinstance(entry["value"], list):
            # an array in which something was masked arrives as its JSON text, masked element by element
            assert isinstance(out, str) and json.loads(out) == collector_form(mine), (entry["id"], out, mine)
        else:
            # a map: its JSON text with the sensitive pair or the matches masked; the rest is there
            assert isinstance(out, str), (entry["id"], out)
            for k, v in mine.items():
                if REDACTED not in json.dumps(v):
                    assert json.dumps(k) in out and json.dumps(v) in out, (entry["id"], k, out)
        if entry["where"] in ("attribute", "array", "kvlist"):
            assert "redaction.masked.keys" in attrs(span.get("attributes")) or entry["family"] == "json_key" \
                or entry["family"] == "json_key_escaped", entry["id"]
        checked += 1
    assert checked == sum(1 for e in CORPUS["secrets"] if e.get("collector") != "not_reached") >= 40


def test_the_collector_leaves_every_control_alone(corpus_run):
    for entry in CORPUS["controls"]:
        _, (res, scope, span) = corpus_run[entry["id"]]
        out = read_back(entry, res, scope, span)
        assert out == entry["value"] and type(out) is type(entry["value"]), (entry["id"], out)
        assert not SUMMARY & set(attrs(span.get("attributes"))), entry["id"]        # nothing was masked


def test_the_archive_file_is_private(stack, corpus_run):
    assert corpus_run and stack.archive.exists()
    mode = stat.S_IMODE(os.stat(stack.archive).st_mode)
    assert mode == 0o600, f"{stack.archive} is {mode:o}, not 600"


# -- error.type cannot blow up the span metrics ------------------------------------------------------------------


def test_error_type_values_are_bounded_in_span_metrics(stack):
    service = unique_service("error-type")
    trace_id = uuid.uuid4().hex
    rng = random.Random(7)
    allowed = ["not_found", "tool_unavailable", "max_steps", "TimeoutError", "openai.RateLimitError"]
    junk = [f"{rng.choice(['boom', 'err', 'x'])}-{uuid.UUID(int=rng.getrandbits(128)).hex}" for _ in range(500)]
    junk[::50] = [f"Custom{uuid.UUID(int=rng.getrandbits(128)).hex}Failure" * 2 for _ in junk[::50]]  # > 64 chars
    values = allowed + junk
    t0 = time.time_ns() - 30 * 10**9
    spans = [{"traceId": trace_id, "spanId": f"{i + 1:016x}", "name": "execute_tool get_order", "kind": 1,
              "startTimeUnixNano": str(t0 + i), "endTimeUnixNano": str(t0 + i + 1000),
              "attributes": [{"key": "error.type", "value": {"stringValue": v}}], "status": {"code": 2}}
             for i, v in enumerate(values)]
    post_otlp(stack.otlp_http, [{"resource": {"attributes": [{"key": "service.name",
                                                              "value": {"stringValue": service}}]},
                                 "scopeSpans": [{"scope": {"name": "corpus"}, "spans": spans}]}])
    sel = f'service_name="{service}"'
    wait_for(lambda: float((prom_query(stack.prometheus, f"sum(traces_span_metrics_calls_total{{{sel}}})")
                            or [{"value": [0, "0"]}])[0]["value"][1]) == len(values),
             "the span metrics of every span sent", timeout=60)
    series = prom_query(stack.prometheus, f"traces_span_metrics_calls_total{{{sel}}}")
    got = {r["metric"].get("error_type") for r in series}
    assert got == set(allowed) | {"_OTHER"}, got
    assert len(series) <= len(allowed) + 1
    other = sum(float(r["value"][1]) for r in series if r["metric"].get("error_type") == "_OTHER")
    assert other == len(junk)
    # the stored spans keep what was sent
    kept = wait_for(lambda: (lambda a: a if len(a) >= len(values) else None)(archived(stack.archive, trace_id)),
                    "the spans in the archive", timeout=60)
    stored = {attrs(s.get("attributes"))["error.type"] for _, _, s in kept.values()}
    assert stored == set(values)
