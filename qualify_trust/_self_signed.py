"""Statements signed by a key they carry themselves: the rebuild attestation of ``qualify rebuild``.

Such a statement proves who signed it (the key id derived from the carried key)
and that its bytes did not change since; it does not make the key trusted. The
signature is verified over the exact payload bytes, as every envelope here.
"""

from __future__ import annotations

import base64
import binascii

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from desktop_qualify.evidence_schemas import (
    Code,
    QualificationError,
    RebuildStatement,
    load_json,
    parse_envelope,
    validate_model,
)

from ._dsse import pae
from ._envelope import sign_envelope
from ._keys import keyid_of, raw_public_bytes


def public_key_text(key: Ed25519PrivateKey) -> str:
    """The raw public key, base64: what a self-signed statement carries."""
    return base64.b64encode(raw_public_bytes(key.public_key())).decode("ascii")


def sign_self_signed(payload: bytes, key: Ed25519PrivateKey) -> bytes:
    """A DSSE envelope of ``payload`` signed by ``key`` (the statement must carry ``public_key_text(key)``)."""
    return sign_envelope(payload, key)


def verify_rebuild_attestation(data: bytes, *, what: str) -> tuple[RebuildStatement, str]:
    """The attestation's statement and its signer's key id, once its signature verifies with the key it carries."""
    envelope = parse_envelope(data, what=what)
    try:
        payload = base64.b64decode(envelope.payload, validate=True)
    except binascii.Error as exc:
        raise QualificationError(Code.SCHEMA_INVALID, f"{what}: payload is not valid base64") from exc
    statement = validate_model(RebuildStatement, load_json(payload, what=what), what=what)
    try:
        public = Ed25519PublicKey.from_public_bytes(base64.b64decode(statement.predicate.rebuilder_public_key))
    except (ValueError, binascii.Error) as exc:
        raise QualificationError(Code.KEY_INVALID, f"{what}: the rebuilder's public key is not an Ed25519 key") \
            from exc
    keyid = keyid_of(public)
    if len(envelope.signatures) != 1 or envelope.signatures[0].keyid != keyid:
        raise QualificationError(Code.SIGNER_UNTRUSTED, f"{what}: not signed by exactly the key it carries")
    try:
        public.verify(base64.b64decode(envelope.signatures[0].sig), pae(envelope.payloadType, payload))
    except (InvalidSignature, binascii.Error) as exc:
        raise QualificationError(Code.SIGNATURE_INVALID, f"{what}: the signature does not verify") from exc
    return statement, keyid
