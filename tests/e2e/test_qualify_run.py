"""`qualify run` on a scratch checkout: the whole local chain in one command, ending QUALIFIED (issue 33 item 1).

The repository is laid out as a fresh clone (the app and the committed policies, no keys yet), so the first run
also makes the keys. A later run that fails (a tracked file changed: the source gate refuses the dirty tree)
must leave the last good output byte for byte as it was and name the stable code; bad input is refused with
its code before anything is staged.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from support.chain import make_app_repo

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="the scratch checkout's policy "
                                                   "is qualified on this machine's platform; the chain runs on linux")]
RUN_ID = "e2e-qualify-run-1"
LISTED = ("evidence", "artifact", "decision", "summary", "VSA", "records", "work", "keyring", "keys")


def qualify_run(*args: str | Path, cwd: Path, run_id: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "QUALIFY_RUN_ID"}
    if run_id is not None:
        env["QUALIFY_RUN_ID"] = run_id
    return subprocess.run([sys.executable, "-m", "desktop_qualify.qualify_cli", "run", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=900, check=False)


def digests(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``: a file's SHA-256, a link's target, or its kind (the work folder is ~100 MB)."""
    seen = {}
    for path in sorted(folder.rglob("*")):
        mode = path.lstat().st_mode
        name = path.relative_to(folder).as_posix()
        if stat.S_ISREG(mode):
            seen[name] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            seen[name] = f"link {path.readlink()}" if stat.S_ISLNK(mode) else oct(stat.S_IFMT(mode))
    return seen


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("qualify-run") / "repo"
    make_app_repo(root, with_policies=True)
    return root


@pytest.fixture(scope="module")
def first(repo: Path) -> subprocess.CompletedProcess[str]:
    # Run from outside the repository: the default output is at the repository's top, not the current folder.
    return qualify_run("--policy", repo / "policies" / "local.toml", cwd=repo.parent, run_id=RUN_ID)


def test_one_command_runs_the_chain_to_qualified_and_lists_every_output(
        repo: Path, first: subprocess.CompletedProcess[str]) -> None:
    assert first.returncode == 0, f"{first.stdout}\n{first.stderr}"
    assert "Traceback" not in first.stdout + first.stderr
    out = repo / "qualification-out"
    # The keys were missing in the fresh clone: made first, where the policy says (git-ignored .qualify/).
    assert "qualify run: keygen ok" in first.stderr
    assert sorted(p.name for p in (repo / ".qualify" / "keys").iterdir()) == [
        "aggregate.ed25519.pem", "platform.ed25519.pem", "verifier.ed25519.pem"]
    for step in ("keygen", "produce linux", "aggregate", "verify", "verify-vsa"):
        assert f"qualify run: {step} ok (" in first.stderr, step
    decision = json.loads((out / "decision.json").read_text(encoding="utf-8"))
    assert decision["decision"] == "QUALIFIED"
    assert decision["run_id"] == RUN_ID  # one run id, $QUALIFY_RUN_ID, across every step
    [artifact] = (out / "artifacts").iterdir()
    assert {p.name for p in (out / "evidence").iterdir()} == {
        "platform-linux.dsse.json", "provenance-linux.dsse.json", "aggregate.dsse.json"}
    assert "QUALIFIED" in (out / "summary.md").read_text(encoding="utf-8")
    [vsa] = (out / "verification-summary.intoto.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(vsa)["payloadType"] == "application/vnd.in-toto+json"
    # Swapped into place: nothing staged or set aside is left beside the output.
    assert sorted(p.name for p in repo.iterdir() if p.name.startswith(".qualification-out")) == []
    # Where everything went, each path named once and there.
    report = first.stdout[first.stdout.index(f"QUALIFIED: run {RUN_ID}"):].splitlines()
    listed = {line.split()[0]: line.split()[1] for line in report[1:] if line.split() and line.split()[0] in LISTED}
    assert set(listed) == set(LISTED), report
    assert listed["artifact"] == str(artifact)
    assert listed["evidence"] == str(out / "evidence")
    assert listed["decision"] == str(out / "decision.json")
    for label in ("evidence", "artifact", "decision", "summary", "VSA", "records", "work", "keyring", "keys"):
        assert Path(listed[label].rstrip(",")).exists(), label


def test_a_failing_run_leaves_the_last_good_output_byte_identical_and_names_the_code(
        repo: Path, first: subprocess.CompletedProcess[str]) -> None:
    assert first.returncode == 0, first.stderr
    out = repo / "qualification-out"
    before = digests(out)
    tracked = repo / "reference_app" / "README.md"
    original = tracked.read_bytes()
    tracked.write_bytes(original + b"\na change not committed\n")
    try:
        done = qualify_run("--policy", "policies/local.toml", cwd=repo)
    finally:
        tracked.write_bytes(original)
    said = done.stdout + done.stderr
    assert done.returncode == 2, said  # the producer's own exit status for a dirty tree
    assert "Traceback" not in said
    assert "qualify run: keygen: skipped" in done.stderr  # every key was there
    last = done.stderr.strip().splitlines()[-1]
    assert "produce linux failed (exit 2, QE_WORKTREE_DIRTY)" in last, last
    assert f"{out} left as it was" in last
    assert digests(out) == before
    assert (repo / ".qualification-out.staging").is_dir()  # the failed run's output, for inspection
    assert not (repo / ".qualification-out.previous").exists()


def test_a_github_mode_policy_is_refused_before_anything_is_staged(repo: Path, tmp_path: Path) -> None:
    done = qualify_run("--policy", repo / "policies" / "release.toml", "--out", tmp_path / "out", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("QE_POLICY_INVALID: ")
    assert list(tmp_path.iterdir()) == []


def test_an_out_that_is_a_link_is_refused_and_left_alone(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "kept").write_text("kept")
    (tmp_path / "out").symlink_to(target, target_is_directory=True)
    done = qualify_run("--policy", repo / "policies" / "local.toml", "--out", tmp_path / "out", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "QE_USAGE: --out" in done.stderr
    assert "a symbolic link" in done.stderr
    assert (tmp_path / "out").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "out"]
    assert [p.name for p in target.iterdir()] == ["kept"]


def test_an_out_that_holds_the_repository_is_refused(repo: Path) -> None:
    done = qualify_run("--policy", "policies/local.toml", "--out", repo, cwd=repo)
    assert done.returncode == 2, done.stderr
    assert "QE_USAGE: --out" in done.stderr
    assert "holds the repository" in done.stderr


def test_a_policy_outside_any_checkout_is_refused(repo: Path, tmp_path: Path) -> None:
    policy = tmp_path / "local.toml"
    shutil.copyfile(repo / "policies" / "local.toml", policy)
    done = qualify_run("--policy", policy, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "QE_USAGE: " in done.stderr
    assert "not inside a git checkout" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["local.toml"]


def test_root_must_hold_the_policy_in_its_policies_folder(repo: Path, tmp_path: Path) -> None:
    """--root makes keygen and verify resolve the policy's paths from ROOT/policies; produce reads them in place."""
    elsewhere = tmp_path / "checkout"
    (elsewhere / "policies").mkdir(parents=True)
    done = qualify_run("--policy", repo / "policies" / "local.toml", "--root", elsewhere, "--out", tmp_path / "out",
                       cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "QE_USAGE: --root" in done.stderr
    assert "not in ROOT/policies" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkout"]
