"""Helpers for running the real local chain from tests: a policy in a temp folder, the CLI in a child."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Chain:
    root: Path
    policy: Path
    out: Path
    source_repo: Path
    sha: str
    logs: dict[str, subprocess.CompletedProcess[str]]

    @property
    def evidence(self) -> Path:
        return self.out / "evidence"

    @property
    def artifacts(self) -> list[Path]:
        return sorted((self.out / "artifacts").iterdir())

    @property
    def platform_key(self) -> Path:
        """Where `qualify keygen` put the platform key for policies/local.toml in the chain's repository."""
        return self.source_repo / ".qualify" / "keys" / "platform.ed25519.pem"


def qualify(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the console entry point as a user would, in a child process."""
    return subprocess.run([sys.executable, "-m", "desktop_qualify.qualify_cli", *map(str, args)], capture_output=True,
                          text=True, timeout=900, check=False, cwd=cwd)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit_tree(repo: Path, message: str) -> str:
    """Make the files already under ``repo`` a fresh git repository on `main` with one commit; returns its SHA."""
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "user.name", "t")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def write_policy(root: Path, app_source: Path, *, name: str = "policy.toml", **overrides: str) -> Path:
    text = (REPO / "policies" / "local.toml").read_text(encoding="utf-8")
    keys = root / "keys"
    replacements = {
        'keyring = "../.qualify/keyring.json"': f'keyring = "{(keys / "keyring.json").as_posix()}"',
        'platform_key = "../.qualify/keys/platform.ed25519.pem"':
            f'platform_key = "{(keys / "platform.pem").as_posix()}"',
        'aggregate_key = "../.qualify/keys/aggregate.ed25519.pem"':
            f'aggregate_key = "{(keys / "aggregate.pem").as_posix()}"',
        'verifier_key = "../.qualify/keys/verifier.ed25519.pem"':
            f'verifier_key = "{(keys / "verifier.pem").as_posix()}"',
        'source = "../reference_app"': f'source = "{app_source.as_posix()}"',
        **overrides,
    }
    for old, new in replacements.items():
        assert old in text, f"policies/local.toml no longer contains {old!r}"
        text = text.replace(old, new)
    policy = root / name
    policy.write_text(text, encoding="utf-8")
    return policy


def make_app_repo(repo: Path, *, with_policies: bool = False) -> str:
    """A fresh git repository on `main` holding this work tree's app, committed; returns the SHA.

    The end-to-end runs test the app as it is now, independent of the outer
    checkout's branch and cleanliness. ``with_policies`` also commits ``policies/``
    and ``.gitignore``, so that the repository is laid out as a fresh clone is
    and ``policies/local.toml`` works in it unchanged (the README's recipes).
    """
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "e2e@desktop-qualify.invalid")
    git(repo, "config", "user.name", "e2e")
    shutil.copytree(REPO / "reference_app", repo / "reference_app",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if with_policies:
        shutil.copytree(REPO / "policies", repo / "policies", ignore=shutil.ignore_patterns("__pycache__", "*.py"))
        shutil.copyfile(REPO / ".gitignore", repo / ".gitignore")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "app under qualification")
    return git(repo, "rev-parse", "HEAD")
