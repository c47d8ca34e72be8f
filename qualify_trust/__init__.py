"""The shared signing and verification layer used by producer, aggregate and consumer.

Local trust mode: DSSE envelopes signed with Ed25519 keys that a policy's keyring
names. GitHub mode (Sigstore) is not implemented yet; see the README.
"""

from ._dsse import pae
from ._envelope import (
    ARTIFACT_DIGEST_TYPE,
    VerifiedPayload,
    sign_artifact_digest,
    sign_envelope,
    verify_artifact_digest,
    verify_envelope,
)
from ._keyring import Keyring, Role, TrustedKey, add_to_keyring
from ._keys import generate_private_key, keyid_of, load_private_key

__all__ = [
    "ARTIFACT_DIGEST_TYPE",
    "Keyring",
    "Role",
    "TrustedKey",
    "VerifiedPayload",
    "add_to_keyring",
    "generate_private_key",
    "keyid_of",
    "load_private_key",
    "pae",
    "sign_artifact_digest",
    "sign_envelope",
    "verify_artifact_digest",
    "verify_envelope",
]
