"""Untrusted text made safe to show: text from traces is data, never markup or terminal control.

``clean`` is for the terminal (and any one-line message): it masks secrets (``contract.redaction.shown``),
removes whole escape sequences (CSI, OSC, DCS, SOS, PM, APC, two-byte ESC sequences, and their 8-bit C1 forms),
every other C0/C1 control character and the bidirectional override characters, turns line and tab characters into
spaces and shortens very long values. Rich markup is not escaped here: the CLI builds ``rich.text.Text`` objects
from cleaned strings, which rich never parses as markup. ``http_url`` says whether a URL may become a link.
``csv_cell`` masks secrets and keeps a spreadsheet from running a cell as a formula (OWASP's CSV injection
guidance: a leading single quote).
"""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

MAX_CHARS = 500          # one value on the terminal; longer ones end with an ellipsis

# string-terminated sequences (OSC, DCS, SOS, PM, APC) run to BEL or ST, or to the end of the text
_SEQUENCE = re.compile(
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f]).*?(?:\x07|\x9c|\x1b\\|\Z)"   # OSC, DCS, SOS, PM, APC
    r"|(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"                  # CSI
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?",                                        # other ESC sequences
    re.S)
_SPACE = re.compile(r"[\t\n\v\f\r\x85\u2028\u2029]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# invisible characters that no script needs (zero-width space, word joiner, invisible operators, a BOM, the
# Mongolian vowel separator): "gpt-4\u200bo" would look like "gpt-4o", so they are shown as <U+200B>
_INVISIBLE = re.compile(r"[\u200b\u2060-\u2064\ufeff\u180e]")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")


def clean(value: Any, limit: int | None = MAX_CHARS) -> str:
    """``value`` as one line of plain text a terminal shows as is, at most ``limit`` characters, secrets masked."""
    from ..contract.redaction import shown  # here: `agentobs --help` needs neither the contract nor its rules
    text = shown(value if isinstance(value, str) else str(value))
    # the common case is printable: nothing to remove
    if not text.isprintable():
        text = _CONTROL.sub("", _SPACE.sub(" ", _SEQUENCE.sub("", text)))
        text = _INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)
    out = text
    if limit is not None and len(out) > limit:
        out = out[: limit - 1] + "…"
    return out


def http_url(url: str | None) -> str | None:
    """``url`` as a base for links (``{url}/trace/{id}``) when it is an http or https URL with a host, else None:
    without user name and password (a link is shown and shared; the browser asks for them), query, fragment or
    trailing slashes (a link's path goes after the base's)."""
    if not url:
        return None
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    host = parts.netloc.rpartition("@")[2]
    if parts.scheme.lower() not in ("http", "https") or not host or not url.strip().isprintable():
        return None
    return urlunsplit((parts.scheme, host, parts.path, "", "")).rstrip("/")


def csv_cell(value: Any, *, mask: bool = True) -> Any:
    """A string with its secrets masked (unless ``mask`` is off: ids), and a leading ``'`` when a spreadsheet would
    run it as a formula; anything else is returned as is."""
    if not isinstance(value, str):
        return value
    if mask:
        from ..contract.redaction import shown
        value = shown(value)
    if value.startswith(FORMULA_START) or value.lstrip().startswith(FORMULA_START):
        return "'" + value
    return value
