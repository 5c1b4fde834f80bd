"""Model prices. Default: the ``genai-prices`` table; your own prices take precedence.

A call that cannot be priced returns ``None`` and is counted as unpriced, never as free.
A dollar budget with a model that cannot be priced is refused before the run starts.
``genai-prices`` is imported on the first lookup, so the contract imports without it.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from functools import lru_cache

from ..errors import ConfigError


class Prices:
    """Per-million-token prices: ``Prices({"my-model": (input_usd, output_usd)})``."""

    def __init__(self, custom: Mapping[str, tuple[float, float]] | None = None, *, use_genai_prices: bool = True,
                 as_of: datetime | None = None):
        self.custom: dict[str, tuple[float, float]] = {}
        for model, pair in (custom or {}).items():
            try:
                inp, out = (float(x) for x in pair)
            except (TypeError, ValueError):
                raise ConfigError(f"price for {model!r} must be (input_usd_per_mtok, output_usd_per_mtok)") from None
            if not (math.isfinite(inp) and math.isfinite(out) and inp >= 0 and out >= 0):
                raise ConfigError(f"price for {model!r} must be two finite numbers >= 0, got {pair!r}")
            self.custom[model] = (inp, out)
        self.use_genai_prices = use_genai_prices
        self.as_of = as_of

    def cost(self, model: str, provider: str | None, input_tokens: int, output_tokens: int) -> float | None:
        if model in self.custom:
            inp, out = self.custom[model]
            return (input_tokens * inp + output_tokens * out) / 1e6
        if not self.use_genai_prices:
            return None
        return _genai_cost(model, provider, input_tokens, output_tokens, self.as_of)

    def can_price(self, model: str, provider: str | None) -> bool:
        return self.cost(model, provider, 1000, 1000) is not None


@lru_cache(maxsize=65536)
def _genai_cost(model: str, provider: str | None, tin: int, tout: int, as_of: datetime | None) -> float | None:
    from genai_prices import Usage, calc_price

    try:
        calc = calc_price(Usage(input_tokens=tin, output_tokens=tout), model_ref=model,
                          provider_id=provider if provider not in (None, "agentobs") else None,
                          genai_request_timestamp=as_of)
    except LookupError:
        return None
    except Exception:
        return None
    return float(calc.total_price)
