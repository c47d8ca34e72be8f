"""Fulcio claims of a GitHub Actions OIDC token, as Fulcio maps them into a certificate.

Mapping from Fulcio's GitHub issuer configuration (docs/oid-info.md): the
deprecated v1 claims .1 to .6 are kept because
`sigstore.verify.policy.Identity(issuer=...)` still reads .1.

Reusable workflows, as Fulcio shapes them (and as the real
`attest_reusable_workflow` vector in ../shared/vectors shows): the job's
`job_workflow_ref`/`job_workflow_sha` (the reusable file) become the SAN, .9 and
.10; the caller's `workflow_ref`/`workflow_sha` become .18 and .19; the
repository, ref, commit, trigger and run (.12 to .14, .20, .21) are the caller's
run. A `signer_workflow` of None is a top-level job: .9 = .18. A `signer_repository`
is a call into another repository at `signer_ref` (a team calling
desktop-qualify's workflows at a tag): .9 names that repository and ref, .10
`signer_sha`, and everything else stays the caller's.
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
    # The reusable workflow the job runs (a local `uses: ./.github/workflows/FILE`), or None.
    signer_workflow: str | None = None
    # A reusable workflow of another repository (`uses: OWNER/REPO/.github/workflows/FILE@vX.Y.Z`, as a team
    # calls desktop-qualify's): its repository, the ref it was called at and that ref's commit (.9, .10).
    signer_repository: str | None = None
    signer_ref: str | None = None
    signer_sha: str | None = None

    @property
    def workflow_ref(self) -> str:
        """`OWNER/REPO/PATH@REF`, the token's `workflow_ref` (the top-level, calling workflow)."""
        return f"{self.repository}/{self.workflow}@{self.ref}"

    @property
    def job_workflow_ref(self) -> str:
        """The token's `job_workflow_ref`: the reusable workflow a local call runs at the caller's ref, or one of
        another repository at the ref it was called at."""
        if self.signer_repository is not None:
            return f"{self.signer_repository}/{self.signer_workflow or self.workflow}@{self.signer_ref}"
        return f"{self.repository}/{self.signer_workflow or self.workflow}@{self.ref}"

    @property
    def job_workflow_sha(self) -> str:
        """The token's `job_workflow_sha` (.10): the called file's commit, the caller's for a local call."""
        return self.signer_sha if self.signer_repository is not None and self.signer_sha else self.sha

    @property
    def san_uri(self) -> str:
        """The certificate SAN: the build signer (the job's workflow file at ref)."""
        return f"{_GH}/{self.job_workflow_ref}"

    @property
    def build_config_uri(self) -> str:
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
            f"{arc}10": self.job_workflow_sha,
            f"{arc}11": self.runner_environment,
            f"{arc}12": f"{_GH}/{self.repository}",
            f"{arc}13": self.sha,
            f"{arc}14": self.ref,
            f"{arc}18": self.build_config_uri,
            f"{arc}19": self.sha,
            f"{arc}20": self.trigger,
            f"{arc}21": self.run_invocation_uri,
        }
