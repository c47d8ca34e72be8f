"""Atomic writes and appends shared by every stage.

An evidence or output file is either absent or complete, never partial; an
unwritable destination is an environment error with a stable code, not a crash.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, QualificationError


def _fsync_folder(folder: Path) -> None:
    # The rename is durable only once the folder entry is; Windows has no such call.
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# write_atomic's temporary files: ".<target name>." + tempfile's eight random characters + ".tmp".
# Hidden and ending in ".tmp", so a leftover can never be taken for the file it was meant to become
# (and an evidence folder refuses it as a stray file rather than reading it as a statement).
_TEMP_RANDOM = re.compile(r"[a-z0-9_]{8}")
_TEMP_SUFFIX = ".tmp"


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


def atomic_leftovers(path: Path) -> list[Path]:
    """The temporary files that interrupted ``write_atomic(path)`` calls left beside ``path``.

    Only a process killed mid-write (SIGKILL, power loss) leaves one: every
    error write_atomic sees removes its own.
    """
    prefix = _temp_prefix(path)
    try:
        names = [entry.name for entry in os.scandir(path.parent)]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"{path.parent}: cannot list ({exc.strerror or exc})") from exc
    return sorted(path.parent / name for name in names
                  if name.startswith(prefix) and name.endswith(_TEMP_SUFFIX)
                  and _TEMP_RANDOM.fullmatch(name[len(prefix):-len(_TEMP_SUFFIX)]))


def discard_leftovers(path: Path) -> None:
    """Remove what interrupted atomic writes of ``path`` left beside it, and nothing else.

    For a stage about to write ``path`` again: its earlier complete content
    stays until the new write replaces it.
    """
    _unlink_all(atomic_leftovers(path))


def _unlink_all(paths: list[Path]) -> None:
    for stale in paths:
        try:
            stale.unlink(missing_ok=True)
        except OSError as exc:
            raise QualificationError(Code.ENVIRONMENT, f"{stale}: cannot remove a stale output "
                                                       f"({exc.strerror or exc})") from exc


def remove_output(path: Path) -> None:
    """Remove ``path`` and whatever interrupted atomic writes of it left, so a rerun starts from nothing.

    For files a stage owns and is about to write again; concurrent writers of
    the same file are not expected (the one whose temporary file is removed
    would fail, loudly, on its rename).
    """
    _unlink_all([*atomic_leftovers(path), path])


def write_atomic(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, then rename.

    Any failure (a full disk or a file size limit during the write, the flush,
    the fsync or the rename) is ``QE_ENVIRONMENT``, removes the temporary file
    and leaves ``path`` as it was: absent, or its earlier complete content.
    Only the folder's fsync comes after the rename; when it fails, the error is
    still reported, and ``path`` holds the complete new content.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=_TEMP_SUFFIX, dir=path.parent)
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"{path}: cannot write ({exc.strerror or exc})") from exc
    tmp = Path(tmp_name)
    try:
        try:
            handle = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            raise
        with handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if os.name == "posix":
            tmp.chmod(mode)
        # Path.replace (os.replace) is atomic on POSIX and on Windows (same volume): until it runs,
        # ``path`` keeps its earlier content; after it, the new content is complete.
        tmp.replace(path)
        _fsync_folder(path.parent)
    except OSError as exc:
        _discard_temp(tmp)
        raise QualificationError(Code.ENVIRONMENT, f"{path}: cannot write ({exc.strerror or exc})") from exc
    except BaseException:
        _discard_temp(tmp)
        raise


def _discard_temp(tmp: Path) -> None:
    # Best effort: the error being reported is the write's, not a second one from the clean-up.
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


def append_text(path: Path, text: str) -> None:
    """Append to a file others also write (a GitHub job summary is appended to, never replaced)."""
    try:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"{path}: cannot append ({exc.strerror or exc})") from exc
