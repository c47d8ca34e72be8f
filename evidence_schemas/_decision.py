"""Outputs of the consumer: the release gate's decision (DESIGN.md section 7)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ._errors import Code
from ._limits import MAX_LIST
from ._types import Excerpt, FileName, GitSha, Platform, Record, Sha256Hex, ShortText, Text, Timestamp


class Reason(Record):
    code: Code
    message: Text
    platform: Platform | None = None


Cell = Literal["pass", "fail", "missing"]


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


class ConsumerDecision(Record):
    kind: Literal["consumer-decision"] = "consumer-decision"
    version: Literal[1] = 1
    decision: Literal["QUALIFIED", "REJECTED"]
    mode: Literal["release-gate", "audit"]
    policy_sha256: Sha256Hex
    candidate_sha: GitSha | None
    run_id: ShortText | None
    attempt: int | None
    checked_at: Timestamp
    rows: list[DecisionRow] = Field(max_length=MAX_LIST)
    reasons: list[Reason] = Field(max_length=MAX_LIST)
    notes: list[Excerpt] = Field(default_factory=list, max_length=32)


class AuditReport(Record):
    """The auditor's offline check of one or more historical runs."""

    kind: Literal["audit-report"] = "audit-report"
    version: Literal[1] = 1
    policy_sha256: Sha256Hex
    checked_at: Timestamp
    runs: list[ConsumerDecision] = Field(max_length=MAX_LIST)
    evidence: list[Text] = Field(max_length=MAX_LIST)
