"""The last qualified release an update journey starts from: audited before anything else runs.

The release is given as its qualification bundle and its artifact (local mode: by path). The
bundle is audited exactly as an auditor's ``qualify audit --bundle`` would: the producer runs
that command (the consumer's audit, in a process of its own: the stages never import each other)
under the policy the previous release was qualified by (``[update] previous_policy``, default this
one), which anchors the bundle's own policy and, in local mode, its keys. Then the artifact file
must be the audited run's artifact for this platform, byte for byte. Anything less refuses the job
with ``QE_PREVIOUS_RELEASE_UNQUALIFIED`` before its gate runs, so a refused input changes nothing.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    ArtifactRef,
    AuditReport,
    Code,
    JsonBounds,
    Platform,
    PreviousRelease,
    QualificationError,
    load_json,
)
from desktop_qualify.qualify_files import file_sha256
from desktop_qualify.qualify_policy import Policy
from pydantic import ValidationError

from ..processes import excerpt, minimal_environment, run_bounded

# An audit of one bundle re-verifies a few statements: minutes would mean something is wrong.
AUDIT_TIMEOUT_SECONDS = 600
_REPORT_BOUNDS = JsonBounds(max_bytes=4 * 1024 * 1024, max_depth=32)


@dataclass(frozen=True)
class PreviousInput:
    """What the caller names: the previous release's bundle and its artifact for this platform."""

    bundle: Path
    artifact: Path


@dataclass(frozen=True)
class AuditedPrevious:
    facts: PreviousRelease
    artifact: Path


def unqualified(message: str) -> QualificationError:
    return QualificationError(Code.PREVIOUS_RELEASE_UNQUALIFIED, message[:2000],
                              hint="give the bundle and artifact of the last release this policy qualified")


def not_vouched(message: str) -> QualificationError:
    return QualificationError(Code.PREVIOUS_RELEASE_NOT_VOUCHED, message[:2000],
                              hint="the newest published release must be the last one the release gate passed, "
                                   "for an ancestor of this commit (docs/update-journey.md)")


def audit_command(anchor: Policy, bundle: Path, report: Path) -> list[str]:
    """The auditor's own command: ``qualify audit --policy ANCHOR [--root ROOT] --bundle B --json REPORT``."""
    argv = [sys.executable, "-m", "desktop_qualify.consumer", "audit", "--policy", str(anchor.path)]
    if anchor.root is not None:
        argv += ["--root", str(anchor.root)]
    return [*argv, "--bundle", str(bundle), "--json", str(report)]


def summaries_command(anchor: Policy, artifact: Path, summaries: Path) -> list[str]:
    """The auditor's check of the gate's verdict: ``qualify verify-vsa --policy ANCHOR [--root R] --artifact A S``."""
    argv = [sys.executable, "-m", "desktop_qualify.qualify_cli", "verify-vsa", "--policy", str(anchor.path)]
    if anchor.root is not None:
        argv += ["--root", str(anchor.root)]
    return [*argv, "--artifact", str(artifact), str(summaries)]


def check_gate_summaries(anchor: Policy, artifact: Path, summaries: Path) -> None:
    """The gate's Verification Summary Attestations say it PASSED ``artifact`` under ``anchor``, signed by the
    policy's verifier, at the gate's level for the policy's mode: ``qualify verify-vsa`` as its own process,
    exit 0; anything else is ``QE_PREVIOUS_RELEASE_NOT_VOUCHED``."""
    with tempfile.TemporaryDirectory(prefix="qualify-previous-vsa-") as tmp:
        work = Path(tmp)
        env = {**minimal_environment(work), "PATH": _path_with_git()}
        result = run_bounded(summaries_command(anchor, artifact.resolve(), summaries.resolve()),
                             timeout=AUDIT_TIMEOUT_SECONDS, cwd=work, env=env)
    if result.timed_out or result.exit_code != 0:
        said = excerpt(result.stdout, 1500).strip() or excerpt(result.stderr, 1500).strip()
        raise not_vouched(f"the gate's summaries {summaries.name} do not vouch for {artifact.name} "
                          f"(qualify verify-vsa exit {result.exit_code}): {said}")


def _run_audit(anchor: Policy, bundle: Path, work: Path) -> AuditReport:
    report = work / "previous-audit.json"
    env = {**minimal_environment(work), "PATH": _path_with_git()}
    result = run_bounded(audit_command(anchor, bundle, report), timeout=AUDIT_TIMEOUT_SECONDS, cwd=work, env=env)
    said = excerpt(result.stdout, 1500).strip() or excerpt(result.stderr, 1500).strip()
    if result.timed_out or result.exit_code not in (0, 1) or not report.is_file():
        raise unqualified(f"the audit of {bundle.name} did not run to a report (exit {result.exit_code}): {said}")
    data = report.read_bytes()
    # Bounded and strict JSON first (duplicate keys, depth, size); then the model from the same bytes (its
    # codes are enum values, which only JSON validation accepts as text).
    load_json(data, what="previous audit report", bounds=_REPORT_BOUNDS)
    try:
        audited = AuditReport.model_validate_json(data)
    except ValidationError as exc:
        raise unqualified(f"the audit of {bundle.name} wrote a report that is not an audit report "
                           f"({exc.error_count()} errors)") from None
    if audited.decision != "QUALIFIED" or result.exit_code != 0:
        raise unqualified(f"the previous release's bundle {bundle.name} does not audit: {said}")
    return audited


def _path_with_git() -> str:
    # The audit anchors a bundle's policy at its commit with git; the app-facing PATH may not reach it.
    git = shutil.which("git")
    return str(Path(git).parent) if git else ""


def audit_previous(policy: Policy, anchor: Policy, given: PreviousInput, platform: Platform) -> AuditedPrevious:
    """Local mode: the release given by path; its audited facts, or ``QE_PREVIOUS_RELEASE_UNQUALIFIED``."""
    for what, path in (("bundle", given.bundle), ("artifact", given.artifact)):
        if not path.is_file():
            raise QualificationError(Code.USAGE, f"--previous-{what} {path}: not a file")
    return audit_previous_bundle(policy, anchor, given.bundle, platform, lambda _artifact: given.artifact)


def audit_previous_bundle(policy: Policy, anchor: Policy, bundle: Path, platform: Platform,
                          artifact_for: Callable[[ArtifactRef], Path]) -> AuditedPrevious:
    """Audit ``bundle``; then ``artifact_for`` hands over the file claiming to be its artifact for ``platform``
    (a path given, or a release asset downloaded), which must be those bytes."""
    with tempfile.TemporaryDirectory(prefix="qualify-previous-") as tmp:
        audited = _run_audit(anchor, bundle.resolve(), Path(tmp))
    identity = audited.runs[0].identity if len(audited.runs) == 1 else None
    if identity is None:
        raise unqualified(f"{bundle.name}: the audit names {len(audited.runs)} runs, not one identified run")
    run = audited.runs[0]
    if identity.repository != policy.file.producer.repository:
        raise unqualified(f"the previous release is of {identity.repository}, not "
                           f"{policy.file.producer.repository}")
    artifacts = [column.artifact for column in run.platforms if column.platform == platform]
    if len(artifacts) != 1 or artifacts[0] is None:
        raise unqualified(f"the previous release qualified no {platform} artifact")
    artifact = artifacts[0]
    path = artifact_for(artifact)
    digest = file_sha256(path)
    if digest != artifact.sha256 or path.stat().st_size != artifact.size:
        raise unqualified(f"the previous artifact {path.name} (sha256 {digest[:16]}) is not the audited "
                          f"{artifact.name} (sha256 {artifact.sha256[:16]})")
    facts = PreviousRelease(bundle_sha256=file_sha256(bundle), sha=identity.sha,
                            run_id=identity.run_id, artifact=artifact, policy_sha256=anchor.sha256,
                            audit_decision=audited.decision)
    return AuditedPrevious(facts, path.resolve())
