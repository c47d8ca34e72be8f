"""Digests of folders, streamed (a single file's digest is qualify_files.file_sha256).

A folder is walked without ever following a symbolic link (a macOS bundle
holds relative links into itself); a link is recorded by its target text,
never by what it points at, so a manifest entry names exactly one thing.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import InstalledFile, canonical_bytes, sha256_hex
from desktop_qualify.qualify_files import NOFOLLOW

# Domain separation: a link's digest can never equal the digest of a file holding the same text.
_LINK_DOMAIN = b"symlink:"


@dataclass(frozen=True)
class TreeEntry:
    """One entry below a walked root: its POSIX path relative to the root and its lstat mode."""

    relative: str
    path: Path
    mode: int
    size: int

    @property
    def is_dir(self) -> bool:
        """Whether the entry is a directory."""
        return stat.S_ISDIR(self.mode)

    @property
    def is_file(self) -> bool:
        """Whether the entry is a regular file."""
        return stat.S_ISREG(self.mode)

    @property
    def is_link(self) -> bool:
        """Whether the entry is a symbolic link."""
        return stat.S_ISLNK(self.mode)


def walk_tree(root: Path) -> list[TreeEntry]:
    """Every entry under ``root`` (not ``root`` itself), sorted by POSIX path; links are listed, not followed."""
    found: list[TreeEntry] = []
    pending = [root]
    while pending:
        with os.scandir(pending.pop()) as listing:
            for item in listing:
                info = item.stat(follow_symlinks=False)
                path = Path(item.path)
                found.append(TreeEntry(path.relative_to(root).as_posix(), path, info.st_mode, info.st_size))
                if stat.S_ISDIR(info.st_mode):
                    pending.append(path)
    return sorted(found, key=lambda entry: entry.relative)


def _unfollowed_sha256(path: Path) -> tuple[int, str]:
    """Size and digest of a regular file, refusing (OSError) to open it should it have become a link."""
    fd = os.open(path, os.O_RDONLY | NOFOLLOW)
    digest = hashlib.sha256()
    size = 0
    with os.fdopen(fd, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def read_link(path: Path) -> str:
    """A link's target exactly as stored: ``Path.readlink`` would normalise away "./" and trailing slashes."""
    return os.readlink(path)  # noqa: PTH115 - the exact text is what is archived and hashed


def link_entry(relative: str, target: str) -> InstalledFile:
    """The manifest entry of a symbolic link: its target's bytes stand in for content."""
    raw = target.encode("utf-8", errors="surrogateescape")
    return InstalledFile(path=relative, size=len(raw), sha256=hashlib.sha256(_LINK_DOMAIN + raw).hexdigest())


def tree_manifest(root: Path) -> list[InstalledFile]:
    """Every regular file and symlink under ``root``, sorted by POSIX path, with size and digest.

    Directories are implied by the paths; anything else (a fifo, a socket) is
    not content and cannot come out of ``unpack``.
    """
    entries = []
    for entry in walk_tree(root):
        if entry.is_link:
            entries.append(link_entry(entry.relative, read_link(entry.path)))
        elif entry.is_file:
            size, digest = _unfollowed_sha256(entry.path)
            entries.append(InstalledFile(path=entry.relative, size=size, sha256=digest))
    return entries


def manifest_sha256(entries: list[InstalledFile]) -> str:
    """Digest of a manifest: RFC 8785 bytes of its entries, so any verifier can recompute it."""
    return sha256_hex(canonical_bytes([entry.model_dump(mode="json") for entry in entries]))
