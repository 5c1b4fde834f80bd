"""Messages about remote sources: credentials hidden where they are credentials, the rest of the message intact;
URL schemes in any case (RFC 3986: ``HTTP://`` is ``http://``). Real CLI, servers on 127.0.0.1 started here."""
from __future__ import annotations

import base64
import json
import socket
import socketserver
import threading
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from fake_jaeger import T0, WINDOW, FakeJaeger, _trace

from agentobs.analysis.input import remote
from agentobs.analysis.jaeger.query import is_jaeger_url, parse_url
from agentobs.cli.main import cli

pytest.importorskip("fsspec")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fails(*args: str) -> str:
    res = CliRunner().invoke(cli, list(args))
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith("agentobs: error: ") and res.stderr.count("\n") == 1, res.stderr
    assert "Traceback" not in res.output
    return res.stderr


def test_a_one_letter_user_name_does_not_garble_the_message():
    err = _fails("report", f"ftp://u:pw@127.0.0.1:{_closed_port()}/x.jsonl")
    assert "Connection refused" in err and "***" not in err, err
    assert "pw" not in err and "u:" not in err


class _ChattyFtp(socketserver.StreamRequestHandler):
    """Refuses the login and, as some servers do, repeats what it was sent, in several forms."""

    def handle(self) -> None:
        self.wfile.write(b"220 fake ftp on 127.0.0.1\r\n")
        user = self.rfile.readline().decode().strip().removeprefix("USER ")
        self.wfile.write(b"331 password please\r\n")
        password = self.rfile.readline().decode().strip().removeprefix("PASS ")
        self.server.seen.append((user, password))      # type: ignore[attr-defined]
        self.wfile.write(f"530 Login incorrect: user {user} refused with password {password} "
                         f"(ftp://{user}:{password}@127.0.0.1 and {user}:{password}@127.0.0.1)\r\n".encode())


@pytest.fixture
def chatty_ftp() -> Iterator[socketserver.ThreadingTCPServer]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _ChattyFtp)
    server.daemon_threads = True
    server.seen = []                                    # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(("user", "password", "hidden"), [
    ("alice", "hunter2-secret", ["hunter2-secret"]),
    ("u", "p%40ss%2Fw0rd", ["p@ss/w0rd", "p%40ss%2Fw0rd", "p%40ss", "ss/w0rd"]),
    ("u", "pw", [" pw ", ":pw"]),                       # short: hidden where it stands alone and in userinfo
])
def test_a_server_repeating_the_password_does_not_get_it_shown(chatty_ftp, user, password, hidden):
    port = chatty_ftp.server_address[1]
    err = _fails("report", f"ftp://{user}:{password}@127.0.0.1:{port}/traces.jsonl")
    assert chatty_ftp.seen, "the server was not asked"
    assert f"ftp://127.0.0.1:{port}/traces.jsonl: 530 Login incorrect: user {user} refused with password ***" in err
    assert "(ftp://***@127.0.0.1 and ***@127.0.0.1)" in err
    for h in hidden:
        assert h not in err, err


def test_the_masking_rules():
    url = "s3://AKIAEXAMPLE:s%2Fcr%40et99@bucket/prefix/"
    said = ("denied for AKIAEXAMPLE: s/cr@et99, s%2Fcr%40et99, AKIAEXAMPLE:s/cr@et99@bucket, "
            "AKIAEXAMPLE@bucket, s3://someone:else@bucket/k")
    assert remote.masked(said, url) == ("denied for AKIAEXAMPLE: ***, ***, ***@bucket, ***@bucket, "
                                        "s3://***@bucket/k")
    # a long password is hidden even inside a word; a short one only where it stands alone
    assert remote.masked("xxhunter22xx", "ftp://u:hunter22@h/") == "xx***xx"
    assert remote.masked("Connection refused; no pw given; pwd; u is unknown", "ftp://u:pw@h/") == (
        "Connection refused; no *** given; pwd; u is unknown")
    assert remote.masked("[Errno 111] Connection refused", "ftp://u:111@h/") == "[Errno ***] Connection refused"
    assert remote.masked("nothing secret", "ftp://h/x") == "nothing secret"


def test_url_schemes_are_case_insensitive():
    for url in ("HTTP://h:16686?service=s", "Https://h", "JAEGER://h:16686", "Jaeger+HTTP://h", "jaeger+https://h"):
        assert is_jaeger_url(url), url
    for url in ("S3://bucket/k", "ftp://h/x", "FILE:///tmp/x"):
        assert not is_jaeger_url(url) and remote.is_url(url), url
    assert parse_url("JAEGER://h:16686?service=s").base == "http://h:16686"
    assert parse_url("Jaeger+HTTPS://h:16686/base?service=s").base == "https://h:16686/base"
    assert parse_url("http://h:1/jaeger+x?service=s").base == "http://h:1/jaeger+x"


@pytest.mark.parametrize("scheme", ["HTTP", "Http", "JAEGER", "Jaeger+Http"])
def test_an_upper_case_jaeger_url_is_read_from_jaeger(scheme):
    fake = FakeJaeger([_trace(1, T0 + 10**9)])
    try:
        port = fake.server.server_address[1]
        url = f"{scheme}://user:secret@127.0.0.1:{port}?service=shop&{WINDOW}"
        res = CliRunner().invoke(cli, ["report", url, "--format", "json"])
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)["overview"]["runs"] == 1
        assert fake.auth and set(fake.auth) == {"Basic " + base64.b64encode(b"user:secret").decode()}
        assert "secret" not in res.output
    finally:
        fake.close()


def test_an_upper_case_jaeger_url_that_fails_is_named_as_jaeger():
    err = _fails("report", f"HTTP://user:pw@127.0.0.1:{_closed_port()}?service=x")
    assert "Jaeger at http://127.0.0.1:" in err and "matches no file" not in err, err
    assert "pw" not in err and "user" not in err
