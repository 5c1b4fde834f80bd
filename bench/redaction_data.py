"""Text for the redaction benchmark and tests/scenarios/hostile_input/test_redaction_linear.py: crafted shapes for every
rule, text full of secrets, and ordinary text, each made to a given size (deterministic: no file, no randomness but a
seeded one).

A shape is what made a backtracking engine search without bound, for one rule of
``agentobs.contract.redaction_rules`` (or the key rule of map keys):

- ``prefix``: a long run of what opens the rule (``-----BEGIN RSA PRIVATE KEY-----`` over and over, ``eyJ-`` over and
  over, a megabyte of letters for the e-mail rule's local part);
- ``unterminated``: the opening once, then a body that never reaches what would close it (a key header and no END
  line, a JWT with one dot, a JSON string under a sensitive key with no closing quote);
- ``near_miss``: the whole shape but one character short or wrong, repeated (15 digits grouped like a card, a token
  one character too short, a PEM header with four dashes).

``PIECES`` are the same rules' building blocks, which the property test mixes at random.
"""
from __future__ import annotations

import json
import random

# rule -> {kind: (head, unit)}: the text is ``head`` once, then ``unit`` repeated to the size
SHAPES: dict[str, dict[str, tuple[str, str]]] = {
    "json_key": {
        "prefix": ("", '{"password": '),
        "unterminated": ('{"user": "ana", "password": "', "hunter2 "),
        "near_miss": ("", '"password" "x", "x_password"; '),
    },
    "json_key_escaped": {
        "prefix": ("", '\\"password\\": ['),
        "unterminated": ('\\"password\\": \\"', "hunter2 "),
        "near_miss": ("", '\\"password\\" \\"x\\", '),
    },
    "pem_private_key": {
        "prefix": ("", "-----BEGIN PRIVATE KEY-----"),
        "unterminated": ("-----BEGIN RSA PRIVATE KEY-----\n", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC!\n"),
        "near_miss": ("", "-----BEGIN RSA PRIVATE KEY----\n-----END RSA PRIVATE KEY----\n"),
    },
    "pem_private_key_cut": {
        "prefix": ("", "-----BEGIN EC "),
        "unterminated": ("-----BEGIN ", "RSA EC DSA "),
        "near_miss": ("", "-----BEGIN PRIVATE KEY---- !"),
    },
    "url_credentials": {
        "prefix": ("", "a://"),
        "unterminated": ("postgres://admin:", "s3cr3t:"),
        "near_miss": ("", "https://user:pass/x "),
    },
    "bearer_token": {
        "prefix": ("", "bearer "),
        "unterminated": ("Authorization: Bearer ", "="),
        "near_miss": ("", "Bearer abc1234 "),
    },
    "key_value": {
        "prefix": ("", "a.b.c.password"),
        "unterminated": ("password=", "="),
        "near_miss": ("", "x.api_key: ab; "),
    },
    "openai_key": {
        "prefix": ("", "sk-"),
        "unterminated": ("", "-sk-proj-"),
        "near_miss": ("", "sk-abcdefghijklmno "),
    },
    "stripe_key": {
        "prefix": ("", "sk_live_"),
        "unterminated": ("", "whsec_"),
        "near_miss": ("", "rk_test_abcdefg "),
    },
    "aws_access_key_id": {
        "prefix": ("", "AKIA"),
        "unterminated": ("", "ASIA0"),
        "near_miss": ("", "AKIAABCDEFGHIJKLMNO "),
    },
    "github_token": {
        "prefix": ("", "ghp_"),
        "unterminated": ("", "github_pat_"),
        "near_miss": ("", "ghp_" + "a" * 29 + " "),
    },
    "gitlab_token": {
        "prefix": ("", "glpat-"),
        "unterminated": ("", "-glptt-a"),
        "near_miss": ("", "glpat-" + "a" * 19 + " "),
    },
    "slack_token": {
        "prefix": ("", "xoxb-"),
        "unterminated": ("", "-xapp-1-"),
        "near_miss": ("", "xoxb-abcdefghi "),
    },
    "google_api_key": {
        "prefix": ("", "AIza"),
        "unterminated": ("AIza", "-"),
        "near_miss": ("", "AIza" + "a" * 34 + " "),
    },
    "prefixed_token": {
        "prefix": ("", "hf_"),
        "unterminated": ("", "-pypi-AgEIcHlwaS5vcmc"),
        "near_miss": ("", "npm_" + "a" * 29 + " "),
    },
    "jwt": {
        "prefix": ("", "eyJ-"),
        "unterminated": ("eyJhbGciOiJIUzI1NiJ9.", "eyJzdWIi"),
        "near_miss": ("", "eyJhbGciOi.eyJz "),
    },
    "email": {
        "prefix": ("", "a"),
        "unterminated": ("", "a@b."),
        "near_miss": ("", "ana@example.c "),
    },
    "iban": {
        "prefix": ("", "DE12"),
        "unterminated": ("DE12", "ABCD"),
        "near_miss": ("", "DE12 ABCD 1234!"),
    },
    "card_16": {
        "prefix": ("", "4111"),
        "unterminated": ("4111-1111-1111-", "1"),
        "near_miss": ("", "4111 1111 1111 111 "),
    },
    "card_15": {
        "prefix": ("", "3782"),
        "unterminated": ("3782 822463 ", "1"),
        "near_miss": ("", "3782 822463 1000 "),
    },
    "ssn": {
        "prefix": ("", "123-45-"),
        "unterminated": ("", "123-"),
        "near_miss": ("", "123-45-678 "),
    },
}

# a sensitive key name as a map key (the key rule reads every key of every map the redactor walks)
KEY_SHAPES: dict[str, tuple[str, str]] = {
    "prefix": ("", "password."),
    "unterminated": ("", "a.b_c-d "),
    "near_miss": ("", "passwords_"),
}

# text full of secrets: every one is masked, so the time is that of the masks (see bench/redaction_bench.py)
DENSE: dict[str, str] = {
    "cards": "4111 1111 1111 1111 ",
    "e-mails": "ana@example.com ",
    "keys": "sk-abcdefghijklmnopqrstuvwx ",
}

# building blocks of each rule, which tests/scenarios/hostile_input/test_redaction_linear.py mixes at random
PIECES: dict[str, tuple[str, ...]] = {
    "json_key": ('"', "password", '": ', ":", " ", "{", "[", "\\", "x.", '"a', "}", "]", ",", "1", "true", '\\"'),
    "json_key_escaped": ('\\"', "password", ":", " ", "\\", '"', "x_", "1", "true"),
    "pem_private_key": ("-----BEGIN RSA PRIVATE KEY-----", "-----BEGIN ", "PRIVATE KEY-----", "-----END",
                        "-----END RSA PRIVATE KEY", "MIIE", "\n", " ", "A"),
    "pem_private_key_cut": ("-----BEGIN PRIVATE KEY-----", "-----BEGIN EC ", "ABC", "\n", "!"),
    "url_credentials": ("a://", "https://", "x", ":", "@", "/", "ab+c.d-e://", "user:pass", " ", "é"),
    "bearer_token": ("bearer ", "Bearer\t", "abcd1234", "=", "~", " ", "BEARER"),
    "key_value": ("password", "api_key", "a.", "b_", "x-", "=", ":", " ", "'", '"', "token", "secret", "Basic ",
                  "ab", "1", "\u017f"),      # (long s: (?i) folds it to s, in RE2 and in Go)
    "openai_key": ("sk-", "pk-", "rk-", "a", "_", "-", " "),
    "stripe_key": ("sk_live_", "whsec_", "rk_test_", "pk_", "a1", "_"),
    "aws_access_key_id": ("AKIA", "ASIA", "A", "0", "Z9", " "),
    "github_token": ("ghp_", "github_pat_", "a", "_", "gh"),
    "gitlab_token": ("glpat-", "gldt-", "glptt-", "a", "-", "gl"),
    "slack_token": ("xoxb-", "xapp-1-", "xox", "a", "-", "1"),
    "google_api_key": ("AIza", "a", "_", "-", "AI"),
    "prefixed_token": ("hf_", "gsk_", "r8_", "npm_", "pypi-AgEIcHlwaS5vcmc", "a", "_"),
    "jwt": ("eyJ", "aaaaa", ".", "-", "_", "eyJhbGci", " "),
    "email": ("a", "@", ".", "-", "b.c", "+", "%", "co", " ", "a@b"),
    "iban": ("DE12", " ", "ABCD", "1", "GB", "12"),
    "card_16": ("4111", " ", "-", ".", "1", "0000"),
    "card_15": ("3782", "822463", "10005", " ", "-"),
    "ssn": ("123", "-", "45", "6789", "0"),
}


def fill(head: str, unit: str, size: int) -> str:
    """``head``, then ``unit`` repeated, cut to ``size`` characters."""
    body = unit * ((size - len(head)) // max(1, len(unit)) + 1)
    return (head + body)[:size]


def shaped(rule: str, kind: str, size: int) -> str:
    head, unit = SHAPES[rule][kind]
    return fill(head, unit, size)


def shapes() -> list[tuple[str, str]]:
    """Every (rule, kind) of ``SHAPES``."""
    return [(rule, kind) for rule, kinds in SHAPES.items() for kind in kinds]


_PROSE = ("the order arrived with a damaged zipper and the customer asked for a refund before the weekend "
          "please confirm the shipping address and the tracking number so we can close the ticket today "
          "our policy allows returns within thirty days of delivery for items in their original packaging")
_WORDS = _PROSE.split()


def ordinary(size: int, seed: int = 0) -> str:
    """What an agent's tools and model write, ``size`` characters of it: support-desk prose, JSON order records
    (an order id, amounts, dates, a status, a customer e-mail now and then) and log lines."""
    rng = random.Random(seed)
    parts: list[str] = []
    n = 0
    while n < size:
        kind = rng.random()
        if kind < 0.5:
            text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 30))).capitalize() + ". "
        elif kind < 0.85:
            order = {"order_id": f"ord_{rng.randint(1000, 99999)}", "status": rng.choice(("delivered", "shipped")),
                     "total_cents": rng.randint(500, 90000), "items": rng.randint(1, 5),
                     "placed_at": f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T10:{rng.randint(10, 59)}:00Z"}
            if rng.random() < 0.1:
                order["customer_email"] = f"customer{rng.randint(1, 999)}@example.com"
            text = json.dumps(order) + "\n"
        else:
            text = (f"2026-05-0{rng.randint(1, 9)} 12:{rng.randint(10, 59)}:{rng.randint(10, 59)} INFO tool="
                    f"{rng.choice(('get_order', 'issue_refund'))} latency_ms={rng.randint(3, 900)} ok\n")
        parts.append(text)
        n += len(text)
    return "".join(parts)[:size]
