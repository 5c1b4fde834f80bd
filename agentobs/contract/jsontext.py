"""JSON text exactly as ``json.dumps`` writes it, without its per-call set-up.

``json.dumps(v, sort_keys=True)`` builds a ``JSONEncoder`` and then a C encoder on every call; the kernel writes
JSON about twenty times a run (the view, the progress signature, call digests, token estimates), and that
set-up was a tenth of a run. ``dumps`` makes only the C encoder per call, with its own table of the containers
being written, so a cycle is still the ``ValueError`` json.dumps raises and two threads never share it. The
text is json.dumps' with the same arguments (``tests/unit/contract/test_jsontext.py``); where the interpreter has
no C encoder, json.dumps itself is called.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _encoder
from typing import Any

_MAKE: Any = getattr(_encoder, "c_make_encoder", None)     # (not in typeshed: the C encoder behind json.dumps)
_ESCAPE = _encoder.encode_basestring_ascii       # json.dumps' default (ensure_ascii=True)


def _refuse(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: Any, *, sort_keys: bool = False, default: Callable[[Any], Any] | None = None) -> str:
    """``json.dumps(value, sort_keys=sort_keys, default=default)``."""
    if _MAKE is None:                                                 # pragma: no cover (no _json module)
        return json.dumps(value, sort_keys=sort_keys, default=default)
    encode = _MAKE({}, default or _refuse, _ESCAPE, None, ": ", ", ", sort_keys, False, True)
    return "".join(encode(value, 0))
