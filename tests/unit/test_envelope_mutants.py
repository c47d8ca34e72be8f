"""DSSE envelopes and detached artifact signatures in local trust mode: the refusals an auditor reads, exactly.

A payload whose base64 only a lenient decoder accepts is refused as invalid, not verified; untrusted signers are
named by the first 16 hex digits of each key id; an envelope signed twice, even by two trusted keys, is refused
naming the count; a detached artifact signature with characters outside base64 does not verify. Keys are fixed
seeds and the keyring is built in memory, so every test is fast and deterministic. Written for the mutants of
``qualify_trust._envelope`` that survived the suite (docs/mutation.md).
"""

from __future__ import annotations

import base64
import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from desktop_qualify.evidence_schemas import IN_TOTO_PAYLOAD_TYPE, Code, QualificationError
from desktop_qualify.qualify_trust._dsse import pae
from desktop_qualify.qualify_trust._envelope import (
    sign_artifact_digest,
    sign_envelope,
    verify_artifact_digest,
    verify_envelope,
)
from desktop_qualify.qualify_trust._keyring import Keyring, TrustedKey
from desktop_qualify.qualify_trust._keys import keyid_of

DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
WHAT = "platform-linux.dsse.json"


def _key(seed: int) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32)


def _trusted(key: Ed25519PrivateKey, name: str, *roles: str) -> TrustedKey:
    public = key.public_key()
    return TrustedKey(keyid=keyid_of(public), name=name, public_key=public, roles=frozenset(roles))


def _keyring(*entries: TrustedKey) -> Keyring:
    return Keyring(keys={entry.keyid: entry for entry in entries})


def _signature(key: Ed25519PrivateKey, payload: bytes) -> dict[str, str]:
    sig = key.sign(pae(IN_TOTO_PAYLOAD_TYPE, payload))
    return {"keyid": keyid_of(key.public_key()), "sig": base64.b64encode(sig).decode("ascii")}


def _envelope(payload_b64: str, signatures: list[dict[str, str]]) -> bytes:
    return json.dumps({"payloadType": IN_TOTO_PAYLOAD_TYPE, "payload": payload_b64,
                       "signatures": signatures}).encode("utf-8")


def _refusal(data: bytes, keyring: Keyring) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        verify_envelope(data, keyring, role="platform", what=WHAT)
    return caught.value


def test_a_signed_envelope_verifies_to_its_exact_payload_and_signer() -> None:
    key = _key(1)
    data = sign_envelope(b'{"statement": 1}', key)
    verified = verify_envelope(data, _keyring(_trusted(key, "local-platform", "platform")), role="platform",
                               what=WHAT)
    assert (verified.payload, verified.signer_name, verified.keyid) == (
        b'{"statement": 1}', "local-platform", keyid_of(key.public_key()))


@pytest.mark.parametrize("payload_b64", ["QUI==", "=="])
def test_a_payload_only_a_lenient_base64_decoder_accepts_is_refused_as_invalid(payload_b64: str) -> None:
    # "QUI==" carries padding after the quad is complete and "==" is padding alone: the schema's alphabet
    # pattern lets both through, a lenient decoder reads them as b"AB" and b"", and the signature here is
    # valid over exactly those bytes, so only strict decoding stands between them and a verified payload.
    key = _key(1)
    lenient = base64.b64decode(payload_b64, validate=False)
    data = _envelope(payload_b64, [_signature(key, lenient)])
    refusal = _refusal(data, _keyring(_trusted(key, "local-platform", "platform")))
    assert refusal.code == Code.SCHEMA_INVALID
    assert refusal.message == f"{WHAT}: payload is not valid base64"


def test_every_untrusted_signer_is_named_by_the_first_16_hex_digits_of_its_key_id() -> None:
    unknown, wrong_role = _key(2), _key(3)
    keyring = _keyring(_trusted(wrong_role, "local-aggregate", "aggregate"))
    data = _envelope(base64.b64encode(b"{}").decode("ascii"),
                     [_signature(unknown, b"{}"), _signature(wrong_role, b"{}")])
    refusal = _refusal(data, keyring)
    first, second = keyid_of(unknown.public_key()), keyid_of(wrong_role.public_key())
    assert refusal.code == Code.SIGNER_UNTRUSTED
    assert refusal.message == (f"{WHAT}: signed by key(s) {first[:16]}, {second[:16]} that the policy's keyring "
                               "does not trust for 'platform'")
    assert first[:17] not in refusal.message
    assert second[:17] not in refusal.message


def test_two_valid_signatures_by_trusted_keys_are_refused_naming_the_count() -> None:
    one, two = _key(4), _key(5)
    keyring = _keyring(_trusted(one, "job-a", "platform"), _trusted(two, "job-b", "platform"))
    data = _envelope(base64.b64encode(b"{}").decode("ascii"), [_signature(one, b"{}"), _signature(two, b"{}")])
    refusal = _refusal(data, keyring)
    assert refusal.code == Code.SIGNER_UNTRUSTED
    assert refusal.message == f"{WHAT}: 2 signatures; a platform statement is signed by exactly one job key"


def test_a_detached_artifact_signature_verifies_under_a_platform_key() -> None:
    key = _key(6)
    keyring = _keyring(_trusted(key, "local-platform", "platform"))
    assert verify_artifact_digest(DIGEST, sign_artifact_digest(DIGEST, key), keyring, keyid_of(key.public_key()))


@pytest.mark.parametrize("junk", ["!", "\n", " ", "*"])
def test_a_detached_artifact_signature_with_characters_outside_base64_does_not_verify(junk: str) -> None:
    # A lenient decoder drops the stray character and would verify the signature underneath.
    key = _key(6)
    keyring = _keyring(_trusted(key, "local-platform", "platform"))
    signature = sign_artifact_digest(DIGEST, key)
    tampered = signature[:10] + junk + signature[10:]
    assert base64.b64decode(tampered, validate=False) == base64.b64decode(signature)
    assert verify_artifact_digest(DIGEST, tampered, keyring, keyid_of(key.public_key())) is False
