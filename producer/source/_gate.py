"""The source gate: produce only from the live head of main (docs/design.md §3.5).

Local mode reads git. It records what it read and when, and records that
branch protection was not observed: local evidence never claims a protected
main. The head is checked here and again just before the statement is signed
(:meth:`SourceGate.recheck_head`).
"""

from __future__ import annotations

import subprocess
from abc import ABC, abstractmethod
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, Observation, QualificationError, SourceGateRecord, utc_now

MAIN_REF = "refs/heads/main"


class SourceGate(ABC):
    """Observes the source and refuses anything but the head of main."""

    @abstractmethod
    def observe(self) -> SourceGateRecord: ...

    @abstractmethod
    def recheck_head(self, sha: str) -> None:
        """Raise ``QE_NOT_MAIN_HEAD`` when main has moved away from ``sha``."""


def _git(repo: Path, *args: str) -> tuple[int, str]:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, timeout=60, check=False, shell=False
        )
    except FileNotFoundError as exc:
        raise QualificationError(Code.ENVIRONMENT, "git is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise QualificationError(Code.ENVIRONMENT, f"git {' '.join(args)} timed out") from exc
    return done.returncode, done.stdout.decode("utf-8", errors="replace").strip()


def repository_root(path: Path) -> Path:
    """The git work tree that holds ``path``."""
    code, top = _git(path, "rev-parse", "--show-toplevel")
    if code != 0:
        raise QualificationError(Code.SOURCE_GATE_FAILED, f"{path}: not inside a git work tree")
    return Path(top)


class LocalGitGate(SourceGate):
    def __init__(self, repo: Path, *, require_clean: bool, repository: str) -> None:
        self._repo = repo
        self._require_clean = require_clean
        self._repository = repository

    def _read(self, observations: list[Observation], source: str, *args: str) -> tuple[int, str]:
        code, out = _git(self._repo, *args)
        observations.append(Observation(source=source, value=out[:4096] if code == 0 else f"exit {code}",
                                        observed_at=utc_now()))
        return code, out

    def observe(self) -> SourceGateRecord:
        observations: list[Observation] = []
        code, _top = self._read(observations, "git rev-parse --show-toplevel", "rev-parse", "--show-toplevel")
        if code != 0:
            raise QualificationError(Code.SOURCE_GATE_FAILED, f"{self._repo}: not inside a git work tree")
        _, ref = self._read(observations, "git symbolic-ref -q HEAD", "symbolic-ref", "-q", "HEAD")
        _, sha = self._read(observations, "git rev-parse HEAD", "rev-parse", "--verify", "HEAD^{commit}")
        _, head = self._read(observations, f"git rev-parse {MAIN_REF}", "rev-parse", "--verify", "-q",
                             f"{MAIN_REF}^{{commit}}")
        _, status = self._read(observations, "git status --porcelain --untracked-files=no", "status",
                               "--porcelain", "--untracked-files=no")
        clean = status == ""
        # A detached HEAD or a tag is refused even when it points at main's commit.
        if ref != MAIN_REF:
            raise QualificationError(
                Code.REF_NOT_MAIN, f"the checkout is on {ref or 'a detached HEAD'!r}, not {MAIN_REF}",
                hint="qualification runs only from the head of main: git switch main",
            )
        if not head or sha != head:
            raise QualificationError(Code.NOT_MAIN_HEAD, f"HEAD {sha[:12]} is not the head of main ({head[:12]})")
        # `--untracked-files=no`: only changes to tracked files count, so the git-ignored outputs of a run
        # (qualification-out*/, .qualify/, .nox/) and untracked files never make the tree dirty.
        if self._require_clean and not clean:
            changed = ", ".join(line.split(maxsplit=1)[-1] for line in status.splitlines()[:5])
            raise QualificationError(
                Code.WORKTREE_DIRTY, f"the work tree has uncommitted changes to tracked files ({changed[:400]}"
                                     f"{', ...' if len(status.splitlines()) > 5 else ''}) and the policy requires "
                                     "a clean tree",
                hint="commit the changes (the build is made from the commit, not from the files on disk), or "
                     "qualify under a policy with [source] require_clean_worktree = false",
            )
        return SourceGateRecord(
            mode="local",
            repository=self._repository,
            ref=ref,
            sha=sha,
            main_head=head,
            worktree_clean=clean,
            protection="not-observed",
            head_matches=True,
            observations=observations,
            passed=True,
        )

    def recheck_head(self, sha: str) -> None:
        code, head = _git(self._repo, "rev-parse", "--verify", "-q", f"{MAIN_REF}^{{commit}}")
        if code != 0 or head != sha:
            raise QualificationError(
                Code.NOT_MAIN_HEAD, f"main moved from {sha[:12]} to {head[:12] or '?'} before signing"
            )
