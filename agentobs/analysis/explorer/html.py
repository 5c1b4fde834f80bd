"""The HTML report: the run explorer as one page that works offline (no CDN, no server).

The page (``templates/report.html.j2``, Jinja2 with autoescape) holds the report's sections as the terminal shows
them (``view.report_view``), the overview charts (Plotly), the runs table (DataTables: sort, filters, id search,
column chooser), each signature's page and each run's waterfall (``templates/explorer.js``), drawn from one JSON
data island (``explorer.model.page_data``). ``agentobs view`` serves the same page with the runs and spans loaded
on demand (``explorer.server``).

Text from traces is data: the template escapes every value it writes, the data island escapes ``<``, ``>`` and
``&``, the browser writes texts with ``textContent``, and a link is made only to an http(s) URL. A Content
Security Policy lets only the page's own script run (by its hash) and the libraries it starts from ``blob:`` URLs.
"""
from __future__ import annotations

import base64
import hashlib
from importlib.resources import files
from typing import Any
from urllib.parse import urlsplit

from ...contract.redaction import secrets_masked
from ..report.summary import Report
from . import _assets as assets
from ._charts import CHARTS, charts
from .model import Explorer, PageLimits, build, page_data, shown_sources
from .text import LABEL_CHARS, UNPRINTABLE, Strings, dumps, label, labels

PLOTS = CHARTS
_label, _labels = label, labels          # (the chart labels: distinct, linear in their number)
__all__ = ["LABEL_CHARS", "PLOTS", "PageLimits", "page", "plots", "render"]


def _href(url: str | None) -> str | None:
    """``url`` when it is an http or https URL with a host (what a link may point to); else None."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    ok = parts.scheme.lower() in ("http", "https") and parts.netloc and url.isprintable() and " " not in url
    return url if ok else None


def plots(report: Report) -> dict[str, dict[str, Any]]:
    """The overview charts as Plotly figures (data and layout)."""
    return charts(report, Strings())


def _shown(v: Any) -> Any:
    """Every value the template writes, as agentobs shows text: secrets masked (not the page's own markup)."""
    if isinstance(v, str) and not hasattr(v, "__html__"):
        return secrets_masked(v)
    return v


def _environment() -> Any:
    import jinja2
    env = jinja2.Environment(loader=jinja2.PackageLoader("agentobs.analysis.explorer", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             finalize=_shown)
    env.filters["text"] = lambda v: UNPRINTABLE.sub(" ", str(v))          # autoescape does the escaping
    env.filters["href"] = _href
    return env


def render(report: Report, *, limits: PageLimits | None = None) -> str:
    """The page written to a file: every run's row, and the spans of as many runs as ``limits`` allow."""
    return page(build(report, mode="file", limits=limits, jaeger=_href(report.options.jaeger_url)))


def page(x: Explorer) -> str:
    """The page of an explorer (written to a file, or served by ``agentobs view``)."""
    import markupsafe

    from ..report.view import report_view
    app = _resource("explorer.js")
    css = _resource("explorer.css")
    dt_js, dt_css = assets.datatables()
    libs = {"plotly": assets.plotly_js(), "datatables": dt_js}
    csp = ("default-src 'none'; script-src 'sha256-" + _sha256(app) + "' blob:; style-src 'unsafe-inline'; "
           "img-src data: blob:; font-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'")
    data = page_data(x)
    details = data.pop("details")          # an island of its own, parsed when a run is first opened
    return _environment().get_template("report.html.j2").render(
        view=report_view(x.report), sources=shown_sources(x.report), mode=x.mode, csp=markupsafe.escape(csp),
        data=markupsafe.Markup(dumps(data)), details=markupsafe.Markup(dumps(details)),
        libs={k: markupsafe.Markup(dumps(v)) for k, v in libs.items()},
        styles=markupsafe.Markup(_style_text(dt_css) + "\n" + _style_text(css)),
        app=markupsafe.Markup(app), chart_names=CHARTS)


def _resource(name: str) -> str:
    return files("agentobs.analysis.explorer").joinpath("templates", name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def _style_text(css: str) -> str:
    """CSS as the text of a ``<style>`` element: nothing in it may end the element."""
    return css.replace("</", "<\\/")
