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
    """One reason a check failed: a stable code, a message, and the root cause it follows from, if any."""

    code: Code
    """The stable QE_ code."""
    message: Text
    """What is wrong, for people."""
    platform: Platform | None = None
    """The platform it concerns; None when it concerns the run as a whole."""
    # A fault of its own ("root"), or one that follows from an earlier root cause ("consequence"),
    # whose index in the same list of reasons is ``follows``. Root causes come first, each followed by
    # the consequences it explains.
    cause: Literal["root", "consequence"] = "root"
    """Whether it is a fault of its own (root) or follows from an earlier root cause (consequence)."""
    follows: Annotated[int, Field(ge=0, le=MAX_LIST)] | None = None
    """For a consequence: the index of its root cause in the same list of reasons."""


# ``n/a``: the check was never reached (its statement did not verify, or an audit has no candidate files).
Cell = Literal["pass", "fail", "missing", "n/a"]


class DecisionRow(Record):
    """One platform's line of the decision table; a ``fail`` cell always has a reason with its code."""

    platform: Platform | ShortText
    """The required platform this row is for."""
    artifact: FileName | None
    """The artifact's file name; None when no verified statement named one."""
    sha256: Sha256Hex | None
    """The artifact's SHA-256; None when no verified statement named one."""
    gate: Cell
    """The source gate check's outcome on this platform."""
    build: Cell
    """The build check's outcome on this platform."""
    signature: Cell
    """The signature check's outcome on this platform."""
    install: Cell
    """The install check's outcome on this platform."""
    probe: Cell
    """The launch probe check's outcome on this platform."""
    journey: Cell
    """The journey check's outcome on this platform."""
    # The presented candidate file against the evidence's digest and size.
    candidate: Cell
    """The presented candidate file's outcome against the evidence's digest and size."""


class Signer(Record):
    """Who signed one verified statement, read from its signature (never from its payload)."""

    statement: FileName
    """The statement's file name."""
    platform: Platform | None
    """The platform of a platform statement; None for the aggregate."""
    kind: TrustMode
    """How the signature was made: an Ed25519 key (local mode) or a Sigstore certificate (GitHub mode)."""
    # SHA-256 of the raw public key (ed25519) or of the leaf certificate's DER (sigstore).
    keyid: KeyId
    """The SHA-256 of the raw public key (Ed25519) or of the leaf certificate's DER (Sigstore)."""
    # ed25519: the key's name in the keyring, and the keyring the policy names.
    key_name: ShortText | None = None
    """Ed25519: the key's name in the keyring."""
    keyring: Text | None = None
    """Ed25519: the keyring the policy names."""
    # sigstore: the certificate's SAN (build signer URI), OIDC issuer and run invocation URI.
    san: Text | None = None
    """Sigstore: the certificate's SAN, the build signer URI."""
    issuer: Text | None = None
    """Sigstore: the certificate's OIDC issuer."""
    run_uri: Text | None = None
    """Sigstore: the certificate's run invocation URI."""


class PolicyRef(Record):
    """The policy a decision was made under: its name, its path as given, and the SHA-256 of its bytes."""

    name: ShortText
    """The policy's name, as the policy file gives it."""
    path: Text
    """The policy's path, as given on the command line."""
    sha256: Sha256Hex
    """The SHA-256 of the policy file's bytes."""


class ConsumerDecision(Record):
    """The consumer's decision on one run: QUALIFIED or REJECTED, who decided under what, and why."""

    kind: Literal["consumer-decision"] = "consumer-decision"
    """The document kind: a fixed value that tells this document from every other."""
    version: Literal[2] = 2
    """The version of this document's format."""
    decision: Literal["QUALIFIED", "REJECTED"]
    """QUALIFIED only when the whole chain verified under the policy."""
    # release-gate: GitHub mode, main's live head compared; local-check: a local keyring, no remote observed;
    # audit: a historical run, no candidate files, no head of main.
    mode: Literal["release-gate", "local-check", "audit"]
    """What was decided: a release gate, a local check, or an audit of a historical run."""
    trust_mode: TrustMode
    """The trust mode the policy sets."""
    policy: PolicyRef
    """The policy the decision was made under."""
    tool_version: ShortText
    """The version of desktop-qualify that decided."""
    candidate_sha: GitSha | None
    """The commit the evidence qualifies; None when no statement verified."""
    run_id: ShortText | None
    """The run the evidence came from; None when no statement verified."""
    attempt: int | None
    """That run's attempt; None when no statement verified."""
    checked_at: Timestamp
    """When the decision was made (UTC)."""
    signers: list[Signer] = Field(max_length=MAX_LIST)
    """Every verified statement's signer, platform statements first, then the aggregate."""
    rows: list[DecisionRow] = Field(max_length=MAX_LIST)
    """The decision table: one row per required platform."""
    reasons: list[Reason] = Field(max_length=MAX_LIST)
    """Why the run was rejected, each root cause followed by its consequences; empty when QUALIFIED."""
    notes: list[Excerpt] = Field(default_factory=list, max_length=32)
    """What was not observed, and other remarks for people."""


class AuditTotals(LateRecord):
    """The audit's overall line: folders checked, distinct runs among them, and how each folder ended."""

    folders: Count
    """How many evidence folders (or bundles) were checked."""
    runs: Count
    """How many distinct runs they hold (a folder whose run is unknown counts as one)."""
    qualified: Count
    """How many runs qualified in every folder that holds them."""
    rejected: Count
    """How many runs did not."""


# The checks of one platform, in the chain's order. ``statement``: the statement's signature, its identity
# claims and its commit (every platform-scoped reason no stage column names); ``signature``: the detached
# artifact signature and the producer's read-back of it; ``os-signing``: the OS code-signing state.
Check = Literal["statement", "gate", "build", "signature", "os-signing", "install", "probe", "journey", "candidate"]


class CheckCell(LateRecord):
    """One platform's cell for one check: its outcome, what the verified evidence shows, the codes that fail it."""

    check: Check
    """Which check of the chain."""
    outcome: Cell
    """The check's outcome on this platform."""
    observed: Text
    """What the verified evidence shows for this check, for people."""
    codes: list[Code] = Field(max_length=MAX_LIST)
    """The codes of the reasons that fail this check."""


class StepCell(LateRecord):
    """One journey step on one platform, judged against the policy by the verifier's own rule.

    ``expected`` is the policy's requirement (None for a step the policy does not require: the app never
    states expectations); ``observed`` is None when the step was not reported.
    """

    id: StepId
    """The step's id."""
    required: bool
    """Whether the policy requires the step."""
    expected: Literal["allow", "reject"] | None
    """The outcome the policy requires; None for a step it does not require."""
    expected_code: AppCode | None
    """The refusal code the policy requires, for a step that must be refused."""
    observed: Literal["allow", "reject", "error"] | None
    """The outcome the app reported; None when the step was not reported."""
    observed_code: AppCode | None
    """The refusal code the app reported."""
    outcome: Cell
    """The step's outcome under the verifier's rule."""
    problem: Text | None = None
    """Why the step fails, when it does."""


# The update journey's steps by what they show: the previous release, the upgrade, the user state kept across it,
# the rollback, the downgrade rule (``journey``: the journey as a whole, when there is none or it is not asked for).
UpdatePart = Literal["previous", "upgrade", "state", "rollback", "downgrade", "journey"]


class UpdateStepCell(LateRecord):
    """One step of a platform's update journey, judged by the verifier's own rule from the step's facts."""

    step: ShortText
    """The step's name (previous-release, previous-install, write-state, upgrade-install, upgrade-check,
    upgrade-probe, rollback-install, rollback-check, downgrade-check; update-journey for the journey itself)."""
    part: UpdatePart
    """What the step shows: the previous release, the upgrade, the state kept, the rollback or the downgrade rule."""
    outcome: Cell
    """The step's outcome under the verifier's rule (never the record's own ``passed``)."""
    observed: Text
    """What the verified record shows for the step, for people."""
    problem: Text | None = None
    """Why the step fails, when it does."""


class PlatformChecks(LateRecord):
    """One platform's column of a run's matrix, from its verified statement only."""

    platform: Platform | ShortText
    """The platform this column is for."""
    produced_at: Timestamp | None
    """When its statement was made; None without a verified statement."""
    artifact: ArtifactRef | None
    """The artifact its statement qualified; None without a verified statement."""
    checks: list[CheckCell] = Field(max_length=16)
    """Each check's cell, in the chain's order."""
    steps: list[StepCell] = Field(max_length=MAX_LIST)
    """Each journey step's cell."""
    update: list[UpdateStepCell] = Field(default_factory=list, max_length=16)
    """The update journey's steps, when the policy asks for one or the statement carries one."""


class AuditRun(LateRecord):
    """One audited run: where it came from, when and by what it ran, its matrix, and the decision on it."""

    evidence: Text
    """The evidence folder or bundle that was checked, as given."""
    # When the run happened, as its verified statements say (the aggregate's time, else the earliest
    # platform statement's); None when no statement verified.
    run_at: Timestamp | None
    """When the run happened, as its verified statements say; None when none verified."""
    # The producer run as its verified statements name it (the aggregate's, else the first platform's).
    identity: RunIdentity | None
    """The run as its verified statements name it; None when none verified."""
    # The policy digest the aggregate job recorded (None without a verified aggregate).
    evidence_policy_sha256: Sha256Hex | None
    """The policy digest the aggregate job recorded; None without a verified aggregate."""
    platforms: list[PlatformChecks] = Field(max_length=8)
    """The run's matrix: one column per platform."""
    decision: ConsumerDecision
    """The decision on the run, as the consumer writes it."""
    # Rebuild attestations (qualify audit --rebuild) whose commit, run and artifact are this run's: shown beside
    # it, signed by their rebuilder's key; they never change the decision.
    rebuilds: list[RebuildSeen] = Field(default_factory=list, max_length=MAX_LIST)
    """Rebuild attestations naming this run's commit, run and artifact, shown beside it (never deciding)."""


class AuditReport(LateRecord):
    """The auditor's offline check of one or more historical runs, sorted by run time."""

    kind: Literal["audit-report"] = "audit-report"
    """The document kind: a fixed value that tells this document from every other."""
    version: Literal[3] = 3
    """The version of this document's format."""
    decision: Literal["QUALIFIED", "REJECTED"]
    """QUALIFIED only when runs were checked and every one of them qualified."""
    trust_mode: TrustMode
    """The trust mode the auditor's policy sets."""
    policy: PolicyRef
    """The auditor's policy."""
    tool_version: ShortText
    """The version of desktop-qualify that audited."""
    checked_at: Timestamp
    """When the audit ran (UTC)."""
    totals: AuditTotals
    """The audit's overall counts."""
    runs: list[AuditRun] = Field(max_length=MAX_AUDIT_RUNS)
    """Each folder's run, sorted by run time."""
    notes: list[Excerpt] = Field(default_factory=list, max_length=MAX_AUDIT_RUNS)
    """Remarks for people, such as a run found in more than one folder."""
