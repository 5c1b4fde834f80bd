"""OpenLLMetry (traceloop-sdk) at an older release (requirements/traceloop_old.txt): the same driver as
gen_traceloop.py, run in that release's venv, so the fixture has the older attribute names."""
from __future__ import annotations

import gen_traceloop

if __name__ == "__main__":
    gen_traceloop.main("traceloop_old")
