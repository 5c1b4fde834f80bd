"""Model call prices as array arithmetic over genai-prices' own price terms.

Each distinct (provider, model) pair is resolved once, with genai-prices' own lookup (its aliases,
regular-expression matches, provider inference from the model name and provider fallbacks), to the
model's price terms at a date. Every call's cost is then computed with numpy, following
``ModelPrice.calc_price`` of the installed genai-prices:

* Usage as the GenAI semantic conventions report it: ``gen_ai.usage.input_tokens`` includes the cache
  read and cache creation tokens, exactly as genai-prices' ``Usage.input_tokens`` includes
  ``cache_read_tokens`` and ``cache_write_tokens``. Each priced unit is charged for its *leaf* count:
  its usage minus the leaf counts of the priced units below it (input = uncached input + cache reads
  + cache writes, so uncached input pays the input price and cached tokens pay theirs; a model with
  no cache price charges cached tokens at the input price).
* Tiered prices are cliffs selected by the call's whole ``input_tokens``: the highest tier whose start
  is below it prices *all* of that unit's tokens (output included), not only those above the start.
* A request price (``requests_kcount``) is charged once per call.
* Usage the library would refuse (negative counts, cache tokens above the input tokens) gives NaN.

A model whose price terms cannot be reproduced faithfully (a ``ModelPrice`` subclass, the Groq
Whisper special case, a genai-prices without its unit registry) is priced call by call with
``calc_price`` and counted in ``PricedCalls.library_calls``. Custom prices (``{model: (input_usd_per_mtok,
output_usd_per_mtok)}``, as ``agentobs.Prices(custom=...)``) take precedence and charge every input
token, cached or not, at the input price, as the kernel does.

Prices are taken when each call was made (``at_ns``, the call's start in ns since the epoch), so a report on
the same spans gives the same costs whenever it runs, and a price that changed on a date, or that depends on the
time of day (DeepSeek's off-peak hours), is the one the call paid. A call without a time is priced at ``as_of``
(default: now). Calls are grouped by the minute they were made only for models whose prices have conditions.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

# the usage a span reports, as genai-prices usage keys; ``price_calls`` takes them in this order
REPORTED = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_IN, _OUT = 0, 1
# provider names that say nothing about who sells the model (our own simulated models)
_NO_PROVIDER = frozenset({"", "agentobs"})


@dataclass(frozen=True, kw_only=True)
class PricedCalls:
    """Costs of model calls (USD, NaN when not priced) and why some were not priced."""
    cost: np.ndarray
    unknown_models: dict[str, int] = field(default_factory=dict)  # model -> calls genai-prices cannot price
    no_model: int = 0            # calls without a model name
    bad_usage: int = 0           # priced model, but tokens missing or refused (negative, cache > input)
    library_calls: int = 0       # calls priced one by one with genai_prices.calc_price

    @property
    def unpriced(self) -> int:
        return int(np.isnan(self.cost).sum())


def price_calls(model: Any, provider: Any, input_tokens: Any, *, output_tokens: Any,
                cache_read_tokens: Any = None, cache_creation_tokens: Any = None, as_of: datetime | None = None,
                at_ns: Any = None,
                custom: Mapping[str, tuple[float, float]] | None = None,
                use_genai_prices: bool = True) -> np.ndarray:
    """Cost in USD of each call, NaN where it cannot be priced. See ``price`` for the arguments."""
    return price(model, provider, input_tokens, output_tokens=output_tokens, cache_read_tokens=cache_read_tokens,
                 cache_creation_tokens=cache_creation_tokens,
                 as_of=as_of, at_ns=at_ns, custom=custom, use_genai_prices=use_genai_prices).cost


def price(model: Any, provider: Any, input_tokens: Any, *, output_tokens: Any,
          cache_read_tokens: Any = None, cache_creation_tokens: Any = None, as_of: datetime | None = None,
          at_ns: Any = None,
          custom: Mapping[str, tuple[float, float]] | None = None,
          use_genai_prices: bool = True) -> PricedCalls:
    """Prices model calls given as parallel arrays.

    ``model``/``provider``: strings or None (``provider`` may be a scalar or None for all calls; a
    provider genai-prices does not know is inferred from the model name). Token arrays: numbers, NaN or
    None for unknown; input and output tokens are required to price a call, cache tokens default to 0
    (``input_tokens`` includes them). ``at_ns``: when each call was made (ns since the epoch; NaN or None:
    unknown, priced at ``as_of``, default now). ``custom`` prices take precedence over genai-prices.
    """
    models = _strings(model)
    n = len(models)
    providers = _strings(provider, n)
    tin, tout = _tokens(input_tokens, n), _tokens(output_tokens, n)
    cread = np.nan_to_num(_tokens(cache_read_tokens, n), nan=0.0)
    cwrite = np.nan_to_num(_tokens(cache_creation_tokens, n), nan=0.0)
    usage = np.stack([tin, tout, cread, cwrite])
    cost = np.full(n, np.nan)
    has_model = pd.notna(models)
    usable = has_model & ~np.isnan(tin) & ~np.isnan(tout) & (usage >= 0).all(axis=0)
    unknown: dict[str, int] = {}
    library_calls = 0
    when = as_of if as_of is not None else datetime.now(tz=UTC)
    minute = _minutes(at_ns, n, when)
    _check_snapshot()
    mcodes, mvalues = pd.factorize(pd.Series(models, dtype=object), use_na_sentinel=True)
    pcodes, pvalues = pd.factorize(pd.Series(providers, dtype=object), use_na_sentinel=True)
    pair = mcodes.astype(np.int64) * (len(pvalues) + 1) + (pcodes.astype(np.int64) + 1)
    pair[mcodes < 0] = -1
    uniq, inverse = np.unique(pair, return_inverse=True)
    groups = _rows_by_code(inverse, len(uniq))
    for u, rows in zip(uniq, groups, strict=True):
        if u < 0:
            continue
        m = str(mvalues[u // (len(pvalues) + 1)])
        pc = u % (len(pvalues) + 1) - 1
        p = None if pc < 0 else str(pvalues[pc])
        ok = rows[usable[rows]]
        if custom is not None and m in custom:
            inp, out = custom[m]
            cost[ok] = (tin[ok] * float(inp) + tout[ok] * float(out)) / 1e6
            continue
        found = _lookup(p, m) if use_genai_prices else None
        if found is None:
            unknown[m] = unknown.get(m, 0) + len(rows)
            continue
        for at, sub in _by_time(found, ok, minute, when):
            terms = _terms(found, at)
            if terms is None:          # genai-prices refuses this model's prices: nothing can be priced
                unknown[m] = unknown.get(m, 0) + len(sub)
            elif terms.by_library:
                cost[sub] = _by_library(found, usage[:, sub], at)
                library_calls += len(sub)
            else:
                cost[sub] = terms.cost(usage[:, sub])
    bad = int((has_model & np.isnan(cost)).sum()) - sum(unknown.values())
    return PricedCalls(cost=cost, unknown_models=unknown, no_model=int((~has_model).sum()), bad_usage=bad,
                       library_calls=library_calls)


# -- when each call was made ------------------------------------------------------------------------

def _minutes(at_ns: Any, n: int, when: datetime) -> np.ndarray:
    """The minute (since the epoch) each call was made; ``when``'s minute for a call without a time."""
    default = int(when.timestamp() // 60)
    if at_ns is None:
        return np.full(n, default, dtype=np.int64)
    try:
        t = np.asarray(at_ns, dtype="float64")               # None becomes NaN
    except (TypeError, ValueError):                          # pd.NA, text
        t = pd.to_numeric(pd.Series(at_ns, dtype=object), errors="coerce").to_numpy(dtype="float64")
    if len(t) != n:
        raise ValueError(f"expected {n} call times, got {len(t)}")
    out = np.full(n, default, dtype=np.int64)
    known = np.isfinite(t) & (t > 0)
    out[known] = (t[known] // 60e9).astype(np.int64)
    return out


def _by_time(found: _Found, rows: np.ndarray, minute: np.ndarray, when: datetime
             ) -> list[tuple[datetime, np.ndarray]]:
    """(a time, the rows to price at it): all rows at one time when the model's prices have no conditions (a
    start date, a time of day), else the rows grouped by the prices in force at the minute they were made."""
    if not isinstance(found.model.prices, list) or not len(rows):
        return [(when, rows)]
    mins, inverse = np.unique(minute[rows], return_inverse=True)
    times = [datetime.fromtimestamp(mi * 60, tz=UTC) for mi in mins.tolist()]
    codes, firsts = pd.factorize(pd.Series([id(found.model.get_prices(t)) for t in times]))
    first_time = {c: times[i] for i, c in reversed(list(enumerate(codes.tolist())))}
    groups = _rows_by_code(codes[inverse], len(firsts))
    return [(first_time[c], rows[idx]) for c, idx in enumerate(groups)]


# -- inputs ----------------------------------------------------------------------------------------

def _strings(values: Any, n: int | None = None) -> np.ndarray:
    if values is None or isinstance(values, str):
        return np.full(n if n is not None else 1, values, dtype=object)
    arr = pd.Series(values, dtype=object) if not isinstance(values, pd.Series) else values.astype(object)
    arr = arr.where(arr.notna(), None).to_numpy(dtype=object)
    if n is not None and len(arr) != n:
        raise ValueError(f"expected {n} values, got {len(arr)}")
    return arr


def _tokens(values: Any, n: int) -> np.ndarray:
    if values is None:
        return np.full(n, np.nan)
    out = pd.to_numeric(pd.Series(values), errors="coerce").astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    if len(out) != n:
        raise ValueError(f"expected {n} token counts, got {len(out)}")
    out[~np.isfinite(out)] = np.nan
    return out


def _rows_by_code(codes: np.ndarray, k: int) -> list[np.ndarray]:
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(k + 1))
    return [order[bounds[i]:bounds[i + 1]] for i in range(k)]


# -- resolution: once per (provider, model) --------------------------------------------------------

@dataclass(frozen=True)
class _Found:
    provider: Any          # genai_prices.types.Provider
    model: Any             # genai_prices.types.ModelInfo


_snapshot_seen: list[Any] = [None]


def _check_snapshot() -> None:
    """Forget resolutions when genai-prices' data snapshot was replaced (``UpdatePrices``)."""
    from genai_prices import data_snapshot
    snap = data_snapshot.get_snapshot()
    if snap is not _snapshot_seen[0]:
        _lookup.cache_clear()
        _compiled.clear()
        _snapshot_seen[0] = snap


@lru_cache(maxsize=8192)
def _lookup(provider: str | None, model: str) -> _Found | None:
    """genai-prices' own model lookup; a provider it does not know is inferred from the model name. A model id that
    is not found and reads ``<provider>/<model>`` (Genkit's ``openai/gpt-4o-mini``, LiteLLM's, a gateway's) is looked
    up again as that model of that provider."""
    found = _lookup_once(provider, model)
    head, sep, rest = model.partition("/")
    if found is None and sep and head.strip() and rest.strip():
        found = _lookup_once(head.strip(), rest.strip())
    return found


def _lookup_once(provider: str | None, model: str) -> _Found | None:
    from genai_prices import data_snapshot
    snap = data_snapshot.get_snapshot()
    pid = None if provider is None or provider.strip().lower() in _NO_PROVIDER else provider
    known = getattr(data_snapshot, "find_provider_by_id", None)
    if pid is not None and known is not None and pid.strip().lower() != "litellm" \
            and known(snap.providers, pid) is None:
        pid = None                  # not a provider genai-prices knows: infer it from the model name
    for attempt in (pid, None) if pid is not None and known is None else (pid,):    # (older genai-prices)
        try:
            prov, info = snap.find_provider_model(model, None, attempt, None)
        except Exception:  # LookupError for unknown models; anything else: not priceable either
            continue
        return _Found(prov, info)
    return None


# -- price terms: compiled once per ModelPrice object ----------------------------------------------

@dataclass(frozen=True)
class _Unit:
    per: float
    rates: np.ndarray          # [base, tier 1, ...] in USD per `per` units
    starts: np.ndarray         # tier starts (input tokens), ascending; empty: flat price
    source: int                # index into REPORTED, -1: not reported (0)
    below: tuple[int, ...]     # earlier units (priced descendants) whose leaf counts are subtracted
    refuse_if: tuple[tuple[int, ...], ...]  # reported keys all > 0 make genai-prices refuse the usage
    request: bool = False      # counted once per call


@dataclass(frozen=True)
class _Terms:
    units: tuple[_Unit, ...] = ()
    by_library: bool = False

    def cost(self, usage: np.ndarray) -> np.ndarray:
        n = usage.shape[1]
        total = np.zeros(n)
        refused = np.zeros(n, dtype=bool)
        leaves: list[np.ndarray] = []
        zero = np.zeros(n)
        for unit in self.units:
            for keys in unit.refuse_if:
                refused |= np.logical_and.reduce([usage[k] > 0 for k in keys])
            if unit.request:
                leaf = np.ones(n)
            else:
                leaf = usage[unit.source] if unit.source >= 0 else zero
                for j in unit.below:
                    leaf = leaf - leaves[j]
                refused |= leaf < 0
            leaves.append(leaf)
            rate = unit.rates[0] if not len(unit.starts) else \
                unit.rates[np.searchsorted(unit.starts, usage[_IN], side="left")]
            with np.errstate(over="ignore"):        # token counts near the largest double: an infinite cost
                total += rate * leaf / unit.per     # (left out of the caps), not a warning on stderr
        total[refused] = np.nan
        return total


_compiled: dict[tuple[int, str, str], tuple[Any, _Terms | None]] = {}


def _terms(found: _Found, when: datetime) -> _Terms | None:
    model_price = found.model.get_prices(when)
    key = (id(model_price), found.provider.id, found.model.id)
    hit = _compiled.get(key)
    if hit is None or hit[0] is not model_price:
        hit = (model_price, _compile(found, model_price))
        _compiled[key] = hit
    return hit[1]


def _compile(found: _Found, model_price: Any) -> _Terms | None:
    from genai_prices import types
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model_price.calc_price(types.Usage(input_tokens=1, output_tokens=1))  # the library's own checks
    except Exception:  # genai-prices refuses these prices for every usage
        return None
    registry = _registry()
    if registry is None or type(model_price) is not types.ModelPrice \
            or (found.provider.id == "groq" and found.model.id.startswith("whisper")):
        return _Terms(by_library=True)
    priced = []
    for key, value in model_price.__dict__.items():
        if key.startswith("_") or value is None or key not in registry._all_price_keys:
            continue                                      # unknown price keys are ignored by the library too
        priced.append((registry.unit_for_price_key(key), value))
    if any(not isinstance(v, (Decimal, types.TieredPrices)) for _, v in priced):
        return _Terms(by_library=True)
    tokens = sorted((p for p in priced if p[0].usage_key != "requests"),
                    key=lambda p: (-len(p[0].dimensions), p[0].usage_key))
    units: list[_Unit] = []
    for i, (unit, value) in enumerate(tokens):
        below = tuple(j for j in range(i) if _descends(unit, tokens[j][0]))
        source = REPORTED.index(unit.usage_key) if unit.usage_key in REPORTED else -1
        rates, starts = _rates(value)
        units.append(_Unit(per=float(unit.per), rates=rates, starts=starts, source=source, below=below,
                           refuse_if=_refusals(unit, registry) if source < 0 else ()))
    units += [_Unit(per=float(unit.per), rates=_rates(value)[0], starts=_rates(value)[1], source=-1, below=(),
                    refuse_if=(), request=True)
              for unit, value in priced if unit.usage_key == "requests"]
    return _Terms(units=tuple(units))


def _rates(value: Any) -> tuple[np.ndarray, np.ndarray]:
    """(rates: [base, tier 1, ...], starts of the tiers) of one price."""
    from genai_prices import types
    if isinstance(value, types.TieredPrices):
        tiers = sorted(value.tiers, key=lambda t: t.start)
        return (np.array([float(value.base)] + [float(t.price) for t in tiers]),
                np.array([float(t.start) for t in tiers]))
    return np.array([float(value)]), np.array([])


def _descends(ancestor: Any, unit: Any) -> bool:
    return ancestor.dimensions.items() <= unit.dimensions.items()


def _refusals(unit: Any, registry: Any) -> tuple[tuple[int, ...], ...]:
    """When a priced usage key is not reported, genai-prices infers 0 for it, unless a reported more
    specific key is > 0, or two reported keys that overlap exactly on it both are: then it refuses."""
    reported = [registry.units[k] for k in REPORTED]
    out: list[tuple[int, ...]] = [(i,) for i, r in enumerate(reported) if r is not unit and _descends(unit, r)]
    for i, a in enumerate(reported):
        for j in range(i + 1, len(reported)):
            b = reported[j]
            if a.is_compatible_with(b) and not _descends(a, b) and not _descends(b, a) \
                    and dict(unit.dimensions) == {**a.dimensions, **b.dimensions}:
                out.append((i, j))
    return tuple(out)


@lru_cache(maxsize=1)
def _registry() -> Any:
    try:
        from genai_prices.data_units import unit_data
        from genai_prices.units import UnitRegistry
    except ImportError:      # a genai-prices before the unit registry: every call goes through calc_price
        return None
    registry = UnitRegistry(unit_data)
    if not all(k in registry.units for k in REPORTED):
        return None
    return registry


def _by_library(found: _Found, usage: np.ndarray, when: datetime) -> np.ndarray:
    from genai_prices import types
    out = np.full(usage.shape[1], np.nan)
    for i, col in enumerate(usage.T):
        values = {k: (int(v) if float(v).is_integer() else float(v)) for k, v in zip(REPORTED, col, strict=True)
                  if v or k in REPORTED[:2]}
        try:
            calc = found.model.calc_price(types.Usage(**values), found.provider, genai_request_timestamp=when)
        except Exception:  # usage the library refuses is not priced
            continue
        out[i] = float(calc.total_price)
    return out


__all__: Sequence[str] = ("PricedCalls", "REPORTED", "price", "price_calls")
