"""The report: ``engine.analyze(SOURCES, Options) -> Report``.

    summary.py  what both engines share: ``Options``, ``Report`` and the summary of a runs table (``summarize_runs``)
    local.py    the local engine: the report on spans loaded in this process (``analyze_spans``)
    dask/       the Dask engine: the same report on a cluster (scan, place by trace group, derive per partition,
                merge); dask and distributed are imported only there
    engine.py   the choice between the two (``analyze(..., engine="local" | "dask")``)
    view.py     the report as readers see it: sections, tables and lines for the terminal and HTML renderers

Layered inside (import-linter): engine above local, dask and view, which are above summary.
"""
