"""From spans to runs: ``runs.derive_runs(spanset) -> (runs, spans, derivation)``.

    runs.py            the runs table, one row per run, built from column groups against the declared schema
    pricing.py         the cost of calls that carry no cost, from the contract's prices
    tracegroups.py     traces that make runs together (a task, a session): the unit a selection or a partition keeps
    _identity.py       which spans make a run: agent invocations wherever they sit, segments joined by task and links
    _roles.py          what gave each span its role (dialect, structure), per source
    _calls.py          logical model and tool calls (one call reported by several instrumentations counts once)
    _outcomes.py       outcomes and stop reasons from evidence, for runs whose stop reason nobody recorded
    _kept_elsewhere.py values a span does not carry, read where an instrumentation keeps them

The modules with a leading underscore are the steps of ``derive_runs``, imported only inside the package. Imports
``spans`` (and the dialects in it).
"""
