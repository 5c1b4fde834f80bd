"""``agentobs demo``: the seeds' scenarios through the kernel, as a table or JSON lines."""
from __future__ import annotations

import click

from ..domain.scenarios import SEED000, SEED004, Result
from .render import console, json_lines, table


def _fmt_effects(effects: list) -> str:
    return "[" + ", ".join("(" + ", ".join(repr(x) for x in e) + ")" for e in effects) + "]"


def _rows(results: list[Result]):
    for r in results:
        st = r.state
        yield (r.name, st.stop, st.step, st.tool_calls, st.tokens, f"{st.elapsed:.1f}", _fmt_effects(r.desk.effects))


@click.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="table: the seed's scenario table; json: one object per scenario.")
def demo(fmt: str) -> None:
    """Run the seed scenarios (A-H and seed 004's guards) on the simulated support desk."""
    seed000 = [f() for f in SEED000.values()]
    seed004 = [f() for f in SEED004.values()]
    if fmt == "json":
        json_lines({**r.row(), "suite": suite} for suite, rs in (("seed000", seed000), ("seed004", seed004))
                   for r in rs)
        return
    cols = [("scenario", "left"), ("stop", "left"), ("steps", "right"), ("tools", "right"), ("tokens", "right"),
            ("secs", "right"), ("effects", "left")]
    console.print(table("Seed 000 scenarios", cols, _rows(seed000)))
    console.print()
    console.print(table("Seed 004 guards and recovery", cols, _rows(seed004)))
