"""qualify_verify/_provenance_checks.py, ``differing_fields``: a provenance that departs from the one rebuilt from its
platform statement is named by the dotted path of every differing field, list entries by their index
(``subject.0.name``, ``subject.1.digest.sha256``), so the auditor's message points at the entry that differs; an
identical provenance differs nowhere, and the policy's path (the producer's word) is never named. Written for the
mutants of the module that survived the verifier's tests (docs/mutation.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop_qualify.evidence_schemas import ProvenanceStatement, provenance_statement
from desktop_qualify.qualify_verify._provenance_checks import differing_fields
from support.evidence_factory import make_evidence

BUILDER = "https://github.com/acme/desktop/.github/workflows/produce-linux.yml@refs/heads/main"


def _expected(tmp_path: Path) -> ProvenanceStatement:
    ev = make_evidence(tmp_path, platforms=["linux"])
    predicate = ev.platforms[0].predicate
    assert predicate is not None
    return provenance_statement(predicate, statement_name="platform-linux.dsse.json", statement_sha256="1" * 64,
                                policy_path="policies/release.toml", policy_sha256="2" * 64, builder_id=BUILDER)


def _edited(statement: ProvenanceStatement, edit: Callable[[dict[str, Any]], None]) -> ProvenanceStatement:
    data = statement.model_dump(mode="json", by_alias=True)
    edit(data)
    return ProvenanceStatement.model_validate(data)


def test_the_rebuilt_provenance_differs_nowhere(tmp_path: Path) -> None:
    expected = _expected(tmp_path)
    assert differing_fields(expected, _edited(expected, lambda data: None)) == []


def test_a_subject_of_another_name_is_named_by_its_index(tmp_path: Path) -> None:
    expected = _expected(tmp_path)

    def rename(data: dict[str, Any]) -> None:
        data["subject"][0]["name"] = "other-linux.tar.gz"

    assert differing_fields(expected, _edited(expected, rename)) == ["subject.0.name"]


def test_a_second_subject_is_named_entry_by_entry_at_index_1(tmp_path: Path) -> None:
    expected = _expected(tmp_path)

    def add(data: dict[str, Any]) -> None:
        data["subject"].append({"name": "extra.tar.gz", "digest": {"sha256": "3" * 64}})

    got = _edited(expected, add)
    assert differing_fields(expected, got) == ["subject.1.digest.sha256", "subject.1.name"]
    assert differing_fields(got, expected) == ["subject.1.digest.sha256", "subject.1.name"]


def test_another_commit_and_byproduct_digest_are_named_by_their_index(tmp_path: Path) -> None:
    expected = _expected(tmp_path)

    def spoil(data: dict[str, Any]) -> None:
        data["predicate"]["buildDefinition"]["resolvedDependencies"][0]["digest"]["gitCommit"] = "d" * 40
        data["predicate"]["runDetails"]["byproducts"][0]["digest"]["sha256"] = "e" * 64

    assert differing_fields(expected, _edited(expected, spoil)) == [
        "predicate.buildDefinition.resolvedDependencies.0.digest.gitCommit",
        "predicate.runDetails.byproducts.0.digest.sha256",
    ]


def test_the_policy_path_alone_is_never_named(tmp_path: Path) -> None:
    expected = _expected(tmp_path)

    def move(data: dict[str, Any]) -> None:
        data["predicate"]["buildDefinition"]["externalParameters"]["policy"]["path"] = "elsewhere/release.toml"

    assert differing_fields(expected, _edited(expected, move)) == []
