"""The one source of what counts as a secret: value patterns and sensitive key names.

Used by the in-process ``Redactor`` (agentobs.contract.redaction) and written into the collector's configuration by
``collector/generate.py`` (``--check`` keeps collector/config.yaml in step;
tests/unit/contract/test_redaction_rules.py runs it). Every regex is RE2 syntax, which both sides run on an engine
in linear time: Go's ``regexp`` in the collector, RE2 itself in process (``linear_rx``). So: no look-around, no
backreferences, no possessive quantifiers, ``[0-9]`` rather than Unicode classes. A repetition is bounded where the
meaning needs a bound, not to spare an engine; and never with a large bound on a class that can start again inside
its own run (a count per start makes the automaton's states multiply:
tests/scenarios/hostile_input/test_redaction_linear.py times every rule on such runs).

Value rules are applied in order, each replacing its whole match by the mask (``[REDACTED]`` in process, ``****``
in the collector). ``JSON_KEY`` keeps the key and masks only the value of a sensitive key inside a JSON document
held in a string, so the document stays valid JSON. Key names are matched case-insensitively as the whole key or
as its last part after a separator (``.``, ``_``, ``-`` or a space): ``x-api-key`` and ``db.password`` are
sensitive, ``gen_ai.usage.input_tokens`` and ``gen_ai.token.type`` are not.

Payment cards: any 16-digit number grouped 4-4-4-4 and any 15-digit number grouped 4-6-5 (separators: none, a
space, a dash or a dot) is masked on both sides; there is no Luhn check, because the collector cannot make one
inside a longer string, and the two sides must agree.
"""
from __future__ import annotations

from collections.abc import Iterable

MASK_IN_PROCESS = "[REDACTED]"
MASK_COLLECTOR = "****"

# Sensitive key names, as regex fragments (case-insensitive; [._-]? lets "api_key", "api-key", "apiKey" match).
SENSITIVE_KEYS: tuple[str, ...] = (
    "password", "passwd", "pwd", "passphrase",
    "secret", "client[._-]?secret", "secret[._-]?key",
    "api[._-]?key", "access[._-]?key", "private[._-]?key",
    "token", "access[._-]?token", "refresh[._-]?token", "id[._-]?token", "auth[._-]?token", "session[._-]?token",
    "bearer[._-]?token",
    "authorization", "proxy[._-]?authorization",
    "cookie", "set[._-]?cookie", "session", "sessionid",
    "credentials?",
    "card[._-]?number", "card", "cvv", "cvc", "ssn", "iban",
)

def names_pattern(names: tuple[str, ...] = SENSITIVE_KEYS) -> str:
    return "|".join(names)


def key_pattern(names: tuple[str, ...] = SENSITIVE_KEYS) -> str:
    """An attribute key or map key is sensitive when it is one of the names, or ends with one after a separator."""
    return rf"(?i)(?:^|[._ -])(?:{names_pattern(names)})$"


# A JSON value that the key rule masks: a string, a number, a boolean, a flat object or a flat array.
_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
_JSON_VALUE = rf'(?:{_JSON_STRING}|-?[0-9][0-9.eE+-]*|true|false|\{{[^{{}}]*\}}|\[[^\[\]]*\])'


def _json_key_name(names: tuple[str, ...]) -> str:
    return rf'"(?:[^"\\]{{0,80}}[._ -])?(?:{names_pattern(names)})"'


def key_rules(names: tuple[str, ...] = SENSITIVE_KEYS) -> tuple[tuple[str, str], ...]:
    """Group-preserving rules, as (name, regex): a sensitive key's value inside a JSON document held in a string.
    Group 1 (kept) is the key and the colon; the rest of the match, the value, is replaced by the mask as a JSON
    string (``\\"mask\\"`` inside an escaped document)."""
    n = names_pattern(names)
    return (
        ("json_key", rf'(?i)({_json_key_name(names)}[ \t\r\n]*:[ \t\r\n]*){_JSON_VALUE}'),
        # the same inside an escaped JSON document (JSON in a JSON string: \"password\": \"hunter2\")
        ("json_key_escaped", rf'(?i)(\\"(?:[^"\\]{{0,80}}[._ -])?(?:{n})\\"[ \t]*:[ \t]*)'
                             r'(?:\\"(?:[^"\\]|\\[^"])*\\"|-?[0-9][0-9.eE+-]*|true|false)'),
    )


def key_value_rule(names: tuple[str, ...] = SENSITIVE_KEYS) -> str:
    """name=value / name: value for a sensitive name, in free text, headers and URL query strings (?api_key=...,
    &token=..., access_token=..., aws_secret_access_key=..., password: ...): the name and the value are masked."""
    return (rf"(?i)\b(?:[A-Za-z0-9]{{1,20}}[._-]){{0,3}}(?:{names_pattern(names)})[ \t]*[:=][ \t]*[\"']?"
            r"(?:(?:basic|bearer|digest|negotiate|token)[ \t]+)?[^ \t\r\n&,;\"'<>]{3,}")


def scoped(rx: str) -> str:
    """A leading (?i) becomes a scoped (?i:...), so that rules can be joined into one alternation."""
    return f"(?i:{rx[4:]})" if rx.startswith("(?i)") else rx


def any_rule(patterns: Iterable[str]) -> str:
    """One rule that matches where any of ``patterns`` does (the collector's condition before its replacements,
    the in-process prefilter)."""
    return "|".join(f"(?:{scoped(rx)})" for rx in patterns)


KEY_PATTERN = key_pattern()
KEY_RULES = key_rules()

# Value rules, applied in this order; each match is replaced whole by the mask.
VALUE_RULES: tuple[tuple[str, str], ...] = (
    # PEM private keys: the whole block; then a block whose END line is missing (cut off)
    ("pem_private_key", r"-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----(?s:.*?)-----END[A-Z ]{0,40}PRIVATE KEY-----"),
    ("pem_private_key_cut", r"-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----[A-Za-z0-9+/=\t\r\n :-]*"),
    # user:password@ in connection strings and URLs (postgres://, redis://, amqp://, https://...). No counted
    # repetition: from every word start in a long run of letters, "{0,30}" kept a count of its own, and the automaton
    # needed a state per set of counts (RE2 fell back to its slow NFA: 8 s for a crafted megabyte)
    ("url_credentials", r"\b[A-Za-z][A-Za-z0-9+.-]*://[^/?#@ \t\r\n\"']*:[^/?# \t\r\n\"']*@"),
    # "Bearer <token>" in free text
    ("bearer_token", r"(?i)\bbearer[ \t]+[A-Za-z0-9._~+/-]{8,}=*"),
    # name=value / name: value for a sensitive name (key_value_rule)
    ("key_value", key_value_rule()),
    # OpenAI / Anthropic style keys (sk-..., sk-proj-..., sk-ant-...), and pk-/rk- keys of the same shape
    ("openai_key", r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}"),
    # Stripe-style keys: sk_live_..., rk_test_..., pk_live_..., whsec_...
    ("stripe_key", r"\b(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{8,}|whsec_[A-Za-z0-9]{16,})"),
    # AWS access key ids, long-lived (AKIA) and temporary (ASIA), and the other AWS id prefixes
    ("aws_access_key_id", r"\b(?:AKIA|ASIA|AROA|AIDA|AGPA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b"),
    # GitHub tokens
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
    # GitLab tokens (personal, deploy, runner, pipeline trigger, feed)
    ("gitlab_token", r"\bgl(?:pat|dt|rt|ptt|ft)-[A-Za-z0-9_-]{20,}"),
    # Slack tokens (xoxb-, xoxp-, xoxa-, xoxo-, xoxs-, xoxr-, xoxe-) and app-level tokens
    ("slack_token", r"\b(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})"),
    # Google API keys
    ("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}"),
    # other services' prefixed tokens: Hugging Face (hf_), Groq (gsk_), Replicate (r8_), npm (npm_), PyPI
    # (pypi-AgEIcHlwaS5vcmc: "pypi.org" in the token's base64 header)
    ("prefixed_token", r"\b(?:hf_[A-Za-z0-9]{30,}|gsk_[A-Za-z0-9]{30,}|r8_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{30,}"
                       r"|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{30,})"),
    # JSON Web Tokens
    ("jwt", r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"),
    # e-mail addresses
    ("email", r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}"),
    # IBAN (before the card patterns)
    ("iban", r"\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,3})?\b"),
    # payment cards: 16 digits 4-4-4-4 and 15 digits 4-6-5 (Amex), separated by nothing, a space, a dash or a dot
    ("card_16", r"\b[0-9]{4}[ .-]?[0-9]{4}[ .-]?[0-9]{4}[ .-]?[0-9]{4}\b"),
    ("card_15", r"\b[0-9]{4}[ .-]?[0-9]{6}[ .-]?[0-9]{5}\b"),
    # US social security numbers
    ("ssn", r"\b[0-9]{3}-[0-9]{2}-[0-9]{4}\b"),
)

# Collector only: a sensitive key inside a map or array attribute. The redaction processor (redact_all_types)
# scans such a value as its compact JSON text; this rule masks "key":value there whole. The value alternatives
# leave "****" alone (the transform processor has already masked JSON documents in string attributes that way,
# and they must stay valid JSON).
_NOT_MASKED_STRING = (r'"(?:[^"\\*]|\\.)(?:[^"\\]|\\.)*"'
                      r'|"\*{1,3}(?:(?:[^"\\*]|\\.)(?:[^"\\]|\\.)*)?"'
                      r'|"\*{4}(?:[^"\\]|\\.)+"')
COLLECTOR_MAP_KEY = (rf'(?i){_json_key_name(SENSITIVE_KEYS)}:(?:{_NOT_MASKED_STRING}|-?[0-9][0-9.eE+-]*|true|false'
                     r'|\{[^{}]*\}|\[[^\[\]]*\])')

# Environment variables whose values the in-process redactor masks wherever they appear (the collector cannot
# know the application's environment).
SECRET_ENV_NAME = r"(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)"
