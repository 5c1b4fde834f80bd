"""The JavaScript and CSS the page needs, from the Python packages that ship them: Plotly's ``plotly`` package
(``plotly.min.js``, the whole library) and ``itables`` (its offline DataTables bundle: DataTables with its
Buttons, column visibility and other extensions, as one ES module, and its CSS). Nothing is fetched when a page
is made or opened, and nothing is copied into this repository.

Each library travels in the page as a JSON string (``text.dumps``: ``<``, ``>`` and ``&`` escaped, so its text
can never end the element that holds it) and is started from a ``blob:`` URL by the page's script.
"""
from __future__ import annotations

import functools
from pathlib import Path


@functools.cache
def plotly_js() -> str:
    from plotly.offline import get_plotlyjs
    text: str = get_plotlyjs()
    return text


@functools.cache
def datatables() -> tuple[str, str]:
    """(the DataTables bundle, an ES module; its CSS) as itables ships them for offline use."""
    from itables import options
    bundle = Path(options.dt_bundle)
    return bundle.read_text(encoding="utf-8"), bundle.with_suffix(".css").read_text(encoding="utf-8")


def versions() -> dict[str, str]:
    from importlib.metadata import version
    return {"plotly": version("plotly"), "itables": version("itables")}
