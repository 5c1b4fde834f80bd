"""Three runs whose root spans carry their outcome as attributes of each kind (boolean, integer, double, one text):
scenarios/cli/test_labels_and_outputs.py labels them with --success-attr, unit/analysis/report/dask/test_dask_engine.py
checks the Dask engine notes the same runs."""
import json


def _attr_runs(tmp_path):
    """Three runs whose root spans carry a boolean, an integer and a double attribute of the run's outcome."""
    lines = []
    for i, (passed, score, f) in enumerate(((True, 1, 1.0), (False, 0, 0.5), (True, 1, 1.0))):
        trace = f"{i + 1:032x}"
        attrs = [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                 {"key": "eval.passed", "value": {"boolValue": passed}},
                 {"key": "eval.score", "value": {"intValue": str(score)}},
                 {"key": "eval.f", "value": {"doubleValue": f}}] + (
                     [{"key": "eval.first", "value": {"stringValue": "yes"}}] if i == 0 else [])
        spans = [{"traceId": trace, "spanId": "a" * 16, "name": "invoke_agent bot", "kind": 1,
                  "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001000000000",
                  "attributes": attrs}]
        lines.append(json.dumps({"resourceSpans": [{"resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "svc" if i else "other"}}]},
            "scopeSpans": [{"scope": {}, "spans": spans}]}]}))
    path = tmp_path / "attrs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path
