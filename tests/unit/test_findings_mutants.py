"""qualify_verify/_findings.py, method by method: which root cause a consequence is listed under (the one it names,
found by identity or by equal fields; a consequence of a consequence under the first root), how a finding added
twice keeps the stronger classification (a root stays a root, a consequence found again as a root becomes one, a
consequence found again as a consequence stays one), the message cap at 4000 characters, and that ``add_error``
carries the error's platform and ``follows``. Written for the mutants of the module that survived the verifier's
tests (docs/mutation.md).
"""

from __future__ import annotations

from desktop_qualify.evidence_schemas import Code, QualificationError, Reason
from desktop_qualify.qualify_verify._findings import Findings

UNSIGNED = "platform-linux.dsse.json: the signature does not verify"
UNCOVERED = "no verified statement covers linux"
UNMATCHED = "app-linux-x86_64.tar.gz matches no verified statement"


def _listed(findings: Findings) -> list[tuple[Code, str, str, int | None]]:
    return [(r.code, r.message, r.cause, r.follows) for r in findings.reasons]


def test_a_consequence_is_listed_under_the_root_it_names_not_the_first_one() -> None:
    findings = Findings()
    findings.add(Code.SOURCE_GATE_FAILED, "the work tree is dirty")
    unsigned = findings.add(Code.SIGNATURE_INVALID, UNSIGNED, "linux")
    findings.add(Code.PLATFORM_MISSING, UNCOVERED, "linux", follows=unsigned)
    assert _listed(findings) == [
        (Code.SOURCE_GATE_FAILED, "the work tree is dirty", "root", None),
        (Code.SIGNATURE_INVALID, UNSIGNED, "root", None),
        (Code.PLATFORM_MISSING, UNCOVERED, "consequence", 1),
    ]
    assert [r.code for r in findings.roots] == [Code.SOURCE_GATE_FAILED, Code.SIGNATURE_INVALID]


def test_a_root_named_by_an_equal_reason_not_the_same_object_is_found() -> None:
    findings = Findings()
    findings.add(Code.SOURCE_GATE_FAILED, "the work tree is dirty")
    findings.add(Code.SIGNATURE_INVALID, UNSIGNED, "linux")
    equal = Reason(code=Code.SIGNATURE_INVALID, message=UNSIGNED, platform="linux")
    findings.add(Code.PLATFORM_MISSING, UNCOVERED, "linux", follows=equal)
    assert _listed(findings)[2] == (Code.PLATFORM_MISSING, UNCOVERED, "consequence", 1)


def test_a_consequence_of_a_consequence_follows_the_first_root() -> None:
    findings = Findings()
    findings.add(Code.SOURCE_GATE_FAILED, "the work tree is dirty")
    unsigned = findings.add(Code.SIGNATURE_INVALID, UNSIGNED, "linux")
    uncovered = findings.add(Code.PLATFORM_MISSING, UNCOVERED, "linux", follows=unsigned)
    findings.add(Code.ARTIFACT_UNEXPECTED, UNMATCHED, "linux", follows=uncovered)
    assert _listed(findings) == [
        (Code.SOURCE_GATE_FAILED, "the work tree is dirty", "root", None),
        (Code.SIGNATURE_INVALID, UNSIGNED, "root", None),
        (Code.PLATFORM_MISSING, UNCOVERED, "consequence", 1),
        (Code.ARTIFACT_UNEXPECTED, UNMATCHED, "consequence", 1),
    ]


def test_a_consequence_found_again_as_a_root_becomes_a_root() -> None:
    findings = Findings()
    unsigned = findings.add(Code.SIGNATURE_INVALID, UNSIGNED, "linux")
    uncovered = findings.add(Code.PLATFORM_MISSING, UNCOVERED, "linux", follows=unsigned)
    again = findings.add(Code.PLATFORM_MISSING, UNCOVERED, "linux")
    assert again is uncovered
    assert _listed(findings) == [
        (Code.SIGNATURE_INVALID, UNSIGNED, "root", None),
        (Code.PLATFORM_MISSING, UNCOVERED, "root", None),
    ]
    assert findings.roots == [unsigned, uncovered]


def test_a_consequence_found_again_as_a_consequence_stays_one() -> None:
    findings = Findings()
    unsigned = findings.add(Code.SIGNATURE_INVALID, UNSIGNED, "linux")
    uncovered = findings.add(Code.PLATFORM_MISSING, UNCOVERED, "linux", follows=unsigned)
    assert findings.add(Code.PLATFORM_MISSING, UNCOVERED, "linux", follows=unsigned) is uncovered
    assert _listed(findings) == [
        (Code.SIGNATURE_INVALID, UNSIGNED, "root", None),
        (Code.PLATFORM_MISSING, UNCOVERED, "consequence", 0),
    ]
    assert findings.roots == [unsigned]


def test_a_root_found_again_as_a_consequence_stays_a_root() -> None:
    findings = Findings()
    gate = findings.add(Code.SOURCE_GATE_FAILED, "the work tree is dirty")
    unsigned = findings.add(Code.SIGNATURE_INVALID, UNSIGNED, "linux")
    assert findings.add(Code.SIGNATURE_INVALID, UNSIGNED, "linux", follows=gate) is unsigned
    assert findings.roots == [gate, unsigned]
    assert [r.cause for r in findings.reasons] == ["root", "root"]


def test_a_message_is_kept_whole_up_to_4000_characters_and_cut_there_beyond() -> None:
    findings = Findings()
    exact = findings.add(Code.SCHEMA_INVALID, "x" * 4000)
    longer = findings.add(Code.SCHEMA_INVALID, "y" * 4000 + "z")
    assert exact.message == "x" * 4000
    assert longer.message == "y" * 4000
    assert [r.message for r in findings.reasons] == ["x" * 4000, "y" * 4000]


def test_add_error_records_the_errors_code_message_and_platform() -> None:
    findings = Findings()
    reason = findings.add_error(QualificationError(Code.SIGNATURE_INVALID, UNSIGNED), "windows")
    assert (reason.code, reason.message, reason.platform) == (Code.SIGNATURE_INVALID, UNSIGNED, "windows")
    assert findings.reasons == [Reason(code=Code.SIGNATURE_INVALID, message=UNSIGNED, platform="windows")]


def test_add_error_with_follows_records_a_consequence() -> None:
    findings = Findings()
    unsigned = findings.add(Code.SIGNATURE_INVALID, UNSIGNED, "macos")
    findings.add_error(QualificationError(Code.ARTIFACT_UNEXPECTED, UNMATCHED), "macos", follows=unsigned)
    assert _listed(findings) == [
        (Code.SIGNATURE_INVALID, UNSIGNED, "root", None),
        (Code.ARTIFACT_UNEXPECTED, UNMATCHED, "consequence", 0),
    ]
    assert findings.roots == [unsigned]
    assert findings.reasons[1].platform == "macos"
