"""The run job's unsigned record, and the platform predicate the signing job makes of it.

In GitHub mode the job that runs app code holds no signing identity: it writes an ``UnsignedRun``
(``platform-<platform>.run.json``) with every stage's record, the OS code-signing outcome it observed and the
confinement each app stage had. A separate signing job, the only one with an OIDC token, runs no app code: it
reads that file, checks it again (``QE_UNSIGNED_RUN_INVALID``), signs the artifact and the platform statement
that ``predicate_from_run`` builds from the run and its own signature record.
"""

from __future__ import annotations

from typing import Literal

from desktop_qualify.qualify_errors import Code, QualificationError
from pydantic import Field

from ._confinement import MAX_CONFINED_RUNS, StageConfinement
from ._predicates import PlatformPredicate, RunIdentity
from ._records import (
    MAX_TOOLCHAINS,
    BuildRecord,
    InstallRecord,
    JourneyRecord,
    LaunchProbeRecord,
    NotarizationRecord,
    SignatureRecord,
    SourceGateRecord,
    ToolchainRecord,
)
from ._types import LateRecord, Platform, ShortText, Timestamp
from ._update import UpdateRecord


class OsSigning(LateRecord):
    """The operating system's code signing of the artifact as the run job observed it (codesign, signtool)."""

    tool: ShortText
    """The operating system's code-signing tool that signed the artifact, or none."""
    state: Literal["unsigned", "signed", "notarized", "failed"]
    """The artifact's OS code-signing state; the policy lists the states it accepts."""
    notarization: NotarizationRecord | None = None
    """macOS: what the notarization hook did; None on Linux and Windows."""


class UnsignedRun(LateRecord):
    """What a producer's run job writes, unsigned, for the signing job: every stage's record but the signature's.

    The signing job re-checks it, signs the artifact, and signs the platform statement built from it
    (``predicate_from_run``); nothing here is trusted before that job's checks.
    """

    kind: Literal["unsigned-run"] = "unsigned-run"
    """The document kind: a fixed value that tells this record from every other."""
    version: Literal[1] = 1
    """The version of this record's format."""
    platform: Platform
    """The platform the job qualified."""
    arch: ShortText
    """The architecture of the machine the job built on (x86_64, arm64, ...)."""
    run: RunIdentity
    """The run that produced the record."""
    produced_at: Timestamp
    """When the run job wrote the record (UTC)."""
    source_gate: SourceGateRecord
    """The source gate's record."""
    build: BuildRecord
    """The build's record."""
    os_signing: OsSigning
    """The operating-system code signing the run job observed (the pipeline's own signature is the signing job's)."""
    install: InstallRecord
    """The install's record."""
    launch_probe: LaunchProbeRecord
    """The launch probe's record."""
    journey: JourneyRecord
    """The journey's record."""
    update: UpdateRecord | None = None
    """The update journey's record (upgrade, rollback, downgrade), when the policy asks for it; else None."""
    confinement: list[StageConfinement] = Field(max_length=MAX_CONFINED_RUNS)
    """One entry per run of app-controlled code, in order: the confinement it ran under."""
    toolchains: list[ToolchainRecord] | None = Field(default=None, max_length=MAX_TOOLCHAINS)
    """The tools the probe, journey and state commands name by placeholder, as resolved on the producer's machine;
    carried into the platform predicate unchanged."""


def os_signing_of(signature: SignatureRecord) -> OsSigning:
    """The OS code-signing outcome a signature record carries."""
    return OsSigning(tool=signature.platform_signing_tool, state=signature.platform_signing_state,
                     notarization=signature.notarization)


def predicate_from_run(run: UnsignedRun, signature: SignatureRecord, produced_at: str) -> PlatformPredicate:
    """The platform predicate the signing job signs: ``run``'s records with its own ``signature`` record.

    Refused (``QE_UNSIGNED_RUN_INVALID``) when the signature record is of another artifact than the run built, or
    records another OS code-signing outcome than the run job observed.
    """
    if signature.artifact_sha256 != run.build.artifact.sha256:
        raise QualificationError(Code.UNSIGNED_RUN_INVALID,
                                 f"the signature record is of artifact {signature.artifact_sha256[:12]}, the run "
                                 f"built {run.build.artifact.sha256[:12]}")
    if os_signing_of(signature) != run.os_signing:
        raise QualificationError(Code.UNSIGNED_RUN_INVALID,
                                 f"the signature record's OS signing ({signature.platform_signing_state} by "
                                 f"{signature.platform_signing_tool}) is not what the run job observed "
                                 f"({run.os_signing.state} by {run.os_signing.tool})")
    return PlatformPredicate(platform=run.platform, arch=run.arch, run=run.run, produced_at=produced_at,
                             source_gate=run.source_gate, build=run.build, signature=signature, install=run.install,
                             launch_probe=run.launch_probe, journey=run.journey, update=run.update,
                             confinement=list(run.confinement), toolchains=run.toolchains)
