"""Digests of files and folders, streamed: an artifact is never read whole into memory."""

from __future__ import annotations

import hashlib
from pathlib import Path

from evidence_schemas import InstalledFile, canonical_bytes, sha256_hex


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def tree_manifest(root: Path) -> list[InstalledFile]:
    """Every regular file under ``root``, sorted by POSIX path, with size and digest."""
    entries = []
    for path in sorted(root.rglob("*"), key=lambda p: p.relative_to(root).as_posix()):
        if path.is_file() and not path.is_symlink():
            entries.append(
                InstalledFile(path=path.relative_to(root).as_posix(), size=path.stat().st_size,
                              sha256=file_sha256(path))
            )
    return entries


def manifest_sha256(entries: list[InstalledFile]) -> str:
    """Digest of a manifest: RFC 8785 bytes of its entries, so any verifier can recompute it."""
    return sha256_hex(canonical_bytes([entry.model_dump(mode="json") for entry in entries]))
