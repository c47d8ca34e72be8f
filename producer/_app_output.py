"""The record an app (or its journey runner) writes, read as the untrusted input it is (docs/app-contract.md).

The producer names a file (``{record}``, also ``QUALIFY_RECORD``) in a folder of
its own; the app writes one JSON object there. Never stdout: a runner's logs and
a test tool's output go to stdout freely. The file must be a regular file (a
link is refused, not followed), bounded, and strictly valid against the
contract's models before anything of it reaches a record.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TypeVar

from desktop_qualify.evidence_schemas import (
    MAX_APP_OUTPUT_BYTES,
    Code,
    JsonBounds,
    QualificationError,
    load_json,
    validate_model,
)
from desktop_qualify.qualify_files import NOFOLLOW
from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
# Non-blocking: a fifo planted at the record's path must not hang the producer on open (POSIX).
_OPEN_FLAGS = os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
RECORD_BOUNDS = JsonBounds(max_bytes=MAX_APP_OUTPUT_BYTES, max_depth=8)


def parse_app_record(model: type[M], data: bytes, *, what: str) -> M:
    """One JSON object, bounded, strictly validated; raises QualificationError."""
    return validate_model(model, load_json(data.strip(), what=what, bounds=RECORD_BOUNDS), what=what)


def read_app_record(path: Path, *, what: str) -> bytes:
    """The bytes of the record file: a regular file at most MAX_APP_OUTPUT_BYTES long, opened without following."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError as exc:
        raise QualificationError(Code.EVIDENCE_MISSING, f"{what}: the app wrote no record to {path.name}") from exc
    except OSError as exc:
        raise QualificationError(Code.EVIDENCE_UNEXPECTED, f"{what}: the record {path.name} cannot be opened as a "
                                                           f"file ({exc.strerror or exc})") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise QualificationError(Code.EVIDENCE_UNEXPECTED, f"{what}: the record is not a regular file")
        chunks, left = [], MAX_APP_OUTPUT_BYTES + 1
        while left > 0 and (chunk := os.read(fd, left)):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    if len(data) > MAX_APP_OUTPUT_BYTES:
        raise QualificationError(Code.EVIDENCE_TOO_LARGE, f"{what}: the record is larger than "
                                                          f"{MAX_APP_OUTPUT_BYTES} bytes")
    return data


def load_app_record(model: type[M], path: Path, *, what: str) -> M:
    return parse_app_record(model, read_app_record(path, what=what), what=what)
