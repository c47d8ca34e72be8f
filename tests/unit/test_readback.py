"""`qualify readback`: the published release serves exactly what its bundle qualified (loopback GitHub emulator)."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code
from support.bundles import rewritten
from support.evidence_factory import REPOSITORY, Evidence, make_evidence
from support.github_emulator import DEFAULT_TOKEN, Asset, GitHubEmulator, Release
from support.release_summaries import gate_summaries

TAG = "v1.0.0"


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubEmulator]:
    server = GitHubEmulator().start()
    monkeypatch.setenv("GITHUB_API_URL", server.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", DEFAULT_TOKEN)
    yield server
    server.stop()


def _run(tmp_path: Path, qualify: Any, name: str = "run") -> tuple[Evidence, Path]:
    ev = make_evidence(tmp_path / name, committed_layout=True)
    bundle = tmp_path / f"{name}.qualify-bundle.zip"
    assert qualify(["bundle", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                    "--out", str(bundle)]).status == 0
    return ev, bundle


def _publish(emulator: GitHubEmulator, assets: list[tuple[str, bytes]], *, tag_commit: str, draft: bool = False,
             annotated: bool = False) -> None:
    repo = emulator.repo(REPOSITORY)
    repo.releases = [
        Release(1, TAG, [Asset(100 + i, name, body) for i, (name, body) in enumerate(assets)], draft=draft)]
    repo.tags[TAG] = tag_commit
    if annotated:
        repo.annotated.add(TAG)


def _readback(qualify: Any, ev: Evidence) -> Any:
    return qualify(["readback", "--policy", str(ev.policy_path), "--repository", REPOSITORY, "--tag", TAG])


def _good_assets(ev: Evidence, bundle: Path) -> list[tuple[str, bytes]]:
    return [*((p.name, p.read_bytes()) for p in ev.artifact_paths), (bundle.name, bundle.read_bytes())]


def test_a_release_serving_exactly_the_qualified_artifacts_reads_back(tmp_path: Path, qualify: Any,
                                                                      emulator: GitHubEmulator) -> None:
    ev, bundle = _run(tmp_path, qualify)
    _publish(emulator, _good_assets(ev, bundle), tag_commit=ev.sha)
    done = _readback(qualify, ev)
    assert done.status == 0, done.text
    assert "READBACK OK" in done.out
    assert f"{ev.artifact_paths[0].name}: sha256" in done.out


def _swapped(ev: Evidence, bundle: Path) -> list[tuple[str, bytes]]:
    name, body = _good_assets(ev, bundle)[0]
    return [(name, body + b"\0"), (bundle.name, bundle.read_bytes())]


def _missing(ev: Evidence, bundle: Path) -> list[tuple[str, bytes]]:
    return [(bundle.name, bundle.read_bytes())]


def _extra(ev: Evidence, bundle: Path) -> list[tuple[str, bytes]]:
    return [*_good_assets(ev, bundle), ("installer-extra.exe", b"MZ not qualified")]


def _no_bundle(ev: Evidence, bundle: Path) -> list[tuple[str, bytes]]:
    return _good_assets(ev, bundle)[:-1]


def _bundle_altered(ev: Evidence, bundle: Path) -> list[tuple[str, bytes]]:
    members: dict[str, bytes]
    with zipfile.ZipFile(bundle) as archive:
        members = {i.filename: archive.read(i) for i in archive.infolist()}
    members["evidence/platform-linux.dsse.json"] += b" "
    replaced = bundle.with_name("replaced.qualify-bundle.zip")
    with zipfile.ZipFile(replaced, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return [*_good_assets(ev, bundle)[:-1], (bundle.name, replaced.read_bytes())]


CASES = {
    "swapped asset": (_swapped, Code.RELEASE_ASSET_UNQUALIFIED),
    "missing asset": (_missing, Code.RELEASE_ASSET_MISSING),
    "extra asset": (_extra, Code.RELEASE_ASSET_UNQUALIFIED),
    "no bundle": (_no_bundle, Code.RELEASE_ASSET_MISSING),
    "replaced bundle": (_bundle_altered, Code.BUNDLE_MANIFEST_MISMATCH),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_release_that_serves_anything_else_fails_read_back(case: str, tmp_path: Path, qualify: Any,
                                                              emulator: GitHubEmulator) -> None:
    ev, bundle = _run(tmp_path, qualify)
    assets, code = CASES[case]
    _publish(emulator, assets(ev, bundle), tag_commit=ev.sha)
    done = _readback(qualify, ev)
    assert done.status == 1, done.text
    assert code.value in done.out, done.out
    assert "READBACK FAILED" in done.out


def test_a_bundle_of_another_run_with_other_keys_does_not_vouch_for_the_release(
        tmp_path: Path, qualify: Any, emulator: GitHubEmulator) -> None:
    ev, _ = _run(tmp_path, qualify, "mine")
    theirs, their_bundle = _run(tmp_path, qualify, "theirs")
    _publish(emulator, _good_assets(theirs, their_bundle), tag_commit=theirs.sha)
    done = _readback(qualify, ev)
    assert done.status == 1
    assert Code.BUNDLE_UNANCHORED.value in done.out


def test_a_draft_is_not_read_back(tmp_path: Path, qualify: Any, emulator: GitHubEmulator) -> None:
    ev, bundle = _run(tmp_path, qualify)
    _publish(emulator, _good_assets(ev, bundle), tag_commit=ev.sha, draft=True)
    done = _readback(qualify, ev)
    assert done.status == 1
    assert Code.RELEASE_NOT_PUBLISHED.value in done.out


def test_an_unknown_tag_is_an_environment_error_not_a_traceback(tmp_path: Path, qualify: Any,
                                                                emulator: GitHubEmulator) -> None:
    ev, bundle = _run(tmp_path, qualify)
    _publish(emulator, _good_assets(ev, bundle), tag_commit=ev.sha)
    done = qualify(["readback", "--policy", str(ev.policy_path), "--repository", REPOSITORY, "--tag", "v9"])
    assert done.status == 2
    assert "Traceback" not in done.text


@pytest.mark.parametrize("annotated", [False, True])
def test_the_tag_must_still_name_the_qualified_commit(tmp_path: Path, qualify: Any, emulator: GitHubEmulator,
                                                      annotated: bool) -> None:
    ev, bundle = _run(tmp_path, qualify)
    _publish(emulator, _good_assets(ev, bundle), tag_commit=ev.sha, annotated=annotated)
    done = _readback(qualify, ev)
    assert done.status == 0, done.text
    assert f"tag {TAG}: commit {ev.sha} as qualified" in done.out
    # The tag moved after the gate (force-pushed to another commit): what the page serves is no longer that commit.
    _publish(emulator, _good_assets(ev, bundle), tag_commit="1" * 40, annotated=annotated)
    done = _readback(qualify, ev)
    assert done.status == 1, done.text
    assert Code.SHA_MISMATCH.value in done.out
    assert "READBACK FAILED" in done.out


def test_a_release_whose_tag_is_gone_is_an_environment_error(tmp_path: Path, qualify: Any,
                                                             emulator: GitHubEmulator) -> None:
    ev, bundle = _run(tmp_path, qualify)
    _publish(emulator, _good_assets(ev, bundle), tag_commit=ev.sha)
    emulator.repo(REPOSITORY).tags.clear()
    done = _readback(qualify, ev)
    assert done.status == 2, done.text
    assert Code.ENVIRONMENT.value in done.text
    assert "Traceback" not in done.text


# -- read-back accepts only the auditor's own policy, from the policy's own repository; a hostile bundle is a
# rejection (exit 1), never an environment error --------------------------------------------------------------

def test_a_repository_other_than_the_policys_is_a_usage_error(tmp_path: Path, qualify: Any,
                                                               emulator: GitHubEmulator) -> None:
    ev, bundle = _run(tmp_path, qualify)
    _publish(emulator, _good_assets(ev, bundle), tag_commit=ev.sha)
    done = qualify(["readback", "--policy", str(ev.policy_path), "--repository", "someone/else", "--tag", TAG])
    assert done.status == 2
    assert "QE_USAGE: --repository someone/else is not the policy's repository" in done.err


def test_read_back_accepts_only_the_auditors_policy_byte_for_byte(tmp_path: Path, qualify: Any,
                                                                  emulator: GitHubEmulator) -> None:
    ev, bundle = _run(tmp_path, qualify)
    _publish(emulator, _good_assets(ev, bundle), tag_commit=ev.sha)
    # One comment more in the auditor's policy: the same rules, other bytes.
    ev.policy_path.write_bytes(ev.policy_path.read_bytes() + b"\n# reviewed\n")
    done = _readback(qualify, ev)
    assert done.status == 1, done.text
    assert Code.BUNDLE_UNANCHORED.value in done.out
    assert "read-back accepts only the auditor's --policy" in done.out
    assert "READBACK FAILED" in done.out


HOSTILE_BUNDLES = {
    # A file where another member needs a folder: unpacking it would fail on the disk, not on the bundle.
    "member collides with a folder": (lambda m: {**m, "trust": b"a file named like a folder"},
                                      Code.BUNDLE_INVALID),
    "keyring not JSON": (lambda m: {**m, "trust/keyring.json": b"not json"}, Code.BUNDLE_INVALID),
    "policy not TOML": (lambda m: {**m, "policies/local.toml": b"[[["}, Code.BUNDLE_MANIFEST_MISMATCH),
}


@pytest.mark.parametrize("row", sorted(HOSTILE_BUNDLES))
def test_a_hostile_bundle_is_a_read_back_rejection_not_an_environment_error(row: str, tmp_path: Path, qualify: Any,
                                                                             emulator: GitHubEmulator) -> None:
    edit, code = HOSTILE_BUNDLES[row]
    ev, bundle = _run(tmp_path, qualify)
    hostile = rewritten(bundle, tmp_path / "hostile" / bundle.name, edit)
    _publish(emulator, [*((p.name, p.read_bytes()) for p in ev.artifact_paths), (bundle.name, hostile.read_bytes())],
             tag_commit=ev.sha)
    done = _readback(qualify, ev)
    assert done.status == 1, done.text
    assert code.value in done.out
    assert "READBACK FAILED" in done.out


# -- the gate's Verification Summary Attestations published beside the artifacts ---------------------------------


def _summaries(tmp_path: Path, qualify: Any, ev: Evidence, *, artifact: Path | None = None) -> bytes:
    """What release.yml attaches (``gate_summaries``)."""
    return gate_summaries(qualify, ev, tmp_path / "verification-summary.intoto.jsonl", artifact=artifact)


def test_a_release_with_the_gates_summaries_reads_back(tmp_path: Path, qualify: Any,
                                                       emulator: GitHubEmulator) -> None:
    ev = make_evidence(tmp_path / "run", committed_layout=True)
    summaries = _summaries(tmp_path, qualify, ev)
    bundle = tmp_path / "run.qualify-bundle.zip"
    assert qualify(["bundle", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                    "--out", str(bundle)]).status == 0
    _publish(emulator, [*_good_assets(ev, bundle), ("verification-summary.intoto.jsonl", summaries)],
             tag_commit=ev.sha)
    done = _readback(qualify, ev)
    assert done.status == 0, done.text
    assert "verification-summary.intoto.jsonl: 1 verification summaries" in done.out


def test_a_failed_summary_published_beside_the_artifacts_is_refused(tmp_path: Path, qualify: Any,
                                                                    emulator: GitHubEmulator) -> None:
    ev = make_evidence(tmp_path / "run", committed_layout=True)
    spoilt = tmp_path / ev.artifact_paths[0].name
    spoilt.write_bytes(ev.artifact_paths[0].read_bytes() + b"\0")
    summaries = _summaries(tmp_path, qualify, ev, artifact=spoilt)
    bundle = tmp_path / "run.qualify-bundle.zip"
    assert qualify(["bundle", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                    "--out", str(bundle)]).status == 0
    _publish(emulator, [*_good_assets(ev, bundle), ("verification-summary.intoto.jsonl", summaries)],
             tag_commit=ev.sha)
    done = _readback(qualify, ev)
    assert done.status == 1
    # The FAILED summary names bytes the bundle never qualified: refused before its result is even read.
    assert "QE_VSA_SUBJECT" in done.out
    assert "READBACK FAILED" in done.out
