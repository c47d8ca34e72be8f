"""The provenance each producer job signs is SLSA Provenance v1 as the in-toto attestation framework defines it.

Checked with the framework's own package (in-toto-attestation), not with this
project's models: both modes' statements validate, and a departure from the
published shape (a misspelt field, a wrong type, a subject without a digest,
another predicate type) is refused by it, so the check can fail.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import (
    PROVENANCE_BUILD_TYPE,
    PlatformPredicate,
    canonical_bytes,
    provenance_statement,
)
from google.protobuf.json_format import ParseError
from support.evidence_factory import make_evidence
from support.slsa_format import check_slsa_provenance


def _local_payload(tmp_path: Path) -> bytes:
    ev = make_evidence(tmp_path)
    envelope = json.loads(ev.provenance_file(ev.platforms[0].spec.platform).read_bytes())
    return base64.b64decode(envelope["payload"])


def _github_payload(tmp_path: Path) -> bytes:
    ev = make_evidence(tmp_path)
    predicate = ev.platforms[0].predicate
    assert predicate is not None
    data = predicate.model_dump(mode="json")
    data["run"].update(mode="github", repository="acme/desktop", run_id="4242", trigger="push",
                       runner_environment="github-hosted")
    statement = provenance_statement(
        PlatformPredicate.model_validate(data), statement_name="platform-linux.sigstore.json",
        statement_sha256="1" * 64, policy_path="policies/release.toml", policy_sha256="2" * 64,
        builder_id="https://github.com/acme/desktop/.github/workflows/produce-linux.yml@refs/heads/main")
    return canonical_bytes(statement)


@pytest.mark.parametrize("make", [_local_payload, _github_payload], ids=["local", "github"])
def test_the_provenance_is_slsa_provenance_v1(make: Any, tmp_path: Path) -> None:
    payload = make(tmp_path)
    provenance = check_slsa_provenance(payload)
    assert provenance.build_definition.build_type == PROVENANCE_BUILD_TYPE
    assert provenance.run_details.metadata.invocation_id.endswith("/attempts/1")
    assert provenance.build_definition.resolved_dependencies[0].digest["gitCommit"]


def test_the_github_mode_provenance_names_the_signer_workflow_and_the_run(tmp_path: Path) -> None:
    provenance = check_slsa_provenance(_github_payload(tmp_path))
    assert provenance.run_details.builder.id.endswith("/.github/workflows/produce-linux.yml@refs/heads/main")
    assert provenance.run_details.metadata.invocation_id == \
        "https://github.com/acme/desktop/actions/runs/4242/attempts/1"
    assert provenance.build_definition.resolved_dependencies[0].uri.startswith(
        "git+https://github.com/acme/desktop@refs/heads/main")


def _spoiled(payload: bytes, spoil: Any) -> bytes:
    document = json.loads(payload)
    spoil(document)
    return json.dumps(document).encode()


SPOILERS = {
    "misspelt-field": lambda d: d["predicate"].update(buildDefinitions=d["predicate"].pop("buildDefinition")),
    "builder-id-not-a-string": lambda d: d["predicate"]["runDetails"]["builder"].update(id=7),
    "subject-without-digest": lambda d: d["subject"][0].pop("digest"),
    "no-subject": lambda d: d.update(subject=[]),
    "other-predicate-type": lambda d: d.update(predicateType="https://slsa.dev/provenance/v0.2"),
    "no-builder-id": lambda d: d["predicate"]["runDetails"]["builder"].pop("id"),
    "statement-v0-1": lambda d: d.update(_type="https://in-toto.io/Statement/v0.1"),
}


@pytest.mark.parametrize("name", sorted(SPOILERS))
def test_the_frameworks_definitions_refuse_a_departure(name: str, tmp_path: Path) -> None:
    with pytest.raises((ParseError, ValueError)):
        check_slsa_provenance(_spoiled(_local_payload(tmp_path), SPOILERS[name]))
