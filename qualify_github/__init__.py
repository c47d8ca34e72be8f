"""GitHub access on PyGithub: branches, protection, rulesets, workflow runs, artifacts, releases.

Shared by the producer (source gate) and the consumer, which only read; the
aggregate job also stores its verified statements as attestations
(``store_evidence``). Bounded retries, timeouts, pagination and download caps
live in :class:`ClientConfig`.
"""

from ._attestations import StoredAttestation, attestations_for, store_attestation, store_evidence
from ._client import GitHubClient
from ._config import DEFAULT_API_URL, ClientConfig, RetryPolicy
from ._errors import GitHubError
from ._models import ArtifactInfo, AssetInfo, BranchInfo, Downloaded, ReleaseInfo, RulesetRule, RunInfo

__all__ = [
    "DEFAULT_API_URL",
    "ArtifactInfo",
    "AssetInfo",
    "BranchInfo",
    "ClientConfig",
    "Downloaded",
    "GitHubClient",
    "GitHubError",
    "ReleaseInfo",
    "RetryPolicy",
    "RulesetRule",
    "RunInfo",
    "StoredAttestation",
    "attestations_for",
    "store_attestation",
    "store_evidence",
]
