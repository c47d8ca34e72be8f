"""Constants and helpers shared by the tests in tests/github (a uniquely named module: the folder is not a package,
so that it never shadows PyGithub's ``github`` package)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from desktop_qualify.qualify_github import GitHubClient, RetryPolicy

REPOSITORY = "desktop-qualify/desktop-qualify"
WORKFLOW = ".github/workflows/qualify.yml"
# Fast retries so a test that exhausts them costs milliseconds, not minutes.
FAST_RETRY = RetryPolicy(max_attempts=3, base_backoff=0.01, max_backoff=0.05, max_total_wait=3.0)
MakeClient = Callable[..., GitHubClient]
POLICY_TEMPLATE = """
version = 2
name = "release-test"

[producer]
repository = "{repository}"
workflow = "{workflow}"
ref = "refs/heads/main"
allowed_triggers = ["push", "workflow_dispatch"]
runner_environment = "github-hosted"

[producer.signers]
linux = ".github/workflows/produce-linux.yml"
macos = ".github/workflows/produce-macos.yml"
windows = ".github/workflows/produce-windows.yml"
aggregate = "{workflow}"

[trust]
mode = "sigstore"
issuer = "https://token.actions.githubusercontent.com"
trusted_root = "trusted_root.json"
trusted_root_sha256 = "{zeros}"

[source]
require_clean_worktree = true

{app}
[platforms]
required = ["linux", "macos", "windows"]

[journey.steps]
catalog-verified = {{ expect = "allow" }}

[isolation]
linux = ["no-new-privs", "landlock-fs", "landlock-net", "seccomp"]
macos = ["sandbox-exec"]
windows = ["job-object"]

[signing]
linux = ["unsigned"]
macos = ["signed"]
windows = ["signed"]

[limits]
max_statement_bytes = 1048576
build_timeout_seconds = 600
probe_timeout_seconds = 60
journey_timeout_seconds = 60
"""




def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env,
                          text=True).stdout.strip()
