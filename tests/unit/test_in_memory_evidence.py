"""Statements handed to the verifier in memory (as the attestation store returns them) meet a folder's rules."""

from __future__ import annotations

from pathlib import Path

from desktop_qualify.evidence_schemas import Code
from desktop_qualify.qualify_verify import EvidenceFiles, Expectations, verify_release
from support.evidence_factory import make_evidence


def _in_memory(folder: Path) -> EvidenceFiles:
    files = EvidenceFiles()
    for path in sorted(folder.iterdir()):
        if path.name.startswith("aggregate"):
            files.aggregate = path.read_bytes()
        elif path.name.startswith("provenance-"):
            files.provenance[path.name] = path.read_bytes()
        else:
            files.platform[path.name] = path.read_bytes()
    return files


def test_the_same_statements_in_memory_qualify_as_the_folder_does(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path)
    from_folder = verify_release(ev.policy, [ev.evidence_dir], ev.artifact_paths)
    in_memory = verify_release(ev.policy, [_in_memory(ev.evidence_dir)], ev.artifact_paths)
    assert from_folder.qualified, from_folder.reasons
    assert in_memory.qualified, in_memory.reasons
    assert [vp.signed.payload_sha256 for vp in in_memory.platforms] == \
        [vp.signed.payload_sha256 for vp in from_folder.platforms]


def test_a_statement_in_memory_over_the_policys_size_bound_is_refused(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path)
    files = _in_memory(ev.evidence_dir)
    bound = Expectations.from_policy(ev.policy).max_statement_bytes
    (name,) = files.platform
    # Insignificant whitespace: the same valid statement, only larger than a folder's file may be.
    files.platform[name] = files.platform[name] + b" " * bound
    verdict = verify_release(ev.policy, [files], ev.artifact_paths)
    assert not verdict.qualified
    assert verdict.reasons[0].code is Code.EVIDENCE_TOO_LARGE
    assert name in verdict.reasons[0].message
