"""producer/source/_gate.LocalGitGate on throw-away git repositories: only the head of main passes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.source._gate import LocalGitGate, repository_root


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Neither the user's nor the system's git configuration may change what the gate sees.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name, value in (("GIT_AUTHOR_NAME", "t"), ("GIT_AUTHOR_EMAIL", "t@example.invalid"),
                        ("GIT_COMMITTER_NAME", "t"), ("GIT_COMMITTER_EMAIL", "t@example.invalid")):
        monkeypatch.setenv(name, value)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True, timeout=60)
    return done.stdout.decode().strip()


def commit(repo: Path, name: str, text: str) -> str:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"change {name}")
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    commit(path, "a.txt", "one")
    commit(path, "b.txt", "two")
    (path / "app").mkdir()
    commit(path, "app/c.txt", "three")
    return path


def gate(path: Path, *, require_clean: bool = False) -> LocalGitGate:
    return LocalGitGate(path, require_clean=require_clean, repository="local/desktop-qualify")


def refused(path: Path, code: Code, *, require_clean: bool = False) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        gate(path, require_clean=require_clean).observe()
    assert caught.value.code is code, caught.value.diagnostics()
    return caught.value


def test_the_head_of_main_passes(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    record = gate(repo / "app", require_clean=True).observe()
    assert (record.sha, record.ref, record.passed, record.head_matches) == (head, "refs/heads/main", True, True)
    assert record.worktree_clean
    # Local evidence never claims protection it did not observe.
    assert record.protection == "not-observed"
    assert record.mode == "local"
    assert record.repository == "local/desktop-qualify"
    sources = [o.source for o in record.observations]
    assert "git rev-parse HEAD" in sources
    assert "git symbolic-ref -q HEAD" in sources
    assert {o.value for o in record.observations} >= {head, "refs/heads/main"}


def test_a_detached_head_at_mains_commit_is_refused(repo: Path) -> None:
    git(repo, "switch", "-q", "--detach", "main")
    refused(repo, Code.REF_NOT_MAIN)


def test_a_tag_checkout_is_refused_even_at_mains_commit(repo: Path) -> None:
    git(repo, "tag", "v1.0.0")
    git(repo, "switch", "-q", "--detach", "v1.0.0")
    refused(repo, Code.REF_NOT_MAIN)


def test_another_branch_at_the_same_commit_is_refused(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "release")
    error = refused(repo, Code.REF_NOT_MAIN)
    assert "refs/heads/release" in error.message


def test_an_older_commit_is_refused(repo: Path) -> None:
    git(repo, "switch", "-q", "--detach", "HEAD~1")
    refused(repo, Code.REF_NOT_MAIN)


def test_recheck_head_after_a_new_commit(repo: Path) -> None:
    checker = gate(repo)
    record = checker.observe()
    checker.recheck_head(record.sha)  # unchanged: no error
    commit(repo, "d.txt", "four")
    with pytest.raises(QualificationError) as caught:
        checker.recheck_head(record.sha)
    assert caught.value.code is Code.NOT_MAIN_HEAD


def test_recheck_head_when_main_is_gone(repo: Path) -> None:
    checker = gate(repo)
    sha = checker.observe().sha
    git(repo, "switch", "-q", "-c", "other")
    git(repo, "branch", "-q", "-D", "main")
    with pytest.raises(QualificationError) as caught:
        checker.recheck_head(sha)
    assert caught.value.code is Code.NOT_MAIN_HEAD


def test_a_dirty_tree_is_refused_when_the_policy_requires_clean(repo: Path) -> None:
    (repo / "a.txt").write_text("changed")
    refused(repo, Code.WORKTREE_DIRTY, require_clean=True)
    record = gate(repo, require_clean=False).observe()
    assert record.passed
    assert not record.worktree_clean


def test_a_staged_change_is_dirty_too(repo: Path) -> None:
    (repo / "a.txt").write_text("changed")
    git(repo, "add", "a.txt")
    refused(repo, Code.WORKTREE_DIRTY, require_clean=True)


def test_untracked_files_do_not_make_the_tree_dirty(repo: Path) -> None:
    (repo / "new.txt").write_text("untracked")
    assert gate(repo, require_clean=True).observe().worktree_clean


def test_a_dirty_tree_is_the_callers_machine_exit_2_naming_the_files(repo: Path) -> None:
    (repo / "a.txt").write_text("changed")
    caught = refused(repo, Code.WORKTREE_DIRTY, require_clean=True)
    assert caught.exit_status == 2
    assert "(a.txt)" in caught.message
    assert caught.hint is not None
    assert "require_clean_worktree = false" in caught.hint


def test_a_runs_git_ignored_outputs_do_not_make_the_tree_dirty(repo: Path) -> None:
    commit(repo, ".gitignore", "qualification-out*/\n.qualify/\n.nox/\n")
    for output in ("qualification-out/work/linux/out/app.tar.gz", "qualification-out-update/decision.json",
                   ".qualify/keyring.json", ".nox/qualify/bin/qualify"):
        (repo / output).parent.mkdir(parents=True, exist_ok=True)
        (repo / output).write_text("output")
    assert gate(repo, require_clean=True).observe().worktree_clean


def test_not_a_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    refused(plain, Code.SOURCE_GATE_FAILED)


def test_a_repository_without_commits(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q", "-b", "main")
    refused(empty, Code.NOT_MAIN_HEAD)


def test_repository_root(repo: Path, tmp_path: Path) -> None:
    assert repository_root(repo / "app").resolve() == repo.resolve()
    (tmp_path / "plain").mkdir()
    with pytest.raises(QualificationError) as caught:
        repository_root(tmp_path / "plain")
    assert caught.value.code is Code.SOURCE_GATE_FAILED
