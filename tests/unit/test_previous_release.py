"""The previous release an update journey starts from: audited as `qualify audit --bundle` would, first.

Local mode names the bundle and artifact by path; GitHub mode reads them from the repository's newest
published release, here through PyGithub against the loopback GitHub emulator. The audit itself is the
consumer's, run as its own process; what does not audit, or an artifact that is not the audited bytes,
is refused with QE_PREVIOUS_RELEASE_UNQUALIFIED.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.previous._previous import PreviousInput, audit_command, audit_previous
from desktop_qualify.producer.previous._previous_github import previous_from_release
from desktop_qualify.qualify_github import GitHubClient
from desktop_qualify.qualify_policy import host_platform, load_policy
from support.bundles import rewritten
from support.evidence_factory import REPOSITORY, Evidence, make_evidence
from support.github_emulator import DEFAULT_TOKEN, Asset, GitHubEmulator, Release


@pytest.fixture
def emulator() -> Iterator[GitHubEmulator]:
    server = GitHubEmulator().start()
    yield server
    server.stop()


def _released(tmp_path: Path, qualify: Any) -> tuple[Evidence, Path]:
    ev = make_evidence(tmp_path / "previous", committed_layout=True)
    bundle = tmp_path / "previous.qualify-bundle.zip"
    done = qualify(["bundle", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir), "--out",
                    str(bundle)])
    assert done.status == 0, done.text
    return ev, bundle


def _client(emulator: GitHubEmulator) -> GitHubClient:
    return GitHubClient.from_env({"GITHUB_API_URL": emulator.api_url, "GITHUB_TOKEN": DEFAULT_TOKEN})


def _publish(emulator: GitHubEmulator, releases: list[Release]) -> None:
    emulator.repo(REPOSITORY).releases = releases


def _assets(ev: Evidence, bundle: Path, *, artifact: bytes | None = None) -> list[Asset]:
    path = ev.artifact_paths[0]
    return [Asset(101, path.name, path.read_bytes() if artifact is None else artifact),
            Asset(102, bundle.name, bundle.read_bytes())]


def test_the_audit_is_the_auditors_own_command(tmp_path: Path, qualify: Any) -> None:
    ev, bundle = _released(tmp_path, qualify)
    argv = audit_command(ev.policy, bundle, tmp_path / "report.json")
    assert argv[1:5] == ["-m", "desktop_qualify.consumer", "audit", "--policy"]
    assert argv[-4:] == ["--bundle", str(bundle), "--json", str(tmp_path / "report.json")]


def test_a_previous_release_given_by_path_is_audited(tmp_path: Path, qualify: Any) -> None:
    ev, bundle = _released(tmp_path, qualify)
    audited = audit_previous(ev.policy, ev.policy, PreviousInput(bundle, ev.artifact_paths[0]), host_platform())
    assert audited.facts.audit_decision == "QUALIFIED"
    assert audited.facts.sha == ev.sha
    assert audited.facts.artifact.name == ev.artifact_paths[0].name
    assert audited.facts.policy_sha256 == ev.policy.sha256


def _refused(call: Any) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        call()
    assert caught.value.code == Code.PREVIOUS_RELEASE_UNQUALIFIED, caught.value.message
    return caught.value


def test_a_previous_artifact_that_is_not_the_audited_one_is_refused(tmp_path: Path, qualify: Any) -> None:
    ev, bundle = _released(tmp_path, qualify)
    other = tmp_path / "other" / ev.artifact_paths[0].name
    other.parent.mkdir()
    other.write_bytes(ev.artifact_paths[0].read_bytes() + b"\0")
    error = _refused(lambda: audit_previous(ev.policy, ev.policy, PreviousInput(bundle, other), host_platform()))
    assert "is not the audited" in error.message


def test_a_bundle_that_does_not_audit_is_refused(tmp_path: Path, qualify: Any) -> None:
    ev, bundle = _released(tmp_path, qualify)

    def spoil(members: dict[str, bytes]) -> dict[str, bytes]:
        name = next(k for k in members if k.endswith(".dsse.json") and "platform-" in k)
        envelope = json.loads(members[name])
        envelope["signatures"][0]["sig"] = envelope["signatures"][0]["sig"][::-1]
        members[name] = json.dumps(envelope).encode()
        return members

    spoiled = rewritten(bundle, tmp_path / "spoiled" / bundle.name, spoil)
    _refused(lambda: audit_previous(ev.policy, ev.policy, PreviousInput(spoiled, ev.artifact_paths[0]),
                                    host_platform()))


def test_a_bundle_under_another_policy_is_refused(tmp_path: Path, qualify: Any) -> None:
    ev, bundle = _released(tmp_path, qualify)
    # The auditor's anchor is another policy (its keyring trusts other keys): the bundle is not anchored.
    other = make_evidence(tmp_path / "other", committed_layout=True)
    _refused(lambda: audit_previous(ev.policy, other.policy, PreviousInput(bundle, ev.artifact_paths[0]),
                                    host_platform()))


def test_github_mode_reads_the_newest_published_release(tmp_path: Path, qualify: Any,
                                                        emulator: GitHubEmulator) -> None:
    ev, bundle = _released(tmp_path, qualify)
    # GitHub lists releases newest first: a draft and a pre-release before the published one are passed over.
    _publish(emulator, [Release(3, "v2.0.0-draft", [], draft=True), Release(2, "v2.0.0-rc1", [], prerelease=True),
                        Release(1, "v1.0.0", _assets(ev, bundle))])
    with _client(emulator) as client:
        audited = previous_from_release(ev.policy, ev.policy, client, host_platform(), tmp_path / "downloads")
    assert audited.facts.audit_decision == "QUALIFIED"
    assert audited.artifact.read_bytes() == ev.artifact_paths[0].read_bytes()


@pytest.mark.parametrize("case", ["no-published-release", "two-bundles", "no-bundle", "artifact-swapped",
                                  "artifact-not-published"])
def test_github_mode_refuses_a_release_that_is_not_the_qualified_one(case: str, tmp_path: Path, qualify: Any,
                                                                     emulator: GitHubEmulator) -> None:
    ev, bundle = _released(tmp_path, qualify)
    assets = _assets(ev, bundle)
    releases = {
        "no-published-release": [Release(1, "v1.0.0", assets, draft=True)],
        "two-bundles": [Release(1, "v1.0.0", [*assets, Asset(103, "again.qualify-bundle.zip", bundle.read_bytes())])],
        "no-bundle": [Release(1, "v1.0.0", assets[:1])],
        "artifact-swapped": [Release(1, "v1.0.0", _assets(ev, bundle, artifact=b"not the qualified bytes"))],
        "artifact-not-published": [Release(1, "v1.0.0", assets[1:])],
    }[case]
    _publish(emulator, releases)
    with _client(emulator) as client:
        _refused(lambda: previous_from_release(ev.policy, ev.policy, client, host_platform(), tmp_path / "dl"))


def test_the_update_policy_needs_state_verbs(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path)
    with ev.policy_path.open("a", encoding="utf-8") as fh:
        fh.write('\n[update]\ndowngrade = "allow"\n')
    with pytest.raises(QualificationError) as caught:
        load_policy(ev.policy_path)
    assert caught.value.code == Code.POLICY_INVALID
    assert "[app.state]" in caught.value.message
