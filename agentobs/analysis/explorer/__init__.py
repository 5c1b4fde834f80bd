"""The run explorer: one page (``agentobs report --format html``) or a local server (``agentobs view``).

    text.py         text from traces made safe to show: secrets masked, one line, bounded, deduplicated into the
                    page's string table; JSON data islands with ``<``, ``>`` and ``&`` escaped
    model.py        what a page holds: the limits of one page, what it leaves out, the data island
    server.py       ``agentobs view``: the explorer on 127.0.0.1, run details and pages of the runs table on demand
    _runs_table.py  the runs table as columns of codes and numbers, its facets, filters and sort orders
    _spans.py       one run's spans as a waterfall: tree order, offsets, durations, roles, tokens, cost, errors,
                    the attributes redaction lets through, span events
    _charts.py      the overview charts as Plotly figures (data and layout)
    _assets.py      the JavaScript and CSS of Plotly and DataTables, from their Python packages (plotly, itables)

The page itself is ``templates/report.html.j2`` (Jinja2, autoescape), ``templates/explorer.js`` and
``templates/explorer.css``; ``html.py`` renders it; ``trace_tree.py`` is one trace as a tree (``agentobs trace``).

The modules with a leading underscore are the page's parts, imported only inside the package. Imports ``report``
(and what it stands on): the explorer shows reports.
"""
