"""One source of redaction rules, used in process and by the collector (issue 10, point 4): the generated collector
config is up to date, every rule means the same in Python and in Go RE2, and the in-process Redactor masks every
secret of tests/data/secrets_corpus.json and leaves every control alone. The same corpus goes through the real
collector in tests/stack/test_redaction_corpus.py."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentobs.contract import redaction_rules as rules
from agentobs.contract import semconv as sc
from agentobs.telemetry.content import REDACTED, Redactor

ROOT = Path(__file__).resolve().parent.parent
CORPUS = json.loads((ROOT / "tests" / "data" / "secrets_corpus.json").read_text())
NAMES = ("span_name", "event_name", "scope_name", "status_message")


def in_process(redactor: Redactor, entry: dict[str, Any]) -> Any:
    """What the in-process Redactor makes of a corpus entry: a name or status message is text, anything else is
    the value of an attribute under the entry's key."""
    if entry["where"] in NAMES:
        return redactor.value(entry["value"])
    return redactor.value({entry["key"]: entry["value"]})[entry["key"]]


def collector_form(v: Any) -> Any:
    """The in-process result with the collector's mask."""
    if isinstance(v, str):
        return v.replace(REDACTED, rules.MASK_COLLECTOR)
    if isinstance(v, dict):
        return {k: collector_form(x) for k, x in v.items()}
    if isinstance(v, list):
        return [collector_form(x) for x in v]
    return v


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(env={})


def test_the_collector_config_is_generated_from_the_rules():
    done = subprocess.run([sys.executable, str(ROOT / "collector" / "generate.py"), "--check"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr + "\nrun: .venv/bin/python collector/generate.py"
    config = yaml.safe_load((ROOT / "collector" / "config.yaml").read_text())
    red = config["processors"]["redaction"]
    # the file holds the rules verbatim ("$" doubled for the collector's variable expansion)
    assert red["blocked_values"][:len(rules.VALUE_RULES)] == [rx.replace("$", "$$") for _, rx in rules.VALUE_RULES]
    assert red["blocked_key_patterns"] == [rules.KEY_PATTERN.replace("$", "$$")]
    assert red["redact_all_types"] is True and red["allow_all_keys"] is True
    pipelines = config["service"]["pipelines"]
    assert pipelines["traces"]["processors"] == ["memory_limiter", "transform/redaction", "redaction", "batch"]
    assert pipelines["traces/span_metrics"] == {"receivers": ["forward/span_metrics"],
                                                "processors": ["transform/error_type"], "exporters": ["span_metrics"]}
    statements = json.dumps(config["processors"]["transform/redaction"])
    for field in ("span.name", "span.status.message", "spanevent.name", "scope.name", "span.attributes",
                  "spanevent.attributes", "scope.attributes", "resource.attributes"):
        assert field in statements, field


def test_every_rule_is_plain_re2_syntax():
    """No look-around, backreferences, possessive quantifiers or atomic groups, no leading global flag other
    than (?i); Python compiles each one (the Go test below compiles them with RE2)."""
    forbidden = re.compile(r"\(\?[=!<>]|\(\?P=|\\[1-9]|[*+?}]\+|\(\?>")
    everything = [rx for _, rx in (*rules.VALUE_RULES, *rules.KEY_RULES)] + [rules.KEY_PATTERN,
                                                                             rules.COLLECTOR_MAP_KEY]
    for rx in everything:
        assert not forbidden.search(rx), rx
        re.compile(rx, re.ASCII)
    assert len({name for name, _ in rules.VALUE_RULES}) == len(rules.VALUE_RULES)


def test_no_contract_key_is_sensitive_and_the_usual_secret_keys_are(redactor):
    contract = set(sc.ATTRIBUTE_TYPES) | {sc.TOKEN_TYPE, sc.BUDGET_LIMIT_ATTR, "service.name", "session.id",
                                          "redaction.masked.keys"}
    assert [k for k in contract if redactor.sensitive_key(k)] == []
    for key in ("password", "db.password", "x-api-key", "apiKey", "client_secret", "clientSecret", "private_key",
                "passphrase", "pwd", "credentials", "token", "access_token", "session", "set-cookie",
                "http.request.header.authorization", "aws_secret_access_key", "card_number"):
        assert redactor.sensitive_key(key), key


def test_the_redactor_masks_every_secret_of_the_corpus(redactor):
    for entry in CORPUS["secrets"]:
        got = in_process(redactor, entry)
        text = json.dumps(got)
        for secret in entry["secret"]:
            assert secret not in text, (entry["id"], secret, got)
        assert REDACTED in text, (entry["id"], got)


def test_the_redactor_leaves_every_control_alone(redactor):
    for entry in CORPUS["controls"]:
        got = in_process(redactor, entry)
        assert got == entry["value"] and type(got) is type(entry["value"]), (entry["id"], got)


def test_json_documents_in_strings_stay_json(redactor):
    for entry in CORPUS["secrets"]:
        if entry["family"].startswith("json_key"):
            doc = json.loads(in_process(redactor, entry))
            assert isinstance(doc, dict), entry["id"]
    masked = json.loads(in_process(redactor, next(e for e in CORPUS["secrets"] if e["id"] == "json_in_string")))
    assert masked == {"user": "ana", "password": REDACTED, "nested": {"api_key": REDACTED, "n": 3},
                      "passphrase": REDACTED}


def test_card_numbers_need_no_luhn_check_on_either_side(redactor):
    """The collector cannot check Luhn inside a longer string, so neither side does: any 4-4-4-4 or 4-6-5 number
    is masked, Luhn-valid or not; a 13- or 19-digit run (a millisecond or nanosecond timestamp) is not."""
    assert redactor.text("4111 1111 1111 1111") == REDACTED                 # Luhn-valid
    assert redactor.text("1234-5678-9012-3456") == REDACTED                 # not Luhn-valid: masked all the same
    assert redactor.text("1767225600000") == "1767225600000"
    assert redactor.text("1767225600000000000") == "1767225600000000000"


def test_application_keys_and_patterns_off():
    custom = Redactor(env={"AGENTOBS_REDACT_KEYS": "order-id, internal note"})
    assert custom.value({"order_id": "ord_1", "Internal.Note": "x", "ok": "y"}) == \
        {"order_id": REDACTED, "Internal.Note": REDACTED, "ok": "y"}
    assert custom.text("see order_id=ord_12345") == f"see {REDACTED}"
    plain = Redactor(env={}, patterns=False)
    assert plain.value({"password": "x", "note": "ana@example.com"}) == {"password": REDACTED,
                                                                        "note": "ana@example.com"}
    nothing = Redactor([], env={}, patterns=False)
    assert nothing.value({"password": "x"}) == {"password": "x"}


_GO = """package main

import (
	"encoding/json"
	"os"
	"regexp"
)

type spec struct {
	Keys   []string `json:"keys"`
	Masks  []string `json:"masks"`
	Values []string `json:"values"`
	Mask   string   `json:"mask"`
	Inputs []string `json:"inputs"`
}

func main() {
	var s spec
	b, _ := os.ReadFile(os.Args[1])
	if err := json.Unmarshal(b, &s); err != nil {
		panic(err)
	}
	var keys, values []*regexp.Regexp
	for _, p := range s.Keys {
		keys = append(keys, regexp.MustCompile(p))
	}
	for _, p := range s.Values {
		values = append(values, regexp.MustCompile(p))
	}
	out := []string{}
	for _, in := range s.Inputs {
		for i, re := range keys {
			in = re.ReplaceAllString(in, s.Masks[i])
		}
		for _, re := range values {
			in = re.ReplaceAllString(in, s.Mask)
		}
		out = append(out, in)
	}
	enc, _ := json.Marshal(out)
	os.Stdout.Write(enc)
}
"""


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain (the stack build needs one)")
def test_go_re2_masks_exactly_what_python_masks(tmp_path):
    """The rules applied by Go's regexp (the collector's engine) and by Python's re give the same text for every
    string of the corpus, secrets and controls, and for some text around them."""
    inputs = [e["value"] for e in CORPUS["secrets"] + CORPUS["controls"] if isinstance(e["value"], str)]
    inputs += [f"before {v} after" for v in list(inputs)] + ["Ünïcödé ana@example.com — 4111 1111 1111 1111"]
    masks = ['${1}"' + rules.MASK_COLLECTOR + '"' if n == "json_key" else '${1}\\"' + rules.MASK_COLLECTOR + '\\"'
             for n, _ in rules.KEY_RULES]
    spec = {"keys": [rx for _, rx in rules.KEY_RULES], "masks": masks,
            "values": [rx for _, rx in rules.VALUE_RULES], "mask": rules.MASK_COLLECTOR, "inputs": inputs}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "main.go").write_text(_GO)
    done = subprocess.run(["go", "run", "main.go", "spec.json"], cwd=tmp_path, capture_output=True, text=True,
                          env={**__import__("os").environ, "GO111MODULE": "off", "GOFLAGS": ""}, timeout=300)
    assert done.returncode == 0, done.stderr
    go = json.loads(done.stdout)
    py = Redactor(env={})
    want = [py.text(s).replace(REDACTED, rules.MASK_COLLECTOR) for s in inputs]
    assert go == want
