"""`qualify rebuild`: the qualified commit rebuilt here, its bytes compared with the qualified artifact's.

The app is a small committed one whose build (the policy's build argv, a real script run by the producer's
real build code) packs its source with the commit's time: rebuilt from the same commit it gives the same bytes.
Evidence naming that commit but carrying an artifact built from source one byte away (what a producer job that
built other source than it claims would sign) is refused, and the member that differs is named.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import BuildReproduction, BuildVariation, Code, QualificationError
from desktop_qualify.qualify_cli._rebuild import compared_digest
from desktop_qualify.qualify_policy import host_platform
from desktop_qualify.qualify_trust import generate_private_key, verify_rebuild_attestation
from desktop_qualify.qualify_trust._keys import keyid_of
from support.checkout import commit_all, git
from support.evidence_factory import Evidence, PlatformSpec, artifact_name, make_evidence
from support.rebuild_app import WHEN, app_checkout, built, rebuild

pytestmark = pytest.mark.skipif(host_platform() != "linux", reason="the small app's build writes a Linux archive")

def _evidence_of(ev: Evidence, sha: str, archive: Path, source_digest: str) -> None:
    """Signed evidence naming ``sha`` whose artifact is ``archive``."""
    for old in ev.artifacts_dir.iterdir():
        old.unlink()
    shutil.copyfile(archive, ev.artifacts_dir / artifact_name("linux", sha))
    ev.sha, ev.platforms = sha, []
    ev.write_platform(PlatformSpec("linux", edit=lambda pred: pred["build"].update(source_digest=source_digest)))
    ev.write_aggregate()


@pytest.fixture
def qualified(tmp_path: Path) -> tuple[Evidence, Path, str]:
    ev = make_evidence(tmp_path, committed_layout=True)
    app = app_checkout(ev)
    sha = commit_all(ev.root, "the app", date=WHEN)
    archive, digest = built(ev, app, sha, tmp_path / "producer-work")
    _evidence_of(ev, sha, archive, digest)
    return ev, app, sha



def test_the_qualified_commit_rebuilds_to_the_qualified_bytes(qualified: tuple[Evidence, Path, str],
                                                               qualify: Any, tmp_path: Path) -> None:
    ev, _, _ = qualified
    result = rebuild(qualify, ev, "--keep", str(tmp_path / "kept"))
    assert result.status == 0, result.text
    assert "REBUILT:" in result.text
    assert [p.name for p in (tmp_path / "kept").iterdir()] == ["skillhost-0.1.0-linux.tar.gz"]


def test_later_commits_do_not_change_what_is_rebuilt(qualified: tuple[Evidence, Path, str], qualify: Any) -> None:
    ev, app, _ = qualified
    (app / "main.py").write_text("print('skill hosT')\n", encoding="utf-8")
    commit_all(ev.root, "a later change")  # the rebuild exports the qualified commit, not the checkout's head
    result = rebuild(qualify, ev)
    assert result.status == 0, result.text


def test_an_artifact_built_from_source_one_byte_away_is_refused_and_the_member_named(
        qualified: tuple[Evidence, Path, str], qualify: Any, tmp_path: Path) -> None:
    ev, app, sha = qualified
    true_digest = ev.platforms[0].predicate.build.source_digest  # type: ignore[union-attr]
    # A one-byte change to the committed source, built by the producer's own code ...
    (app / "skills.txt").write_text("read-notes\nrepo-statuS\n", encoding="utf-8")
    other = commit_all(ev.root, "one byte", date=WHEN)  # the same time: only the byte differs
    archive, _ = built(ev, app, other, tmp_path / "other-work")
    # ... and signed evidence that claims the qualified commit and its source for those bytes.
    git(ev.root, "checkout", "-q", sha)
    _evidence_of(ev, sha, archive, true_digest)
    result = rebuild(qualify, ev)
    assert result.status == 1, result.text
    assert "QE_REBUILD_MISMATCH" in result.text
    assert "first difference: member 1: 'skillhost/skills.txt': content sha256 differs" in result.text, result.text


def test_a_checkout_whose_source_is_not_the_builds_is_refused(qualified: tuple[Evidence, Path, str],
                                                              qualify: Any) -> None:
    ev, _, _ = qualified
    ev.write_platform(PlatformSpec("linux", edit=lambda pred: pred["build"].update(source_digest="f" * 64)))
    ev.write_aggregate()
    result = rebuild(qualify, ev)
    assert result.status == 1, result.text
    assert "QE_SOURCE_DIGEST_MISMATCH" in result.text


def test_evidence_that_does_not_qualify_is_not_rebuilt(qualified: tuple[Evidence, Path, str], qualify: Any) -> None:
    ev, _, _ = qualified
    ev.write_platform(PlatformSpec("linux", edit=lambda pred: pred["install"].update(passed=False)))
    ev.write_aggregate()
    result = rebuild(qualify, ev)
    assert result.status == 1, result.text
    assert "only a qualified run is rebuilt" in result.text


def test_a_missing_tool_exits_2(qualified: tuple[Evidence, Path, str], qualify: Any) -> None:
    ev, _, _ = qualified
    text = ev.policy_path.read_text(encoding="utf-8")
    ev.policy_path.write_text(text.replace("[app.build]\n", '[app.build]\ntools = { packer = ['
                                                             '"{python}", "-m", "no_such_packer", "--version"] }\n'),
                              encoding="utf-8")
    ev.rebind_provenance()  # the provenance and the aggregate are bound to the policy as it now is
    ev.write_aggregate()
    result = rebuild(qualify, ev)
    assert result.status == 2, result.text
    assert "QE_ENVIRONMENT" in result.text
    assert "cannot run here" in result.text
    assert "Traceback" not in result.text


def test_another_platforms_build_exits_2(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path, platforms=["macos"], committed_layout=True)
    commit_all(ev.root)
    result = rebuild(qualify, ev)
    assert result.status == 2, result.text
    assert "the run has no linux build to rebuild here (it built macos)" in result.text


def test_an_os_signed_artifact_is_compared_by_its_unsigned_build_digest(
        qualified: tuple[Evidence, Path, str]) -> None:
    ev, _, _ = qualified
    predicate = ev.platforms[0].predicate
    assert predicate is not None
    signed = predicate.model_copy(update={"signature": predicate.signature.model_copy(
        update={"platform_signing_state": "signed"})})
    with pytest.raises(QualificationError) as refused:
        compared_digest(signed)
    assert (refused.value.code, refused.value.exit_status) == (Code.ENVIRONMENT, 2)
    assert "no unsigned output digest" in refused.value.message
    first = "b" * 64
    repro = BuildReproduction(first_sha256=first, second_sha256=first, second_size=1, reproduced=True,
                              duration_ms=1, variations=[BuildVariation(name="umask", first="0022", second="0002")])
    reproduced = signed.model_copy(update={"build": signed.build.model_copy(update={"reproduction": repro})})
    assert compared_digest(reproduced) == (first, "the qualified build's output before OS signing")
    assert compared_digest(predicate)[0] == predicate.build.artifact.sha256


def test_the_result_as_a_signed_attestation_shown_by_audit_beside_the_run(
        qualified: tuple[Evidence, Path, str], qualify: Any, tmp_path: Path) -> None:
    ev, _, sha = qualified
    key = generate_private_key(tmp_path / "rebuilder.pem")
    attestation = tmp_path / "rebuild.dsse.json"
    result = rebuild(qualify, ev, "--attest", str(attestation), "--key", str(tmp_path / "rebuilder.pem"))
    assert result.status == 0, result.text
    statement, keyid = verify_rebuild_attestation(attestation.read_bytes(), what="attestation")
    assert keyid == keyid_of(key.public_key())
    assert (statement.predicate.commit, statement.predicate.matches) == (sha, True)
    assert statement.subject[0].digest.sha256 == ev.platforms[0].predicate.build.artifact.sha256  # type: ignore[union-attr]

    # A byte changed in the signed payload: the signature no longer verifies, and the audit says so.
    envelope = json.loads(attestation.read_text())
    payload = base64.b64decode(envelope["payload"])
    envelope["payload"] = base64.b64encode(payload.replace(b'"rebuilt_size":', b'"rebuilt_size":1')).decode()
    forged = tmp_path / "forged.dsse.json"
    forged.write_text(json.dumps(envelope))
    report = tmp_path / "audit.json"
    audit = qualify(["audit", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                     "--rebuild", str(attestation), str(forged), "--json", str(report)])
    assert audit.status == 0, audit.text
    assert f"rebuild attestation {attestation} by key {keyid[:16]} (the rebuilder's own key" in audit.text
    assert "the rebuilt bytes equal the qualified ones" in audit.text
    data = json.loads(report.read_text())
    (seen,) = data["runs"][0]["rebuilds"]
    assert (seen["rebuilder_keyid"], seen["matches"], seen["commit"]) == (keyid, True, sha)
    assert any(note.startswith(f"rebuild attestation {forged} refused: QE_SIGNATURE_INVALID") for note in data["notes"])


def test_attest_needs_the_rebuilders_key(qualified: tuple[Evidence, Path, str], qualify: Any, tmp_path: Path) -> None:
    ev, _, _ = qualified
    result = rebuild(qualify, ev, "--attest", str(tmp_path / "a.json"))
    assert result.status == 2
    assert "QE_USAGE" in result.text


def test_a_bundle_is_anchored_and_rebuilt_from_the_checkout(qualified: tuple[Evidence, Path, str], qualify: Any,
                                                            tmp_path: Path) -> None:
    ev, _, _ = qualified
    bundle = tmp_path / "run.qualify-bundle.zip"
    made = qualify(["bundle", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                    "--out", str(bundle)])
    assert made.status == 0, made.text
    artifact = next(ev.artifacts_dir.iterdir())
    result = qualify(["rebuild", "--policy", str(ev.policy_path), "--root", str(ev.root), "--bundle", str(bundle),
                      "--artifact", str(artifact)])
    assert result.status == 0, result.text
    assert "REBUILT:" in result.text
