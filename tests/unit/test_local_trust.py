"""DSSE PAE and the local Ed25519 layer: envelopes, detached artifact signatures, the keyring."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_trust import Keyring, Role, add_to_keyring, generate_private_key, load_private_key
from desktop_qualify.qualify_trust._dsse import pae
from desktop_qualify.qualify_trust._envelope import (
    sign_artifact_digest,
    sign_envelope,
    verify_artifact_digest,
    verify_envelope,
)
from desktop_qualify.qualify_trust._keys import keyid_of

DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


def test_pae_matches_the_dsse_spec_test_vector() -> None:
    # DSSE v1 protocol.md, "Test Vectors": PAE("http://example.com/HelloWorld", "hello world").
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


def test_pae_counts_bytes_not_characters() -> None:
    assert pae("t\u00e9", b"\x00\xff") == b"DSSEv1 3 t\xc3\xa9 2 \x00\xff"
    assert pae("", b"") == b"DSSEv1 0  0 "


@pytest.mark.parametrize("bundle", ["beacon_dsse_v1/bundle.sigstore.json",
                                    "attest_reusable_workflow/reusable-workflow-attestation.sigstore.json"])
def test_pae_verifies_real_sigstore_dsse_signatures(bundle: str, vectors: Path) -> None:
    """Real DSSE envelopes signed by other implementations verify over our PAE bytes."""
    path = vectors / "github-sigstore-bundles" / bundle
    if not path.is_file():
        pytest.skip(f"vector {path} not present")
    data = json.loads(path.read_bytes())
    cert = x509.load_der_x509_certificate(base64.b64decode(data["verificationMaterial"]["certificate"]["rawBytes"]))
    envelope = data["dsseEnvelope"]
    public = cert.public_key()
    assert isinstance(public, ec.EllipticCurvePublicKey)
    message = pae(envelope["payloadType"], base64.b64decode(envelope["payload"]))
    public.verify(base64.b64decode(envelope["signatures"][0]["sig"]), message, ec.ECDSA(hashes.SHA256()))


# -- keyring -----------------------------------------------------------------------------------------------


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, Any]:
    platform = generate_private_key(tmp_path / "p.pem")
    aggregate = generate_private_key(tmp_path / "a.pem")
    ring = tmp_path / "keyring.json"
    add_to_keyring(ring, "local-platform", platform.public_key(), ["platform"])
    add_to_keyring(ring, "local-aggregate", aggregate.public_key(), ["aggregate"])
    return {"platform": platform, "aggregate": aggregate, "ring": ring, "keyring": Keyring.load(ring)}


def _raw(key: Ed25519PrivateKey) -> str:
    return base64.b64encode(key.public_key().public_bytes(serialization.Encoding.Raw,
                                                          serialization.PublicFormat.Raw)).decode()


def _entry(key: Ed25519PrivateKey, **changes: Any) -> dict[str, Any]:
    return {"keyid": keyid_of(key.public_key()), "name": "k", "public_key": _raw(key), "roles": ["platform"],
            **changes}


def _load_code(path: Path, document: Any) -> Code:
    path.write_text(json.dumps(document))
    with pytest.raises(QualificationError) as caught:
        Keyring.load(path)
    return caught.value.code


def test_keyid_is_sha256_of_the_raw_public_key() -> None:
    import hashlib

    key = Ed25519PrivateKey.generate()
    assert keyid_of(key.public_key()) == hashlib.sha256(base64.b64decode(_raw(key))).hexdigest()


def test_keyring_holds_roles(keys: dict[str, Any]) -> None:
    ring: Keyring = keys["keyring"]
    entry = ring.lookup(keyid_of(keys["platform"].public_key()))
    assert entry is not None
    assert entry.roles == frozenset({"platform"})
    assert entry.name == "local-platform"
    assert ring.lookup("0" * 64) is None


def test_add_to_keyring_replaces_by_name_and_keeps_others(keys: dict[str, Any]) -> None:
    newer = Ed25519PrivateKey.generate()
    add_to_keyring(keys["ring"], "local-platform", newer.public_key(), ["platform"])
    ring = Keyring.load(keys["ring"])
    assert ring.lookup(keyid_of(keys["platform"].public_key())) is None
    assert ring.lookup(keyid_of(newer.public_key())) is not None
    assert ring.lookup(keyid_of(keys["aggregate"].public_key())) is not None


@pytest.mark.parametrize(
    "make",
    [
        lambda k: {"version": 1, "keys": [_entry(k, keyid="0" * 64)]},
        lambda k: {"version": 1, "keys": [_entry(k), _entry(k, name="again")]},
        lambda k: {"version": 1, "keys": [_entry(k, public_key="!" * 44)]},
        lambda k: {"version": 1, "keys": [_entry(k, public_key=base64.b64encode(b"\x00" * 33).decode())]},
        lambda k: {"version": 1, "keys": [_entry(k, roles=["admin"])]},
        lambda k: {"version": 1, "keys": [_entry(k, roles=[])]},
        lambda k: {"version": 1, "keys": [_entry(k, comment="x")]},
        lambda k: {"version": 2, "keys": []},
        lambda k: [],
    ],
    ids=["wrong-keyid", "duplicate-key", "not-base64", "not-32-bytes", "unknown-role", "no-role", "extra-field",
         "version", "not-an-object"],
)
def test_bad_keyrings_are_key_invalid(make: Any, tmp_path: Path) -> None:
    assert _load_code(tmp_path / "ring.json", make(Ed25519PrivateKey.generate())) is Code.KEY_INVALID


def test_keyring_file_problems_are_key_invalid(tmp_path: Path) -> None:
    for write in (None, b"{", b"\xff", b" " * (64 * 1024 + 1)):
        path = tmp_path / "ring.json"
        path.unlink(missing_ok=True)
        if write is not None:
            path.write_bytes(write)
        with pytest.raises(QualificationError) as caught:
            Keyring.load(path)
        assert caught.value.code is Code.KEY_INVALID
        assert caught.value.exit_status == 2


# -- private keys ------------------------------------------------------------------------------------------


def test_generated_key_is_private_and_never_replaced(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "k.pem"
    key = generate_private_key(path)
    assert path.stat().st_mode & 0o077 == 0
    assert keyid_of(load_private_key(path).public_key()) == keyid_of(key.public_key())
    with pytest.raises(QualificationError) as caught:
        generate_private_key(path)
    assert caught.value.code is Code.KEY_INVALID
    assert keyid_of(load_private_key(path).public_key()) == keyid_of(key.public_key())


def test_non_ed25519_or_damaged_private_keys_are_refused(tmp_path: Path) -> None:
    ec_key = ec.generate_private_key(ec.SECP256R1())
    pem = ec_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                               serialization.NoEncryption())
    for data in (pem, b"not a pem", b""):
        path = tmp_path / "k.pem"
        path.write_bytes(data)
        with pytest.raises(QualificationError) as caught:
            load_private_key(path)
        assert caught.value.code is Code.KEY_INVALID


# -- envelopes ---------------------------------------------------------------------------------------------


def test_envelope_round_trip_returns_the_signed_bytes(keys: dict[str, Any]) -> None:
    payload = b'{"z": 1,   "a": 2}'  # deliberately not canonical: the exact bytes must come back
    data = sign_envelope(payload, keys["platform"])
    verified = verify_envelope(data, keys["keyring"], role="platform", what="e")
    assert verified.payload == payload
    assert verified.keyid == keyid_of(keys["platform"].public_key())
    assert verified.signer_name == "local-platform"
    import hashlib

    assert verified.envelope_sha256 == hashlib.sha256(data).hexdigest()


def test_role_is_enforced(keys: dict[str, Any]) -> None:
    pairs: list[tuple[Ed25519PrivateKey, Role]] = [(keys["platform"], "aggregate"), (keys["aggregate"], "platform")]
    for key, role in pairs:
        with pytest.raises(QualificationError) as caught:
            verify_envelope(sign_envelope(b"{}", key), keys["keyring"], role=role, what="e")
        assert caught.value.code is Code.SIGNER_UNTRUSTED


def test_unknown_key_is_untrusted(keys: dict[str, Any]) -> None:
    with pytest.raises(QualificationError) as caught:
        verify_envelope(sign_envelope(b"{}", Ed25519PrivateKey.generate()), keys["keyring"], role="platform",
                        what="e")
    assert caught.value.code is Code.SIGNER_UNTRUSTED


def _rewrite(data: bytes, change: Any) -> bytes:
    envelope = json.loads(data)
    change(envelope)
    return json.dumps(envelope).encode()


def test_a_trusted_keyid_on_someone_elses_signature_is_invalid(keys: dict[str, Any]) -> None:
    """A stranger's signature relabelled with the trusted key's id: forgery, not an unknown signer."""
    trusted_id = keyid_of(keys["platform"].public_key())
    forged = _rewrite(sign_envelope(b"{}", Ed25519PrivateKey.generate()),
                      lambda e: e["signatures"][0].update(keyid=trusted_id))
    with pytest.raises(QualificationError) as caught:
        verify_envelope(forged, keys["keyring"], role="platform", what="e")
    assert caught.value.code is Code.SIGNATURE_INVALID


def test_the_signature_covers_payload_type_and_payload(keys: dict[str, Any]) -> None:
    data = sign_envelope(b'{"a":1}', keys["platform"])
    other = _rewrite(data, lambda e: e.update(payload=base64.b64encode(b'{"a":2}').decode()))
    with pytest.raises(QualificationError) as caught:
        verify_envelope(other, keys["keyring"], role="platform", what="e")
    assert caught.value.code is Code.SIGNATURE_INVALID


@pytest.mark.parametrize("where", [0, 1], ids=["before", "after"])
def test_a_strangers_signature_beside_the_trusted_one_is_refused(keys: dict[str, Any], where: int) -> None:
    """One job key signs one statement: an extra signature would let a reader pick the signer."""
    stranger = json.loads(sign_envelope(b"{}", Ed25519PrivateKey.generate()))["signatures"][0]
    data = _rewrite(sign_envelope(b"{}", keys["platform"]), lambda e: e["signatures"].insert(where, stranger))
    with pytest.raises(QualificationError) as caught:
        verify_envelope(data, keys["keyring"], role="platform", what="e")
    assert caught.value.code is Code.SIGNER_UNTRUSTED


def test_two_trusted_signatures_are_refused(keys: dict[str, Any], tmp_path: Path) -> None:
    second = Ed25519PrivateKey.generate()
    add_to_keyring(keys["ring"], "second-platform", second.public_key(), ["platform"])
    ring = Keyring.load(keys["ring"])
    extra = json.loads(sign_envelope(b"{}", second))["signatures"][0]
    data = _rewrite(sign_envelope(b"{}", keys["platform"]), lambda e: e["signatures"].append(extra))
    with pytest.raises(QualificationError) as caught:
        verify_envelope(data, ring, role="platform", what="e")
    assert caught.value.code is Code.SIGNER_UNTRUSTED
    assert "exactly one" in caught.value.message


# -- detached artifact signatures --------------------------------------------------------------------------


def test_artifact_signature(keys: dict[str, Any]) -> None:
    ring: Keyring = keys["keyring"]
    platform_id = keyid_of(keys["platform"].public_key())
    signature = sign_artifact_digest(DIGEST, keys["platform"])
    assert verify_artifact_digest(DIGEST, signature, ring, platform_id)
    assert not verify_artifact_digest("0" * 64, signature, ring, platform_id)
    assert not verify_artifact_digest(DIGEST, signature, ring, "0" * 64)
    assert not verify_artifact_digest(DIGEST, "not base64!", ring, platform_id)
    # Only the platform role signs artifacts.
    aggregate_sig = sign_artifact_digest(DIGEST, keys["aggregate"])
    assert not verify_artifact_digest(DIGEST, aggregate_sig, ring, keyid_of(keys["aggregate"].public_key()))


def test_artifact_signatures_and_envelopes_are_domain_separated(keys: dict[str, Any]) -> None:
    """An envelope signature over the digest's bytes is no artifact signature (and the other way round)."""
    envelope = json.loads(sign_envelope(DIGEST.encode(), keys["platform"]))
    platform_id = keyid_of(keys["platform"].public_key())
    assert not verify_artifact_digest(DIGEST, envelope["signatures"][0]["sig"], keys["keyring"], platform_id)
    raw = keys["platform"].sign(DIGEST.encode())
    assert not verify_artifact_digest(DIGEST, base64.b64encode(raw).decode(), keys["keyring"], platform_id)
