"""The complexity gate: per file, ruff's complexity findings may only go down.

Three ruff rules (thresholds in pyproject.toml, [tool.ruff.lint.mccabe] and [tool.ruff.lint.pylint]):
C901 (a function's cyclomatic complexity), PLR0913 (all its parameters) and PLR0917 (its positional parameters).
The code had findings of these when the gate came, so it is held to a baseline instead of zero:
scripts/complexity-baseline.json maps a file's path (relative to the repository, forward slashes) to its count of
each rule. The check fails, one line per file, when a file has more findings of a rule than the baseline records
(a file the baseline does not name may have none). A file with fewer is reported, and `--update` writes the
baseline anew so the lower count becomes the bound.

`--update` writes the counts found today, keyed by path; it refuses (and writes nothing) when the total of a rule
across all files is higher than the baseline's. So moving or renaming modules needs only `--update` (the findings
move with the code, the totals stay), while a new finding must be removed, not recorded.

    python scripts/complexity_gate.py            # check agentobs/ and bench/ (exit 1 when a file got worse)
    python scripts/complexity_gate.py --update   # tighten the baseline / re-key it after moving modules

Standard library only; ruff is the one next to this Python (the project's venv) or the first on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

RULES = ("C901", "PLR0913", "PLR0917")
# what to do about a finding of each rule, said once per file that has too many
REMEDY = {
    "C901": "split the function into its jobs",
    "PLR0913": "group the parameters into a keyword-only dataclass",
    "PLR0917": "make the parameters after the fifth keyword-only (*)",
}
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BASELINE = "scripts/complexity-baseline.json"
DEFAULT_PATHS = ("agentobs", "bench")
SELF = "scripts/complexity_gate.py"

Counts = dict[str, Counter[str]]  # file -> rule -> findings


class GateError(Exception):
    """The gate could not run (no ruff, ruff failed, an unreadable baseline): one line saying what to fix."""


def _ruff(explicit: str | None) -> str:
    if explicit:
        return explicit
    beside = Path(sys.executable).parent / "ruff"
    if beside.is_file():
        return str(beside)
    found = shutil.which("ruff")
    if found is None:
        raise GateError("ruff not found: install the dev extra (pip install -e '.[dev]') or pass --ruff PATH")
    return found


def findings(root: Path, paths: list[str], ruff: str) -> tuple[Counts, dict[str, dict[str, list[int]]]]:
    """Each file's count of each rule under `paths`, and the lines they are on."""
    cmd = [ruff, "check", "--no-cache", "--preview", "--exit-zero", "--output-format", "json",
           "--select", ",".join(RULES), *paths]
    try:
        done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise GateError(f"could not run {ruff}: {exc.strerror}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise GateError(f"ruff failed (exit {done.returncode}): {last}")
    try:
        rows = json.loads(done.stdout or "[]")
    except json.JSONDecodeError as exc:
        raise GateError(f"ruff's JSON output could not be read: {exc}") from None
    counts: Counts = {}
    lines: dict[str, dict[str, list[int]]] = {}
    for row in rows:
        if row.get("code") not in RULES:
            continue
        path = Path(row["filename"]).resolve().relative_to(root.resolve()).as_posix()
        counts.setdefault(path, Counter())[row["code"]] += 1
        lines.setdefault(path, {}).setdefault(row["code"], []).append(row["location"]["row"])
    return counts, lines


def _count(n: object) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n >= 0


def _rows(rows: list[int]) -> str:
    return ("line " if len(rows) == 1 else "lines ") + ", ".join(map(str, rows))


def read_baseline(path: Path) -> Counts:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GateError(f"no baseline at {path}: write one with --update") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise GateError(f"the baseline {path} could not be read ({exc}): "
                        "restore it from git or write it with --update") from None
    ok = isinstance(data, dict) and all(
        isinstance(rules, dict) and all(rule in RULES and _count(n) for rule, n in rules.items())
        for rules in data.values()
    )
    if not ok:
        raise GateError(f"the baseline {path} is not {{file: {{rule: count}}}} with rules {', '.join(RULES)}: "
                        "restore it from git or write it with --update")
    return {file: Counter(rules) for file, rules in data.items()}


def write_baseline(path: Path, counts: Counts) -> None:
    """All of it or nothing: written beside the baseline, then moved over it."""
    data = {file: {rule: counts[file][rule] for rule in RULES if counts[file][rule]}
            for file in sorted(counts) if sum(counts[file].values())}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
            out.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _under(file: str, paths: list[str]) -> bool:
    return any(p in (".", "") or file == p.rstrip("/") or file.startswith(p.rstrip("/") + "/") for p in paths)


def compare(now: Counts, lines: dict[str, dict[str, list[int]]], base: Counts) -> tuple[list[str], list[str]]:
    """(a line per file over its baseline, a line per file under it)."""
    worse, better = [], []
    for file in sorted(set(now) | set(base)):
        have, allowed = now.get(file, Counter()), base.get(file, Counter())
        over = [r for r in RULES if have[r] > allowed[r]]
        under = [r for r in RULES if have[r] < allowed[r]]
        if over:
            what = ", ".join(f"{r} {have[r]} > {allowed[r]} ({_rows(lines[file][r])})" for r in over)
            new = " (a file the baseline does not name may have none)" if file not in base else ""
            worse.append(f"{file}: {what}{new}: {'; '.join(REMEDY[r] for r in over)}")
        if under:
            what = ", ".join(f"{r} {have[r]} < {allowed[r]}" for r in under)
            better.append(f"{file}: {what}: lower than the baseline, run {SELF} --update to keep it")
    return worse, better


def totals(counts: Counts) -> Counter[str]:
    out: Counter[str] = Counter()
    for rules in counts.values():
        out.update(rules)
    return out


def _totals_text(counts: Counter[str]) -> str:
    return ", ".join(f"{r} {counts[r]}" for r in RULES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=list(DEFAULT_PATHS), help="what to check (default: agentobs bench)")
    parser.add_argument("--update", action="store_true",
                        help="write today's counts as the baseline (never higher totals)")
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help=f"relative to --root (default {DEFAULT_BASELINE})")
    parser.add_argument("--root", default=str(ROOT), help="the repository (paths and baseline keys are relative to it)")
    parser.add_argument("--ruff", help="the ruff executable (default: the venv's, then PATH)")
    args = parser.parse_args(argv)
    root = Path(args.root)
    baseline = root / args.baseline
    try:
        now, lines = findings(root, args.paths, _ruff(args.ruff))
        if args.update and not baseline.exists():
            write_baseline(baseline, now)
            print(f"complexity gate: wrote {args.baseline}: {_totals_text(totals(now))}")
            return 0
        kept = read_baseline(baseline)
        base = {f: c for f, c in kept.items() if _under(f, args.paths)}
    except GateError as exc:
        print(f"complexity gate: error: {exc}", file=sys.stderr)
        return 2
    worse, better = compare(now, lines, base)
    if args.update:
        risen = [r for r in RULES if totals(now)[r] > totals(base)[r]]
        if risen:
            print(f"complexity gate: not updated: more {', '.join(risen)} findings than the baseline "
                  f"({_totals_text(totals(now))}; baseline {_totals_text(totals(base))})", file=sys.stderr)
            for line in worse:
                print(line, file=sys.stderr)
            return 1
        # files outside the paths checked keep their counts
        write_baseline(baseline, {**{f: c for f, c in kept.items() if f not in base}, **now})
        print(f"complexity gate: wrote {args.baseline}: {_totals_text(totals(now))} "
              f"(was {_totals_text(totals(base))})")
        return 0
    for line in better:
        print(line)
    if worse:
        for line in worse:
            print(line, file=sys.stderr)
        print(f"complexity gate: {len(worse)} file(s) over {args.baseline} "
              f"(thresholds in pyproject.toml [tool.ruff.lint.mccabe], [tool.ruff.lint.pylint])", file=sys.stderr)
        return 1
    print(f"complexity gate: ok ({_totals_text(totals(now))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
