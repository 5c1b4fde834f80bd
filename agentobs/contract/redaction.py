"""Masking secrets in text and values, with the rules of ``redaction_rules`` (which the collector applies too):
what telemetry records (``agentobs.telemetry``) and what the analysis shows of the traces it reads (the
report in every format, the runs table, a trace's tree) go through one ``Redactor``.

The rules run on RE2 (``linear_rx``), in time proportional to the text: a string of n bytes costs at most one
pass per rule over its n bytes plus a constant per secret masked, whatever it holds (no per-string bound is
needed: none is set). A string of up to ``PREFILTER_BYTES`` is first checked against all the rules at once, and
left alone after that one pass when none matches: most strings are short and clean, and on a short string each
pass costs its start-up more than its bytes. A longer one goes through every rule, so that what it costs does not
depend on what it holds.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from . import linear_rx
from . import redaction_rules as rules

REDACT_KEYS_ENV = "AGENTOBS_REDACT_KEYS"
REDACTED = rules.MASK_IN_PROCESS
PREFILTER_BYTES = 1 << 12

_SECRET_ENV = re.compile(rules.SECRET_ENV_NAME, re.ASCII)     # names of this process's environment variables
_MAX_DEPTH = 8             # JSON documents nested in strings, parsed and redacted this deep
_MASK = REDACTED.encode()
_JSON_MASK = b'"' + _MASK + b'"'                      # after group 1 of json_key: "password": "[REDACTED]"
_ESCAPED_MASK = b'\\"' + _MASK + b'\\"'               # after group 1 of json_key_escaped: \"password\": \"[REDACTED]\"

_Rules = tuple[tuple[linear_rx.Rule, bytes], ...]


class Redactor:
    """Masks secrets, with the rules of ``agentobs.contract.redaction_rules``.

    - a value under a sensitive key (``password``, ``x-api-key``, ``client_secret``, ...: the rules' key names, or
      ``keys``, plus ``AGENTOBS_REDACT_KEYS``) is replaced whole, at any depth of maps and lists;
    - inside strings, with ``patterns`` on (the default; ``AGENTOBS_REDACT_PATTERNS=0`` turns them off): the value
      rules (PEM blocks, credentials in URLs, bearer tokens, name=value pairs, API keys and tokens of the known
      families, e-mail addresses, IBANs, card numbers, SSNs), and the values of secret-looking environment
      variables of this process;
    - a string holding a JSON document (an object or an array) is parsed, redacted by key and value, and
      serialized again; text that only contains JSON has its sensitive "key": value pairs masked in place.
    """

    def __init__(self, keys: Iterable[str] | None = None, *, env: Mapping[str, str] | None = None,
                 patterns: bool = True):
        environ = env if env is not None else os.environ
        extra = [_name_pattern(k) for k in environ.get(REDACT_KEYS_ENV, "").split(",") if k.strip()]
        given = rules.SENSITIVE_KEYS if keys is None else tuple(_name_pattern(k) for k in keys if k.strip())
        names = given + tuple(extra)
        self.keys = names
        self.patterns = patterns
        self._key: linear_rx.Rule | None = None
        self._rules: _Rules = ()
        self._any: linear_rx.Rule | None = None
        if names or patterns:
            self._key, self._rules, self._any = _compiled(names, patterns)
        self.env_secrets = sorted({v for k, v in environ.items() if _SECRET_ENV.search(k) and len(v) >= 8},
                                  key=len, reverse=True)
        self._clean: dict[str, bool] = {}

    def clean(self, s: str) -> bool:
        """Whether ``text`` leaves this (short) string alone; remembered for the vocabulary of codes and names."""
        hit = self._clean.get(s)
        if hit is None:
            hit = self.text(s) == s
            if len(self._clean) < 4096:
                self._clean[s] = hit
        return hit

    def sensitive_key(self, key: str) -> bool:
        return self._key is not None and self._key.search(linear_rx.to_bytes(key)[0])

    def text(self, s: str) -> str:
        """Masks secrets inside one string (no JSON parsing)."""
        for secret in self.env_secrets:
            if secret in s:
                s = s.replace(secret, REDACTED)
        if self._any is None:
            return s
        data, changed = linear_rx.to_bytes(s)
        if len(data) <= PREFILTER_BYTES and not self._any.search(data):
            return linear_rx.to_text(data) if changed else s
        for rule, mask in self._rules:
            data = rule.sub(data, mask)
        return linear_rx.to_text(data)

    def value(self, v: Any, _depth: int = 0) -> Any:
        """Masks secrets in a value of any shape: strings (JSON documents in them too), maps, lists, tuples."""
        if isinstance(v, str):
            return self._string(v, _depth)
        if isinstance(v, Mapping):
            return {(self.text(k) if isinstance(k, str) else k):
                    (REDACTED if isinstance(k, str) and self.sensitive_key(k) else self.value(x, _depth))
                    for k, x in v.items()}
        if isinstance(v, tuple):
            return tuple(self.value(x, _depth) for x in v)
        if isinstance(v, list):
            return [self.value(x, _depth) for x in v]
        return v

    def json(self, v: Any) -> str:
        """Redacts structure and strings, serializes, then redacts the serialized text once more."""
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except (ValueError, RecursionError):    # (not JSON, or nested past Python's limit: masked as text)
                return json.dumps(self.text(v))
        return self.text(json.dumps(self.value(v), sort_keys=True, default=str))

    def _string(self, s: str, depth: int) -> str:
        head = s.lstrip()[:1]
        if head in ("{", "[") and depth < _MAX_DEPTH:
            try:
                doc = json.loads(s)
            except (ValueError, RecursionError):    # (a document nested past Python's limit is masked as text)
                doc = None
            if isinstance(doc, (dict, list)):
                return self.text(json.dumps(self.value(doc, depth + 1), ensure_ascii=False))
        return self.text(s)


def _name_pattern(key: str) -> str:
    """A key name given by the application (``keys``, AGENTOBS_REDACT_KEYS) as a rule fragment: case and the
    separators ``_``, ``-``, ``.`` and space do not matter."""
    return "[._ -]?".join(linear_rx.escape(part) for part in re.split(r"[._ -]+", key.strip().lower()) if part)


@cache
def _compiled(names: tuple[str, ...], patterns: bool) -> tuple[linear_rx.Rule | None, _Rules, linear_rx.Rule]:
    """The key rule, the rules ``text`` applies in order (with the mask each puts in), and all of them at once (the
    prefilter), for these key names; compiled once per set of names (every default Redactor shares them)."""
    key = linear_rx.Rule(rules.key_pattern(names)) if names else None
    applied: list[tuple[linear_rx.Rule, bytes]] = []
    if names:
        applied += [(linear_rx.Rule(rx, keep=True), _ESCAPED_MASK if name == "json_key_escaped" else _JSON_MASK)
                    for name, rx in rules.key_rules(names)]
    if patterns:
        for name, rx in rules.VALUE_RULES:       # in order; name=value pairs follow these key names, or go
            if name == "key_value":
                if not names:
                    continue
                rx = rules.key_value_rule(names)
            applied.append((linear_rx.Rule(rx), _MASK))
    return key, tuple(applied), linear_rx.Rule(rules.any_rule([r.pattern for r, _ in applied]))


_SHOWN: dict[str, str] = {}
_SHOWN_KEPT = 1 << 16


def secrets_masked(text: str) -> str:
    """``text`` as agentobs shows it to a person (the terminal, the JSON and HTML reports, the runs CSV): with the
    secrets masked by a ``Redactor`` of this process's settings (its key names and AGENTOBS_REDACT_KEYS, the values
    of its secret-looking environment variables). Traces from other instrumentations keep what they were given:
    an error message with an API key in it must not travel further in a report. The run ids agentobs makes of a
    trace id and a span id are kept as they are, alone or inside the text (``_RUN_ID``). Remembered per string."""
    got = _SHOWN.get(text)
    if got is None:
        got = _masked(text) if text else text
        if len(_SHOWN) < _SHOWN_KEPT and len(text) < 4096:
            _SHOWN[text] = got
    return got


# a run id the analysis makes, ``<trace id>:<span id>`` in lower-case hex as the loader writes ids: no secret, but
# one span id in about 1,900 is 16 decimal digits, which the card rule masks, and the run's id would be lost
# (Python's re, for the look-around; linear: a candidate starts only where no letter or digit precedes it, at
# most once per run of hex digits, and reads at most 49 characters)
_RUN_ID = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{32}:[0-9a-f]{16}(?![0-9A-Za-z])", re.ASCII)
_MARK = "\ue000"            # (private use characters: no rule matches them, JSON keeps them)
_MARKS = 0x1000
_MARKED = re.compile("\ue000[\ue100-\uf0ff]")


def _masked(text: str) -> str:
    """``text`` with its secrets masked, its run ids kept: each run id stands in for itself as a mark no rule
    matches while the whole text is masked, so a run id inside a secret (a value under a sensitive key, say)
    goes with it, as before."""
    if ":" not in text or _MARK in text:
        return _default().text(text)
    ids = _RUN_ID.findall(text)
    if not ids or len(ids) > _MARKS:
        return _default().text(text)
    marks = iter(range(len(ids)))
    masked = _default().text(_RUN_ID.sub(lambda _: _MARK + chr(0xE100 + next(marks)), text))
    return _MARKED.sub(lambda m: ids[ord(m.group()[1]) - 0xE100], masked)     # one pass, however many ids


_DEFAULT: list[Redactor] = []


def _default() -> Redactor:
    if not _DEFAULT:
        _DEFAULT.append(Redactor())
    return _DEFAULT[0]
