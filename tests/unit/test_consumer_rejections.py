"""Hostile evidence at the byte level, and the baseline the hostile cases spoil.

The table of named hostile cases (each changes one thing and names the code it
must produce) is the corpus in tests/corpus/corpus_table.py. What stays here
runs `qualify verify` in-process on evidence from the factory whose untouched
form is QUALIFIED (``test_untouched_evidence_qualifies``): byte changes and
sampled bit flips in the signed files, and unsigned envelopes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code, ConsumerDecision, Platform
from desktop_qualify.qualify_policy import host_platform
from support.evidence_factory import make_evidence

THREE: tuple[Platform, ...] = ("linux", "macos", "windows")


def _host() -> Platform:
    return host_platform()


def test_untouched_evidence_qualifies(tmp_path: Path, qualify: Any) -> None:
    """The baseline every case above spoils: without a change, the factory's evidence is QUALIFIED."""
    ev = make_evidence(tmp_path)
    decision_file, summary_file = tmp_path / "decision.json", tmp_path / "summary.md"
    result = qualify([*ev.verify_argv("--sha", ev.sha), "--json", str(decision_file), "--summary",
                      str(summary_file)])
    assert result.status == 0, result.text
    decision = ConsumerDecision.model_validate_json(decision_file.read_bytes())
    assert decision.decision == "QUALIFIED"
    assert decision.reasons == []
    assert decision.candidate_sha == ev.sha
    assert (decision.run_id, decision.attempt) == (ev.run_id, 1)
    assert [row.platform for row in decision.rows] == [_host()]
    assert decision.rows[0].sha256 == ev.platforms[0].predicate.build.artifact.sha256  # type: ignore[union-attr]
    row = decision.rows[0]
    assert {row.gate, row.build, row.signature, row.install, row.probe, row.journey, row.candidate} == {"pass"}
    summary = summary_file.read_text(encoding="utf-8").splitlines()
    assert summary[0].startswith("## ")
    assert "QUALIFIED" in summary[0]
    header = summary.index(
        "| platform | artifact | sha256 | gate | build | signature | install | probe | journey | candidate |")
    assert summary[header + 1] == "|---|---|---|---|---|---|---|---|---|---|"
    # The artifact name goes through the Markdown escaper: an underscore is shown, never taken for emphasis.
    assert summary[header + 2].startswith(f"| {_host()} | {ev.artifact_paths[0].name.replace('_', chr(92) + '_')} | ")
    assert summary[header + 2].endswith("| pass | pass | pass | pass | pass | pass | pass |")


def test_three_platforms_qualify_and_the_table_has_a_row_each(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path, platforms=list(THREE))
    result = qualify(ev.verify_argv())
    assert result.status == 0, result.text
    rows = [line.split()[0] for line in result.out.splitlines() if line.split()[:1] in (["linux"], ["macos"],
                                                                                           ["windows"])]
    assert rows == list(THREE)


def test_a_missing_platform_shows_as_a_missing_row(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path, platforms=list(THREE))
    ev.platform_file("windows").unlink()
    decision_file = tmp_path / "d.json"
    result = qualify([*ev.verify_argv(), "--json", str(decision_file)])
    assert result.status == 1
    rows = {r.platform: r for r in ConsumerDecision.model_validate_json(decision_file.read_bytes()).rows}
    assert rows["windows"].install == rows["windows"].journey == "missing"
    assert rows["linux"].install == "pass"


def _envelope_offsets(data: bytes) -> dict[str, int]:
    """Byte offsets of interesting places inside an RFC 8785 DSSE envelope."""
    envelope = json.loads(data)
    payload_at = data.index(b'"payload":"') + len(b'"payload":"')
    sig_at = data.index(b'"sig":"') + len(b'"sig":"')
    keyid_at = data.index(b'"keyid":"') + len(b'"keyid":"')
    type_at = data.index(b'"payloadType":"') + len(b'"payloadType":"')
    return {
        "open-brace": 0,
        "close-brace": len(data) - 1,
        "payload-start": payload_at,
        "payload-middle": payload_at + len(envelope["payload"]) // 2,
        "sig-middle": sig_at + len(envelope["signatures"][0]["sig"]) // 2,
        "keyid": keyid_at + 10,
        "payload-type": type_at + 3,
    }


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


_HEX = "0123456789abcdef"


def _substitute(path: Path, offset: int, alphabet: str) -> None:
    """Change one byte to the next one of its alphabet: the meaning changes, the syntax does not."""
    data = bytearray(path.read_bytes())
    char = chr(data[offset])
    data[offset] = ord(alphabet[(alphabet.index(char) + 1) % len(alphabet)]) if char in alphabet else data[offset] ^ 1
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("file", ["platform", "aggregate"])
@pytest.mark.parametrize(
    ("where", "code"),
    [
        ("open-brace", Code.JSON_MALFORMED),
        ("close-brace", Code.JSON_MALFORMED),
        ("payload-start", Code.SIGNATURE_INVALID),
        ("payload-middle", Code.SIGNATURE_INVALID),
        ("sig-middle", Code.SIGNATURE_INVALID),
        ("keyid", Code.SIGNER_UNTRUSTED),
        ("payload-type", Code.SCHEMA_INVALID),
    ],
)
def test_statement_byte_changed(file: str, where: str, code: Code, tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path)
    path = ev.platform_file(_host()) if file == "platform" else ev.evidence_dir / "aggregate.dsse.json"
    _substitute(path, _envelope_offsets(path.read_bytes())[where], _HEX if where == "keyid" else _B64)
    result = qualify(ev.verify_argv())
    assert "Traceback" not in result.text
    assert result.status == 1
    assert code.value in result.text, result.text


# A flip inside the "signatures" key leaves an envelope with no signatures: QE_SIGNATURE_MISSING.
_DAMAGE_CODES = {Code.JSON_MALFORMED, Code.SCHEMA_INVALID, Code.SIGNATURE_INVALID, Code.SIGNER_UNTRUSTED,
                 Code.JSON_INVALID_UTF8, Code.AGGREGATE_MISMATCH, Code.JSON_DUPLICATE_KEY, Code.SIGNATURE_MISSING}


@pytest.mark.parametrize("file", ["platform", "aggregate"])
def test_every_sampled_byte_flip_is_rejected(file: str, tmp_path: Path, qualify: Any) -> None:
    """A sweep: flipping the low bit of any sampled byte rejects with a damage code, never a traceback."""
    ev = make_evidence(tmp_path)
    path = ev.platform_file(_host()) if file == "platform" else ev.evidence_dir / "aggregate.dsse.json"
    original = path.read_bytes()
    step = max(1, len(original) // 40)
    for offset in [*range(0, len(original), step), len(original) - 1]:
        data = bytearray(original)
        data[offset] ^= 0x01
        path.write_bytes(bytes(data))
        decision_file = tmp_path / "d.json"
        result = qualify([*ev.verify_argv(), "--json", str(decision_file)])
        assert "Traceback" not in result.text
        assert result.status == 1, f"offset {offset}: {result.text}"
        codes = {r.code for r in ConsumerDecision.model_validate_json(decision_file.read_bytes()).reasons}
        assert codes & _DAMAGE_CODES, f"offset {offset}: {codes}"
    path.write_bytes(original)
    assert qualify(ev.verify_argv()).status == 0


@pytest.mark.parametrize("signatures", [[], None], ids=["empty-list", "absent"])
def test_unsigned_envelope_is_signature_missing(signatures: list[Any] | None, tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path)
    path = ev.platform_file(_host())
    envelope = json.loads(path.read_bytes())
    if signatures is None:
        del envelope["signatures"]
    else:
        envelope["signatures"] = signatures
    path.write_bytes(json.dumps(envelope).encode())
    result = qualify(ev.verify_argv())
    assert result.status == 1
    assert Code.SIGNATURE_MISSING.value in result.text, result.text
