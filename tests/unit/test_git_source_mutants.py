"""The app's committed source read from a real git repository, exactly: what is exported, when it is refused, why.

``export_committed_tree`` extracts ``git archive`` of one commit's app folder (never the work tree) and refuses, with
the caller's code, the exact message (the commit cut to 12 hex digits, git's error cut to 300 characters and decoded
with undecodable bytes replaced) and the hint: a folder the commit does not hold, an archive above the size cap (at
the cap it is read), a committed link the export refuses, and git that cannot run or runs past its 300 s.
``commit_epoch`` returns the committer's time and refuses, in its own words, a commit git cannot show, an object that
is not a commit, and git that cannot run or runs past its 60 s. ``app_relative_path`` refuses a folder outside the
checkout; ``committed_source_digest`` exports into a ``qualify-source-`` folder of the temporary folder and removes
it. The repositories are made in the test's folder with a fixed author, committer and date, never global
configuration. Written for the mutants of the module that survived the fast test set (docs/mutation.md).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_archive import _git_source
from desktop_qualify.qualify_archive._git_source import (
    app_relative_path,
    commit_epoch,
    committed_source_digest,
    export_committed_tree,
    tree_sha256,
)
from support.checkout import commit_all, git

DATE = "2024-01-02T03:04:05Z"
EPOCH = 1704164645
ARCHIVE_HINT = "the app source must be committed, and the checkout must hold the commit"
LINK_HINT = "the app folder's committed links must stay inside it"


def _repo(tmp_path: Path, *, link: str | None = None) -> tuple[Path, str]:
    """A checkout holding ``app/main.py`` (and ``app/link`` to ``link``) at one commit of a fixed date."""
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    (repo / "app" / "main.py").write_text("print('hello')\n")
    if link is not None:
        (repo / "app" / "link").symlink_to(link)
    return repo, commit_all(repo, date=DATE)


def _git_error(repo: Path, *args: str) -> bytes:
    """What git itself writes to stderr for ``args`` in ``repo`` (its wording varies with its version)."""
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    assert done.returncode != 0
    return done.stderr.strip()


def _refusal(call: Any) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        call()
    return caught.value


class _Timeout:
    """subprocess.run for git that runs past the timeout it is given; records each command line."""

    def __init__(self) -> None:
        self.argv: list[list[str]] = []

    def __call__(self, argv: list[str], **kwargs: Any) -> Any:
        self.argv.append(list(argv))
        raise subprocess.TimeoutExpired(argv, kwargs.get("timeout"))


# app_relative_path


def test_a_folder_outside_the_checkout_is_an_environment_refusal_naming_both(tmp_path: Path) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    outside.mkdir()
    assert app_relative_path(repo, repo / "apps" / "desktop") == "apps/desktop"
    err = _refusal(lambda: app_relative_path(repo, outside))
    assert err.code is Code.ENVIRONMENT
    assert err.message == f"{outside} is outside the repository {repo}"


# export_committed_tree and _archive


def test_the_committed_folder_is_exported_not_the_work_tree(tmp_path: Path) -> None:
    repo, sha = _repo(tmp_path)
    (repo / "app" / "main.py").write_text("print('edited, not committed')\n")
    (repo / "app" / "untracked.txt").write_text("not committed\n")
    folder = export_committed_tree(repo, sha, "app", tmp_path / "out")
    assert folder == tmp_path / "out" / "app"
    assert sorted(p.name for p in folder.iterdir()) == ["main.py"]
    assert (folder / "main.py").read_text() == "print('hello')\n"


def test_a_path_the_commit_does_not_hold_is_refused_with_gits_error_and_the_hint(tmp_path: Path) -> None:
    repo, sha = _repo(tmp_path)
    err = _refusal(lambda: export_committed_tree(repo, sha, "missing", tmp_path / "out", code=Code.BUILD_FAILED))
    assert err.code is Code.BUILD_FAILED
    why = _git_error(repo, "archive", "--format=tar", sha, "--", "missing").decode()
    assert 0 < len(why) < 300
    assert err.message == f"git archive of missing at {sha[:12]} failed: {why}"
    assert err.hint == ARCHIVE_HINT
    assert not (tmp_path / "out").exists()


def test_gits_error_is_cut_at_300_characters(tmp_path: Path) -> None:
    repo, sha = _repo(tmp_path)
    long = "x" * 400
    err = _refusal(lambda: export_committed_tree(repo, sha, long, tmp_path / "out"))
    why = _git_error(repo, "archive", "--format=tar", sha, "--", long).decode()
    assert len(why) > 300
    assert err.message == f"git archive of {long} at {sha[:12]} failed: {why[:300]}"
    assert err.code is Code.ENVIRONMENT


def test_gits_undecodable_error_bytes_are_replaced_not_raised(tmp_path: Path) -> None:
    repo, sha = _repo(tmp_path)
    name = "bad\udcff"  # the byte 0xff as a path name carries it: git echoes it in its error
    err = _refusal(lambda: export_committed_tree(repo, sha, name, tmp_path / "out"))
    why = _git_error(repo, "archive", "--format=tar", sha, "--", name)
    assert b"bad\xff" in why
    assert err.message == f"git archive of {name} at {sha[:12]} failed: {why.decode(errors='replace')}"
    assert "bad\ufffd" in err.message
    assert err.hint == ARCHIVE_HINT


def test_an_archive_at_the_cap_is_read_and_one_byte_above_it_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, sha = _repo(tmp_path)
    size = len(subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", sha, "--", "app"],
                              capture_output=True, check=True).stdout)
    monkeypatch.setattr(_git_source, "MAX_SOURCE_ARCHIVE", size)
    assert (export_committed_tree(repo, sha, "app", tmp_path / "at") / "main.py").is_file()
    monkeypatch.setattr(_git_source, "MAX_SOURCE_ARCHIVE", size - 1)
    err = _refusal(lambda: export_committed_tree(repo, sha, "app", tmp_path / "above", code=Code.BUILD_FAILED))
    assert err.code is Code.BUILD_FAILED
    assert err.message == f"git archive of app at {sha[:12]} failed: larger than the cap"
    assert err.hint == ARCHIVE_HINT


def test_git_that_cannot_run_is_the_callers_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, sha = _repo(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    with pytest.raises(FileNotFoundError) as missing:
        subprocess.run(["git", "--version"], capture_output=True, check=False)
    err = _refusal(lambda: export_committed_tree(repo, sha, "app", tmp_path / "out", code=Code.BUILD_FAILED))
    assert err.code is Code.BUILD_FAILED
    assert err.message == f"git archive of app at {sha[:12]} could not run: {missing.value}"


def test_git_archive_runs_one_command_line_within_300_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sha = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
    run = _Timeout()
    monkeypatch.setattr(subprocess, "run", run)
    err = _refusal(lambda: export_committed_tree(tmp_path, sha, "apps/desktop", tmp_path / "out"))
    assert run.argv == [["git", "-C", str(tmp_path), "archive", "--format=tar", sha, "--", "apps/desktop"]]
    assert err.code is Code.ENVIRONMENT
    assert err.message == (f"git archive of apps/desktop at 3b18e512dba7 could not run: Command '{run.argv[0]}' "
                           "timed out after 300 seconds")


@pytest.mark.skipif(sys.platform == "win32", reason="a committed symbolic link needs POSIX links")
def test_a_committed_link_to_an_absolute_path_is_the_callers_refusal_with_the_hint(tmp_path: Path) -> None:
    repo, sha = _repo(tmp_path, link="/etc/passwd")
    err = _refusal(lambda: export_committed_tree(repo, sha, "app", tmp_path / "out", code=Code.BUILD_FAILED))
    assert err.code is Code.BUILD_FAILED
    assert err.message == \
        f"app at {sha[:12]} holds a member the export refuses: 'app/link' is a link to an absolute path"
    assert err.hint == LINK_HINT


def test_a_committed_file_is_not_an_app_folder(tmp_path: Path) -> None:
    repo, sha = _repo(tmp_path)
    err = _refusal(lambda: export_committed_tree(repo, sha, "app/main.py", tmp_path / "out",
                                                 code=Code.BUILD_FAILED))
    assert err.code is Code.BUILD_FAILED
    assert err.message == f"app/main.py is not a folder in commit {sha[:12]}"
    assert err.hint is None


# committed_source_digest


def test_the_digest_is_taken_in_a_qualify_source_scratch_folder_that_is_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, sha = _repo(tmp_path)
    expected = tree_sha256(export_committed_tree(repo, sha, "app", tmp_path / "direct"))
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    seen: list[Path] = []
    real = _git_source.export_committed_tree

    def export(repo: Path, sha: str, relative: str, dest: Path, **kwargs: Any) -> Path:
        seen.append(dest)
        assert dest.is_dir()
        return real(repo, sha, relative, dest, **kwargs)

    monkeypatch.setattr(_git_source, "export_committed_tree", export)
    assert committed_source_digest(repo, sha, "app") == expected
    (dest,) = seen
    assert dest.parent == temp
    assert dest.name.startswith("qualify-source-")
    assert list(temp.iterdir()) == []


# commit_epoch


def test_the_epoch_is_the_committers_time(tmp_path: Path) -> None:
    repo, sha = _repo(tmp_path)
    assert commit_epoch(repo, sha) == EPOCH


def test_a_commit_git_cannot_show_is_refused_with_gits_error(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path)
    sha = "0123456789abcdef0123456789abcdef01234567"
    err = _refusal(lambda: commit_epoch(repo, sha, code=Code.BUILD_FAILED))
    assert err.code is Code.BUILD_FAILED
    why = _git_error(repo, "show", "-s", "--format=%ct", f"{sha}^{{commit}}", "--").decode()
    assert 0 < len(why) < 300
    assert err.message == f"the time of commit 0123456789ab cannot be read: {why}"


def test_gits_error_about_the_commit_is_cut_at_300_characters(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path)
    sha = "f" * 400
    err = _refusal(lambda: commit_epoch(repo, sha))
    assert err.code is Code.ENVIRONMENT
    why = _git_error(repo, "show", "-s", "--format=%ct", f"{sha}^{{commit}}", "--").decode()
    assert len(why) > 300
    assert err.message == f"the time of commit {'f' * 12} cannot be read: {why[:300]}"


def test_an_object_that_is_not_a_commit_has_no_time(tmp_path: Path) -> None:
    repo, sha = _repo(tmp_path)
    tree = git(repo, "rev-parse", f"{sha}^{{tree}}")
    err = _refusal(lambda: commit_epoch(repo, tree, code=Code.BUILD_FAILED))
    assert err.code is Code.BUILD_FAILED
    why = _git_error(repo, "show", "-s", "--format=%ct", f"{tree}^{{commit}}", "--").decode()
    assert err.message == f"the time of commit {tree[:12]} cannot be read: {why}"


@pytest.mark.parametrize("content", ["12345\n", "\u00b2\n"], ids=["ascii digits", "a superscript digit"])
def test_a_blob_that_reads_as_a_number_is_no_commit_time(tmp_path: Path, content: str) -> None:
    # git show of a blob prints its bytes with exit 0: only a commit's own time may pass, never a coded crash.
    repo, _ = _repo(tmp_path)
    blob = subprocess.run(["git", "-C", str(repo), "hash-object", "-w", "--stdin"], input=content, text=True,
                          capture_output=True, check=True).stdout.strip()
    err = _refusal(lambda: commit_epoch(repo, blob))
    assert err.code is Code.ENVIRONMENT
    assert err.message.startswith(f"the time of commit {blob[:12]} cannot be read: ")


def test_git_show_that_cannot_run_is_the_callers_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, sha = _repo(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    with pytest.raises(FileNotFoundError) as missing:
        subprocess.run(["git", "--version"], capture_output=True, check=False)
    err = _refusal(lambda: commit_epoch(repo, sha, code=Code.BUILD_FAILED))
    assert err.code is Code.BUILD_FAILED
    assert err.message == f"git show of {sha[:12]} could not run: {missing.value}"


def test_git_show_runs_one_command_line_within_60_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sha = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
    run = _Timeout()
    monkeypatch.setattr(subprocess, "run", run)
    err = _refusal(lambda: commit_epoch(tmp_path, sha))
    assert run.argv == [["git", "-C", str(tmp_path), "show", "-s", "--format=%ct", f"{sha}^{{commit}}", "--"]]
    assert err.code is Code.ENVIRONMENT
    assert err.message == (f"git show of 3b18e512dba7 could not run: Command '{run.argv[0]}' "
                           "timed out after 60 seconds")


@pytest.mark.parametrize("said", ["", "not a time\n", "12:30\n"], ids=["nothing", "words", "a clock"])
def test_a_git_that_succeeds_without_a_time_is_refused_not_crashed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, said: str) -> None:
    # A git on the job's PATH that exits 0 but prints no number (broken, or not git): a coded refusal, never int()'s.
    def git_show(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, 0, said, "")

    monkeypatch.setattr(subprocess, "run", git_show)
    err = _refusal(lambda: commit_epoch(tmp_path, "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"))
    assert err.code is Code.ENVIRONMENT
    assert err.message == "the time of commit 3b18e512dba7 cannot be read: "
