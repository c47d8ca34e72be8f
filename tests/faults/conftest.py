"""Fixtures of the fault-injection suite (helpers: faultkit.py).

The session builds one real local chain: the app committed into a throw-away
repository on `main`, a local policy, keys, and one real ``qualify produce``
with the real PyInstaller (run as the rerun of a job killed inside
PyInstaller, so that the one real build also proves that rerun). It keeps a
copy of the archive the app's own build command made, so that the other runs
can skip that command (producer_child.py) without skipping anything else.
"""

from __future__ import annotations

import shutil
import time

import pytest
from faultkit import PLATFORM, App, Reference, candidate_artifacts, kill_in_stage, verify
from support.chain import make_app_repo, qualify, write_policy


@pytest.fixture(scope="session")
def app(tmp_path_factory: pytest.TempPathFactory) -> App:
    root = tmp_path_factory.mktemp("faults")
    repo = root / "repo"
    sha = make_app_repo(repo)
    policy = write_policy(root, repo / "reference_app")
    # The policy names its keys under root by absolute path; root is the repository keygen may write in.
    done = qualify("keygen", "--policy", policy, "--root", root)
    assert done.returncode == 0, done.stdout + done.stderr
    return App(root, repo, sha, policy)


@pytest.fixture(scope="session")
def reference(app: App) -> Reference:
    """The session's one real build, made to count twice: as the rerun of a job killed inside PyInstaller."""
    out = app.root / "reference"
    started = time.monotonic()
    build_kill = kill_in_stage(app, out, "build", "kill-build", cached=None)
    rerun = qualify("produce", "--policy", app.policy, "--platform", PLATFORM, "--out", out, "--run-id", "faults-ref")
    assert rerun.returncode == 0, f"the reference producer run failed:\n{rerun.stdout}\n{rerun.stderr}"
    seconds = time.monotonic() - started
    evidence = out / "evidence"
    aggregated = qualify("aggregate", "--policy", app.policy, "--evidence", evidence, "--out", evidence)
    checked = verify(app, evidence, candidate_artifacts(out))
    (built,) = (out / "work" / PLATFORM / "out").iterdir()
    output = app.root / "cached-output" / built.name
    output.parent.mkdir()
    shutil.copyfile(built, output)
    (archive,) = candidate_artifacts(out)
    return Reference(out, output, archive, build_kill, rerun, aggregated, checked, seconds)
