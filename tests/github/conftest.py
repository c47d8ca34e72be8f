"""Fixtures: a loopback GitHub per test, clients pointed at it, a git checkout and a GitHub-mode policy."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from desktop_qualify.qualify_github import ClientConfig, GitHubClient
from gh_testenv import FAST_RETRY, POLICY_TEMPLATE, REPOSITORY, WORKFLOW, MakeClient, git
from support.evidence_factory import app_section
from support.github_emulator import DEFAULT_TOKEN, GitHubEmulator


@pytest.fixture
def github_emulator() -> Iterator[GitHubEmulator]:
    emulator = GitHubEmulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture
def make_client(github_emulator: GitHubEmulator) -> Iterator[MakeClient]:
    made: list[GitHubClient] = []

    def make(token: str | None = DEFAULT_TOKEN, **bounds: object) -> GitHubClient:
        config = dataclasses.replace(ClientConfig(api_url=github_emulator.api_url, timeout=5, retry=FAST_RETRY,
                                                  seconds_between_requests=0),
                                     **bounds)  # type: ignore[arg-type]
        client = GitHubClient(config, token)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
def policy_dir(tmp_path: Path) -> Path:
    """A folder with a GitHub-mode policy and, beside it, a git checkout of one commit on main."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    git(checkout, "init", "-q", "-b", "main")
    (checkout / "app.py").write_text("print('hello')\n")
    git(checkout, "add", "app.py")
    git(checkout, "commit", "-q", "-m", "one")
    (tmp_path / "policy.toml").write_text(POLICY_TEMPLATE.format(repository=REPOSITORY, workflow=WORKFLOW,
                                                                 zeros="0" * 64, app=app_section("checkout")))
    return tmp_path
