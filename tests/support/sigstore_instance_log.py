"""Rekor (v1) stand-in: an in-memory RFC 6962 Merkle log with signed checkpoints.

Each appended entry gets what sigstore-python 4.5.1 demands of a v0.3 bundle's
tlog entry (`sigstore.models.TransparencyLogEntry._verify`):

1. an inclusion proof (RFC 6962 section 2.1.1 audit path, lowest level first)
   whose recomputed root equals `rootHash`;
2. a checkpoint, a signed note (`origin\\nsize\\nroot_b64\\n`, a blank line and
   `\u2014 NAME base64(keyhint || signature)`) where keyhint is the first four
   bytes of the log id and the signature is ECDSA-SHA256 over the note text;
3. an inclusion promise (signed entry timestamp): ECDSA-SHA256 over the RFC
   8785 form of {body, integratedTime, logID (hex), logIndex}. It is also what
   makes `integratedTime` a verified time source for Rekor v1 entries.

The log id is SHA-256 of the log key's DER SubjectPublicKeyInfo.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from datetime import datetime

import rfc8785
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from .sigstore_instance_x509 import spki_sha256

__all__ = ["TestRekor", "inclusion_path", "merkle_root"]

_FILLER_ENTRIES = 5  # entries before the first real one, so proofs are not trivial


def _leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def _node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(size: int) -> int:
    # RFC 6962 section 2.1: k is the largest power of two smaller than n.
    return 1 << ((size - 1).bit_length() - 1)


def merkle_root(leaves: list[bytes]) -> bytes:
    """RFC 6962 Merkle Tree Hash of `leaves`."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return _leaf_hash(leaves[0])
    k = _split(len(leaves))
    return _node_hash(merkle_root(leaves[:k]), merkle_root(leaves[k:]))


def inclusion_path(index: int, leaves: list[bytes]) -> list[bytes]:
    """RFC 6962 audit path PATH(index, leaves), lowest level first."""
    if len(leaves) <= 1:
        return []
    k = _split(len(leaves))
    if index < k:
        return [*inclusion_path(index, leaves[:k]), merkle_root(leaves[k:])]
    return [*inclusion_path(index - k, leaves[k:]), merkle_root(leaves[:k])]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class TestRekor:
    """A transparency log that integrates entries synchronously."""

    __test__ = False  # a helper, not a pytest test class

    def __init__(self, *, hostname: str, valid_from: datetime) -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        self.hostname = hostname
        self.base_url = f"https://{hostname}"
        self.valid_from = valid_from
        # Rekor v1 origins read "HOST - TREE_ID".
        self.origin = f"{hostname} - {secrets.randbelow(2**63)}"
        self._leaves: list[bytes] = [
            rfc8785.dumps({"filler": i, "nonce": secrets.token_hex(8)}) for i in range(_FILLER_ENTRIES)
        ]

    @property
    def public_key(self) -> ec.EllipticCurvePublicKey:
        return self._key.public_key()

    @property
    def log_id(self) -> bytes:
        return spki_sha256(self.public_key)

    def _sign(self, data: bytes) -> bytes:
        return self._key.sign(data, ec.ECDSA(hashes.SHA256()))

    def _checkpoint(self, size: int, root: bytes) -> str:
        note = f"{self.origin}\n{size}\n{_b64(root)}\n"
        signature = self.log_id[:4] + self._sign(note.encode("utf-8"))
        return f"{note}\n\u2014 {self.hostname} {_b64(signature)}\n"

    def append(self, body: bytes, *, kind: str, integrated_time: int) -> dict[str, object]:
        """Integrate `body` (canonical entry JSON); return the protobuf-JSON TransparencyLogEntry."""
        index = len(self._leaves)
        self._leaves.append(body)
        size = index + 1
        root = merkle_root(self._leaves)
        promise = rfc8785.dumps(
            {"body": _b64(body), "integratedTime": integrated_time, "logID": self.log_id.hex(), "logIndex": index}
        )
        # protobuf JSON renders int64 as strings.
        return {
            "logIndex": str(index),
            "logId": {"keyId": _b64(self.log_id)},
            "kindVersion": {"kind": kind, "version": "0.0.1"},
            "integratedTime": str(integrated_time),
            "inclusionPromise": {"signedEntryTimestamp": _b64(self._sign(promise))},
            "inclusionProof": {
                "logIndex": str(index),
                "rootHash": _b64(root),
                "treeSize": str(size),
                "hashes": [_b64(h) for h in inclusion_path(index, self._leaves)],
                "checkpoint": {"envelope": self._checkpoint(size, root)},
            },
            "canonicalizedBody": _b64(body),
        }
