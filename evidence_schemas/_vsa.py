"""SLSA Verification Summary Attestation v1: what the release gate signs about each artifact it judged.

The statement follows https://slsa.dev/spec/v1.1/verification_summary: the
verifier, when it checked, the resource, the policy (URI and digest), the
statements it verified (by digest), the result, and the levels it verified.
The levels are this project's own names: the gate assesses its policy, not a
SLSA build track, so it never claims a ``SLSA_*`` level.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from desktop_qualify.qualify_errors import Code, QualificationError
from pydantic import Field

from ._bounded import load_json
from ._parse import validate_model
from ._statement import DigestSet, Subject, _StatementHead
from ._types import FileName, Record, ShortText, Text, Timestamp

VsaPredicateType = Literal["https://slsa.dev/verification_summary/v1"]
VSA_PREDICATE_TYPE: Final[VsaPredicateType] = "https://slsa.dev/verification_summary/v1"
# Who verified: this tool, named by a URI of the project's; its version is in ``verifier.version``.
VSA_VERIFIER_ID = "https://desktop-qualify.invalid/verifier/qualify"
VsaResult = Literal["PASSED", "FAILED"]
# The project's level per way of judging (consumer-decision ``mode``): what a PASSED summary asserts.
VsaLevel = Literal["DESKTOP_QUALIFIED_RELEASE_GATE", "DESKTOP_QUALIFIED_LOCAL_CHECK", "DESKTOP_QUALIFIED_AUDIT"]
VSA_LEVELS: Final[dict[str, VsaLevel]] = {
    "release-gate": "DESKTOP_QUALIFIED_RELEASE_GATE",
    "local-check": "DESKTOP_QUALIFIED_LOCAL_CHECK",
    "audit": "DESKTOP_QUALIFIED_AUDIT",
}
# A summary names the platform statements of one run and its aggregate: a handful, never thousands.
MAX_VSA_INPUTS = 16


class VsaVerifier(Record):
    id: Text
    # SLSA v1.1's ``verifier.version``: component -> version.
    version: dict[ShortText, ShortText] = Field(min_length=1, max_length=4)


class VsaPolicy(Record):
    uri: Text
    digest: DigestSet


class VsaInput(Record):
    """One statement the gate verified: its file name (a relative URI) and the SHA-256 of its signed bytes."""

    uri: FileName
    digest: DigestSet


class VsaPredicate(Record):
    verifier: VsaVerifier
    timeVerified: Timestamp  # noqa: N815 - SLSA field name
    resourceUri: Text  # noqa: N815
    policy: VsaPolicy
    inputAttestations: list[VsaInput] = Field(max_length=MAX_VSA_INPUTS)  # noqa: N815
    verificationResult: VsaResult  # noqa: N815
    verifiedLevels: list[VsaLevel] = Field(max_length=len(VSA_LEVELS))  # noqa: N815


class VsaStatement(_StatementHead):
    """One artifact's summary: exactly one subject, the artifact the gate judged."""

    subject: Annotated[list[Subject], Field(min_length=1, max_length=1)]
    predicateType: VsaPredicateType  # noqa: N815
    predicate: VsaPredicate

    @property
    def artifact(self) -> Subject:
        return self.subject[0]


def parse_vsa_statement(payload: bytes, *, what: str) -> VsaStatement:
    """Validate signed payload bytes as a one-subject VSA; any other statement is the wrong kind, not a bad shape."""
    value = load_json(payload, what=what)
    predicate_type = value.get("predicateType") if isinstance(value, dict) else None
    if predicate_type != VSA_PREDICATE_TYPE:
        raise QualificationError(Code.PREDICATE_TYPE_UNKNOWN, f"{what}: predicate type {repr(predicate_type)[:100]} "
                                                              f"is not {VSA_PREDICATE_TYPE}")
    return validate_model(VsaStatement, value, what=what)
