"""The same spans in every valid OTLP JSON spelling, written once into ``bench.common.cache_dir()``.

From a canonical OTLP/JSON lines file (hex ids, integer enums, 64-bit integers as strings, as our exporter and
the OTLP/JSON specification write it), one request per line:

* protobuf's own JSON writer: each line is read into an ``ExportTraceServiceRequest`` with
  ``json_format.ParseDict`` (after its hex ids are turned into base64, which is what the protobuf JSON mapping
  expects of ``bytes`` fields), then written back with ``json_format.MessageToJson(indent=None)``: with its
  defaults (base64 ids, enum names, int64 as strings), with ``preserving_proto_field_name=True`` (snake_case
  field names) and with ``use_integers_for_enums=True``;
* rewrites of the canonical lines that OTLP/JSON readers accept: upper-case hex ids, 64-bit integers as JSON
  numbers, the optional fields present (``flags``, dropped counts, ``traceState``, an empty ``status``), each
  request wrapped as a saved Jaeger API v3 answer (``{"result": ...}``);
* a gzip copy of the canonical file;
* one file mixing them line by line (a spelling drawn at random for each line, seeded).
"""
from __future__ import annotations

import base64
import gzip
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .common import cache_dir

MIX_SEED = 16
FORMAT = 2            # bump when a writer changes: the cached files are rebuilt


def _walk(obj: Any, fn: Callable[[dict[str, Any]], None]) -> None:
    if isinstance(obj, dict):
        fn(obj)
        for v in obj.values():
            _walk(v, fn)
    elif isinstance(obj, list):
        for v in obj:
            _walk(v, fn)


_IDS = ("traceId", "spanId", "parentSpanId")


def _b64_ids(d: dict[str, Any]) -> None:
    for k in _IDS:
        if isinstance(d.get(k), str) and d[k]:
            d[k] = base64.b64encode(bytes.fromhex(d[k])).decode()


def _upper_ids(d: dict[str, Any]) -> None:
    for k in _IDS:
        if isinstance(d.get(k), str):
            d[k] = d[k].upper()


def _numbers(d: dict[str, Any]) -> None:
    for k in ("startTimeUnixNano", "endTimeUnixNano", "timeUnixNano", "intValue"):
        if isinstance(d.get(k), str):
            d[k] = int(d[k])


def _optional_fields(d: dict[str, Any]) -> None:
    if "spanId" in d and "startTimeUnixNano" in d:       # a span
        d.setdefault("flags", 257)
        d.setdefault("traceState", "")
        d.setdefault("droppedAttributesCount", 0)
        d.setdefault("droppedEventsCount", 0)
        d.setdefault("droppedLinksCount", 0)
        d.setdefault("status", {})


def _rewrite(fn: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], str]:
    def write(req: dict[str, Any]) -> str:
        req = json.loads(json.dumps(req))
        _walk(req, fn)
        return json.dumps(req, separators=(",", ":"))
    return write


def _message(req: dict[str, Any]) -> Any:
    """The request as protobuf's ``ExportTraceServiceRequest`` (the JSON mapping wants ``bytes`` ids in base64)."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    req = json.loads(json.dumps(req))
    _walk(req, _b64_ids)
    return json_format.ParseDict(req, ExportTraceServiceRequest())


def _protobuf(**options: Any) -> Callable[[Any], str]:
    def write(msg: Any) -> str:
        from google.protobuf import json_format
        return json_format.MessageToJson(msg, indent=None, **options)
    return write


# protobuf's writer, from the request as a protobuf message
PROTOBUF: dict[str, Callable[[Any], str]] = {
    "protobuf JSON, MessageToJson defaults (base64 ids, enum names)": _protobuf(),
    "protobuf JSON, snake_case field names": _protobuf(preserving_proto_field_name=True),
    "protobuf JSON, integer enums": _protobuf(use_integers_for_enums=True),
}
# rewrites of the canonical request
REWRITES: dict[str, Callable[[dict[str, Any]], str]] = {
    "upper-case hex ids": _rewrite(_upper_ids),
    "64-bit integers as numbers": _rewrite(_numbers),
    "optional fields present": _rewrite(_optional_fields),
    "saved Jaeger API v3 answers": lambda req: json.dumps({"result": req}, separators=(",", ":")),
}
WRITERS = (*PROTOBUF, *REWRITES)
GZIP = "gzip of the canonical file"
MIXED = "every spelling mixed line by line"
SPELLINGS = (*WRITERS, GZIP, MIXED)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")[:40]


def spelled_files(canonical: Path) -> dict[str, Path]:
    """``{"canonical": canonical, spelling: path, ...}``, each written once next to the others."""
    folder = Path(cache_dir()) / f"spellings-v{FORMAT}-{canonical.stem}"
    paths = {name: folder / (f"{_slug(name)}.jsonl" + (".gz" if name == GZIP else "")) for name in SPELLINGS}
    done = folder / "done"
    if not done.exists():
        folder.mkdir(parents=True, exist_ok=True)
        _write_all(canonical, paths)
        done.write_text("ok\n")
    return {"canonical": canonical, **paths}


def _write_all(canonical: Path, paths: dict[str, Path]) -> None:
    rng = random.Random(MIX_SEED)
    choices = ["canonical", *WRITERS]
    tmp = {name: p.with_name(p.name + ".partial") for name, p in paths.items()}
    outs = {name: open(tmp[name], "w", encoding="utf-8")  # noqa: SIM115 - closed in finally
            for name in [*WRITERS, MIXED]}
    try:
        with open(canonical, encoding="utf-8") as src:
            for line in src:
                if not line.strip():
                    continue
                req = json.loads(line)
                written = {"canonical": line.rstrip("\n")}
                msg = _message(req)
                for name, fn in PROTOBUF.items():
                    written[name] = fn(msg)
                for name, rw in REWRITES.items():
                    written[name] = rw(req)
                for name in WRITERS:
                    outs[name].write(written[name] + "\n")
                outs[MIXED].write(written[rng.choice(choices)] + "\n")
    finally:
        for f in outs.values():
            f.close()
    with open(canonical, "rb") as src, gzip.open(tmp[GZIP], "wb", compresslevel=6) as dst:
        while block := src.read(1 << 22):
            dst.write(block)
    for name, p in paths.items():
        tmp[name].replace(p)
