"""Installer kinds: one small interface, one adapter per kind, chosen by the policy's ``[app.install]``.

Each adapter installs the private copy of the artifact into a fresh, empty
prefix with the format's own tool, and nothing outside it (its own temporary
folders aside, removed before it returns). Whatever the tool wrote is then
audited as the hardened unpack would have refused it (``audit_tree``); any
refusal removes the prefix whole, so a refused install leaves nothing behind.
The method recorded is the kind; the verifier checks it against the policy's.

| kind | module | tool |
|---|---|---|
| archive | ``_archive`` | the hardened unpack (tar.gz, zip) |
| deb | ``_deb`` | ``dpkg-deb --fsys-tarfile`` into the hardened unpack (listing checked first, one parser) |
| appimage | ``_appimage`` | ``unsquashfs`` of the embedded image, its listing checked first |
| dmg | ``_dmg`` | ``hdiutil attach -readonly -nobrowse``, copy, detach |
| pkg | ``_pkg`` | ``pkgutil --expand-full`` |
| msi | ``_msi`` | ``msiexec /a`` (administrative install) |
| nsis | ``_nsis`` | the installer itself, ``/S /D=<prefix>`` |
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

from desktop_qualify.evidence_schemas import Code, InstallerKind, QualificationError
from desktop_qualify.qualify_archive import audit_tree

from ._appimage import AppImageInstaller
from ._archive import ArchiveInstaller
from ._deb import DebInstaller
from ._dmg import DmgInstaller
from ._msi import MsiInstaller
from ._nsis import NsisInstaller
from ._pkg import PkgInstaller


class Installer(Protocol):
    kind: InstallerKind

    def install(self, copy: Path, prefix: Path) -> None: ...


INSTALLERS: Mapping[str, Installer] = MappingProxyType({
    installer.kind: installer
    for installer in (ArchiveInstaller(), DebInstaller(), AppImageInstaller(), DmgInstaller(), PkgInstaller(),
                      MsiInstaller(), NsisInstaller())
})


def _discard(prefix: Path) -> None:
    # Links are unlinked, never followed; the prefix held only what the installer wrote.
    shutil.rmtree(prefix, ignore_errors=True)


def install_with(kind: InstallerKind | str, copy: Path, prefix: Path, *,
                 installers: Mapping[str, Installer] = INSTALLERS) -> InstallerKind:
    """Install the private copy ``copy`` into ``prefix`` (made here, or fresh and empty); return the method recorded.

    Nothing remains at ``prefix`` after a refusal.
    """
    installer = installers.get(kind)
    if installer is None:
        raise QualificationError(Code.INSTALL_FAILED, f"installer kind {kind!r} is not available in this producer; "
                                                      f"one of {', '.join(installers)}")
    try:
        prefix.mkdir(parents=True, exist_ok=True)
        if any(prefix.iterdir()):
            raise QualificationError(Code.INSTALL_FAILED, f"install prefix {prefix} is not empty; it must be fresh")
    except OSError as exc:
        raise QualificationError(Code.INSTALL_FAILED, f"install prefix {prefix} cannot be read: {exc}") from exc
    try:
        installer.install(copy, prefix)
        audit_tree(prefix)
    except BaseException:
        _discard(prefix)
        raise
    return installer.kind


__all__ = ["INSTALLERS", "ArchiveInstaller", "Installer", "install_with"]
