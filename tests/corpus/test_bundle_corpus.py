"""The hostile-bundle corpus: one row per attack on what an auditor (`qualify audit --bundle`) or the read-back
(`qualify readback`) is handed, each refused with its stable code and exit status, with no traceback.

Every row starts from a real, QUALIFIED local run and its bundle (the baseline row proves it audits and reads back
clean) and changes one thing, the way someone holding one key, an old policy version, a folder above the
auditor's copy or the release page would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code
from desktop_qualify.qualify_policy import host_platform
from support.bundles import keyring_edit, make_bundle, one_key_both_roles, rewritten
from support.evidence_factory import REPOSITORY, Evidence, PlatformSpec, make_evidence
from support.github_emulator import DEFAULT_TOKEN, Asset, GitHubEmulator, Release
from support.rebuild_attestation import OTHER, attestation

from desktop_qualify import qualify_cli

TAG = "v1.0.0"


@dataclass
class Site:
    """One row's world: the honest run and bundle, the auditor's policy, and (for read-back) the release page."""

    tmp: Path
    ev: Evidence
    bundle: Path
    emulator: GitHubEmulator

    def audit(self, bundle: Path, policy: Path | None = None, *extra: str) -> list[str]:
        return ["audit", "--policy", str(policy or self.ev.policy_path), "--bundle", str(bundle), *extra]

    def readback(self, bundle: Path, repository: str = REPOSITORY) -> list[str]:
        repo = self.emulator.repo(REPOSITORY)
        assets = [Asset(100 + i, p.name, p.read_bytes()) for i, p in enumerate(self.ev.artifact_paths)]
        repo.releases = [Release(1, TAG, [*assets, Asset(99, self.bundle.name, bundle.read_bytes())])]
        repo.tags[TAG] = self.ev.sha
        return ["readback", "--policy", str(self.ev.policy_path), "--repository", repository, "--tag", TAG]


Attack = Callable[[Site], list[str]]


@dataclass(frozen=True)
class BundleRow:
    id: str
    attack: Attack
    code: Code | None  # None: the untouched baseline, which must pass
    status: int


def _forged(edit: Callable[[dict[str, bytes]], dict[str, bytes]]) -> Callable[[Site], Path]:
    return lambda site: rewritten(site.bundle, site.tmp / "forged" / site.bundle.name, edit)


def _audit(make: Callable[[Site], Path]) -> Attack:
    return lambda site: site.audit(make(site))


def _readback(make: Callable[[Site], Path]) -> Attack:
    return lambda site: site.readback(make(site))


def _git(root: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "PATH": os.environ.get("PATH", ""), "HOME": str(root)}
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def _other_policy_version(site: Site) -> list[str]:
    """The auditor's policy is a later committed version; the bundle's was never committed at the run's commit."""
    policy = site.ev.policy_path
    _git(site.ev.root, "init", "-q", "-b", "main")
    _git(site.ev.root, "add", "policies/local.toml")
    _git(site.ev.root, "commit", "-q", "-m", "policy")
    policy.write_bytes(policy.read_bytes() + b"\n# later\n")
    _git(site.ev.root, "commit", "-q", "-am", "later")
    return site.audit(site.bundle)


def _planted_repository(site: Site) -> list[str]:
    """The auditor's copy of a later policy, in a folder below a repository someone planted."""
    planted = site.tmp / "planted"
    shutil.copytree(site.ev.root / "policies", planted / "copy" / "policies")
    shutil.copytree(site.ev.root / "trust", planted / "copy" / "trust")
    policy = planted / "copy" / "policies" / "local.toml"
    policy.write_bytes(policy.read_bytes() + b"\n# later\n")
    _git(planted, "init", "-q", "-b", "main")
    _git(planted, "add", "-A")
    _git(planted, "commit", "-q", "-m", "planted, policy and all")
    return site.audit(site.bundle, policy)


def _auditors_policy_edited_not_committed(site: Site) -> list[str]:
    """The run is of a real commit that holds its policy; the auditor's copy of that file, in the same work tree,
    is edited and not committed: without --root, a tracked file that changed has no history to anchor with."""
    ev = site.ev
    _git(ev.root, "init", "-q", "-b", "main")
    _git(ev.root, "add", "policies/local.toml")
    _git(ev.root, "commit", "-q", "-m", "policy")
    ev.sha, ev.platforms = _git(ev.root, "rev-parse", "HEAD"), []
    ev.write_platform(PlatformSpec(host_platform()))
    ev.write_aggregate()
    bundle = site.tmp / "at-commit.qualify-bundle.zip"
    assert qualify_cli.main(["bundle", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                             "--out", str(bundle)]) == 0
    ev.policy_path.write_bytes(ev.policy_path.read_bytes() + b"\n# edited, not committed\n")
    return site.audit(bundle)


def _fifo_bundle(site: Site) -> list[str]:
    fifo = site.tmp / "fifo.qualify-bundle.zip"
    os.mkfifo(fifo)
    return site.audit(fifo)


def _readback_other_policy_bytes(site: Site) -> list[str]:
    site.ev.policy_path.write_bytes(site.ev.policy_path.read_bytes() + b"\n# reviewed\n")
    return site.readback(site.bundle)


def _rebuild_claiming(**claim: Any) -> Attack:
    """The untouched bundle audited beside a rebuild attestation, signed by its rebuilder's own key, whose claim
    the bundle's own build record contradicts: the audit re-derives the match, shows the contradiction with its
    code, and its decision (exit 0) is unchanged."""
    def attack(site: Site) -> list[str]:
        made = attestation(site.ev, site.tmp / "rebuild.dsse.json", **claim)
        return site.audit(site.bundle, None, "--rebuild", str(made))
    return attack


BUNDLE_CORPUS = [
    BundleRow("bundle-untouched-audits", _audit(lambda s: s.bundle), None, 0),
    BundleRow("readback-untouched-reads-back", _readback(lambda s: s.bundle), None, 0),
    # -- the bundle's keyring cannot decide what its keys may sign
    BundleRow("bundle-keyring-platform-key-given-both-roles",
              _audit(_forged(keyring_edit(one_key_both_roles("platform")))), Code.BUNDLE_UNANCHORED, 1),
    BundleRow("bundle-keyring-aggregate-key-given-both-roles",
              _audit(_forged(keyring_edit(one_key_both_roles("aggregate")))), Code.BUNDLE_UNANCHORED, 1),
    BundleRow("bundle-keyring-key-renamed",
              _audit(_forged(keyring_edit(lambda ring: ring["keys"][0].update(name="release-manager")))),
              Code.BUNDLE_UNANCHORED, 1),
    BundleRow("readback-keyring-key-given-both-roles",
              _readback(_forged(keyring_edit(one_key_both_roles("platform")))), Code.BUNDLE_UNANCHORED, 1),
    # -- a policy anchors only as of the run's own commit
    BundleRow("bundle-policy-not-at-the-runs-commit", _other_policy_version, Code.BUNDLE_UNANCHORED, 1),
    BundleRow("bundle-policy-copy-under-a-planted-repository", _planted_repository, Code.BUNDLE_UNANCHORED, 1),
    BundleRow("bundle-auditors-tracked-policy-edited-not-committed", _auditors_policy_edited_not_committed,
              Code.BUNDLE_UNANCHORED, 1),
    BundleRow("readback-policy-not-byte-identical", _readback_other_policy_bytes, Code.BUNDLE_UNANCHORED, 1),
    BundleRow("readback-other-repository", lambda s: s.readback(s.bundle, "someone/else"), Code.USAGE, 2),
    # -- a hostile bundle is the bundle's fault: a rejection, never an environment error
    BundleRow("bundle-member-collides-with-a-folder", _audit(_forged(lambda m: {**m, "trust": b"x"})),
              Code.BUNDLE_INVALID, 1),
    BundleRow("readback-member-collides-with-a-folder", _readback(_forged(lambda m: {**m, "trust": b"x"})),
              Code.BUNDLE_INVALID, 1),
    BundleRow("readback-keyring-not-json",
              _readback(_forged(lambda m: {**m, "trust/keyring.json": b"not json"})), Code.BUNDLE_INVALID, 1),
    BundleRow("bundle-is-a-fifo", _fifo_bundle, Code.INPUT_NOT_REGULAR, 1),
    # qualify audit --rebuild: the attestation's verdict is re-derived from the run's build record, never taken.
    BundleRow("rebuild-claims-a-match-for-other-bytes", _rebuild_claiming(rebuilt=OTHER, expected=OTHER),
              Code.REBUILD_CLAIM_CONTRADICTED, 0),
    BundleRow("rebuild-expected-digest-not-the-runs", _rebuild_claiming(expected=OTHER),
              Code.REBUILD_CLAIM_CONTRADICTED, 0),
    BundleRow("rebuild-claims-a-difference-for-the-same-bytes", _rebuild_claiming(matches=False),
              Code.REBUILD_CLAIM_CONTRADICTED, 0),
]


@pytest.fixture
def site(tmp_path: Path, qualify: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Site]:
    ev = make_evidence(tmp_path / "run", committed_layout=True)
    bundle = make_bundle(qualify, ev.policy_path, ev.evidence_dir, tmp_path / "run.qualify-bundle.zip")
    emulator = GitHubEmulator().start()
    monkeypatch.setenv("GITHUB_API_URL", emulator.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", DEFAULT_TOKEN)
    try:
        yield Site(tmp_path, ev, bundle, emulator)
    finally:
        emulator.stop()


def test_row_ids_are_unique() -> None:
    ids = [row.id for row in BUNDLE_CORPUS]
    assert len(ids) == len(set(ids))


@pytest.mark.skipif(os.name != "posix" or shutil.which("git") is None, reason="FIFOs and git histories")
@pytest.mark.parametrize("row", BUNDLE_CORPUS, ids=lambda row: row.id)
def test_hostile_bundle(row: BundleRow, site: Site, qualify: Any) -> None:
    done = qualify(row.attack(site))
    assert "Traceback" not in done.text
    assert "QE_INTERNAL" not in done.text
    assert done.status == row.status, done.text
    if row.code is None:
        assert "QUALIFIED" in done.out or "READBACK OK" in done.out, done.text
    else:
        assert row.code.value in done.text, done.text
