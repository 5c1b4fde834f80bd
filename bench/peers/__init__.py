"""Peers side by side (optional: ``python -m bench.peers``, never in CI): the docstring of ``driver``."""
from . import driver as _driver
from .driver import NAME, TARGETS, TITLE, run, summary

__doc__ = _driver.__doc__
__all__ = ["NAME", "TARGETS", "TITLE", "run", "summary"]
