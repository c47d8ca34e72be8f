"""The shared signing and verification layer used by producer, aggregate and consumer.

Local trust mode: DSSE envelopes signed with Ed25519 keys that a policy's keyring
names. GitHub mode: Sigstore bundles signed keylessly by the producer workflow,
verified offline under a pinned trusted root, the signer's workflow identity
read from the Fulcio certificate and compared exactly with the policy's.

The Sigstore half loads on first use of one of its names, so that local mode
never imports sigstore-python.
"""

from typing import TYPE_CHECKING

from desktop_qualify.qualify_runtime import lazy_attributes

from ._dsse import pae
from ._envelope import (
    ARTIFACT_DIGEST_TYPE,
    VerifiedPayload,
    sign_artifact_digest,
    sign_envelope,
    verify_artifact_digest,
    verify_envelope,
)
from ._interfaces import ArtifactSignature, SignerIdentity, StatementSigner, StatementVerifier, VerifiedStatement
from ._keyring import Keyring, Role, TrustedKey, add_to_keyring
from ._keys import generate_private_key, keyid_of, load_private_key
from ._local import LOCAL_SUFFIX, KeyringVerifier, LocalSigner
from ._policy_trust import signer_for, verifier_for
from ._sigstore_expected import (
    CertificateIdentity,
    ExpectedWorkflow,
    SignerRole,
    check_identity,
    check_platform_signer,
    cross_check_claims,
    same_run,
)
from ._sigstore_identity import GitHubIdentity, identity_from_certificate, parse_run_invocation_uri

if TYPE_CHECKING:
    from ._github_mode import SIGSTORE_SUFFIX, SigstoreSigner, SigstoreVerifier
    from ._sigstore_root import PinnedTrustedRoot, load_pinned_trusted_root, load_trusted_root, trusted_root_from_bytes
    from ._sigstore_sign import sign_artifact_bundle, sign_dsse_statement
    from ._sigstore_verify import (
        MAX_BUNDLE_BYTES,
        VerifiedSigstoreArtifact,
        VerifiedSigstorePayload,
        verify_artifact_bundle,
        verify_dsse_bundle,
    )

# Name -> the private module that defines it, imported when the name is first used.
_LAZY = {
    "SIGSTORE_SUFFIX": "._github_mode",
    "SigstoreSigner": "._github_mode",
    "SigstoreVerifier": "._github_mode",
    "PinnedTrustedRoot": "._sigstore_root",
    "load_pinned_trusted_root": "._sigstore_root",
    "load_trusted_root": "._sigstore_root",
    "trusted_root_from_bytes": "._sigstore_root",
    "sign_artifact_bundle": "._sigstore_sign",
    "sign_dsse_statement": "._sigstore_sign",
    "MAX_BUNDLE_BYTES": "._sigstore_verify",
    "VerifiedSigstoreArtifact": "._sigstore_verify",
    "VerifiedSigstorePayload": "._sigstore_verify",
    "verify_artifact_bundle": "._sigstore_verify",
    "verify_dsse_bundle": "._sigstore_verify",
}

__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "ArtifactSignature",
    "KeyringVerifier",
    "LOCAL_SUFFIX",
    "LocalSigner",
    "SIGSTORE_SUFFIX",
    "SigstoreSigner",
    "SigstoreVerifier",
    "SignerIdentity",
    "StatementSigner",
    "StatementVerifier",
    "VerifiedStatement",
    "signer_for",
    "verifier_for",
    "ARTIFACT_DIGEST_TYPE",
    "MAX_BUNDLE_BYTES",
    "CertificateIdentity",
    "ExpectedWorkflow",
    "GitHubIdentity",
    "Keyring",
    "PinnedTrustedRoot",
    "Role",
    "SignerRole",
    "TrustedKey",
    "VerifiedPayload",
    "VerifiedSigstoreArtifact",
    "VerifiedSigstorePayload",
    "add_to_keyring",
    "check_identity",
    "check_platform_signer",
    "cross_check_claims",
    "generate_private_key",
    "identity_from_certificate",
    "keyid_of",
    "load_pinned_trusted_root",
    "load_private_key",
    "load_trusted_root",
    "pae",
    "parse_run_invocation_uri",
    "same_run",
    "sign_artifact_bundle",
    "sign_artifact_digest",
    "sign_dsse_statement",
    "sign_envelope",
    "trusted_root_from_bytes",
    "verify_artifact_bundle",
    "verify_artifact_digest",
    "verify_dsse_bundle",
    "verify_envelope",
]
