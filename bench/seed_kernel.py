"""Loads the seed 000 standard-library kernel from the shared spec, at bench time.

The seed text (``../shared/seeds/000_8a880146d78a5187.txt`` relative to the repo root) prints
its programs as plain lines between prose paragraphs; there are no fences. This module finds
the runs of code lines, cuts off the demo snippets that follow a definition, parses each
piece with ``ast``, and assigns it to a file by what it defines:

    kernel.py    Clock, Budget, est_tokens, TaskState, render, Trace
    tools.py     CATALOG, LATENCY, AUTO_LIMIT, Tools
    models.py    Policy, Fn, Recorder, Replay
    loop.py      validate_plan, STOPS_SUSPEND, finish, over_budget, execute, run, resume
    scenarios.py go, same_call, new_ids, search_loop, SCENARIOS

The pieces are written, unchanged and in document order, into a temporary directory and
imported from there. Nothing of the seed's code is stored in this repository. The modules
are imported under their own names (kernel, loop, ...) and then removed from ``sys.modules``
again, so they cannot shadow anything else.

    python -m bench.seed_kernel          # prints the extracted files' sizes and scenario A
"""
from __future__ import annotations

import ast
import atexit
import importlib
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from types import ModuleType

from .common import REPO_ROOT

SEED_PATH = os.path.join(REPO_ROOT, "..", "shared", "seeds", "000_8a880146d78a5187.txt")
SEED_MODULES = ("kernel", "tools", "models", "loop", "scenarios")

# which top-level names put a piece of code into which file
_OWNER = {
    "kernel": {"Clock", "Budget", "est_tokens", "TaskState", "render", "Trace"},
    "tools": {"Tools", "CATALOG"},
    "models": {"Policy", "Fn", "Recorder", "Replay"},
    "loop": {"validate_plan", "finish", "over_budget", "execute", "run", "resume", "STOPS_SUSPEND"},
    "scenarios": {"go", "SCENARIOS"},
}

# an unindented line that starts like Python; prose and program output do not
_CODE_START = re.compile(
    r"^(import |from \S+ import |class |def |@|#|if |elif |else:|for |while |with |try:|except|finally:|return\b|"
    r"print\(|[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_*][\w.]*)*\s*(=|\+=|-=|\()|[\]\)\}])")
_SEED_IMPORT = re.compile(r"^from (kernel|tools|loop|models|scenarios|memory) import ")


@dataclass
class SeedKernel:
    """The imported seed modules and the directory they were extracted to."""
    kernel: ModuleType
    tools: ModuleType
    models: ModuleType
    loop: ModuleType
    scenarios: ModuleType
    directory: str
    sources: dict[str, str]

    def scenario_a(self):
        """One run of the seed's scenario A: returns (state, trace, tools, clock)."""
        return self.scenarios.go(self.models.Policy())


def _is_code(line: str) -> bool:
    return not line.strip() or line[:1] in " \t" or bool(_CODE_START.match(line))


def _blocks(text: str) -> list[list[str]]:
    """Maximal runs of code-like lines, split where a demo starts importing the seed's modules."""
    blocks: list[list[str]] = []
    cur: list[str] = []
    for line in text.splitlines():
        if _is_code(line):
            # "from loop import ..." after a blank line inside a block: a demo begins
            if _SEED_IMPORT.match(line) and cur and not cur[-1].strip() and any(
                    ln.startswith(("def ", "class ")) for ln in cur):
                blocks.append(cur)
                cur = []
            cur.append(line)
        else:
            if cur:
                blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    return [b for b in blocks if any(ln.strip() for ln in b)]


def _parse_prefix(lines: list[str]) -> tuple[str, ast.Module] | None:
    """The longest prefix of ``lines`` that parses (trailing program output is dropped)."""
    for end in range(len(lines), 0, -1):
        src = "\n".join(lines[:end]).strip("\n")
        if not src:
            return None
        try:
            return src, ast.parse(src)
        except SyntaxError:
            continue
    return None


def _top_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _is_definitions(tree: ast.Module) -> bool:
    """Only imports, definitions and assignments: no top-level prints or loops (those are demos)."""
    ok = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)
    for node in tree.body:
        if isinstance(node, ok):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):   # a docstring
            continue
        return False
    return True


def extract(text: str) -> dict[str, str]:
    """Returns {module name: source} for the five seed modules."""
    files: dict[str, list[str]] = {m: [] for m in SEED_MODULES}
    for block in _blocks(text):
        parsed = _parse_prefix(block)
        if parsed is None:
            continue
        src, tree = parsed
        if not _is_definitions(tree):
            continue
        names = _top_names(tree)
        owners = [m for m, defs in _OWNER.items() if names & defs]
        if len(owners) > 1:
            raise ValueError(f"a code block defines names of several seed files {owners}: {sorted(names)}")
        if owners:
            files[owners[0]].append(src)
    missing = {m: sorted(defs - set().union(*(_top_names(ast.parse(s)) for s in files[m])))
               for m, defs in _OWNER.items()}
    missing = {m: v for m, v in missing.items() if v}
    if missing:
        raise ValueError(f"could not find these definitions in the seed text: {missing}")
    return {m: "\n\n\n".join(parts) + "\n" for m, parts in files.items()}


def load(path: str = SEED_PATH, check: bool = True) -> SeedKernel:
    """Extracts the seed modules into a temporary directory, imports them, and checks scenario A."""
    with open(path, encoding="utf-8") as f:
        sources = extract(f.read())
    directory = tempfile.mkdtemp(prefix="seed000_")
    atexit.register(shutil.rmtree, directory, True)      # the modules stay loaded; the files go at exit
    for name, src in sources.items():
        with open(os.path.join(directory, f"{name}.py"), "w", encoding="utf-8") as f:
            f.write(src)
    saved = {m: sys.modules.pop(m) for m in SEED_MODULES if m in sys.modules}
    sys.path.insert(0, directory)
    try:
        importlib.invalidate_caches()
        mods = {m: importlib.import_module(m) for m in SEED_MODULES}
    finally:
        sys.path.remove(directory)
        for m in SEED_MODULES:
            sys.modules.pop(m, None)
        sys.modules.update(saved)
    seed = SeedKernel(directory=directory, sources=sources, **mods)
    if check:
        st, tr, tools, _ = seed.scenario_a()
        got = (st.stop, st.step, st.tokens, len(tr.spans))
        if got[:3] != ("done", 5, 708):
            raise AssertionError(f"seed scenario A gave stop/steps/tokens {got[:3]}, expected ('done', 5, 708)")
        if tools.effects != [("refund", "ord_1001", 3000), ("email", "ord_1001")]:
            raise AssertionError(f"seed scenario A effects {tools.effects}")
    return seed


if __name__ == "__main__":
    s = load()
    for name, src in s.sources.items():
        print(f"{name:10} {len(src.splitlines()):4d} lines")
    st, tr, tools, clock = s.scenario_a()
    print("scenario A:", st.stop, st.step, "steps", st.tokens, "tokens", len(tr.spans), "spans", tools.effects)
    print("extracted to", s.directory, "(removed at exit)")
