"""GitHub mode: the last release the gate passed, read from the repository's releases (docs/update-journey.md).

The previous release is the newest published release (not a draft, not a pre-release) by GitHub's
``created_at`` (then the higher release id), and it must be vouched for as the last release the release
gate passed, from what GitHub holds:

1. it carries exactly one qualification bundle, which audits as ``qualify audit --bundle`` would under
   the anchor policy (``_previous``), and the asset named as the audited artifact for this platform is
   those bytes (else ``QE_PREVIOUS_RELEASE_UNQUALIFIED``);
2. its tag names, read now through the API, the commit that bundle qualified;
3. its commit is an ancestor of the candidate's, or the candidate's itself (GitHub's compare of
   ``previous...candidate``: ``ahead`` or ``identical``, never ``behind`` or ``diverged``);
4. the published release created before it that carries a qualification bundle (if any) is of an ancestor
   of its commit, or of that commit itself: an older release re-published after a newer one is not the
   last release the gate passed, and would have the journey test an older upgrade path;
5. it carries exactly one summaries asset (``*.intoto.jsonl``, what ``release.yml`` attaches), and
   ``qualify verify-vsa`` under the anchor policy accepts it for the artifact: signed by the policy's
   verifier, PASSED under that policy, at the gate's level.

2 to 5 refuse with ``QE_PREVIOUS_RELEASE_NOT_VOUCHED``. Times order the releases; the verdict rests on the
bundle's audit, the tag, the commit graph and the signed summaries. What GitHub reports about an asset
(its size, its digest) is a cap and a first check, never the proof.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from desktop_qualify.evidence_schemas import GIT_SHA_PATTERN, ArtifactRef, Code, Platform, QualificationError
from desktop_qualify.qualify_bundle import BUNDLE_SUFFIX, MAX_ARCHIVE_BYTES
from desktop_qualify.qualify_github import AssetInfo, GitHubClient, GitHubError, ReleaseInfo
from desktop_qualify.qualify_policy import Policy

from ._previous import AuditedPrevious, audit_previous_bundle, check_gate_summaries, not_vouched, unqualified

# The same cap read-back uses for a release asset: an app bundle is tens of MiB.
MAX_ASSET_BYTES = 2 * 1024**3
# What release.yml names the gate's summaries file (consumer._verify_vsa.SUMMARIES_SUFFIX; the stages never
# import each other), and the cap verify-vsa reads it under.
SUMMARIES_SUFFIX = ".intoto.jsonl"
MAX_SUMMARIES_BYTES = 64 * 1024 * 1024
# GitHub's compare statuses under which the base commit is the head's ancestor or the head itself.
DESCENDS = frozenset({"ahead", "identical"})
_NOT_FOUND = 404
_SHA = re.compile(GIT_SHA_PATTERN)


def _created(release: ReleaseInfo) -> tuple[datetime, int]:
    if release.created_at is None:
        raise not_vouched(f"{release.repository} {release.tag_name}: GitHub gives no creation time for the release")
    return release.created_at, release.id


def published_releases(client: GitHubClient, repository: str) -> list[ReleaseInfo]:
    """The published, non-pre-release releases, newest ``created_at`` first (then the higher id)."""
    published = [r for r in client.releases(repository) if not r.draft and not r.prerelease]
    return sorted(published, key=_created, reverse=True)


def latest_release(client: GitHubClient, repository: str) -> ReleaseInfo:
    """The newest published, non-pre-release release, by creation time."""
    published = published_releases(client, repository)
    if not published:
        raise unqualified(f"{repository} has no published release to update from")
    return published[0]


def _bundles(release: ReleaseInfo) -> list[AssetInfo]:
    return [a for a in release.assets if a.name.endswith(BUNDLE_SUFFIX)]


def _tag_commit(client: GitHubClient, release: ReleaseInfo) -> str:
    try:
        return client.tag_commit(release.repository, release.tag_name)
    except GitHubError as exc:
        if exc.status != _NOT_FOUND:
            raise
        raise not_vouched(f"{release.repository} {release.tag_name}: the release's tag does not exist") from None


def _descends(client: GitHubClient, repository: str, base: str, head: str) -> str:
    """GitHub's compare status of ``head`` against ``base``; a commit GitHub does not know is ``unknown``."""
    try:
        return client.compare(repository, base, head)
    except GitHubError as exc:
        if exc.status != _NOT_FOUND:
            raise
        return "unknown"


def _vouch(client: GitHubClient, release: ReleaseInfo, audited: AuditedPrevious, *, anchor: Policy,
           earlier: list[ReleaseInfo], candidate_sha: str, folder: Path) -> None:
    """Checks 2 to 5 of the module's rule, on the release whose bundle audited (1)."""
    repository, tag, sha = release.repository, release.tag_name, audited.facts.sha
    tagged = _tag_commit(client, release)
    if tagged != sha:
        raise not_vouched(f"{repository} {tag}: the tag names commit {tagged[:12]}, the release's bundle "
                          f"qualified {sha[:12]}")
    status = _descends(client, repository, sha, candidate_sha)
    if status not in DESCENDS:
        raise not_vouched(f"{repository} {tag}: its commit {sha[:12]} is not an ancestor of the candidate "
                          f"{candidate_sha[:12]} (GitHub's compare: {status})")
    before = next((r for r in earlier if _bundles(r)), None)
    if before is not None:
        older = _tag_commit(client, before)
        status = _descends(client, repository, older, sha)
        if status not in DESCENDS:
            raise not_vouched(f"{repository} {tag} (commit {sha[:12]}) was published after {before.tag_name} "
                              f"(commit {older[:12]}) but is not of a descendant of its commit (GitHub's compare: "
                              f"{status}): an older release re-published is not the last release the gate passed")
    summaries = [a for a in release.assets if a.name.endswith(SUMMARIES_SUFFIX)]
    if len(summaries) != 1:
        raise not_vouched(f"{repository} {tag}: {len(summaries)} gate summaries assets (*{SUMMARIES_SUFFIX}); "
                          "the release gate attaches exactly one")
    got = client.download_asset(summaries[0], folder / summaries[0].name, max_bytes=MAX_SUMMARIES_BYTES).path
    check_gate_summaries(anchor, audited.artifact, got)


def previous_from_release(policy: Policy, anchor: Policy, client: GitHubClient, platform: Platform,
                          folder: Path, *, candidate_sha: str) -> AuditedPrevious:
    """Download, audit and vouch for the previous release into ``folder`` (which must outlive the job).

    ``candidate_sha`` is the commit this job qualifies (``GITHUB_SHA``, which the source gate then holds to
    main's head and the checkout): the previous release's commit must be its ancestor.
    """
    if not _SHA.match(candidate_sha or ""):
        raise QualificationError(Code.ENVIRONMENT, f"the candidate commit {candidate_sha[:80]!r} is not a commit "
                                                   "id (GITHUB_SHA)")
    repository = policy.file.producer.repository
    published = published_releases(client, repository)
    if not published:
        raise unqualified(f"{repository} has no published release to update from")
    release = published[0]
    bundles = _bundles(release)
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

    audited = audit_previous_bundle(policy, anchor, bundle, platform, artifact_for)
    _vouch(client, release, audited, anchor=anchor, earlier=published[1:], candidate_sha=candidate_sha, folder=folder)
    return audited
