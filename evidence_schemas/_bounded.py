"""Bounded JSON loading for untrusted bytes.

Order of checks, each with its own stable code: size (before anything is
decoded), UTF-8, nesting depth (before the parser recurses), syntax, duplicate
keys, NaN/Infinity.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any

from desktop_qualify.qualify_errors import Code, QualificationError

from ._limits import JsonBounds

# The depth scan reduces the text to its skeleton in C-speed passes: escapes
# removed (so every remaining quote toggles "inside a string"), everything but
# quotes and brackets deleted, quoted runs dropped. Only brackets outside
# strings are then walked in Python.
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_NOT_SKELETON = bytes(sorted(set(range(256)) - set(b'"[]{}')))
_QUOTED = re.compile(rb'"[^"]*"')
_OPEN = frozenset(b"[{")


def _max_depth(data: bytes) -> int:
    """Nesting depth of JSON text, scanned without parsing.

    Scanning first keeps a hostile document from driving the recursive parser
    to its recursion limit.
    """
    skeleton = _ESCAPE.sub(b"", data).translate(None, delete=_NOT_SKELETON)
    depth = deepest = 0
    for byte in _QUOTED.sub(b"", skeleton):
        if byte in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif byte != 0x22:  # an unterminated string's quote: the parser will refuse it
            depth -= 1
    return deepest


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise QualificationError(Code.JSON_DUPLICATE_KEY, f"duplicate key {key[:64]!r}")
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise QualificationError(Code.JSON_NONFINITE, f"{name} is not allowed in evidence")


def _finite_float(text: str) -> float:
    # 1e400 parses to inf without ever passing parse_constant: an overflow is Infinity by another spelling.
    value = float(text)
    if math.isinf(value):
        raise QualificationError(Code.JSON_NONFINITE, f"number {text[:40]} overflows to infinity")
    return value


def load_json(data: bytes, *, what: str, bounds: JsonBounds | None = None) -> Any:
    """Parse untrusted JSON bytes under ``bounds``; ``what`` names the input in errors."""
    bounds = bounds or JsonBounds()
    if len(data) > bounds.max_bytes:
        raise QualificationError(
            Code.EVIDENCE_TOO_LARGE, f"{what}: {len(data)} bytes exceeds the limit of {bounds.max_bytes}"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise QualificationError(Code.JSON_INVALID_UTF8, f"{what}: not valid UTF-8 at byte {exc.start}") from exc
    depth = _max_depth(data)
    if depth > bounds.max_depth:
        raise QualificationError(Code.JSON_TOO_DEEP, f"{what}: nesting depth {depth} exceeds {bounds.max_depth}")
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant,
                          parse_float=_finite_float)
    except QualificationError as exc:
        raise QualificationError(exc.code, f"{what}: {exc.message}") from exc
    except (json.JSONDecodeError, RecursionError) as exc:
        raise QualificationError(Code.JSON_MALFORMED, f"{what}: not valid JSON ({exc})") from exc
    except ValueError as exc:
        # e.g. an integer past Python's digit limit for int(): refused, not crashed on.
        raise QualificationError(Code.JSON_MALFORMED, f"{what}: a number cannot be read ({str(exc)[:120]})") from exc


def _kind(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: Path, *, what: str | None = None) -> int:
    """A read-only descriptor of ``path``, checked (fstat) to be a regular file before a byte is read.

    The open never blocks (``O_NONBLOCK``: a FIFO with no writer would hang a
    plain open), and the check is on the opened file, not on the name, so a
    FIFO or a device swapped in after a ``stat`` is still refused. The caller
    closes the descriptor.
    """
    label = what or str(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as exc:
        raise QualificationError(Code.EVIDENCE_MISSING, f"{label}: file not found") from exc
    except IsADirectoryError as exc:
        raise QualificationError(Code.EVIDENCE_UNEXPECTED, f"{label}: is a directory, not a file") from exc
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"{label}: cannot read ({exc.strerror})") from exc
    try:
        _check_regular(os.fstat(fd).st_mode, label)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_regular(mode: int, label: str) -> None:
    if stat.S_ISDIR(mode):
        raise QualificationError(Code.EVIDENCE_UNEXPECTED, f"{label}: is a directory, not a file")
    if not stat.S_ISREG(mode):
        raise QualificationError(Code.INPUT_NOT_REGULAR, f"{label}: {_kind(mode)}, not a regular file; only "
                                                         "regular files are read")


def read_bounded(path: Path, *, max_bytes: int, what: str | None = None) -> bytes:
    """Read at most ``max_bytes`` from the regular file ``path``; a larger file is refused, not truncated."""
    label = what or str(path)
    fd = open_regular(path, what=label)
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"{label}: cannot read ({exc.strerror})") from exc
    if len(data) > max_bytes:
        raise QualificationError(Code.EVIDENCE_TOO_LARGE, f"{label}: larger than the limit of {max_bytes} bytes")
    return data
