"""File I/O shared by every stage: atomic writes, streamed digests, UTC timestamps.

An evidence or output file is either absent or complete, never partial; an
unwritable destination is an environment error with a stable code, not a crash.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import tempfile
from pathlib import Path

from ._errors import Code, QualificationError


def utc_now() -> str:
    """Now, in the evidence's timestamp format (RFC 3339, UTC, microseconds)."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def file_sha256(path: Path) -> str:
    """SHA-256 of a file, streamed: an artifact is never read whole into memory."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _fsync_folder(folder: Path) -> None:
    # The rename is durable only once the folder entry is; Windows has no such call.
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, then rename."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"{path}: cannot write ({exc.strerror or exc})") from exc
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if os.name == "posix":
            tmp.chmod(mode)
        # Path.replace (os.replace) is atomic on POSIX and on Windows (same volume).
        tmp.replace(path)
        _fsync_folder(path.parent)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise QualificationError(Code.ENVIRONMENT, f"{path}: cannot write ({exc.strerror or exc})") from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def append_text(path: Path, text: str) -> None:
    """Append to a file others also write (a GitHub job summary is appended to, never replaced)."""
    try:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"{path}: cannot append ({exc.strerror or exc})") from exc
