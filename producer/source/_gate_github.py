"""The source gate in GitHub mode (docs/design.md §3.5).

Checks, in order, each a refusal with its own code:

1. the run's repository is the policy's (``QE_WORKFLOW_IDENTITY_MISMATCH``);
2. the run's ref is ``refs/heads/main`` (``QE_REF_NOT_MAIN``): a ``v*`` tag or
   another branch is refused even when it points at the same commit;
3. ``GITHUB_WORKFLOW_REF`` is exactly ``OWNER/REPO/<policy workflow>@refs/heads/main``
   and the trigger is one the policy allows (``QE_WORKFLOW_IDENTITY_MISMATCH``);
4. ``GITHUB_SHA`` is the live head of main, read from the REST API
   (``QE_NOT_MAIN_HEAD``), and again by :meth:`GitHubGate.recheck_head` just
   before the statement is signed;
5. main is protected: the branch's ``protected`` flag, or an active ruleset
   rule that restricts what lands on it (``QE_MAIN_UNPROTECTED``);
6. the checkout being built is that commit (``QE_SHA_MISMATCH``) and, when the
   policy says so, clean (``QE_WORKTREE_DIRTY``).

Everything read (environment, API endpoint, git) is kept as an observation
with its time. The environment is GitHub's own; the signing certificate later
carries the same identity, and the consumer checks the two agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from desktop_qualify.evidence_schemas import (
    GIT_SHA_PATTERN,
    Code,
    Observation,
    QualificationError,
    RunIdentity,
    SourceGateRecord,
    utc_now,
)
from desktop_qualify.qualify_policy import Policy

from ._gate import MAIN_REF, SourceGate, _git

if TYPE_CHECKING:
    from desktop_qualify.qualify_github import GitHubClient, RulesetRule

MAIN_BRANCH = MAIN_REF.removeprefix("refs/heads/")
RUN_ENV_KEYS = ("GITHUB_REPOSITORY", "GITHUB_REF", "GITHUB_SHA", "GITHUB_RUN_ID", "GITHUB_RUN_ATTEMPT",
                "GITHUB_WORKFLOW_REF", "GITHUB_EVENT_NAME")
# Rule types that stop an arbitrary commit from landing on main. A ruleset that
# only forbids deletion or force pushes, or only constrains names, messages,
# signatures or linear history, still lets any writer push a new commit, so it
# does not count as protection.
PROTECTING_RULES = frozenset({
    "pull_request", "update", "required_status_checks", "merge_queue", "required_deployments", "workflows",
})
_SHA = re.compile(GIT_SHA_PATTERN)
_DIGITS = re.compile(r"^[1-9][0-9]{0,18}$")
_RUNNERS = ("github-hosted", "self-hosted")
_Saw = Callable[[str, str], None]


@dataclass(frozen=True)
class _RunEnv:
    repository: str
    ref: str
    sha: str
    run_id: str
    attempt: int
    workflow_ref: str
    event: str

    @classmethod
    def read(cls, env: Mapping[str, str]) -> _RunEnv:
        missing = [key for key in RUN_ENV_KEYS if not env.get(key)]
        if missing:
            raise QualificationError(Code.ENVIRONMENT, f"not a GitHub Actions run: {', '.join(missing)} not set",
                                     hint="GitHub mode runs inside GitHub Actions; use the local policy elsewhere")
        values = {key: env[key][:512] for key in RUN_ENV_KEYS}
        if not _SHA.match(values["GITHUB_SHA"]):
            raise QualificationError(Code.ENVIRONMENT, f"GITHUB_SHA {values['GITHUB_SHA'][:80]!r} is not a commit id")
        for key in ("GITHUB_RUN_ID", "GITHUB_RUN_ATTEMPT"):
            if not _DIGITS.match(values[key]):
                raise QualificationError(Code.ENVIRONMENT, f"{key} {values[key][:80]!r} is not a positive integer")
        return cls(values["GITHUB_REPOSITORY"], values["GITHUB_REF"], values["GITHUB_SHA"], values["GITHUB_RUN_ID"],
                   int(values["GITHUB_RUN_ATTEMPT"]), values["GITHUB_WORKFLOW_REF"], values["GITHUB_EVENT_NAME"])


def _check_identity(run: _RunEnv, policy: Policy) -> None:
    """Checks 1-3: the identity comes from the committed policy only, compared exactly."""
    producer = policy.file.producer
    if run.repository != producer.repository:
        raise QualificationError(Code.WORKFLOW_IDENTITY_MISMATCH,
                                 f"the run is in {run.repository!r}; the policy's producer is {producer.repository!r}")
    if run.ref != MAIN_REF or producer.ref != MAIN_REF:
        raise QualificationError(Code.REF_NOT_MAIN, f"the run is on {run.ref!r}, not {MAIN_REF}",
                                 hint="qualification runs only from the head of main, never from a tag or branch")
    expected = f"{producer.repository}/{producer.workflow}@{MAIN_REF}"
    if run.workflow_ref != expected:
        raise QualificationError(Code.WORKFLOW_IDENTITY_MISMATCH,
                                 f"GITHUB_WORKFLOW_REF is {run.workflow_ref!r}; the policy fixes {expected!r}")
    if run.event not in producer.allowed_triggers:
        raise QualificationError(Code.WORKFLOW_IDENTITY_MISMATCH,
                                 f"trigger {run.event!r} is not one the policy allows "
                                 f"({', '.join(producer.allowed_triggers)})")


def github_run_identity(env: Mapping[str, str], policy: Policy) -> RunIdentity:
    """The run identity of this GitHub Actions job, refused unless it is the policy's producer."""
    producer = policy.file.producer
    run = _RunEnv.read(env)
    _check_identity(run, policy)
    runner = env.get("RUNNER_ENVIRONMENT", "")
    if runner not in _RUNNERS:
        raise QualificationError(Code.ENVIRONMENT, f"RUNNER_ENVIRONMENT {runner[:80]!r} is not one of "
                                                   f"{', '.join(_RUNNERS)}")
    if runner != producer.runner_environment:
        raise QualificationError(Code.WORKFLOW_IDENTITY_MISMATCH,
                                 f"the job runs on a {runner} runner; the policy requires "
                                 f"{producer.runner_environment}")
    return RunIdentity(mode="github", repository=run.repository, workflow=producer.workflow, ref=run.ref,
                       sha=run.sha, run_id=run.run_id, attempt=run.attempt, trigger=run.event,
                       runner_environment=runner)


class GitHubGate(SourceGate):
    """Observes a GitHub Actions run and refuses anything but the protected head of main."""

    def __init__(self, policy: Policy, env: Mapping[str, str], *, checkout: Path,
                 client: GitHubClient | None = None) -> None:
        # Snapshot the environment: what was checked is what gets recorded.
        self._env = {key: value for key, value in env.items() if key in RUN_ENV_KEYS}
        self._policy = policy
        self._require_clean = policy.file.source.require_clean_worktree
        self._checkout = checkout
        if client is None:
            # PyGithub (and requests) load only when a GitHub gate runs: a local produce never pays for them.
            from desktop_qualify.qualify_github import GitHubClient

            client = GitHubClient.from_env(env)
        self._client = client

    def observe(self) -> SourceGateRecord:
        observations: list[Observation] = []

        def saw(source: str, value: str) -> None:
            observations.append(Observation(source=source, value=value[:4096], observed_at=utc_now()))

        for key in RUN_ENV_KEYS:
            saw(f"env {key}", self._env.get(key, "<unset>"))
        run = _RunEnv.read(self._env)
        _check_identity(run, self._policy)

        endpoint = f"GET /repos/{run.repository}/branches/{MAIN_BRANCH}"
        branch = self._client.branch(run.repository, MAIN_BRANCH)
        saw(f"{endpoint} .commit.sha", branch.head_sha)
        saw(f"{endpoint} .protected", str(branch.protected).lower())
        saw(f"{endpoint} .protection.required_status_checks enforced", str(branch.required_checks_enforced).lower())
        if branch.head_sha != run.sha:
            raise QualificationError(Code.NOT_MAIN_HEAD,
                                     f"GITHUB_SHA {run.sha[:12]} is not the live head of main ({branch.head_sha[:12]})",
                                     hint="main has moved on; the run for the new head qualifies it")
        protection = self._protection(run.repository, branch.protected and branch.required_checks_enforced, saw)
        clean = self._check_checkout(run.sha, saw)
        return SourceGateRecord(mode="github", repository=run.repository, ref=run.ref, sha=run.sha,
                                main_head=branch.head_sha, worktree_clean=clean, protection=protection,
                                head_matches=True, observations=observations, passed=True)

    def recheck_head(self, sha: str) -> None:
        head = self._client.head_sha(self._policy.file.producer.repository, MAIN_BRANCH)
        if head != sha:
            raise QualificationError(Code.NOT_MAIN_HEAD, f"main moved from {sha[:12]} to {head[:12]} before signing")

    def _protection(self, repository: str, classic_enforced: bool, saw: _Saw) -> Literal["protected", "ruleset"]:
        """Protection as read access can prove it: an active protecting rule, or enforced classic checks.

        The ``protected`` flag alone proves nothing (it is also true for a ruleset
        that only forbids deletion, or classic protection with nothing ticked), so
        the active rules are always read (that endpoint returns active rules only).
        """
        rules = self._client.branch_rules(repository, MAIN_BRANCH)
        saw(f"GET /repos/{repository}/rules/branches/{MAIN_BRANCH}", _describe(rules))
        if any(rule.type in PROTECTING_RULES for rule in rules):
            return "ruleset"
        if classic_enforced:
            return "protected"
        raise QualificationError(
            Code.MAIN_UNPROTECTED,
            f"main in {repository}: no active rule restricts what lands on it ({_describe(rules)}) and classic "
            "protection shows no enforced required checks",
            hint="protect main with an active ruleset (pull_request, required_status_checks, ...) "
                 "or classic protection with required status checks")

    def _check_checkout(self, sha: str, saw: _Saw) -> bool:
        code, head = _git(self._checkout, "rev-parse", "--verify", "HEAD^{commit}")
        saw("git rev-parse HEAD", head if code == 0 else f"exit {code}")
        if code != 0:
            raise QualificationError(Code.SOURCE_GATE_FAILED, f"{self._checkout}: not a git checkout")
        if head != sha:
            raise QualificationError(Code.SHA_MISMATCH, f"the checkout is at {head[:12]}, GITHUB_SHA is {sha[:12]}")
        code, status = _git(self._checkout, "status", "--porcelain", "--untracked-files=no")
        saw("git status --porcelain --untracked-files=no", status if code == 0 else f"exit {code}")
        clean = code == 0 and status == ""
        if self._require_clean and not clean:
            raise QualificationError(Code.WORKTREE_DIRTY, "the checkout has uncommitted changes to tracked files")
        return clean


def _describe(rules: tuple[RulesetRule, ...]) -> str:
    return ", ".join(f"{r.type} (ruleset {r.ruleset_id})" for r in rules) or "no active rules"
