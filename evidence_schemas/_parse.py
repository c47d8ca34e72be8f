"""From untrusted bytes to validated models, each failure with its stable code.

These functions validate shape only. Whether the bytes are signed by a trusted
key is the trust layer's question and is asked first (qualify_trust).
"""

from __future__ import annotations

from typing import Any, TypeVar

from desktop_qualify.qualify_errors import Code, QualificationError
from pydantic import BaseModel, ValidationError

from ._bounded import load_json
from ._provenance import SLSA_PROVENANCE_PREDICATE_TYPE, ProvenanceStatement
from ._statement import (
    AGGREGATE_PREDICATE_TYPE,
    PLATFORM_PREDICATE_TYPE,
    AggregateStatement,
    DsseEnvelope,
    PlatformStatement,
)

M = TypeVar("M", bound=BaseModel)

_STATEMENT_MODELS: dict[str, type[PlatformStatement] | type[AggregateStatement] | type[ProvenanceStatement]] = {
    PLATFORM_PREDICATE_TYPE: PlatformStatement,
    AGGREGATE_PREDICATE_TYPE: AggregateStatement,
    SLSA_PROVENANCE_PREDICATE_TYPE: ProvenanceStatement,
}


def _describe(exc: ValidationError) -> str:
    """The first few validation errors, bounded: never echo a whole hostile input."""
    parts = []
    for error in exc.errors()[:3]:
        location = ".".join(str(item) for item in error["loc"])[:120]
        parts.append(f"{location or '<root>'}: {error['msg'][:120]}")
    more = exc.error_count() - len(parts)
    suffix = f" (+{more} more)" if more > 0 else ""
    return "; ".join(parts) + suffix


def validate_model(model: type[M], value: Any, *, what: str) -> M:
    """``value`` validated as ``model``; a failure is QE_SCHEMA_INVALID naming ``what`` and the fields at fault."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise QualificationError(Code.SCHEMA_INVALID, f"{what}: {_describe(exc)}") from exc


def parse_envelope(data: bytes, *, what: str) -> DsseEnvelope:
    """A DSSE envelope from untrusted bytes, bounded; one with no signature is QE_SIGNATURE_MISSING."""
    value = load_json(data, what=what)
    # An envelope without signatures is unsigned evidence, not merely a bad shape.
    if isinstance(value, dict) and value.get("signatures", []) == []:
        raise QualificationError(Code.SIGNATURE_MISSING, f"{what}: the envelope carries no signature")
    return validate_model(DsseEnvelope, value, what=what)


def parse_statement(payload: bytes, *, what: str) -> PlatformStatement | AggregateStatement | ProvenanceStatement:
    """Validate signed payload bytes as a statement of a known predicate type."""
    value = load_json(payload, what=what)
    if not isinstance(value, dict):
        raise QualificationError(Code.SCHEMA_INVALID, f"{what}: a statement must be a JSON object")
    predicate_type = value.get("predicateType")
    model = _STATEMENT_MODELS.get(predicate_type) if isinstance(predicate_type, str) else None
    if model is None:
        shown = repr(predicate_type)[:100]
        raise QualificationError(Code.PREDICATE_TYPE_UNKNOWN, f"{what}: predicate type {shown} is not known")
    return validate_model(model, value, what=what)
