"""The one output rule, the same for every command and every output option (docs/cli.md, "Outputs").

- ``-`` is standard output; the command's human text then goes to standard
  error (:func:`text_stream`), so standard output is the document alone.
- Any other output is a new file or a regular file, replaced (or, for
  ``--summary``, appended to). A symbolic link, a FIFO, a socket or a device
  is refused (``QE_USAGE``), ``/dev/stdout`` included (a link): it is never
  written through, never followed and never replaced. A folder cannot be
  written (``QE_ENVIRONMENT``).
- An output may not be an input of the same command, compared by
  ``(st_dev, st_ino)`` with links resolved (``QE_OUTPUT_IS_INPUT``, exit 2),
  and two outputs may not name one file (``QE_USAGE``). Both are checked before
  any work, so a refused command leaves its inputs untouched.

Light on purpose (standard library and ``qualify_errors``): ``qualify_files``
applies :func:`refuse_unsafe_output` again at the moment it writes.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from desktop_qualify.qualify_errors import Code, QualificationError

from ._paths import distinct_outputs

STDOUT = "-"

Named = tuple[str, Path | None]


def is_stdout(path: Path | str | None) -> bool:
    """Whether an output option names standard output (``-``)."""
    return path is not None and str(path) == STDOUT


def text_stream(*outputs: Path | None) -> TextIO:
    """Where a command's human text goes: standard error when one of its outputs (``-``) took standard output."""
    return sys.stderr if any(map(is_stdout, outputs)) else sys.stdout


def _kind(mode: int) -> str | None:
    """Why a file of this mode is no output, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link (an output never follows nor replaces a link)"
    if stat.S_ISFIFO(mode):
        return "a FIFO (pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def refuse_unsafe_output(option: str, path: Path) -> None:
    """``path`` (not ``-``) is absent or a regular file; a link, FIFO, socket or device is QE_USAGE, a folder
    QE_ENVIRONMENT."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"{option} {path}: cannot write ({exc.strerror or exc})") from exc
    if stat.S_ISDIR(mode):
        raise QualificationError(Code.ENVIRONMENT, f"{option} {path}: cannot write (a folder)")
    why = _kind(mode)
    if why is not None:
        raise QualificationError(Code.USAGE, f"{option} {path}: {why}; an output is a new or regular file; "
                                             f"use - for standard output")


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        found = Path(path).stat()  # links resolved
    except (OSError, ValueError):
        return None
    return found.st_dev, found.st_ino


def _input_files(inputs: Iterable[Named]) -> dict[tuple[int, int], str]:
    """(st_dev, st_ino) -> how the input was named, for every input file and every member of an input folder."""
    found: dict[tuple[int, int], str] = {}
    for option, path in inputs:
        if path is None or is_stdout(path):
            continue
        identity = _identity(path)
        if identity is None:
            continue
        found.setdefault(identity, f"{option} {path}")
        if Path(path).is_dir():
            try:
                entries = list(os.scandir(path))
            except OSError:
                continue
            for entry in entries:
                member = _identity(Path(entry.path))
                if member is not None:
                    found.setdefault(member, f"{option} {path} (its member {entry.name})")
    return found


def check_outputs(outputs: Iterable[Named], inputs: Iterable[Named] = ()) -> None:
    """Every output of a command obeys the rule above; run before any work (every subcommand calls it)."""
    given = [(option, path) for option, path in outputs if path is not None]
    distinct_outputs(given)
    taken = _input_files(inputs)
    for option, path in given:
        if is_stdout(path):
            continue
        identity = _identity(path)
        if identity is not None and identity in taken:
            raise QualificationError(Code.OUTPUT_IS_INPUT, f"{option} {path} is {taken[identity]}, an input of "
                                                           "this command; it was left as it is",
                                     hint="name a new file for the output")
        refuse_unsafe_output(option, path)
