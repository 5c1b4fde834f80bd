"""An S3-compatible object store for the tests, started by the test run on 127.0.0.1: moto's server mode.

moto (PyPI, ``moto[server]``) rather than MinIO built from the Go module proxy: it installs with the dev extras in
seconds and starts in about a second, where MinIO is a large Go build the cold CI budget would pay for; s3fs tests
itself against moto's server the same way. It runs as a child process (``python -m moto.server``), so its settings
and its work stay out of the test process, on a free port of 127.0.0.1; it is stopped at the end of the session.

Credentials are enforced: after the setup, moto's IAM authentication is switched on (``/moto-api/reset-auth``),
so only the access key created here, with its policy, may read and write, and a wrong key is refused as AWS would.

Use the session fixture ``s3_server`` (an ``S3Server``: ``storage_options`` for fsspec/s3fs, ``env`` for code that
reads the standard AWS variables, ``bucket``) or ``s3_storage_options`` (the dict alone). Import them into a test
module: ``from objectstore import s3_server, s3_storage_options  # noqa: F401``.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REGION = "us-east-1"
BUCKET = "agentobs-test"
USER = "agentobs-test-reader"


@dataclass(frozen=True, kw_only=True)
class S3Server:
    endpoint: str                       # http://127.0.0.1:PORT
    bucket: str
    key: str                            # an access key of moto's IAM, allowed s3:*
    secret: str
    log: Path
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def storage_options(self) -> dict[str, Any]:
        """For fsspec/s3fs: ``fsspec.filesystem("s3", **storage_options)``."""
        return {"key": self.key, "secret": self.secret,
                "client_kwargs": {"endpoint_url": self.endpoint, "region_name": REGION}}

    @property
    def env(self) -> dict[str, str]:
        """The standard AWS variables that point any AWS SDK (botocore, hence s3fs) at this server."""
        return {"AWS_ACCESS_KEY_ID": self.key, "AWS_SECRET_ACCESS_KEY": self.secret, "AWS_ENDPOINT_URL": self.endpoint,
                "AWS_DEFAULT_REGION": REGION}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except (OSError, urllib.error.URLError):
        return False


def start_moto(log: Path, timeout: float = 60.0) -> tuple[subprocess.Popen[bytes], str]:
    """moto's server on a free port of 127.0.0.1; (process, endpoint). A port taken meanwhile: another try."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    for _ in range(5):
        port = _free_port()
        with open(log, "ab") as out:
            proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        endpoint = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while proc.poll() is None and time.monotonic() < deadline:
            if _answers(f"{endpoint}/moto-api/data.json"):
                return proc, endpoint
            time.sleep(0.1)
        proc.kill()
        proc.wait()
    raise RuntimeError(f"moto's server did not start; see {log}")


def _setup(endpoint: str) -> tuple[str, str]:
    """The bucket, a user with an access key and an s3:* policy; then moto starts checking credentials."""
    import boto3

    session = boto3.session.Session(aws_access_key_id="setup", aws_secret_access_key="setup", region_name=REGION)
    iam = session.client("iam", endpoint_url=endpoint)
    iam.create_user(UserName=USER)
    iam.put_user_policy(UserName=USER, PolicyName="s3-all", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
    key = iam.create_access_key(UserName=USER)["AccessKey"]
    session.client("s3", endpoint_url=endpoint).create_bucket(Bucket=BUCKET)
    req = urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=b"0", method="POST",
                                 headers={"Content-Type": "text/plain"})      # not a form: moto reads the body
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200
    return key["AccessKeyId"], key["SecretAccessKey"]


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory) -> Iterator[S3Server]:
    pytest.importorskip("moto.server", reason="moto[server] is in the dev extras: pip install -e '.[dev]'")
    pytest.importorskip("boto3")
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    proc, endpoint = start_moto(log)
    try:
        key, secret = _setup(endpoint)
        yield S3Server(endpoint=endpoint, bucket=BUCKET, key=key, secret=secret, log=log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def s3_storage_options(s3_server: S3Server) -> dict[str, Any]:
    return s3_server.storage_options
