"""The install stage: re-hash the archive, unpack it into a fresh prefix, record what landed."""

from __future__ import annotations

import time
from pathlib import Path

from evidence_schemas import BuildRecord, InstallRecord, QualificationError, file_sha256

from ._archive import unpack
from ._hashing import manifest_sha256, tree_manifest

_ZERO = "0" * 64


def install(*, archive: Path, build: BuildRecord, prefix: Path, executable: str) -> InstallRecord:
    started = time.monotonic()
    digest = file_sha256(archive)

    def failed(why: str) -> InstallRecord:
        return InstallRecord(
            artifact_sha256=digest, method="unpack", file_count=0, total_bytes=0, manifest_sha256=_ZERO,
            executable=executable, executable_sha256=_ZERO,
            duration_ms=int((time.monotonic() - started) * 1000), passed=False, failure=why[:2000],
        )

    # The bytes installed must be the bytes built and signed.
    if digest != build.artifact.sha256:
        return failed(f"archive digest {digest[:16]} differs from the build's {build.artifact.sha256[:16]}")
    try:
        unpack(archive, prefix)
    except QualificationError as exc:
        return failed(exc.message)
    entries = tree_manifest(prefix)
    exe = prefix / executable
    if not exe.is_file() or exe.is_symlink():
        return failed(f"installed executable {executable} is missing")
    return InstallRecord(
        artifact_sha256=digest,
        method="unpack",
        file_count=len(entries),
        total_bytes=sum(e.size for e in entries),
        manifest_sha256=manifest_sha256(entries),
        executable=executable,
        executable_sha256=file_sha256(exe),
        duration_ms=int((time.monotonic() - started) * 1000),
        passed=True,
    )
