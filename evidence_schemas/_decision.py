"""Outputs of the consumer: the release gate's decision and the auditor's report (docs/design.md §4.5).

Each says who decided under what: the trust mode, the policy (name, path as
given, SHA-256 of its bytes), the tool's version, every verified statement's
signer as the signature proved it, and the notes on what was not observed.
"""

from __future__ import annotations

from typing import Annotated, Literal

from desktop_qualify.qualify_errors import Code
from pydantic import Field

from ._limits import MAX_AUDIT_RUNS, MAX_LIST
from ._predicates import RunIdentity
from ._rebuild import RebuildSeen
from ._records import ArtifactRef
from ._types import (
    AppCode,
    Count,
    Excerpt,
    FileName,
    GitSha,
    KeyId,
    LateRecord,
    Platform,
    Record,
    Sha256Hex,
    ShortText,
    StepId,
    Text,
    Timestamp,
    TrustMode,
)


class Reason(Record):
    code: Code
    message: Text
    platform: Platform | None = None
    # A fault of its own ("root"), or one that follows from an earlier root cause ("consequence"),
    # whose index in the same list of reasons is ``follows``. Root causes come first, each followed by
    # the consequences it explains.
    cause: Literal["root", "consequence"] = "root"
    follows: Annotated[int, Field(ge=0, le=MAX_LIST)] | None = None


# ``n/a``: the check was never reached (its statement did not verify, or an audit has no candidate files).
Cell = Literal["pass", "fail", "missing", "n/a"]


class DecisionRow(Record):
    """One platform's line of the decision table; a ``fail`` cell always has a reason with its code."""

    platform: Platform | ShortText
    artifact: FileName | None
    sha256: Sha256Hex | None
    gate: Cell
    build: Cell
    signature: Cell
    install: Cell
    probe: Cell
    journey: Cell
    # The presented candidate file against the evidence's digest and size.
    candidate: Cell


class Signer(Record):
    """Who signed one verified statement, read from its signature (never from its payload)."""

    statement: FileName
    platform: Platform | None
    kind: TrustMode
    # SHA-256 of the raw public key (ed25519) or of the leaf certificate's DER (sigstore).
    keyid: KeyId
    # ed25519: the key's name in the keyring, and the keyring the policy names.
    key_name: ShortText | None = None
    keyring: Text | None = None
    # sigstore: the certificate's SAN (build signer URI), OIDC issuer and run invocation URI.
    san: Text | None = None
    issuer: Text | None = None
    run_uri: Text | None = None


class PolicyRef(Record):
    name: ShortText
    path: Text
    sha256: Sha256Hex


class ConsumerDecision(Record):
    kind: Literal["consumer-decision"] = "consumer-decision"
    version: Literal[2] = 2
    decision: Literal["QUALIFIED", "REJECTED"]
    # release-gate: GitHub mode, main's live head compared; local-check: a local keyring, no remote observed;
    # audit: a historical run, no candidate files, no head of main.
    mode: Literal["release-gate", "local-check", "audit"]
    trust_mode: TrustMode
    policy: PolicyRef
    tool_version: ShortText
    candidate_sha: GitSha | None
    run_id: ShortText | None
    attempt: int | None
    checked_at: Timestamp
    signers: list[Signer] = Field(max_length=MAX_LIST)
    rows: list[DecisionRow] = Field(max_length=MAX_LIST)
    reasons: list[Reason] = Field(max_length=MAX_LIST)
    notes: list[Excerpt] = Field(default_factory=list, max_length=32)


class AuditTotals(LateRecord):
    """The audit's overall line: folders checked, distinct runs among them, and how each folder ended."""

    folders: Count
    runs: Count
    qualified: Count
    rejected: Count


# The checks of one platform, in the chain's order. ``statement``: the statement's signature, its identity
# claims and its commit (every platform-scoped reason no stage column names); ``signature``: the detached
# artifact signature and the producer's read-back of it; ``os-signing``: the OS code-signing state.
Check = Literal["statement", "gate", "build", "signature", "os-signing", "install", "probe", "journey", "candidate"]


class CheckCell(LateRecord):
    """One platform's cell for one check: its outcome, what the verified evidence shows, the codes that fail it."""

    check: Check
    outcome: Cell
    observed: Text
    codes: list[Code] = Field(max_length=MAX_LIST)


class StepCell(LateRecord):
    """One journey step on one platform, judged against the policy by the verifier's own rule.

    ``expected`` is the policy's requirement (None for a step the policy does not require: the app never
    states expectations); ``observed`` is None when the step was not reported.
    """

    id: StepId
    required: bool
    expected: Literal["allow", "reject"] | None
    expected_code: AppCode | None
    observed: Literal["allow", "reject", "error"] | None
    observed_code: AppCode | None
    outcome: Cell
    problem: Text | None = None


class PlatformChecks(LateRecord):
    """One platform's column of a run's matrix, from its verified statement only."""

    platform: Platform | ShortText
    produced_at: Timestamp | None
    artifact: ArtifactRef | None
    checks: list[CheckCell] = Field(max_length=16)
    steps: list[StepCell] = Field(max_length=MAX_LIST)


class AuditRun(LateRecord):
    """One audited run: where it came from, when and by what it ran, its matrix, and the decision on it."""

    evidence: Text
    # When the run happened, as its verified statements say (the aggregate's time, else the earliest
    # platform statement's); None when no statement verified.
    run_at: Timestamp | None
    # The producer run as its verified statements name it (the aggregate's, else the first platform's).
    identity: RunIdentity | None
    # The policy digest the aggregate job recorded (None without a verified aggregate).
    evidence_policy_sha256: Sha256Hex | None
    platforms: list[PlatformChecks] = Field(max_length=8)
    decision: ConsumerDecision
    # Rebuild attestations (qualify audit --rebuild) whose commit, run and artifact are this run's: shown beside
    # it, signed by their rebuilder's key; they never change the decision.
    rebuilds: list[RebuildSeen] = Field(default_factory=list, max_length=MAX_LIST)


class AuditReport(LateRecord):
    """The auditor's offline check of one or more historical runs, sorted by run time."""

    kind: Literal["audit-report"] = "audit-report"
    version: Literal[3] = 3
    decision: Literal["QUALIFIED", "REJECTED"]
    trust_mode: TrustMode
    policy: PolicyRef
    tool_version: ShortText
    checked_at: Timestamp
    totals: AuditTotals
    runs: list[AuditRun] = Field(max_length=MAX_AUDIT_RUNS)
    notes: list[Excerpt] = Field(default_factory=list, max_length=MAX_AUDIT_RUNS)
