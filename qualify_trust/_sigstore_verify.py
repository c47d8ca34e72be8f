"""Verifying Sigstore bundles offline, in pypi-attestations' order.

1. Bound the bundle bytes and parse them (size, depth, duplicate keys) before
   sigstore-python sees them; it then parses the very same bytes.
2. Signature, certificate chain, SCT, transparency log inclusion and signed
   time under the pinned trusted root: sigstore-python's public ``Verifier``,
   with a policy that pins the issuer (and the SAN, for a plain identity).
3. The exact GitHub workflow identity check on the leaf certificate.
4. The payload: a known payload type (DSSE) or the artifact's digest.

Nothing here touches the network: the verifier is built from pinned bytes and
an offline bundle carries its own inclusion proof.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from desktop_qualify.evidence_schemas import (
    IN_TOTO_PAYLOAD_TYPE,
    MAX_SIGSTORE_BUNDLE_BYTES,
    Code,
    JsonBounds,
    QualificationError,
    load_json,
)
from sigstore.errors import Error as SigstoreError
from sigstore.errors import VerificationError
from sigstore.hashes import Hashed
from sigstore.models import Bundle
from sigstore.verify.policy import AllOf, Identity, OIDCIssuer, OIDCIssuerV2, VerificationPolicy
from sigstore_models.common.v1 import HashAlgorithm

from ._github_identity import GitHubIdentity
from ._sigstore_expected import CertificateIdentity, ExpectedWorkflow, SignerRole, check_identity
from ._sigstore_identity import identity_from_certificate
from ._sigstore_root import PinnedTrustedRoot

# A bundle carries at most one statement (policy max_statement_bytes <= 16 MiB,
# base64 grows it by 4/3) plus a few KiB of certificates and proofs.
MAX_BUNDLE_BYTES = MAX_SIGSTORE_BUNDLE_BYTES
_BUNDLE_DEPTH = 16
_SHA256_HEX = re.compile(r"[0-9a-f]{64}", re.ASCII)
_MAX_SUBJECTS = 1024
# VerificationError for every failed check; the others for material that parsed
# but cannot be used (an unsupported key type in a certificate, say).
# OSError/OverflowError: an out-of-range integrated time reaches datetime.fromtimestamp.
_VERIFY_ERRORS = (SigstoreError, ValueError, TypeError, UnsupportedAlgorithm, OSError, OverflowError)


@dataclass(frozen=True)
class VerifiedSigstorePayload:
    """A DSSE payload whose signature, log entry and signer identity verified."""

    payload: bytes
    payload_type: str
    identity: GitHubIdentity
    bundle_sha256: str
    # SHA-256 of the leaf certificate's DER: names this signature the way a key id would.
    certificate_sha256: str


@dataclass(frozen=True)
class VerifiedSigstoreArtifact:
    """An artifact digest covered by a verified bundle (message signature or DSSE subject)."""

    artifact_sha256: str
    identity: GitHubIdentity | None
    bundle_sha256: str
    certificate_sha256: str


@dataclass
class _Recorded:
    """A policy wrapper that remembers why it refused, so the refusal keeps its own code.

    sigstore-python raises one ``VerificationError`` type for a broken signature
    and for a wrong identity; the code a user sees must tell them apart.
    """

    inner: VerificationPolicy
    code: Code
    refusal: str | None = field(default=None)

    def verify(self, cert: x509.Certificate) -> None:
        try:
            self.inner.verify(cert)
        except VerificationError as exc:
            self.refusal = str(exc)
            raise


def _parse_bundle(data: bytes, *, what: str, max_bytes: int) -> tuple[Bundle, dict[str, Any]]:
    raw = load_json(data, what=what, bounds=JsonBounds(max_bytes=max_bytes, max_depth=_BUNDLE_DEPTH))
    if not isinstance(raw, dict):
        raise QualificationError(Code.SCHEMA_INVALID, f"{what}: a Sigstore bundle must be a JSON object")
    try:
        bundle = Bundle.from_json(data)
    except (SigstoreError, ValueError, TypeError, KeyError, IndexError, OSError, OverflowError,
            x509.InvalidVersion) as exc:
        # Bundle.from_json reports shape errors as InvalidBundle, but malformed
        # base64 or DER inside it surface as ValueError and friends (a flipped
        # bit in the certificate's version field raises InvalidVersion).
        raise QualificationError(Code.SCHEMA_INVALID, f"{what}: not a usable Sigstore bundle ({_brief(exc)})") from exc
    return bundle, raw


def _policies(expected: ExpectedWorkflow | None, certificate_identity: CertificateIdentity | None) -> list[_Recorded]:
    policies: list[_Recorded] = []
    if expected is not None:
        policies.append(_Recorded(OIDCIssuerV2(expected.issuer), Code.SIGNER_UNTRUSTED))
    if certificate_identity is not None:
        # Issuer and SAN as two policies, so each refusal keeps its own code.
        policies.append(_Recorded(OIDCIssuer(certificate_identity.issuer), Code.SIGNER_UNTRUSTED))
        policies.append(_Recorded(Identity(identity=certificate_identity.san), Code.WORKFLOW_IDENTITY_MISMATCH))
    if not policies:
        # An unpinned verification proves integrity only, never who signed.
        raise QualificationError(Code.USAGE, "a Sigstore verification needs an expected workflow or identity")
    return policies


def _refusal(exc: BaseException, policies: list[_Recorded], what: str) -> QualificationError:
    for policy in policies:
        if policy.refusal is not None:
            return QualificationError(policy.code, f"{what}: signer identity refused: {policy.refusal[:300]}")
    return QualificationError(
        Code.SIGNATURE_INVALID,
        f"{what}: Sigstore verification failed: {_brief(exc)}",
        hint="the signature, certificate chain or transparency log entry does not verify under the pinned root",
    )


def _leaf_identity(bundle: Bundle, expected: ExpectedWorkflow | None, role: SignerRole) -> GitHubIdentity | None:
    if expected is None:
        return None
    identity = identity_from_certificate(bundle.signing_certificate)
    check_identity(identity, expected, role)
    return identity


def verify_dsse_bundle(
    bundle_bytes: bytes,
    trusted_root: PinnedTrustedRoot,
    expected: ExpectedWorkflow,
    what: str,
    *,
    max_bytes: int = MAX_BUNDLE_BYTES,
    role: SignerRole = "platform",
) -> VerifiedSigstorePayload:
    """Verify a DSSE bundle (our statements) and return the exact signed payload bytes.

    The signer must be one of ``expected``'s signers for ``role``; which platform
    a platform statement speaks for is checked by the caller once it is parsed.
    """
    bundle, raw = _parse_bundle(bundle_bytes, what=what, max_bytes=max_bytes)
    if "dsseEnvelope" not in raw:
        raise QualificationError(Code.SCHEMA_INVALID, f"{what}: the bundle holds no DSSE envelope")
    policies = _policies(expected, None)
    try:
        payload_type, payload = trusted_root.verifier.verify_dsse(bundle, AllOf(list(policies)))
    except _VERIFY_ERRORS as exc:
        raise _refusal(exc, policies, what) from exc
    identity = identity_from_certificate(bundle.signing_certificate)
    try:
        check_identity(identity, expected, role)
    except QualificationError as exc:
        # Which file was refused matters as much as why: the message names it.
        raise QualificationError(exc.code, f"{what}: {exc.message}", hint=exc.hint) from exc
    if payload_type != IN_TOTO_PAYLOAD_TYPE:
        raise QualificationError(Code.SCHEMA_INVALID, f"{what}: payload type {payload_type[:100]!r} is not in-toto")
    return VerifiedSigstorePayload(
        payload, payload_type, identity, hashlib.sha256(bundle_bytes).hexdigest(), _certificate_sha256(bundle)
    )


def _artifact_digest(artifact: bytes | str) -> str:
    if isinstance(artifact, bytes):
        return hashlib.sha256(artifact).hexdigest()
    if _SHA256_HEX.fullmatch(artifact) is None:
        raise QualificationError(Code.USAGE, f"artifact digest {artifact[:80]!r} is not 64 lowercase hex digits")
    return artifact


def _subject_digests(payload: bytes, payload_type: str, what: str, *, predicate_type: str | None = None
                     ) -> set[str]:
    if payload_type != IN_TOTO_PAYLOAD_TYPE:
        raise QualificationError(Code.SCHEMA_INVALID, f"{what}: payload type {payload_type[:100]!r} is not in-toto")
    statement = load_json(payload, what=f"{what} statement", bounds=JsonBounds(max_bytes=len(payload)))
    subjects = statement.get("subject") if isinstance(statement, dict) else None
    if not isinstance(subjects, list) or not 0 < len(subjects) <= _MAX_SUBJECTS:
        raise QualificationError(Code.SCHEMA_INVALID, f"{what}: the statement has no usable subject list")
    # When the caller names the kind of statement it wants, no other signed statement can stand in for it.
    if predicate_type is not None and (not isinstance(statement, dict)
                                       or statement.get("predicateType") != predicate_type or len(subjects) != 1):
        raise QualificationError(Code.PREDICATE_TYPE_UNKNOWN,
                                 f"{what}: not a one-subject statement of type {predicate_type}")
    digests: set[str] = set()
    for subject in subjects:
        digest = subject.get("digest") if isinstance(subject, dict) else None
        value = digest.get("sha256") if isinstance(digest, dict) else None
        if isinstance(value, str):
            digests.add(value)
    return digests


def verify_artifact_bundle(
    bundle_bytes: bytes,
    artifact: bytes | str,
    trusted_root: PinnedTrustedRoot,
    expected: ExpectedWorkflow | None,
    *,
    certificate_identity: CertificateIdentity | None = None,
    what: str,
    max_bytes: int = MAX_BUNDLE_BYTES,
    predicate_type: str | None = None,
    role: SignerRole = "platform",
) -> VerifiedSigstoreArtifact:
    """Verify that a bundle covers ``artifact`` (its bytes, or its SHA-256 as hex).

    A message-signature (hashedrekord) bundle must sign the artifact's digest; a
    DSSE bundle must carry an in-toto statement with the digest as a subject.
    The signer is ``expected`` (exact workflow identity), ``certificate_identity``
    (SAN and issuer), or both; neither is refused.
    """
    digest = _artifact_digest(artifact)
    bundle, raw = _parse_bundle(bundle_bytes, what=what, max_bytes=max_bytes)
    policies = _policies(expected, certificate_identity)
    policy = AllOf(list(policies))
    try:
        if "dsseEnvelope" in raw:
            payload_type, payload = trusted_root.verifier.verify_dsse(bundle, policy)
        else:
            hashed = Hashed(algorithm=HashAlgorithm.SHA2_256, digest=bytes.fromhex(digest))
            trusted_root.verifier.verify_artifact(hashed, bundle, policy)
    except _VERIFY_ERRORS as exc:
        raise _refusal(exc, policies, what) from exc
    identity = _leaf_identity(bundle, expected, role)
    if predicate_type is not None and "dsseEnvelope" not in raw:
        raise QualificationError(Code.PREDICATE_TYPE_UNKNOWN, f"{what}: a {predicate_type} statement was expected")
    if "dsseEnvelope" in raw and digest not in _subject_digests(payload, payload_type, what,
                                                                predicate_type=predicate_type):
        raise QualificationError(
            Code.ARTIFACT_DIGEST_MISMATCH, f"{what}: no statement subject has the artifact's SHA-256 {digest}"
        )
    return VerifiedSigstoreArtifact(
        digest, identity, hashlib.sha256(bundle_bytes).hexdigest(), _certificate_sha256(bundle)
    )


def _certificate_sha256(bundle: Bundle) -> str:
    return hashlib.sha256(bundle.signing_certificate.public_bytes(serialization.Encoding.DER)).hexdigest()


def _brief(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:300]
