"""Filesystem broker: read-only access inside one scoped root.

A path is a relative string. Absolute paths, drive letters and any ``..``
component are refused before touching the disk; the joined path is then
resolved (symlinks included) and must stay inside the root's real path. The
open itself walks the resolved components with ``O_NOFOLLOW`` from a directory
descriptor of the root, so a component swapped for a symlink after the check
fails instead of being followed (POSIX; elsewhere the resolved path is opened
and its identity compared).
"""
# Low-level os calls on purpose (dir_fd walks, O_NOFOLLOW, fstat identity checks).
# ruff: noqa: PTH112, PTH116, PTH117, PTH118, PTH208

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path, PureWindowsPath
from typing import Any

from skillhost._errors import SkillError

MAX_FILE_BYTES = 64 * 1024
MAX_ENTRIES = 256
MAX_PATH = 512
_SEP = re.compile(r"[\\/]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
# Descriptor walks need dir_fd support (POSIX); elsewhere the resolved path is opened and its identity checked.
_WALKABLE = os.name == "posix" and os.open in os.supports_dir_fd and os.listdir in os.supports_fd


def resolve_inside(root_real: str, rel: object) -> str:
    """Return the real path of ``rel`` under ``root_real`` or raise ``CC_SKILL_PATH_ESCAPE``."""
    if not isinstance(rel, str) or not rel or len(rel) > MAX_PATH or "\x00" in rel:
        raise SkillError("CC_SKILL_PORT_BAD_ARGS", "path must be a non-empty relative string")
    if _SURROGATE.search(rel):
        # A lone surrogate has no file-system encoding; refuse it before any OS call sees it.
        raise SkillError("CC_SKILL_PORT_BAD_ARGS", "path contains an unpaired surrogate")
    if os.path.isabs(rel) or PureWindowsPath(rel).drive or rel.startswith(("/", "\\")):
        raise SkillError("CC_SKILL_PATH_ESCAPE", "absolute paths are outside the scoped root")
    if ".." in _SEP.split(rel):
        raise SkillError("CC_SKILL_PATH_ESCAPE", "'..' components are refused")
    real = os.path.realpath(os.path.join(root_real, rel))
    if real != root_real and os.path.commonpath([real, root_real]) != root_real:
        raise SkillError("CC_SKILL_PATH_ESCAPE", "path resolves outside the scoped root (symlink)")
    return real


class FilesystemPort:
    """``fs.read_text(path)`` and ``fs.list_dir(path=".")`` under one root."""

    methods = ("read_text", "list_dir")

    def __init__(self, root: str | os.PathLike[str], max_file_bytes: int = MAX_FILE_BYTES) -> None:
        self._root = os.path.realpath(os.fspath(root))
        if not os.path.isdir(self._root):
            raise SkillError("CC_SKILL_FS_ROOT_INVALID", "scoped root is not a directory")
        self._max = max_file_bytes

    @property
    def root(self) -> str:
        return self._root

    def _open(self, real: str, directory: bool) -> int:
        rel_parts = [] if real == self._root else Path(os.path.relpath(real, self._root)).parts
        if not _WALKABLE:
            return os.open(real, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        fd = os.open(self._root, os.O_RDONLY | _DIRECTORY)
        try:
            for i, part in enumerate(rel_parts):
                last = i == len(rel_parts) - 1
                flags = os.O_RDONLY | _NOFOLLOW | (_DIRECTORY if (not last or directory) else 0)
                nxt = os.open(part, flags, dir_fd=fd)
                os.close(fd)
                fd = nxt
        except OSError:
            os.close(fd)
            raise SkillError("CC_SKILL_PATH_ESCAPE", "path changed or became a link while opening") from None
        return fd

    def read_text(self, path: object = "") -> str:
        real = resolve_inside(self._root, path)
        try:
            st = os.stat(real)
        except OSError:
            raise SkillError("CC_SKILL_FS_NOT_FOUND", "no such file under the scoped root") from None
        if not stat.S_ISREG(st.st_mode):
            raise SkillError("CC_SKILL_FS_NOT_FOUND", "not a regular file")
        if st.st_size > self._max:
            raise SkillError("CC_SKILL_FILE_TOO_LARGE", f"file exceeds {self._max} bytes")
        fd = self._open(real, directory=False)
        try:
            fst = os.fstat(fd)
            if (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(fst.st_mode):
                raise SkillError("CC_SKILL_PATH_ESCAPE", "file identity changed while opening")
            data = os.read(fd, self._max + 1)
        finally:
            os.close(fd)
        if len(data) > self._max:
            raise SkillError("CC_SKILL_FILE_TOO_LARGE", f"file exceeds {self._max} bytes")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise SkillError("CC_SKILL_FS_NOT_TEXT", "file is not UTF-8 text") from None

    def list_dir(self, path: object = ".") -> list[str]:
        real = resolve_inside(self._root, path)
        if not os.path.isdir(real):
            raise SkillError("CC_SKILL_FS_NOT_FOUND", "not a directory under the scoped root")
        if _WALKABLE:
            fd = self._open(real, directory=True)
            try:
                names = sorted(os.listdir(fd))
            finally:
                with contextlib.suppress(OSError):
                    os.close(fd)
        else:
            names = sorted(os.listdir(real))
        if len(names) > MAX_ENTRIES:
            raise SkillError("CC_SKILL_FILE_TOO_LARGE", f"directory has more than {MAX_ENTRIES} entries")
        return names

    def audit_target(self, method: str, args: list[Any], kwargs: dict[str, Any]) -> str:
        # Relative names inside the user's own workspace are not secrets, but keep them short.
        path = args[0] if args else kwargs.get("path", ".")
        return path[:MAX_PATH] if isinstance(path, str) and path.isascii() and path.isprintable() else "?"
