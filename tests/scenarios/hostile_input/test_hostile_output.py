"""Hostile text in traces is data in every output (issue 10, points 2 and 6): never rich markup, never a terminal
control sequence, never HTML, never a spreadsheet formula, never invalid JSON, never a traceback.

Every text field of hand-made OTLP JSON lines (span, tool, agent, model, service and event names, stop reasons,
task and conversation ids, error types, status messages, finish reasons), the ids of a labels file and the input
file's own name hold strings from ``HOSTILE``. The property test draws them (and any text) at random; it runs
``AGENTOBS_PROPERTY_EXAMPLES / 400`` cases (5 by default, 25 with `make test-full`): each one runs the CLI
five times.
"""
import csv
import io
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentobs.cli.main import cli
from agentobs.cli.render import json_text
from agentobs.cli.safe_text import clean, csv_cell, http_url

HOSTILE = [
    "[/x]", "[link=https://evil.example]click[/link]", "[bold red]x", "\x1b[2J", "\x1b]0;pwned\x07",
    "\x1b]8;;https://evil\x1b\\x\x1b]8;;\x1b\\", "\x9b31m", "\r", "\x00", "$\\frac{a}{b}$", "$$",
    '=HYPERLINK("http://evil")', "+1", "@SUM(A1)", "-2+3", "javascript:alert(1)", "<script>alert(1)</script>",
    "L" * 20_000, "\u202eevil", "\U0001f600 emoji", ":warning: \x1bP1$r\x1b\\ \x90dcs\x9c \x9d0;t\x07 tail",
    "_underscore", "\tTAB", " =SUM(1)", "a\nb", "\x7f\x85\u2028", "",
    # (issue 43) bidi isolates and marks, the pipe and full-width formula starts, tag characters spelling a hidden
    # text, a zero-width space and a joiner between ASCII letters
    "\u2066=1+1\u2069", "\u200f-x", "|cmd", "\uff1dSUM(1)", "\u3000\uff0b1", "\U000e0068\U000e0069 tags",
    "gpt-4\u200bo\u200dx",
]
FORMULA = ("=", "+", "-", "@", "|", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
EXAMPLES = max(1, int(os.environ.get("AGENTOBS_PROPERTY_EXAMPLES", "2000")) // 400)
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


# ---- hand-made OTLP JSON lines ----------------------------------------------------------------------------------

def _value(v):
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    return {"stringValue": v}


def _attrs(d):
    return [{"key": k, "value": _value(v)} for k, v in d.items()]


def _span(trace, span, parent, name, t0, t1, attrs, error=None, events=()):
    s = {"traceId": trace, "spanId": span, "name": name, "kind": 1, "startTimeUnixNano": str(t0),
         "endTimeUnixNano": str(t1), "attributes": _attrs(attrs),
         "status": {"code": 2, "message": error} if error is not None else {"code": 1},
         "events": [{"name": e, "timeUnixNano": str(t0), "attributes": _attrs({"detail": e})} for e in events]}
    if parent:
        s["parentSpanId"] = parent
    return s


STOPS = ("done", "repeated_call", "max_tokens", None)    # None: the hostile text itself is the stop reason


def run_spans(i: int, text: str, stop: str | None) -> list[dict]:
    """One agentobs run whose every text field holds ``text``: a root, growing model calls, identical tool calls."""
    trace, root, t0 = f"{i + 1:032x}", f"{i + 1:016x}", 1_700_000_000_000_000_000 + i * 60 * 10**9
    ok = stop == "done"
    spans = [_span(trace, root, None, f"invoke_agent {text}", t0, t0 + 9 * 10**9, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": text, "gen_ai.request.model": text,
        "gen_ai.conversation.id": text, "agentobs.task.id": f"{text}#{i}", "agentobs.stop_reason": stop or text,
        "agentobs.status": "stopped", "agentobs.outcome": "completed" if ok else text, "agentobs.steps": 3 + i % 4,
        "agentobs.tool_calls": 3, "agentobs.tokens": 900 + 100 * i, "agentobs.cost_usd": 0.001 * (1 + i % 3),
        "agentobs.elapsed_s": 2.5 + i % 5, **({} if ok else {"error.type": text})},
        error=None if ok else text, events=[text])]
    for k in range(4):
        t = t0 + (2 * k + 1) * 10**9
        spans.append(_span(trace, f"{i + 1:08x}{k + 1:08x}", root, f"chat {text}", t, t + 10**8, {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": text, "gen_ai.response.model": text,
            "gen_ai.usage.input_tokens": 100 + 900 * k, "gen_ai.usage.output_tokens": 20,
            "gen_ai.response.finish_reasons": [text]}))
        spans.append(_span(trace, f"{i + 1:08x}{k + 11:08x}", root, f"execute_tool {text}", t + 2 * 10**8,
                           t + 3 * 10**8, {
                               "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": text,
                               "gen_ai.tool.call.arguments": text, "agentobs.tool.args_digest": text,
                               "agentobs.tool.result_status": "ok" if ok else text,
                               **({} if ok else {"error.type": text})},
                           error=None if ok else text, events=[text]))
    return spans


def otlp_line(texts: list[str], service: str, start: int = 0, stops=STOPS) -> str:
    spans = [s for n, t in enumerate(texts) for s in run_spans(start + n, t, stops[n % len(stops)])]
    return json.dumps({"resourceSpans": [{"resource": {"attributes": _attrs({"service.name": service})},
                                          "scopeSpans": [{"scope": {"name": service}, "spans": spans}]}]})


def write_inputs(folder: Path, texts: list[str]) -> tuple[Path, Path]:
    """A traces file named with hostile text (two services, a broken line), and a hostile labels CSV."""
    folder.mkdir(parents=True, exist_ok=True)
    half = max(1, len(texts) // 2)
    name = "=cmd[bold]\x1b]0;t\x07$x$\x9b2J<img src=x onerror=alert(2)>.jsonl"
    lines = [otlp_line(texts[:half], texts[0])] + ([otlp_line(texts[half:], texts[-1], start=half)]
                                                   if texts[half:] else [])
    # a broken line too, so the data-quality table names the file
    (folder / name).write_text("\n".join(lines) + "\n{not json " + texts[0] + "\n")
    labels = folder.parent / f"{folder.name}-labels=\x1b]0;x\x07<i>$y$.csv"
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["run_id", "success"])
    for n, t in enumerate(texts):
        w.writerow([f"{t}#{n}", "true" if n % 2 else "false"])
        w.writerow([f"unmatched {t}", "yes"])
    labels.write_text(buf.getvalue())
    return folder, labels


# ---- what safe output looks like ----------------------------------------------------------------------------------

_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def assert_terminal_safe(out: str) -> None:
    assert "Traceback" not in out
    bad = sorted({hex(ord(c)) for c in _UNSAFE.findall(out)})
    assert not bad, f"control characters reached the terminal: {bad}"


def assert_ok(res) -> str:
    text = res.output                      # stdout and stderr, interleaved
    assert res.exit_code == 0, (text[-3000:], res.exception)
    assert res.exception is None
    assert_terminal_safe(text)
    return text


def strict_json(text: str):
    """``json.loads`` that also refuses the NaN and Infinity it accepts by default (they are not JSON)."""
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


class _Markup(HTMLParser):
    """Every element, attribute and script element of a page, as a browser's parser sees them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.attrs, self.scripts, self._script = [], [], None

    def handle_starttag(self, tag, attrs):
        self.attrs += [(tag, k, v or "") for k, v in attrs]
        if tag == "script":
            self._script = [dict(attrs), ""]

    def handle_data(self, data):
        if self._script is not None:
            self._script[1] += data

    def handle_endtag(self, tag):
        if tag == "script" and self._script is not None:
            self.scripts.append(tuple(self._script))
            self._script = None


def assert_html_safe(page: str) -> None:
    """The page's markup is its own: its five script elements (two data islands and the two libraries as JSON,
    the explorer's code as shipped), links only to http(s) URLs or to the page's own views, no event handler
    attribute, no element from the data, no control character."""
    from importlib.resources import files
    assert "<script>alert" not in page and "<img src=x" not in page
    m = _Markup()
    m.feed(page)
    app = files("agentobs.analysis.explorer").joinpath("templates", "explorer.js").read_text()
    islands = {a.get("id"): text for a, text in m.scripts if a.get("type") == "application/json"}
    assert set(islands) == {"explorer-data", "explorer-details", "lib-plotly", "lib-datatables"}, m.scripts
    assert [text for a, text in m.scripts if "type" not in a] == [app]
    assert len(m.scripts) == 5
    for text in islands.values():
        json.loads(text)                                    # data, whole: nothing in it ended its element
        assert "<" not in text and ">" not in text and "&" not in text
    assert all(t != "img" and not k.startswith("on") for t, k, _ in m.attrs), "an event handler attribute"
    for _tag, k, v in m.attrs:
        if k == "href":
            assert re.match(r"https?://|#(signature/|overview$|runs$)", v), f"a link to {v!r}"
    assert "\x1b" not in page and "\x9b" not in page


# in a CSV cell: control characters but tab and line breaks, bidi controls, format characters (a joiner is allowed
# between two characters outside ASCII only)
_CSV_UNSAFE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                         r"\u00ad\u200b\u2060-\u2064\ufeff\U000e0000-\U000e007f]"
                         r"|(?<![^\x00-\x7f])[\u200c\u200d]|[\u200c\u200d](?![^\x00-\x7f])")


def assert_csv_safe(path: Path, numeric: set[str]) -> list[dict]:
    rows = list(csv.DictReader(path.open(newline="", encoding="utf-8")))
    for row in rows:
        for col, cell in row.items():
            if cell and cell.lstrip()[:1] in FORMULA and col not in numeric:
                pytest.fail(f"{col}: formula cell {cell[:40]!r}")
            bad = _CSV_UNSAFE.search(cell or "")
            if bad:
                pytest.fail(f"{col}: U+{ord(bad.group()):04X} in cell {cell[:40]!r}")
    return rows


def cli_all_formats(folder: Path, labels: Path, tmp: Path, texts: list[str], runner: CliRunner) -> None:
    """Every output of report, caps, runs and trace on the folder: no traceback, nothing unsafe."""
    src = str(folder)
    common = ["--labels", str(labels), "--segment", "service", "--jaeger-url", "http://127.0.0.1:16686/"]
    json_path = tmp / "r.json"                           # the table, and the JSON report written next to it
    out = assert_ok(runner.invoke(cli, ["report", src, *common, "--out", str(json_path)]))
    assert "runs" in out
    doc = strict_json(json_path.read_text())
    assert doc["overview"]["runs"] == len(texts)
    html_path = tmp / "r.html"
    assert_ok(runner.invoke(cli, ["report", src, *common, "--format", "html", "--out", str(html_path)]))
    assert_html_safe(html_path.read_text())
    caps = runner.invoke(cli, ["caps", src, "--labels", str(labels), "--format", "json"])   # (caps has no --segment)
    assert_ok(caps)
    strict_json(caps.stdout)
    csv_path = tmp / "runs.csv"
    # (runs has no --segment)
    assert_ok(runner.invoke(cli, ["runs", src, "--labels", str(labels), "--out", str(csv_path)]))
    assert len(assert_csv_safe(csv_path, NUMERIC)) == len(texts)
    assert_ok(runner.invoke(cli, ["trace", f"{1:032x}", src]))


def _numeric_columns() -> set[str]:
    from agentobs.analysis.spans.schema import RUN_COLUMNS
    return {c for c, t in RUN_COLUMNS.items() if t in ("Int64", "Float64", "boolean") or t.startswith("datetime")}


NUMERIC = _numeric_columns()


# ---- the fixed corpus ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return write_inputs(tmp_path_factory.mktemp("hostile") / "in", HOSTILE)


@pytest.fixture
def runner():
    return CliRunner()


def test_report_table_shows_markup_as_text_and_no_control_codes(hostile, runner):
    folder, labels = hostile
    out = assert_ok(runner.invoke(cli, ["report", str(folder), "--labels", str(labels), "--segment", "service"]))
    for literal in ("[/x]", "[link=https://evil.example]click[/link]", "[bold red]x", "=HYPERLINK(",
                    "<script>alert(1)</script>", "$\\frac{a}{b}$", ":warning:", "\U0001f600"):
        assert literal in out, literal                 # shown as typed: neither markup nor emoji code
    assert "pwned" not in out and "https://evil\\" not in out      # whole OSC sequences are gone, not just ESC
    assert "Per service" in out and "Data quality" in out and "unmatched_label" in out and "invalid_json" in out
    assert "=cmd[bold]$x$<img src=x onerror=alert(2)>.jsonl" in out     # the file's name, cleaned
    assert "…" in out                                              # the 20,000-character value was shortened
    assert max(len(line) for line in out.splitlines()) < 2000


def test_report_json_is_valid_and_keeps_the_data(hostile, runner):
    folder, labels = hostile
    res = runner.invoke(cli, ["report", str(folder), "--labels", str(labels), "--format", "json"])
    assert_ok(res)
    doc = strict_json(res.stdout)
    assert "\x1b[2J" in doc["overview"]["by_stop_reason"]        # data unchanged in JSON, escaped by json
    assert '=HYPERLINK("http://evil")' in doc["overview"]["by_stop_reason"]
    assert "[/x]" in doc["segments"]["agent"]
    assert doc["overview"]["runs"] == len(HOSTILE)


def test_report_html_escapes_everything_and_draws_math_as_text(hostile, runner, tmp_path):
    folder, labels = hostile
    out = tmp_path / "r.html"
    (src,) = folder.iterdir()
    # named by its file, so the name is in the page's header (not with "[": sources.expand reads it as a glob)
    traces = tmp_path / "=cmd\x1b]0;t\x07$x$\x9b2J<img src=x onerror=alert(2)>.jsonl"
    traces.write_bytes(src.read_bytes())
    res = runner.invoke(cli, ["report", str(traces), "--labels", str(labels), "--format", "html", "--out", str(out),
                              "--jaeger-url", "http://127.0.0.1:16686"])
    assert_ok(res)
    page = out.read_text()
    assert_html_safe(page)
    assert "=cmd ]0;t $x$ 2J&lt;img src=x onerror=alert(2)&gt;.jsonl" in page
    assert 'href="http://127.0.0.1:16686/trace/' in page
    assert page.count('class="plot"') == 5


def test_a_javascript_jaeger_base_makes_no_html_link(hostile, runner, tmp_path):
    folder, _ = hostile
    out = tmp_path / "r.html"
    base = "javascript:alert(1)//"
    res = runner.invoke(cli, ["report", str(folder), "--format", "html", "--out", str(out), "--jaeger-url", base])
    text = assert_ok(res)
    assert "no links to Jaeger" in text and base not in text
    page = out.read_text()
    assert_html_safe(page)
    assert base not in page and 'href="http' not in page       # no link to Jaeger at all...
    m = _Markup()
    m.feed(page)
    data = next(json.loads(text) for a, text in m.scripts if a.get("id") == "explorer-data")
    assert data["meta"]["jaeger"] is None                       # ...and none the explorer would make


@pytest.mark.parametrize("base", ["javascript:alert(1)//", "JavaScript:alert(1)", "data:text/html,x", "file:///etc",
                                  "\x1b]8;;http://x\x1b\\"])
def test_a_jaeger_base_that_is_not_http_makes_no_links(hostile, runner, base):
    folder, _ = hostile
    res = runner.invoke(cli, ["report", str(folder), "--format", "json"], env={"AGENTOBS_JAEGER_URL": base})
    assert "no links to Jaeger" in assert_ok(res) and base not in res.output
    assert all(e["link"] is None for s in json.loads(res.stdout)["signatures"] for e in s["examples"])
    res = runner.invoke(cli, ["trace", f"{1:032x}", str(folder)], env={"AGENTOBS_JAEGER_URL": base})
    assert "Jaeger:" not in assert_ok(res)


def test_plot_labels_are_never_mathtext(runner, tmp_path):
    """Stop reasons (bar labels) and context-growth run ids (a legend) that matplotlib would read as math."""
    texts = ["$$", "$\\frac{a}{b}$", "$x", "a$b$c$", "\\frac{1}{2}$", "$\\alpha^2$", "$$x$$", "_$"]
    traces = tmp_path / "math.jsonl"
    traces.write_text(otlp_line(texts, "$$", stops=("done", "max_tokens", None, "max_tokens")) + "\n")
    out = tmp_path / "r.html"
    assert_ok(runner.invoke(cli, ["report", str(traces), "--format", "html", "--out", str(out)]))
    page = out.read_text()
    assert page.count('class="plot"') == 5
    assert_html_safe(page)


def test_caps_table_and_json(hostile, runner):
    folder, labels = hostile
    assert "Recommended caps" in assert_ok(runner.invoke(cli, ["caps", str(folder), "--labels", str(labels)]))
    res = runner.invoke(cli, ["caps", str(folder), "--format", "json"])
    assert_ok(res)
    assert strict_json(res.stdout)["dimensions"]


def test_runs_csv_quotes_formula_cells_and_leaves_numbers(hostile, runner, tmp_path):
    folder, labels = hostile
    out = tmp_path / "runs.csv"
    assert_ok(runner.invoke(cli, ["runs", str(folder), "--labels", str(labels), "--out", str(out)]))
    rows = assert_csv_safe(out, NUMERIC)
    tasks = {r["task_id"] for r in rows}
    quoted = [f"{t}#{n}" for n, t in enumerate(HOSTILE) if t.lstrip()[:1] in FORMULA or t[:1] in FORMULA]
    assert len(quoted) >= 7
    for task in quoted:
        assert "'" + task in tasks, task
    assert "'=cmd" not in out.read_text()[:200]         # the header is ours
    assert all(r["steps"].lstrip("-").isdigit() for r in rows)   # numbers stay numbers


def test_trace_tree_of_every_hostile_run(hostile, runner):
    folder, _ = hostile
    for i, _text in enumerate(HOSTILE):
        out = assert_ok(runner.invoke(cli, ["trace", f"{i + 1:032x}", str(folder)]))
        assert "execute_tool" in out
    out = assert_ok(runner.invoke(cli, ["trace", f"{1:032x}", str(folder)]))
    assert "[/x]" in out


def test_errors_naming_hostile_input_are_one_clean_line(hostile, runner):
    folder, _ = hostile
    res = runner.invoke(cli, ["trace", "\x1b]0;x\x07[/x]", str(folder)])
    assert res.exit_code == 2
    assert_terminal_safe(res.output)
    assert res.output.count("\n") == 1 and "[/x]" in res.output


def test_real_pipe_and_forced_colour_carry_only_our_own_styling(hostile, tmp_path):
    """A subprocess with a real pipe; with FORCE_COLOR the only escape sequences are rich's colours (SGR)."""
    folder, labels = hostile
    exe = [sys.executable, "-c", "from agentobs.cli.main import main; main()"]
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "TERM")}
    plain = subprocess.run([*exe, "report", str(folder), "--labels", str(labels)], capture_output=True,
                           text=True, env=env, timeout=300)
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert_terminal_safe(plain.stdout + plain.stderr)
    coloured = subprocess.run([*exe, "report", str(folder), "--labels", str(labels)], capture_output=True,
                              text=True, env={**env, "FORCE_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": "200"},
                              timeout=300)
    assert coloured.returncode == 0, coloured.stderr[-2000:]
    assert "\x1b[" in coloured.stdout                          # rich did style the output...
    stripped = re.sub(r"\x1b\[[0-9;]*m", "", coloured.stdout)  # ...with colours (SGR) only
    assert_terminal_safe(stripped + coloured.stderr)
    assert "\x1b]8;" not in coloured.stdout                   # no hyperlink


# ---- the helpers themselves -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("s", HOSTILE)
def test_clean_leaves_no_control_character(s):
    out = clean(s)
    assert not _UNSAFE.search(out) and len(out) <= 500


def test_clean_removes_whole_sequences_and_keeps_text():
    assert clean("a\x1b[2Jb\x1b]0;pwned\x07c\x1b]8;;https://evil\x1b\\x\x1b]8;;\x1b\\d\x9b31me") == "abcxde"
    assert clean("x\x1bP1$r\x1b\\y\x90q\x9cz") == "xyz"
    assert clean("tab\there\nnew\rline") == "tab here new line"
    kept = "[bold]kept[/bold] \U0001f600 \u05e9\u05dc\u05d5\u05dd"
    assert clean(kept) == kept
    assert clean("x" * 600).endswith("…") and len(clean("x" * 600)) == 500
    # an invisible character is shown, not kept invisible ("gpt-4\u200bo" looked like "gpt-4o"); joiners in emoji
    # and scripts stay
    assert clean("gpt-4\u200bo\ufeff") == "gpt-4<U+200B>o<U+FEFF>"
    assert clean("\U0001f468\u200d\U0001f469 \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645") == \
        "\U0001f468\u200d\U0001f469 \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"


def test_json_text_is_strict_json_for_any_value():
    value = {"nan": float("nan"), "inf": [float("inf"), -float("inf")], 1: np.int64(3), 2.5: np.float64("nan"),
             np.int64(7): pd.NA, "nat": pd.NaT, "arr": np.array([1.0, np.nan]), "ts": pd.Timestamp("2025-01-01"),
             "obj": object, "s": "\x1b[2J", "b": np.bool_(True), None: {"x": (1, 2)}}
    doc = strict_json(json_text(value, indent=1))
    assert doc["nan"] is None and doc["inf"] == [None, None] and doc["1"] == 3 and doc["2.5"] is None
    assert doc["7"] is None and doc["nat"] is None and doc["arr"] == [1.0, None] and doc["b"] is True
    assert doc["s"] == "\x1b[2J" and doc["null"] == {"x": [1, 2]} and doc["ts"].startswith("2025-01-01")
    assert "\x1b" not in json_text(value)             # escaped as \u001b: JSON on a terminal is safe too


def test_http_url_and_csv_cell():
    assert http_url("http://127.0.0.1:16686/") == "http://127.0.0.1:16686"
    assert http_url("HTTPS://jaeger.example") == "https://jaeger.example"
    for bad in ("javascript:alert(1)", "data:,x", "http://", "//host", "ftp://h", "http://h\x1b]0;x\x07", None, ""):
        assert http_url(bad) is None, bad
    # a base for /trace/<id> links: credentials, a query or a fragment made every link broken (and showed them)
    assert http_url("http://me:hunter2pass@jaeger.local:16686/") == "http://jaeger.local:16686"
    assert http_url("http://jaeger.local:16686/?token=abc123#x") == "http://jaeger.local:16686"
    assert http_url("https://ops.example/jaeger/?a=1") == "https://ops.example/jaeger"
    assert http_url("http://[::1]:16686") == "http://[::1]:16686"
    assert [csv_cell(v) for v in ("=1", "+1", "-1", "@a", "\t=1", "\r1", " =1", "ok", 5, -2.5)] == \
        ["'=1", "'+1", "'-1", "'@a", "'\t=1", "'\r1", "' =1", "ok", 5, -2.5]


# ---- generated: any text in every field, every format ------------------------------------------------------------

field_text = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=40),
                       st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=3).map("".join))


@SETTINGS
@given(texts=st.lists(field_text, min_size=1, max_size=6))
def test_any_text_in_any_field_gives_safe_output_in_every_format(tmp_path_factory, texts):
    tmp = tmp_path_factory.mktemp("gen")
    folder, labels = write_inputs(tmp / "in", texts)
    cli_all_formats(folder, labels, tmp, texts, CliRunner())


def test_the_steps_histogram_has_bounded_bins_whatever_a_run_claims(hostile):
    """A bin per step up to the longest run: one run claiming 1e12 steps made the HTML report raise MemoryError
    (7 TiB of bins) and 1e5 steps took minutes (found by fuzzing). Past 120 steps the bins are wider."""
    from agentobs.analysis.explorer.html import plots
    from agentobs.analysis.report.engine import analyze
    folder, _labels = hostile
    r = analyze([str(p) for p in folder.iterdir()])
    assert len(r.runs) > 1
    r.runs.loc[r.runs.index[0], "steps"] = 10**12
    got = plots(r)
    assert got["steps_histogram"]


def test_a_long_name_does_not_squeeze_the_numbers_of_its_row():
    """One 240-character agent name made every number of the "Per agent" table "…" (found by fuzzing): the name is
    split over lines (the only word ever split: one wider than the terminal), its numbers stay whole."""
    from agentobs.cli.layout import Col, Grid, lay_out, text_of
    cols = [Col(name="agent"), Col(name="successful", right=True, key=True), Col(name="tokens p95", right=True,
                                                                                  key=True)]
    lines = [text_of(x) for x in lay_out("Per agent", Grid.of_rows(cols, [["x" * 240, "20", "1,426,909"],
                                                                           ["support", "7", "480"]]), 100)]
    out = "\n".join(lines)
    assert all(len(line) <= 100 for line in lines)
    assert "1,426,909" in out and "480" in out and " 20" in out and "…" not in out
    assert out.count("x") == 240
