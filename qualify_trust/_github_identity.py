"""The GitHub workflow run that signed a statement, as its certificate recorded it.

Plain data and one parser, kept apart from the certificate reading in
``_sigstore_identity``: local-mode checks name this type without loading
cryptography's X.509 layer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from desktop_qualify.evidence_schemas import Code, QualificationError

# Parsing, not matching: the whole string must have exactly this shape, and the
# comparisons that decide trust are exact string equality elsewhere.
_RUN_URI = re.compile(
    r"https://github\.com/(?P<repository>[A-Za-z0-9-]{1,39}/[A-Za-z0-9_.-]{1,100})"
    r"/actions/runs/(?P<run_id>[1-9][0-9]{0,19})/attempts/(?P<attempt>[1-9][0-9]{0,3})",
    re.ASCII,
)


@dataclass(frozen=True)
class GitHubIdentity:
    """The workflow run that obtained the signing certificate, as Fulcio recorded it."""

    issuer: str
    san_uri: str
    build_signer_uri: str
    build_signer_digest: str
    runner_environment: str
    source_repository_uri: str
    source_repository_digest: str
    source_repository_ref: str
    build_config_uri: str
    build_trigger: str
    run_invocation_uri: str
    run_repository: str
    run_id: str
    run_attempt: int
    # Numeric ids survive a rename of the owner or repository; names do not (OIDs .15, .17).
    source_repository_identifier: str | None = None
    source_repository_owner_identifier: str | None = None
    # The caller's workflow file commit (.19); the build config URI (.18) names the file itself.
    build_config_digest: str | None = None


def parse_run_invocation_uri(uri: str) -> tuple[str, str, int]:
    """``https://github.com/OWNER/REPO/actions/runs/RUN_ID/attempts/ATTEMPT`` -> (repo, run id, attempt)."""
    match = _RUN_URI.fullmatch(uri)
    if match is None:
        raise QualificationError(
            Code.WORKFLOW_IDENTITY_MISMATCH, f"run invocation URI {uri[:200]!r} is not a GitHub Actions run attempt"
        )
    return match["repository"], match["run_id"], int(match["attempt"])
