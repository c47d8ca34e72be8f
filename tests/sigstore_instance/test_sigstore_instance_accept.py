"""Bundles the test instance issues verify with sigstore-python's public API, offline."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID
from sigstore.models import Bundle, TrustedRoot
from sigstore.verify import Verifier, policy
from support.sigstore_instance import (
    IN_TOTO_PAYLOAD_TYPE,
    TRUSTED_ROOT_MEDIA_TYPE,
    GitHubIdentity,
    TestSigstoreInstance,
)

PolicyFactory = Callable[[GitHubIdentity], policy.AllOf]


def _statement(sha: str) -> bytes:
    return json.dumps(
        {
            "_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": "skillhost", "digest": {"sha256": hashlib.sha256(b"app").hexdigest()}}],
            "predicateType": "https://example.invalid/qualification/v1",
            "predicate": {"sha": sha},
        }
    ).encode()


def _leaf(raw: bytes) -> x509.Certificate:
    return Bundle.from_json(raw).signing_certificate


def test_dsse_bundle_verifies_with_github_policy(
    instance: TestSigstoreInstance, identity: GitHubIdentity, github_policy: PolicyFactory
) -> None:
    payload = _statement(identity.sha)
    raw = instance.issue_dsse_bundle(payload, extensions=identity.extensions, san_uri=identity.san_uri)

    verifier = Verifier(trusted_root=instance.trusted_root())
    payload_type, verified = verifier.verify_dsse(Bundle.from_json(raw), github_policy(identity))

    assert payload_type == IN_TOTO_PAYLOAD_TYPE
    assert verified == payload  # the signed bytes themselves, not a re-serialisation


def test_custom_payload_type_is_returned(instance: TestSigstoreInstance, identity: GitHubIdentity) -> None:
    raw = instance.issue_dsse_bundle(
        b"opaque", "application/vnd.example+octets", extensions=identity.extensions, san_uri=identity.san_uri
    )
    verifier = Verifier(trusted_root=instance.trusted_root())
    assert verifier.verify_dsse(Bundle.from_json(raw), policy.Identity(identity=identity.san_uri)) == (
        "application/vnd.example+octets",
        b"opaque",
    )


def test_message_bundle_verifies_artifact(
    instance: TestSigstoreInstance, identity: GitHubIdentity, github_policy: PolicyFactory
) -> None:
    artifact = b"\x7fELF packaged skill host"
    raw = instance.issue_message_bundle(artifact, extensions=identity.extensions, san_uri=identity.san_uri)
    Verifier(trusted_root=instance.trusted_root()).verify_artifact(
        artifact, Bundle.from_json(raw), github_policy(identity)
    )


def test_many_entries_verify_against_growing_log(instance: TestSigstoreInstance, identity: GitHubIdentity) -> None:
    # Tree sizes cross the 8 and 16 power-of-two borders, where audit paths change shape.
    verifier = Verifier(trusted_root=instance.trusted_root())
    sizes = set()
    for i in range(12):
        raw = instance.issue_dsse_bundle(b"%d" % i, extensions=identity.extensions, san_uri=identity.san_uri)
        bundle = Bundle.from_json(raw)
        verifier.verify_dsse(bundle, policy.Identity(identity=identity.san_uri, issuer=identity.issuer))
        sizes.add(json.loads(raw)["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["treeSize"])
    assert len(sizes) == 12


def test_historical_instance_verifies_after_its_keys_expired(tmp_path: Path, identity: GitHubIdentity) -> None:
    # The auditor case: CA and keys long expired, the trusted root pinned as of the run.
    start = datetime(2024, 3, 1, tzinfo=UTC)
    old = TestSigstoreInstance(tmp_path, valid_from=start, valid_for=timedelta(days=60))
    raw = old.issue_dsse_bundle(
        b"{}", extensions=identity.extensions, san_uri=identity.san_uri, issued_at=start + timedelta(days=3)
    )
    assert _leaf(raw).not_valid_after_utc < datetime.now(UTC)
    Verifier(trusted_root=old.trusted_root()).verify_dsse(
        Bundle.from_json(raw), policy.Identity(identity=identity.san_uri, issuer=identity.issuer)
    )


def test_leaf_certificate_is_fulcio_shaped(instance: TestSigstoreInstance, identity: GitHubIdentity) -> None:
    leaf = _leaf(instance.issue_dsse_bundle(b"{}", extensions=identity.extensions, san_uri=identity.san_uri))

    assert leaf.subject == x509.Name([])
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert san.critical
    assert san.value.get_values_for_type(x509.UniformResourceIdentifier) == [identity.san_uri]
    assert leaf.extensions.get_extension_for_class(x509.KeyUsage).value.digital_signature
    assert ExtendedKeyUsageOID.CODE_SIGNING in leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert leaf.not_valid_after_utc - leaf.not_valid_before_utc == timedelta(minutes=10)

    def raw_ext(arc: int) -> bytes:
        value = leaf.extensions.get_extension_for_oid(x509.ObjectIdentifier(f"1.3.6.1.4.1.57264.1.{arc}")).value
        assert isinstance(value, x509.UnrecognizedExtension)
        return value.value

    assert raw_ext(1) == identity.issuer.encode()  # v1 claim: raw bytes
    run_uri = identity.run_invocation_uri.encode()
    assert raw_ext(21) == bytes([0x0C, len(run_uri)]) + run_uri  # v2 claim: DER UTF8String
    assert raw_ext(9) == bytes([0x0C, len(identity.san_uri)]) + identity.san_uri.encode()

    scts = leaf.extensions.get_extension_for_class(x509.PrecertificateSignedCertificateTimestamps).value
    assert [sct.log_id for sct in scts] == [instance.ct_log.log_id]


def test_long_claim_uses_der_long_form_length(instance: TestSigstoreInstance, identity: GitHubIdentity) -> None:
    long_ref = "refs/heads/" + "x" * 300
    extensions = {**identity.extensions, "1.3.6.1.4.1.57264.1.14": long_ref}
    raw = instance.issue_dsse_bundle(b"{}", extensions=extensions, san_uri=identity.san_uri)
    policy.OIDCSourceRepositoryRef(long_ref).verify(_leaf(raw))


def test_trusted_root_document(instance: TestSigstoreInstance) -> None:
    document = json.loads(instance.trusted_root_path.read_bytes())
    assert document["mediaType"] == TRUSTED_ROOT_MEDIA_TYPE
    assert instance.trusted_root_sha256 == hashlib.sha256(instance.trusted_root_path.read_bytes()).hexdigest()

    # Log ids are SHA-256 of the DER SubjectPublicKeyInfo (RFC 6962 section 3.2).
    for log in (*document["tlogs"], *document["ctlogs"]):
        key_der = base64.b64decode(log["publicKey"]["rawBytes"])
        assert base64.b64decode(log["logId"]["keyId"]) == hashlib.sha256(key_der).digest()
    [authority] = document["certificateAuthorities"]
    chain = [base64.b64decode(c["rawBytes"]) for c in authority["certChain"]["certificates"]]
    assert chain == [c.public_bytes(serialization.Encoding.DER) for c in instance.fulcio.chain]
    assert isinstance(TrustedRoot.from_file(str(instance.trusted_root_path)), TrustedRoot)


def test_bundle_shape_matches_a_real_github_bundle(
    instance: TestSigstoreInstance, identity: GitHubIdentity, vectors_dir: Path
) -> None:
    real = json.loads(
        (vectors_dir / "github-sigstore-bundles" / "beacon_dsse_v1" / "bundle.sigstore.json").read_bytes()
    )
    ours = json.loads(instance.issue_dsse_bundle(b"{}", extensions=identity.extensions, san_uri=identity.san_uri))

    def shape(value: object) -> object:
        if isinstance(value, dict):
            return {k: shape(v) for k, v in value.items()}
        if isinstance(value, list):
            return [shape(value[0])] if value else []
        return type(value).__name__

    assert shape(ours) == shape(real)
    real_entry, our_entry = (b["verificationMaterial"]["tlogEntries"][0] for b in (real, ours))
    assert shape(json.loads(base64.b64decode(our_entry["canonicalizedBody"]))) == shape(
        json.loads(base64.b64decode(real_entry["canonicalizedBody"]))
    )
    for entry in (real_entry, our_entry):
        note, signature_line = entry["inclusionProof"]["checkpoint"]["envelope"].split("\n\n")
        assert note.count("\n") == 2
        assert signature_line.startswith("\u2014 ")
        assert signature_line.endswith("\n")


def test_sigstore_cli_verifies_offline_with_the_client_trust_config(
    instance: TestSigstoreInstance, identity: GitHubIdentity, tmp_path: Path
) -> None:
    # The same bundle through sigstore-python's own CLI (a separate process), the
    # way an auditor would check evidence by hand; the artifact must be a subject.
    artifact = tmp_path / "skillhost.tar.gz"
    artifact.write_bytes(b"packaged app")
    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": artifact.name, "digest": {"sha256": hashlib.sha256(b"packaged app").hexdigest()}}],
        "predicateType": "https://example.invalid/qualification/v1",
        "predicate": {},
    }
    bundle_path = tmp_path / "skillhost.tar.gz.sigstore.json"
    bundle_path.write_bytes(
        instance.issue_dsse_bundle(
            json.dumps(statement).encode(), extensions=identity.extensions, san_uri=identity.san_uri
        )
    )
    assert instance.client_trust_config().trusted_root is not None

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sigstore", "--trust-config", str(instance.client_trust_config_path), *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    github = ["verify", "github", "--cert-identity", identity.san_uri, "--repository", identity.repository]
    accepted = cli(*github, "--ref", identity.ref, "--sha", identity.sha, "--trigger", identity.trigger, str(artifact))
    assert accepted.returncode == 0, accepted.stderr
    assert f"OK: {artifact}" in accepted.stderr

    wrong_ref = cli(*github, "--ref", "refs/tags/v1.0.0", str(artifact))
    assert wrong_ref.returncode == 1, wrong_ref.stderr
    assert "GitHubWorkflowRef" in wrong_ref.stderr
