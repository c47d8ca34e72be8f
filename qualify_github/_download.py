"""Bounded downloads of artifact archives and release assets (stdlib HTTP).

Why not PyGithub's ``Requester.getStream``: it follows GitHub's redirect to the
blob store through an ``assert`` on an allow-list of GitHub domains (the Azure
blob hosts real artifact downloads redirect to are not on it), and it opens that
second connection without a timeout. Here the first request goes to the API
origin with the token, any redirect is followed without it (the target is a
pre-signed URL), and every byte is counted against a cap and a deadline.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import IO

from desktop_qualify.evidence_schemas import Code, QualificationError

from ._models import Downloaded
from ._retry import HttpStatusError

_MAX_REDIRECTS = 3
_CHUNK = 64 * 1024
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
USER_AGENT = "desktop-qualify"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # Returning None makes urllib raise the 3xx as an HTTPError, so that the
    # redirect is followed here, where the Authorization header is dropped.
    def redirect_request(self, *_args: object, **_kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _error_message(exc: urllib.error.HTTPError) -> str:
    try:
        data = json.loads(exc.read(4096).decode("utf-8", errors="replace"))
    except (OSError, ValueError, http.client.HTTPException):
        return exc.reason if isinstance(exc.reason, str) else ""
    return str(data.get("message", ""))[:300] if isinstance(data, dict) else ""


def _next_url(current: str, location: str | None, status: int) -> str:
    if not location:
        raise HttpStatusError(status, {}, "redirect without a Location header")
    target = urllib.parse.urljoin(current, location)
    scheme = urllib.parse.urlsplit(target).scheme
    # Never downgrade: plain http is followed only when the API itself is
    # plain http (a loopback test server).
    if scheme != "https" and not (scheme == "http" and current.startswith("http://")):
        raise QualificationError(Code.ENVIRONMENT, f"download redirected to a {scheme or 'relative'!s} URL")
    return target


def _copy(response: IO[bytes], handle: IO[bytes], *, length: int | None, max_bytes: int,
          deadline: float, what: str) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    # read1 returns what one receive brings, so the deadline is checked even against a trickle.
    while chunk := response.read1(_CHUNK):  # type: ignore[attr-defined]
        size += len(chunk)
        if size > max_bytes:
            raise QualificationError(Code.EVIDENCE_TOO_LARGE, f"{what}: more than {max_bytes} bytes")
        if time.monotonic() > deadline:
            raise QualificationError(Code.ENVIRONMENT, f"{what}: download took too long")
        digest.update(chunk)
        handle.write(chunk)
    # http.client does not raise when a length-delimited body ends early.
    if length is not None and size != length:
        raise http.client.IncompleteRead(b"", length - size)
    return size, digest.hexdigest()


def _store(response: http.client.HTTPResponse, dest: Path, *, max_bytes: int, deadline: float,
           what: str) -> Downloaded:
    declared = response.headers.get("Content-Length")
    length = int(declared) if declared and declared.isdigit() else None
    if length is not None and length > max_bytes:
        raise QualificationError(Code.EVIDENCE_TOO_LARGE, f"{what}: {length} bytes, the cap is {max_bytes}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            size, sha256 = _copy(response, handle, length=length, max_bytes=max_bytes, deadline=deadline, what=what)
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return Downloaded(dest, size, sha256)


def download(url: str, dest: Path, *, token: str | None, max_bytes: int, timeout: float, max_seconds: float,
             what: str) -> Downloaded:
    """GET ``url`` (an API URL the caller built, never one a response supplied) into ``dest``."""
    headers = {"Accept": "application/octet-stream", "User-Agent": USER_AGENT,
               "X-GitHub-Api-Version": "2022-11-28"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    deadline = time.monotonic() + max_seconds
    current = url
    for _hop in range(_MAX_REDIRECTS + 1):
        request = urllib.request.Request(current, headers=headers, method="GET")  # noqa: S310 - scheme checked
        try:
            response = _OPENER.open(request, timeout=timeout)
        except urllib.error.HTTPError as exc:
            with exc:
                if exc.code not in _REDIRECTS:
                    raise HttpStatusError(exc.code, dict(exc.headers.items()), _error_message(exc)) from None
                current = _next_url(current, exc.headers.get("Location"), exc.code)
            # The redirect target is pre-signed storage: the token stays with the API.
            headers.pop("Authorization", None)
            continue
        with response:
            return _store(response, dest, max_bytes=max_bytes, deadline=deadline, what=what)
    raise QualificationError(Code.ENVIRONMENT, f"{what}: more than {_MAX_REDIRECTS} redirects")
