"""Evidence data: models, bounds, bounded loading, canonical JSON, schema export.

Pure data by design (DESIGN.md section 6): no cryptography and no network.
"""

from typing import TYPE_CHECKING

from desktop_qualify.qualify_runtime import lazy_attributes

from ._bounded import load_json, open_regular, read_bounded
from ._bundle import MAX_BUNDLE_MEMBERS, BundleFile, BundleManifest, BundlePath
from ._canonical import canonical_bytes, sha256_hex
from ._decision import (
    AuditReport,
    AuditRun,
    AuditTotals,
    Cell,
    Check,
    CheckCell,
    ConsumerDecision,
    DecisionRow,
    PlatformChecks,
    PolicyRef,
    Reason,
    Signer,
    StepCell,
)
from ._errors import Code, QualificationError
from ._limits import (
    MAX_APP_OUTPUT_BYTES,
    MAX_KEYRING_BYTES,
    MAX_LIST,
    MAX_POLICY_BYTES,
    MAX_SIGSTORE_BUNDLE_BYTES,
    JsonBounds,
)
from ._naming import (
    STATEMENT_SUFFIXES,
    aggregate_file_name,
    archive_suffix,
    artifact_file_name,
    executable_path,
    is_evidence_file_name,
    platform_file_name,
)
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
    NotarizationRecord,
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
from ._types import (
    GIT_SHA_PATTERN,
    PLATFORMS,
    ErrnoName,
    GitSha,
    LayerName,
    Platform,
    Record,
    Sha256Hex,
    TrustMode,
    utc_now,
)

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
    "TrustMode",
    "PLATFORMS",
    "PLATFORM_PREDICATE_TYPE",
    "PREDICATE_PREFIX",
    "SCHEMA_MODELS",
    "AggregatePredicate",
    "BundleFile",
    "BundleManifest",
    "BundlePath",
    "MAX_BUNDLE_MEMBERS",
    "STATEMENT_SUFFIXES",
    "AggregateStatement",
    "AggregatedPlatform",
    "ArtifactRef",
    "AuditReport",
    "AuditRun",
    "AuditTotals",
    "BuildRecord",
    "Cell",
    "Check",
    "CheckCell",
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
    "MAX_APP_OUTPUT_BYTES",
    "MAX_KEYRING_BYTES",
    "MAX_LIST",
    "MAX_POLICY_BYTES",
    "MAX_SIGSTORE_BUNDLE_BYTES",
    "LaunchProbeRecord",
    "Observation",
    "Platform",
    "PlatformChecks",
    "PlatformPredicate",
    "PlatformStatement",
    "ProbeReport",
    "PolicyRef",
    "QualificationError",
    "Reason",
    "RunIdentity",
    "NotarizationRecord",
    "SignatureRecord",
    "Signer",
    "SourceGateRecord",
    "StepCell",
    "Subject",
    "canonical_bytes",
    "load_json",
    "parse_envelope",
    "parse_statement",
    "open_regular",
    "read_bounded",
    "render_schemas",
    "sha256_hex",
    "validate_model",
    "aggregate_file_name",
    "archive_suffix",
    "platform_file_name",
    "is_evidence_file_name",
    "artifact_file_name",
    "executable_path",
    "utc_now",
]

if TYPE_CHECKING:
    from ._export import SCHEMA_MODELS, render_schemas

# The JSON Schema export is for `qualify schemas` and the tests: a verify never builds a schema document.
__getattr__ = lazy_attributes(__name__, {"SCHEMA_MODELS": "._export", "render_schemas": "._export"})
