"""The producer gate in GitHub mode, table-style: each case names the code it must produce."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError, SourceGateRecord
from desktop_qualify.producer.source._gate_github import GitHubGate, github_run_identity
from desktop_qualify.qualify_github import ClientConfig, GitHubClient
from desktop_qualify.qualify_policy import Policy, load_policy
from gh_testenv import FAST_RETRY, REPOSITORY, WORKFLOW, git
from support.github_emulator import DEFAULT_TOKEN, Branch, GitHubEmulator, rule

MAIN_WORKFLOW_REF = f"{REPOSITORY}/{WORKFLOW}@refs/heads/main"


@dataclass
class World:
    emulator: GitHubEmulator
    policy: Policy
    checkout: Path
    sha: str
    env: dict[str, str] = field(default_factory=dict)

    def gate(self, **env: str) -> GitHubGate:
        return GitHubGate(self.policy, {**self.env, **env}, checkout=self.checkout)


@pytest.fixture
def world(github_emulator: GitHubEmulator, policy_dir: Path) -> World:
    checkout = policy_dir / "checkout"
    sha = git(checkout, "rev-parse", "HEAD")
    github_emulator.repo(REPOSITORY).branches["main"] = Branch(sha, protected=True, required_checks=True)
    env = {
        "GITHUB_API_URL": github_emulator.api_url, "GITHUB_TOKEN": DEFAULT_TOKEN,
        "GITHUB_REPOSITORY": REPOSITORY, "GITHUB_REF": "refs/heads/main", "GITHUB_SHA": sha,
        "GITHUB_RUN_ID": "4242", "GITHUB_RUN_ATTEMPT": "1", "GITHUB_WORKFLOW_REF": MAIN_WORKFLOW_REF,
        "GITHUB_EVENT_NAME": "push", "RUNNER_ENVIRONMENT": "github-hosted",
    }
    return World(github_emulator, load_policy(policy_dir / "policy.toml"), checkout, sha, env)


def _unprotected(w: World) -> None:
    w.emulator.repo(REPOSITORY).branches["main"].protected = False
    w.emulator.repo(REPOSITORY).branches["main"].required_checks = False


def _flag_only(w: World) -> None:
    """`protected: true` with nothing enforced (e.g. set by a deletion-only ruleset)."""
    w.emulator.repo(REPOSITORY).branches["main"].required_checks = False


def _ruleset(*types: str) -> Any:
    def arrange(w: World) -> None:
        _unprotected(w)
        w.emulator.repo(REPOSITORY).rules["main"] = [rule(t, ruleset_id=7) for t in types]
    return arrange


def _head_moved(w: World) -> None:
    w.emulator.repo(REPOSITORY).branches["main"].sha = "f" * 40


def _dirty(w: World) -> None:
    (w.checkout / "app.py").write_text("print('changed')\n")


def _same(_w: World) -> None:
    return


# (id, environment overrides, arrangement, expected code or None for a pass, protection on a pass)
CASES: list[tuple[str, dict[str, str], Any, Code | None, str | None]] = [
    ("main-protected", {}, _same, None, "protected"),
    ("ruleset-only", {}, _ruleset("deletion", "pull_request"), None, "ruleset"),
    ("unprotected", {}, _unprotected, Code.MAIN_UNPROTECTED, None),
    ("deletion-rule-only", {}, _ruleset("deletion", "creation"), Code.MAIN_UNPROTECTED, None),
    ("protected-flag-with-nothing-enforced", {}, _flag_only, Code.MAIN_UNPROTECTED, None),
    ("non-fast-forward-rule-only", {}, _ruleset("non_fast_forward", "required_linear_history",
                                                "required_signatures"), Code.MAIN_UNPROTECTED, None),
    ("tag-same-sha", {"GITHUB_REF": "refs/tags/v1.0", "GITHUB_WORKFLOW_REF": f"{REPOSITORY}/{WORKFLOW}@refs/tags/v1.0"},
     _same, Code.REF_NOT_MAIN, None),
    ("other-branch", {"GITHUB_REF": "refs/heads/release",
                      "GITHUB_WORKFLOW_REF": f"{REPOSITORY}/{WORKFLOW}@refs/heads/release"}, _same,
     Code.REF_NOT_MAIN, None),
    ("pull-request-ref", {"GITHUB_REF": "refs/pull/1/merge"}, _same, Code.REF_NOT_MAIN, None),
    ("head-moved", {}, _head_moved, Code.NOT_MAIN_HEAD, None),
    ("lookalike-repo", {"GITHUB_REPOSITORY": f"{REPOSITORY}-fork",
                        "GITHUB_WORKFLOW_REF": f"{REPOSITORY}-fork/{WORKFLOW}@refs/heads/main"}, _same,
     Code.WORKFLOW_IDENTITY_MISMATCH, None),
    ("lookalike-case", {"GITHUB_REPOSITORY": "Desktop-Qualify/desktop-qualify"}, _same,
     Code.WORKFLOW_IDENTITY_MISMATCH, None),
    ("other-workflow-file", {"GITHUB_WORKFLOW_REF": f"{REPOSITORY}/.github/workflows/other.yml@refs/heads/main"},
     _same, Code.WORKFLOW_IDENTITY_MISMATCH, None),
    ("release-yml-attacker-branch",
     {"GITHUB_WORKFLOW_REF": f"{REPOSITORY}/.github/workflows/release.yml@refs/heads/attacker"}, _same,
     Code.WORKFLOW_IDENTITY_MISMATCH, None),
    ("workflow-of-another-repo", {"GITHUB_WORKFLOW_REF": f"attacker/evil/{WORKFLOW}@refs/heads/main"}, _same,
     Code.WORKFLOW_IDENTITY_MISMATCH, None),
    ("workflow-ref-suffix", {"GITHUB_WORKFLOW_REF": f"{MAIN_WORKFLOW_REF}-evil"}, _same,
     Code.WORKFLOW_IDENTITY_MISMATCH, None),
    ("disallowed-trigger", {"GITHUB_EVENT_NAME": "pull_request_target"}, _same, Code.WORKFLOW_IDENTITY_MISMATCH,
     None),
    ("checkout-not-the-sha", {"GITHUB_SHA": "e" * 40}, lambda w: setattr(
        w.emulator.repo(REPOSITORY).branches["main"], "sha", "e" * 40), Code.SHA_MISMATCH, None),
    ("dirty-checkout", {}, _dirty, Code.WORKTREE_DIRTY, None),
    ("not-in-actions", {"GITHUB_SHA": ""}, _same, Code.ENVIRONMENT, None),
    ("bad-run-attempt", {"GITHUB_RUN_ATTEMPT": "0"}, _same, Code.ENVIRONMENT, None),
]
# Identity refusals come from the environment alone, before any API request.
OFFLINE = {Code.REF_NOT_MAIN, Code.WORKFLOW_IDENTITY_MISMATCH, Code.ENVIRONMENT}


@pytest.mark.parametrize(("env", "arrange", "code", "protection"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gate(world: World, env: dict[str, str], arrange: Any, code: Code | None, protection: str | None) -> None:
    arrange(world)
    gate = world.gate(**env)
    if code is None:
        record = gate.observe()
        assert (record.mode, record.protection, record.sha, record.ref) == ("github", protection, world.sha,
                                                                             "refs/heads/main")
        assert (record.passed, record.head_matches, record.worktree_clean) == (True, True, True)
        SourceGateRecord.model_validate_json(record.model_dump_json())
        return
    with pytest.raises(QualificationError) as caught:
        gate.observe()
    assert caught.value.code is code, caught.value.diagnostics()
    if code in OFFLINE:
        assert world.emulator.requests == []


def test_record_keeps_what_was_observed(world: World) -> None:
    _ruleset("pull_request")(world)
    record = world.gate().observe()
    seen = {o.source: o.value for o in record.observations}
    branch = f"GET /repos/{REPOSITORY}/branches/main"
    assert seen[f"{branch} .commit.sha"] == world.sha
    assert seen[f"{branch} .protected"] == "false"
    assert seen[f"GET /repos/{REPOSITORY}/rules/branches/main"] == "pull_request (ruleset 7)"
    assert seen["env GITHUB_WORKFLOW_REF"] == MAIN_WORKFLOW_REF
    assert seen["git rev-parse HEAD"] == world.sha
    assert all(o.observed_at.endswith("Z") for o in record.observations)
    dumped = record.model_dump_json()
    assert DEFAULT_TOKEN not in dumped
    assert not any("TOKEN" in o.source for o in record.observations)


def test_head_moved_between_observe_and_recheck(world: World) -> None:
    gate = world.gate()
    record = gate.observe()
    gate.recheck_head(record.sha)
    _head_moved(world)
    with pytest.raises(QualificationError) as caught:
        gate.recheck_head(record.sha)
    assert caught.value.code is Code.NOT_MAIN_HEAD
    assert len(world.emulator.calls(r"/repos/[^/]+/[^/]+/branches/main$")) == 3


def test_unreachable_api_is_an_environment_error(world: World) -> None:
    world.emulator.stop()
    with pytest.raises(QualificationError) as caught:
        GitHubGate(world.policy, world.env, checkout=world.checkout,
                   client=_fast_client(world.emulator.api_url)).observe()
    assert caught.value.code is Code.ENVIRONMENT
    assert caught.value.exit_status == 2


def _fast_client(api_url: str) -> GitHubClient:
    return GitHubClient(ClientConfig(api_url=api_url, timeout=1, retry=FAST_RETRY, seconds_between_requests=0),
                        DEFAULT_TOKEN)


def test_run_identity(world: World) -> None:
    run = github_run_identity(world.env, world.policy)
    assert (run.mode, run.repository, run.workflow, run.ref, run.sha, run.run_id, run.attempt, run.trigger,
            run.runner_environment) == ("github", REPOSITORY, WORKFLOW, "refs/heads/main", world.sha, "4242", 1,
                                        "push", "github-hosted")


@pytest.mark.parametrize(("env", "code"), [
    ({"RUNNER_ENVIRONMENT": "self-hosted"}, Code.WORKFLOW_IDENTITY_MISMATCH),
    ({"RUNNER_ENVIRONMENT": ""}, Code.ENVIRONMENT),
    ({"RUNNER_ENVIRONMENT": "laptop"}, Code.ENVIRONMENT),
    ({"GITHUB_REF": "refs/tags/v1.0"}, Code.REF_NOT_MAIN),
    ({"GITHUB_EVENT_NAME": "schedule"}, Code.WORKFLOW_IDENTITY_MISMATCH),
    ({"GITHUB_RUN_ID": "12x"}, Code.ENVIRONMENT),
])
def test_run_identity_refusals(world: World, env: dict[str, str], code: Code) -> None:
    with pytest.raises(QualificationError) as caught:
        github_run_identity({**world.env, **env}, world.policy)
    assert caught.value.code is code
