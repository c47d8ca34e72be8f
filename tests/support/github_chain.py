"""Helpers for the offline GitHub-mode chain: a test policy, an Actions environment, a test-instance signer."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_trust._github_mode import SigstoreSigner

from support.chain import REPO
from support.github_emulator import DEFAULT_TOKEN, GitHubEmulator
from support.sigstore_instance import GitHubIdentity, TestSigstoreInstance

REPOSITORY = "acme/desktop"
WORKFLOW = ".github/workflows/qualify.yml"
# policies/release.toml's [producer.signers]: each platform's producer is a reusable workflow of its own.
SIGNER_WORKFLOWS = {p: f".github/workflows/produce-{p}.yml" for p in ("linux", "macos", "windows")}


def platform_identity(identity: GitHubIdentity, platform: str) -> GitHubIdentity:
    """The certificate identity of ``platform``'s producer job in the run ``identity`` names."""
    return replace(identity, signer_workflow=SIGNER_WORKFLOWS[platform])


def aggregate_identity(identity: GitHubIdentity) -> GitHubIdentity:
    """The aggregate job is a job of qualify.yml itself: it signs as the build config workflow."""
    return replace(identity, signer_workflow=None)


@dataclass
class GitHubChain:
    root: Path
    policy: Policy
    out: Path
    sha: str
    instance: TestSigstoreInstance
    emulator: GitHubEmulator
    # The run's identity as the linux producer job's certificate carries it.
    identity: GitHubIdentity
    env: dict[str, str]
    head_reads_by_producer: int = 0

    @property
    def evidence(self) -> Path:
        return self.out / "evidence"

    @property
    def artifacts(self) -> list[Path]:
        return sorted((self.out / "artifacts").iterdir())

    @property
    def aggregate_identity(self) -> GitHubIdentity:
        return aggregate_identity(self.identity)

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
            "source": f'"{app_source.as_posix()}"',
            "required": '["linux"]',
        }.get(key)
        lines.append(f"{key} = {value}" if value is not None and "=" in line else line)
    policy = root / "release-test.toml"
    policy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return policy


def actions_env(chain_sha: str, api_url: str, *, ref: str = "refs/heads/main", attempt: int = 1,
                event: str = "push") -> dict[str, str]:
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
