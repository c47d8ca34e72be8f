"""Hashing a candidate file so that the digest reported is the digest of the bytes read.

The file is opened once and read through that handle; its identity (device,
inode, size, modification time) is taken before and after the read. A file
replaced, grown, truncated or rewritten while it was hashed is refused instead
of being reported under a digest that no longer describes it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_CHUNK = 1 << 20


class CandidateChangedError(Exception):
    """The candidate file changed while it was being hashed."""


def _identity(stat: os.stat_result) -> tuple[int, int, int, int]:
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def stable_sha256(path: Path) -> tuple[str, int]:
    """SHA-256 and size of ``path``'s bytes as read through one handle; raises OSError or CandidateChangedError."""
    digest = hashlib.sha256()
    read = 0
    with path.open("rb") as handle:
        before = os.fstat(handle.fileno())
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            read += len(chunk)
        after = os.fstat(handle.fileno())
    if _identity(before) != _identity(after) or read != after.st_size:
        raise CandidateChangedError("the file changed while it was being hashed; present a file nothing is writing to")
    try:
        now = path.stat()
    except OSError as exc:
        raise CandidateChangedError(f"the file vanished after it was hashed ({exc.strerror})") from exc
    if _identity(now) != _identity(after):
        raise CandidateChangedError("the path names another file than the one hashed")
    return digest.hexdigest(), read
