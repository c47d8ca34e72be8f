"""A bundle is judged under the auditor's trust: the auditor's keys and roles, the policy as of the run's commit.

The attacker here holds one local key (the platform's, or the aggregate's), or
a policy version the repository once held, or a folder above the auditor's
copy of the policy; none of them may turn a bundle into QUALIFIED.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code
from desktop_qualify.qualify_trust import add_to_keyring
from support.bundles import keyring_edit, make_bundle, one_key_both_roles, rewritten
from support.evidence_factory import Evidence, make_evidence

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="anchoring to the policy's history needs git")


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
                               "PATH": os.environ.get("PATH", ""), "HOME": str(root)})
    return done.stdout.strip()


def _repository(tmp_path: Path) -> Evidence:
    """A checkout whose first commit holds the policy; the returned evidence has no statements yet."""
    ev = make_evidence(tmp_path / "run", committed_layout=True, aggregate=False)
    _git(ev.root, "init", "-q", "-b", "main")
    _git(ev.root, "add", "policies/local.toml")
    _git(ev.root, "commit", "-q", "-m", "the policy")
    return ev


def _run_at(ev: Evidence, commit: str, name: str) -> Evidence:
    """A complete run of ``commit`` under the policy as it stands now, in its own evidence folder."""
    run = dataclasses.replace(ev, sha=commit, evidence_dir=ev.root / f"evidence-{name}",
                              artifacts_dir=ev.root / f"artifacts-{name}", platforms=[], aggregate_path=None)
    run.evidence_dir.mkdir()
    run.artifacts_dir.mkdir()
    from desktop_qualify.qualify_policy import host_platform
    from support.evidence_factory import PlatformSpec

    run.write_platform(PlatformSpec(host_platform()))
    run.write_aggregate()
    return run


def _bundle(qualify: Any, run: Evidence, out: Path) -> Path:
    return make_bundle(qualify, run.policy_path, run.evidence_dir, out)


def _audit_json(qualify: Any, policy: Path, bundle: Path, tmp_path: Path, *extra: str) -> tuple[Any, dict[str, Any]]:
    report = tmp_path / "report.json"
    report.unlink(missing_ok=True)
    done = qualify(["audit", "--policy", str(policy), "--bundle", str(bundle), "--json", str(report), *extra])
    return done, json.loads(report.read_text()) if report.exists() else {}


def test_a_run_is_anchored_by_the_policy_as_committed_at_its_own_commit(tmp_path: Path, qualify: Any) -> None:
    ev = _repository(tmp_path)
    first = _git(ev.root, "rev-parse", "HEAD")
    bundle = _bundle(qualify, _run_at(ev, first, "old"), tmp_path / "old.qualify-bundle.zip")
    # Main moves on: the auditor's policy today is not the run's, but the run's commit held the run's policy.
    ev.policy_path.write_bytes(ev.policy_path.read_bytes() + b"\n# tightened later\n")
    _git(ev.root, "commit", "-q", "-am", "a later policy")
    done, report = _audit_json(qualify, ev.policy_path, bundle, tmp_path)
    assert done.status == 0, done.text
    notes = report["runs"][0]["decision"]["notes"]
    assert any(f"policy anchored at commit {first}" in note for note in notes), notes
    assert any("trust root, keyring, signers and journey are the auditor's" in note for note in notes), notes
    assert f"policy anchored at commit {first}" in done.out


def test_a_policy_version_committed_and_reverted_anchors_no_other_commit(tmp_path: Path, qualify: Any) -> None:
    ev = _repository(tmp_path)
    honest = ev.policy_path.read_bytes()
    lax = honest.replace(b"max_statement_bytes = 1048576", b"max_statement_bytes = 2097152")
    assert lax != honest
    # A laxer policy is committed and reverted at once.
    ev.policy_path.write_bytes(lax)
    _git(ev.root, "commit", "-q", "-am", "lax")
    ev.policy_path.write_bytes(honest)
    _git(ev.root, "commit", "-q", "-am", "revert")
    head = _git(ev.root, "rev-parse", "HEAD")
    # A run of main's head bundled under the reverted version.
    ev.policy_path.write_bytes(lax)
    bundle = _bundle(qualify, _run_at(ev, head, "lax"), tmp_path / "lax.qualify-bundle.zip")
    ev.policy_path.write_bytes(honest)
    done, report = _audit_json(qualify, ev.policy_path, bundle, tmp_path)
    assert done.status == 1
    [reason] = report["runs"][0]["decision"]["reasons"]
    assert reason["code"] == Code.BUNDLE_UNANCHORED.value
    assert f"as committed at {head[:12]}" in reason["message"]
    assert "no other version of the policy counts" in reason["message"]


def test_the_same_commit_with_another_policy_version_is_unanchored(tmp_path: Path, qualify: Any) -> None:
    ev = _repository(tmp_path)
    first = _git(ev.root, "rev-parse", "HEAD")
    ev.policy_path.write_bytes(ev.policy_path.read_bytes() + b"\n# a version never committed at that commit\n")
    bundle = _bundle(qualify, _run_at(ev, first, "other"), tmp_path / "other.qualify-bundle.zip")
    _git(ev.root, "commit", "-q", "-am", "committed later")
    ev.policy_path.write_bytes(ev.policy_path.read_bytes() + b"\n# today\n")
    _git(ev.root, "commit", "-q", "-am", "today")
    done, report = _audit_json(qualify, ev.policy_path, bundle, tmp_path)
    assert done.status == 1
    assert report["runs"][0]["decision"]["reasons"][0]["code"] == Code.BUNDLE_UNANCHORED.value
    assert "no other version of the policy counts" in report["runs"][0]["decision"]["reasons"][0]["message"]


def test_a_repository_planted_above_a_copied_policy_anchors_nothing(tmp_path: Path, qualify: Any) -> None:
    ev = _repository(tmp_path)
    first = _git(ev.root, "rev-parse", "HEAD")
    bundle = _bundle(qualify, _run_at(ev, first, "run"), tmp_path / "run.qualify-bundle.zip")
    # The auditor copies today's policy (and keyring) into a folder; someone planted a repository above it.
    planted = tmp_path / "planted"
    copy = planted / "copy"
    shutil.copytree(ev.root / "policies", copy / "policies")
    shutil.copytree(ev.root / "trust", copy / "trust")
    policy = copy / "policies" / "local.toml"
    policy.write_bytes(policy.read_bytes() + b"\n# today\n")
    _git(planted, "init", "-q", "-b", "main")
    (planted / "README").write_text("planted")
    _git(planted, "add", "README")
    _git(planted, "commit", "-q", "-m", "planted")
    done, report = _audit_json(qualify, policy, bundle, tmp_path)
    assert done.status == 1
    message = report["runs"][0]["decision"]["reasons"][0]["message"]
    assert report["runs"][0]["decision"]["reasons"][0]["code"] == Code.BUNDLE_UNANCHORED.value
    assert "not tracked, unchanged" in message
    # Named by --root, the real checkout's history anchors it.
    done, _ = _audit_json(qualify, policy, bundle, tmp_path, "--root", str(ev.root))
    assert done.status == 0, done.text


def _one_key_bundle(tmp_path: Path, qualify: Any, role_of_kept_key: str) -> tuple[Evidence, Path]:
    """A bundle whose keyring gives the one key the attacker holds both roles."""
    ev = make_evidence(tmp_path / "run", committed_layout=True)
    honest = make_bundle(qualify, ev.policy_path, ev.evidence_dir, tmp_path / "honest.qualify-bundle.zip")
    return ev, rewritten(honest, tmp_path / "forged.qualify-bundle.zip",
                         keyring_edit(one_key_both_roles(role_of_kept_key)))


@pytest.mark.parametrize("role", ["platform", "aggregate"])
def test_a_bundle_keyring_cannot_give_one_key_both_roles(tmp_path: Path, qualify: Any, role: str) -> None:
    ev, forged = _one_key_bundle(tmp_path, qualify, role)
    done, report = _audit_json(qualify, ev.policy_path, forged, tmp_path)
    assert done.status == 1
    reason = report["runs"][0]["decision"]["reasons"][0]
    assert reason["code"] == Code.BUNDLE_UNANCHORED.value
    assert "which the auditor's keyring does not" in reason["message"]


def test_a_bundle_keyring_cannot_rename_the_auditors_key(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path / "run", committed_layout=True)
    bundle = _bundle(qualify, ev, tmp_path / "honest.qualify-bundle.zip")
    renamed = rewritten(bundle, tmp_path / "renamed.qualify-bundle.zip",
                        keyring_edit(lambda ring: ring["keys"][0].update(name="release-manager")))
    done, report = _audit_json(qualify, ev.policy_path, renamed, tmp_path)
    assert done.status == 1
    assert report["runs"][0]["decision"]["reasons"][0]["code"] == Code.BUNDLE_UNANCHORED.value
    assert "names key" in report["runs"][0]["decision"]["reasons"][0]["message"]


def test_a_run_signed_with_one_key_under_a_keyring_of_its_own_is_unanchored(tmp_path: Path, qualify: Any) -> None:
    """The attack itself: one key signs every statement, and the bundle's keyring gives it both roles."""
    ev = make_evidence(tmp_path / "run", committed_layout=True)
    honest_ring = ev.keys.keyring.read_bytes()
    platform = next(k for k in json.loads(honest_ring)["keys"] if "platform" in k["roles"])
    ev.keys.keyring.unlink()
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from desktop_qualify.qualify_policy import host_platform
    from support.evidence_factory import PlatformSpec

    public = Ed25519PublicKey.from_public_bytes(base64.b64decode(platform["public_key"]))
    add_to_keyring(ev.keys.keyring, platform["name"], public, ["aggregate", "platform"])
    shutil.rmtree(ev.evidence_dir)
    ev.evidence_dir.mkdir()
    forged = dataclasses.replace(ev, platforms=[], aggregate_path=None)
    forged.write_platform(PlatformSpec(host_platform()))
    forged.write_aggregate(key="platform")
    # Under the keyring it brings, the forgery qualifies: that is what the bundle would carry.
    verify = qualify(["verify", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                      *[a for p in forged.artifact_paths for a in ("--artifact", str(p))]])
    assert verify.status == 0, verify.text
    bundle = _bundle(qualify, forged, tmp_path / "forged.qualify-bundle.zip")
    # The auditor's keyring is the honest one.
    ev.keys.keyring.write_bytes(honest_ring)
    done, report = _audit_json(qualify, ev.policy_path, bundle, tmp_path)
    assert done.status == 1, done.text
    reason = report["runs"][0]["decision"]["reasons"][0]
    assert reason["code"] == Code.BUNDLE_UNANCHORED.value
    assert "the role aggregate, which the auditor's keyring does not" in reason["message"]
