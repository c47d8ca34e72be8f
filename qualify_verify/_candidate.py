"""Hashing a candidate file so that the digest reported is the digest of the bytes read.

The file is opened once, without blocking, and checked to be a regular file
before a byte is read (a FIFO or ``/dev/zero`` would hang or never end), and
no larger than the policy's cap (a sparse file of many GiB is refused, not
hashed). It is read through that handle; its identity (device, inode, size,
modification time) is taken before and after the read. A file replaced,
grown, truncated or rewritten while it was hashed is refused instead of being
reported under a digest that no longer describes it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from desktop_qualify.evidence_schemas import open_regular

_CHUNK = 1 << 20


class CandidateError(Exception):
    """A candidate file that cannot be given a digest that describes it."""


class CandidateChangedError(CandidateError):
    """The candidate file changed while it was being hashed."""


class CandidateTooLargeError(CandidateError):
    """The candidate file is larger than the policy's cap."""


def _identity(stat: os.stat_result) -> tuple[int, int, int, int]:
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def stable_sha256(path: Path, max_bytes: int) -> tuple[str, int]:
    """SHA-256 and size of ``path``'s bytes as read through one handle.

    Raises QualificationError (not a regular file, missing), OSError, CandidateTooLargeError or
    CandidateChangedError.
    """
    digest = hashlib.sha256()
    read = 0
    with os.fdopen(open_regular(path, what=f"--artifact {path}"), "rb") as handle:
        before = os.fstat(handle.fileno())
        if before.st_size > max_bytes:
            raise CandidateTooLargeError(f"{before.st_size} bytes, above the policy's [limits] max_candidate_bytes "
                                         f"({max_bytes})")
        while read <= max_bytes and (chunk := handle.read(_CHUNK)):
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
