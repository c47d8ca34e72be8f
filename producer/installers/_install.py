"""The install stage: re-hash the artifact, install it into a fresh prefix with its kind's installer, record it.

The archive is read once, into a private copy, hashed as it is copied; the
copy is what gets unpacked. So the bytes installed are the bytes hashed, even
when the artifact's file is replaced or rewritten in place between the hash
and the unpack (a time-of-check gap that re-opening the path would leave).

Every failure, whatever raised it, becomes a failed record: the stage's
outcome is evidence, never a traceback.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    BuildRecord,
    InstallerKind,
    InstallerSignature,
    InstallRecord,
    QualificationError,
)
from desktop_qualify.qualify_archive import manifest_sha256, tree_manifest
from desktop_qualify.qualify_files import file_sha256
from pydantic import ValidationError

from ._grant import PrefixGrant
from ._installers import SignatureRequirement, install_with, installers_for, signature_checked

_ZERO = "0" * 64


def _printable(text: str) -> str:
    # A failure can quote a name the file system handed over as lone surrogates; the record must stay UTF-8.
    return text.encode("utf-8", errors="backslashreplace").decode("utf-8")[:2000]


def _failed(*, digest: str, kind: InstallerKind, executable: str, started: float, why: str,
            signature: InstallerSignature | None = None) -> InstallRecord:
    return InstallRecord(
        artifact_sha256=digest, method=kind, file_count=0, total_bytes=0, manifest_sha256=_ZERO,
        executable=executable, executable_sha256=_ZERO,
        duration_ms=int((time.monotonic() - started) * 1000), passed=False, failure=_printable(why),
        package_signature=signature,
    )


def _private_copy(archive: Path, folder: Path) -> tuple[Path, str]:
    """Copy ``archive`` into a new file of this job's own in ``folder``; return it and the digest of what was copied.

    The copy keeps the artifact's name as its ending, which is what tells the
    archive installer a zip from a tar.gz (and what some installers require).
    """
    folder.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".install-", suffix=f"-{archive.name}", dir=folder)
    copy = Path(name)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as sink, archive.open("rb") as source:
            while chunk := source.read(1 << 20):
                digest.update(chunk)
                sink.write(chunk)
    except BaseException:
        copy.unlink(missing_ok=True)
        raise
    return copy, digest.hexdigest()


def install(*, archive: Path, build: BuildRecord, prefix: Path, kind: InstallerKind, executable: str,
            signatures: SignatureRequirement | None = None, grant: PrefixGrant | None = None) -> InstallRecord:
    return install_expected(archive=archive, sha256=build.artifact.sha256, prefix=prefix, kind=kind,
                            executable=executable, whose="the build's", signatures=signatures, grant=grant)


def install_expected(*, archive: Path, sha256: str, prefix: Path, kind: InstallerKind,
                     executable: str, whose: str, signatures: SignatureRequirement | None = None,
                     grant: PrefixGrant | None = None) -> InstallRecord:
    """Install ``archive`` only if its bytes have digest ``sha256`` (the build's, or an audited release's).

    ``signatures``: what the policy and the job ask of a package's own signature (``.pkg``, ``.msi``); the
    installer's check is recorded whatever it found, and refuses the install where the policy requires it.
    ``grant``: what the platform grants on the prefix once installed, as the app's own installer would
    (``prefix_grant``: Windows' AppContainer capability); a refused grant fails the install.
    """
    started = time.monotonic()
    try:
        copy, digest = _private_copy(archive, prefix.parent)
    except OSError as exc:
        return _failed(digest=_ZERO, kind=kind, executable=executable, started=started,
                       why=f"artifact {archive.name} cannot be read into the install folder: {exc.strerror or exc}")
    try:
        return _install_copy(copy, digest, expected=sha256, whose=whose, prefix=prefix, kind=kind,
                             executable=executable, started=started,
                             signatures=signatures or SignatureRequirement(), grant=grant)
    finally:
        copy.unlink(missing_ok=True)


def _install_copy(copy: Path, digest: str, *, expected: str, whose: str, prefix: Path, kind: InstallerKind,
                  executable: str, started: float, signatures: SignatureRequirement,
                  grant: PrefixGrant | None = None) -> InstallRecord:
    # Fresh installers for this install: a signature checker keeps what it found, and a refused install records it.
    installers = installers_for(signatures)

    def failed(why: str) -> InstallRecord:
        return _failed(digest=digest, kind=kind, executable=executable, started=started, why=why,
                       signature=signature_checked(installers.get(kind)))

    # The bytes installed must be the bytes built and signed (or the audited previous release's).
    if digest != expected:
        return failed(f"artifact digest {digest[:16]} differs from {whose} {expected[:16]}")
    try:
        method = install_with(kind, copy, prefix, installers=installers)
        if grant is not None:
            grant(prefix)
        entries = tree_manifest(prefix)
        exe = prefix / executable
        if not exe.is_file() or exe.is_symlink():
            return failed(f"installed executable {executable} is missing")
        exe_digest = file_sha256(exe)
    except QualificationError as exc:
        return failed(exc.message)
    except ValidationError as exc:
        # unpack refuses every name a manifest cannot hold; should one land all the same, say so, don't crash.
        return failed(f"the installed files cannot be recorded in a manifest ({exc.error_count()} invalid entries)")
    except OSError as exc:
        return failed(f"the installed files cannot be read back: {exc}")
    return InstallRecord(
        artifact_sha256=digest,
        method=method,
        file_count=len(entries),
        total_bytes=sum(e.size for e in entries),
        manifest_sha256=manifest_sha256(entries),
        executable=executable,
        executable_sha256=exe_digest,
        duration_ms=int((time.monotonic() - started) * 1000),
        passed=True,
        package_signature=signature_checked(installers.get(kind)),
    )
