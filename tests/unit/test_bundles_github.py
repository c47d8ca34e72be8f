"""A GitHub-mode run as a bundle: Sigstore statements, the release policy, the trusted root it pins."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path
from typing import Any

from corpus.corpus_github import GitHubSite, GitHubWorld, github_evidence, make_world
from desktop_qualify.evidence_schemas import Code
from support.evidence_factory import make_evidence


def _committed_world(tmp_path: Path) -> GitHubWorld:
    """The corpus' GitHub world, its policy re-written as committed: the trusted root named relative to policies/."""
    world = make_world(tmp_path / "world")
    root = tmp_path / "repo"
    (root / "policies" / "sigstore").mkdir(parents=True)
    shutil.copyfile(world.instance.trusted_root_path, root / "policies" / "sigstore" / "trusted_root.test.json")
    lines = []
    for line in world.policy_path.read_text(encoding="utf-8").splitlines():
        key = line.split("=", 1)[0].strip()
        lines.append('trusted_root = "sigstore/trusted_root.test.json"' if key == "trusted_root" else line)
    policy = root / "policies" / "release-test.toml"
    policy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return GitHubWorld(world.root, world.instance, world.stranger, world.emulator, policy)


def _bundled_run(tmp_path: Path, qualify: Any) -> tuple[GitHubWorld, Path]:
    """A qualified GitHub-mode run under the committed-layout policy, packed with `qualify bundle`."""
    world = _committed_world(tmp_path)
    try:
        ev = github_evidence(GitHubSite(world, tmp_path / "site"))
    finally:
        world.emulator.stop()
    bundle = tmp_path / "run.qualify-bundle.zip"
    done = qualify(["bundle", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                    "--out", str(bundle)])
    assert done.status == 0, done.text
    return world, bundle


def test_a_github_mode_bundle_carries_its_pinned_root_and_audits_offline(tmp_path: Path, qualify: Any) -> None:
    world, bundle = _bundled_run(tmp_path, qualify)
    with zipfile.ZipFile(bundle) as archive:
        names = sorted(archive.namelist())
    assert names == ["evidence/aggregate.sigstore.json", "evidence/platform-linux.sigstore.json",
                     "evidence/provenance-linux.sigstore.json", "manifest.json",
                     "policies/release-test.toml", "policies/sigstore/trusted_root.test.json"]
    # The root is removed from the auditor's side: the bundle's own copy is what judges the run.
    (world.policy_path.parent / "sigstore" / "trusted_root.test.json").unlink()
    audited = qualify(["audit", "--policy", str(world.policy_path), "--bundle", str(bundle)])
    assert audited.status == 0, audited.text


def test_a_github_mode_bundle_under_a_local_policy_is_refused(tmp_path: Path, qualify: Any) -> None:
    _, bundle = _bundled_run(tmp_path, qualify)
    local = make_evidence(tmp_path / "local", committed_layout=True)
    done = qualify(["audit", "--policy", str(local.policy_path), "--bundle", str(bundle)])
    assert done.status == 1
    assert Code.BUNDLE_UNANCHORED.value in done.text
