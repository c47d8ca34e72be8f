"""The shared signing and verification layer used by producer, aggregate and consumer.

Local trust mode: DSSE envelopes signed with Ed25519 keys that a policy's keyring
names. GitHub mode: Sigstore bundles signed keylessly by the producer workflow,
verified offline under a pinned trusted root, the signer's workflow identity
read from the Fulcio certificate and compared exactly with the policy's.

The stages need little of it: a signer or verifier for a policy, the run
checks over verified statements, and the local key operations. The Sigstore
pieces that a Sigstore client needs on their own (the conformance client) are
in ``qualify_trust.sigstore``; importing this package never loads
sigstore-python or cryptography's X.509 layer, so local mode stays light.
"""

from ._github_identity import GitHubIdentity
from ._interfaces import ArtifactSignature, SignerIdentity, StatementSigner, StatementVerifier, VerifiedStatement
from ._keyring import Keyring, Role, add_to_keyring
from ._keys import generate_private_key, load_private_key
from ._policy_trust import signer_for, verifier_for, vsa_verifier_for
from ._self_signed import public_key_text, sign_self_signed, verify_rebuild_attestation
from ._sigstore_expected import cross_check_claims, same_run

__all__ = [
    "ArtifactSignature",
    "GitHubIdentity",
    "Keyring",
    "Role",
    "SignerIdentity",
    "StatementSigner",
    "StatementVerifier",
    "VerifiedStatement",
    "add_to_keyring",
    "cross_check_claims",
    "generate_private_key",
    "load_private_key",
    "public_key_text",
    "same_run",
    "sign_self_signed",
    "signer_for",
    "verifier_for",
    "vsa_verifier_for",
    "verify_rebuild_attestation",
]
