"""The aggregate job over factory evidence: signs only a complete set, the way the factory assumes."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code
from desktop_qualify.qualify_policy import host_platform
from support.evidence_factory import PlatformSpec, make_evidence


def _payload(path: Path) -> dict[str, Any]:
    statement: dict[str, Any] = json.loads(base64.b64decode(json.loads(path.read_bytes())["payload"]))
    return statement


@pytest.mark.parametrize("platforms", [None, ["linux", "macos", "windows"]], ids=["host", "three"])
def test_the_aggregate_job_signs_what_the_factory_builds(platforms: list[Any] | None, tmp_path: Path,
                                                         qualify: Any) -> None:
    ev = make_evidence(tmp_path, platforms=platforms, aggregate=False)
    factory_payload = ev.aggregate_payload()
    result = qualify(["aggregate", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                      "--out", str(ev.evidence_dir)])
    assert result.status == 0, result.text
    written = _payload(ev.evidence_dir / "aggregate.dsse.json")
    expected = json.loads(factory_payload)
    for statement in (written, expected):
        statement["predicate"].pop("aggregated_at")
    # The factory's aggregate is the job's aggregate, but for the time it was made.
    assert written == expected
    assert qualify(ev.verify_argv()).status == 0


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        (PlatformSpec(host_platform(), edit=lambda p: p["install"].update(passed=False)), Code.INSTALL_FAILED),
        (PlatformSpec(host_platform(), edit=lambda p: p["launch_probe"].update(passed=False)), Code.PROBE_FAILED),
        (PlatformSpec(host_platform(), edit=lambda p: p["journey"]["steps"].pop()), Code.JOURNEY_INCOMPLETE),
        (PlatformSpec(host_platform(), key="stranger"), Code.SIGNER_UNTRUSTED),
    ],
    ids=["install", "probe", "journey", "signer"],
)
def test_the_aggregate_job_refuses_an_incomplete_set(spec: PlatformSpec, code: Code, tmp_path: Path,
                                                     qualify: Any) -> None:
    ev = make_evidence(tmp_path, platforms=[spec], aggregate=False)
    result = qualify(["aggregate", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                      "--out", str(ev.evidence_dir)])
    assert result.status == 1
    assert code.value in result.text
    assert "Traceback" not in result.text
    assert not (ev.evidence_dir / "aggregate.dsse.json").exists()


def test_the_aggregate_job_refuses_mixed_runs_across_folders(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path, platforms=["linux", "macos"], aggregate=False)
    second = ev.root / "second"
    second.mkdir()
    (ev.evidence_dir / "platform-macos.dsse.json").unlink()
    ev.evidence_dir = second
    ev.write_platform(PlatformSpec("macos", run_id="local-other-run"))
    result = qualify(["aggregate", "--policy", str(ev.policy_path), "--evidence", str(ev.root / "evidence"),
                      "--evidence", str(second), "--out", str(tmp_path / "out")])
    assert result.status == 1
    assert Code.RUN_MISMATCH.value in result.text


def test_the_aggregate_key_must_be_in_the_keyring(tmp_path: Path, qualify: Any) -> None:
    from desktop_qualify.qualify_trust import generate_private_key

    ev = make_evidence(tmp_path, aggregate=False)
    ev.keys.aggregate_path.unlink()
    generate_private_key(ev.keys.aggregate_path)
    result = qualify(["aggregate", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                      "--out", str(ev.evidence_dir)])
    assert result.status == 2
    assert Code.KEY_INVALID.value in result.text


def test_a_rerun_aggregate_clears_what_a_killed_write_left_in_the_evidence(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path, aggregate=False)
    # What write_atomic leaves when the job is SIGKILLed mid-write: a hidden temporary file beside the target.
    leftover = ev.evidence_dir / ".aggregate.dsse.json.k1ll3d_x.tmp"
    leftover.write_bytes(b'{"payloadType": "application/vnd.in-toto+json", "payload": "eyJf')
    assert qualify(ev.verify_argv()).status != 0
    result = qualify(["aggregate", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                      "--out", str(ev.evidence_dir)])
    assert result.status == 0, result.text
    assert not leftover.exists()
    assert qualify(ev.verify_argv()).status == 0
