"""OS code signing of the team's build output, where the producer can sign it (docs/app-contract.md, section 7).

The signing identity is the job's secret and must never reach the build (code
of the artifact under qualification), so the producer signs after the build
has exited. For an ``archive`` it can: the output is unpacked with the hardened
unpack, the bundle (the first folder of the executable's path) is signed with
the platform's signer (nested code first, the executable last), and packed
again. For a ``dmg`` and a macOS signer, the image's ``.app`` is signed, the
image made again, signed and notarized (``_dmg_signing``). With no identity
(local mode, Linux) the output is used byte for byte. For the other kinds (a
``.pkg`` needs a Developer ID Installer identity and ``productsign``) the
producer does not sign the installer and records the honest state,
``unsigned``: a policy that accepts only signed builds for that platform then
fails closed (QE_PLATFORM_SIGNING_UNACCEPTED).
"""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

from desktop_qualify.evidence_schemas import Code, InstallerKind, QualificationError, installer_suffix
from desktop_qualify.qualify_archive import pack, unpack

from ._dmg_signing import sign_disk_image
from ._platform_signing import NoPlatformSigner, PlatformSigner, SigningOutcome

UNSIGNED = SigningOutcome("none", "unsigned")


def sign_output(kind: InstallerKind, output: Path, signer: PlatformSigner, executable: str,
                staging: Path) -> tuple[Path, SigningOutcome]:
    """The file to release (``output`` itself, or a signed repack or image under ``staging``) and the outcome."""
    if isinstance(signer, NoPlatformSigner) or kind not in ("archive", "dmg") or \
            (kind == "dmg" and not signer.signs_disk_images):
        return output, UNSIGNED
    if kind == "dmg":
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        return sign_disk_image(output, signer, executable, staging)
    top = PurePosixPath(executable).parts
    if len(top) < 2:
        raise QualificationError(Code.BUILD_FAILED, f"the executable {executable!r} is not inside a bundle folder; "
                                                    "the producer signs an archive's one top-level bundle folder")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    unpacked = staging / "unpacked"
    unpack(output, unpacked)
    entries = sorted(p.name for p in unpacked.iterdir())
    if entries != [top[0]]:
        raise QualificationError(Code.BUILD_FAILED, f"the archive holds {entries[:5]} at its top level; the producer "
                                                    f"signs an archive whose only top-level entry is {top[0]!r}")
    bundle = unpacked / top[0]
    outcome = signer.sign(bundle, unpacked / executable)
    signed = staging / f"signed{installer_suffix(kind, output.name) or ''}"
    pack(bundle, signed)
    return signed, outcome


__all__ = ["UNSIGNED", "sign_output"]
