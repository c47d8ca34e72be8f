"""consumer/_readback.py, function by function, against a release served by a stand-in GitHub client: the exact
reasons and lines `qualify readback` writes, the code of a release with two bundles, a bundle that does not qualify,
a bundle that qualified no commit, and `--root`. Written for the mutants of the module that survived the
emulator-backed rows of tests/unit/test_readback.py (docs/mutation.md).
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from desktop_qualify.consumer import _readback
from desktop_qualify.consumer._readback import (
    Readback,
    _check_assets,
    _check_summaries,
    _check_tag,
    _qualified,
    check_repository,
    readback,
    render_readback,
    run_readback,
)
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_github import AssetInfo, Downloaded, ReleaseInfo
from desktop_qualify.qualify_policy import Policy, load_policy
from support.evidence_factory import REPOSITORY, make_evidence

TAG = "v1.0.0"
SHA = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
MOVED = "1" * 40
BUNDLE = "app.qualify-bundle.zip"
SUMMARIES = "verification-summary.intoto.jsonl"


class Client:
    """A release as a GitHub client serves it: its assets' bytes, whether it is a draft, the commit its tag names."""

    def __init__(self, bodies: dict[str, bytes], *, draft: bool = False, commit: str = SHA) -> None:
        self.bodies, self.draft, self.commit = bodies, draft, commit
        self.assets = tuple(AssetInfo(REPOSITORY, 100 + i, name, len(body), None)
                            for i, (name, body) in enumerate(bodies.items()))
        self.downloads: list[Path] = []

    def release_by_tag(self, repository: str, tag: str) -> ReleaseInfo:
        return ReleaseInfo(repository, 1, tag, self.draft, False, self.assets)

    def download_asset(self, asset: AssetInfo, dest: Path, *, max_bytes: int) -> Downloaded:
        body = self.bodies[asset.name]
        assert len(body) <= max_bytes
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(body)
        self.downloads.append(dest)
        return Downloaded(dest, len(body), hashlib.sha256(body).hexdigest())

    def tag_commit(self, repository: str, tag: str) -> str:
        return self.commit


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> Policy:
    ev = make_evidence(tmp_path_factory.mktemp("readback"), committed_layout=True)
    return load_policy(ev.policy_path)


def _reasons(result: Readback) -> list[tuple[Code, str]]:
    return [(r.code, r.message) for r in result.reasons]


def _decision(verdict: str = "QUALIFIED", *, candidate_sha: str | None = SHA,
              rows: tuple[tuple[str | None, str | None], ...] = ()) -> Any:
    return SimpleNamespace(decision=verdict, candidate_sha=candidate_sha, run_id="1234", attempt=2,
                           policy=SimpleNamespace(sha256="9" * 64), reasons=[],
                           rows=[SimpleNamespace(artifact=a, sha256=s) for a, s in rows])


# check_repository

def test_another_repository_is_refused_in_these_words_its_name_cut_at_200_characters(policy: Policy) -> None:
    other = "someone/" + "x" * 250
    with pytest.raises(QualificationError) as caught:
        check_repository(policy, other)
    assert caught.value.code == Code.USAGE
    assert caught.value.message == (f"--repository {other[:200]} is not the policy's repository {REPOSITORY}; "
                                    "read-back checks the releases of the repository the policy qualifies")


# readback: the release as a whole

def test_a_draft_is_refused_in_these_words(policy: Policy) -> None:
    result = readback(policy, REPOSITORY, TAG, Client({BUNDLE: b"zip"}, draft=True))  # type: ignore[arg-type]
    assert _reasons(result) == [(Code.RELEASE_NOT_PUBLISHED, f"{REPOSITORY} {TAG}: the release is still a draft; "
                                 "read-back checks what the public channel serves, after publication")]


def test_a_release_with_two_bundles_is_unqualified_not_missing_one(policy: Policy) -> None:
    client = Client({BUNDLE: b"zip", "other.qualify-bundle.zip": b"zip"})
    result = readback(policy, REPOSITORY, TAG, client)  # type: ignore[arg-type]
    assert _reasons(result) == [(Code.RELEASE_ASSET_UNQUALIFIED, f"{REPOSITORY} {TAG}: 2 qualification bundles "
                                 "(*.qualify-bundle.zip); a release carries exactly one")]
    assert client.downloads == []


def test_a_release_with_no_bundle_is_missing_one(policy: Policy) -> None:
    result = readback(policy, REPOSITORY, TAG, Client({"app.tar.gz": b"app"}))  # type: ignore[arg-type]
    assert _reasons(result) == [(Code.RELEASE_ASSET_MISSING, f"{REPOSITORY} {TAG}: 0 qualification bundles "
                                 "(*.qualify-bundle.zip); a release carries exactly one")]


def test_a_bundle_that_is_not_a_zip_is_refused_from_the_private_read_back_folder(policy: Policy) -> None:
    client = Client({BUNDLE: b"not a zip"})
    result = readback(policy, REPOSITORY, TAG, client)  # type: ignore[arg-type]
    (downloaded,) = client.downloads
    assert downloaded.name == BUNDLE
    assert downloaded.parent.name.startswith("qualify-readback-")
    assert not downloaded.parent.exists()  # removed once read back
    ((code, message),) = _reasons(result)
    assert code == Code.BUNDLE_INVALID
    assert f"bundle {downloaded}: " in message


def test_a_bundle_that_does_not_qualify_is_refused_in_these_words(policy: Policy,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[tuple[Path, Path]] = []

    def audit_bundle(source: Path, anchor: object, workspace: Path) -> Any:
        opened.append((source, workspace))
        return SimpleNamespace(decision=_decision("REJECTED"))

    monkeypatch.setattr(_readback, "audit_bundle", audit_bundle)
    client = Client({BUNDLE: b"zip", "app.tar.gz": b"app"})
    result = readback(policy, REPOSITORY, TAG, client)  # type: ignore[arg-type]
    assert _reasons(result) == [(Code.RELEASE_ASSET_UNQUALIFIED,
                                 f"{REPOSITORY} {TAG}: the release's bundle {BUNDLE} does not qualify")]
    # The bundle is opened in its own folder beside the downloaded bundle, in the read-back's private folder.
    ((source, workspace),) = opened
    assert (source, workspace) == (client.downloads[0], client.downloads[0].parent / "opened")
    assert client.downloads == [source]  # nothing else is downloaded once the bundle does not qualify


# _check_tag

def test_a_moved_tag_is_refused_in_these_words() -> None:
    result = Readback(REPOSITORY, TAG)
    _check_tag(result, _decision(), Client({}, commit=MOVED))  # type: ignore[arg-type]
    assert _reasons(result) == [(Code.SHA_MISMATCH, f"{REPOSITORY} {TAG}: the tag names commit {MOVED[:12]}, the "
                                 f"release's bundle qualified {SHA[:12]}")]


def test_a_bundle_that_qualified_no_commit_is_said_so() -> None:
    result = Readback(REPOSITORY, TAG)
    _check_tag(result, _decision(candidate_sha=None), Client({}, commit=MOVED))  # type: ignore[arg-type]
    assert _reasons(result) == [(Code.SHA_MISMATCH, f"{REPOSITORY} {TAG}: the tag names commit {MOVED[:12]}, the "
                                 "release's bundle qualified no commit")]


# _qualified and _check_assets

def test_only_rows_with_an_artifact_and_its_digest_are_qualified() -> None:
    decision = _decision(rows=(("app.tar.gz", "a" * 64), (None, "b" * 64), ("app.deb", None), ("app.msi", "")))
    assert _qualified(decision) == {"app.tar.gz": "a" * 64}


def test_each_unqualified_or_missing_asset_is_refused_in_these_words(tmp_path: Path) -> None:
    served = {"app.tar.gz": b"other bytes", "extra.exe": b"MZ"}
    qualified = {"app.tar.gz": hashlib.sha256(b"app").hexdigest(), "app.deb": "d" * 64}
    client = Client(served)
    result = Readback(REPOSITORY, TAG)
    _check_assets(result, list(client.assets), qualified, client, tmp_path)  # type: ignore[arg-type]
    got = hashlib.sha256(b"other bytes").hexdigest()
    assert _reasons(result) == [
        (Code.RELEASE_ASSET_UNQUALIFIED, f"app.tar.gz: the release serves SHA-256 {got[:16]}, the bundle qualified "
                                         f"{qualified['app.tar.gz'][:16]}"),
        (Code.RELEASE_ASSET_UNQUALIFIED, "extra.exe: published beside the qualified artifacts, but no statement in "
                                         "the bundle qualified it"),
        (Code.RELEASE_ASSET_MISSING, "app.deb: qualified by the bundle but not published"),
    ]
    assert result.checked == []
    assert not any(path.exists() for path in client.downloads)


def test_a_qualified_asset_is_checked(tmp_path: Path) -> None:
    digest = hashlib.sha256(b"app").hexdigest()
    client = Client({"app.tar.gz": b"app"})
    result = Readback(REPOSITORY, TAG)
    _check_assets(result, list(client.assets), {"app.tar.gz": digest}, client, tmp_path)  # type: ignore[arg-type]
    assert (result.reasons, result.checked) == ([], [f"app.tar.gz: sha256 {digest} as qualified"])


# _check_summaries

def test_summaries_that_do_not_verify_are_refused_under_the_assets_name(tmp_path: Path, policy: Policy) -> None:
    client = Client({SUMMARIES: b"not a signed statement\n"})
    result = Readback(REPOSITORY, TAG)
    _check_summaries(result, client.assets[0], {}, policy, client=client, work=tmp_path)  # type: ignore[arg-type]
    ((_, message),) = _reasons(result)
    assert message.startswith(f"{SUMMARIES} line 1")
    assert str(tmp_path) not in message
    assert not client.downloads[0].exists()


def test_summaries_that_verify_are_checked_in_these_words(tmp_path: Path, policy: Policy,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_readback, "check_release_summaries", lambda data, qualified, policy, verifier, what: 3)
    client = Client({SUMMARIES: b"{}\n"})
    result = Readback(REPOSITORY, TAG)
    _check_summaries(result, client.assets[0], {}, policy, client=client, work=tmp_path)  # type: ignore[arg-type]
    assert (result.reasons, result.checked) == ([], [f"{SUMMARIES}: 3 verification summaries, signed by the "
                                                     "policy's verifier, each PASSED for a qualified artifact"])
    assert not client.downloads[0].exists()


# Readback.refuse and render_readback

def test_a_reason_is_cut_at_4000_characters() -> None:
    result = Readback(REPOSITORY, TAG)
    result.refuse(Code.RELEASE_ASSET_UNQUALIFIED, "x" * 5000)
    assert result.reasons[0].message == "x" * 4000


def test_a_read_back_that_passed_is_rendered_line_by_line() -> None:
    result = Readback(REPOSITORY, TAG, bundle=_decision(), checked=["tag v1.0.0: ok", "app.tar.gz: ok"])
    assert render_readback(result) == (
        f"== read-back of {REPOSITORY} {TAG}\n"
        "ok      tag v1.0.0: ok\n"
        "ok      app.tar.gz: ok\n"
        f"bundle  QUALIFIED: run 1234#2 of {SHA[:12]}, policy {'9' * 16}\n"
        "READBACK OK\n")


def test_a_read_back_that_failed_is_rendered_line_by_line() -> None:
    result = Readback(REPOSITORY, TAG, bundle=_decision("REJECTED", candidate_sha=None))
    result.bundle.reasons = [SimpleNamespace(code=Code.SHA_MISMATCH, message="its own reason")]  # type: ignore[union-attr]
    result.refuse(Code.RELEASE_ASSET_UNQUALIFIED, "mine")
    assert render_readback(result) == (
        f"== read-back of {REPOSITORY} {TAG}\n"
        f"bundle  REJECTED: run 1234#2 of ?, policy {'9' * 16}\n"
        f"  {Code.SHA_MISMATCH.value}: its own reason\n"
        f"{Code.RELEASE_ASSET_UNQUALIFIED.value}: mine\n"
        "READBACK FAILED\n")


# run_readback: --root

def _args(root: Path | None, policy_path: Path) -> argparse.Namespace:
    return argparse.Namespace(root=root, policy=policy_path, repository=REPOSITORY, tag=TAG)


def test_a_missing_root_is_a_usage_error_naming_the_option(tmp_path: Path, policy: Policy,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing"
    assert run_readback(_args(missing, policy.path)) == 2
    assert f"--root {missing}: missing (no such folder)" in capsys.readouterr().err


def test_a_root_that_is_a_file_is_a_usage_error(tmp_path: Path, policy: Policy,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "file"
    file.write_text("not a folder", encoding="utf-8")
    assert run_readback(_args(file, policy.path)) == 2
    assert f"--root {file}: not a folder" in capsys.readouterr().err


def test_the_policy_is_read_with_the_root_given(tmp_path: Path, policy: Policy, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[Policy] = []

    def fake_readback(policy: Policy, repository: str, tag: str, client: object) -> Readback:
        seen.append(policy)
        return Readback(repository, tag)

    monkeypatch.setattr(_readback, "readback", fake_readback)
    assert run_readback(_args(tmp_path, policy.path)) == 1
    assert [p.root for p in seen] == [tmp_path.resolve()]
    assert capsys.readouterr().out.endswith("READBACK FAILED\n")
