"""The end of a process: SIGTERM and Ctrl-C flush the spans and exit cleanly.

Python's default SIGTERM ends the process at once: no ``finally`` runs, and every span still in the export queue
is lost. Ctrl-C raises ``KeyboardInterrupt``, which prints a traceback. ``graceful_exit`` makes both end the program
the way a normal exit does::

    telemetry = configure(traces_out="traces.jsonl")
    with graceful_exit(telemetry):
        for task in tasks:
            kernel.run(task)                     # or asyncio.run(main()) for an async program

For the block, SIGTERM and SIGINT raise ``SystemExit(128 + signal number)`` in the main thread (143, 130): every
``finally`` and ``with`` on the way out runs (a run in progress ends ``aborted``, its spans closed; under
``asyncio.run``, the tasks still running are cancelled, and their runs end ``cancelled``), then the telemetry is
shut down (flushed within ``shutdown_timeout_ms``) and the process exits with that status, without a traceback.
A second signal while the exit is under way is ignored: the shutdown is bounded. A signal that arrives while
the main thread is inside the span machinery (the OpenTelemetry SDK or this package: a span being ended, counted
and queued) waits until it has left it (the signal is sent again a few milliseconds later), so the exit never cuts
a span in half: counted as ended but never queued, it was reported lost. The previous handlers are
restored afterwards. Outside the main thread no handler can be installed: the block still shuts the telemetry
down when it ends.
"""
from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .delivery import ExportReport  # (delivery loads the SDK's span processors: only for the types)


class Closable(Protocol):
    """What ends here: something whose ``shutdown`` flushes and reports (``setup.Telemetry``; typed by what is
    used, so that this module does not import the setup that imports it)."""

    def shutdown(self) -> ExportReport: ...

log = logging.getLogger("agentobs.telemetry")

SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def graceful_exit(*telemetry: Closable) -> Iterator[None]:
    """SIGTERM and Ctrl-C end the block with ``SystemExit(128 + signal)``; at the end of the block, however it
    ends, each ``Telemetry`` given is shut down and its report logged (a warning when spans were lost)."""
    exiting = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        if exiting.is_set():
            return                               # the exit is under way (bounded by the shutdown's deadline)
        if _in_span_machinery(frame):
            _again(signum)                       # not in the middle of ending a span: a little later
            return
        exiting.set()
        raise SystemExit(128 + signum)

    previous = _install(handler)
    try:
        yield
    finally:
        exiting.set()                            # from here on, a signal cannot cut the shutdown short
        try:
            for t in telemetry:
                shutdown_and_log(t)
        finally:
            _restore(previous)


_RETRY_S = 0.002
_DEPTH = 64                                      # frames looked at above the one the signal interrupted


def _machinery_dirs() -> tuple[str, ...]:
    import opentelemetry.sdk.trace as sdk_trace  # .../opentelemetry/sdk/trace/__init__.py
    here = os.path.dirname(os.path.abspath(__file__))
    otel = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(sdk_trace.__file__))))
    return (here + os.sep, otel + os.sep)


_MACHINERY = _machinery_dirs()
_THIS_FILE = os.path.abspath(__file__)


def _in_span_machinery(frame: FrameType | None) -> bool:
    """The interrupted frame, or one of its callers, runs code of the OpenTelemetry packages or of this package
    (this module excepted)."""
    for _ in range(_DEPTH):
        if frame is None:
            return False
        path = frame.f_code.co_filename
        if path.startswith(_MACHINERY) and path != _THIS_FILE:
            return True
        frame = frame.f_back
    return False


def _again(signum: int) -> None:
    timer = threading.Timer(_RETRY_S, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()


def _install(handler: Any) -> dict[int, Any]:
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous: dict[int, Any] = {}
    for sig in SIGNALS:
        previous[sig] = signal.getsignal(sig)
        signal.signal(sig, handler)
    return previous


def _restore(previous: dict[int, Any]) -> None:
    for sig, old in previous.items():
        signal.signal(sig, old if old is not None else signal.SIG_DFL)


def shutdown_and_log(telemetry: Closable) -> None:
    try:
        report = telemetry.shutdown()
    except Exception:                            # telemetry never breaks the program's exit
        log.warning("telemetry did not shut down cleanly", exc_info=True)
        return
    for line in report.lines():
        log.log(logging.WARNING if report.lost else logging.INFO, "%s", line)
