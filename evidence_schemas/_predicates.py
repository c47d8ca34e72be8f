"""Predicates: one versioned type per document kind, under one URI prefix."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ._records import (
    ArtifactRef,
    BuildRecord,
    InstallRecord,
    JourneyRecord,
    LaunchProbeRecord,
    SignatureRecord,
    SourceGateRecord,
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
    repository: _Repository
    workflow: _Workflow
    ref: _Ref
    sha: GitSha
    run_id: _RunId
    attempt: Count
    trigger: _Word
    runner_environment: _Word


class PlatformPredicate(Record):
    version: Literal[2] = 2
    platform: Platform
    arch: ShortText
    run: RunIdentity
    produced_at: Timestamp
    source_gate: SourceGateRecord
    build: BuildRecord
    signature: SignatureRecord
    install: InstallRecord
    launch_probe: LaunchProbeRecord
    journey: JourneyRecord
    # The upgrade, rollback and downgrade journey, when the policy asks for it ([update]).
    update: UpdateRecord | None = None


class AggregatedPlatform(Record):
    platform: Platform
    artifact: ArtifactRef
    # SHA-256 of the exact signed statement bytes (the DSSE payload) that were verified, with the key or
    # certificate that signed them. Not of the envelope or bundle file: GitHub's attestation API hands a stored
    # bundle back re-serialised, and the binding must hold for the statement however it travelled (v2).
    payload_sha256: Sha256Hex
    signer_keyid: KeyId
    signer_identity: ShortText


class AggregatePredicate(Record):
    version: Literal[2] = 2
    run: RunIdentity
    required_platforms: list[Platform] = Field(min_length=1, max_length=3)
    platforms: list[AggregatedPlatform] = Field(min_length=1, max_length=3)
    aggregated_at: Timestamp
    policy_sha256: Sha256Hex
