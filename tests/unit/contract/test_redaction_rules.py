"""One source of redaction rules, used in process and by the collector (issue 10, point 4): the generated collector
config is up to date, every rule means the same in Python and in Go RE2, and the in-process Redactor masks every
secret of tests/data/secrets_corpus.json and leaves every control alone. The same corpus goes through the real
collector in tests/scenarios/stack/test_redaction_corpus.py."""
from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from locations import ROOT
from redaction_corpus import in_process

from agentobs.contract import linear_rx
from agentobs.contract import redaction_rules as rules
from agentobs.contract import semconv as sc
from agentobs.telemetry.content import REDACTED, Redactor
from bench import redaction_data as shapes

CORPUS = json.loads((ROOT / "tests" / "data" / "secrets_corpus.json").read_text())


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
    than (?i); RE2 compiles each one in process (the Go test below compiles them with Go's regexp)."""
    forbidden = re.compile(r"\(\?[=!<>]|\(\?P=|\\[1-9]|[*+?}]\+|\(\?>")
    everything = [rx for _, rx in (*rules.VALUE_RULES, *rules.KEY_RULES)] + [rules.KEY_PATTERN,
                                                                             rules.COLLECTOR_MAP_KEY]
    for rx in everything:
        assert not forbidden.search(rx), rx
        linear_rx.Rule(rx)
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
	Keys      []string `json:"keys"`
	Masks     []string `json:"masks"`
	Values    []string `json:"values"`
	Mask      string   `json:"mask"`
	Inputs    []string `json:"inputs"`
	KeyRule   string   `json:"key_rule"`
	KeyInputs []string `json:"key_inputs"`
}

type result struct {
	Texts []string `json:"texts"`
	Keys  []bool   `json:"keys"`
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
	out := result{Texts: []string{}, Keys: []bool{}}
	for _, in := range s.Inputs {
		for i, re := range keys {
			in = re.ReplaceAllString(in, s.Masks[i])
		}
		for _, re := range values {
			in = re.ReplaceAllString(in, s.Mask)
		}
		out.Texts = append(out.Texts, in)
	}
	key := regexp.MustCompile(s.KeyRule)
	for _, k := range s.KeyInputs {
		out.Keys = append(out.Keys, key.MatchString(k))
	}
	enc, _ := json.Marshal(out)
	os.Stdout.Write(enc)
}
"""


# Where the two engines could part, each tried on both sides: (?i) folds by Unicode's simple case folding in RE2 as
# in Go (the long s and the Kelvin sign fold to s and k; Python's re with re.ASCII did not), \b looks at ASCII
# word characters only, "$" is the very end of the text (Python's re also matched before a final newline), a lone
# surrogate reads as U+FFFD, the rules apply in order (a key masked before the e-mail rule sees it), and a user
# and password longer than 256 characters are masked (the bound is gone from both sides).
BEHAVIOUR = [
    "pa\u017f\u017fword=hunter2", "api_\u212aey: abcdef", "\u212a\u212a ana@example.com",
    "\u00e94111 1111 1111 1111\u00e9", "x\u00e9ghp_" + "a" * 36, "caf\u00e9 sk-" + "b" * 20,
    "note\ud800 ana@example.com \udfff", "user@sk-abcdefghijklmnopqrstuv.com", "token: Bearer abcdefghijk",
    "postgres://" + "u" * 300 + ":" + "p" * 300 + "@db:5432/x", "https://a:b@c@d:e@host/x",
    '{"password": "a\\"b", "note": "x"}', '{\\"api_key\\": \\"abc\\", \\"n\\": 1}',
    "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\ntail -----BEGIN EC PRIVATE KEY-----\nAB",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig eyJ-eyJ-eyJ.x",
]
KEYS = ["password", "password\n", "db.password", "pa\u017f\u017fword", "x-api-\u212aey", "passwords",
        "gen_ai.token.type", "Authorization", "my password", "\u00e9.token"]


def _mixtures(count: int) -> list[str]:
    """Seeded mixtures of each rule's pieces (bench/redaction_data.py), a few hundred characters each."""
    rng = random.Random(43)
    out = []
    for _, pieces in sorted(shapes.PIECES.items()):
        for _ in range(count):
            out.append("".join(rng.choice((*pieces, " ", "a", "\n", "é")) for _ in range(rng.randint(5, 120))))
    return out


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain (the stack build needs one)")
def test_go_re2_masks_exactly_what_python_masks(tmp_path):
    """The rules applied by Go's regexp (the collector's engine) and by RE2 in process give the same text for
    every string of the corpus, secrets and controls, for some text around them, for the cases where two engines
    could part (BEHAVIOUR), for every crafted shape of the linear-time test and for seeded mixtures of each rule's
    pieces; and the key rule says the same of every key."""
    inputs = [e["value"] for e in CORPUS["secrets"] + CORPUS["controls"] if isinstance(e["value"], str)]
    inputs += [f"before {v} after" for v in list(inputs)] + ["Ünïcödé ana@example.com — 4111 1111 1111 1111"]
    inputs += BEHAVIOUR + [shapes.shaped(rule, kind, 6000) for rule, kind in shapes.shapes()] + _mixtures(12)
    masks = ['${1}"' + rules.MASK_COLLECTOR + '"' if n == "json_key" else '${1}\\"' + rules.MASK_COLLECTOR + '\\"'
             for n, _ in rules.KEY_RULES]
    spec = {"keys": [rx for _, rx in rules.KEY_RULES], "masks": masks,
            "values": [rx for _, rx in rules.VALUE_RULES], "mask": rules.MASK_COLLECTOR, "inputs": inputs,
            "key_rule": rules.KEY_PATTERN, "key_inputs": KEYS}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "main.go").write_text(_GO)
    done = subprocess.run(["go", "run", "main.go", "spec.json"], cwd=tmp_path, capture_output=True, text=True,
                          env={**__import__("os").environ, "GO111MODULE": "off", "GOFLAGS": ""}, timeout=300)
    assert done.returncode == 0, done.stderr
    go = json.loads(done.stdout)
    py = Redactor(env={})
    want = [py.text(s).replace(REDACTED, rules.MASK_COLLECTOR) for s in inputs]
    for i, (g, w) in enumerate(zip(go["texts"], want, strict=True)):
        assert g == w, (inputs[i][:200], g[:200], w[:200])
    assert go["keys"] == [py.sensitive_key(k) for k in KEYS]
    assert go["keys"][:5] == [True, False, True, True, True]      # the two foldings and the end of the text


def test_behaviour_where_engines_could_part_in_process():
    """The same cases without Go: what the in-process redactor makes of them."""
    red = Redactor(env={})
    assert red.text("pa\u017f\u017fword=hunter2") == REDACTED
    assert red.text("note\ud800 x") == "note\ufffd x"
    assert red.text("postgres://" + "u" * 300 + ":" + "p" * 300 + "@db:5432/x") == REDACTED + "db:5432/x"
    assert red.text("user@sk-abcdefghijklmnopqrstuv.com") == "user@" + REDACTED + ".com"
    assert not red.sensitive_key("password\n") and red.sensitive_key("x-api-\u212aey")
