"""The roles table of docs/analysis.md, written from the dialect tables
(``python -m agentobs.analysis.spans.dialects``); a test keeps the page and the tables equal."""
from __future__ import annotations

from ._table import KIND_NAMES, NUMBER_FIELDS, TEXT_FIELDS, Dialect, SpanName

_SHOWN = ("agent", "model", "provider", "tool", "args", "input_tokens", "output_tokens", "cache_read_tokens",
          "cache_creation_tokens", "reasoning_tokens", "cost", "error_type", "finish")


def _source(s: str | SpanName) -> str:
    return f"`{s}`" if isinstance(s, str) else s.describe()


def _roles(d: Dialect) -> str:
    parts = []
    if d.marker:
        by_role: dict[str, list[str]] = {}
        for value, role in d.roles.items():
            by_role.setdefault(str(KIND_NAMES[role]), []).append(value)
        parts.append(f"`{d.marker}`: " + "; ".join(f"{', '.join(v)} → {r}" for r, v in by_role.items())
                     + "; other values: other")
    parts += [r.describe() for r in d.rules]
    return "<br>".join(parts)


def _values(d: Dialect) -> str:
    parts = []
    for f in _SHOWN:
        keys: list[str] = []
        if f in TEXT_FIELDS:
            keys = [_source(s) for s in d.text.get(f, ())]
        elif f in NUMBER_FIELDS:
            keys = [f"`{k}`" for k in d.numbers.get(f, ())]
            for attr, paths in d.usage_json.items():
                inside = [f"`{'.'.join(p)}`" for p in paths.get(f, ())]
                if inside:
                    keys.append(f"`{attr}` (JSON: {', '.join(inside)})")
        if keys:
            parts.append(f"{f}: {', '.join(keys)}")
    if d.error:
        parts.append("failed: " + ", ".join(w.describe() for w in d.error))
    if d.session:
        parts.append("session: " + ", ".join(f"`{k}`" for k in d.session))
    return "<br>".join(parts) or "(the GenAI names)"


def markdown_table(registry: tuple[Dialect, ...]) -> str:
    lines = ["| order | dialect | roles | values | defined in |", "| ---: | --- | --- | --- | --- |"]
    for i, d in enumerate(registry, 1):
        lines.append(f"| {i} | `{d.name}` | {_roles(d)} | {_values(d)} | {d.where} |")
    return "\n".join(lines)
