"""A command's named outputs (``--json``, ``--html``, ``--markdown``, ``--summary``), written without harm.

Rules, the same for every output option:

- ``-`` is standard output.
- A path that does not exist, or names a regular file, is written atomically
  (a temporary file renamed over it), or appended to for ``--summary``.
- A path that exists and is a pipe (FIFO), a socket, a terminal or the null
  device is written through: opened without being created or truncated, and
  never replaced. Run as root, ``--json /dev/stdout`` must not turn the
  machine's ``/dev/stdout`` link into a regular file.
- A symbolic link is never replaced. It is written through when it leads to
  one of the files above (``/dev/stdout`` leads to the process's standard
  output), and refused otherwise: a link to a regular file is refused, since
  following it would let whoever planted the link choose which file gets
  overwritten.
- Any other kind of file (a folder, a block device, another character
  device) is refused.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, QualificationError

from ._atomic import append_text, write_atomic

STDOUT = "-"


def is_stdout(path: Path | None) -> bool:
    """Whether an output option names standard output (``-``)."""
    return path is not None and str(path) == STDOUT


def _refuse(path: Path, why: str) -> QualificationError:
    return QualificationError(Code.USAGE, f"{path}: {why}; name a new or regular file, or - for standard output")


def _null_device() -> int | None:
    try:
        return Path(os.devnull).stat().st_rdev
    except OSError:
        return None


def _stream_ok(fd: int, mode: int) -> bool:
    """A file written through: a pipe, a socket, a terminal or the null device; never a disk or other device."""
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return True
    if stat.S_ISCHR(mode):
        return os.isatty(fd) or os.fstat(fd).st_rdev == _null_device()
    return False


def _write_through(path: Path, data: bytes) -> None:
    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        # No O_CREAT, no O_TRUNC: the file is written to as it stands, never made or emptied.
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise QualificationError(Code.ENVIRONMENT, f"{path}: a pipe no process is reading") from exc
        raise QualificationError(Code.ENVIRONMENT, f"{path}: cannot write ({exc.strerror or exc})") from exc
    try:
        mode = os.fstat(fd).st_mode
        if not _stream_ok(fd, mode):
            # Checked on the opened file: a regular file or a disk swapped in after the lstat is not written.
            raise _refuse(path, "not a pipe, socket, terminal or null device")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"{path}: cannot write ({exc.strerror or exc})") from exc
    finally:
        os.close(fd)


def _write_stdout(data: bytes) -> None:
    try:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"standard output: cannot write ({exc.strerror or exc})") from exc


def write_output(path: Path, data: bytes, *, append: bool = False) -> None:
    """Write (or, with ``append``, add) ``data`` to the output ``path`` by the rules above."""
    if is_stdout(path):
        _write_stdout(data)
        return
    try:
        link = os.lstat(path)
    except FileNotFoundError:
        link = None
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"{path}: cannot write ({exc.strerror or exc})") from exc
    if link is None or stat.S_ISREG(link.st_mode):
        if append:
            append_text(path, data.decode("utf-8"))
        else:
            write_atomic(path, data)
        return
    if stat.S_ISLNK(link.st_mode):
        try:
            target = path.stat().st_mode
        except OSError:
            raise _refuse(path, "a symbolic link that leads nowhere (outputs never replace a link)") from None
        if stat.S_ISREG(target):
            raise _refuse(path, "a symbolic link to a regular file (outputs never follow a link to a file nor "
                                "replace the link)")
    elif stat.S_ISDIR(link.st_mode):
        raise QualificationError(Code.ENVIRONMENT, f"{path}: cannot write (a folder)")
    _write_through(path, data)
