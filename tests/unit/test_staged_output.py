"""A failed run loses nothing: staged outputs, swapped into place only after success, and nox's cheap checks."""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from desktop_qualify.producer._publish import Staged, publish, staging_folder

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from tools.staging import staging_folder as nox_staging  # noqa: E402
from tools.staging import swap_into_place  # noqa: E402


def test_swap_replaces_the_output_only_with_a_complete_new_one(tmp_path: Path) -> None:
    out = tmp_path / "qualification-out"
    (out / "evidence").mkdir(parents=True)
    (out / "evidence" / "old").write_text("last good")
    staging = nox_staging(out)
    (staging / "evidence").mkdir(parents=True)
    (staging / "evidence" / "new").write_text("this run")
    swap_into_place(staging, out)
    assert [p.name for p in (out / "evidence").iterdir()] == ["new"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qualification-out"]


def test_a_failed_swap_puts_the_earlier_output_back(tmp_path: Path) -> None:
    out = tmp_path / "qualification-out"
    out.mkdir()
    (out / "marker").write_text("last good")
    with pytest.raises(FileNotFoundError):
        swap_into_place(tmp_path / "no-such-staging", out)
    assert (out / "marker").read_text() == "last good"


def test_publish_moves_one_platform_and_leaves_the_others(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "evidence").mkdir(parents=True)
    (out / "artifacts").mkdir()
    (out / "evidence" / "platform-linux.dsse.json").write_text("earlier linux")
    (out / "evidence" / "platform-macos.dsse.json").write_text("macos")
    (out / "evidence" / "aggregate.dsse.json").write_text("binds the earlier linux")
    (out / "evidence" / ".platform-linux.dsse.json.abcd1234.tmp").write_text("a killed write")
    (out / "evidence" / "provenance-linux.dsse.json").write_text("earlier linux provenance")
    (out / "evidence" / ".provenance-linux.dsse.json.abcd1234.tmp").write_text("a killed write")
    (out / "artifacts" / "app-1111-linux-x86_64.tar.gz").write_text("earlier linux build")
    (out / "artifacts" / ".app-1111-linux-x86_64.tar.gz.partial").write_text("half")
    (out / "artifacts" / "app-1111-macos-arm64.zip").write_text("macos build")
    staging = staging_folder(out, "linux")
    for folder in ("evidence", "artifacts", "records/linux"):
        (staging / folder).mkdir(parents=True)
    (staging / "evidence" / "platform-linux.dsse.json").write_text("this run")
    (staging / "evidence" / "provenance-linux.dsse.json").write_text("this run's provenance")
    (staging / "artifacts" / "app-2222-linux-x86_64.tar.gz").write_text("this build")
    (staging / "records" / "linux" / "journey.json").write_text("{}")
    statement, archive = publish(Staged(out, staging, "linux", "app", staging / "evidence" / "platform-linux.dsse.json",
                                        staging / "artifacts" / "app-2222-linux-x86_64.tar.gz", "aggregate.dsse.json",
                                        staging / "evidence" / "provenance-linux.dsse.json"))
    assert statement.read_text() == "this run"
    assert (out / "evidence" / "provenance-linux.dsse.json").read_text() == "this run's provenance"
    assert archive == out / "artifacts" / "app-2222-linux-x86_64.tar.gz"
    assert sorted(p.name for p in (out / "evidence").iterdir()) == ["platform-linux.dsse.json",
                                                                   "platform-macos.dsse.json",
                                                                   "provenance-linux.dsse.json"]
    assert sorted(p.name for p in (out / "artifacts").iterdir()) == ["app-1111-macos-arm64.zip",
                                                                    "app-2222-linux-x86_64.tar.gz"]
    assert (out / "records" / "linux" / "journey.json").is_file()
    assert not staging.exists()


@functools.cache
def _noxfile() -> ModuleType:
    pytest.importorskip("nox")
    spec = importlib.util.spec_from_file_location("noxfile_under_test", REPO / "noxfile.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _git(root: Path, *args: str) -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "PATH": os.environ.get("PATH", ""), "HOME": str(root)}
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_nox_checks_the_source_gates_preconditions_before_installing(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    noxfile = _noxfile()
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.setattr(noxfile, "ROOT", repo)
    assert "not the top of a git work tree" in noxfile._source_gate_preconditions()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "f").write_text("x")
    _git(repo, "add", "f")
    _git(repo, "commit", "-q", "-m", "one")
    assert noxfile._source_gate_preconditions() is None
    _git(repo, "checkout", "-q", "-b", "feature")
    assert "not on branch main" in noxfile._source_gate_preconditions()
    _git(repo, "checkout", "-q", "--detach", "main")
    assert "a detached HEAD" in noxfile._source_gate_preconditions()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_nox_refuses_a_dirty_work_tree_before_installing_when_the_policy_requires_a_clean_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    noxfile = _noxfile()
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.setattr(noxfile, "ROOT", repo)
    (repo / "policies").mkdir()
    (repo / "policies" / "strict.toml").write_text("[source]\nrequire_clean_worktree = true\n")
    (repo / "policies" / "lax.toml").write_text("[source]\nrequire_clean_worktree = false\n")
    (repo / ".gitignore").write_text("qualification-out*/\n.qualify/\n.nox/\n")
    (repo / "f").write_text("x")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    # The committed local policies require a clean tree: the default (local.toml) is read from the policy.
    assert noxfile._requires_clean_worktree("policies/strict.toml")
    assert not noxfile._requires_clean_worktree("policies/lax.toml")
    # A run's git-ignored outputs and an untracked file are not changes to the committed tree.
    for ignored in ("qualification-out/work/linux/big", ".qualify/keys/k.pem", ".nox/qualify/bin/x", "notes.txt"):
        (repo / ignored).parent.mkdir(parents=True, exist_ok=True)
        (repo / ignored).write_text("output\n")
    assert noxfile._source_gate_preconditions("policies/strict.toml") is None
    (repo / "f").write_text("changed")
    refused = noxfile._source_gate_preconditions("policies/strict.toml")
    assert refused is not None
    assert refused.startswith("QE_WORKTREE_DIRTY: ")
    assert "(f)" in refused
    # A policy that allows a dirty tree lets the run go on: the gate records it and the verdict shows it.
    assert noxfile._source_gate_preconditions("policies/lax.toml") is None


def test_the_committed_local_policies_require_a_clean_work_tree() -> None:
    noxfile = _noxfile()
    for policy in (noxfile.LOCAL_POLICY, noxfile.UPDATE_POLICY):
        assert noxfile._requires_clean_worktree(policy), policy
