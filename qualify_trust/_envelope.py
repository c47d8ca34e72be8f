"""Signing and verifying DSSE envelopes with Ed25519 (local trust mode).

Verification order: parse the envelope under its bounds; decode the payload;
find a signature whose key id the keyring trusts for the required role; verify
it over PAE(payloadType, payload). The caller gets back the exact payload
bytes that were verified, never a re-serialisation.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from desktop_qualify.evidence_schemas import (
    IN_TOTO_PAYLOAD_TYPE,
    Code,
    QualificationError,
    canonical_bytes,
    parse_envelope,
)

from ._dsse import pae
from ._keyring import Keyring, Role
from ._keys import keyid_of

ARTIFACT_DIGEST_TYPE = "application/vnd.desktop-qualify.artifact-sha256"


@dataclass(frozen=True)
class VerifiedPayload:
    payload: bytes
    keyid: str
    signer_name: str
    envelope_sha256: str


def sign_envelope(payload: bytes, key: Ed25519PrivateKey) -> bytes:
    """Envelope bytes (RFC 8785) carrying ``payload`` signed by ``key``."""
    signature = key.sign(pae(IN_TOTO_PAYLOAD_TYPE, payload))
    envelope = {
        "payloadType": IN_TOTO_PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode("ascii"),
        "signatures": [{"keyid": keyid_of(key.public_key()), "sig": base64.b64encode(signature).decode("ascii")}],
    }
    return canonical_bytes(envelope)


def verify_envelope(data: bytes, keyring: Keyring, *, role: Role, what: str) -> VerifiedPayload:
    envelope = parse_envelope(data, what=what)
    try:
        payload = base64.b64decode(envelope.payload, validate=True)
    except binascii.Error as exc:
        raise QualificationError(Code.SCHEMA_INVALID, f"{what}: payload is not valid base64") from exc
    message = pae(envelope.payloadType, payload)
    # One job signs one statement with its one key: a second signature, even a valid one by another
    # trusted key, would let the signer identity be chosen by whoever reads the envelope, so every
    # signature is checked and the envelope must carry exactly one by a key trusted for the role.
    keyids = [signature.keyid for signature in envelope.signatures]
    if len(set(keyids)) != len(keyids):
        raise QualificationError(Code.SCHEMA_INVALID, f"{what}: a signature is listed twice")
    signers = [(signature, keyring.lookup(signature.keyid)) for signature in envelope.signatures]
    untrusted = [signature.keyid[:16] for signature, found in signers if found is None or role not in found.roles]
    if untrusted:
        raise QualificationError(
            Code.SIGNER_UNTRUSTED,
            f"{what}: signed by key(s) {', '.join(untrusted)} that the policy's keyring does not trust for {role!r}",
        )
    if len(signers) != 1:
        raise QualificationError(Code.SIGNER_UNTRUSTED, f"{what}: {len(signers)} signatures; a {role} statement "
                                                        "is signed by exactly one job key")
    signature, trusted = signers[0]
    if trusted is None:  # unreachable: an unknown key id is refused above; kept for the type checker
        raise QualificationError(Code.SIGNER_UNTRUSTED, f"{what}: unknown signer")
    try:
        raw = base64.b64decode(signature.sig, validate=True)
        trusted.public_key.verify(raw, message)
    except (binascii.Error, InvalidSignature) as exc:
        # A trusted key id with a bad signature is forgery or damage, not an unknown signer.
        raise QualificationError(
            Code.SIGNATURE_INVALID, f"{what}: signature by key {trusted.name!r} does not verify"
        ) from exc
    return VerifiedPayload(payload, trusted.keyid, trusted.name, hashlib.sha256(data).hexdigest())


def sign_artifact_digest(sha256_hex: str, key: Ed25519PrivateKey) -> str:
    """Detached signature over an artifact's SHA-256, domain-separated by PAE."""
    return base64.b64encode(key.sign(pae(ARTIFACT_DIGEST_TYPE, sha256_hex.encode("ascii")))).decode("ascii")


def verify_artifact_digest(sha256_hex: str, signature_b64: str, keyring: Keyring, keyid: str) -> bool:
    trusted = keyring.lookup(keyid)
    if trusted is None or "platform" not in trusted.roles:
        return False
    try:
        trusted.public_key.verify(
            base64.b64decode(signature_b64, validate=True), pae(ARTIFACT_DIGEST_TYPE, sha256_hex.encode("ascii"))
        )
    except (binascii.Error, InvalidSignature):
        return False
    return True
