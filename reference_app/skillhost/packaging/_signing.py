"""Ed25519 keys, skill lock/signature files and the trust store."""
# The trust store loader maps every malformation to one error code.
# ruff: noqa: TRY301

import base64
import binascii
import contextlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Self, TypedDict

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from skillhost._canon import canonical_bytes, sha256_hex
from skillhost._errors import SkillError

LOCK_NAME = ".skill-lock.json"
SIG_NAME = ".skill-signature.json"
MAX_META_BYTES = 64 * 1024


class LockEntry(TypedDict):
    path: str
    sha256: str
    size: int


class Lock(TypedDict):
    """``.skill-lock.json``: every package file but the lock and signature, sorted by path."""

    version: int
    skill_id: str
    files: list[LockEntry]


class SignatureDoc(TypedDict):
    """``.skill-signature.json``: an Ed25519 signature over the canonical lock bytes."""

    version: int
    keyid: str
    sig: str


def raw_public(pub: Ed25519PublicKey) -> bytes:
    return pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def keyid_of(pub: Ed25519PublicKey) -> str:
    return sha256_hex(raw_public(pub))


def new_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def private_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def write_private_key(path: str | os.PathLike[str], key: Ed25519PrivateKey) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    fd = os.open(str(path), flags, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(private_pem(key))
    with contextlib.suppress(OSError):
        Path(path).chmod(0o600)


def load_private_key(path: str | os.PathLike[str]) -> Ed25519PrivateKey:
    with Path(path).open("rb") as fh:
        data = fh.read(16 * 1024)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise SkillError("CC_SKILL_KEY_INVALID", "not an unencrypted PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SkillError("CC_SKILL_KEY_INVALID", "not an Ed25519 key")
    return key


def sign_lock(key: Ed25519PrivateKey, lock: Lock) -> SignatureDoc:
    sig = key.sign(canonical_bytes(lock))
    return {"version": 1, "keyid": keyid_of(key.public_key()), "sig": base64.b64encode(sig).decode("ascii")}


class TrustStore:
    """keyid -> public key. File format: {"version":1,"keys":[{"keyid","public_key": base64 raw}]}."""

    def __init__(self, keys: Mapping[str, Ed25519PublicKey] | None = None) -> None:
        self._keys = dict(keys or {})

    @classmethod
    def from_public_keys(cls, pubs: Iterable[Ed25519PublicKey]) -> Self:
        return cls({keyid_of(p): p for p in pubs})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Self:
        try:
            with Path(path).open("rb") as fh:
                raw = fh.read(MAX_META_BYTES + 1)
            if len(raw) > MAX_META_BYTES:
                raise ValueError("too large")
            doc = json.loads(raw.decode("utf-8"))
            if doc.get("version") != 1 or not isinstance(doc.get("keys"), list):
                raise ValueError("shape")
            keys: dict[str, Ed25519PublicKey] = {}
            for item in doc["keys"]:
                pub = Ed25519PublicKey.from_public_bytes(base64.b64decode(item["public_key"], validate=True))
                if keyid_of(pub) != item["keyid"]:
                    raise ValueError("keyid mismatch")
                keys[item["keyid"]] = pub
        except (OSError, ValueError, KeyError, TypeError, AttributeError, binascii.Error):
            raise SkillError("CC_SKILL_TRUST_STORE_INVALID", "trust store unreadable or malformed") from None
        return cls(keys)

    def dump(self) -> bytes:
        keys = [
            {"keyid": k, "public_key": base64.b64encode(raw_public(p)).decode("ascii")}
            for k, p in sorted(self._keys.items())
        ]
        return canonical_bytes({"version": 1, "keys": keys})

    def get(self, keyid: str) -> Ed25519PublicKey | None:
        return self._keys.get(keyid)


def verify_signature(lock: Lock, sig_doc: object, trust: TrustStore) -> str:
    """Return the signer keyid or raise SIGNATURE_INVALID / SIGNER_UNKNOWN. ``sig_doc`` is untrusted JSON."""
    keyid = sig_doc.get("keyid") if isinstance(sig_doc, dict) else None
    sig_b64 = sig_doc.get("sig") if isinstance(sig_doc, dict) else None
    if (
        not isinstance(sig_doc, dict)
        or sig_doc.get("version") != 1
        or not isinstance(keyid, str)
        or not isinstance(sig_b64, str)
    ):
        raise SkillError("CC_SKILL_SIGNATURE_INVALID", "signature file has the wrong shape")
    pub = trust.get(keyid)
    if pub is None:
        raise SkillError("CC_SKILL_SIGNER_UNKNOWN", f"signer {keyid[:16]}... is not trusted")
    try:
        sig = base64.b64decode(sig_b64, validate=True)
        pub.verify(sig, canonical_bytes(lock))
    except (InvalidSignature, binascii.Error, ValueError):
        raise SkillError("CC_SKILL_SIGNATURE_INVALID", "signature does not verify over the lock") from None
    return keyid
