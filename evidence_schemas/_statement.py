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
    sha256: Sha256Hex


class Subject(Record):
    name: FileName
    digest: DigestSet


class DsseSignature(Record):
    keyid: KeyId
    sig: Annotated[Base64, Field(min_length=1, max_length=512)]


class DsseEnvelope(Record):
    """The local-mode envelope: DSSE JSON with Ed25519 signatures."""

    payloadType: Literal["application/vnd.in-toto+json"]  # noqa: N815 - DSSE field name
    payload: Annotated[Base64, Field(min_length=1, max_length=_MAX_PAYLOAD_B64)]
    signatures: list[DsseSignature] = Field(min_length=1, max_length=4)


class _StatementHead(Record):
    """Fields every statement has; read first so the predicate type picks the model."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)

    type_: InTotoStatementType = Field(alias="_type")
    subject: list[Subject] = Field(min_length=1, max_length=MAX_LIST)
    predicateType: Annotated[str, Field(max_length=256)]  # noqa: N815 - in-toto field name


class PlatformStatement(_StatementHead):
    predicateType: PlatformPredicateType  # noqa: N815
    predicate: PlatformPredicate


class AggregateStatement(_StatementHead):
    predicateType: AggregatePredicateType  # noqa: N815
    predicate: AggregatePredicate
