"""The command-line contract under hostile environments: codes and exit statuses, no tracebacks, no state lost."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import ConsumerDecision
from support.evidence_factory import make_evidence

Run = Callable[[list[str]], "object"]


def test_deeply_nested_policy_is_policy_invalid(tmp_path: Path, qualify) -> None:  # type: ignore[no-untyped-def]
    policy = tmp_path / "deep.toml"
    policy.write_text("a = " + "[" * 30000 + "]" * 30000 + "\n")
    result = qualify(["verify", "--policy", str(policy), "--evidence", str(tmp_path)])
    assert result.status == 2
    assert "QE_POLICY_INVALID" in result.err
    assert "QE_INTERNAL" not in result.text


@pytest.mark.parametrize("target", ["a-folder", "missing-parent/x/decision.json"])
def test_unwritable_json_output_is_an_environment_error(tmp_path: Path, qualify, target: str) -> None:  # type: ignore[no-untyped-def]
    evidence = make_evidence(tmp_path)
    out = tmp_path / target
    if target == "a-folder":
        out.mkdir()
    else:
        # A parent that is a file: nothing can be created beneath it.
        (tmp_path / "missing-parent").write_text("a file, not a folder")
    result = qualify(evidence.verify_argv("--json", str(out)))
    assert result.status == 2
    assert "QE_ENVIRONMENT" in result.err
    assert "QE_INTERNAL" not in result.text
    # No verdict is printed for a decision that could not be recorded.
    assert "QUALIFIED" not in result.out


def test_summary_is_appended_not_replaced(tmp_path: Path, qualify) -> None:  # type: ignore[no-untyped-def]
    evidence = make_evidence(tmp_path)
    summary = tmp_path / "step-summary.md"
    summary.write_text("## an earlier step\n")
    decision = tmp_path / "decision.json"
    result = qualify(evidence.verify_argv("--summary", str(summary), "--json", str(decision)))
    assert result.status == 0, result.text
    text = summary.read_text()
    assert text.startswith("## an earlier step\n")
    assert "Release qualification: QUALIFIED" in text
    parsed = ConsumerDecision.model_validate_json(decision.read_text())
    assert parsed.notes[-1] == "local mode: main's head on a protected remote was not observed"
    # No checkout holds the factory's made-up commit: the decision says the source digest was not recomputed.
    assert parsed.notes[0].startswith("source digest not recomputed")


def test_audit_reports_an_empty_folder_and_carries_on(tmp_path: Path, qualify) -> None:  # type: ignore[no-untyped-def]
    evidence = make_evidence(tmp_path)
    report = tmp_path / "audit.json"
    empty = tmp_path / "empty-run"
    empty.mkdir()
    result = qualify(["audit", "--policy", str(evidence.policy_path), "--evidence", str(evidence.evidence_dir),
                      str(empty), "--json", str(report)])
    assert result.status == 1
    parsed = json.loads(report.read_text())
    assert [r["decision"]["decision"] for r in parsed["runs"]] == ["QUALIFIED", "REJECTED"]
    assert parsed["runs"][1]["decision"]["reasons"][0]["code"] == "QE_EVIDENCE_MISSING"
    assert parsed["totals"] == {"folders": 2, "runs": 2, "qualified": 1, "rejected": 1}
    assert "audit REJECTED: 2 run(s) in 2 folder(s): 1 qualified, 1 rejected" in result.out


def test_keygen_with_a_damaged_keyring_creates_no_key(tmp_path: Path, qualify) -> None:  # type: ignore[no-untyped-def]
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "keyring.json").write_text("{not json")
    policy = tmp_path / "policy.toml"
    source = (Path(__file__).resolve().parents[2] / "policies" / "local.toml").read_text()
    source = source.replace('"../.qualify/keyring.json"', f'"{(keys / "keyring.json").as_posix()}"')
    source = source.replace('"../.qualify/keys/platform.ed25519.pem"', f'"{(keys / "p.pem").as_posix()}"')
    source = source.replace('"../.qualify/keys/aggregate.ed25519.pem"', f'"{(keys / "a.pem").as_posix()}"')
    policy.write_text(source)
    result = qualify(["keygen", "--policy", str(policy), "--root", str(tmp_path)])
    assert result.status == 2
    assert "QE_KEY_INVALID" in result.err
    assert sorted(p.name for p in keys.iterdir()) == ["keyring.json"]


def test_key_path_that_is_a_folder_is_key_invalid(tmp_path: Path, qualify) -> None:  # type: ignore[no-untyped-def]
    evidence = make_evidence(tmp_path)
    policy_text = evidence.policy_path.read_text()
    folder = tmp_path / "key-folder"
    folder.mkdir()
    key_line = next(line for line in policy_text.splitlines() if line.startswith("platform_key"))
    policy = tmp_path / "folder-key.toml"
    policy.write_text(policy_text.replace(key_line, f'platform_key = "{folder.as_posix()}"'))
    result = qualify(["produce", "--policy", str(policy), "--platform", "linux", "--out", str(tmp_path / "out")])
    assert result.status == 2
    assert "QE_KEY_INVALID" in result.err
    assert not (tmp_path / "out").exists()


def test_gate_that_cannot_observe_the_source_is_an_environment_error(tmp_path: Path, qualify) -> None:  # type: ignore[no-untyped-def]
    evidence = make_evidence(tmp_path)
    policy_text = evidence.policy_path.read_text()
    app_line = next(line for line in policy_text.splitlines() if line.startswith("source = "))
    not_git = tmp_path / "not-a-repo"
    not_git.mkdir()
    policy = tmp_path / "no-git.toml"
    policy.write_text(policy_text.replace(app_line, f'source = "{not_git.as_posix()}"'))
    out = tmp_path / "out"
    result = qualify(["produce", "--policy", str(policy), "--platform", "linux", "--out", str(out)])
    assert result.status == 2
    assert "QE_SOURCE_GATE_FAILED" in result.err
    assert not out.exists()
