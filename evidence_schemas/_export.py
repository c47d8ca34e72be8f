"""JSON Schema export: the committed schemas/ folder is generated from the models."""

from __future__ import annotations

import json

from pydantic import BaseModel

from ._app_contract import AppJourneyRecord, AppProbeRecord, BuildInfo
from ._bundle import BundleManifest
from ._decision import AuditReport, ConsumerDecision
from ._field_docs import DescribedFields
from ._provenance import ProvenanceStatement
from ._rebuild import RebuildStatement
from ._records import (
    BuildRecord,
    InstallRecord,
    JourneyRecord,
    LaunchProbeRecord,
    SignatureRecord,
    SourceGateRecord,
)
from ._statement import AggregateStatement, DsseEnvelope, PlatformStatement
from ._unsigned_run import UnsignedRun
from ._update import AppStateRecord, UpdateRecord
from ._vsa import VsaStatement

SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "dsse-envelope": DsseEnvelope,
    "platform-statement": PlatformStatement,
    "aggregate-statement": AggregateStatement,
    "provenance-statement": ProvenanceStatement,
    "consumer-decision": ConsumerDecision,
    "audit-report": AuditReport,
    "bundle-manifest": BundleManifest,
    "source-gate-record": SourceGateRecord,
    "build-record": BuildRecord,
    "signature-record": SignatureRecord,
    "install-record": InstallRecord,
    "launch-probe-record": LaunchProbeRecord,
    "journey-record": JourneyRecord,
    # qualify rebuild --attest: the rebuilder's signed statement.
    "rebuild-statement": RebuildStatement,
    "update-record": UpdateRecord,
    # The app contract (docs/app-contract.md): what an app reads and writes.
    "app-build-info": BuildInfo,
    "app-probe-record": AppProbeRecord,
    "app-journey-record": AppJourneyRecord,
    # The release gate's SLSA Verification Summary Attestation (qualify verify --vsa).
    "verification-summary": VsaStatement,
    "app-state-record": AppStateRecord,
    # GitHub mode: the run job's unsigned record, which the signing job checks again and signs from.
    "unsigned-run": UnsignedRun,
}


def render_schemas() -> dict[str, bytes]:
    """File name -> exact bytes of each exported schema (stable, sorted keys)."""
    rendered = {}
    for name, model in SCHEMA_MODELS.items():
        schema = model.model_json_schema(by_alias=True, mode="validation", schema_generator=DescribedFields)
        schema["$id"] = f"https://desktop-qualify.invalid/schemas/{name}.schema.json"
        text = json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=True) + "\n"
        rendered[f"{name}.schema.json"] = text.encode("ascii")
    return rendered
