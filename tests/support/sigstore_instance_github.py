"""Fulcio claims of a GitHub Actions OIDC token, as Fulcio maps them into a certificate.

Mapping from Fulcio's GitHub issuer configuration (docs/oid-info.md): the
deprecated v1 claims .1 to .6 are kept because
`sigstore.verify.policy.Identity(issuer=...)` still reads .1.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GITHUB_ISSUER", "GitHubIdentity"]

GITHUB_ISSUER = "https://token.actions.githubusercontent.com"
_GH = "https://github.com"


@dataclass(frozen=True)
class GitHubIdentity:
    """The workflow run a test certificate claims to come from."""

    repository: str = "desktop-qualify/desktop-qualify"
    workflow: str = ".github/workflows/qualify.yml"
    ref: str = "refs/heads/main"
    sha: str = "0123456789abcdef0123456789abcdef01234567"
    run_id: int = 4242
    attempt: int = 1
    trigger: str = "push"
    runner_environment: str = "github-hosted"
    workflow_name: str = "qualify"
    issuer: str = GITHUB_ISSUER

    @property
    def workflow_ref(self) -> str:
        """`OWNER/REPO/PATH@REF`, the token's `job_workflow_ref` and `workflow_ref`."""
        return f"{self.repository}/{self.workflow}@{self.ref}"

    @property
    def san_uri(self) -> str:
        """The certificate SAN: the build signer (workflow file at ref)."""
        return f"{_GH}/{self.workflow_ref}"

    @property
    def run_invocation_uri(self) -> str:
        return f"{_GH}/{self.repository}/actions/runs/{self.run_id}/attempts/{self.attempt}"

    @property
    def extensions(self) -> dict[str, str]:
        """Dotted OID -> claim value for every claim the certificate carries."""
        arc = "1.3.6.1.4.1.57264.1."
        return {
            f"{arc}1": self.issuer,
            f"{arc}2": self.trigger,
            f"{arc}3": self.sha,
            f"{arc}4": self.workflow_name,
            f"{arc}5": self.repository,
            f"{arc}6": self.ref,
            f"{arc}8": self.issuer,
            f"{arc}9": self.san_uri,
            f"{arc}10": self.sha,
            f"{arc}11": self.runner_environment,
            f"{arc}12": f"{_GH}/{self.repository}",
            f"{arc}13": self.sha,
            f"{arc}14": self.ref,
            f"{arc}18": self.san_uri,
            f"{arc}20": self.trigger,
            f"{arc}21": self.run_invocation_uri,
        }
