"""The command line's paths, checked before any work starts, the same way by every subcommand.

A missing input is reported as missing (``QE_USAGE``, exit 2) whichever
subcommand was given it; the same input named twice is refused rather than
counted twice; two outputs naming one file are refused, since the second write
would spoil the first (a decision JSON with Markdown appended is not JSON).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from desktop_qualify.qualify_errors import Code, QualificationError

Kind = Literal["file", "folder"]


def _usage(message: str) -> Exception:
    return QualificationError(Code.USAGE, message)


def _identity(path: Path) -> str:
    # One spelling per file: ./a, a, /abs/a and a symlink to it are the same input.
    try:
        where = path.resolve()
    except (OSError, RuntimeError):
        where = Path(os.path.normpath(path.absolute()))
    return os.path.normcase(where)


def refuse_repeats(option: str, paths: Sequence[Path]) -> None:
    """No input is named twice (under any spelling)."""
    seen: dict[str, Path] = {}
    for path in paths:
        key = _identity(path)
        if key in seen:
            raise _usage(f"{option} {path}: given twice (as {seen[key]} already); each input is named once")
        seen[key] = path


def require_inputs(option: str, paths: Sequence[Path | None], kind: Kind) -> None:
    """Each path given exists and is a ``kind``; none is given twice."""
    given = [path for path in paths if path is not None]
    for path in given:
        try:
            mode = path.stat().st_mode
        except (FileNotFoundError, NotADirectoryError):
            raise _usage(f"{option} {path}: missing (no such {kind})") from None
        except OSError as exc:
            raise _usage(f"{option} {path}: cannot be read ({exc.strerror or exc})") from None
        is_folder = stat.S_ISDIR(mode)
        if kind == "folder" and not is_folder:
            raise _usage(f"{option} {path}: not a folder")
        if kind == "file" and is_folder:
            raise _usage(f"{option} {path}: a folder, not a file")
    refuse_repeats(option, given)


def distinct_outputs(outputs: Iterable[tuple[str, Path | None]]) -> None:
    """No two outputs name the same file."""
    seen: dict[str, str] = {}
    for option, path in outputs:
        if path is None:
            continue
        key = _identity(path)
        if key in seen:
            raise _usage(f"{seen[key]} and {option} both name {path}; give each output its own file")
        seen[key] = option
