"""From spans to runs: ``runs.derive_runs(spanset) -> (runs, spans, derivation)``.

    runs.py            the runs table, one row per run, built from column groups against the declared schema
    identity.py        which spans make a run: agent invocations wherever they sit, segments joined by task and links
    roles.py           what gave each span its role (dialect, structure), per source
    calls.py           logical model and tool calls (one call reported by several instrumentations counts once)
    outcomes.py        outcomes and stop reasons from evidence, for runs whose stop reason nobody recorded
    kept_elsewhere.py  values a span does not carry, read where an instrumentation keeps them
    pricing.py         the cost of calls that carry no cost, from the contract's prices
    tracegroups.py     traces that make runs together (a task, a session): the unit a selection or a partition keeps

Imports ``spans`` (and the dialects in it).
"""
