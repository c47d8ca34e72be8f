"""The build's source digest, recomputed from a checkout: a fact, not the producer's word.

``build.source_digest`` is the digest of the app folder as ``git archive``
exports it at the run's commit. Across platforms the verifier already holds
the statements to one value; with a checkout at hand (the release gate runs
in the repository, ``qualify audit --root`` names one) the value itself is
recomputed from the commit and a mismatch refused with
``QE_SOURCE_DIGEST_MISMATCH``, so even single-platform evidence cannot name
a source it was not built from. Without a checkout that holds the commit, the
decision says that the digest was not recomputed.
"""

from __future__ import annotations

from pathlib import Path

from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_archive import app_relative_path, committed_source_digest
from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_verify import Verdict


def check_source_digest(policy: Policy, verdict: Verdict) -> str:
    """Add ``QE_SOURCE_DIGEST_MISMATCH`` for each platform whose source digest is not the commit's; return a note."""
    repo = policy.repository_root()
    if repo is None:
        return (f"source digest not recomputed: the policy {policy.path} is not in a git checkout "
                "(give --root with a checkout holding the commit)")
    try:
        relative = app_relative_path(repo, policy.resolve(policy.file.app.source))
    except QualificationError as exc:
        return f"source digest not recomputed: {exc.message}"[:2000]
    return check_source_digest_at(repo, relative, verdict)


def check_source_digest_at(repo: Path, relative: str, verdict: Verdict) -> str:
    """The same check with the checkout and the app folder's path in it given (a bundle's audit)."""
    if not verdict.platforms or verdict.sha is None:
        return "source digest not recomputed: no verified statement named one commit"
    try:
        recomputed = committed_source_digest(repo, verdict.sha, relative)
    except QualificationError as exc:
        return f"source digest not recomputed from {repo}: {exc.message}"[:2000]
    wrong = []
    for vp in verdict.platforms:
        claimed = vp.statement.predicate.build.source_digest
        if claimed != recomputed:
            wrong.append(vp.platform)
            verdict.findings.add(
                Code.SOURCE_DIGEST_MISMATCH,
                f"{vp.file_name}: the build names source digest {claimed[:16]}..., but git archive of {relative} "
                f"at {verdict.sha[:12]} in {repo} gives {recomputed[:16]}...", vp.platform)
    verdict_text = f"differs on {', '.join(wrong)}" if wrong else "every build names it"
    return f"source digest recomputed from git archive of {relative} at {verdict.sha[:12]} in {repo}: {verdict_text}"
