"""agentobs' own spans: GenAI conventions plus the kernel's ``agentobs.step`` span around each step."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...telemetry.semconv import STEP_SPAN
from ._base import STEP, Dialect


def _steps(spans: pd.DataFrame) -> np.ndarray:
    out = np.full(len(spans), -1, dtype=np.int8)
    out[(spans["name"] == STEP_SPAN).fillna(False).to_numpy(dtype=bool)] = STEP
    return out


AGENTOBS = Dialect(name="agentobs", marker=None, kinds={}, text={}, numbers={}, claim_rows=_steps)
