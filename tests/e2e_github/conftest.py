"""The GitHub-mode chain, offline: the loopback GitHub emulator answers the gate,
the test Sigstore instance signs, the pinned test trusted root verifies.

The only piece not exercised is the real OIDC token (and real Fulcio/Rekor).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from desktop_qualify.qualify_policy import load_policy
from support.chain import make_app_repo
from support.github_chain import (
    REPOSITORY,
    WORKFLOW,
    GitHubChain,
    actions_env,
    github_policy,
    platform_identity,
    produce_in_two_jobs,
)
from support.github_emulator import Branch, GitHubEmulator
from support.sigstore_instance import GitHubIdentity, TestSigstoreInstance

from desktop_qualify import aggregate


@pytest.fixture(scope="module")
def github_chain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitHubChain]:
    root = tmp_path_factory.mktemp("github-chain")
    repo = root / "repo"
    sha = make_app_repo(repo)
    instance = TestSigstoreInstance(root / "sigstore")
    emulator = GitHubEmulator().start()
    emulator.repo(REPOSITORY).branches["main"] = Branch(sha=sha, protected=True, required_checks=True)
    policy = load_policy(github_policy(root, instance, repo / "reference_app"))
    identity = platform_identity(GitHubIdentity(repository=REPOSITORY, workflow=WORKFLOW, sha=sha, run_id=4242,
                                                attempt=1), "linux")
    chain = GitHubChain(root, policy, root / "out", sha, instance, emulator, identity,
                        actions_env(sha, emulator.api_url))
    try:
        # produce-linux.yml's two jobs: the run job with no OIDC token and no signer, then the sign job.
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
def consumer_reaches_the_emulator(github_chain: GitHubChain, monkeypatch: pytest.MonkeyPatch) -> None:
    """The release gate reads main's head through the API: point it at the loopback emulator."""
    monkeypatch.setenv("GITHUB_API_URL", github_chain.emulator.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", github_chain.env["GITHUB_TOKEN"])
