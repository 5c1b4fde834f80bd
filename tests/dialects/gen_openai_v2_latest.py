"""gen_openai_v2.py with OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental (the latest GenAI conventions)."""
from __future__ import annotations

import gen_openai_v2

if __name__ == "__main__":
    gen_openai_v2.main("openai_v2_latest")
