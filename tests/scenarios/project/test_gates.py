"""The complexity gate (scripts/complexity_gate.py): per file, C901/PLR0913/PLR0917 findings may only go down.

Each case runs the script as `make gates` does, with the project's own ruff settings (pyproject.toml copied) on a
small package in a temporary folder with a baseline of its own; the last case runs it on the repository itself.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from locations import ROOT

GATE = ROOT / "scripts" / "complexity_gate.py"
BASELINE = "scripts/complexity-baseline.json"

SIMPLE = '''\
def route(kind):
    if kind == "a":
        return 1
    return 0
'''


def _branchy(n: int) -> str:
    """A function of cyclomatic complexity n + 1."""
    body = "".join(f"    if kind == {i}:\n        return {i}\n" for i in range(n))
    return f"def route(kind):\n{body}    return -1\n"


def _gate(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(GATE), "--root", str(root), *args, "pkg"],
                          capture_output=True, text=True, check=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """pkg/route.py at complexity 20 (one C901 finding) and pkg/plain.py with none, the baseline recording that."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "route.py").write_text(_branchy(19))
    (tmp_path / "pkg" / "plain.py").write_text(SIMPLE)
    written = _gate(tmp_path, "--update")
    assert written.returncode == 0, written.stderr
    assert json.loads((tmp_path / BASELINE).read_text()) == {"pkg/route.py": {"C901": 1}}
    return tmp_path


def test_a_file_as_complex_as_its_baseline_passes(project):
    done = _gate(project)
    assert done.returncode == 0, done.stderr
    assert "ok (C901 1, PLR0913 0, PLR0917 0)" in done.stdout


def test_a_file_made_more_complex_than_its_baseline_fails_naming_the_file(project):
    (project / "pkg" / "route.py").write_text(_branchy(19) + "\n\n" + _branchy(19).replace("route", "again"))
    second = len(_branchy(19).splitlines()) + 3
    done = _gate(project)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0] == f"pkg/route.py: C901 2 > 1 (lines 1, {second}): split the function into its jobs"
    assert "1 file(s) over scripts/complexity-baseline.json" in lines[1]


def test_a_new_finding_in_a_file_the_baseline_does_not_name_fails(project):
    (project / "pkg" / "plain.py").write_text("def make(a, b, c, d, e, f):\n    return a\n")
    done = _gate(project)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0].startswith("pkg/plain.py: PLR0917 1 > 0 (line 1) (a file the baseline does")


def test_keyword_only_parameters_are_not_positional_but_still_counted(project):
    """Six keyword-only parameters are within both bounds; nine are too many inputs however they are passed."""
    (project / "pkg" / "plain.py").write_text("def make(a, *, b, c, d, e, f):\n    return a\n")
    assert _gate(project).returncode == 0
    (project / "pkg" / "plain.py").write_text("def make(a, *, b, c, d, e, f, g, h, i):\n    return a\n")
    done = _gate(project)
    assert done.returncode == 1
    assert done.stderr.startswith("pkg/plain.py: PLR0913 1 > 0 (line 1)")


def test_a_lower_count_passes_says_so_and_update_tightens_the_baseline(project):
    (project / "pkg" / "route.py").write_text(SIMPLE)
    done = _gate(project)
    assert done.returncode == 0
    assert "pkg/route.py: C901 0 < 1: lower than the baseline, run scripts/complexity_gate.py --update" in done.stdout
    assert _gate(project, "--update").returncode == 0
    assert json.loads((project / BASELINE).read_text()) == {}
    # tightened: the old complexity is now over the baseline
    (project / "pkg" / "route.py").write_text(_branchy(19))
    assert _gate(project).returncode == 1


def test_update_refuses_a_higher_total_and_leaves_the_baseline_as_it_was(project):
    before = (project / BASELINE).read_bytes()
    (project / "pkg" / "plain.py").write_text(_branchy(16))
    done = _gate(project, "--update")
    assert done.returncode == 1
    assert done.stderr.startswith("complexity gate: not updated: more C901 findings than the baseline")
    assert (project / BASELINE).read_bytes() == before


def test_update_rekeys_the_baseline_after_a_module_moves(project):
    (project / "pkg" / "sub").mkdir()
    (project / "pkg" / "route.py").rename(project / "pkg" / "sub" / "route.py")
    assert _gate(project).returncode == 1  # the moved file is one the baseline does not name
    done = _gate(project, "--update")
    assert done.returncode == 0, done.stderr
    assert json.loads((project / BASELINE).read_text()) == {"pkg/sub/route.py": {"C901": 1}}
    assert _gate(project).returncode == 0


def test_a_baseline_that_is_not_counts_is_one_line_saying_what_to_do(project):
    (project / BASELINE).write_text('{"pkg/route.py": {"C901": "one"}}')
    done = _gate(project)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "restore it from git or write it with --update" in done.stderr


def test_the_repository_is_within_its_baseline():
    done = subprocess.run([sys.executable, str(GATE)], capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
