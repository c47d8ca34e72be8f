"""The SLSA provenance checked by the in-toto attestation framework's own definitions (in-toto-attestation).

The package's protobuf messages are the framework's published shapes: a strict
JSON parse into them refuses an unknown or misspelt field and a value of the
wrong type, and its ``Statement.validate`` holds the statement layer's rules
(the statement type, at least one subject, a digest on every subject, a
predicate type and a predicate). Used on factory evidence and on the real
chain's provenance.
"""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import json_format
from in_toto_attestation.predicates.provenance.v1 import provenance_pb2
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
from in_toto_attestation.v1.statement import Statement

SLSA_PROVENANCE_V1 = "https://slsa.dev/provenance/v1"


def check_slsa_provenance(payload: bytes) -> Any:
    """Parse ``payload`` as an in-toto v1 statement of SLSA Provenance v1, strictly; raise on any departure.

    Returns the parsed provenance message."""
    document = json.loads(payload)
    statement = Statement.copy_from_pb(json_format.Parse(payload.decode("utf-8"), statement_pb2.Statement()))
    statement.validate()
    if statement.pb.predicate_type != SLSA_PROVENANCE_V1:
        raise ValueError(f"predicate type {statement.pb.predicate_type!r}")
    provenance = json_format.ParseDict(document["predicate"], provenance_pb2.Provenance())
    definition, details = provenance.build_definition, provenance.run_details
    # SLSA v1's required fields: buildDefinition.buildType and externalParameters, runDetails.builder.id.
    if not definition.build_type or not definition.external_parameters or not details.builder.id:
        raise ValueError("buildType, externalParameters and builder.id are required")
    for dependency in [*definition.resolved_dependencies, *details.byproducts]:
        ResourceDescriptor.copy_from_pb(dependency).validate()
    return provenance
