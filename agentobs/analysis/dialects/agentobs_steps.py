"""agentobs' own spans: GenAI conventions plus the kernel's ``agentobs.step`` span around each step."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from ...contract.semconv import STEP_SPAN
from ._base import STEP, Dialect
from ._fields import text


def _steps(spans: pd.DataFrame) -> np.ndarray:
    out = np.full(len(spans), -1, dtype=np.int8)
    out[pc.fill_null(pc.equal(text(spans, ("name",)), STEP_SPAN), False).to_numpy(zero_copy_only=False)] = STEP
    return out


AGENTOBS = Dialect(name="agentobs", marker=None, kinds={}, text={}, numbers={}, claim_rows=_steps)
