"""Unpacking into a fresh prefix; any refusal removes the prefix whole."""

from __future__ import annotations

import shutil
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, QualificationError

from ._tar import unpack_tar
from ._zip import unpack_zip


def _discard(prefix: Path, cause: BaseException) -> None:
    """Remove a refused install whole: unpack made the prefix, so everything in it came from the archive.

    rmtree unlinks links and never follows them. Should something survive, the
    refusal says so rather than leave it unmentioned.
    """
    shutil.rmtree(prefix, ignore_errors=True)
    if (prefix.exists() or prefix.is_symlink()) and isinstance(cause, QualificationError):
        raise QualificationError(cause.code, f"{cause.message}; and what was unpacked could not be removed "
                                             f"from {prefix}") from cause


def unpack(archive: Path, prefix: Path) -> None:
    """Extract into ``prefix``, which must not exist yet; refuse anything unsafe, and leave nothing on refusal."""
    try:
        prefix.mkdir(parents=True, exist_ok=False)
    except FileExistsError as exc:
        raise QualificationError(Code.INSTALL_FAILED,
                                 f"install prefix {prefix} already exists; it must be fresh") from exc
    except OSError as exc:
        raise QualificationError(Code.INSTALL_FAILED, f"cannot create the install prefix {prefix}: {exc}") from exc
    try:
        if archive.name.endswith(".zip"):
            unpack_zip(archive, prefix)
        else:
            unpack_tar(archive, prefix)
    except BaseException as exc:
        _discard(prefix, exc)
        raise
