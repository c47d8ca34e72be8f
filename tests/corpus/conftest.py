"""Fixtures for the hostile-evidence corpus: `qualify` in-process, and one offline GitHub world per module.

The GitHub world is a test Sigstore instance (whose trusted root the GitHub-mode
policy pins), a second instance the policy does not trust, and the loopback
GitHub REST emulator that answers the release gate's read of main's live head.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from corpus_github import GitHubSite, GitHubWorld, make_world
from support.github_emulator import DEFAULT_TOKEN


@dataclass(frozen=True)
class CliRun:
    status: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


@pytest.fixture
def qualify(capsys: pytest.CaptureFixture[str]) -> Callable[[list[str]], CliRun]:
    """Run `qualify ARGS...` in-process; argparse's SystemExit becomes a status like any other."""

    from desktop_qualify import qualify_cli
    def run(argv: list[str]) -> CliRun:
        capsys.readouterr()
        try:
            status = qualify_cli.main(argv)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 2
        captured = capsys.readouterr()
        return CliRun(status, captured.out, captured.err)

    return run


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
