"""`qualify audit --rebuild`: a rebuild attestation's verdict is re-derived from the audited run, never taken.

Each attestation here is signed by a rebuilder's own key, as `qualify rebuild --attest` signs it, but says what
its author chose: the digest the run's own verified build record requires is what ``matches`` is judged by. An
attestation whose expected digest or ``matches`` flag contradicts that record is shown contradicted, with
``QE_REBUILD_CLAIM_CONTRADICTED``, never as a reproduced build; one about other bytes is attached to no run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.consumer._rebuilds import required_digest
from desktop_qualify.evidence_schemas import BuildReproduction, BuildVariation
from desktop_qualify.qualify_cli._rebuild import compared_digest
from support.evidence_factory import Evidence, make_evidence
from support.rebuild_attestation import OTHER
from support.rebuild_attestation import attestation as _attestation
from support.rebuild_attestation import predicate as _predicate

EQUAL = "the rebuilt bytes equal the qualified ones"
CONTRADICTED = "QE_REBUILD_CLAIM_CONTRADICTED"


def _audit(qualify: Callable[[list[str]], Any], ev: Evidence, tmp_path: Path,
           *attestations: Path) -> tuple[Any, dict[str, Any], dict[str, str]]:
    report, markdown, html = tmp_path / "audit.json", tmp_path / "audit.md", tmp_path / "audit.html"
    result = qualify(["audit", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                      "--rebuild", *map(str, attestations), "--json", str(report), "--markdown", str(markdown),
                      "--html", str(html)])
    assert result.status == 0, result.text  # an attestation never changes the run's decision
    # Markdown escapes the code's underscores: compared without its escapes.
    texts = {"text": result.text, "markdown": markdown.read_text(encoding="utf-8").replace("\\", ""),
             "html": html.read_text(encoding="utf-8")}
    return result, json.loads(report.read_text(encoding="utf-8")), texts


def test_an_honest_attestation_is_shown_matching(qualify: Any, tmp_path: Path) -> None:
    ev = make_evidence(tmp_path / "run")
    _, report, texts = _audit(qualify, ev, tmp_path, _attestation(ev, tmp_path / "honest.dsse.json"))
    (seen,) = report["runs"][0]["rebuilds"]
    artifact = _predicate(ev).build.artifact.sha256
    assert (seen["required_sha256"], seen["matches"], seen["contradiction"]) == (artifact, True, None)
    assert all(EQUAL in text for text in texts.values())
    assert not any(CONTRADICTED in note for note in report["notes"])


# (row, what the attestation claims beside an honest rebuild: the re-derived matches flag)
CLAIMS: list[tuple[str, dict[str, Any], bool]] = [
    # Other bytes rebuilt, yet "matches": the flag is the attestation's word, not the digests'.
    ("claims-a-match-for-other-bytes", {"rebuilt": OTHER, "expected": OTHER, "matches": True}, False),
    # The qualified bytes rebuilt, but its expected digest is not the one the run's build record requires.
    ("expected-digest-not-the-runs", {"expected": OTHER, "matches": True}, True),
    # The qualified bytes rebuilt, yet it says they differ.
    ("claims-a-difference-for-the-same-bytes", {"matches": False}, True),
]


@pytest.mark.parametrize(("row", "claim", "derived"), CLAIMS, ids=[c[0] for c in CLAIMS])
def test_a_claim_contradicting_the_runs_build_record_is_shown_so(qualify: Any, tmp_path: Path, row: str,
                                                                 claim: dict[str, Any], derived: bool) -> None:
    ev = make_evidence(tmp_path / "run")
    _, report, texts = _audit(qualify, ev, tmp_path, _attestation(ev, tmp_path / f"{row}.dsse.json", **claim))
    (seen,) = report["runs"][0]["rebuilds"]
    assert seen["matches"] is derived
    assert seen["required_sha256"] == _predicate(ev).build.artifact.sha256
    assert seen["contradiction"].startswith(CONTRADICTED)
    assert any(CONTRADICTED in note for note in report["notes"])
    for text in texts.values():
        assert CONTRADICTED in text
        assert EQUAL not in text


def test_an_attestation_about_other_bytes_is_attached_to_no_run(qualify: Any, tmp_path: Path) -> None:
    ev = make_evidence(tmp_path / "run")
    # Its predicate names the run's artifact; its subject (what the statement is about) is other bytes.
    other = _attestation(ev, tmp_path / "other.dsse.json", subject=OTHER)
    _, report, texts = _audit(qualify, ev, tmp_path, other)
    assert report["runs"][0]["rebuilds"] == []
    assert any(note.startswith(f"rebuild attestation {other} is about other bytes") for note in report["notes"])
    assert EQUAL not in texts["text"]


def test_the_audits_required_digest_is_the_rebuilds(tmp_path: Path) -> None:
    """The digest the audit requires is the one `qualify rebuild` compares with, for every signing state."""
    predicate = _predicate(make_evidence(tmp_path))
    assert required_digest(predicate) == compared_digest(predicate)[0] == predicate.build.artifact.sha256
    signed = predicate.model_copy(update={"signature": predicate.signature.model_copy(
        update={"platform_signing_state": "signed"})})
    assert required_digest(signed) is None
    first = "b" * 64
    repro = BuildReproduction(first_sha256=first, second_sha256=first, second_size=1, reproduced=True,
                              duration_ms=1, variations=[BuildVariation(name="umask", first="0022", second="0002")])
    reproduced = signed.model_copy(update={"build": signed.build.model_copy(update={"reproduction": repro})})
    assert required_digest(reproduced) == compared_digest(reproduced)[0] == first
