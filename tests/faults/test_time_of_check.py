"""Time of check, producer side (issue 7, item 7): what was checked is what is used, installed, run and signed.

The producer runs in-process on the session's cached build (producer_child.py's
stand-in for the app's build command; every stage after the
build is real), and a wrapper around one stage changes a file just before
that stage runs: the archive between the build's hash and the install, inside
the install between its hash and its unpack, or before the emit; the
installed executable before the launch probe or the journey.

Swapped-in programs are shell scripts that leave a marker file: if anything
runs them, the marker says so.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from desktop_qualify.evidence_schemas import (
    Code,
    DigestSet,
    InstallRecord,
    JourneyRecord,
    LaunchProbeRecord,
    PlatformPredicate,
    PlatformStatement,
    QualificationError,
    Subject,
    canonical_bytes,
)
from desktop_qualify.producer import _pipeline, _sign_run
from desktop_qualify.producer._pipeline import ProduceResult, produce
from desktop_qualify.producer.confinement import StageRunner
from desktop_qualify.producer.installers import _archive
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_trust import ArtifactSignature, StatementSigner, signer_for
from faultkit import PLATFORM, App, Reference, codes, flip_byte, linux_only, tampered_archive, verify
from producer_child import cached_build
from pydantic import BaseModel
from support.chain import qualify

pytestmark = [pytest.mark.slow, linux_only]

M = TypeVar("M", bound=BaseModel)
EXECUTABLE = "skillhost/skillhost"
STATEMENT = f"platform-{PLATFORM}.dsse.json"


@dataclass
class Outcome:
    out: Path
    result: ProduceResult | None
    error: QualificationError | None

    @property
    def records(self) -> Path:
        """Published records once the run emitted; a run refused before that leaves its own in its staging folder."""
        published = self.out / "records" / PLATFORM
        return published if self.result is not None else self.out / f".staging-{PLATFORM}" / "records" / PLATFORM

    def record(self, name: str, model: type[M]) -> M:
        return model.model_validate_json((self.records / f"{name}.json").read_bytes())

    @property
    def archive(self) -> Path:
        (archive,) = sorted((self.out / "artifacts").glob("skillhost-*"))
        return archive

    @property
    def evidence(self) -> list[str]:
        folder = self.out / "evidence"
        return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@dataclass(frozen=True)
class Tampered:
    archive: Path
    marker: Path
    script: bytes


Run = Callable[..., Outcome]


@pytest.fixture(scope="module")
def tampered(reference: Reference, tmp_path_factory: pytest.TempPathFactory) -> Tampered:
    folder = tmp_path_factory.mktemp("tampered")
    marker = folder / "the-swapped-program-ran"
    archive = tampered_archive(reference.archive, folder / reference.archive.name, EXECUTABLE, marker)
    return Tampered(archive, marker, f"#!/bin/sh\necho ran > '{marker}'\n".encode())


@pytest.fixture
def run(app: App, reference: Reference, tampered: Tampered, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> Run:
    monkeypatch.setattr(StageRunner, "run", cached_build(reference.output, StageRunner.run))
    tampered.marker.unlink(missing_ok=True)

    def run(signer: StatementSigner | None = None) -> Outcome:
        out = tmp_path / "out"
        try:
            result = produce(load_policy(app.policy), PLATFORM, out, run_id=f"toc-{tmp_path.name}"[:64],
                             signer=signer)
        except QualificationError as exc:
            return Outcome(out, None, exc)
        return Outcome(out, result, None)

    return run


def _before(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Make ``module.name`` run ``change`` on its keyword arguments first."""
    real = getattr(module, name)

    def wrapper(**kwargs: Any) -> Any:
        change(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(module, name, wrapper)


def _swap_executable(kwargs: dict[str, Any], tampered: Tampered) -> None:
    exe = kwargs["prefix"] / kwargs["install"].executable
    exe.unlink()
    exe.write_bytes(tampered.script)
    exe.chmod(0o755)


def _reference_install(reference: Reference) -> InstallRecord:
    return InstallRecord.model_validate_json((reference.out / "records" / PLATFORM / "install.json").read_bytes())


# -- the archive ------------------------------------------------------------------------------------------------

def test_an_archive_swapped_after_the_build_is_neither_installed_nor_signed(
        run: Run, monkeypatch: pytest.MonkeyPatch, tampered: Tampered) -> None:
    _before(monkeypatch, _pipeline, "install", lambda kw: shutil.copyfile(tampered.archive, kw["archive"]))
    outcome = run()
    installed = outcome.record("install", InstallRecord)
    assert not installed.passed
    assert "differs from the build's" in (installed.failure or "")
    # Refused before anything was unpacked, and nothing it would have installed ever ran.
    assert not (outcome.out / "work" / PLATFORM / "install").exists()
    assert _not_run(outcome, "launch-probe", LaunchProbeRecord)
    assert _not_run(outcome, "journey", JourneyRecord)
    assert not tampered.marker.exists()
    # The artifact is re-hashed before anything is signed: no statement names bytes that are not the ones built.
    _refused_unsigned(outcome)


def _not_run(outcome: Outcome, name: str, model: type[LaunchProbeRecord] | type[JourneyRecord]) -> bool:
    """The stage ran no app process: it recorded a run without an exit, or the job stopped before it."""
    return not (outcome.records / f"{name}.json").exists() or outcome.record(name, model).exit_code is None


def _refused_unsigned(outcome: Outcome) -> None:
    """The job refused the changed artifact before signing it: an error naming it, no signature, no evidence.

    The pipeline re-hashes the artifact before the first app stage after the build and again when it signs and
    emits: a change no app stage made is ``QE_ARTIFACT_DIGEST_MISMATCH`` (an app stage's own change would be
    ``QE_APP_STAGE_TAMPERED``), and whichever read comes first stops the job.
    """
    assert outcome.error is not None
    assert outcome.error.code is Code.ARTIFACT_DIGEST_MISMATCH, outcome.error
    assert "skillhost-" in outcome.error.message, outcome.error.message
    assert not (outcome.records / "signature.json").exists()
    assert outcome.evidence == []


def test_an_archive_swapped_between_the_install_hash_and_the_unpack_is_not_what_gets_installed(
        run: Run, monkeypatch: pytest.MonkeyPatch, tampered: Tampered, reference: Reference) -> None:
    """The install unpacks the private copy it hashed, never the artifact's path again."""
    swapped: list[Path] = []

    def unpack_after_a_swap(archive: Path, prefix: Path) -> None:
        # The job's artifact, in its staging folder until the statement is emitted.
        artifact = next((prefix.parents[2] / f".staging-{PLATFORM}" / "artifacts").glob("skillhost-*"))
        shutil.copyfile(tampered.archive, artifact)
        swapped.append(artifact)
        real_unpack(archive, prefix)

    # The archive kind's adapter unpacks: the swap happens right before it reads the copy.
    real_unpack = _archive.unpack
    monkeypatch.setattr(_archive, "unpack", unpack_after_a_swap)
    outcome = run()
    assert swapped, "the unpack was never reached"
    installed = outcome.record("install", InstallRecord)
    expected = _reference_install(reference)
    assert installed.passed, installed.failure
    assert installed.executable_sha256 == expected.executable_sha256
    assert installed.manifest_sha256 == expected.manifest_sha256
    # The job stops at the artifact's re-read before the probe: the swap was not the probe's doing.
    assert "before the launch probe stage" in (outcome.error.message if outcome.error else "")
    assert not tampered.marker.exists()
    # The private copy does not outlive the install.
    assert not list((outcome.out / "work" / PLATFORM).glob(".install-*"))
    # And the artifact that now differs from what was built is not signed for.
    _refused_unsigned(outcome)


def test_an_archive_changed_after_the_install_is_refused_at_emit(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    _before(monkeypatch, _sign_run, "emit", lambda kw: flip_byte(kw["archive"]))
    outcome = run()
    assert outcome.record("install", InstallRecord).passed
    assert outcome.record("journey", JourneyRecord).passed
    assert outcome.error is not None
    assert outcome.error.code is Code.ARTIFACT_DIGEST_MISMATCH
    assert "changed after it was built" in outcome.error.message
    assert outcome.evidence == []


# -- what is signed -----------------------------------------------------------------------------------------------

class _RecordingSigner(StatementSigner):
    """The policy's signer, keeping every payload it was asked to sign."""

    def __init__(self, inner: StatementSigner) -> None:
        self.inner = inner
        self.file_suffix = inner.file_suffix
        self.payloads: list[bytes] = []

    def sign_statement(self, payload: bytes) -> bytes:
        self.payloads.append(payload)
        return self.inner.sign_statement(payload)

    def sign_artifact_digest(self, name: str, sha256_hex: str) -> ArtifactSignature:
        return self.inner.sign_artifact_digest(name, sha256_hex)


def test_the_signed_payload_is_exactly_the_statement_built_from_the_records(
        run: Run, monkeypatch: pytest.MonkeyPatch, app: App) -> None:
    emitted: list[PlatformPredicate] = []
    _before(monkeypatch, _sign_run, "emit", lambda kw: emitted.append(kw["predicate"]))
    signer = _RecordingSigner(signer_for(load_policy(app.policy), "platform"))
    outcome = run(signer)
    assert outcome.error is None, outcome.error
    assert outcome.result is not None
    assert outcome.result.passed, outcome.result.failures
    # The platform statement, then its SLSA provenance: nothing else is signed.
    payload, provenance = signer.payloads
    (predicate,) = emitted
    archive = outcome.archive
    statement = PlatformStatement(
        type_="https://in-toto.io/Statement/v1",
        subject=[Subject(name=archive.name, digest=DigestSet(sha256=predicate.build.artifact.sha256))],
        predicateType="https://desktop-qualify.invalid/evidence/platform-qualification/v2",
        predicate=predicate,
    )
    assert payload == canonical_bytes(statement)
    # The predicate is the stages' records, as each stage wrote its unsigned copy for people.
    for name, field, model in (("source-gate", "source_gate", None), ("build", "build", None),
                               ("signature", "signature", None), ("install", "install", InstallRecord),
                               ("launch-probe", "launch_probe", LaunchProbeRecord),
                               ("journey", "journey", JourneyRecord)):
        recorded = getattr(predicate, field)
        on_disk = (outcome.out / "records" / PLATFORM / f"{name}.json").read_bytes()
        assert type(recorded).model_validate_json(on_disk) == recorded, name
        if model is not None:
            assert isinstance(recorded, model)
    # The file on disk carries those very bytes, and they are what the consumer accepts.
    envelope = json.loads((outcome.out / "evidence" / STATEMENT).read_bytes())
    assert base64.b64decode(envelope["payload"]) == payload
    # The provenance names exactly those bytes, and is the one on disk beside them.
    document = json.loads(provenance)
    assert document["predicateType"] == "https://slsa.dev/provenance/v1"
    assert document["predicate"]["runDetails"]["byproducts"][0]["digest"]["sha256"] == \
        hashlib.sha256(payload).hexdigest()
    beside = json.loads((outcome.out / "evidence" / f"provenance-{PLATFORM}.dsse.json").read_bytes())
    assert base64.b64decode(beside["payload"]) == provenance
    evidence = outcome.out / "evidence"
    done = qualify("aggregate", "--policy", app.policy, "--evidence", evidence, "--out", evidence)
    assert done.returncode == 0, done.stdout + done.stderr
    checked = verify(app, evidence, [archive])
    assert checked.returncode == 0, checked.stdout + checked.stderr


# -- the installed executable -------------------------------------------------------------------------------------

# The stage whose function the swap runs before, and the stages that must then refuse to run the app.
_SWAPS = {"launch probe": ("launch_probe", ["launch probe", "journey"]), "journey": ("journey", ["journey"])}


@pytest.mark.parametrize("stage", sorted(_SWAPS))
def test_a_swapped_installed_executable_is_never_run(run: Run, monkeypatch: pytest.MonkeyPatch, app: App,
                                                      tampered: Tampered, stage: str) -> None:
    wrapped, refused = _SWAPS[stage]
    _before(monkeypatch, _pipeline, wrapped, lambda kw: _swap_executable(kw, tampered))
    outcome = run()
    assert outcome.error is None, outcome.error
    assert outcome.result is not None
    assert outcome.result.failures == refused
    assert not tampered.marker.exists(), "the swapped-in program ran"
    records: dict[str, LaunchProbeRecord | JourneyRecord] = {
        "launch probe": outcome.record("launch-probe", LaunchProbeRecord),
        "journey": outcome.record("journey", JourneyRecord)}
    for name in refused:
        record = records[name]
        assert record.exit_code is None
        assert not record.passed
        assert "installed executable changed" in record.stderr_excerpt
    if stage == "journey":
        assert records["launch probe"].passed
    # The failure is evidence, signed, with its provenance; the aggregate refuses it.
    assert outcome.evidence == [STATEMENT, f"provenance-{PLATFORM}.dsse.json"]
    evidence = outcome.out / "evidence"
    done = qualify("aggregate", "--policy", app.policy, "--evidence", evidence, "--out", evidence)
    assert done.returncode == 1, done.stdout + done.stderr
    found = codes(done.stderr)
    assert ("QE_PROBE_FAILED" in found) if stage == "launch probe" else any("JOURNEY" in c for c in found), found


def test_a_changed_file_of_the_installed_tree_is_never_run(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    def change_a_library_file(kwargs: dict[str, Any]) -> None:
        internal = kwargs["prefix"] / "skillhost" / "_internal"
        target = next(iter(sorted(internal.rglob("METADATA"))))
        target.write_bytes(target.read_bytes() + b"\n")

    _before(monkeypatch, _pipeline, "launch_probe", change_a_library_file)
    outcome = run()
    probe = outcome.record("launch-probe", LaunchProbeRecord)
    assert probe.exit_code is None, "the probe ran an installed tree that differs from the install's manifest"
