"""Print the span trees of an OTLP JSON lines fixture: ``python tests/dialects/tree.py FILE [-a KEY_PREFIX ...]``.

One line per span: name, kind, status, and the attributes whose keys start with one of the prefixes
(default: the run/model/tool/token keys of the common dialects). Standard library only.
"""
from __future__ import annotations

import argparse
import json

DEFAULT = ("openinference.span.kind", "llm.token_count", "llm.model_name", "tool.name", "gen_ai.operation.name",
           "gen_ai.usage", "gen_ai.tool.name", "gen_ai.agent.name", "gen_ai.request.model", "traceloop.span.kind",
           "llm.usage", "llm.request.type", "mlflow.spanType", "mlflow.chat.tokenUsage", "langfuse.observation.type",
           "langfuse.observation.usage_details", "langfuse.observation.level", "error.type", "agent_name",
           "http.", "url.", "gen_ai.aggregated_usage")


def value(v: dict) -> object:
    (k, x), = v.items() if v else (("", None),)
    if k == "arrayValue":
        return [value(i) for i in x.get("values", [])]
    return x


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("-a", "--attr", action="append", help="attribute key prefix to show (repeatable)")
    a = ap.parse_args()
    prefixes = tuple(a.attr or DEFAULT)
    with open(a.file) as f:
        for n, line in enumerate(f):
            req = json.loads(line)
            spans = [s for rs in req["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
            ids = {s["spanId"]: s for s in spans}
            kids: dict[str | None, list] = {}
            for s in sorted(spans, key=lambda s: int(s["startTimeUnixNano"])):
                p = s.get("parentSpanId")
                kids.setdefault(p if p in ids else None, []).append(s)
            print(f"== line {n + 1}: trace {spans[0]['traceId'] if spans else '-'}, {len(spans)} spans")

            def show(s: dict, depth: int, kids: dict = kids) -> None:
                attrs = {x["key"]: value(x["value"]) for x in s.get("attributes", [])}
                keep = {k: v for k, v in attrs.items() if k.startswith(prefixes)}
                st = s.get("status", {}).get("code", 0)
                ev = [e["name"] for e in s.get("events", [])]
                print(f"{'  ' * depth}{s['name']} [kind {s['kind']}, status {st}]{' events=' + str(ev) if ev else ''}"
                      f" {keep if keep else ''}")
                for c in kids.get(s["spanId"], []):
                    show(c, depth + 1)
            for root in kids.get(None, []):
                show(root, 0)


if __name__ == "__main__":
    main()
