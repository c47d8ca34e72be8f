"""Installer adapters: one per installer kind, behind one small interface (docs/app-contract.md, section 8).

``install_with`` is the install stage's only entry: given the job's private copy
of the artifact (the bytes it hashed) and a prefix that does not exist yet, the
adapter of the policy's kind creates the prefix, installs into it without
touching the system, and refuses what the hardened unpack refuses (traversal,
escaping links, devices, oversized members). A refusal raises
``QualificationError``; the caller turns it into a failed install record, and
nothing may remain at the prefix. The kind returned is what the install record
names as its method, and the verifier requires it to be the policy's kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

from desktop_qualify.evidence_schemas import Code, InstallerKind, QualificationError
from desktop_qualify.qualify_archive import unpack


class Installer(Protocol):
    kind: InstallerKind

    def install(self, copy: Path, prefix: Path) -> None:
        """Install ``copy`` into ``prefix`` (created here; it must not exist); leave nothing there on refusal."""


class ArchiveInstaller:
    """``.tar.gz`` and ``.zip``: the hardened unpack (qualify_archive), which tells them apart by the name's end."""

    kind: InstallerKind = "archive"

    def install(self, copy: Path, prefix: Path) -> None:
        unpack(copy, prefix)


INSTALLERS: Mapping[str, Installer] = MappingProxyType({
    "archive": ArchiveInstaller(),
})


def install_with(kind: InstallerKind, copy: Path, prefix: Path) -> InstallerKind:
    """Install with the adapter of ``kind``; returns the method the install record names (the kind)."""
    installer = INSTALLERS.get(kind)
    if installer is None:
        raise QualificationError(Code.INSTALL_FAILED, f"installer kind {kind!r} is not available in this producer")
    installer.install(copy, prefix)
    return installer.kind


__all__ = ["INSTALLERS", "ArchiveInstaller", "Installer", "install_with"]
