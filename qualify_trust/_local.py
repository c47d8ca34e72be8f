"""Local trust mode: DSSE envelopes and detached digests signed with this machine's Ed25519 keys."""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from desktop_qualify.evidence_schemas import STATEMENT_SUFFIXES, Code, QualificationError

from ._envelope import sign_artifact_digest, sign_envelope, verify_artifact_digest, verify_envelope
from ._interfaces import (
    ArtifactSignature,
    SignerIdentity,
    StatementSigner,
    StatementVerifier,
    VerifiedStatement,
)
from ._keyring import Keyring, Role
from ._keys import keyid_of

LOCAL_SUFFIX = STATEMENT_SUFFIXES["ed25519"]


class LocalSigner(StatementSigner):
    file_suffix = LOCAL_SUFFIX

    def __init__(self, key: Ed25519PrivateKey, keyring: Keyring, role: Role) -> None:
        # Refuse early: a statement signed by a key the keyring does not trust
        # for this role would only be rejected downstream.
        trusted = keyring.lookup(keyid_of(key.public_key()))
        if trusted is None or role not in trusted.roles:
            raise QualificationError(Code.KEY_INVALID, f"the {role} signing key is not in the policy's keyring "
                                                       f"for role {role!r}")
        self._key = key

    def sign_statement(self, payload: bytes) -> bytes:
        return sign_envelope(payload, self._key)

    def sign_artifact_digest(self, name: str, sha256_hex: str) -> ArtifactSignature:
        return ArtifactSignature("ed25519-detached", keyid_of(self._key.public_key()),
                                 sign_artifact_digest(sha256_hex, self._key))


class KeyringVerifier(StatementVerifier):
    file_suffix = LOCAL_SUFFIX

    def __init__(self, keyring: Keyring) -> None:
        self._keyring = keyring

    def verify_statement(self, data: bytes, *, role: Role, what: str) -> VerifiedStatement:
        verified = verify_envelope(data, self._keyring, role=role, what=what)
        return VerifiedStatement(verified.payload, SignerIdentity("ed25519", verified.signer_name, verified.keyid),
                                 verified.envelope_sha256)

    def check_speaks_for(self, signer: SignerIdentity, platform: str) -> None:
        # A local chain runs on one machine: its keyring has a platform role, not one key per platform.
        # verify_statement has already checked that the key holds the platform role.
        if signer.kind != "ed25519":
            raise QualificationError(Code.SIGNER_UNTRUSTED, f"a {platform} statement not signed by a keyring key")

    def verify_artifact_signature(self, sha256_hex: str, signature: ArtifactSignature) -> SignerIdentity | None:
        if signature.method != "ed25519-detached" or not verify_artifact_digest(
                sha256_hex, signature.signature, self._keyring, signature.keyid):
            return None
        trusted = self._keyring.lookup(signature.keyid)
        return None if trusted is None else SignerIdentity("ed25519", trusted.name, trusted.keyid)
