"""gen_pydantic_ai.py with InstrumentationSettings(version=2): the ``agent run`` / ``running tool`` format."""
from __future__ import annotations

import gen_pydantic_ai

if __name__ == "__main__":
    gen_pydantic_ai.main("pydantic_ai_v2")
