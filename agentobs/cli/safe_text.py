"""Untrusted text made safe to show: text from traces is data, never markup or terminal control.

``clean`` is for the terminal (and any one-line message): it masks secrets (``contract.redaction.secrets_masked``),
removes whole escape sequences (CSI, OSC, DCS, SOS, PM, APC, two-byte ESC sequences, and their 8-bit C1 forms),
every other C0/C1 control character and the bidirectional controls, shows other invisible (format) characters as
``<U+200B>``, turns line and tab characters into spaces and shortens very long values. Rich markup is not escaped
here: the CLI builds ``rich.text.Text`` objects from cleaned strings, which rich never parses as markup.
``http_url`` says whether a URL may become a link. ``csv_cell`` cleans a cell the same way (tabs and line breaks
kept: the CSV quotes them), masks secrets and keeps a spreadsheet from running it as a formula (OWASP's CSV
injection guidance: a leading single quote).
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
# the bidirectional controls (Unicode's Bidi_Control: embeddings, overrides, isolates and the three marks): they
# reorder what is shown ("\u202eevil" shows as "live"), so they are removed
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(rf"[\x00-\x1f\x7f-\x9f{_BIDI}]")
_CSV_CONTROL = re.compile(rf"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_BIDI}]")      # tab, LF and CR kept (quoted)
# every other format character (Unicode category Cf: zero-width space, word joiner, invisible operators, a BOM,
# the soft hyphen, the tag characters U+E0000-E007F that can spell a hidden text, ...) is shown as <U+200B>, since
# "gpt-4\u200bo" would look like "gpt-4o"; tests/unit/cli/test_safe_text.py keeps the list equal to Python's Cf. The
# zero-width joiner and non-joiner stay only between two characters outside ASCII (emoji, Persian, Indic
# scripts need them there); next to ASCII or at either end they are shown too
_FORMAT = ("\u00ad\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b\u2060-\u2064\u206a-\u206f\ufeff"
           "\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
           "\U000e0001\U000e0020-\U000e007f")
_INVISIBLE = re.compile(rf"[{_FORMAT}]|(?<![^\x00-\x7f])[\u200c\u200d]|[\u200c\u200d](?![^\x00-\x7f])")
# what a spreadsheet may run as a formula (OWASP's list, the pipe of DDE payloads, and the full-width and small
# forms an input method or a spreadsheet folds into them), at the start or after any spaces
FORMULA_START = ("=", "+", "-", "@", "|", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20", "\uff5c",
                 "\ufe66", "\ufe62", "\ufe63", "\ufe6b")


def clean(value: Any, limit: int | None = MAX_CHARS) -> str:
    """``value`` as one line of plain text a terminal shows as is, at most ``limit`` characters, secrets masked."""
    from ..contract.redaction import secrets_masked  # here: `agentobs --help` needs neither the contract nor its rules
    text = secrets_masked(value if isinstance(value, str) else str(value))
    # the common case is printable: nothing to remove
    if not text.isprintable():
        text = _CONTROL.sub("", _SPACE.sub(" ", _SEQUENCE.sub("", text)))
        text = _INVISIBLE.sub(_shown_as_code, text)
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


def _shown_as_code(m: re.Match[str]) -> str:
    return f"<U+{ord(m.group()):04X}>"


def csv_cell(value: Any, *, mask: bool = True) -> Any:
    """A string cleaned for a spreadsheet: escape sequences, control characters (not tab and line breaks: the
    CSV quotes them) and bidirectional controls removed; secrets masked (unless ``mask`` is off: ids); other
    invisible characters shown as ``<U+200B>``; a leading ``'`` when a spreadsheet would run it as a formula (it
    starts with one of ``FORMULA_START``, after any spaces). Anything else is returned as is."""
    if not isinstance(value, str):
        return value
    if not value.isprintable():
        value = _CSV_CONTROL.sub("", _SEQUENCE.sub("", value))
    if mask:
        from ..contract.redaction import secrets_masked
        value = secrets_masked(value)
    if not value.isprintable():
        value = _INVISIBLE.sub(_shown_as_code, value)
    if value.startswith(FORMULA_START) or value.lstrip().startswith(FORMULA_START):
        return "'" + value
    return value
