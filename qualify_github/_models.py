"""What the client returns: small frozen values, read once inside the retry loop.

PyGithub objects fetch missing attributes lazily; handing them out would let a
network call (and its failures) happen anywhere. These values are complete.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path


@dataclass(frozen=True)
class BranchInfo:
    """A branch as GitHub reports it: its head commit and its protection."""

    repository: str
    name: str
    head_sha: str
    protected: bool
    # Classic protection's required status checks, as the branch payload shows them to a
    # reader: True only when enforced ("non_admins" or "everyone") with at least one check.
    required_checks_enforced: bool = False


@dataclass(frozen=True)
class RulesetRule:
    """One active rule on a branch, as ``GET /repos/{owner}/{repo}/rules/branches/{branch}`` lists it."""

    type: str
    ruleset_id: int | None
    source_type: str
    source: str


@dataclass(frozen=True)
class RunInfo:
    """A workflow run as GitHub reports it."""

    repository: str
    id: int
    path: str
    event: str
    head_branch: str
    head_sha: str
    run_attempt: int
    status: str
    conclusion: str | None


@dataclass(frozen=True)
class ArtifactInfo:
    """A workflow run's artifact as GitHub reports it."""

    repository: str
    id: int
    name: str
    size_in_bytes: int
    expired: bool
    # "sha256:<hex>" where GitHub reports one (artifacts uploaded since 2025).
    digest: str | None


@dataclass(frozen=True)
class AssetInfo:
    """A release asset as GitHub reports it."""

    repository: str
    id: int
    name: str
    size: int
    digest: str | None


@dataclass(frozen=True)
class ReleaseInfo:
    """A release as GitHub reports it, with its assets."""

    repository: str
    id: int
    tag_name: str
    draft: bool
    prerelease: bool
    assets: tuple[AssetInfo, ...]
    # When GitHub says the release was created (``created_at``); None where the answer gives none.
    created_at: datetime | None = None


@dataclass(frozen=True)
class Downloaded:
    """A downloaded file: where it was written, its size and its SHA-256."""

    path: Path
    size: int
    sha256: str
