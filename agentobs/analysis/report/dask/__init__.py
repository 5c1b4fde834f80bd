"""The analysis on a Dask cluster (``--engine dask``): the local engine's report on inputs too large for one process.

Spans are loaded where the inputs are read (one task per input), shuffled so that the traces of one task meet in
one partition, turned into runs rows there by the local engine's own ``check`` and ``derive_runs``, and summarized
on the client by the local engine's ``report.summarize_runs``. See ``engine`` for the steps and docs/scale.md for
running it. Needs ``pip install 'agentobs[dask]'``; importing ``agentobs.analysis`` never imports dask.
"""
from .engine import analyze_dask

__all__ = ["analyze_dask"]
