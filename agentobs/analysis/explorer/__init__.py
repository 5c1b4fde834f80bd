"""The run explorer: one page (``agentobs report --format html``) or a local server (``agentobs view``).

    text.py       text from traces made safe to show: secrets masked, one line, bounded, deduplicated into the
                  page's string table; JSON data islands with ``<``, ``>`` and ``&`` escaped
    runs_table.py the runs table as columns of codes and numbers, its facets, filters and sort orders
    spans.py      one run's spans as a waterfall: tree order, offsets, durations, roles, tokens, cost, errors,
                  the attributes redaction lets through, span events
    charts.py     the overview charts as Plotly figures (data and layout)
    model.py      what a page holds: the limits of one page, what it leaves out, the data island
    assets.py     the JavaScript and CSS of Plotly and DataTables, from their Python packages (plotly, itables)
    server.py     ``agentobs view``: the explorer on 127.0.0.1, run details and pages of the runs table on demand

The page itself is ``templates/report.html.j2`` (Jinja2, autoescape), ``templates/explorer.js`` and
``templates/explorer.css``; ``html.py`` renders it; ``trace_tree.py`` is one trace as a tree (``agentobs trace``).

Imports ``report`` (and what it stands on): the explorer shows reports.
"""
