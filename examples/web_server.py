"""One kernel and one observer serving concurrent requests: a plain asyncio HTTP server (no framework needed).

Run it:  .venv/bin/python examples/web_server.py traces.jsonl 8080
then:    curl -s -X POST 'http://127.0.0.1:8080/refunds?order=ord_1001'
stop it: Ctrl-C, or SIGTERM (what a process manager or ``docker stop`` sends)

Everything that can be shared is built once, at start-up: the telemetry, its one observer, the kernel (model,
tools, budget, clock, prices). Each request runs ``await kernel.arun(...)`` in the server's task for that
connection, under a request span, so its trace nests under that span and nothing of it reaches another request.
The model is the seeds' stand-in made async (it awaits 50 ms, as a provider call would); put an async provider
adapter in its place.

Stopping: ``graceful_exit(telemetry)`` turns SIGTERM and Ctrl-C into a clean exit (status 143 or 130, no traceback):
``asyncio.run`` cancels the requests still running (their runs end ``cancelled``, their spans closed), then the
telemetry is flushed, so every span of every request reaches the traces file or the collector. A FastAPI handler
is the same three lines::

    @app.post("/refunds")
    async def refund(order: str):
        state = await kernel.arun(TaskState(task_id=new_id(), user_id=user, goal=f"refund order {order}"))
        return {"stop": state.stop, "status": state.status}
"""
from __future__ import annotations

import asyncio
import json
import logging
import sys
import urllib.parse
import uuid
from typing import Any

from opentelemetry.trace import SpanKind

from agentobs import Budget, Kernel, RealClock, TaskState
from agentobs.domain.policies import SupportPolicy
from agentobs.domain.support import FACTS, SupportDesks
from agentobs.telemetry import configure, graceful_exit
from agentobs.testing import AwaitingModel


def build_kernel(telemetry: Any) -> Kernel:
    """Built once: one kernel and one observer serve every request, concurrent or not."""
    return Kernel(AwaitingModel(SupportPolicy(), delay_s=0.05), SupportDesks(), budget=Budget(max_steps=8),
                  clock=RealClock(), facts=FACTS, price_as="gpt-4.1-mini", observers=[telemetry.observer()])


async def handle(kernel: Kernel, tracer: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """One HTTP/1.1 request per connection: ``POST /refunds?order=<id>`` runs a task and answers its outcome."""
    try:
        request_line = (await reader.readline()).decode("latin-1").split()
        while (await reader.readline()) not in (b"\r\n", b"\n", b""):       # the headers: not needed here
            pass
        if len(request_line) < 2 or request_line[0] != "POST" or not request_line[1].startswith("/refunds"):
            await _answer(writer, 404, {"error": "POST /refunds?order=<order id>"})
            return
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(request_line[1]).query)
        order = query.get("order", ["ord_1001"])[0]
        task_id = f"web-{uuid.uuid4().hex[:12]}"
        with tracer.start_as_current_span("POST /refunds", kind=SpanKind.SERVER) as span:
            state = await kernel.arun(TaskState(task_id=task_id, user_id="cu_ana", goal=f"refund the damaged item "
                                                f"on order {order}", agent_name="support-agent"))
            trace_id = format(span.get_span_context().trace_id, "032x")
        await _answer(writer, 200, {"task_id": task_id, "stop": state.stop, "status": state.status,
                                    "steps": state.step, "trace_id": trace_id})
    except asyncio.CancelledError:
        pass           # the server is stopping: the run ended `cancelled` (its spans closed); no answer to give
    finally:
        writer.close()


async def _answer(writer: asyncio.StreamWriter, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    reason = {200: "OK", 404: "Not Found"}[status]
    writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                 f"Connection: close\r\n\r\n".encode() + data)
    await writer.drain()


async def serve(kernel: Kernel, tracer: Any, host: str = "127.0.0.1", port: int = 0) -> asyncio.Server:
    return await asyncio.start_server(lambda r, w: handle(kernel, tracer, r, w), host, port)


async def serve_forever(telemetry: Any, port: int) -> None:
    kernel = build_kernel(telemetry)
    tracer = telemetry.tracer_provider.get_tracer("web-server-example")
    server = await serve(kernel, tracer, "127.0.0.1", port)
    print(f"listening on http://127.0.0.1:{server.sockets[0].getsockname()[1]}; traces go to "
          f"{telemetry.config.traces_out}", flush=True)
    async with server:
        await server.serve_forever()


def main(path: str, port: int) -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")      # the export report, at exit
    telemetry = configure(traces_out=path, service_name="web-server-example")
    with graceful_exit(telemetry):                  # SIGTERM, Ctrl-C: cancel the requests, flush, exit
        asyncio.run(serve_forever(telemetry, port))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "traces.jsonl", int(sys.argv[2]) if len(sys.argv) > 2 else 8080)
