"""GitHub mode: the last qualified release, read from the repository's releases (README, "The update journey").

The newest published release (not a draft, not a pre-release) of the policy's repository is the
previous release. It must carry exactly one qualification bundle; the bundle is downloaded and
audited as ``qualify audit --bundle`` would (``_previous``), and only then is the release asset
named as the audited artifact for this platform downloaded, and held to the audited digest. What
GitHub reports about an asset (its size, its digest) is a cap and a first check, never the proof.
"""

from __future__ import annotations

from pathlib import Path

from desktop_qualify.evidence_schemas import ArtifactRef, Platform
from desktop_qualify.qualify_bundle import BUNDLE_SUFFIX, MAX_ARCHIVE_BYTES
from desktop_qualify.qualify_github import GitHubClient, ReleaseInfo
from desktop_qualify.qualify_policy import Policy

from ._previous import AuditedPrevious, audit_previous_bundle, unqualified

# The same cap read-back uses for a release asset: an app bundle is tens of MiB.
MAX_ASSET_BYTES = 2 * 1024**3


def latest_release(client: GitHubClient, repository: str) -> ReleaseInfo:
    """The newest published, non-pre-release release (GitHub lists releases newest first)."""
    published = [r for r in client.releases(repository) if not r.draft and not r.prerelease]
    if not published:
        raise unqualified(f"{repository} has no published release to update from")
    return published[0]


def previous_from_release(policy: Policy, anchor: Policy, client: GitHubClient, platform: Platform,
                          folder: Path) -> AuditedPrevious:
    """Download, audit and check the previous release into ``folder`` (which must outlive the job)."""
    repository = policy.file.producer.repository
    release = latest_release(client, repository)
    bundles = [a for a in release.assets if a.name.endswith(BUNDLE_SUFFIX)]
    if len(bundles) != 1:
        raise unqualified(f"{repository} {release.tag_name}: {len(bundles)} qualification bundles "
                          f"(*{BUNDLE_SUFFIX}); a release carries exactly one")
    folder.mkdir(parents=True, exist_ok=True)
    bundle = client.download_asset(bundles[0], folder / bundles[0].name, max_bytes=MAX_ARCHIVE_BYTES).path

    def artifact_for(artifact: ArtifactRef) -> Path:
        assets = [a for a in release.assets if a.name == artifact.name]
        if len(assets) != 1:
            raise unqualified(f"{repository} {release.tag_name}: the audited artifact {artifact.name} is published "
                              f"{len(assets)} times, not once")
        return client.download_asset(assets[0], folder / artifact.name, max_bytes=MAX_ASSET_BYTES).path

    return audit_previous_bundle(policy, anchor, bundle, platform, artifact_for)
