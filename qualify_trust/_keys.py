"""Ed25519 keys: generation, key ids, and private key files that never leave the machine."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from desktop_qualify.evidence_schemas import Code, QualificationError, read_bounded

_MAX_KEY_FILE = 16 * 1024


def raw_public_bytes(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def keyid_of(public_key: Ed25519PublicKey) -> str:
    """Key id = SHA-256 of the raw 32-byte public key: derived, never chosen."""
    return hashlib.sha256(raw_public_bytes(public_key)).hexdigest()


def generate_private_key(path: Path) -> Ed25519PrivateKey:
    """Create a new key at ``path`` (mode 0600); an existing key file is refused, not replaced."""
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    try:
        # Its own step: a parent that is a file raises FileExistsError here, which is no existing key.
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise QualificationError(Code.KEY_INVALID, f"{path}: cannot create the key ({exc.strerror})") from exc
    try:
        # O_EXCL: an existing key is never replaced, even by a concurrent keygen.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    except FileExistsError as exc:
        raise QualificationError(Code.KEY_INVALID, f"{path}: a key already exists; refusing to overwrite it") from exc
    except OSError as exc:
        raise QualificationError(Code.KEY_INVALID, f"{path}: cannot create the key ({exc.strerror})") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(pem)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise QualificationError(Code.KEY_INVALID, f"{path}: cannot write the key ({exc.strerror})") from exc
    return key


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """The Ed25519 private key in the PEM file at ``path``; anything else is QE_KEY_INVALID."""
    try:
        data = read_bounded(path, max_bytes=_MAX_KEY_FILE, what=str(path))
    except QualificationError as exc:
        raise QualificationError(Code.KEY_INVALID, exc.message,
                                 hint="run 'qualify keygen --policy FILE' to create local keys") from exc
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise QualificationError(Code.KEY_INVALID, f"{path}: not an unencrypted PEM private key") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise QualificationError(Code.KEY_INVALID, f"{path}: not an Ed25519 key")
    return key
