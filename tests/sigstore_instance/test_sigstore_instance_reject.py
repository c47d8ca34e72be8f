"""Each part of what the test instance produces is load-bearing: break one, verification fails.

Every case names the check that must catch it (a fragment of sigstore-python's
error message), so a case that fails for an unrelated reason does not pass.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sigstore.errors import Error as SigstoreError
from sigstore.models import Bundle, TrustedRoot
from sigstore.verify import Verifier, policy
from support.sigstore_instance import GitHubIdentity, TestSigstoreInstance

Mutation = Callable[[dict[str, Any]], None]


def _flip_b64(value: str, index: int = -1) -> str:
    raw = bytearray(base64.b64decode(value))
    raw[index] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


def _entry(doc: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = doc["verificationMaterial"]["tlogEntries"][0]
    return entry


def _payload_byte(doc: dict[str, Any]) -> None:
    doc["dsseEnvelope"]["payload"] = _flip_b64(doc["dsseEnvelope"]["payload"], 2)


def _payload_type(doc: dict[str, Any]) -> None:
    doc["dsseEnvelope"]["payloadType"] = "application/vnd.in-toto+jsonx"


def _signature(doc: dict[str, Any]) -> None:
    doc["dsseEnvelope"]["signatures"][0]["sig"] = _flip_b64(doc["dsseEnvelope"]["signatures"][0]["sig"], 10)


def _body(doc: dict[str, Any]) -> None:
    body = json.loads(base64.b64decode(_entry(doc)["canonicalizedBody"]))
    body["spec"]["payloadHash"]["value"] = "0" * 64
    _entry(doc)["canonicalizedBody"] = base64.b64encode(json.dumps(body).encode()).decode()


def _proof_hash(doc: dict[str, Any]) -> None:
    hashes = _entry(doc)["inclusionProof"]["hashes"]
    hashes[0] = _flip_b64(hashes[0])


def _root_hash(doc: dict[str, Any]) -> None:
    proof = _entry(doc)["inclusionProof"]
    proof["rootHash"] = _flip_b64(proof["rootHash"])


def _checkpoint_signature(doc: dict[str, Any]) -> None:
    checkpoint = _entry(doc)["inclusionProof"]["checkpoint"]
    note, line = checkpoint["envelope"].split("\n\n")
    prefix, signature = line.rstrip("\n").rsplit(" ", 1)
    checkpoint["envelope"] = f"{note}\n\n{prefix} {_flip_b64(signature)}\n"


def _set(doc: dict[str, Any]) -> None:
    promise = _entry(doc)["inclusionPromise"]
    promise["signedEntryTimestamp"] = _flip_b64(promise["signedEntryTimestamp"], 8)


def _integrated_time(doc: dict[str, Any]) -> None:
    _entry(doc)["integratedTime"] = str(int(_entry(doc)["integratedTime"]) + 1)


def _log_index(doc: dict[str, Any]) -> None:
    _entry(doc)["logIndex"] = str(int(_entry(doc)["logIndex"]) + 1)


def _no_promise(doc: dict[str, Any]) -> None:
    del _entry(doc)["inclusionPromise"]


def _no_checkpoint(doc: dict[str, Any]) -> None:
    del _entry(doc)["inclusionProof"]["checkpoint"]


DSSE_TAMPERING: list[tuple[str, Mutation, str]] = [
    ("payload byte", _payload_byte, "DSSE: invalid signature"),
    ("payload type", _payload_type, "DSSE: invalid signature"),
    ("signature byte", _signature, "DSSE: invalid signature"),
    ("entry body", _body, "inclusion proof"),
    ("inclusion proof hash", _proof_hash, "inclusion proof"),
    ("root hash", _root_hash, "inclusion proof"),
    ("checkpoint signature", _checkpoint_signature, "checkpoint: invalid signature"),
    ("signed entry timestamp", _set, "SET: invalid inclusion promise"),
    ("integrated time", _integrated_time, "SET: invalid inclusion promise"),
    ("log index", _log_index, "SET: invalid inclusion promise"),
    ("no inclusion promise", _no_promise, "inclusion promise or signed timestamp"),
    ("no checkpoint", _no_checkpoint, "with checkpoint"),
]


def _verify_dsse(raw: bytes, root: TrustedRoot, ident: GitHubIdentity) -> None:
    bundle = Bundle.from_json(raw)
    Verifier(trusted_root=root).verify_dsse(bundle, policy.Identity(identity=ident.san_uri, issuer=ident.issuer))


def _mutated(raw: bytes, mutate: Mutation) -> bytes:
    doc = json.loads(raw)
    mutate(doc)
    return json.dumps(doc).encode()


def _issue(instance: TestSigstoreInstance, ident: GitHubIdentity, **kwargs: Any) -> bytes:
    return instance.issue_dsse_bundle(b'{"k":"v"}', extensions=ident.extensions, san_uri=ident.san_uri, **kwargs)


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in DSSE_TAMPERING], ids=[c[0] for c in DSSE_TAMPERING])
def test_tampered_dsse_bundle_is_rejected(
    instance: TestSigstoreInstance, identity: GitHubIdentity, mutate: Mutation, expected: str
) -> None:
    raw = _issue(instance, identity)
    _verify_dsse(raw, instance.trusted_root(), identity)  # the untampered bundle passes
    with pytest.raises(SigstoreError, match=expected):
        _verify_dsse(_mutated(raw, mutate), instance.trusted_root(), identity)


def test_swapped_certificate_is_rejected(instance: TestSigstoreInstance, identity: GitHubIdentity) -> None:
    # A second leaf from the same trusted CA does not match the signature or the log entry.
    first, second = json.loads(_issue(instance, identity)), json.loads(_issue(instance, identity))
    first["verificationMaterial"]["certificate"] = second["verificationMaterial"]["certificate"]
    with pytest.raises(SigstoreError, match="DSSE: invalid signature"):
        _verify_dsse(json.dumps(first).encode(), instance.trusted_root(), identity)


def test_swapped_log_entry_is_rejected(instance: TestSigstoreInstance, identity: GitHubIdentity) -> None:
    # A valid entry of another signature, same log: the entry body does not match the bundle.
    first, second = json.loads(_issue(instance, identity)), json.loads(_issue(instance, identity))
    first["verificationMaterial"]["tlogEntries"] = second["verificationMaterial"]["tlogEntries"]
    with pytest.raises(SigstoreError, match="log entry signatures do not match bundle"):
        _verify_dsse(json.dumps(first).encode(), instance.trusted_root(), identity)


def _root_with(instance: TestSigstoreInstance, tmp_path: Path, **components: Any) -> TrustedRoot:
    path = tmp_path / "mixed_trusted_root.json"
    path.write_bytes(instance.trusted_root_json(**components))
    return TrustedRoot.from_file(str(path))


def test_sct_from_untrusted_ct_log_is_rejected(
    instance: TestSigstoreInstance, other_instance: TestSigstoreInstance, identity: GitHubIdentity, tmp_path: Path
) -> None:
    root = _root_with(instance, tmp_path, ct_logs=[other_instance.ct_log])
    with pytest.raises(SigstoreError, match="failed to verify SCT"):
        _verify_dsse(_issue(instance, identity), root, identity)


def test_entry_from_untrusted_log_is_rejected(
    instance: TestSigstoreInstance, other_instance: TestSigstoreInstance, identity: GitHubIdentity, tmp_path: Path
) -> None:
    root = _root_with(instance, tmp_path, rekors=[other_instance.rekor])
    with pytest.raises(SigstoreError, match="invalid log entry"):
        _verify_dsse(_issue(instance, identity), root, identity)


def test_bundle_from_another_instance_is_rejected(
    instance: TestSigstoreInstance, other_instance: TestSigstoreInstance, identity: GitHubIdentity
) -> None:
    with pytest.raises(SigstoreError, match="certificate chain"):
        _verify_dsse(_issue(other_instance, identity), instance.trusted_root(), identity)


@pytest.mark.parametrize(
    "integrated_after_issue",
    [timedelta(minutes=11), timedelta(seconds=-5)],
    ids=["integrated after expiry", "integrated before notBefore"],
)
def test_entry_outside_certificate_validity_is_rejected(
    instance: TestSigstoreInstance, identity: GitHubIdentity, integrated_after_issue: timedelta
) -> None:
    issued = instance.fulcio.valid_from + timedelta(hours=1)
    raw = _issue(instance, identity, issued_at=issued, integrated_at=issued + integrated_after_issue)
    with pytest.raises(SigstoreError, match="certificate chain"):
        _verify_dsse(raw, instance.trusted_root(), identity)


def test_certificate_issued_before_ca_validity_is_rejected(
    instance: TestSigstoreInstance, identity: GitHubIdentity
) -> None:
    raw = _issue(instance, identity, issued_at=instance.fulcio.valid_from - timedelta(hours=1))
    with pytest.raises(SigstoreError, match="certificate chain"):
        _verify_dsse(raw, instance.trusted_root(), identity)


@pytest.mark.parametrize(
    "wrong",
    [
        lambda i: policy.Identity(identity=i.san_uri.replace("refs/heads/main", "refs/tags/v1"), issuer=i.issuer),
        lambda i: policy.Identity(identity=i.san_uri, issuer="https://accounts.example.invalid"),
        lambda i: policy.OIDCSourceRepositoryRef("refs/tags/v1.0.0"),
        lambda i: policy.OIDCRunInvocationURI(i.run_invocation_uri.replace("attempts/2", "attempts/1")),
        lambda i: policy.OIDCRunnerEnvironment("self-hosted"),
    ],
    ids=["san", "issuer", "ref", "attempt", "runner"],
)
def test_identity_mismatch_is_rejected(
    instance: TestSigstoreInstance,
    identity: GitHubIdentity,
    wrong: Callable[[GitHubIdentity], policy.VerificationPolicy],
) -> None:
    bundle = Bundle.from_json(_issue(instance, identity))
    with pytest.raises(SigstoreError, match=r"does not match|do not match"):
        Verifier(trusted_root=instance.trusted_root()).verify_dsse(bundle, wrong(identity))


def test_tampered_artifact_is_rejected(instance: TestSigstoreInstance, identity: GitHubIdentity) -> None:
    raw = instance.issue_message_bundle(b"artifact", extensions=identity.extensions, san_uri=identity.san_uri)
    verifier = Verifier(trusted_root=instance.trusted_root())
    with pytest.raises(SigstoreError, match="digest mismatch"):
        verifier.verify_artifact(b"artifacT", Bundle.from_json(raw), policy.Identity(identity=identity.san_uri))


def test_message_bundle_log_entry_is_matched(instance: TestSigstoreInstance, identity: GitHubIdentity) -> None:
    # Same artifact, two signatures: a valid entry of the other one is inconsistent with this bundle.
    first, second = (
        json.loads(instance.issue_message_bundle(b"artifact", extensions=identity.extensions, san_uri=identity.san_uri))
        for _ in range(2)
    )
    first["verificationMaterial"]["tlogEntries"] = second["verificationMaterial"]["tlogEntries"]
    verifier = Verifier(trusted_root=instance.trusted_root())
    with pytest.raises(SigstoreError, match="inconsistent with other materials"):
        verifier.verify_artifact(
            b"artifact", Bundle.from_json(json.dumps(first)), policy.Identity(identity=identity.san_uri)
        )


def test_unknown_claim_oid_is_refused(instance: TestSigstoreInstance, identity: GitHubIdentity) -> None:
    with pytest.raises(ValueError, match="not a Fulcio claim OID"):
        instance.issue_dsse_bundle(b"{}", extensions={"2.5.29.99": "x"}, san_uri=identity.san_uri)


def test_offline_guard_refuses_outbound_connections() -> None:
    # The autouse guard is what makes "verified offline" above a checked claim.
    with pytest.raises(OSError, match="network access attempted"):
        socket.create_connection(("192.0.2.1", 443), timeout=1)
