"""A rebuild attestation checked against the key it carries: each refusal by its exact code and message.

``verify_rebuild_attestation`` is what ``qualify audit --rebuild`` trusts to say who rebuilt what. The attestation is
its maker's claim: these tests hand it a payload that is not base64, not JSON, not a rebuild statement, a carried key
that is not an Ed25519 key, a second signature beside the right one, a signature by another key and a signature that
does not verify, and hold each to its code and to a message that names the file. Written for the mutants of
``qualify_trust._self_signed`` that survived the suite (docs/mutation.md).
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_trust import verify_rebuild_attestation
from desktop_qualify.qualify_trust._keys import keyid_of
from desktop_qualify.qualify_trust._self_signed import public_key_text, sign_self_signed

WHAT = "rebuild-linux.dsse.json"
ARTIFACT = b"the qualified artifact\n"


def _statement(key: Ed25519PrivateKey, **predicate: Any) -> dict[str, Any]:
    digest = hashlib.sha256(ARTIFACT).hexdigest()
    return {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "app-linux.tar.gz", "digest": {"sha256": digest}}],
        "predicateType": "https://desktop-qualify.invalid/evidence/rebuild/v1",
        "predicate": {
            "version": 1, "commit": "3b18e512dba79e4c8300dd08aeb37f8e728b8dad", "platform": "linux",
            "run_id": "local-1", "attempt": 1,
            "artifact": {"name": "app-linux.tar.gz", "size": len(ARTIFACT), "sha256": digest},
            "expected_sha256": digest, "rebuilt_sha256": digest, "rebuilt_size": len(ARTIFACT),
            "source_digest": "ab" * 32, "matches": True, "first_difference": None, "tools": {"python": "3.11"},
            "rebuilt_at": "2026-12-06T00:00:00Z", "rebuilder_public_key": public_key_text(key), **predicate},
    }


def _signed(key: Ed25519PrivateKey, statement: dict[str, Any]) -> bytes:
    return sign_self_signed(json.dumps(statement).encode(), key)


def _refused(data: bytes) -> tuple[Code, str]:
    with pytest.raises(QualificationError) as caught:
        verify_rebuild_attestation(data, what=WHAT)
    return caught.value.code, caught.value.message


def _envelope(data: bytes) -> dict[str, Any]:
    envelope: dict[str, Any] = json.loads(data)
    return envelope


def test_an_attestation_signed_by_the_key_it_carries_verifies_and_names_that_key() -> None:
    key = Ed25519PrivateKey.generate()
    statement, keyid = verify_rebuild_attestation(_signed(key, _statement(key)), what=WHAT)
    assert keyid == keyid_of(key.public_key())
    assert statement.predicate.rebuilder_public_key == public_key_text(key)
    assert base64.b64decode(public_key_text(key)) == key.public_key().public_bytes_raw()


def test_a_payload_that_is_not_base64_is_a_schema_refusal() -> None:
    key = Ed25519PrivateKey.generate()
    envelope = _envelope(_signed(key, _statement(key)))
    envelope["payload"] = "abcde"  # base64's alphabet, but one character past a whole group
    assert _refused(json.dumps(envelope).encode()) == (Code.SCHEMA_INVALID, f"{WHAT}: payload is not valid base64")


def test_a_payload_that_is_not_json_is_named_by_the_file() -> None:
    key = Ed25519PrivateKey.generate()
    code, message = _refused(sign_self_signed(b"not json", key))
    assert message.startswith(f"{WHAT}: ")
    assert code is Code.JSON_MALFORMED


def test_a_payload_that_is_not_a_rebuild_statement_is_named_by_the_file() -> None:
    key = Ed25519PrivateKey.generate()
    code, message = _refused(_signed(key, _statement(key, attempt=0)))
    assert message.startswith(f"{WHAT}: ")
    assert code is Code.SCHEMA_INVALID


def test_a_carried_key_that_is_not_an_ed25519_key_is_a_key_refusal() -> None:
    key = Ed25519PrivateKey.generate()
    assert _refused(_signed(key, _statement(key, rebuilder_public_key="A" * 44))) == (
        Code.KEY_INVALID, f"{WHAT}: the rebuilder's public key is not an Ed25519 key")


def test_a_second_signature_beside_the_carried_key_s_is_refused() -> None:
    key = Ed25519PrivateKey.generate()
    envelope = _envelope(_signed(key, _statement(key)))
    envelope["signatures"].append(dict(envelope["signatures"][0]))
    assert _refused(json.dumps(envelope).encode()) == (
        Code.SIGNER_UNTRUSTED, f"{WHAT}: not signed by exactly the key it carries")


def test_a_signature_by_another_key_than_the_one_carried_is_refused() -> None:
    carried, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    assert _refused(_signed(other, _statement(carried))) == (
        Code.SIGNER_UNTRUSTED, f"{WHAT}: not signed by exactly the key it carries")


def test_a_signature_that_does_not_verify_is_refused() -> None:
    key = Ed25519PrivateKey.generate()
    envelope = _envelope(_signed(key, _statement(key)))
    envelope["signatures"][0]["sig"] = base64.b64encode(b"\0" * 64).decode()
    assert _refused(json.dumps(envelope).encode()) == (Code.SIGNATURE_INVALID, f"{WHAT}: the signature does not verify")
