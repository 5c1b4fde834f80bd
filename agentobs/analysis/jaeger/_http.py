"""The HTTP side of the Jaeger client: bounded GETs of JSON, one deadline for a whole query.

Every GET of a query shares one deadline. The socket timeout is set to the time left before
each read, the body is read in chunks with the clock checked in between, and a watchdog
shuts the sockets of the query down when the deadline passes, so a server that trickles a
byte at a time (in the headers as well as in the body) cannot hold the caller. An answer is
read up to a size cap. Redirects are followed only to the same scheme, host and port, and
at most ``MAX_REDIRECTS`` times. Credentials go in an ``Authorization`` header and never
into a message: the caller gives ``origin`` (no userinfo) for that.

``Client.get_json`` returns ``(status, body)`` (``Client.get``: a 200's body as bytes, for the loader's fast
path); both raise ``RequestFailed`` (this request is lost, the query goes on) and ``DeadlinePassed`` (the query
stops).
"""
from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

MAX_REDIRECTS = 3
CHUNK = 1 << 16


class RequestFailed(Exception):
    """One request gave nothing usable; ``reason`` is one line, free of credentials."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class DeadlinePassed(Exception):
    """The query's deadline passed; nothing more is asked."""


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the default port filled in, for the same-origin rule."""
    u = urllib.parse.urlsplit(url)
    try:
        port = u.port
    except ValueError:
        port = None
    return u.scheme.lower(), (u.hostname or "").lower(), port or {"http": 80, "https": 443}.get(u.scheme.lower())


def without_userinfo(netloc: str) -> str:
    return netloc.rpartition("@")[2]


ERROR_BODY = 64 * 1024


def _json_or_none(exc: urllib.error.HTTPError) -> Any:
    """The JSON body of an error answer (its first ``ERROR_BODY`` bytes), or None; closes it."""
    try:
        return json.loads(exc.read(ERROR_BODY))
    except Exception:           # not JSON, cut off, nested too deeply, or the deadline closed the socket
        return None
    finally:
        exc.close()


class _Watchdog:
    """Shuts down every socket attached to it once the deadline passes (wakes a blocked read)."""

    def __init__(self, deadline: float):
        self.fired = False
        self.reading: socket.socket | None = None     # the socket the current answer is read from
        self._dups: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def attach(self, sock: socket.socket) -> None:
        """Called right after the TCP connection is made, before any TLS handshake (a duplicate
        of the descriptor is kept: shutting it down ends the connection under TLS as well)."""
        with self._lock:
            dup = sock.dup()
            self._dups.append(dup)
            if self.fired:
                _shutdown(dup)

    def release(self) -> None:
        """The request is over: forget its sockets."""
        with self._lock:
            for s in self._dups:
                s.close()
            self._dups.clear()
            self.reading = None

    def cancel(self) -> None:
        self._timer.cancel()
        self.release()

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            for s in self._dups:
                _shutdown(s)


def _shutdown(s: socket.socket) -> None:
    with contextlib.suppress(OSError):
        s.shutdown(socket.SHUT_RDWR)


class _Watched(http.client.HTTPConnection):
    watchdog: _Watchdog

    def connect(self) -> None:
        super().connect()
        self.watchdog.attach(self.sock)


class _WatchedHTTP(_Watched):
    def connect(self) -> None:
        super().connect()
        self.watchdog.reading = self.sock


class _WatchedHTTPS(http.client.HTTPSConnection, _Watched):
    def connect(self) -> None:
        super().connect()                  # TCP (attached to the watchdog), then the TLS handshake
        self.watchdog.reading = self.sock


def _factory(cls: type[http.client.HTTPConnection], watchdog: _Watchdog) -> Callable[..., http.client.HTTPConnection]:
    def make(host: str, **kwargs: Any) -> http.client.HTTPConnection:
        conn = cls(host, **kwargs)
        conn.watchdog = watchdog  # type: ignore[attr-defined]
        return conn
    return make


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, watchdog: _Watchdog):
        super().__init__()
        self.watchdog = watchdog

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_factory(_WatchedHTTP, self.watchdog), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, watchdog: _Watchdog):
        self.context = ssl.create_default_context()       # certificates and host names verified
        super().__init__(context=self.context)
        self.watchdog = watchdog

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_factory(_WatchedHTTPS, self.watchdog), req, context=self.context)


class _Refused(urllib.error.URLError):
    """A redirect to another origin (or too many redirects)."""


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    max_redirections = MAX_REDIRECTS
    max_repeats = 1

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> urllib.request.Request | None:
        if origin(newurl) != origin(req.full_url):
            u = urllib.parse.urlsplit(newurl)
            raise _Refused(f"HTTP {code} redirect to another origin ({u.scheme}://{without_userinfo(u.netloc)}) "
                           f"refused: only same-origin redirects are followed")
        visited = getattr(req, "redirect_dict", {})
        if sum(visited.values()) >= MAX_REDIRECTS:
            raise _Refused(f"more than {MAX_REDIRECTS} redirects")
        return super().redirect_request(req, fp, code, msg, headers, newurl)

    def http_error_302(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any) -> Any:
        fp.close()                     # a redirect's body is never read (it could be large, or trickle)
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302


class Client:
    """GETs for one query: one deadline, a size cap per answer, counted requests. Use as a context manager."""

    def __init__(self, *, deadline_s: float, max_bytes: int, authorization: str | None = None):
        self.max_bytes, self.authorization = max_bytes, authorization
        self.deadline = time.monotonic() + deadline_s
        self.requests = 0
        self._watchdog = _Watchdog(self.deadline)
        self._opener = urllib.request.build_opener(_HTTPHandler(self._watchdog), _HTTPSHandler(self._watchdog),
                                                   _SameOriginRedirects())

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._watchdog.cancel()

    def left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0 or self._watchdog.fired:
            raise DeadlinePassed()
        return left

    def get_json(self, url: str) -> tuple[int, Any]:
        """(200, parsed JSON) or (an HTTP error status, None); the error's body is read only for a 404 (up to
        ``ERROR_BODY`` bytes: (404, its JSON) when it is JSON, else (404, None)): Jaeger's "No traces found" is
        JSON, the 404 of another server or of a wrong base path is not."""
        status, body = self.get(url)
        if not isinstance(body, (bytes, bytearray)):
            return status, body
        try:
            return status, json.loads(body or b"null")
        except ValueError as exc:
            raise RequestFailed(f"the answer is not JSON ({exc})") from None
        except RecursionError:
            raise RequestFailed("the answer is JSON nested too deeply to read") from None

    def get(self, url: str) -> tuple[int, Any]:
        """As ``get_json``, but a 200's answer as its bytes (a ``bytearray``), unparsed (a large answer is parsed by
        the loader's fast path, not into Python objects)."""
        left = self.left()
        self.requests += 1
        req = urllib.request.Request(url, headers={"Accept": "application/json"})
        if self.authorization:
            req.add_header("Authorization", self.authorization)
        try:
            try:
                resp = self._opener.open(req, timeout=left)
            except _Refused as exc:
                raise RequestFailed(str(exc.reason)) from None
            except urllib.error.HTTPError as exc:
                body = _json_or_none(exc) if exc.code == 404 else None
                exc.close()
                self.left()
                if 300 <= exc.code < 400:
                    raise RequestFailed(f"HTTP {exc.code}: a redirect loop, or more than {MAX_REDIRECTS} "
                                        "redirects") from None
                return exc.code, body
            except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
                self.left()
                raise RequestFailed(f"cannot be reached: {_reason(exc)}") from None
            with resp:
                data = self._read(resp)
        finally:
            self._watchdog.release()
        return resp.status, data            # (the bytes as read: a copy would double what an answer costs)

    def _read(self, resp: http.client.HTTPResponse) -> bytearray:
        declared = resp.headers.get("Content-Length", "")
        if declared.strip().isdigit() and int(declared) > self.max_bytes:
            raise RequestFailed(self._too_large(f"{int(declared):,} bytes announced"))
        buf = bytearray()
        while True:
            left = self.left()
            sock = self._watchdog.reading
            try:
                if sock is not None:
                    sock.settimeout(left)
                chunk = resp.read1(CHUNK)
            except (OSError, http.client.HTTPException) as exc:
                self.left()
                raise RequestFailed(f"the answer was cut off: {_reason(exc)}") from None
            if not chunk:
                break
            buf += chunk
            if len(buf) > self.max_bytes:
                raise RequestFailed(self._too_large(f"more than {self.max_bytes:,} bytes"))
        if self._watchdog.fired:             # the end seen may be the watchdog's shutdown, not the answer's
            raise DeadlinePassed()
        if resp.length:                      # Content-Length announced more than came
            raise RequestFailed(f"the answer was cut off ({resp.length:,} bytes missing)")
        return buf

    def _too_large(self, what: str) -> str:
        return (f"answer over the size cap ({what}; cap {self.max_bytes:,} bytes): raise AGENTOBS_JAEGER_MAX_BYTES "
                "or ask for less (page=, a shorter window)")


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    return " ".join(str(reason).split()) or type(exc).__name__
