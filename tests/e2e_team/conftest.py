"""A team's repository calling desktop-qualify's reusable workflows at a tag, offline: the loopback GitHub
emulator answers the team's source gate, the test Sigstore instance signs as desktop-qualify's workflows at
refs/tags/vX.Y.Z for the team's repository, the pinned test trusted root verifies.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from desktop_qualify.qualify_policy import load_policy
from support.github_chain import GitHubChain, actions_env, produce_in_two_jobs
from support.github_emulator import Branch, GitHubEmulator
from support.github_team import TEAM_REPOSITORY, make_team_repo, team_identity
from support.sigstore_instance import TestSigstoreInstance

from desktop_qualify import aggregate


@pytest.fixture(scope="module")
def team_chain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitHubChain]:
    root = tmp_path_factory.mktemp("team-chain")
    instance = TestSigstoreInstance(root / "sigstore")
    sha, policy_path = make_team_repo(root / "team", root, instance)
    emulator = GitHubEmulator().start()
    emulator.repo(TEAM_REPOSITORY).branches["main"] = Branch(sha=sha, protected=True, required_checks=True)
    policy = load_policy(policy_path)
    linux = team_identity(sha, "linux")
    chain = GitHubChain(root, policy, root / "out", sha, instance, emulator, linux,
                        actions_env(sha, emulator.api_url, repository=TEAM_REPOSITORY),
                        platform_identities={"linux": linux}, aggregate_signer=team_identity(sha, "aggregate"))
    try:
        jobs = produce_in_two_jobs(chain, "linux")
        assert jobs.run.passed, jobs.run.failures
        assert jobs.signed is not None
        assert jobs.signed.passed, jobs.signed.failures
        made = aggregate.aggregate(policy, [chain.evidence], chain.evidence,
                                   signer=chain.signer(chain.aggregate_identity))
        assert made.written is not None, made.reasons
        yield chain
    finally:
        emulator.stop()


@pytest.fixture(autouse=True)
def consumer_reaches_the_emulator(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The release gate reads main's head through the API: point it at the loopback emulator (chain tests)."""
    if "team_chain" not in request.fixturenames:
        return
    chain: GitHubChain = request.getfixturevalue("team_chain")
    monkeypatch.setenv("GITHUB_API_URL", chain.emulator.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", chain.env["GITHUB_TOKEN"])
