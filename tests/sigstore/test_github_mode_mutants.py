"""GitHub mode's signer and verifier, exactly: the artifact-signature statement, the signer it reports, the refusal.

The artifact signature is a Sigstore bundle over an in-toto Statement v1 that `gh attestation verify` and cosign
must read too, so its fields are pinned here word for word; the verifier must hand back the signer the certificate
proves (kind, key id, claims) and the evidence file's own digest; a statement whose signer carries no certificate
claims is refused with the workflow-identity code. Bundles come from a throwaway test Sigstore instance, offline.
Written for the mutants of ``qualify_trust._github_mode`` that survived the suite (docs/mutation.md).
"""

from __future__ import annotations

import hashlib
import json

import pytest
from cryptography.hazmat.primitives.serialization import Encoding
from desktop_qualify.evidence_schemas import Code, QualificationError, canonical_bytes
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_trust import ArtifactSignature, SignerIdentity, StatementVerifier, verifier_for
from desktop_qualify.qualify_trust._github_mode import ARTIFACT_SIGNATURE_PREDICATE_TYPE, SigstoreSigner
from sigstore.models import Bundle
from support.github_chain import REPOSITORY, github_policy, platform_identity
from support.sigstore_instance import GitHubIdentity, TestSigstoreInstance

ARTIFACT_NAME = "app-linux.tar.gz"
ARTIFACT_SHA256 = hashlib.sha256(b"the artifact's bytes").hexdigest()
LINUX = platform_identity(GitHubIdentity(repository=REPOSITORY), "linux")


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> TestSigstoreInstance:
    return TestSigstoreInstance(tmp_path_factory.mktemp("sigstore"))


@pytest.fixture(scope="module")
def verifier(tmp_path_factory: pytest.TempPathFactory, instance: TestSigstoreInstance) -> StatementVerifier:
    root = tmp_path_factory.mktemp("policy")
    return verifier_for(load_policy(github_policy(root, instance, root)))


class _Recording:
    """The job's DSSE signing, by the test instance as the linux producer job; remembers each payload it signed."""

    def __init__(self, instance: TestSigstoreInstance) -> None:
        self.instance = instance
        self.payloads: list[bytes] = []

    def __call__(self, payload: bytes) -> bytes:
        self.payloads.append(payload)
        return self.instance.issue_dsse_bundle(payload, extensions=LINUX.extensions, san_uri=LINUX.san_uri)


def _certificate_sha256(bundle: str) -> str:
    certificate = Bundle.from_json(bundle.encode("utf-8")).signing_certificate
    return hashlib.sha256(certificate.public_bytes(Encoding.DER)).hexdigest()


def test_the_artifact_signature_signs_exactly_an_in_toto_statement_v1_naming_the_artifact(
        instance: TestSigstoreInstance) -> None:
    sign = _Recording(instance)
    signature = SigstoreSigner(sign).sign_artifact_digest(ARTIFACT_NAME, ARTIFACT_SHA256)
    (payload,) = sign.payloads
    # Every field as in-toto's Statement v1 spells it, so gh attestation verify and cosign read it too.
    assert json.loads(payload) == {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": ARTIFACT_NAME, "digest": {"sha256": ARTIFACT_SHA256}}],
        "predicateType": ARTIFACT_SIGNATURE_PREDICATE_TYPE,
        "predicate": {},
    }
    assert payload == canonical_bytes(json.loads(payload))
    assert signature.method == "sigstore-bundle"
    assert signature.keyid == _certificate_sha256(signature.signature)


def test_a_verified_artifact_signature_reports_the_sigstore_signer_its_certificate_and_claims(
        instance: TestSigstoreInstance, verifier: StatementVerifier) -> None:
    signature = SigstoreSigner(_Recording(instance)).sign_artifact_digest(ARTIFACT_NAME, ARTIFACT_SHA256)
    signer = verifier.verify_artifact_signature(ARTIFACT_SHA256, signature)
    assert signer is not None
    assert signer.kind == "sigstore"
    assert signer.keyid == signature.keyid == _certificate_sha256(signature.signature)
    assert signer.name == f"https://github.com/{LINUX.job_workflow_ref}"
    assert signer.claims is not None
    assert signer.builder_id == signer.name  # a sigstore signer's builder is its signer workflow
    # Another key id than the certificate's is no signature of this signer.
    forged = ArtifactSignature("sigstore-bundle", "00" * 32, signature.signature)
    assert verifier.verify_artifact_signature(ARTIFACT_SHA256, forged) is None


def test_a_verified_statement_carries_the_sha256_of_the_bundle_file_as_received(
        instance: TestSigstoreInstance, verifier: StatementVerifier) -> None:
    statement = canonical_bytes({"_type": "https://in-toto.io/Statement/v1",
                                 "subject": [{"name": ARTIFACT_NAME, "digest": {"sha256": ARTIFACT_SHA256}}],
                                 "predicateType": "https://example.invalid/test/v1", "predicate": {}})
    bundle = SigstoreSigner(_Recording(instance)).sign_statement(statement)
    verified = verifier.verify_statement(bundle, role="platform", what="platform-linux.sigstore.json")
    assert verified.payload == statement
    assert verified.envelope_sha256 == hashlib.sha256(bundle).hexdigest()
    assert verified.signer.kind == "sigstore"
    assert verified.signer.keyid == _certificate_sha256(bundle.decode("utf-8"))


@pytest.mark.parametrize("claims", [None, "not claims"])
def test_a_sigstore_statement_without_certificate_claims_speaks_for_no_platform(verifier: StatementVerifier,
                                                                                claims: object) -> None:
    signer = SignerIdentity("sigstore", "https://github.com/acme/desktop/x.yml@refs/heads/main", "ab" * 32, claims)
    with pytest.raises(QualificationError) as caught:
        verifier.check_speaks_for(signer, "linux")
    assert caught.value.code is Code.WORKFLOW_IDENTITY_MISMATCH
    assert caught.value.message == "a Sigstore statement without certificate claims"

