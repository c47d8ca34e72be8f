"""The previous release an update journey starts from: audited as `qualify audit --bundle` would, first.

Local mode names the bundle and artifact by path; GitHub mode reads them from the repository's newest
published release, here through PyGithub against the loopback GitHub emulator. The audit itself is the
consumer's, run as its own process; what does not audit, or an artifact that is not the audited bytes,
is refused with QE_PREVIOUS_RELEASE_UNQUALIFIED. In GitHub mode the release must also be vouched for as
the last release the gate passed, for an ancestor of the candidate (its tag, GitHub's compare, the release
before it, the gate's signed summaries), else QE_PREVIOUS_RELEASE_NOT_VOUCHED.
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
from support.github_emulator import DEFAULT_TOKEN, Asset, Fault, GitHubEmulator, Release
from support.release_summaries import gate_summaries

# The commit this job qualifies (GITHUB_SHA), one before the previous release's, one on another line.
CANDIDATE = "c" * 40
OLDER = "a" * 40
ASIDE = "d" * 40
NEWER = "e" * 40


@pytest.fixture
def emulator() -> Iterator[GitHubEmulator]:
    server = GitHubEmulator().start()
    yield server
    server.stop()


def _summaries(tmp_path: Path, qualify: Any, ev: Evidence, *, artifact: Path | None = None) -> bytes:
    """What release.yml attaches (``gate_summaries``), in a file of its own for each call."""
    out = tmp_path / f"summaries-{len(list(tmp_path.glob('summaries-*')))}.intoto.jsonl"
    return gate_summaries(qualify, ev, out, artifact=artifact)


def _released(tmp_path: Path, qualify: Any, *, summaries: bool = False) -> tuple[Evidence, Path]:
    ev = make_evidence(tmp_path / "previous", committed_layout=True)
    if summaries:
        _summaries(tmp_path, qualify, ev)
    bundle = tmp_path / "previous.qualify-bundle.zip"
    done = qualify(["bundle", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir), "--out",
                    str(bundle)])
    assert done.status == 0, done.text
    return ev, bundle


def _client(emulator: GitHubEmulator) -> GitHubClient:
    return GitHubClient.from_env({"GITHUB_API_URL": emulator.api_url, "GITHUB_TOKEN": DEFAULT_TOKEN})


def _publish(emulator: GitHubEmulator, releases: list[Release]) -> None:
    emulator.repo(REPOSITORY).releases = releases


def _assets(ev: Evidence, bundle: Path, *, artifact: bytes | None = None,
            summaries: bytes | None = None) -> list[Asset]:
    path = ev.artifact_paths[0]
    assets = [Asset(101, path.name, path.read_bytes() if artifact is None else artifact),
              Asset(102, bundle.name, bundle.read_bytes())]
    if summaries is not None:
        assets.append(Asset(103, "verification-summary.intoto.jsonl", summaries))
    return assets


def _from_release(ev: Evidence, emulator: GitHubEmulator, folder: Path) -> Any:
    with _client(emulator) as client:
        return previous_from_release(ev.policy, ev.policy, client, host_platform(), folder, candidate_sha=CANDIDATE)


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


def _vouched(tmp_path: Path, qualify: Any) -> tuple[Evidence, list[Asset]]:
    """A release the gate passed: its bundle, its artifact and the gate's summaries of it."""
    ev, bundle = _released(tmp_path, qualify, summaries=True)
    return ev, _assets(ev, bundle, summaries=(tmp_path / "summaries-0.intoto.jsonl").read_bytes())


def _graph(emulator: GitHubEmulator, ev: Evidence) -> None:
    """main: OLDER, then the previous release's commit, then the candidate; v1.0.0 at OLDER, v1.1.0 at ev.sha."""
    repo = emulator.repo(REPOSITORY)
    repo.history(OLDER, ev.sha, CANDIDATE)
    repo.tags.update({"v1.0.0": OLDER, "v1.1.0": ev.sha})


def test_github_mode_takes_the_last_release_the_gate_passed(tmp_path: Path, qualify: Any,
                                                             emulator: GitHubEmulator) -> None:
    ev, assets = _vouched(tmp_path, qualify)
    _graph(emulator, ev)
    # Listed in no particular order: the newest creation time decides; a draft and a pre-release, though
    # newer, are passed over; the release before it (v1.0.0) is of an ancestor of its commit.
    _publish(emulator, [Release(2, "v1.0.0", [Asset(201, "old.qualify-bundle.zip", b"not read")]),
                        Release(5, "v2.0.0-draft", [], draft=True), Release(4, "v2.0.0-rc1", [], prerelease=True),
                        Release(3, "v1.1.0", assets)])
    audited = _from_release(ev, emulator, tmp_path / "downloads")
    assert audited.facts.audit_decision == "QUALIFIED"
    assert audited.facts.sha == ev.sha
    assert audited.artifact.read_bytes() == ev.artifact_paths[0].read_bytes()
    compared = {r.path.rsplit("/compare/", 1)[1] for r in emulator.calls(r"/compare/")}
    assert compared == {f"{ev.sha}...{CANDIDATE}", f"{OLDER}...{ev.sha}"}


def test_the_candidate_may_be_the_released_commit(tmp_path: Path, qualify: Any, emulator: GitHubEmulator) -> None:
    """Re-qualifying the released commit itself (GitHub's compare: identical) starts from that release."""
    ev, assets = _vouched(tmp_path, qualify)
    emulator.repo(REPOSITORY).history(ev.sha)
    emulator.repo(REPOSITORY).tags["v1.1.0"] = ev.sha
    _publish(emulator, [Release(3, "v1.1.0", assets)])
    with _client(emulator) as client:
        audited = previous_from_release(ev.policy, ev.policy, client, host_platform(), tmp_path / "dl",
                                        candidate_sha=ev.sha)
    assert audited.facts.sha == ev.sha


def _not_vouched(call: Any) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        call()
    assert caught.value.code == Code.PREVIOUS_RELEASE_NOT_VOUCHED, (caught.value.code, caught.value.message)
    assert caught.value.exit_status == 1
    return caught.value


def _republished_older(emulator: GitHubEmulator, ev: Evidence, assets: list[Asset]) -> None:
    # v1.2.0 (NEWER, created first) was the last release the gate passed; v1.1.0 (ev.sha, an ancestor of
    # NEWER) was published again after it: newer creation, older commit.
    repo = emulator.repo(REPOSITORY)
    repo.history(OLDER, ev.sha, NEWER, CANDIDATE)
    repo.tags.update({"v1.1.0": ev.sha, "v1.2.0": NEWER})
    _publish(emulator, [Release(7, "v1.1.0", assets),
                        Release(6, "v1.2.0", [Asset(201, "v12.qualify-bundle.zip", b"not read")])])


def _diverged(emulator: GitHubEmulator, ev: Evidence, assets: list[Asset]) -> None:
    # The release's commit is on a line of its own: not an ancestor of the candidate.
    repo = emulator.repo(REPOSITORY)
    repo.commits.update({OLDER: (), ev.sha: (OLDER,), ASIDE: (OLDER,), CANDIDATE: (ASIDE,)})
    repo.tags["v1.1.0"] = ev.sha
    _publish(emulator, [Release(3, "v1.1.0", assets)])


def _ahead_of_candidate(emulator: GitHubEmulator, ev: Evidence, assets: list[Asset]) -> None:
    # The release is of a commit newer than the candidate (the candidate is behind it).
    repo = emulator.repo(REPOSITORY)
    repo.history(OLDER, CANDIDATE, ev.sha)
    repo.tags["v1.1.0"] = ev.sha
    _publish(emulator, [Release(3, "v1.1.0", assets)])


def _unknown_commit(emulator: GitHubEmulator, ev: Evidence, assets: list[Asset]) -> None:
    # GitHub does not know the release's commit (compare answers 404).
    repo = emulator.repo(REPOSITORY)
    repo.history(OLDER, CANDIDATE)
    repo.tags["v1.1.0"] = ev.sha
    _publish(emulator, [Release(3, "v1.1.0", assets)])


def _tag_moved(emulator: GitHubEmulator, ev: Evidence, assets: list[Asset]) -> None:
    # The tag was moved after the gate: it names another commit than the bundle qualified.
    _graph(emulator, ev)
    emulator.repo(REPOSITORY).tags["v1.1.0"] = OLDER
    _publish(emulator, [Release(3, "v1.1.0", assets)])


def _tag_deleted(emulator: GitHubEmulator, ev: Evidence, assets: list[Asset]) -> None:
    _graph(emulator, ev)
    del emulator.repo(REPOSITORY).tags["v1.1.0"]
    _publish(emulator, [Release(3, "v1.1.0", assets)])


def _published_by_hand(emulator: GitHubEmulator, ev: Evidence, assets: list[Asset]) -> None:
    # Bundle and artifact, but no gate summaries: never through the release gate. The newest release is
    # refused, not passed over for an older one (which would test an older upgrade path).
    _graph(emulator, ev)
    _publish(emulator, [Release(3, "v1.1.0", assets[:2])])


def _two_summaries(emulator: GitHubEmulator, ev: Evidence, assets: list[Asset]) -> None:
    _graph(emulator, ev)
    _publish(emulator, [Release(3, "v1.1.0", [*assets, Asset(104, "more.intoto.jsonl", assets[2].body)])])


def _summaries_not_signed(emulator: GitHubEmulator, ev: Evidence, assets: list[Asset]) -> None:
    _graph(emulator, ev)
    _publish(emulator, [Release(3, "v1.1.0", [*assets[:2], Asset(103, "verification-summary.intoto.jsonl",
                                                                   b'{"mediaType": "not a bundle"}\n')])])


# row -> (how GitHub holds the releases, what the refusal says)
HOSTILE_RELEASES = {
    "re-published-older-release": (_republished_older, "re-published is not the last release the gate passed"),
    "commit-not-an-ancestor": (_diverged, "compare: diverged"),
    "commit-newer-than-the-candidate": (_ahead_of_candidate, "compare: behind"),
    "commit-unknown-to-github": (_unknown_commit, "compare: unknown"),
    "tag-moved-after-the-gate": (_tag_moved, "the tag names commit"),
    "tag-deleted": (_tag_deleted, "tag does not exist"),
    "no-gate-summaries": (_published_by_hand, "0 gate summaries assets"),
    "two-gate-summaries": (_two_summaries, "2 gate summaries assets"),
    "summaries-not-signed": (_summaries_not_signed, "QE_VSA_"),
}


@pytest.mark.parametrize("row", sorted(HOSTILE_RELEASES))
def test_github_mode_refuses_a_release_the_gate_does_not_vouch_for(row: str, tmp_path: Path, qualify: Any,
                                                                   emulator: GitHubEmulator) -> None:
    publish, said = HOSTILE_RELEASES[row]
    ev, assets = _vouched(tmp_path, qualify)
    publish(emulator, ev, assets)
    error = _not_vouched(lambda: _from_release(ev, emulator, tmp_path / "dl"))
    assert said in error.message, error.message


def test_summaries_of_other_bytes_do_not_vouch(tmp_path: Path, qualify: Any, emulator: GitHubEmulator) -> None:
    """The gate's summaries must PASS the audited artifact itself: a summary of other bytes vouches for nothing."""
    ev, bundle = _released(tmp_path, qualify, summaries=True)
    spoilt = tmp_path / "spoilt" / ev.artifact_paths[0].name
    spoilt.parent.mkdir()
    spoilt.write_bytes(ev.artifact_paths[0].read_bytes() + b"\0")
    other = _summaries(tmp_path, qualify, ev, artifact=spoilt)
    _graph(emulator, ev)
    _publish(emulator, [Release(3, "v1.1.0", _assets(ev, bundle, summaries=other))])
    error = _not_vouched(lambda: _from_release(ev, emulator, tmp_path / "dl"))
    assert "QE_VSA_SUBJECT" in error.message


def test_a_candidate_that_is_not_a_commit_is_an_environment_error(tmp_path: Path, emulator: GitHubEmulator) -> None:
    ev = make_evidence(tmp_path)
    with _client(emulator) as client, pytest.raises(QualificationError) as caught:
        previous_from_release(ev.policy, ev.policy, client, host_platform(), tmp_path / "dl", candidate_sha="")
    assert caught.value.code == Code.ENVIRONMENT
    assert not emulator.requests


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
    _refused(lambda: _from_release(ev, emulator, tmp_path / "dl"))


def test_the_update_policy_needs_state_verbs(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path)
    with ev.policy_path.open("a", encoding="utf-8") as fh:
        fh.write('\n[update]\ndowngrade = "allow"\n')
    with pytest.raises(QualificationError) as caught:
        load_policy(ev.policy_path)
    assert caught.value.code == Code.POLICY_INVALID
    assert "[app.state]" in caught.value.message


def test_the_client_reads_githubs_compare_status(emulator: GitHubEmulator) -> None:
    """`GET /compare/{base}...{head}` through PyGithub: four statuses, a malformed one, commit ids checked first."""
    repo = emulator.repo(REPOSITORY)
    repo.commits.update({OLDER: (), NEWER: (OLDER,), ASIDE: (OLDER,)})
    with _client(emulator) as client:
        assert client.compare(REPOSITORY, OLDER, NEWER) == "ahead"
        assert client.compare(REPOSITORY, NEWER, NEWER) == "identical"
        assert client.compare(REPOSITORY, NEWER, OLDER) == "behind"
        assert client.compare(REPOSITORY, NEWER, ASIDE) == "diverged"
        emulator.inject(r"/compare/", Fault(raw_body=b'{"status": "sideways"}'))
        with pytest.raises(QualificationError) as caught:
            client.compare(REPOSITORY, OLDER, NEWER)
        assert caught.value.code == Code.ENVIRONMENT
        before = len(emulator.requests)
        with pytest.raises(QualificationError) as caught:
            client.compare(REPOSITORY, "main", NEWER)
        assert caught.value.code == Code.USAGE
        assert len(emulator.requests) == before
