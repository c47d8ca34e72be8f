"""Fixtures for the hostile-evidence corpus: `qualify` in-process, and one offline GitHub world per module.

The GitHub world is a test Sigstore instance (whose trusted root the GitHub-mode
policy pins), a second instance the policy does not trust, and the loopback
GitHub REST emulator that answers the release gate's read of main's live head.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from corpus_github import GitHubSite, GitHubWorld, make_world
from support.cli import qualify  # noqa: F401 - the in-process `qualify` fixture
from support.github_emulator import DEFAULT_TOKEN


@pytest.fixture(scope="module")
def github_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitHubWorld]:
    world = make_world(tmp_path_factory.mktemp("github-world"))
    try:
        yield world
    finally:
        world.emulator.stop()


@pytest.fixture
def github_site(github_world: GitHubWorld, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GitHubSite:
    """One row's view of the GitHub world: main at the evidence's commit, the release gate pointed at the emulator."""
    monkeypatch.setenv("GITHUB_API_URL", github_world.emulator.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", DEFAULT_TOKEN)
    site = GitHubSite(github_world, tmp_path)
    site.main_at(site.sha)
    return site
