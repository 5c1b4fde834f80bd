"""gen_dspy.py with ``dspy.LM(engine="litellm")``: DSPy's LiteLLM backend, so the LiteLLM instrumentation's spans
(with the token counts) sit inside DSPy's LM spans."""
from __future__ import annotations

import gen_dspy

if __name__ == "__main__":
    gen_dspy.main("dspy_litellm")
