"""Predicates: one versioned type per document kind, under one URI prefix."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ._confinement import MAX_CONFINED_RUNS, StageConfinement
from ._records import (
    MAX_TOOLCHAINS,
    ArtifactRef,
    BuildRecord,
    InstallRecord,
    JourneyRecord,
    LaunchProbeRecord,
    SignatureRecord,
    SourceGateRecord,
    ToolchainRecord,
)
from ._types import Count, GitSha, KeyId, Platform, Record, Sha256Hex, ShortText, Timestamp
from ._update import UpdateRecord

# The identity fields' shapes, the same in both modes: in GitHub mode the certificate fixes them; in local mode
# nothing else does, and free text here (a newline, a Markdown heading) would reach every report as written.
_Repository = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")]
_Workflow = Annotated[str, Field(pattern=r"^\.github/workflows/[A-Za-z0-9_.-]{1,100}\.ya?ml$")]
# A git ref may hold any letter (a look-alike "main" is the verifier's to name), never a space or a control,
# format or separator character.
_REF_FORBIDDEN = r"\s\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff"
_Ref = Annotated[str, Field(pattern=rf"^refs/[^{_REF_FORBIDDEN}]{{1,240}}$")]
_RunId = Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,64}$")]
_Word = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]{0,63}$")]


class RunIdentity(Record):
    """Which run produced the evidence.

    In GitHub mode every field here is also in the signing certificate and must
    equal it; in local mode the run id is generated once per local chain.
    """

    mode: Literal["local", "github"]
    """How the run ran: a local chain, or a GitHub Actions run."""
    repository: _Repository
    """The repository, as owner/name."""
    workflow: _Workflow
    """The workflow file the run belongs to."""
    ref: _Ref
    """The git ref the run was on."""
    sha: GitSha
    """The commit the run qualified."""
    run_id: _RunId
    """The run's id: GitHub's, or one generated for a local chain."""
    attempt: Count
    """The run's attempt number (1 for a local chain)."""
    trigger: _Word
    """The event that started the run (local for a local chain)."""
    runner_environment: _Word
    """Where the job ran, as GitHub names it (local for a local chain)."""


class PlatformPredicate(Record):
    """One platform's qualification: which run produced it, and the record of each stage, in order."""

    version: Literal[2] = 2
    """The version of this document's format."""
    platform: Platform
    """The platform the job qualified."""
    arch: ShortText
    """The architecture of the machine the job built on (x86_64, arm64, ...)."""
    run: RunIdentity
    """The run that produced the statement."""
    produced_at: Timestamp
    """When the statement was made (UTC)."""
    source_gate: SourceGateRecord
    """The source gate's record."""
    build: BuildRecord
    """The build's record."""
    signature: SignatureRecord
    """The sign stage's record."""
    install: InstallRecord
    """The install's record."""
    launch_probe: LaunchProbeRecord
    """The launch probe's record."""
    journey: JourneyRecord
    """The journey's record."""
    # The upgrade, rollback and downgrade journey, when the policy asks for it ([update]).
    update: UpdateRecord | None = None
    """The update journey's record (upgrade, rollback, downgrade), when the policy asks for it; else None."""
    # What each run of app code ran under ([confinement], evidence_schemas/_confinement.py); evidence made before
    # app stages were confined has none.
    confinement: list[StageConfinement] | None = Field(default=None, max_length=MAX_CONFINED_RUNS)
    """One entry per run of app-controlled code, in order: the confinement it ran under; None in evidence made
    before app stages were confined."""
    toolchains: list[ToolchainRecord] | None = Field(default=None, max_length=MAX_TOOLCHAINS)
    """The tools the probe, journey and state commands name by placeholder (``{python}``, ``[app.toolchains]``),
    each as resolved on the producer's machine: informational; None in evidence made before they were recorded."""


class AggregatedPlatform(Record):
    """One platform statement as the aggregate binds it: its artifact, its signed bytes' digest, its signer."""

    platform: Platform
    """The platform the statement qualified."""
    artifact: ArtifactRef
    """The artifact the statement qualified."""
    # SHA-256 of the exact signed statement bytes (the DSSE payload) that were verified, with the key or
    # certificate that signed them. Not of the envelope or bundle file: GitHub's attestation API hands a stored
    # bundle back re-serialised, and the binding must hold for the statement however it travelled (v2).
    payload_sha256: Sha256Hex
    """The SHA-256 of the exact signed statement bytes (the DSSE payload) that were verified."""
    signer_keyid: KeyId
    """The id of the key (Ed25519) or certificate (Sigstore) that signed those bytes."""
    signer_identity: ShortText
    """Who signed them: the key's name in the keyring, or the certificate's SAN."""
    # SHA-256 of the signed bytes of the platform's SLSA provenance, signed by the same signer (v3).
    provenance_sha256: Sha256Hex
    """The SHA-256 of the signed bytes of this platform's SLSA provenance, signed by the same signer."""


class AggregatePredicate(Record):
    """The aggregate's qualification: the run, the required platforms, and each platform statement verified."""

    version: Literal[3] = 3
    """The version of this document's format."""
    run: RunIdentity
    """The one run every bound platform statement came from."""
    required_platforms: list[Platform] = Field(min_length=1, max_length=3)
    """The platforms the policy requires."""
    platforms: list[AggregatedPlatform] = Field(min_length=1, max_length=3)
    """Each verified platform statement, bound by its payload digest and signer."""
    aggregated_at: Timestamp
    """When the aggregate was made (UTC)."""
    policy_sha256: Sha256Hex
    """The SHA-256 of the policy file's bytes the aggregate job verified under."""
