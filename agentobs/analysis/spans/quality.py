"""Data quality: what was wrong with the input, counted, never fatal.

Every loader and importer records problems here instead of raising; the report shows them
in a data-quality section. ``Issue.kind`` is a closed vocabulary (``KINDS``).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

KINDS = {
    "empty_file": "the file is empty",
    "unreadable": "the file could not be read",
    "unknown_format": "not a trace format agentobs reads (OTLP, Jaeger, Zipkin, console exporter) or a chat transcript",
    "invalid_json": "a line is not valid JSON (truncated?)",
    "not_otlp": "a JSON line has no resourceSpans",
    "bad_span": "a span lacks a valid trace id, span id or timestamps (dropped)",
    "bad_value": "a value is out of range or unusable (dropped; its span kept)",
    "careful_path": "a line the fast parser could not take, read on its own (the example says why)",
    "line_too_long": "a line is longer than the line limit (skipped)",
    "bad_line": "a line could not be read even on its own (skipped)",
    "parent_cycle": "spans whose parents form a cycle (dropped)",
    "wrong_type": "an attribute has a different type than the contract says",
    "negative_duration": "a span ends before it starts",
    "duplicate_span": "the same trace id and span id appear more than once (later copies dropped)",
    "orphan_span": "a span's parent is not in the input",
    "missing_root": "a trace has no root span",
    "unplaced_span": "a model or tool call belongs to no run (no agent above it, beside other runs)",
    "bad_run": "a transcript run could not be imported",
    "bad_label": "a row of the labels file could not be used (the example says why)",
    "unmatched_label": "a label's run id matches no run",
    "ambiguous_label": "a label keyed by a trace id whose trace holds several runs (key it by run id)",
    "conflicting_label": ("a run id labelled both true and false in the labels file, or a run whose ids are "
                          "(the run is left unlabelled)"),
    "unlabelled_run": "a run has no label in the labels file",
    "source_error": "a source (Jaeger, a folder) could not be queried",
}

# the kinds that say a labels file did not label every run as asked
LABEL_KINDS = frozenset({"bad_label", "unmatched_label", "ambiguous_label", "conflicting_label", "unlabelled_run"})
# the kinds that lose spans (a file, a line, a span left out), as against notes on spans that are kept
LOSES_SPANS = frozenset({"unreadable", "unknown_format", "invalid_json", "not_otlp", "bad_span", "line_too_long",
                         "bad_line", "parent_cycle", "bad_run", "source_error"})


@dataclass
class Issue:
    kind: str
    count: int
    source: str
    examples: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "what": KINDS.get(self.kind, self.kind), "count": self.count,
                "source": self.source, "examples": self.examples}


@dataclass
class DataQuality:
    issues: list[Issue] = field(default_factory=list)
    files: int = 0
    lines: int = 0

    def add(self, kind: str, source: str, count: int = 1, example: str | None = None) -> None:
        if count <= 0:
            return
        if example is not None:
            example = " ".join(str(example).split())[:240]     # one line, bounded
        assert kind in KINDS, kind
        for issue in self.issues:
            if issue.kind == kind and issue.source == source:
                issue.count += count
                if example and len(issue.examples) < 3:
                    issue.examples.append(example)
                return
        self.issues.append(Issue(kind, count, source, [example] if example else []))

    def snapshot(self) -> tuple[list[Issue], int, int]:
        return [Issue(i.kind, i.count, i.source, list(i.examples)) for i in self.issues], self.files, self.lines

    def restore(self, saved: tuple[list[Issue], int, int]) -> None:
        issues, self.files, self.lines = saved
        self.issues = [Issue(i.kind, i.count, i.source, list(i.examples)) for i in issues]

    def extend(self, other: DataQuality) -> None:
        """Adds ``other``'s counts, files and lines, and its examples (up to three per kind and source)."""
        for issue in other.issues:
            self.add(issue.kind, issue.source, issue.count, issue.examples[0] if issue.examples else None)
            mine = next(i for i in self.issues if i.kind == issue.kind and i.source == issue.source)
            mine.examples.extend(issue.examples[1:][:max(0, 3 - len(mine.examples))])
        self.files += other.files
        self.lines += other.lines

    def count(self, kind: str) -> int:
        return sum(i.count for i in self.issues if i.kind == kind)

    def summary(self, limit: int = 3) -> str:
        """The main problems in one line (the largest counts first), each with its first example (what went wrong,
        e.g. the system's reason a file could not be read), for an error message."""
        if not self.issues:
            return "the input holds no spans"
        by_kind: dict[str, int] = {}
        example: dict[str, str] = {}
        for i in self.issues:
            by_kind[i.kind] = by_kind.get(i.kind, 0) + i.count
            if i.examples and i.kind not in example:
                example[i.kind] = i.examples[0]
        top = sorted(by_kind.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        return "; ".join(f"{n} x {kind} ({KINDS[kind]}" + (f": {_short(example[kind])})" if kind in example else ")")
                         for kind, n in top)

    def losses(self) -> str | None:
        """What lost spans, in one line (``summary`` of those kinds), or None when nothing was lost."""
        return self.summary_of(LOSES_SPANS)

    def summary_of(self, kinds: Iterable[str]) -> str | None:
        """``summary`` of the issues of these kinds, or None when there is none."""
        wanted = set(kinds)
        some = DataQuality(issues=[i for i in self.issues if i.kind in wanted])
        return some.summary() if some.issues else None

    def to_dict(self) -> dict[str, Any]:
        return {"files": self.files, "lines": self.lines, "issues": [i.to_dict() for i in self.issues]}


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
