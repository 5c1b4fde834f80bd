"""CSV cells (``agentobs runs --out``) a spreadsheet shows as they are and never runs (issue 43, point 7).

Cells kept bidi overrides, NUL, C1 controls, zero-width and tag characters, and a cell starting with ``|`` or the
full-width equals sign (U+FF1D) was not prefixed. Now: control characters (but tab and line breaks, which the CSV
quotes) and the bidirectional controls are removed, every other format character (Unicode category Cf) is shown as
``<U+XXXX>`` (the joiners stay between two characters outside ASCII, where emoji and scripts need them), and a cell
whose first character after any spaces starts a formula in some spreadsheet gets a leading ``'``."""
from __future__ import annotations

import csv
import json
import sys
import unicodedata

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from agentobs.cli.main import cli
from agentobs.cli.safe_text import FORMULA_START, clean, csv_cell

BIDI = [chr(c) for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))]
CONTROLS = [chr(c) for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0))]
FORMAT = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
SEQUENCE_STARTS = "\x1b\x90\x98\x9b\x9d\x9e\x9f"
SPACES = ["", " ", "   ", "\u00a0", "\u3000", " \u2003"]


def _unsafe(cell: str) -> list[str]:
    """What may not be in a cleaned cell: control characters but tab and line breaks, bidi controls, format
    characters, a joiner unless between two characters outside ASCII."""
    bad = []
    for i, ch in enumerate(cell):
        cat = unicodedata.category(ch)
        if cat == "Cc" and ch not in "\t\n\r":
            bad.append(ch)
        elif cat == "Cf":
            joined = ch in "\u200c\u200d" and 0 < i < len(cell) - 1 and not cell[i - 1].isascii() \
                and not cell[i + 1].isascii()
            if not joined:
                bad.append(ch)
    return bad


def _runs_formula(cell: str) -> bool:
    return cell.lstrip().startswith(FORMULA_START) or cell.startswith(FORMULA_START)


def test_the_format_characters_are_exactly_pythons_cf():
    """Every Cf character of this Python's Unicode is removed (bidi) or shown as a code, never kept."""
    for ch in FORMAT:
        out = csv_cell(f"a{ch}b")
        assert out in ("ab", f"a<U+{ord(ch):04X}>b"), (hex(ord(ch)), out)
        assert clean(f"a{ch}b") in ("ab", f"a<U+{ord(ch):04X}>b"), hex(ord(ch))
    assert [csv_cell(f"a{b}b") for b in BIDI] == ["ab"] * len(BIDI)


@pytest.mark.parametrize("ch", CONTROLS, ids=lambda c: f"U+{ord(c):04X}")
def test_control_characters_are_removed(ch):
    if ch in SEQUENCE_STARTS:                        # a terminal escape sequence: removed whole, as on the terminal
        assert ch not in csv_cell(f"x{ch}y") and csv_cell(f"x{ch}").startswith("x")
        return
    assert csv_cell(f"x{ch}y") == "xy"
    assert csv_cell(f"{ch}=1") == "'=1"              # what hid the formula start is gone, and the start is seen


def test_escape_sequences_are_removed_whole():
    assert csv_cell("a\x1b[2Jb\x1b]0;pwned\x07c\x9b31md") == "abcd"


def test_tab_and_line_breaks_stay_for_the_csv_to_quote():
    assert csv_cell("a\tb\r\nc") == "a\tb\r\nc"


def test_tag_characters_show_the_hidden_text_as_codes():
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "rm -rf")
    assert csv_cell(f"ok{hidden}") == "ok" + "".join(f"<U+{0xE0000 + ord(c):05X}>" for c in "rm -rf")


def test_joiners_stay_in_emoji_and_scripts_only():
    family, persian = "\U0001f468\u200d\U0001f469", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"
    assert csv_cell(family) == family and csv_cell(persian) == persian
    assert csv_cell("gpt-4\u200do") == "gpt-4<U+200D>o"
    assert csv_cell("\u200cend") == "<U+200C>end" and csv_cell("\u0645\u200c") == "\u0645<U+200C>"


# (a tab or a line break starts a formula at the very start only: after spaces it is one more space)
@pytest.mark.parametrize(("spaces", "start"), [(sp, st) for st in FORMULA_START for sp in SPACES
                                                if not (st.isspace() and sp)], ids=repr)
def test_every_formula_start_is_prefixed_after_any_spaces(start, spaces):
    cell = f"{spaces}{start}cmd|' /C calc'!A0"
    assert csv_cell(cell) == "'" + cell


@pytest.mark.parametrize("start", ["|", "\uff1d", "\uff0b", "\uff0d", "\uff20", "\ufe66"])
@pytest.mark.parametrize("hider", ["\u202e", "\u2066", "\u200f", "\x00", "\x85", "\x07", "\u202e "])
def test_a_formula_start_behind_a_removed_character_is_prefixed(start, hider):
    assert csv_cell(f"{hider}{start}1").startswith("'")


def test_a_secret_hidden_by_a_bidi_control_is_masked():
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8J9k0" * 2
    assert key not in csv_cell(key[:10] + "\u202d" + key[10:])


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.text(alphabet=st.one_of(st.characters(), st.sampled_from([*BIDI, *FORMAT[:40], *FORMULA_START, " "])),
               max_size=30))
def test_any_text_becomes_a_safe_cell(text):
    cell = csv_cell(text)
    assert not _unsafe(cell), [hex(ord(c)) for c in _unsafe(cell)]
    assert not _runs_formula(cell) or cell.startswith("'")


def test_the_runs_csv_end_to_end(tmp_path):
    """Agent names, ids and models from a transcript file, through `agentobs runs --out`, read back by Python's
    csv module: no cell holds an unsafe character or runs as a formula."""
    hostile = ["\u202eexe.txt", "\x00=1+1", "|calc", "\uff1dSUM(A1)", "\u3000\uff20x", "gpt-4\u200bo",
               "name\U000e0041\U000e0042", "\x85\x07=2", "\u2066-3\u2069"]
    src = tmp_path / "runs.json"
    src.write_text(json.dumps([{"id": f"{h}#{i}", "agent": h, "model": h,
                                "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": h}]}
                               for i, h in enumerate(hostile)]))
    out = tmp_path / "runs.csv"
    res = CliRunner().invoke(cli, ["runs", str(src), "--out", str(out)])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(out.open(newline="", encoding="utf-8")))
    assert len(rows) == len(hostile)
    for row in rows:
        for col, cell in row.items():
            assert not _unsafe(cell or ""), (col, cell)
            assert not _runs_formula(cell or "") or cell.startswith("'"), (col, cell)
    agents = {r["agent"] for r in rows}
    assert {"exe.txt", "'=1+1", "'|calc", "'\uff1dSUM(A1)", "'\u3000\uff20x", "gpt-4<U+200B>o",
            "name<U+E0041><U+E0042>", "'=2", "'-3"} <= agents, agents
