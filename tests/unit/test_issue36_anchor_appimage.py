"""Issue 36: the bundle anchor's "unchanged since commit" check, and the AppImage listing's set-group-id refusal.

- Without ``--root``, a bundle's policy is anchored by the history of the git work tree holding ``--policy`` only
  when that file is tracked and unchanged there: a tracked policy edited and not committed anchors nothing.
- ``unsquashfs -lln`` listing a set-group-id file is refused before anything is written, as a set-user-id one is.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.installers._appimage import check_listing
from desktop_qualify.qualify_policy import host_platform
from support.bundles import make_bundle
from support.evidence_factory import Evidence, PlatformSpec, make_evidence


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
                               "PATH": os.environ.get("PATH", ""), "HOME": str(root)})
    return done.stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="anchoring to the policy's history needs git")
def test_a_tracked_policy_edited_and_not_committed_anchors_no_bundle(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path / "run", committed_layout=True, aggregate=False)
    _git(ev.root, "init", "-q", "-b", "main")
    _git(ev.root, "add", "policies/local.toml")
    _git(ev.root, "commit", "-q", "-m", "the policy")
    first = _git(ev.root, "rev-parse", "HEAD")
    run: Evidence = dataclasses.replace(ev, sha=first, evidence_dir=ev.root / "evidence-run",
                                        artifacts_dir=ev.root / "artifacts-run", platforms=[], aggregate_path=None)
    run.evidence_dir.mkdir()
    run.artifacts_dir.mkdir()
    run.write_platform(PlatformSpec(host_platform()))
    run.write_aggregate()
    bundle = make_bundle(qualify, run.policy_path, run.evidence_dir, tmp_path / "run.qualify-bundle.zip")
    report = tmp_path / "report.json"
    argv = ["audit", "--policy", str(ev.policy_path), "--bundle", str(bundle), "--json", str(report)]
    # The auditor's policy, tracked and edited in the work tree, never committed: its history proves nothing.
    ev.policy_path.write_bytes(ev.policy_path.read_bytes() + b"\n# edited here, not committed\n")
    assert _git(ev.root, "status", "--porcelain", "policies/local.toml") == "M policies/local.toml"
    done = qualify(argv)
    assert done.status == 1, done.text
    [reason] = json.loads(report.read_text())["runs"][0]["decision"]["reasons"]
    assert reason["code"] == Code.BUNDLE_UNANCHORED.value
    assert "is not tracked, unchanged, in the git work tree" in reason["message"]
    # Committed, the same bytes are history, and the run's commit anchors the bundle's policy.
    _git(ev.root, "commit", "-q", "-am", "the edit committed")
    done = qualify(argv)
    assert done.status == 0, done.text
    assert f"policy anchored at commit {first}" in done.out


@pytest.mark.parametrize(("mode", "what"), [("-rwxr-sr-x", "set-group-id"), ("-rwsr-xr-x", "set-user-id"),
                                            ("drwxr-Sr-x", "set-group-id folder")])
def test_the_appimage_listing_refuses_set_id_members(mode: str, what: str) -> None:
    listing = ("Parallel unsquashfs: Using 2 processors\n"
               "drwxr-xr-x 0/0                33 2026-12-01 12:00 squashfs-root\n"
               "-rwxr-xr-x 0/0                 5 2026-12-01 12:00 squashfs-root/AppRun\n"
               f"{mode} 0/0                 5 2026-12-01 12:00 squashfs-root/usr/bin/demo\n")
    with pytest.raises(QualificationError) as refused:
        check_listing(listing)
    assert refused.value.code == Code.INSTALL_FAILED
    assert "set-user-id or set-group-id" in refused.value.message, what
    # The same listing without the set-id bit passes: the refusal is the bit's.
    assert check_listing(listing.replace(mode, mode[0] + "rwxr-xr-x")) == 3
