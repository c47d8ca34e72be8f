"""The source gate: produce only from the live head of main, read from git locally or from GitHub."""

from __future__ import annotations

from ._gate import LocalGitGate, SourceGate, repository_root
from ._gate_github import GitHubGate, github_run_identity

__all__ = ["GitHubGate", "LocalGitGate", "SourceGate", "github_run_identity", "repository_root"]
