"""A run's row of the runs table never depends on the other runs read with it: each request of the real
instrumentations' fixtures that holds whole traces gives, read alone, the row it gives read with all the others
(the Dask engine reads runs in partitions, so this is also what makes its answer the local one)."""
import json
import math

import pandas as pd
import pytest
from locations import TESTS

from agentobs.analysis.derive.runs import derive_runs
from agentobs.analysis.otlp.load import load_bytes

FIXTURES = sorted((TESTS / "dialects" / "fixtures").glob("*.jsonl"))
SKIP = {"source", "signatures", "trace_ids", "sub_agent_names"}


def _traces(line: str) -> set[str]:
    return {s["traceId"] for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]}


def _same(a: object, b: object) -> bool:
    if not isinstance(a, (list, tuple)) and pd.isna(a):
        return not isinstance(b, (list, tuple)) and bool(pd.isna(b))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return bool(a == b)


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.stem for f in FIXTURES])
def test_a_run_reads_the_same_alone_and_beside_others(fixture):
    lines = [line for line in fixture.read_text().splitlines() if line.strip()]
    together = derive_runs(load_bytes(("\n".join(lines) + "\n").encode(), "x"))[0].set_index("run_id")
    traces = [_traces(line) for line in lines]
    compared = 0
    for i, line in enumerate(lines):
        if any(traces[i] & t for j, t in enumerate(traces) if j != i):
            continue                                    # a trace spread over several requests: not whole alone
        alone = derive_runs(load_bytes((line + "\n").encode(), "x"))[0]
        for _, row in alone.iterrows():
            want = together.loc[row["run_id"]]
            diff = {c: (row[c], want[c]) for c in alone.columns if c not in SKIP | {"run_id"}
                    and not _same(row[c], want[c])}
            assert not diff, (row["run_id"], diff)
            compared += 1
    assert compared > 0
