"""Post-release read-back: what the public download channel serves is exactly what was qualified.

The release gate checks candidate files before publication; nothing it checked
says what the release page serves afterwards. Read-back downloads the
published release's assets and its qualification bundle through the GitHub
layer and checks, from the bytes it received:

- the release is published (not a draft);
- ``--repository`` is the policy's repository (else ``QE_USAGE``, before any
  request);
- it carries exactly one bundle, and the bundle audits to QUALIFIED under the
  auditor's anchor, which for read-back is the auditor's ``--policy`` byte for
  byte (``consumer._anchor``); a hostile bundle is a rejection, never exit 2;
- the release's tag names the commit the bundle qualified, read now through
  the API (a tag moved after the gate: ``QE_SHA_MISMATCH``);
- every asset's SHA-256 is a digest the bundle qualified, under the name the
  bundle gave it (an extra or swapped asset: ``QE_RELEASE_ASSET_UNQUALIFIED``);
- every qualified artifact is there (``QE_RELEASE_ASSET_MISSING``);
- a summaries asset (``*.intoto.jsonl``, the gate's Verification Summary
  Attestations) holds only summaries signed by the policy's verifier identity,
  PASSED under this policy, of artifacts the bundle qualified (``QE_VSA_*``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, ConsumerDecision, QualificationError, Reason, read_bounded
from desktop_qualify.qualify_bundle import BUNDLE_SUFFIX, MAX_ARCHIVE_BYTES
from desktop_qualify.qualify_github import AssetInfo, GitHubClient
from desktop_qualify.qualify_policy import Policy, load_policy
from desktop_qualify.qualify_runtime import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, guarded, require_inputs, terminal_safe
from desktop_qualify.qualify_trust import vsa_verifier_for

from ._bundles import anchor_for, audit_bundle
from ._verify_vsa import MAX_VSA_FILE_BYTES, SUMMARIES_SUFFIX, check_release_summaries

# An app bundle is tens of MiB; the cap keeps a hostile release page from filling the disk.
MAX_ASSET_BYTES = 2 * 1024**3


@dataclass
class Readback:
    repository: str
    tag: str
    bundle: ConsumerDecision | None = None
    checked: list[str] = field(default_factory=list)
    reasons: list[Reason] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.reasons and self.bundle is not None and self.bundle.decision == "QUALIFIED"

    def refuse(self, code: Code, message: str) -> None:
        self.reasons.append(Reason(code=code, message=message[:4000]))


def _qualified(decision: ConsumerDecision) -> dict[str, str]:
    """Artifact name -> SHA-256, for every platform the bundle qualified."""
    return {row.artifact: row.sha256 for row in decision.rows if row.artifact is not None and row.sha256}


def check_repository(policy: Policy, repository: str) -> None:
    """The release is read from the repository the policy qualifies, never from another one."""
    if repository.casefold() != policy.file.producer.repository.casefold():
        raise QualificationError(Code.USAGE, f"--repository {repository[:200]} is not the policy's repository "
                                             f"{policy.file.producer.repository}; read-back checks the releases of the "
                                             "repository the policy qualifies")


def readback(policy: Policy, repository: str, tag: str, client: GitHubClient) -> Readback:
    check_repository(policy, repository)
    result = Readback(repository, tag)
    release = client.release_by_tag(repository, tag)
    if release.draft:
        result.refuse(Code.RELEASE_NOT_PUBLISHED, f"{repository} {tag}: the release is still a draft; read-back "
                                                  "checks what the public channel serves, after publication")
        return result
    bundles = [a for a in release.assets if a.name.endswith(BUNDLE_SUFFIX)]
    if len(bundles) != 1:
        result.refuse(Code.RELEASE_ASSET_MISSING if not bundles else Code.RELEASE_ASSET_UNQUALIFIED,
                      f"{repository} {tag}: {len(bundles)} qualification bundles (*{BUNDLE_SUFFIX}); a release "
                      "carries exactly one")
        return result
    with tempfile.TemporaryDirectory(prefix="qualify-readback-") as name:
        work = Path(name)
        got = client.download_asset(bundles[0], work / bundles[0].name, max_bytes=MAX_ARCHIVE_BYTES)
        try:
            result.bundle = audit_bundle(got.path, anchor_for(policy, exact_only=True), work / "opened").decision
        except QualificationError as exc:
            if exc.exit_status == EXIT_USAGE:
                raise
            result.refuse(exc.code, exc.message)
            return result
        if result.bundle.decision != "QUALIFIED":
            result.refuse(Code.RELEASE_ASSET_UNQUALIFIED, f"{repository} {tag}: the release's bundle "
                                                          f"{bundles[0].name} does not qualify")
            return result
        _check_tag(result, result.bundle, client)
        qualified = _qualified(result.bundle)
        summaries = [a for a in release.assets if a.name.endswith(SUMMARIES_SUFFIX)]
        _check_assets(result, [a for a in release.assets if a is not bundles[0] and a not in summaries], qualified,
                      client, work)
        for asset in summaries:
            _check_summaries(result, asset, qualified, policy, client=client, work=work)
    return result


def _check_summaries(result: Readback, asset: AssetInfo, qualified: dict[str, str], policy: Policy, *,
                     client: GitHubClient, work: Path) -> None:
    """The gate's Verification Summary Attestations beside the artifacts: each signed by the policy's verifier,
    PASSED under this policy, for an artifact the bundle qualified; anything else is an unqualified asset."""
    got = client.download_asset(asset, work / f"asset-{asset.id}", max_bytes=MAX_VSA_FILE_BYTES)
    try:
        data = read_bounded(got.path, max_bytes=MAX_VSA_FILE_BYTES, what=asset.name)
        count = check_release_summaries(data, qualified, policy, vsa_verifier_for(policy), asset.name)
    except QualificationError as exc:
        if exc.exit_status == EXIT_USAGE:
            raise
        result.refuse(exc.code, exc.message)
        return
    finally:
        got.path.unlink(missing_ok=True)
    result.checked.append(f"{asset.name}: {count} verification summaries, signed by the policy's verifier, "
                          "each PASSED for a qualified artifact")


def _check_tag(result: Readback, bundle: ConsumerDecision, client: GitHubClient) -> None:
    """The tag the release is published under names the commit its bundle qualified."""
    commit = client.tag_commit(result.repository, result.tag)
    if bundle.candidate_sha != commit:
        result.refuse(Code.SHA_MISMATCH, f"{result.repository} {result.tag}: the tag names commit {commit[:12]}, the "
                                         f"release's bundle qualified {(bundle.candidate_sha or 'no commit')[:12]}")
    else:
        result.checked.append(f"tag {result.tag}: commit {commit} as qualified")


def _check_assets(result: Readback, assets: list[AssetInfo], qualified: dict[str, str], client: GitHubClient,
                  work: Path) -> None:
    seen: set[str] = set()
    for asset in assets:
        got = client.download_asset(asset, work / f"asset-{asset.id}", max_bytes=MAX_ASSET_BYTES)
        got.path.unlink(missing_ok=True)
        want = qualified.get(asset.name)
        if want is None:
            result.refuse(Code.RELEASE_ASSET_UNQUALIFIED, f"{asset.name}: published beside the qualified artifacts, "
                                                          "but no statement in the bundle qualified it")
        elif got.sha256 != want:
            result.refuse(Code.RELEASE_ASSET_UNQUALIFIED, f"{asset.name}: the release serves SHA-256 "
                                                          f"{got.sha256[:16]}, the bundle qualified {want[:16]}")
        else:
            seen.add(asset.name)
            result.checked.append(f"{asset.name}: sha256 {got.sha256} as qualified")
    for name in sorted(set(qualified) - seen - {a.name for a in assets}):
        result.refuse(Code.RELEASE_ASSET_MISSING, f"{name}: qualified by the bundle but not published")


def render_readback(result: Readback) -> str:
    lines = [f"== read-back of {result.repository} {result.tag}"]
    lines += [f"ok      {line}" for line in result.checked]
    if result.bundle is not None:
        lines.append(f"bundle  {result.bundle.decision}: run {result.bundle.run_id}#{result.bundle.attempt} of "
                     f"{(result.bundle.candidate_sha or '?')[:12]}, policy {result.bundle.policy.sha256[:16]}")
        lines += [f"  {r.code.value}: {r.message}" for r in result.bundle.reasons]
    lines += [f"{r.code.value}: {r.message}" for r in result.reasons]
    lines.append("READBACK OK" if result.ok else "READBACK FAILED")
    return "\n".join(lines) + "\n"


def run_readback(args: argparse.Namespace) -> int:
    """`qualify readback`: exit 0 when the release serves exactly what its bundle qualified."""

    def body() -> int:
        require_inputs("--root", [args.root], "folder")
        policy = load_policy(args.policy, args.root)
        check_repository(policy, args.repository)
        with GitHubClient.from_env(os.environ) as client:
            result = readback(policy, args.repository, args.tag, client)
        sys.stdout.write(terminal_safe(render_readback(result)))
        return EXIT_OK if result.ok else EXIT_REJECTED

    return guarded(body)
