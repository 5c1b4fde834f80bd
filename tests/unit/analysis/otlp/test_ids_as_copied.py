"""``agentobs trace`` takes a trace id as users copy it: with white space around it (from a page or a log), in upper
case, with 0x, as base64 (protobuf's JSON writes ids so, and the loader reads them), or without its leading zeros (a
64-bit Zipkin or Jaeger id of 16 digits, which the loader pads to 32). Each of these said "not in the file"; text
that is no trace id at all now says so, with the way out."""
from __future__ import annotations

import base64
import json

import pytest
from click.testing import CliRunner

from agentobs.analysis.otlp.ids import trace_id_of
from agentobs.cli.main import cli

TRACE = "963d977beb698be2e4e129d6361a044a"
RAW = bytes.fromhex(TRACE)


@pytest.mark.parametrize("typed", [
    TRACE, TRACE.upper(), f"  {TRACE}\n", f"0x{TRACE}", f"0X{TRACE.upper()}",
    base64.b64encode(RAW).decode(), base64.urlsafe_b64encode(RAW).decode().rstrip("="),
    f" {base64.b64encode(RAW).decode()} ",
])
def test_the_forms_of_one_trace_id(typed):
    assert trace_id_of(typed) == TRACE


@pytest.mark.parametrize("typed", ["", "  ", "zz", "[red]x[/red]", "g" * 32, "a" * 33, "lj2Xe+tpi+Lk4SnWNhoE",
                                   f"{TRACE}:0123456789abcdef"])
def test_text_that_is_no_trace_id(typed):
    assert trace_id_of(typed) is None


def test_short_hex_is_padded_as_the_loader_pads_64_bit_ids():
    assert trace_id_of("a1b2c3d4e5f60718") == "0" * 16 + "a1b2c3d4e5f60718"


def _zipkin(path):
    spans = [{"traceId": "a1b2c3d4e5f60718", "id": "1111111111111111", "name": "invoke_agent helper",
              "timestamp": 1700000000000000, "duration": 3000, "localEndpoint": {"serviceName": "app"},
              "tags": {"gen_ai.operation.name": "invoke_agent"}},
             {"traceId": "a1b2c3d4e5f60718", "id": "2222222222222222", "parentId": "1111111111111111",
              "name": "chat gpt-4o", "timestamp": 1700000000001000, "duration": 1000,
              "localEndpoint": {"serviceName": "app"},
              "tags": {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}}]
    path.write_text(json.dumps(spans))
    return path


def test_the_cli_finds_a_trace_by_the_id_as_copied(tmp_path):
    src = str(_zipkin(tmp_path / "zipkin.json"))
    runner = CliRunner()
    want = runner.invoke(cli, ["trace", "0" * 16 + "a1b2c3d4e5f60718", src])
    assert want.exit_code == 0 and "chat gpt-4o" in want.output, want.output
    padded = base64.b64encode(bytes.fromhex("0" * 16 + "a1b2c3d4e5f60718")).decode()
    for typed in ("a1b2c3d4e5f60718", " A1B2C3D4E5F60718 ", "0xa1b2c3d4e5f60718", padded):
        got = runner.invoke(cli, ["trace", typed, src])
        assert got.exit_code == 0, (typed, got.output)
        assert got.output == want.output, typed


def test_text_that_is_no_trace_id_is_one_line_with_the_way_out(tmp_path):
    src = str(_zipkin(tmp_path / "zipkin.json"))
    res = CliRunner().invoke(cli, ["trace", "run-42", src])
    assert res.exit_code == 2
    assert res.output.count("\n") == 1 and "'run-42' is neither a trace id (its 32 hex digits" in res.output
    assert "nor a run, task or conversation id in" in res.output
