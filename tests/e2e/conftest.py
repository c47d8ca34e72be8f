"""One real local chain per test session: the PyInstaller bundle is built once.

The app is copied from this work tree into a fresh git repository on `main`,
so the end-to-end run tests the code as it is now and does not depend on the
outer checkout's branch or cleanliness.
"""

from __future__ import annotations

import shutil

import pytest
from support.chain import REPO, Chain, git, qualify, write_policy


@pytest.fixture(scope="session")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Chain:
    root = tmp_path_factory.mktemp("chain")
    source_repo = root / "repo"
    source_repo.mkdir()
    git(source_repo, "init", "-q", "-b", "main")
    git(source_repo, "config", "user.email", "e2e@desktop-qualify.invalid")
    git(source_repo, "config", "user.name", "e2e")
    shutil.copytree(REPO / "reference_app", source_repo / "reference_app",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(source_repo, "add", "-A")
    git(source_repo, "commit", "-q", "-m", "app under qualification")
    sha = git(source_repo, "rev-parse", "HEAD")
    policy = write_policy(root, source_repo / "reference_app")
    out = root / "out"
    logs = {"keygen": qualify("keygen", "--policy", policy)}
    logs["produce"] = qualify("produce", "--policy", policy, "--platform", "linux", "--out", out,
                              "--run-id", "e2e-run-1")
    logs["aggregate"] = qualify("aggregate", "--policy", policy, "--evidence", out / "evidence",
                                "--out", out / "evidence")
    for name, done in logs.items():
        assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    return Chain(root, policy, out, source_repo, sha, logs)
