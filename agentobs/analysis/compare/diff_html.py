"""The comparison as a plain HTML page (``agentobs diff --format html``): the terminal's lines and tables, the
significant rows marked, no script. Jinja2 with autoescape: every text from the traces (sources, values) is
escaped, and shown as agentobs shows text (secrets masked, unprintable characters as spaces)."""
from __future__ import annotations

from typing import Any

from ...contract.redaction import secrets_masked
from ..explorer.text import UNPRINTABLE
from .comparison import Comparison
from .diff_view import COLUMNS, diff_view


def _shown(v: Any) -> Any:
    if isinstance(v, str) and not hasattr(v, "__html__"):
        return secrets_masked(v)
    return v


def render(c: Comparison) -> str:
    import jinja2
    env = jinja2.Environment(loader=jinja2.PackageLoader("agentobs.analysis.compare", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, finalize=_shown)
    env.filters["text"] = lambda v: UNPRINTABLE.sub(" ", str(v))
    return env.get_template("diff.html.j2").render(view=diff_view(c), columns=COLUMNS, generated_at=c.generated_at)


__all__ = ["render"]
