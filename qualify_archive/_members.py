"""What every unpack does per member: a safe path, the budget, an exclusive write."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import IO

from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_files import NOFOLLOW

from . import _limits as limits
from ._names import name_problem, refuse


def damaged(exc: BaseException) -> QualificationError:
    if isinstance(exc, FileExistsError):
        return QualificationError(Code.INSTALL_FAILED, "archive lists a member twice")
    return QualificationError(Code.INSTALL_FAILED, f"archive is damaged: {exc}")


def safe_member_path(name: str, prefix: Path) -> Path:
    if problem := name_problem(name):
        raise refuse(name, problem)
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or any(c in name for c in "\\:") or not pure.parts:
        raise refuse(name, "escapes the install prefix")
    target = prefix.joinpath(*pure.parts)
    if not target.resolve().is_relative_to(prefix.resolve()):
        raise refuse(name, "escapes the install prefix")
    return target


def check_budget(count: int, total: int) -> None:
    if count > limits.MAX_MEMBERS:
        raise QualificationError(Code.INSTALL_FAILED, f"archive has more than {limits.MAX_MEMBERS} members")
    if total > limits.MAX_UNPACKED_BYTES:
        raise QualificationError(Code.INSTALL_FAILED, f"archive unpacks to more than {limits.MAX_UNPACKED_BYTES} bytes")


def write_member(target: Path, source: IO[bytes], mode: int) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # O_EXCL: a member listed twice cannot overwrite what was already unpacked.
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as dst:
        while chunk := source.read(1 << 20):
            dst.write(chunk)
    target.chmod(mode & 0o755)
