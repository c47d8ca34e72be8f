"""From a policy's `[trust]` section to the signer and verifier the stages use."""

from __future__ import annotations

from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_policy import Policy

from ._interfaces import StatementSigner, StatementVerifier
from ._keyring import Keyring, Role
from ._keys import load_private_key
from ._local import KeyringVerifier, LocalSigner
from ._sigstore_expected import ExpectedWorkflow

# The Sigstore modules are imported inside the GitHub-mode branches: local mode never loads sigstore-python.


def verifier_for(policy: Policy, *, candidate_sha: str | None = None) -> StatementVerifier:
    """The verifier the policy names; the trust root comes from the policy file only."""
    sigstore = policy.sigstore
    if sigstore is not None:
        from ._github_mode import SigstoreVerifier
        from ._sigstore_root import load_pinned_trusted_root

        root = load_pinned_trusted_root(policy.resolve_pinned(sigstore.trusted_root), sigstore.trusted_root_sha256)
        return SigstoreVerifier(root, ExpectedWorkflow.from_policy(policy, candidate_sha=candidate_sha))
    return KeyringVerifier(Keyring.load(policy.resolve(policy.ed25519.keyring)))


def signer_for(policy: Policy, role: Role) -> StatementSigner:
    """This job's signer for ``role`` under the policy (keyless with the job's OIDC token in GitHub mode)."""
    if policy.sigstore is not None:
        from ._github_mode import SigstoreSigner

        return SigstoreSigner()
    trust = policy.ed25519
    keys = {"platform": trust.platform_key, "aggregate": trust.aggregate_key, "verifier": trust.verifier_key}
    key_path = keys[role]
    if key_path is None:
        raise QualificationError(Code.POLICY_INVALID, f"{policy.path}: [trust] names no {role}_key",
                                 hint="add verifier_key to [trust] (policies/local.toml shows it) and run "
                                      "'qualify keygen --policy FILE'")
    keyring = Keyring.load(policy.resolve(trust.keyring))
    return LocalSigner(load_private_key(policy.resolve(key_path)), keyring, role)


def vsa_verifier_for(policy: Policy) -> StatementVerifier:
    """Who may sign the gate's VSAs under the policy: the keyring's verifier role, or the [verifier] workflow.

    Callers verify with ``role="verifier"``; the identity comes from the policy file only.
    """
    sigstore = policy.sigstore
    if sigstore is None:
        return verifier_for(policy)
    from ._github_mode import SigstoreVerifier
    from ._sigstore_root import load_pinned_trusted_root

    root = load_pinned_trusted_root(policy.resolve_pinned(sigstore.trusted_root), sigstore.trusted_root_sha256)
    return SigstoreVerifier(root, ExpectedWorkflow.verifier_from_policy(policy))
