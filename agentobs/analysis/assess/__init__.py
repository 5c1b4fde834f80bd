"""What the runs say: labels, failure signatures, caps.

    labels.py      success labels: from the stop reason, a span attribute or a labels file
    signatures.py  failure signatures with their evidence (``CATALOG``, ``classify``)
    limits.py      percentiles and recommended caps (``recommend_all``), with bootstrap intervals (``_bootstrap``)

Imports ``input`` and ``spans``; reads the runs table ``derive`` makes.
"""
