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
    """Who verified: this tool, and its version."""

    id: Text
    """The verifier's URI (this tool)."""
    # SLSA v1.1's ``verifier.version``: component -> version.
    version: dict[ShortText, ShortText] = Field(min_length=1, max_length=4)
    """Component -> version (SLSA v1.1's verifier.version)."""


class VsaPolicy(Record):
    """The policy the gate judged under: its URI (at its commit where known) and its SHA-256."""

    uri: Text
    """The committed policy's URI."""
    digest: DigestSet
    """The SHA-256 of the policy file's bytes."""


class VsaInput(Record):
    """One statement the gate verified: its file name (a relative URI) and the SHA-256 of its signed bytes."""

    uri: FileName
    """The statement's file name."""
    digest: DigestSet
    """The SHA-256 of the statement's signed bytes."""


class VsaPredicate(Record):
    """SLSA Verification Summary v1: what the gate verified, under which policy, and its result."""

    verifier: VsaVerifier
    """Who verified."""
    timeVerified: Timestamp  # noqa: N815 - SLSA field name
    """When the gate verified (UTC)."""
    resourceUri: Text  # noqa: N815
    """The artifact's name, or the release asset's URL in GitHub mode."""
    policy: VsaPolicy
    """The policy the gate judged under."""
    inputAttestations: list[VsaInput] = Field(max_length=MAX_VSA_INPUTS)  # noqa: N815
    """Every statement the gate verified, by the digest of its signed bytes."""
    verificationResult: VsaResult  # noqa: N815
    """PASSED or FAILED: the gate's decision on this artifact."""
    verifiedLevels: list[VsaLevel] = Field(max_length=len(VSA_LEVELS))  # noqa: N815
    """The project's own level names the gate asserts (empty when FAILED)."""


class VsaStatement(_StatementHead):
    """One artifact's summary: exactly one subject, the artifact the gate judged."""

    subject: Annotated[list[Subject], Field(min_length=1, max_length=1)]
    predicateType: VsaPredicateType  # noqa: N815
    predicate: VsaPredicate
    """The verification summary."""

    @property
    def artifact(self) -> Subject:
        """The one subject: the artifact the gate judged."""
        return self.subject[0]


def parse_vsa_statement(payload: bytes, *, what: str) -> VsaStatement:
    """Validate signed payload bytes as a one-subject VSA; any other statement is the wrong kind, not a bad shape."""
    value = load_json(payload, what=what)
    predicate_type = value.get("predicateType") if isinstance(value, dict) else None
    if predicate_type != VSA_PREDICATE_TYPE:
        raise QualificationError(Code.PREDICATE_TYPE_UNKNOWN, f"{what}: predicate type {repr(predicate_type)[:100]} "
                                                              f"is not {VSA_PREDICATE_TYPE}")
    # A level the project never writes is a summary of another kind of verdict, named as such (not a bad shape).
    predicate = value.get("predicate")
    levels = predicate.get("verifiedLevels") if isinstance(predicate, dict) else None
    if isinstance(levels, list):
        foreign = [level for level in levels if level not in VSA_LEVELS.values()]
        if foreign:
            raise QualificationError(Code.VSA_LEVEL, f"{what}: verifiedLevels names {repr(foreign[0])[:100]}, a "
                                                     "level this project never writes (it writes "
                                                     f"{', '.join(VSA_LEVELS.values())})")
    return validate_model(VsaStatement, value, what=what)
