"""The local trust mode's signer and verifier: what they sign, whom they name, and how they refuse.

``LocalSigner`` refuses a key the policy's keyring does not trust for its role, and signs artifact digests with a
detached Ed25519 signature that ``KeyringVerifier`` accepts; the verifier names the keyring key that signed, keeps the
SHA-256 of the evidence file as received, and refuses a non-keyring signer for a platform by its exact code and a
message naming that platform. Written for the mutants of ``qualify_trust._local`` that survived the suite
(docs/mutation.md).
"""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_trust._envelope import verify_artifact_digest
from desktop_qualify.qualify_trust._interfaces import SignerIdentity
from desktop_qualify.qualify_trust._keyring import Keyring, TrustedKey
from desktop_qualify.qualify_trust._keys import keyid_of
from desktop_qualify.qualify_trust._local import KeyringVerifier, LocalSigner

DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


def _keyring(*entries: tuple[str, Ed25519PrivateKey, frozenset[str]]) -> Keyring:
    keys: dict[str, TrustedKey] = {}
    for name, key, roles in entries:
        keyid = keyid_of(key.public_key())
        keys[keyid] = TrustedKey(keyid, name, key.public_key(), roles)
    return Keyring(keys)


def test_a_signer_whose_key_is_not_in_the_keyring_is_refused_with_a_message_naming_the_role() -> None:
    key = Ed25519PrivateKey.generate()
    with pytest.raises(QualificationError) as caught:
        LocalSigner(key, _keyring(), "aggregate")
    assert caught.value.code is Code.KEY_INVALID
    assert "aggregate signing key is not in the policy's keyring" in caught.value.message
    assert "for role 'aggregate'" in caught.value.message


def test_a_signer_whose_key_lacks_the_role_is_refused_with_a_message_naming_the_role() -> None:
    key = Ed25519PrivateKey.generate()
    with pytest.raises(QualificationError) as caught:
        LocalSigner(key, _keyring(("local-platform", key, frozenset({"platform"}))), "verifier")
    assert caught.value.code is Code.KEY_INVALID
    assert "the verifier signing key is not in the policy's keyring for role 'verifier'" in caught.value.message


def test_an_artifact_digest_signed_locally_is_a_detached_ed25519_signature_by_the_signers_key() -> None:
    key = Ed25519PrivateKey.generate()
    ring = _keyring(("local-platform", key, frozenset({"platform"})))
    signature = LocalSigner(key, ring, "platform").sign_artifact_digest("app-linux.tar.gz", DIGEST)
    assert signature.method == "ed25519-detached"
    assert signature.keyid == keyid_of(key.public_key())
    assert verify_artifact_digest(DIGEST, signature.signature, ring, signature.keyid)
    assert not verify_artifact_digest("0" * 64, signature.signature, ring, signature.keyid)
    assert len(base64.b64decode(signature.signature, validate=True)) == 64


def test_an_artifact_signed_locally_verifies_as_the_keyring_key_that_signed_it() -> None:
    key = Ed25519PrivateKey.generate()
    ring = _keyring(("local-platform", key, frozenset({"platform"})))
    signature = LocalSigner(key, ring, "platform").sign_artifact_digest("app-linux.tar.gz", DIGEST)
    signer = KeyringVerifier(ring).verify_artifact_signature(DIGEST, signature)
    assert signer == SignerIdentity("ed25519", "local-platform", keyid_of(key.public_key()))


def test_a_verified_statement_keeps_the_sha256_of_the_evidence_file_as_received() -> None:
    key = Ed25519PrivateKey.generate()
    ring = _keyring(("local-platform", key, frozenset({"platform"})))
    payload = b'{"_type":"https://in-toto.io/Statement/v1"}'
    data = LocalSigner(key, ring, "platform").sign_statement(payload)
    verified = KeyringVerifier(ring).verify_statement(data, role="platform", what="statement-linux.dsse.json")
    assert verified.payload == payload
    assert verified.envelope_sha256 == hashlib.sha256(data).hexdigest()
    assert verified.signer == SignerIdentity("ed25519", "local-platform", keyid_of(key.public_key()))


def test_a_keyring_key_speaks_for_any_platform() -> None:
    verifier = KeyringVerifier(_keyring())
    verifier.check_speaks_for(SignerIdentity("ed25519", "local-platform", "ab" * 32), "windows")


def test_a_statement_not_signed_by_a_keyring_key_is_refused_naming_the_platform() -> None:
    verifier = KeyringVerifier(_keyring())
    signer = SignerIdentity("sigstore", "https://github.com/o/r/.github/workflows/w.yml@refs/heads/main", "cd" * 32)
    with pytest.raises(QualificationError) as caught:
        verifier.check_speaks_for(signer, "macos")
    assert caught.value.code is Code.SIGNER_UNTRUSTED
    assert caught.value.message == "a macos statement not signed by a keyring key"
