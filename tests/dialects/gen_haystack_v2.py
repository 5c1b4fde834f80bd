"""gen_haystack.py on the last Haystack 2.x release: its Agent runs a ToolInvoker (tool spans), and Haystack 2.x's
own OpenTelemetry tracer turns itself on beside OpenInference's."""
from __future__ import annotations

import gen_haystack

if __name__ == "__main__":
    gen_haystack.main("haystack_v2")
