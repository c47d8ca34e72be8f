"""Evidence of a real commit: the factory's chain folder made a git checkout, its statement re-made at that commit.

The release gate and ``qualify audit --root`` recompute ``build.source_digest`` from ``git archive`` of the
run's commit; evidence made at the factory's made-up commit has no checkout to recompute it from. This commits
the chain folder (the policy, and the app folder the factory's policy names) and writes the host platform's
statement again at that commit, with the source digest the commit really has unless ``edit`` changes it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from desktop_qualify.qualify_archive import committed_source_digest
from desktop_qualify.qualify_policy import host_platform

from support.evidence_factory import Evidence, PlatformSpec, PredicateEdit

_GIT = ["git", "-c", "user.name=qualify-tests", "-c", "user.email=tests@desktop-qualify.invalid",
        "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"]


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([*_GIT, "-C", str(root), *args], capture_output=True, text=True, check=True,
                          env={**os.environ, **(env or {})})
    return done.stdout.strip()


def commit_all(root: Path, message: str = "app", *, date: str | None = None) -> str:
    """Commit everything under ``root`` (a repository made on first use); return the commit.

    ``date``: the commit's time (git's date format), for two commits of one time.
    """
    if not (root / ".git").exists():
        git(root, "init", "-q")
    git(root, "add", "-A")
    dated = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else None
    git(root, "commit", "-q", "--allow-empty", "-m", message, env=dated)
    return git(root, "rev-parse", "HEAD")


def at_real_commit(ev: Evidence, edit: PredicateEdit | None = None) -> str:
    """Re-make ``ev``'s host statement and aggregate at a commit of ``ev.root``; return the true source digest."""
    app = ev.policy.resolve(ev.policy.file.app.source)
    sha = commit_all(ev.root)
    digest = committed_source_digest(ev.root, sha, app.relative_to(ev.root.resolve()).as_posix())

    def real(pred: dict[str, Any]) -> None:
        pred["build"]["source_digest"] = digest
        if edit is not None:
            edit(pred)

    ev.sha = sha
    ev.platforms = []
    ev.write_platform(PlatformSpec(host_platform(), edit=real))
    ev.write_aggregate()
    return digest
