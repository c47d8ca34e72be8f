"""in-toto Statement v1 and the DSSE envelope that carries it (docs/design.md §4.1)."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field

from ._limits import MAX_LIST, MAX_STATEMENT_BYTES
from ._predicates import AggregatePredicate, PlatformPredicate
from ._types import FileName, KeyId, Record, Sha256Hex

# Each fixed value once, as the type the models check and as the constant code writes (mypy holds the two equal).
InTotoStatementType = Literal["https://in-toto.io/Statement/v1"]
PlatformPredicateType = Literal["https://desktop-qualify.invalid/evidence/platform-qualification/v2"]
AggregatePredicateType = Literal["https://desktop-qualify.invalid/evidence/aggregate-qualification/v3"]
IN_TOTO_STATEMENT_TYPE: Final[InTotoStatementType] = "https://in-toto.io/Statement/v1"
IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
PREDICATE_PREFIX = "https://desktop-qualify.invalid/evidence/"  # one prefix, a versioned type per kind
PLATFORM_PREDICATE_TYPE: Final[PlatformPredicateType] = (
    "https://desktop-qualify.invalid/evidence/platform-qualification/v2")
AGGREGATE_PREDICATE_TYPE: Final[AggregatePredicateType] = (
    "https://desktop-qualify.invalid/evidence/aggregate-qualification/v3")
KNOWN_PREDICATE_TYPES = frozenset({PLATFORM_PREDICATE_TYPE, AGGREGATE_PREDICATE_TYPE})  # and SLSA provenance

# Base64 of the largest statement we accept, plus slack for padding.
_MAX_PAYLOAD_B64 = (MAX_STATEMENT_BYTES * 4) // 3 + 8
Base64 = Annotated[str, Field(pattern=r"^[A-Za-z0-9+/]*={0,2}$")]


class DigestSet(Record):
    """An in-toto digest set: the subject's digest by algorithm (SHA-256 only)."""

    sha256: Sha256Hex
    """The SHA-256 of the subject's bytes."""


class Subject(Record):
    """An in-toto subject: an artifact the statement is about, by name and digest."""

    name: FileName
    """The artifact's file name."""
    digest: DigestSet
    """The artifact's digest."""


class DsseSignature(Record):
    """One DSSE signature: the signing key's id and the signature over the envelope's payload."""

    keyid: KeyId
    """The signing key's id: the SHA-256 of its raw Ed25519 public key."""
    sig: Annotated[Base64, Field(min_length=1, max_length=512)]
    """The Ed25519 signature over DSSE's pre-authentication encoding of the payload type and payload, base64."""


class DsseEnvelope(Record):
    """The local-mode envelope: DSSE JSON with Ed25519 signatures."""

    payloadType: Literal["application/vnd.in-toto+json"]  # noqa: N815 - DSSE field name
    """The payload's type: an in-toto statement."""
    payload: Annotated[Base64, Field(min_length=1, max_length=_MAX_PAYLOAD_B64)]
    """The signed statement bytes, base64: the verifier parses exactly these, never a re-serialisation."""
    signatures: list[DsseSignature] = Field(min_length=1, max_length=4)
    """The signatures; a verifier accepts exactly one, by a key trusted for the statement's role."""


class _StatementHead(Record):
    """Fields every statement has; read first so the predicate type picks the model."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)

    type_: InTotoStatementType = Field(alias="_type")
    """The in-toto statement type (Statement v1)."""
    subject: list[Subject] = Field(min_length=1, max_length=MAX_LIST)
    """The artifacts the statement is about."""
    predicateType: Annotated[str, Field(max_length=256)]  # noqa: N815 - in-toto field name
    """The predicate's versioned type URI; it picks the model the predicate is read with."""


class PlatformStatement(_StatementHead):
    """A producer job's statement: one platform's qualification of the artifact it names as its subject."""

    predicateType: PlatformPredicateType  # noqa: N815
    """The platform predicate's type URI."""
    predicate: PlatformPredicate
    """The run, the platform, and the records of the six stages."""


class AggregateStatement(_StatementHead):
    """The aggregate job's statement: binds the verified platform statements of one run; its subjects are their
    artifacts.
    """

    predicateType: AggregatePredicateType  # noqa: N815
    """The aggregate predicate's type URI."""
    predicate: AggregatePredicate
    """The run, the platforms it requires, and each platform statement it verified."""
