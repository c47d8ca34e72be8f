"""Kind ``archive``: a .tar.gz or .zip, through the hardened unpack (qualify_archive)."""

from __future__ import annotations

from pathlib import Path

from desktop_qualify.evidence_schemas import InstallerKind
from desktop_qualify.qualify_archive import unpack


class ArchiveInstaller:
    kind: InstallerKind = "archive"

    def install(self, copy: Path, prefix: Path) -> None:
        # The unpack makes the prefix itself (refusing one that exists), and tells zip from tar.gz by the copy's
        # name, which keeps the artifact's ending.
        prefix.rmdir()
        unpack(copy, prefix)
