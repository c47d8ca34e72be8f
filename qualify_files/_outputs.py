"""A command's named outputs (``--json``, ``--html``, ``--markdown``, ``--summary``, ``--vsa``, ``--attest``,
``bundle --out``), written by the one output rule of ``qualify_runtime`` (docs/cli.md, "Outputs"):

- ``-`` is standard output.
- A path that does not exist, or names a regular file, is written atomically
  (a temporary file renamed over it), or appended to for ``--summary``.
- Anything else is refused: a symbolic link (``/dev/stdout`` included: use
  ``-``), a FIFO, a socket or a device (``QE_USAGE``), a folder
  (``QE_ENVIRONMENT``). Nothing is written through, followed or replaced.

Every command checks its outputs with ``qualify_runtime.check_outputs`` before
any work (an output that is one of its inputs is refused there); the kind is
checked again here, as the file is written.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_runtime import STDOUT, is_stdout, refuse_unsafe_output

from ._atomic import write_atomic

__all__ = ["STDOUT", "is_stdout", "write_output"]


def _write_stdout(data: bytes) -> None:
    try:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"standard output: cannot write ({exc.strerror or exc})") from exc


def _append(path: Path, data: bytes) -> None:
    """Append to a regular file (created if absent), never through a link: checked on the opened file."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
        | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"{path}: cannot append ({exc.strerror or exc})") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            # Swapped in after the check: a FIFO or a device is not written.
            raise QualificationError(Code.USAGE, f"{path}: not a regular file; use - for standard output")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"{path}: cannot append ({exc.strerror or exc})") from exc
    finally:
        os.close(fd)


def write_output(path: Path, data: bytes, *, append: bool = False, option: str = "output") -> None:
    """Write (or, with ``append``, add) ``data`` to the output ``path`` by the rules above."""
    if is_stdout(path):
        _write_stdout(data)
        return
    refuse_unsafe_output(option, path)
    if append:
        _append(path, data)
    else:
        # The rename replaces the directory entry itself: a link swapped in meanwhile is replaced, never followed.
        write_atomic(path, data)
