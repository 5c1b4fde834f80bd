"""Recommended caps as Prometheus alerting rules, over the metrics the kernel, the guards and the collector export.

The caps are those of ``agentobs caps --emit budget`` (``emit.budget_settings``: the same values and cut-off
shares). Three rules per cap, where a metric carries what it bounds:

- ``AgentobsRunsPastCap`` (warning): the share of runs, per service and agent, past the cap in the window (the
  per-run histograms: ``gen_ai.invoke_agent.inference_calls`` for steps, ``.tool_calls``, ``agentobs.run.tokens``,
  ``agentobs.run.cost_usd``, ``gen_ai.invoke_agent.duration`` for active time) is above what the source showed.
  A histogram counts runs at most each bucket boundary, so "past the cap" is measured at the smallest boundary at
  or above it: runs above that boundary are certainly past the cap (a lower bound of the share when the cap falls
  between two boundaries; the rule names the boundary). The share the source's runs had above the same boundary
  is the expected share; the rule fires above ``expected + max(expected, 2%)`` once at least ``MIN_RUNS`` runs
  ended in the window.
- ``AgentobsRunFarPastCap`` (critical): a run at all, in the window, above the boundary at or above both the cap
  and the largest value any run of the source took: beyond the cap and beyond everything the caps were computed
  from (steps beyond the cap seen at all).
- ``AgentobsRunsStoppedAtLimit`` (warning): the share of agent invocations that ended with this limit's stop reason
  (the collector's span metrics: ``traces_span_metrics_calls_total`` of ``invoke_agent`` spans by
  ``agentobs_stop_reason``, which the kernel and the guards set) is above the source's share likewise: with the
  budget in force, the runs it cuts off. This one covers the repeat and stall limits, which no histogram carries.

A cap above a histogram's last boundary gets no histogram rule (said in a comment). Series are summed by service
(``exported_job`` for what applications send over OTLP, ``service_name`` for span metrics) and agent
(``gen_ai_agent_name``), and only the agents of the source's runs are watched (each name escaped for RE2 inside a
PromQL string inside YAML: text from traces never becomes rule syntax). Every number in the text is ours; the YAML
is written by hand (no YAML library in the core), every string double-quoted and escaped.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pandas as pd

from ...contract import semconv as sc
from ...errors import InputError
from ..assess.limits import CapRecommendation
from .config import USD_NOTE, Emitted, Reserve, Setting, budget_settings

MIN_RUNS = 10                 # runs ended in the window before a share may fire
MIN_EXCESS = 0.02             # a share fires above expected + max(expected, this)
MAX_AGENTS = 50               # more agent names than this: no agent filter
GROUP = "agentobs-caps"


@dataclass(frozen=True)
class _Metric:
    name: str                       # Prometheus name (classic: dots to underscores, unit suffix)
    buckets: tuple[float, ...]
    what: str


# Budget field -> the per-run histogram that carries its dimension (tests keep the names equal to the dashboards')
HISTOGRAMS: dict[str, _Metric] = {
    "max_steps": _Metric("gen_ai_invoke_agent_inference_calls", sc.CALLS_BUCKETS, "model calls (steps)"),
    "max_tool_calls": _Metric("gen_ai_invoke_agent_tool_calls", sc.CALLS_BUCKETS, "tool calls"),
    "max_tokens": _Metric("agentobs_run_tokens", sc.TOKEN_BUCKETS, "tokens"),
    "max_usd": _Metric("agentobs_run_cost_usd", sc.COST_BUCKETS, "dollars"),
    "deadline_s": _Metric("gen_ai_invoke_agent_duration_seconds", sc.AGENT_DURATION_BUCKETS, "active seconds"),
}
# Budget field -> the stop reason a run it stops ends with
STOP_REASONS = {"max_steps": "max_steps", "max_tool_calls": "max_tool_calls", "max_tokens": "max_tokens",
                "max_usd": "max_usd", "deadline_s": "deadline", "max_repeat": "repeated_call",
                "max_stalls": "no_progress"}
AT_CAP = ("max_tool_calls", "max_stalls")     # the kernel stops a run that reaches these (emit._AT_CAP)
SPAN_CALLS = "traces_span_metrics_calls_total"
_DURATION = re.compile(r"[0-9]+(ms|s|m|h|d|w|y)")


def rules(caps: Sequence[CapRecommendation], runs: pd.DataFrame, *, target: float = 0.01, margin: float = 0.10,
          reserve: Reserve | float | None = None, window: str = "1h", hold: str = "5m") -> Emitted:
    """The caps as a Prometheus rules file (``Emitted.text``); ``window``: the range of each rule's ``increase``;
    ``hold``: each rule's ``for``."""
    if not _DURATION.fullmatch(window) or not int(re.sub(r"\D", "", window)):
        raise InputError(f"--alert-window {window!r}: use a Prometheus duration such as 1h or 30m")
    if not _DURATION.fullmatch(hold):
        raise InputError(f"--alert-for {hold!r}: use a Prometheus duration such as 5m, or 0s to fire at once")
    reserve = reserve if isinstance(reserve, Reserve) else Reserve(usd=reserve)
    settings, missing, notes, explained = budget_settings(caps, reserve)
    n = max((c.successful_runs for c in caps), default=0)
    agents = _agents(runs)
    out = ["# Prometheus alerting rules from the caps of agentobs (agentobs caps SOURCE --emit prometheus-rules):",
           f"# the smallest cap that cuts off at most {100 * target:g}% of {n} successful runs, plus "
           f"{100 * margin:g}%; the same values as --emit budget.",
           "# Load them with rule_files in prometheus.yml (scripts/stack.sh and docker-compose.yml load",
           "# prometheus/rules/*.yml), check them with: promtool check rules FILE",
           _agents_note(agents),
           "groups:", f"  - name: {_yaml_str(GROUP)}", "    rules:"]
    body: list[str] = []
    for s in settings:
        body += _for_setting(s, runs, agents, window, hold)
    unexplained = [m for m in missing if m not in explained]
    said = [n for n in notes if n.startswith(f"# {USD_NOTE}")]
    if unexplained:
        said.append(f"# No rule for {', '.join(unexplained)}: no successful run measured it, or too little for a "
                    "cap.")
    out[5:5] = said
    if not body:
        raise InputError("no cap to alert on: no successful run measured any (see agentobs caps SOURCE)")
    return Emitted(kind="prometheus-rules", settings=settings, missing=missing, text="\n".join(out + body) + "\n")


def _for_setting(s: Setting, runs: pd.DataFrame, agents: list[str], window: str, hold: str) -> list[str]:
    at_cap = s.name in AT_CAP
    share = f"cuts off {100 * s.cutoff_share:.1f}% of {s.successful_runs} successful runs"
    values = _values(runs, s.dimension)
    out: list[str] = []
    metric = HISTOGRAMS.get(s.name)
    if metric is not None:
        out += _histogram_rules(s, metric, values, agents=agents, window=window, hold=hold, share=share, at_cap=at_cap)
    reason = STOP_REASONS.get(s.name)
    if reason is not None:
        out += _stop_rule(s, reason, runs, agents=agents, window=window, hold=hold, share=share)
    return out


def _histogram_rules(s: Setting, m: _Metric, values: np.ndarray, *, agents: list[str], window: str, hold: str,
                     share: str, at_cap: bool) -> list[str]:
    past = float(s.value) - 1 if at_cap else float(s.value)       # a value above this has crossed the cap
    le = _boundary(m.buckets, past)
    if le is None:
        return [f"      # {s.name}={_num(s.value)}: above the last bucket of {m.name} ({_num(m.buckets[-1])}): "
                "no histogram rule"]
    sel = _selector(agents, {"le": _go_float(le)})
    base = _selector(agents)
    by = "sum by (exported_job, gen_ai_agent_name)"
    count = f"{by} (increase({m.name}_count{base}[{window}]))"
    within = f"{by} (increase({m.name}_bucket{sel}[{window}]))"
    expected = _share_above(values, le)
    fire = expected + max(expected, MIN_EXCESS)
    cap_text = f"{s.name}={_num(s.value)} ({share})"
    rule_a = _rule(
        "AgentobsRunsPastCap", f"(1 - {within} / {count}) > {_num(round(fire, 6))} and {count} >= {MIN_RUNS}",
        hold, "warning", s.name,
        summary=f"{{{{ $value | humanizePercentage }}}} of the runs of {{{{ $labels.gen_ai_agent_name }}}} "
                f"({{{{ $labels.exported_job }}}}) took more than {_num(le)} {m.what} in {window}",
        description=f"Cap {cap_text}. Runs above {_num(le)} {m.what} (the {m.name} bucket at or above the cap) "
                    f"were {100 * expected:.1f}% of the source's runs; this fires above {100 * fire:.1f}% of at "
                    f"least {MIN_RUNS} runs: runs that need more than the cap, or run away.")
    far = _boundary(m.buckets, max(past, float(values.max()) if len(values) else past))
    if far is None:
        return [*rule_a, f"      # {s.name}: the source's largest value is above the last bucket of {m.name}: "
                         "no AgentobsRunFarPastCap rule"]
    far_sel = _selector(agents, {"le": _go_float(far)})
    rule_b = _rule(
        "AgentobsRunFarPastCap",
        f"({count} - {by} (increase({m.name}_bucket{far_sel}[{window}]))) >= 0.5",
        hold, "critical", s.name,
        summary=f"a run of {{{{ $labels.gen_ai_agent_name }}}} ({{{{ $labels.exported_job }}}}) took more than "
                f"{_num(far)} {m.what} in {window}",
        description=f"Cap {cap_text}. No run of the source took more than {_num(far)} {m.what} (the {m.name} "
                    "bucket at or above both the cap and the source's largest value): a run beyond it is a "
                    "runaway no budget stopped in time.")
    return [*rule_a, *rule_b]


def _stop_rule(s: Setting, reason: str, runs: pd.DataFrame, *, agents: list[str], window: str, hold: str,
               share: str) -> list[str]:
    stops = runs["stop_reason"].astype("string") if "stop_reason" in runs else pd.Series(dtype="string")
    expected = float((stops == reason).sum()) / len(runs) if len(runs) else 0.0
    fire = expected + max(expected, MIN_EXCESS)
    by = "sum by (service_name, gen_ai_agent_name)"
    runs_sel = _selector(agents, {"gen_ai_operation_name": "invoke_agent"})
    stopped_sel = _selector(agents, {"gen_ai_operation_name": "invoke_agent", "agentobs_stop_reason": reason})
    total = f"{by} (increase({SPAN_CALLS}{runs_sel}[{window}]))"
    stopped = f"{by} (increase({SPAN_CALLS}{stopped_sel}[{window}]))"
    return _rule(
        "AgentobsRunsStoppedAtLimit", f"{stopped} / {total} > {_num(round(fire, 6))} and {total} >= {MIN_RUNS}",
        hold, "warning", s.name,
        summary=f"{{{{ $value | humanizePercentage }}}} of the runs of {{{{ $labels.gen_ai_agent_name }}}} "
                f"({{{{ $labels.service_name }}}}) stopped at {s.name}"
                + (f" ({reason})" if reason != s.name else "") + f" in {window}",
        description=f"Cap {s.name}={_num(s.value)} ({share}). {100 * expected:.1f}% of the source's runs ended "
                    f"with {reason}; this fires above {100 * fire:.1f}% of at least {MIN_RUNS} agent invocations "
                    "(the collector's span metrics, stop reasons set by the agentobs kernel and guards).")


def _rule(alert: str, expr: str, hold: str, severity: str, limit: str, *, summary: str, description: str
          ) -> list[str]:
    return [f"      - alert: {alert}", f"        expr: {_yaml_str(expr)}", f"        for: {hold}", "        labels:",
            f"          severity: {severity}", f"          agentobs_limit: {_yaml_str(limit)}", "        annotations:",
            f"          summary: {_yaml_str(summary)}", f"          description: {_yaml_str(description)}"]


# -- values -----------------------------------------------------------------------------------------------------

def _values(runs: pd.DataFrame, column: str) -> np.ndarray:
    if column not in runs:
        return np.array([])
    x = runs[column].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    return x[np.isfinite(x)]


def _share_above(values: np.ndarray, le: float) -> float:
    return float((values > le).sum()) / len(values) if len(values) else 0.0


def _boundary(buckets: Sequence[float], value: float) -> float | None:
    """The smallest bucket boundary at or above ``value``."""
    return next((b for b in buckets if b >= value - 1e-12), None)


def _agents_note(agents: list[str]) -> str:
    if not agents:
        return "# Agents watched: every agent."
    if len(agents) > 10:
        return f"# Agents watched: the {len(agents)} agents of the source's runs."
    return f"# Agents watched: {', '.join(_yaml_str(a) for a in agents)}."


def _agents(runs: pd.DataFrame) -> list[str]:
    if "agent" not in runs:
        return []
    names = sorted({str(a) for a in runs["agent"].dropna().unique() if str(a)})
    return names if len(names) <= MAX_AGENTS else []


# -- text: PromQL inside YAML -------------------------------------------------------------------------------------

def _selector(agents: Sequence[str], labels: dict[str, str] | None = None) -> str:
    parts = [f'{k}="{_promql_str(v)}"' for k, v in (labels or {}).items()]
    if agents:
        parts.append(f'gen_ai_agent_name=~"{_promql_str(agent_regex(agents))}"')
    return "{" + ", ".join(parts) + "}" if parts else ""


def agent_regex(names: Sequence[str]) -> str:
    """An RE2 pattern that matches exactly these names (PromQL anchors it): letters, digits and ``_`` as they are,
    ASCII punctuation escaped with a backslash, every other character as ``\\x{hex}``."""
    return "|".join("".join(_re2_char(c) for c in n) for n in names)


def _re2_char(c: str) -> str:
    if (c.isalnum() and c.isprintable()) or c == "_":
        return c
    if c.isascii() and c.isprintable() and not c.isspace():
        return "\\" + c
    return f"\\x{{{ord(c):x}}}"


def _promql_str(text: str) -> str:
    """The inside of a double-quoted PromQL string holding ``text``."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _yaml_str(text: str) -> str:
    """A YAML double-quoted scalar holding ``text``: backslash and quote escaped, and every character a YAML reader
    could take for a line break or refuse (controls, NEL, the line and paragraph separators, a BOM, surrogates) as
    an escape."""
    out = []
    for c in text:
        o = ord(c)
        if c in ('"', "\\"):
            out.append("\\" + c)
        elif o < 0x20 or 0x7F <= o <= 0x9F or o in (0x2028, 0x2029, 0xFEFF) or 0xD800 <= o <= 0xDFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _go_float(x: float) -> str:
    """``x`` as Go's ``strconv.FormatFloat(x, 'g', -1, 64)`` writes it, which is how the collector's prometheus
    exporter writes a bucket's ``le``: the shortest digits that read back as ``x``, in exponent form when the
    exponent is below -4 or at least 6 (``1``, ``16``, ``0.0001``, ``262144``, ``1.048576e+06``, ``1e-05``)."""
    sign, digits, exp = Decimal(repr(float(x))).normalize().as_tuple()
    assert isinstance(exp, int)
    text = "".join(map(str, digits))
    e = len(text) + exp - 1                   # the decimal exponent of the first digit
    if e < -4 or e >= 6:
        mant = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{'-' if sign else ''}{mant}e{'-' if e < 0 else '+'}{abs(e):02d}"
    return format(Decimal(repr(float(x))).normalize(), "f")


def _num(v: float | int) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() and abs(f) < 1e15 else f"{f:.6g}"

