"""Roles from structure, for the spans no dialect gives a role.

A span carrying a model id and token usage is a model call; a span carrying a tool name and tool arguments is a
tool call; a span carrying HTTP, RPC or messaging attributes is transport. The values are looked for under every
dialect's keys and, beyond them, under attribute keys shaped like such values (``<anything>.model``,
``<anything>.input_tokens``, ``<anything>.tool.name``, ...: ``generic``), so a framework no dialect describes is
still read.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from ._table import CHAT, TOOL, TRANSPORT, Dialect

_MODEL = re.compile(r"(?:^|[._])(?:(?:request|response)[._])?model(?:[._]?(?:name|id))?$", re.I)
_INPUT = re.compile(r"(?:(?:input|prompt)[._]?tokens|token_count[._]prompt)$", re.I)
_OUTPUT = re.compile(r"(?:(?:output|completion)[._]?tokens|token_count[._]completion)$", re.I)
_TOOL = re.compile(r"(?:^|[._])(?:tool[._]?name|toolcall[._]name|function[._]name)$", re.I)
_ARGS = re.compile(r"(?:^|[._])(?:tool[._]?(?:call[._])?(?:arguments|args|input|parameters)"
                   r"|toolcall[._](?:args|input|arguments)|function[._]arguments|input[._]value)$", re.I)
# what a value of this name is not: a cache or reasoning share of the tokens, a total, a limit, an embedding model
_NOT = re.compile(r"cache|cached|reasoning|details|total|limit|max|embedding|estimate", re.I)

TRANSPORT_KEYS = ("http.method", "http.request.method", "rpc.system", "rpc.method", "http.route", "url.full",
                  "http.url", "http.target", "messaging.system", "messaging.operation", "messaging.operation.name",
                  "messaging.destination", "messaging.destination.name")

# (role, what the structure rule says): the rules in the order they are tried
RULES = ((CHAT, "a model id and token usage (or an error: a failed attempt)"), (TOOL, "a tool name and tool arguments"),
         (TRANSPORT, "HTTP, RPC or messaging attributes"),
         # (derive._named_tools, with the span tree: a span named after a tool the model call before it asked for)
         (TOOL, "named after a tool the model call before it asked for"))
NAMED_TOOL_RULE = 3


def _matching(columns: Iterable[str], pattern: re.Pattern[str]) -> tuple[str, ...]:
    return tuple(sorted(c for c in columns if pattern.search(c) and not _NOT.search(c)))


def generic(columns: Iterable[str], known: Iterable[str] = ()) -> Dialect:
    """The keys of this frame shaped like a model id, token counts, a tool name or tool arguments, as a dialect
    table that reads them (no marker: it classifies nothing itself); ``known`` keys, which a dialect reads, are left
    to it."""
    seen = set(known)
    cols = [c for c in columns if ("." in c or "_" in c or c == "model") and c not in seen]
    return Dialect(name="structure",
                   text={"model": _matching(cols, _MODEL), "tool": _matching(cols, _TOOL),
                         "args": _matching(cols, _ARGS)},
                   numbers={"input_tokens": _matching(cols, _INPUT), "output_tokens": _matching(cols, _OUTPUT)})


def roles(model: np.ndarray, tokens: np.ndarray, tool: np.ndarray, args: np.ndarray,
          transport: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(role, index of the rule in ``RULES``; -1 where none holds) from presence masks of the values."""
    n = len(model)
    role = np.full(n, -1, dtype=np.int8)
    rule = np.full(n, -1, dtype=np.int8)
    for i, (r, held) in enumerate(((CHAT, model & tokens), (TOOL, tool & args), (TRANSPORT, transport))):
        take = held & (role < 0)
        role[take] = r
        rule[take] = i
    return role, rule
