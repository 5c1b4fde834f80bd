"""Which runs a report is about, and that choice pushed into the reading.

    selection.py  ``Selection`` (window, services, agents, models, attributes), resolved once; ``select_runs``
    prune.py      the selection pushed into the loading: a Jaeger query narrowed, the trace groups that can hold no
                  selected run set aside (``prune``), with what was read and kept (``ReadStats``)

Imports ``input``, ``spans``, ``derive`` and ``jaeger``.
"""
