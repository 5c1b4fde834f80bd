"""Tables that fit the terminal: at 80, 120 and 200 columns every key cell (names, counts, shares, recommended
values) is printed whole and no line is wider than the terminal; piped output (no COLUMNS, no terminal) is not cut
or wrapped at all. At 80 columns the caps table printed ``limit w… … worst case…`` on the demo population and
lost 119 and 3,390,980 (the recommended tool-call and token caps) on SWE-bench-like runs; piped output was cut at
220 columns. The width comes from COLUMNS here, as from a terminal."""
from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from otlp_spans import agent, chat, span, tool, write

from agentobs.analysis.explorer.trace_tree import find_trace
from agentobs.analysis.report.engine import analyze
from agentobs.analysis.report.view import Table, report_view, runs_view, trace_view
from agentobs.cli.main import cli

WIDTHS = (80, 120, 200)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo's population (the simulated support desk), 300 runs."""
    from agentobs.domain.population import simulate
    from agentobs.telemetry import configure
    path = tmp_path_factory.mktemp("demo") / "population.jsonl"
    tel = configure(traces_out=path)
    simulate(300, seed=7, observers=lambda: [tel.observer()], start_ns=1_780_000_000 * 10**9)
    tel.shutdown()
    return str(path)


@pytest.fixture(scope="module")
def swe(tmp_path_factory):
    """SWE-bench-like runs: two agents with long names, up to 108 tool calls and 3,082,709 tokens a run (caps of
    119 tool calls and 3,390,980 tokens), one trace each."""
    spans = []
    for r in range(60):
        trace = f"{r + 1:032x}"
        name = "swe-agent-claude-sonnet-4-20250514" if r % 2 else "openhands-codeact-gpt-4o-2024-08-06"
        calls = 108 if r == 59 else 20 + r
        tokens = 3_082_709 if r == 59 else 400_000 + 37_000 * r
        per_call = tokens // (calls + 1)
        spans.append(span(trace, 1, None, f"invoke_agent {name}", 0, 10 * (calls + 2), agent(name)))
        for k in range(calls + 1):
            tin = per_call - 500 if k < calls else tokens - calls * per_call - 500
            spans.append(span(trace, 2 + 2 * k, 1, "chat claude-sonnet-4", 10 * k, 10 * k + 6,
                              chat("claude-sonnet-4-20250514", tin, 500)))
            if k < calls:
                spans.append(span(trace, 3 + 2 * k, 1, "execute_tool str_replace_editor", 10 * k + 6, 10 * k + 9,
                                  tool("str_replace_editor", f"toolu_{r}_{k}")))
    return str(write(tmp_path_factory.mktemp("swe") / "swe.jsonl", spans, per_line=2000))


def _printed(args: list[str], width: int | None) -> str:
    res = CliRunner().invoke(cli, args, env={"COLUMNS": str(width) if width else None})
    assert res.exit_code == 0, res.output
    out = res.stdout
    if width is not None:
        too_wide = [line for line in out.splitlines() if len(line) > width]
        assert not too_wide, too_wide[:3]
    assert "…" not in out
    return out


def _whole(out: str, cells: list[str]) -> None:
    """Each word of each cell is printed as one whole word (a cell wraps only at its spaces)."""
    words = set(out.split())
    missing = [(cell, w) for cell in cells for w in cell.split() if w not in words]
    assert not missing, missing[:5]


def _key_cells(t: Table) -> list[str]:
    shown = [i for i, c in enumerate(t.columns) if c.terminal and (i == 0 or c.key)]
    return [r[i].text for r in t.rows for i in shown if r[i].text]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("which", ["demo", "swe"])
def test_every_key_cell_of_the_report_is_printed_whole(width, which, request):
    src = request.getfixturevalue(which)
    out = _printed(["report", src], width)
    view = report_view(analyze([src]))
    tables = [b for s in view.sections for b in s.blocks if isinstance(b, Table) and b.terminal]
    assert len(tables) >= 4
    for t in tables:
        _whole(out, _key_cells(t))


@pytest.mark.parametrize("width", WIDTHS)
def test_the_caps_of_long_runs_keep_their_numbers(width, swe):
    out = _printed(["caps", swe], width)
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("max_")}
    assert rows["max_tokens"][1] == "60" and "3,390,980" in rows["max_tokens"]
    assert "119" in rows["max_tool_calls"]
    caps = analyze([swe]).caps
    assert {c.limit: c.recommended for c in caps}["max_tokens"] == 3_390_980
    if width == 200:        # wide enough for the whole table: the worst case stays in its row
        assert re.search(r"max_tokens .*3,390,980  tokens 3,390,980, usd \S+$", out, re.M)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_runs_table_and_a_trace_keep_their_key_cells(width, demo):
    from agentobs.analysis.report.view import RUNS_COLUMNS
    out = _printed(["runs", demo, "--format", "table"], width)
    runs = analyze([demo]).runs
    listing = runs_view(runs, RUNS_COLUMNS)
    for col, cells in zip(listing.columns, listing.cells, strict=True):
        if col.key:
            _whole(out, cells)
    tid = str(runs.loc[runs["spans"].idxmax(), "trace_id"])
    found = find_trace(tid, [demo])
    view = trace_view(found.tree(tid), tid)
    out = _printed(["trace", tid, demo], width)
    for col, cells in zip(view.columns, view.cells, strict=True):
        if col.key:
            _whole(out, cells)


def test_piped_output_is_neither_cut_nor_wrapped(swe):
    """No COLUMNS and no terminal: each row of the caps table on one line, whatever its length."""
    out = _printed(["caps", swe], None)
    view = report_view(analyze([swe]))
    caps = next(b for s in view.sections if s.key == "caps" for b in s.blocks if isinstance(b, Table))
    lines = out.splitlines()
    for row in caps.rows:
        shown = [c.text for c, col in zip(row, caps.columns, strict=True) if col.terminal]
        assert any(re.fullmatch(r"\s*".join(map(re.escape, shown)), line.strip()) for line in lines), shown
    wide = _printed(["runs", swe, "--format", "table", "--columns", "all"], None).splitlines()
    assert len(wide) == 1 + 1 + 60 and min(map(len, wide[1:])) > 220        # (title, header, a line a run)
