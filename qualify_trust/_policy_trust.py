"""From a policy's `[trust]` section to the signer and verifier the stages use."""

from __future__ import annotations

from qualify_policy import Policy

from ._interfaces import StatementSigner, StatementVerifier
from ._keyring import Keyring, Role
from ._keys import load_private_key
from ._local import KeyringVerifier, LocalSigner


def verifier_for(policy: Policy) -> StatementVerifier:
    """The verifier the policy names; the trust root comes from the policy file only."""
    trust = policy.ed25519
    return KeyringVerifier(Keyring.load(policy.resolve(trust.keyring)))


def signer_for(policy: Policy, role: Role) -> StatementSigner:
    """This machine's signer for ``role`` under the policy."""
    trust = policy.ed25519
    keyring = Keyring.load(policy.resolve(trust.keyring))
    key_path = trust.platform_key if role == "platform" else trust.aggregate_key
    return LocalSigner(load_private_key(policy.resolve(key_path)), keyring, role)
