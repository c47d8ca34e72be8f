"""Evidence data: models, bounds, bounded loading, canonical JSON, schema export.

Pure data by design (DESIGN.md section 6): no cryptography and no network.
"""

from ._bounded import load_json, read_bounded
from ._canonical import canonical_bytes, sha256_hex
from ._decision import AuditReport, Cell, ConsumerDecision, DecisionRow, Reason
from ._errors import Code, QualificationError
from ._export import SCHEMA_MODELS, export_schemas, render_schemas
from ._io import append_text, file_sha256, utc_now, write_atomic
from ._limits import JsonBounds
from ._naming import archive_suffix, artifact_file_name, executable_path
from ._parse import parse_envelope, parse_statement, validate_model
from ._predicates import AggregatedPlatform, AggregatePredicate, PlatformPredicate, RunIdentity
from ._records import (
    ArtifactRef,
    BuildRecord,
    InstalledFile,
    InstallRecord,
    IsolationLayer,
    JourneyRecord,
    JourneyStep,
    LaunchProbeRecord,
    Observation,
    ProbeReport,
    SignatureRecord,
    SourceGateRecord,
)
from ._statement import (
    AGGREGATE_PREDICATE_TYPE,
    IN_TOTO_PAYLOAD_TYPE,
    IN_TOTO_STATEMENT_TYPE,
    PLATFORM_PREDICATE_TYPE,
    PREDICATE_PREFIX,
    AggregateStatement,
    DigestSet,
    DsseEnvelope,
    DsseSignature,
    PlatformStatement,
    Subject,
)
from ._types import GIT_SHA_PATTERN, PLATFORMS, ErrnoName, GitSha, LayerName, Platform, Record, Sha256Hex

__all__ = [
    "AGGREGATE_PREDICATE_TYPE",
    "IN_TOTO_PAYLOAD_TYPE",
    "IN_TOTO_STATEMENT_TYPE",
    "GIT_SHA_PATTERN",
    "ErrnoName",
    "GitSha",
    "LayerName",
    "Record",
    "Sha256Hex",
    "PLATFORMS",
    "PLATFORM_PREDICATE_TYPE",
    "PREDICATE_PREFIX",
    "SCHEMA_MODELS",
    "AggregatePredicate",
    "AggregateStatement",
    "AggregatedPlatform",
    "ArtifactRef",
    "AuditReport",
    "BuildRecord",
    "Cell",
    "Code",
    "ConsumerDecision",
    "DecisionRow",
    "DigestSet",
    "DsseEnvelope",
    "DsseSignature",
    "InstallRecord",
    "InstalledFile",
    "IsolationLayer",
    "JourneyRecord",
    "JourneyStep",
    "JsonBounds",
    "LaunchProbeRecord",
    "Observation",
    "Platform",
    "PlatformPredicate",
    "PlatformStatement",
    "ProbeReport",
    "QualificationError",
    "Reason",
    "RunIdentity",
    "SignatureRecord",
    "SourceGateRecord",
    "Subject",
    "canonical_bytes",
    "export_schemas",
    "load_json",
    "parse_envelope",
    "parse_statement",
    "read_bounded",
    "render_schemas",
    "sha256_hex",
    "validate_model",
    "write_atomic",
    "append_text",
    "archive_suffix",
    "artifact_file_name",
    "executable_path",
    "file_sha256",
    "utc_now",
]
