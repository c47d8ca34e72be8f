"""Issue 36: `qualify rebuild` checks no full rebuild test held.

- An OS-signed artifact is compared by the unsigned output digest its build record carries, never by the
  artifact's own digest (which no rebuild can give: the signature holds a time and a certificate). Every other
  full rebuild is of an unsigned artifact, where the two digests are one.
- ``--attest`` on a checkout whose source is not the build's: the signed ``matches`` is false, as the exit is 1.

The app is the small committed one of ``test_rebuild.py``; its build is the producer's real build code.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.qualify_policy import host_platform
from desktop_qualify.qualify_trust import generate_private_key, verify_rebuild_attestation
from support.checkout import commit_all
from support.evidence_factory import PlatformSpec, artifact_name, make_evidence
from support.rebuild_app import WHEN, app_checkout, built, rebuild

from desktop_qualify import producer

pytestmark = pytest.mark.skipif(host_platform() != "linux", reason="the small app's build writes a Linux archive")

# -- an OS-signed artifact: compared by the unsigned output digest of its build record --------------------------------


def test_an_os_signed_artifact_is_rebuilt_to_its_unsigned_output_not_its_own_digest(
        tmp_path: Path, qualify: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A macOS run, code-signed by the producer: the artifact's digest is the signed file's, the build record's
    reproduction carries the build's own output's. Only macOS signs (the verifier refuses OS signing on Linux),
    so the run is macOS's and this Linux machine stands in for a Mac: the build itself is this host's real one."""
    ev = make_evidence(tmp_path, platforms=["macos"], committed_layout=True, signing={"macos": ["signed"]})
    app = app_checkout(ev)
    sha = commit_all(ev.root, "the app", date=WHEN)
    unsigned, source_digest = built(ev, app, sha, tmp_path / "producer-work")
    unsigned_sha256 = _sha256(unsigned)
    # The artifact as published: the build's output, then OS-signed (other bytes: a signature appended).
    for old in ev.artifacts_dir.iterdir():
        old.unlink()
    signed = ev.artifacts_dir / artifact_name("macos", sha)
    shutil.copyfile(unsigned, signed)
    with signed.open("ab") as handle:
        handle.write(b"\0codesign: a signature holding a time and a certificate")

    def os_signed(pred: dict[str, Any]) -> None:
        pred["build"]["source_digest"] = source_digest
        pred["build"]["reproduction"] = {
            "first_sha256": unsigned_sha256, "second_sha256": unsigned_sha256, "second_size": unsigned.stat().st_size,
            "reproduced": True, "duration_ms": 1,
            "variations": [{"name": "umask", "first": "0022", "second": "0002"}]}
        pred["signature"].update(platform_signing_tool="codesign", platform_signing_state="signed")

    ev.sha, ev.platforms = sha, []
    ev.write_platform(PlatformSpec("macos", edit=os_signed))
    ev.write_aggregate()
    predicate = ev.platforms[0].predicate
    assert predicate is not None
    assert predicate.build.artifact.sha256 != unsigned_sha256  # the two differ here

    # This machine stands in for the Mac the run was built on; the build is this host's own.
    real_rebuild = producer.rebuild
    monkeypatch.setattr("desktop_qualify.qualify_cli._rebuild.host_platform", lambda: "macos")
    monkeypatch.setattr(producer, "rebuild", lambda *a, **kw: real_rebuild(*a, **{**kw, "platform": "linux"}))

    result = rebuild(qualify, ev)
    assert result.status == 0, result.text
    assert f"REBUILT: skillhost-0.1.0-linux.tar.gz sha256 {unsigned_sha256} is the qualified build's output " \
           "before OS signing" in result.text

    # A record whose unsigned digest is not what this commit builds to is refused, though the artifact is the same.
    other = "b" * 64
    ev.platforms = []
    ev.write_platform(PlatformSpec("macos", edit=lambda pred: (os_signed(pred), pred["build"]["reproduction"].update(
        first_sha256=other, second_sha256=other))))
    ev.write_aggregate()
    refused = rebuild(qualify, ev)
    assert refused.status == 1, refused.text
    assert f"QE_REBUILD_MISMATCH: the rebuilt output sha256 {unsigned_sha256} is not the qualified build's output " \
           f"before OS signing ({other})" in refused.text


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- --attest on a source-digest mismatch: the signed verdict is the exit status's -----------------------------------


def test_attest_on_a_source_digest_mismatch_signs_matches_false(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path, committed_layout=True)
    app = app_checkout(ev)
    sha = commit_all(ev.root, "the app", date=WHEN)
    archive, _ = built(ev, app, sha, tmp_path / "producer-work")
    for old in ev.artifacts_dir.iterdir():
        old.unlink()
    shutil.copyfile(archive, ev.artifacts_dir / artifact_name("linux", sha))
    # The artifact is the commit's build, byte for byte; the record names a source digest the commit does not have.
    ev.sha, ev.platforms = sha, []
    ev.write_platform(PlatformSpec("linux", edit=lambda pred: pred["build"].update(source_digest="f" * 64)))
    ev.write_aggregate()
    generate_private_key(tmp_path / "rebuilder.pem")
    attestation = tmp_path / "rebuild.dsse.json"
    result = rebuild(qualify, ev, "--attest", str(attestation), "--key", str(tmp_path / "rebuilder.pem"))
    assert result.status == 1, result.text
    assert "QE_SOURCE_DIGEST_MISMATCH" in result.text
    statement, _ = verify_rebuild_attestation(attestation.read_bytes(), what="attestation")
    p = statement.predicate
    assert p.rebuilt_sha256 == p.expected_sha256  # the bytes are equal: only the source differs
    assert p.matches is False
    assert p.first_difference is not None
    assert p.first_difference.startswith("QE_SOURCE_DIGEST_MISMATCH")
