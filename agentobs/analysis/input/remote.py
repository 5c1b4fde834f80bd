"""Sources in object stores and other fsspec filesystems: ``s3://bucket/prefix/``, ``gs://...``, ``file://...``,
globs in them (``s3://bucket/archive/*.jsonl.gz``). Optional: ``pip install 'agentobs[s3]'`` (fsspec, s3fs).

Credentials and endpoints come from where each filesystem's own library looks; for ``s3://`` that is botocore's
chain: ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``, ``AWS_PROFILE`` and ``~/.aws/credentials``
and ``~/.aws/config``, ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` for an S3-compatible server (MinIO, Ceph...),
``AWS_REGION``/``AWS_DEFAULT_REGION``, then an instance role. A URL is shown without its userinfo and with the
values of its query hidden (``redacted_url``), in messages, reports and data-quality notes alike.

Every problem reaching the store while naming the files (no such bucket or key, access denied, wrong credentials, no
endpoint) is an ``InputError`` of one line; a file that fails later, while it is read, is an ``OSError`` for the
loader, which records it in the data quality like an unreadable local file.
"""
from __future__ import annotations

import os
import re
import threading
import urllib.parse
from typing import Any, BinaryIO

from ...errors import InputError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# what to install when a scheme's filesystem is missing
_PACKAGES = {"s3": "agentobs[s3]", "s3a": "agentobs[s3]", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs",
             "abfs": "adlfs", "abfss": "adlfs", "adl": "adlfs", "hf": "huggingface_hub", "sftp": "paramiko",
             "ssh": "paramiko"}
# environment variables a filesystem's credentials may come from: a change makes a new filesystem object
_CREDENTIAL_ENV = ("AWS_", "BOTO_", "GOOGLE_", "GCS", "AZURE_", "FSSPEC_")
_SKIPPED_SUFFIXES = (".tmp", "-manifest.json")
# a URL's user:password: up to the last "@" (a password may hold "/", "?" or "#" that were not percent-encoded, which
# end the authority for urlsplit: the password then reads as a path, a query or a fragment)
_USERINFO = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://(\S*)@")
_ANY_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)\S*@")               # the same anywhere in a text
SECRET_MIN = 4          # a password this long is masked wherever it appears, a shorter one only as a word

_lock = threading.Lock()
_cache: dict[tuple[Any, ...], Any] = {}


def is_url(source: object) -> bool:
    """``scheme://...`` (Jaeger's http(s) URLs are told apart before this is asked)."""
    return isinstance(source, str) and _SCHEME.match(source) is not None


def scheme(url: str) -> str:
    m = _SCHEME.match(url)
    return m.group(1).lower() if m else ""


def hide_userinfo(url: str) -> str:
    """``url`` with all it holds before its last ``@`` (what may be ``user:password``) as ``***``. A password with
    "/", "?" or "#" that was not percent-encoded ends the authority early for ``urlsplit``, which then shows it as a
    path, a query or a fragment."""
    m = _USERINFO.match(url)
    return url if m is None else f"{url[:m.start(1)]}***{url[m.end(1):]}"


def redacted_url(url: str) -> str:
    """The URL as it may be printed: no ``user:password@``, no query values."""
    url = hide_userinfo(url)
    try:
        u = urllib.parse.urlsplit(url)
        pairs = urllib.parse.parse_qsl(u.query, keep_blank_values=True)
    except ValueError:
        return f"{scheme(url)}://(an unparsable URL)"
    netloc = u.netloc.rpartition("@")[2]
    query = urllib.parse.urlencode([(k, "***") for k, _ in pairs], safe="*")
    return urllib.parse.urlunsplit((u.scheme, netloc, u.path, query, u.fragment))


def _missing(sch: str) -> InputError:
    return InputError(f"install {_PACKAGES.get(sch, 'the fsspec filesystem for ' + sch + '://')} to read "
                      f"{sch}:// sources")


def _filesystem(url: str) -> tuple[Any, str]:
    """(the fsspec filesystem, the path inside it) for a URL; one object per filesystem, options and credentials.
    A scheme's case does not matter (RFC 3986): fsspec's filesystems take it off only in lower case."""
    sch = scheme(url)
    url = sch + url[len(sch):]
    try:
        import fsspec
        import fsspec.core
    except ImportError:
        raise _missing(sch) from None
    try:
        cls = fsspec.get_filesystem_class(sch)
    except ValueError:
        raise InputError(f"{redacted_url(url)}: unknown scheme {sch}://; use a file, a folder, a glob, a Jaeger URL "
                         "or an fsspec URL such as s3://bucket/prefix/") from None
    except ImportError:
        raise _missing(sch) from None
    options = cls._get_kwargs_from_urls(url)
    path = cls._strip_protocol(url)
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(_CREDENTIAL_ENV)))
    key = (os.getpid(), sch, repr(sorted(options.items())), hash(env))     # a forked process makes its own
    with _lock:
        fs = _cache.get(key)
        if fs is None:
            try:
                fs = cls(skip_instance_cache=True, **options)
            except ImportError:
                raise _missing(sch) from None
            except Exception as exc:  # a filesystem that cannot even be set up
                raise InputError(f"{redacted_url(url)}: {_reason(exc, url)}") from None
            _cache[key] = fs
    return fs, path


def _reason(exc: BaseException, url: str) -> str:
    """One line about an exception, without the URL's credentials (``masked``)."""
    return masked(" ".join(str(exc).split()) or type(exc).__name__, url)[:200]


def masked(text: str, url: str) -> str:
    """``text`` (a message about ``url``) with the credentials hidden, and nothing else changed:

    - the userinfo of any URL in the text (``scheme://user:password@``) becomes ``***@``;
    - ``url``'s own userinfo, wherever it is followed by ``@`` (``user:password@``, ``user@``), as written in the
      URL (percent-encoded) or decoded;
    - ``url``'s password anywhere, as written or decoded, when it has at least ``SECRET_MIN`` characters; a
      shorter one only where it stands alone (not inside a word or a number), so that a one-letter password does
      not turn ``refused`` into ``ref***sed``.

    A user name alone is not a secret and is left where it is not userinfo."""
    text = _ANY_USERINFO.sub(r"\1***@", text)
    m = _USERINFO.match(url)
    if not m:
        return text
    user, _, password = m.group(1).partition(":")
    plain_user, plain_password = urllib.parse.unquote(user), urllib.parse.unquote(password)
    infos = {m.group(1), f"{plain_user}:{plain_password}" if password else plain_user, user, plain_user}
    for info in sorted((i for i in infos if i), key=len, reverse=True):
        text = text.replace(info + "@", "***@")
    for secret in sorted({password, plain_password, urllib.parse.quote(plain_password, safe="")} - {""}, key=len,
                         reverse=True):
        if len(secret) >= SECRET_MIN:
            text = text.replace(secret, "***")
        else:
            text = re.sub(rf"(?<!\w){re.escape(secret)}(?!\w)", "***", text)
    return text


def _problem(exc: Exception, url: str) -> InputError:
    sch, where = scheme(url), redacted_url(url)
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{where}: not found ({_reason(exc, url)}): check the bucket and the path")
    if isinstance(exc, PermissionError):
        hint = ("check the credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE or ~/.aws) and "
                "the endpoint (AWS_ENDPOINT_URL_S3)") if sch in ("s3", "s3a") else f"check the {sch}:// credentials"
        return InputError(f"{where}: access denied ({_reason(exc, url)}): {hint}")
    return InputError(f"{where}: cannot reach the store ({type(exc).__name__}: {_reason(exc, url)})")


def _keep(path: str) -> bool:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return not name.startswith(".") and not name.endswith(_SKIPPED_SUFFIXES)


def _url_of(fs: Any, path: str, original: str) -> str:
    """A path of ``fs`` as a URL, with the original URL's userinfo (the credentials some filesystems take there)."""
    out = fs.unstrip_protocol(path)
    u = urllib.parse.urlsplit(original)
    if "@" in u.netloc:
        o = urllib.parse.urlsplit(out)
        if o.netloc == u.netloc.rpartition("@")[2]:
            out = urllib.parse.urlunsplit(o._replace(netloc=u.netloc))
    return out


def expand(url: str) -> list[str]:
    """The files a URL names, in a stable order: a file, every file under a folder or prefix (recursively), or
    every match of a glob (folders among the matches expanded). Hidden, ``.tmp`` and ``-manifest.json`` files are
    skipped as in local folders. Missing, unreadable or unreachable: an ``InputError``."""
    fs, path = _filesystem(url)

    def walk(p: str, is_dir: bool) -> list[str]:
        # a folder's files ordered by path components, as local folders are (pathlib puts "a/b" before "a-c")
        return sorted((f for f in fs.find(p) if _keep(f)), key=lambda f: f.split("/")) if is_dir else [p]
    try:
        if any(ch in path for ch in "*?["):
            hits = sorted(fs.glob(path))
            if not hits:
                raise InputError(f"{redacted_url(url)}: the pattern matches no file")
            found = [f for h in hits for f in walk(h, fs.isdir(h))]
        else:
            found = walk(path, fs.info(path).get("type") == "directory")
    except InputError:
        raise
    except Exception as exc:  # every failure of the store becomes one line
        raise _problem(exc, url) from None
    return [_url_of(fs, p, url) for p in found]


def open_binary(url: str) -> BinaryIO:
    """The object's bytes as a seekable binary file (read ahead in blocks by fsspec)."""
    fs, path = _filesystem(url)
    try:
        return fs.open(path, "rb")
    except OSError:
        raise
    except Exception as exc:  # the loader records OSErrors as unreadable files
        raise OSError(f"{redacted_url(url)}: {type(exc).__name__}: {_reason(exc, url)}") from None


def size(url: str) -> int:
    """The object's size in bytes (0 when it cannot be told)."""
    try:
        fs, path = _filesystem(url)
        return int(fs.size(path) or 0)
    except Exception:  # only for progress bars
        return 0


__all__ = ["expand", "is_url", "masked", "open_binary", "redacted_url", "scheme", "size"]
