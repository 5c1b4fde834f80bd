"""Recommended caps as configuration to paste.

    config.py            the settings of an agentobs Budget, Pydantic AI's UsageLimits, the OpenAI Agents SDK's
                         max_turns; what a Budget's guard prices ahead (``reserve``)
    prometheus_rules.py  the caps as Prometheus alerting rules on the span metrics
    kinds.py             ``emit(caps, kind)``: one of the kinds above, as text

Imports ``assess`` (the caps) and ``derive`` (prices).
"""
