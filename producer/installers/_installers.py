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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Protocol, runtime_checkable

from desktop_qualify.evidence_schemas import Code, InstallerKind, InstallerSignature, QualificationError
from desktop_qualify.qualify_archive import audit_tree

from ._appimage import AppImageInstaller
from ._archive import ArchiveInstaller
from ._deb import DebInstaller
from ._dmg import DmgInstaller
from ._msi import MsiInstaller
from ._nsis import NsisInstaller
from ._pkg import PkgInstaller
from ._tools import ToolRunner, run_tool_process


class Installer(Protocol):
    kind: InstallerKind

    def install(self, copy: Path, prefix: Path) -> None: ...


@runtime_checkable
class ChecksSignature(Protocol):
    """An installer that checks the package's own signature before installing it (``pkg``, ``msi``)."""

    def checked(self) -> InstallerSignature | None: ...


@dataclass(frozen=True)
class SignatureRequirement:
    """What the job asks of a package's own signature: the policy's word, and the job's signtool.

    ``require_signed``: the policy accepts only signed builds for the platform (``[signing]`` without
    ``unsigned``), so a ``.pkg`` or ``.msi`` whose own signature does not verify is refused before a byte is
    installed. ``signtool`` and ``thumbprint``: where the job keeps signtool and the certificate a ``.msi`` must
    be signed with (the job's signing variables); without signtool an ``.msi`` is not checked, which a policy
    that requires signed builds refuses.
    """

    require_signed: bool = False
    signtool: str | None = None
    thumbprint: str | None = None

    @classmethod
    def of(cls, accepted: Iterable[str], env: Mapping[str, str]) -> SignatureRequirement:
        """From the policy's accepted OS-signing states for the platform and the job's environment
        (``QUALIFY_SIGNTOOL_PATH``, ``QUALIFY_SIGNTOOL_CERT_SHA1``, as the signer reads them)."""
        required = "unsigned" not in set(accepted)
        thumbprint = env.get("QUALIFY_SIGNTOOL_CERT_SHA1") or None
        # GitHub's Windows runners keep signtool in the SDK folder (QUALIFY_SIGNTOOL_PATH); by name otherwise, and
        # only when something asks for the check.
        signtool = env.get("QUALIFY_SIGNTOOL_PATH") or ("signtool" if required or thumbprint else None)
        return cls(required, signtool, thumbprint)


def installers_for(requirement: SignatureRequirement, runner: ToolRunner = run_tool_process,
                   system_root: str | None = None) -> dict[str, Installer]:
    """One fresh installer of each kind (the signature checkers keep their outcome), under ``requirement``.

    ``runner`` runs the platform tools (a test's recorder); ``system_root`` is where msiexec lives (Windows).
    """
    chosen: tuple[Installer, ...] = (
        ArchiveInstaller(), DebInstaller(), AppImageInstaller(runner), DmgInstaller(runner),
        PkgInstaller(runner, require_signed=requirement.require_signed),
        MsiInstaller(runner, system_root, signtool=requirement.signtool, thumbprint=requirement.thumbprint,
                     require_signed=requirement.require_signed),
        NsisInstaller(runner))
    return {installer.kind: installer for installer in chosen}


def signature_checked(installer: Installer | None) -> InstallerSignature | None:
    """What ``installer`` found of the package's own signature; None for a kind that checks none."""
    return installer.checked() if isinstance(installer, ChecksSignature) else None


INSTALLERS: Mapping[str, Installer] = MappingProxyType(installers_for(SignatureRequirement()))


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


__all__ = ["INSTALLERS", "ArchiveInstaller", "ChecksSignature", "Installer", "SignatureRequirement", "install_with",
           "installers_for", "signature_checked"]
