"""qualify_verify/_provenance_checks.py, ``differing_fields``: a provenance that departs from the one rebuilt from its
platform statement is named by the dotted path of every differing field, list entries by their index
(``subject.0.name``, ``subject.1.digest.sha256``), so the auditor's message points at the entry that differs; an
identical provenance differs nowhere, and the policy's path (the producer's word) is never named. Written for the
mutants of the module that survived the verifier's tests (docs/mutation.md).

``verify_provenance`` (checks 1-4) and ``verify_all_provenance``'s strays, with a stand-in verifier: every refusal
is one reason with its exact code, the provenance file's name at the start of its message and the platform it
concerns; a provenance signed by another ed25519 key (even one of the same name) is refused naming both keys by their
first 16 hex characters; at most four differing fields are shown, the rest counted; a provenance that holds is
handed back as parsed; a blocked platform's provenance is passed over without hiding a stray after it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import (
    Code,
    ProvenanceStatement,
    QualificationError,
    canonical_bytes,
    parse_statement,
    provenance_statement,
)
from desktop_qualify.qualify_verify._findings import Findings
from desktop_qualify.qualify_verify._provenance_checks import (
    differing_fields,
    verify_all_provenance,
    verify_provenance,
)
from support.evidence_factory import make_evidence, platform_payload

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


# --- verify_provenance ---------------------------------------------------------------------------------------------

NAME = "provenance-linux.dsse.json"
STATEMENT = "platform-linux.dsse.json"
POLICY_SHA = "2" * 64
KEY_A, KEY_B = "a" * 64, "b" * 64


def _signer(keyid: str = KEY_A, name: str = "linux-producer") -> Any:
    return SimpleNamespace(kind="ed25519", keyid=keyid, name=name, builder_id=BUILDER, claims=None)


class _Verifier:
    """Hands back each file as its payload, signed by ``signer``; or refuses it with ``refusal`` (``{what}`` filled)."""

    file_suffix = ".dsse.json"

    def __init__(self, signer: Any, refusal: str | None = None) -> None:
        self.signer, self.refusal = signer, refusal

    def verify_statement(self, data: bytes, *, role: str, what: str) -> Any:
        if self.refusal is not None:
            raise QualificationError(Code.SIGNATURE_INVALID, self.refusal.format(what=what))
        return SimpleNamespace(payload=data, signer=self.signer, payload_sha256=hashlib.sha256(data).hexdigest())

    def check_speaks_for(self, signer: Any, platform: str) -> None:
        return None


def _platform(tmp_path: Path) -> Any:
    ev = make_evidence(tmp_path, platforms=["linux"])
    predicate = ev.platforms[0].predicate
    assert predicate is not None
    return SimpleNamespace(platform="linux", file_name=STATEMENT, statement=SimpleNamespace(predicate=predicate),
                           signed=SimpleNamespace(signer=_signer(), payload_sha256="1" * 64))


def _provenance(vp: Any, edit: Callable[[dict[str, Any]], None] | None = None) -> bytes:
    statement = provenance_statement(vp.statement.predicate, statement_name=STATEMENT, statement_sha256="1" * 64,
                                     policy_path="policies/release.toml", policy_sha256=POLICY_SHA,
                                     builder_id=BUILDER)
    if edit is None:
        return canonical_bytes(statement)
    data = statement.model_dump(mode="json", by_alias=True)
    edit(data)
    return canonical_bytes(ProvenanceStatement.model_validate(data))


def _run(vp: Any, files: dict[str, bytes], *, verifier: _Verifier | None = None,
         policy_sha256: str = POLICY_SHA) -> tuple[Any, list[tuple[str, str, str | None]]]:
    findings = Findings()
    got = verify_provenance(vp, files, SimpleNamespace(policy_sha256=policy_sha256),  # type: ignore[arg-type]
                            verifier or _Verifier(_signer()), findings)  # type: ignore[arg-type]
    return got, [(r.code.value, r.message, r.platform) for r in findings.reasons]


def test_a_provenance_that_holds_is_handed_back_as_parsed(tmp_path: Path) -> None:
    vp = _platform(tmp_path)
    data = _provenance(vp)
    got, reasons = _run(vp, {NAME: data})
    assert reasons == []
    assert got is not None
    assert got.file_name == NAME
    assert got.statement == parse_statement(data, what=NAME)


def test_an_absent_provenance_is_missing_for_its_platform(tmp_path: Path) -> None:
    got, reasons = _run(_platform(tmp_path), {})
    assert got is None
    assert reasons == [(Code.PROVENANCE_MISSING.value,
                        f"{NAME}: the SLSA provenance of {STATEMENT} is absent", "linux")]


@pytest.mark.parametrize("refusal", ["{what}: the signature does not verify", "the signature does not verify"])
def test_a_refused_signature_names_the_provenance_once_for_its_platform(tmp_path: Path, refusal: str) -> None:
    vp = _platform(tmp_path)
    got, reasons = _run(vp, {NAME: _provenance(vp)}, verifier=_Verifier(_signer(), refusal))
    assert got is None
    assert reasons == [(Code.SIGNATURE_INVALID.value, f"{NAME}: the signature does not verify", "linux")]


def test_a_provenance_that_is_not_json_is_refused_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(QualificationError) as refused:
        parse_statement(b"not json", what=NAME)
    got, reasons = _run(_platform(tmp_path), {NAME: b"not json"})
    assert got is None
    assert reasons == [(refused.value.code.value, refused.value.message, "linux")]
    assert refused.value.message.startswith(f"{NAME}: ")


def test_a_platform_statement_in_place_of_the_provenance_is_a_mismatch(tmp_path: Path) -> None:
    vp = _platform(tmp_path)
    payload = platform_payload(vp.statement.predicate)
    got, reasons = _run(vp, {NAME: payload})
    assert got is None
    kind = parse_statement(payload, what=NAME).predicateType
    assert reasons == [(Code.PROVENANCE_MISMATCH.value, f"{NAME}: carries {kind}, not SLSA provenance v1", "linux")]


def test_a_provenance_by_another_key_of_the_same_name_is_refused_naming_both_keys(tmp_path: Path) -> None:
    vp = _platform(tmp_path)
    got, reasons = _run(vp, {NAME: _provenance(vp)}, verifier=_Verifier(_signer(KEY_B)))
    assert got is None
    assert reasons == [(Code.PROVENANCE_MISMATCH.value,
                        f"{NAME}: signed by key 'linux-producer' ({'b' * 16}), the platform statement by "
                        f"'linux-producer' ({'a' * 16})", "linux")]


def test_facts_that_make_no_valid_provenance_are_a_mismatch(tmp_path: Path) -> None:
    vp = _platform(tmp_path)
    got, reasons = _run(vp, {NAME: _provenance(vp)}, policy_sha256="not a digest")
    assert got is None
    assert reasons == [(Code.PROVENANCE_MISMATCH.value, f"{NAME}: {STATEMENT} has no valid SLSA provenance", "linux")]


def _subjects(count: int) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["subject"] = data["subject"] + [{"name": f"extra-{i}.tar.gz", "digest": {"sha256": "3" * 64}}
                                             for i in range(count)]
    return edit


@pytest.mark.parametrize(("extra", "shown"), [
    (2, "subject.1.digest.sha256, subject.1.name, subject.2.digest.sha256, subject.2.name"),
    (3, "subject.1.digest.sha256, subject.1.name, subject.2.digest.sha256, subject.2.name (+2 more)"),
])
def test_at_most_four_differing_fields_are_shown_and_the_rest_counted(tmp_path: Path, extra: int,
                                                                       shown: str) -> None:
    vp = _platform(tmp_path)
    got, reasons = _run(vp, {NAME: _provenance(vp, _subjects(extra))})
    assert got is None
    assert reasons == [(Code.PROVENANCE_MISMATCH.value, f"{NAME}: not the provenance of {STATEMENT} under this policy "
                                                        f"and signer: {shown} differ", "linux")]


def test_five_differing_fields_show_four_and_count_one(tmp_path: Path) -> None:
    vp = _platform(tmp_path)

    def edit(data: dict[str, Any]) -> None:
        _subjects(2)(data)
        data["subject"][0]["name"] = "other.tar.gz"

    got, reasons = _run(vp, {NAME: _provenance(vp, edit)})
    assert got is None
    assert reasons == [(Code.PROVENANCE_MISMATCH.value, f"{NAME}: not the provenance of {STATEMENT} under this policy "
                        "and signer: subject.0.name, subject.1.digest.sha256, subject.1.name, "
                        "subject.2.digest.sha256 (+1 more) differ", "linux")]


def test_a_blocked_platforms_provenance_does_not_hide_a_later_stray(tmp_path: Path) -> None:
    findings = Findings()
    files = {"provenance-linux.dsse.json": b"{}", "provenance-windows.dsse.json": b"{}"}
    got = verify_all_provenance([], files, SimpleNamespace(policy_sha256=POLICY_SHA),  # type: ignore[arg-type]
                                _Verifier(_signer()), findings,  # type: ignore[arg-type]
                                blocked={"linux": SimpleNamespace()})  # type: ignore[dict-item]
    assert got == {}
    assert [(r.code.value, r.message, r.platform) for r in findings.reasons] == [(
        Code.EVIDENCE_UNEXPECTED.value,
        "provenance-windows.dsse.json: provenance for windows, which has no platform statement", None)]
