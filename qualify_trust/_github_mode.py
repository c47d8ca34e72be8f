"""GitHub trust mode: Sigstore bundles from the producer workflow, verified offline.

Statements are Sigstore bundles (v0.3) over DSSE; the artifact signature is a
Sigstore bundle over a one-subject in-toto statement naming the artifact's
digest, so `gh attestation verify` and cosign can check it too. Verification
uses the policy's pinned trusted root and exact workflow identity only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from cryptography.hazmat.primitives.serialization import Encoding
from desktop_qualify.evidence_schemas import (
    PREDICATE_PREFIX,
    STATEMENT_SUFFIXES,
    Code,
    QualificationError,
    canonical_bytes,
)
from sigstore.models import Bundle

from ._github_identity import GitHubIdentity
from ._interfaces import ArtifactSignature, SignerIdentity, StatementSigner, StatementVerifier, VerifiedStatement
from ._keyring import Role
from ._sigstore_expected import ExpectedWorkflow, check_platform_signer, cross_check_claims
from ._sigstore_root import PinnedTrustedRoot
from ._sigstore_sign import sign_dsse_statement
from ._sigstore_verify import verify_artifact_bundle, verify_dsse_bundle

SIGSTORE_SUFFIX = STATEMENT_SUFFIXES["sigstore"]
ARTIFACT_SIGNATURE_PREDICATE_TYPE = PREDICATE_PREFIX + "artifact-signature/v1"

__all__ = ["ARTIFACT_SIGNATURE_PREDICATE_TYPE", "SIGSTORE_SUFFIX", "SigstoreSigner", "SigstoreVerifier",
           "cross_check_claims"]


def _signed_certificate_keyid(bundle_bytes: bytes) -> str:
    """SHA-256 of the leaf certificate's DER in a bundle this job just signed: a keyless 'key id'."""
    certificate = Bundle.from_json(bundle_bytes).signing_certificate
    return hashlib.sha256(certificate.public_bytes(Encoding.DER)).hexdigest()


class SigstoreSigner(StatementSigner):
    """Keyless signing; ``sign_dsse`` is sigstore-python with the job's OIDC token unless a test injects one."""

    file_suffix = SIGSTORE_SUFFIX

    def __init__(self, sign_dsse: Callable[[bytes], bytes] = sign_dsse_statement) -> None:
        self._sign_dsse = sign_dsse

    def sign_statement(self, payload: bytes) -> bytes:
        return self._sign_dsse(payload)

    def sign_artifact_digest(self, name: str, sha256_hex: str) -> ArtifactSignature:
        statement = {"_type": "https://in-toto.io/Statement/v1",
                     "subject": [{"name": name, "digest": {"sha256": sha256_hex}}],
                     "predicateType": ARTIFACT_SIGNATURE_PREDICATE_TYPE, "predicate": {}}
        bundle = self._sign_dsse(canonical_bytes(statement))
        return ArtifactSignature("sigstore-bundle", _signed_certificate_keyid(bundle), bundle.decode("utf-8"))


class SigstoreVerifier(StatementVerifier):
    file_suffix = SIGSTORE_SUFFIX

    def __init__(self, root: PinnedTrustedRoot, expected: ExpectedWorkflow) -> None:
        self._root = root
        self._expected = expected

    def verify_statement(self, data: bytes, *, role: Role, what: str) -> VerifiedStatement:
        # A platform statement may come from any platform's signer workflow here; which one is
        # the only one allowed is known once the payload names its platform (speaks_for).
        verified = verify_dsse_bundle(data, self._root, self._expected, what, role=role)
        signer = SignerIdentity("sigstore", verified.identity.build_signer_uri, verified.certificate_sha256,
                                verified.identity)
        return VerifiedStatement(verified.payload, signer, verified.bundle_sha256)

    def check_speaks_for(self, signer: SignerIdentity, platform: str) -> None:
        claims = signer.claims
        if not isinstance(claims, GitHubIdentity):
            raise QualificationError(Code.WORKFLOW_IDENTITY_MISMATCH, "a Sigstore statement without certificate claims")
        check_platform_signer(claims, self._expected, platform)

    def verify_artifact_signature(self, sha256_hex: str, signature: ArtifactSignature) -> SignerIdentity | None:
        if signature.method != "sigstore-bundle":
            return None
        bundle = signature.signature.encode("utf-8")
        try:
            verified = verify_artifact_bundle(bundle, sha256_hex, self._root, self._expected,
                                              what="artifact signature",
                                              predicate_type=ARTIFACT_SIGNATURE_PREDICATE_TYPE)
        except QualificationError:
            return None
        if verified.certificate_sha256 != signature.keyid or verified.identity is None:
            return None
        # The certificate's claims go back to the caller, who holds the run the signature must belong to.
        return SignerIdentity("sigstore", verified.identity.build_signer_uri, verified.certificate_sha256,
                              verified.identity)
