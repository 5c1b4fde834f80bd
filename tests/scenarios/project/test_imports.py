"""What importing a part of agentobs loads: the analysis no SDK and no kernel, the command line nothing heavy
before a command runs; and the public surface, literal and sorted."""
import ast
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import click
import pytest
from locations import ROOT

import agentobs

HEAVY = ("pandas", "pyarrow", "numpy", "opentelemetry")


def _loaded(code: str) -> list[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_importing_the_analysis_loads_no_sdk_no_kernel_no_telemetry():
    mods = _loaded("import agentobs.analysis")
    assert "agentobs.analysis" in mods
    for banned in ("opentelemetry.sdk", "agentobs.kernel.loop", "agentobs.telemetry.setup"):
        assert banned not in mods
    assert not [m for m in mods if m.startswith(("opentelemetry", "agentobs.kernel", "agentobs.telemetry"))]


def test_the_local_engine_loads_no_dask():
    mods = _loaded("import agentobs.analysis.report.summary, agentobs.cli.analysis_cmds")
    assert not [m for m in mods if m.split(".")[0] in ("dask", "distributed")]


def test_no_module_of_the_analysis_loads_the_sdk():
    mods = _loaded("import pkgutil, importlib, agentobs.analysis as a\n"
                   "for m in pkgutil.walk_packages(a.__path__, a.__name__ + '.'):\n"
                   "    importlib.import_module(m.name)")
    assert len([m for m in mods if m.startswith("agentobs.analysis.")]) > 10
    assert not [m for m in mods if m.startswith(("opentelemetry.sdk", "agentobs.kernel", "agentobs.telemetry"))]


def _cli(*args: str) -> list[str]:
    return _loaded("import sys\nfrom agentobs.cli.main import main\n"
                   f"sys.argv = ['agentobs', *{list(args)!r}]\n"
                   "try:\n    main()\nexcept SystemExit:\n    pass")


def test_agentobs_help_imports_no_command():
    mods = _cli("--help")
    assert not [m for m in mods if m.split(".")[0] in HEAVY]
    assert not [m for m in mods if m.startswith(("agentobs.analysis", "agentobs.kernel", "agentobs.telemetry",
                                                 "agentobs.domain", "agentobs.cli.analysis_cmds"))]


@pytest.mark.parametrize("command", ["report", "caps", "runs", "trace"])
def test_an_analysis_commands_help_imports_nothing_heavy(command):
    mods = _cli(command, "--help")
    assert "agentobs.cli.analysis_cmds" in mods
    assert not [m for m in mods if m.split(".")[0] in HEAVY]


def test_the_listed_help_is_each_commands_own():
    from agentobs.cli.main import COMMANDS, cli
    ctx = click.Context(cli)
    for name, (_, _, short) in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None and command.name == name
        assert command.get_short_help_str(10_000) == short, name
    result = subprocess.run([sys.executable, "-c", "from agentobs.cli.main import main; main()", "--help"],
                            capture_output=True, text=True, check=True).stdout
    assert all(name in result for name in COMMANDS)


# -- the public surface ----------------------------------------------------------------------------------------------

def _literal_all(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                assert isinstance(node.value, ast.List), f"{path}: __all__ must be a literal list"
                assert all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.value.elts), path
                return [e.value for e in node.value.elts]  # type: ignore[attr-defined]
    return None


def test_every_package_that_re_exports_has_a_literal_sorted_all():
    for init in sorted((ROOT / "agentobs").rglob("__init__.py")):
        names = _literal_all(init)
        imports = [n for n in ast.parse(init.read_text()).body if isinstance(n, ast.ImportFrom) and n.level]
        if imports:
            assert names is not None, f"{init} re-exports names without __all__"
        if names is not None:
            assert names == sorted(names) and len(set(names)) == len(names), init


def test_the_top_level_all_is_complete_and_lazy():
    names = _literal_all(ROOT / "agentobs" / "__init__.py")
    assert names == agentobs.__all__ == sorted(agentobs.__all__)
    for name in names:
        assert getattr(agentobs, name) is not None, name
    public = {n for n in dir(agentobs) if not n.startswith("_") and not isinstance(getattr(agentobs, n), ModuleType)}
    public -= {"annotations", "TYPE_CHECKING", "Any"}          # the module's own imports
    assert public <= set(names), public - set(names)
    mods = _loaded("import agentobs")
    assert not [m for m in mods if m.startswith(("agentobs.kernel", "agentobs.telemetry", "opentelemetry"))]
    mods = _loaded("from agentobs import Kernel, Budget, TaskState, Model, Toolbox, Observer")
    assert "agentobs.kernel.loop" in mods and not [m for m in mods if m.startswith("opentelemetry")]


def test_protocols_at_the_top_level_and_test_doubles_in_testing():
    import agentobs.testing as testing
    from agentobs import Model, Observer, Toolbox
    assert all(getattr(p, "_is_protocol", False) for p in (Model, Toolbox, Observer))
    assert set(testing.__all__) >= {"SimClock", "ScriptedModel", "FunctionModel", "Recorder", "Replayer", "CrashAt",
                                    "EventLog"}
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        agentobs.Nope  # noqa: B018


def test_no_module_imports_itself_through_others_not_even_for_types():
    """No import circle anywhere in agentobs, the imports under ``TYPE_CHECKING`` included (the import contracts
    leave those out): a module typed against another that imports it uses a Protocol of what it reads instead
    (``kernel.run.KernelConfig``, ``telemetry.lifecycle.Closable``)."""
    import grimp
    graph = grimp.build_graph("agentobs", exclude_type_checking_imports=False)
    circles = sorted({tuple(sorted((module, imported)))
                      for module in graph.modules
                      for imported in graph.find_modules_directly_imported_by(module)
                      if graph.chain_exists(importer=imported, imported=module)})
    assert circles == []
