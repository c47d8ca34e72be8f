"""The release gate's freshness check: the candidate is the current head of main.

docs/design.md §3.6 separates the release gate from the auditor by exactly this:
evidence of an older run cannot be borrowed for a release once main has moved
on. In GitHub mode main's live head is read through the REST API. Local mode
has no protected remote to observe: its evidence never qualifies a GitHub
release, and the note in the decision says the check was not made.
"""

from __future__ import annotations

from collections.abc import Mapping

from desktop_qualify.evidence_schemas import Code, utc_now
from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_verify import Findings

MAIN = "main"


def check_candidate_is_main_head(policy: Policy, sha: str | None, env: Mapping[str, str],
                                 findings: Findings) -> str:
    """Add ``QE_NOT_MAIN_HEAD`` when main has moved past ``sha``; return a note on what was observed."""
    if policy.sigstore is None:
        return "local mode: main's head on a protected remote was not observed"
    if sha is None:
        return "no verified statement named a commit: main's head not compared"
    # PyGithub loads only for a GitHub-mode gate: local verification never imports it.
    from desktop_qualify.qualify_github import GitHubClient

    repository = policy.file.producer.repository
    with GitHubClient.from_env(env) as client:
        head = client.head_sha(repository, MAIN)
    observed = f"GET /repos/{repository}/branches/{MAIN} at {utc_now()}: head {head}"
    if head != sha:
        findings.add(Code.NOT_MAIN_HEAD, f"the evidence is for {sha[:12]}, but main's head is now {head[:12]}: "
                                         "a newer commit needs its own qualification run")
    return observed
