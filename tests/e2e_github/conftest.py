"""The GitHub-mode chain, offline: the loopback GitHub emulator answers the gate,
the test Sigstore instance signs, the pinned test trusted root verifies.

The only piece not exercised is the real OIDC token (and real Fulcio/Rekor).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from support.chain import REPO, git
from support.github_emulator import DEFAULT_TOKEN, Branch, GitHubEmulator
from support.sigstore_instance import GitHubIdentity, TestSigstoreInstance

import aggregate
import producer
from qualify_policy import Policy, load_policy
from qualify_trust import SigstoreSigner

REPOSITORY = "acme/desktop"
WORKFLOW = ".github/workflows/qualify.yml"


@dataclass
class GitHubChain:
    root: Path
    policy: Policy
    out: Path
    sha: str
    instance: TestSigstoreInstance
    emulator: GitHubEmulator
    identity: GitHubIdentity
    env: dict[str, str]

    @property
    def evidence(self) -> Path:
        return self.out / "evidence"

    @property
    def artifacts(self) -> list[Path]:
        return sorted((self.out / "artifacts").iterdir())

    def signer(self, identity: GitHubIdentity | None = None) -> SigstoreSigner:
        who = identity or self.identity
        return SigstoreSigner(lambda payload: self.instance.issue_dsse_bundle(
            payload, extensions=who.extensions, san_uri=who.san_uri))


def github_policy(root: Path, instance: TestSigstoreInstance, app_source: Path) -> Path:
    """policies/release.toml, re-pointed at the test repository, root and checkout; linux only."""
    text = (REPO / "policies" / "release.toml").read_text(encoding="utf-8")
    lines = []
    for line in text.splitlines():
        key = line.split("=", 1)[0].strip()
        value = {
            "repository": f'"{REPOSITORY}"',
            "trusted_root": f'"{instance.trusted_root_path.as_posix()}"',
            "trusted_root_sha256": f'"{instance.trusted_root_sha256}"',
            "app_source": f'"{app_source.as_posix()}"',
            "required": '["linux"]',
        }.get(key)
        lines.append(f"{key} = {value}" if value is not None and "=" in line else line)
    policy = root / "release-test.toml"
    policy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return policy


def actions_env(chain_sha: str, api_url: str, *, ref: str = "refs/heads/main", attempt: int = 1,
                event: str = "push") -> dict[str, str]:
    import os

    return {
        "PATH": os.environ.get("PATH", ""),
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_REF": ref,
        "GITHUB_SHA": chain_sha,
        "GITHUB_RUN_ID": "4242",
        "GITHUB_RUN_ATTEMPT": str(attempt),
        "GITHUB_WORKFLOW_REF": f"{REPOSITORY}/{WORKFLOW}@{ref}",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_API_URL": api_url,
        "GITHUB_TOKEN": DEFAULT_TOKEN,
        "RUNNER_ENVIRONMENT": "github-hosted",
    }


@pytest.fixture(scope="module")
def github_chain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitHubChain]:
    root = tmp_path_factory.mktemp("github-chain")
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "e2e@desktop-qualify.invalid")
    git(repo, "config", "user.name", "e2e")
    shutil.copytree(REPO / "reference_app", repo / "reference_app",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "app under qualification")
    sha = git(repo, "rev-parse", "HEAD")
    instance = TestSigstoreInstance(root / "sigstore")
    emulator = GitHubEmulator().start()
    emulator.repo(REPOSITORY).branches["main"] = Branch(sha=sha, protected=True)
    policy = load_policy(github_policy(root, instance, repo / "reference_app"))
    identity = GitHubIdentity(repository=REPOSITORY, workflow=WORKFLOW, sha=sha, run_id=4242, attempt=1)
    chain = GitHubChain(root, policy, root / "out", sha, instance, emulator, identity,
                        actions_env(sha, emulator.api_url))
    try:
        result = producer.produce(policy, "linux", chain.out, env=chain.env, signer=chain.signer())
        assert result.passed, result.failures
        made = aggregate.aggregate(policy, [chain.evidence], chain.evidence, signer=chain.signer())
        assert made.written is not None, made.reasons
        yield chain
    finally:
        emulator.stop()


ResignFn = Callable[[GitHubChain, GitHubIdentity], SigstoreSigner]
__all__ = ["GitHubChain", "actions_env", "github_policy", "replace"]
