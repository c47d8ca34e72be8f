"""Predicates: one versioned type per document kind, under one URI prefix."""

from __future__ import annotations

from typing import Literal

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


class RunIdentity(Record):
    """Which run produced the evidence.

    In GitHub mode every field here is also in the signing certificate and must
    equal it; in local mode the run id is generated once per local chain.
    """

    mode: Literal["local", "github"]
    repository: ShortText
    workflow: ShortText
    ref: ShortText
    sha: GitSha
    run_id: ShortText
    attempt: Count
    trigger: ShortText
    runner_environment: ShortText


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
