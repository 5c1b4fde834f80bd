"""Data quality: what was wrong with the input, counted, never fatal.

Every loader and importer records problems here instead of raising; the report shows them in a data-quality
section. A problem is a ``Finding``: its kind (``Kind``, a closed enumeration), the source it was found in, how many
times and up to three examples. ``DataQuality`` holds one finding per kind and source and adds up like a number:
``a + b`` (and ``sum``) adds the counts per kind and source and keeps a bounded number of examples, so findings made
in pieces (files read apart, partitions of a cluster) give the findings of the whole. Findings are shown in the
order they were first made (the order of the sum: the pipeline's order, reading, checks, runs, labels).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from enum import Enum, StrEnum
from typing import Any

EXAMPLES = 3                 # examples kept per finding
EXAMPLE_CHARS = 240          # an example is one line, at most this long


class Kind(StrEnum):
    """What may be wrong with the input. ``check`` makes its kinds in the order declared here (``bad_span`` ...
    ``missing_root``), and the Dask engine orders its merged checks by it."""
    EMPTY_FILE = "empty_file"
    UNREADABLE = "unreadable"
    UNKNOWN_FORMAT = "unknown_format"
    INVALID_JSON = "invalid_json"
    NOT_OTLP = "not_otlp"
    CAREFUL_PATH = "careful_path"
    LINE_TOO_LONG = "line_too_long"
    BAD_LINE = "bad_line"
    WRONG_TYPE = "wrong_type"
    TOO_MANY_KEYS = "too_many_keys"
    BAD_SPAN = "bad_span"
    DUPLICATE_SPAN = "duplicate_span"
    PARENT_CYCLE = "parent_cycle"
    BAD_VALUE = "bad_value"
    NEGATIVE_DURATION = "negative_duration"
    ORPHAN_SPAN = "orphan_span"
    MISSING_ROOT = "missing_root"
    UNPLACED_SPAN = "unplaced_span"
    BAD_RUN = "bad_run"
    BAD_LABEL = "bad_label"
    UNMATCHED_LABEL = "unmatched_label"
    AMBIGUOUS_LABEL = "ambiguous_label"
    CONFLICTING_LABEL = "conflicting_label"
    UNLABELLED_RUN = "unlabelled_run"
    SOURCE_ERROR = "source_error"

    @property
    def what(self) -> str:
        """What the kind means, in one sentence (the report's ``what``)."""
        return _WHAT[self]

    @property
    def position(self) -> int:
        """The kind's place in the declaration order."""
        return _POSITION[self]


_WHAT = {
    Kind.EMPTY_FILE: "the file is empty",
    Kind.UNREADABLE: "the file could not be read",
    Kind.UNKNOWN_FORMAT: ("not a trace format agentobs reads (OTLP, Jaeger, Zipkin, console exporter) or a chat "
                          "transcript"),
    Kind.INVALID_JSON: "a line is not valid JSON (truncated?)",
    Kind.NOT_OTLP: "a JSON line has no resourceSpans",
    Kind.BAD_SPAN: "a span lacks a valid trace id, span id or timestamps (dropped)",
    Kind.BAD_VALUE: "a value is out of range or unusable (dropped; its span kept)",
    Kind.CAREFUL_PATH: "a line the fast parser could not take, read on its own (the example says why)",
    Kind.LINE_TOO_LONG: "a line is longer than the line limit (skipped)",
    Kind.BAD_LINE: "a line could not be read even on its own (skipped)",
    Kind.PARENT_CYCLE: "spans whose parents form a cycle (dropped)",
    Kind.WRONG_TYPE: "an attribute has a different type than the contract says",
    Kind.TOO_MANY_KEYS: ("attribute keys beyond what the input may cost in columns, the rarest left out (their "
                         "values not read)"),
    Kind.NEGATIVE_DURATION: "a span ends before it starts",
    Kind.DUPLICATE_SPAN: "the same trace id and span id appear more than once (later copies dropped)",
    Kind.ORPHAN_SPAN: "a span's parent is not in the input",
    Kind.MISSING_ROOT: "a trace has no root span",
    Kind.UNPLACED_SPAN: "a model or tool call belongs to no run (no agent above it, beside other runs)",
    Kind.BAD_RUN: "a transcript run could not be imported",
    Kind.BAD_LABEL: "a row of the labels file could not be used (the example says why)",
    Kind.UNMATCHED_LABEL: "a label's run id matches no run",
    Kind.AMBIGUOUS_LABEL: "a label keyed by a trace id whose trace holds several runs (key it by run id)",
    Kind.CONFLICTING_LABEL: ("a run id labelled both true and false in the labels file, or a run whose ids are "
                             "(the run is left unlabelled)"),
    Kind.UNLABELLED_RUN: "a run has no label in the labels file",
    Kind.SOURCE_ERROR: "a source (Jaeger, a folder) could not be queried",
}
_POSITION = {k: i for i, k in enumerate(Kind)}
KINDS = {k.value: k.what for k in Kind}          # kind -> what it means

# the kinds that say a labels file did not label every run as asked
LABEL_KINDS = frozenset({Kind.BAD_LABEL, Kind.UNMATCHED_LABEL, Kind.AMBIGUOUS_LABEL, Kind.CONFLICTING_LABEL,
                         Kind.UNLABELLED_RUN})
# the kinds that lose spans (a file, a line, a span left out), as against notes on spans that are kept
LOSES_SPANS = frozenset({Kind.UNREADABLE, Kind.UNKNOWN_FORMAT, Kind.INVALID_JSON, Kind.NOT_OTLP, Kind.BAD_SPAN,
                         Kind.LINE_TOO_LONG, Kind.BAD_LINE, Kind.PARENT_CYCLE, Kind.BAD_RUN, Kind.SOURCE_ERROR})


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One kind of problem in one source: how many times, and up to ``EXAMPLES`` examples (one line each).
    Findings of the same kind and source add up (``+``). ``examples`` is never changed after construction."""
    kind: Kind
    source: str
    count: int
    examples: list[str] = field(default_factory=list)

    @staticmethod
    def of(kind: Kind | str, source: str, count: int = 1, example: str | None = None) -> Finding:
        """A finding with one example at most (made one bounded line)."""
        text = " ".join(str(example).split())[:EXAMPLE_CHARS] if example is not None else ""
        return Finding(kind=Kind(kind), source=source, count=count, examples=[text] if text else [])

    @property
    def key(self) -> tuple[Kind, str]:
        return self.kind, self.source

    def __add__(self, other: Finding) -> Finding:
        if other.key != self.key:
            raise ValueError(f"cannot add a finding of {other.key} to one of {self.key}")
        return replace(self, count=self.count + other.count,
                       examples=(self.examples + other.examples)[:EXAMPLES])

    def renamed(self, old: str, new: str) -> Finding:
        """The finding with the source ``old`` named ``new``, in its source and examples."""
        return replace(self, source=new if self.source == old else self.source,
                       examples=[e.replace(old, new) for e in self.examples])

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "what": self.kind.what, "count": self.count, "source": self.source,
                "examples": list(self.examples)}


@dataclass(kw_only=True)
class DataQuality:
    """The findings of an input, one per kind and source in the order first made, and the files and lines read.
    Filled as the input is read (``add``); two add up (``+``, ``sum``) into a new one."""
    findings: dict[tuple[Kind, str], Finding] = field(default_factory=dict)
    files: int = 0
    lines: int = 0

    @property
    def issues(self) -> list[Finding]:
        """The findings, in the order they were first made."""
        return list(self.findings.values())

    def add(self, kind: Kind | str, source: str, count: int = 1, example: str | None = None) -> None:
        """Counts ``count`` problems of ``kind`` in ``source`` (none when ``count`` is not positive)."""
        if count > 0:
            self.record(Finding.of(kind, source, count, example))

    def record(self, finding: Finding) -> None:
        """Adds ``finding`` to the one of its kind and source (or keeps it, the first of its kind and source)."""
        mine = self.findings.get(finding.key)
        self.findings[finding.key] = finding if mine is None else mine + finding

    def __iadd__(self, other: DataQuality) -> DataQuality:
        for finding in other.findings.values():
            self.record(finding)
        self.files += other.files
        self.lines += other.lines
        return self

    def __add__(self, other: DataQuality) -> DataQuality:
        out = self.copy()
        out += other
        return out

    def __radd__(self, other: int | DataQuality) -> DataQuality:
        """(``sum`` starts from 0.)"""
        if isinstance(other, int):
            if other != 0:
                return NotImplemented
            return self.copy()
        return other + self

    def copy(self) -> DataQuality:
        return DataQuality(findings=dict(self.findings), files=self.files, lines=self.lines)

    def replaced(self, change: Callable[[Finding], Finding | None]) -> DataQuality:
        """A new one with each finding changed by ``change`` (None: left out), added up again by kind and source."""
        out = DataQuality(files=self.files, lines=self.lines)
        for finding in self.findings.values():
            changed = change(finding)
            if changed is not None:
                out.record(changed)
        return out

    def extend(self, other: DataQuality) -> None:
        """Adds ``other``'s counts, files and lines, and its examples (up to three per kind and source)."""
        self += other

    def snapshot(self) -> DataQuality:
        """What it holds now, for ``restore`` (findings are values: a copy of the mapping is enough)."""
        return self.copy()

    def restore(self, saved: DataQuality) -> None:
        self.findings, self.files, self.lines = dict(saved.findings), saved.files, saved.lines

    def count(self, kind: Kind | str) -> int:
        return sum(f.count for f in self.findings.values() if f.kind == kind)

    def summary(self, limit: int = 3) -> str:
        """The main problems in one line (the largest counts first), each with its first example (what went wrong,
        e.g. the system's reason a file could not be read), for an error message."""
        if not self.findings:
            return "the input holds no spans"
        by_kind: dict[Kind, int] = {}
        example: dict[Kind, str] = {}
        for f in self.findings.values():
            by_kind[f.kind] = by_kind.get(f.kind, 0) + f.count
            if f.examples and f.kind not in example:
                example[f.kind] = f.examples[0]
        top = sorted(by_kind.items(), key=lambda kv: (-kv[1], kv[0].value))[:limit]
        return "; ".join(f"{n} x {kind.value} ({kind.what}"
                         + (f": {_short(example[kind])})" if kind in example else ")") for kind, n in top)

    def losses(self) -> str | None:
        """What lost spans, in one line (``summary`` of those kinds), or None when nothing was lost."""
        return self.summary_of(LOSES_SPANS)

    def summary_of(self, kinds: Iterable[Kind | str]) -> str | None:
        """``summary`` of the findings of these kinds, or None when there is none."""
        wanted = {Kind(k) for k in kinds}
        some = DataQuality(findings={k: f for k, f in self.findings.items() if f.kind in wanted})
        return some.summary() if some.findings else None

    def to_dict(self) -> dict[str, Any]:
        return {"files": self.files, "lines": self.lines, "issues": [f.to_dict() for f in self.findings.values()]}


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class NoteKind(Enum):
    """What the derivation of runs says it could not do, in the order shown (the order ``derive_runs`` finds
    them)."""
    TOOLS_UNRECORDED = "tools_unrecorded"
    NO_TOOL_ARGUMENTS = "no_tool_arguments"
    NO_TOKEN_USAGE = "no_token_usage"
    NOT_PRICED = "not_priced"
    ROOTLESS = "rootless"
    ONE_SPAN_TRACES = "one_span_traces"
    NO_SUCCESS_ATTRIBUTE = "no_success_attribute"


ROOTLESS_NOTE = ("runs lack their trace's root span (a process that crashed or was still running, or a lost span): "
                 "their figures may be cut short, and the status of their top span leaves them unlabelled")
_SAYS = {
    NoteKind.TOOLS_UNRECORDED: ("runs asked for tools (a model call's finish reason) but record no tool spans: their "
                                "tool calls and repeats could not be counted"),
    NoteKind.NO_TOOL_ARGUMENTS: ("runs record no tool-call arguments (neither agentobs.tool.args_digest nor "
                                 "arguments in their dialect): repeated calls could not be counted for them"),
    NoteKind.NO_TOKEN_USAGE: ("runs have answered model calls that reported no token usage: their tokens and cost "
                              "are left unknown, not summed from the calls that did"),
    NoteKind.NOT_PRICED: ("runs have model calls that could not be priced (no recorded cost, a model genai-prices "
                          "does not know): their cost is left unknown, not summed from the calls that could"),
    NoteKind.ROOTLESS: ROOTLESS_NOTE,
    NoteKind.ONE_SPAN_TRACES: ("runs are one model or tool call alone in a trace of its own: where an agent made "
                               "them, its instrumentation started them outside the agent's context (OpenLLMetry's "
                               "LangChain.js handler without an enclosing workflow span), which splits one agent run "
                               "into many; wrap each run in a span of your own"),
    NoteKind.NO_SUCCESS_ATTRIBUTE: "runs have no {attribute} attribute on their root span (--success-attr labels "
                                   "them failed)",
}
_NOTE_POSITION = {k: i for i, k in enumerate(NoteKind)}


@dataclass(frozen=True, kw_only=True)
class Note:
    """One thing the derivation of runs could not do, for how many runs; said in words only when shown (``str``).
    Notes of the same kind (and attribute) add up (``+``)."""
    kind: NoteKind
    runs: int
    attribute: str | None = None      # NO_SUCCESS_ATTRIBUTE: the attribute ``--success-attr`` names

    @property
    def key(self) -> tuple[NoteKind, str | None]:
        return self.kind, self.attribute

    def __add__(self, other: Note) -> Note:
        if other.key != self.key:
            raise ValueError(f"cannot add a note of {other.key} to one of {self.key}")
        return replace(self, runs=self.runs + other.runs)

    def __str__(self) -> str:
        return f"{self.runs} " + _SAYS[self.kind].format(attribute=self.attribute)


def total(notes: Iterable[Note]) -> list[Note]:
    """The notes added up per kind (and attribute), in the order they are shown (``NoteKind``'s)."""
    out: dict[tuple[NoteKind, str | None], Note] = {}
    for note in notes:
        mine = out.get(note.key)
        out[note.key] = note if mine is None else mine + note
    return sorted(out.values(), key=lambda n: _NOTE_POSITION[n.kind])
