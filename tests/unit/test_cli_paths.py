"""Paths on the command line, one contract for every subcommand (issue 9).

A missing input is reported as missing with exit 2 whichever subcommand got it;
an input named twice and two outputs naming one file are refused; keygen writes
only inside the repository the policy belongs to; a policy taken out of its
checkout still finds what it pins.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import AuditReport, ConsumerDecision
from desktop_qualify.qualify_runtime import tool_version
from support.evidence_factory import make_evidence

REPO = Path(__file__).resolve().parents[2]


def _argv(command: str, ev: Any, folder: Path) -> list[str]:
    policy = str(ev.policy_path)
    return {"verify": ["verify", "--policy", policy, "--evidence", str(folder)],
            "audit": ["audit", "--policy", policy, "--evidence", str(folder)],
            "aggregate": ["aggregate", "--policy", policy, "--evidence", str(folder), "--out", str(folder.parent)],
            }[command]


@pytest.mark.parametrize("command", ["verify", "audit", "aggregate"])
def test_a_missing_evidence_folder_is_reported_as_missing_with_exit_2(tmp_path: Path, qualify: Any,
                                                                       command: str) -> None:
    ev = make_evidence(tmp_path)
    missing = tmp_path / "no-such-run"
    result = qualify(_argv(command, ev, missing))
    assert result.status == 2, result.text
    assert f"QE_USAGE: --evidence {missing}: missing (no such folder)" in result.err


@pytest.mark.parametrize("command", ["audit", "aggregate"])
def test_the_same_evidence_folder_twice_is_refused(tmp_path: Path, qualify: Any, command: str) -> None:
    ev = make_evidence(tmp_path)
    argv = _argv(command, ev, ev.evidence_dir)
    at = argv.index(str(ev.evidence_dir))
    # The same folder under another spelling is the same input.
    again = ["--evidence", str(ev.evidence_dir / "." / "")] if command == "aggregate" else [f"{ev.evidence_dir}/."]
    result = qualify([*argv[:at + 1], *again, *argv[at + 1:]])
    assert result.status == 2, result.text
    assert "QE_USAGE" in result.err
    assert "given twice" in result.err


def test_the_same_artifact_twice_is_refused(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path)
    result = qualify(ev.verify_argv(artifacts=[ev.artifact_paths[0], ev.artifact_paths[0]]))
    assert result.status == 2
    assert "QE_USAGE: --artifact" in result.err
    assert "given twice" in result.err


@pytest.mark.parametrize(("command", "first", "second"), [("verify", "--json", "--summary"),
                                                          ("audit", "--json", "--html"),
                                                          ("audit", "--html", "--markdown")])
def test_two_outputs_naming_one_file_are_refused(tmp_path: Path, qualify: Any, command: str, first: str,
                                                 second: str) -> None:
    ev = make_evidence(tmp_path)
    out = tmp_path / "out.json"
    argv = ev.verify_argv() if command == "verify" else _argv("audit", ev, ev.evidence_dir)
    result = qualify([*argv, first, str(out), second, str(tmp_path / "." / "out.json")])
    assert result.status == 2
    assert f"QE_USAGE: {first} and {second} both name" in result.err
    assert not out.exists()


def test_version_is_the_installed_distributions(qualify: Any) -> None:
    result = qualify(["--version"])
    assert result.status == 0
    assert result.out == f"qualify {tool_version()}\n"
    assert tool_version() != "0+unknown"


def test_schemas_check_on_a_missing_folder_names_the_folder(tmp_path: Path, qualify: Any) -> None:
    result = qualify(["schemas", "--check", "--out", str(tmp_path / "nope")])
    assert result.status == 2
    assert result.err.strip() == f"QE_USAGE: --out {tmp_path / 'nope'}: missing (no such folder)"


# -- keygen writes only inside the repository ------------------------------------------------------------------


def _local_policy_at(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPO / "policies" / "local.toml", path)
    return path


def test_keygen_with_a_policy_outside_any_repository_writes_nothing(tmp_path: Path, qualify: Any) -> None:
    policy = _local_policy_at(tmp_path / "copied" / "local.toml")
    result = qualify(["keygen", "--policy", str(policy)])
    assert result.status == 2
    assert "QE_USAGE" in result.err
    # The hint leads somewhere that works: a git checkout on main (--root alone ends at the source gate).
    assert "git checkout" in result.err
    assert "on branch main" in result.err
    assert "--root" not in result.err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["copied", "local.toml"]


def test_keygen_with_root_writes_where_the_policy_says_relative_to_the_repository(tmp_path: Path,
                                                                                  qualify: Any) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    policy = _local_policy_at(tmp_path / "elsewhere" / "local.toml")
    result = qualify(["keygen", "--policy", str(policy), "--root", str(checkout)])
    assert result.status == 0, result.text
    assert (checkout / ".qualify" / "keyring.json").is_file()
    assert (checkout / ".qualify" / "keys" / "platform.ed25519.pem").is_file()
    assert not (tmp_path / ".qualify").exists()


def test_keygen_in_a_git_work_tree_needs_no_root(tmp_path: Path, qualify: Any) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _local_policy_at(repo / "policies" / "local.toml")
    result = qualify(["keygen", "--policy", str(repo / "policies" / "local.toml")])
    assert result.status == 0, result.text
    assert (repo / ".qualify" / "keyring.json").is_file()


def test_keygen_refuses_key_paths_that_climb_out_of_the_repository(tmp_path: Path, qualify: Any) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    policy = _local_policy_at(checkout / "policies" / "local.toml")
    policy.write_text(policy.read_text().replace('"../.qualify/keyring.json"', '"../../keyring.json"'))
    result = qualify(["keygen", "--policy", str(policy), "--root", str(checkout)])
    assert result.status == 2
    assert "outside the repository" in result.err
    assert not (tmp_path / "keyring.json").exists()
    assert not (checkout / ".qualify").exists()


# -- policies that travel; hints that help ---------------------------------------------------------------------


def test_a_release_policy_copied_out_of_its_checkout_finds_its_pinned_trusted_root(tmp_path: Path,
                                                                                   qualify: Any) -> None:
    """`git show SHA:policies/release.toml > policy.toml`: the pinned root is found by its digest."""
    policy = tmp_path / "policy.toml"
    shutil.copyfile(REPO / "policies" / "release.toml", policy)
    ev = make_evidence(tmp_path)
    result = qualify(["audit", "--policy", str(policy), "--evidence", str(ev.evidence_dir)])
    assert "QE_POLICY_INVALID" not in result.text
    assert result.status == 1
    # Local evidence under a GitHub-mode policy: named as such, first.
    first = next(line for line in result.out.splitlines() if line.startswith("  QE_"))
    assert first.startswith("  QE_MODE_MISMATCH:")


def test_a_missing_keyring_hint_does_not_advise_keygen_to_a_verifier(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path)
    ev.keys.keyring.unlink()
    for argv in (ev.verify_argv(), ["audit", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir)]):
        result = qualify(argv)
        assert result.status == 2
        assert "QE_KEY_INVALID" in result.err
        assert "keygen" not in result.err
        assert "cannot verify evidence signed earlier" in result.err


# -- audits: one overall line, duplicate runs counted once ------------------------------------------------------


def test_audit_counts_copies_of_one_run_once_and_ends_with_an_overall_line(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path)
    copies = [tmp_path / f"copy-{i}" for i in range(2)]
    for copy in copies:
        shutil.copytree(ev.evidence_dir, copy)
    corrupt = tmp_path / "corrupt"
    shutil.copytree(ev.evidence_dir, corrupt)
    for statement in corrupt.glob("platform-*"):
        statement.write_bytes(statement.read_bytes()[:-40])
    report_file = tmp_path / "audit.json"
    result = qualify(["audit", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir), *map(str, copies),
                      str(corrupt), "--json", str(report_file)])
    assert result.status == 1
    report = AuditReport.model_validate_json(report_file.read_bytes())
    # The corrupt copy's aggregate still verifies and names the run: it is a fourth copy of the same run, and a
    # run is qualified only when every copy of it is.
    assert (report.totals.folders, report.totals.runs, report.totals.qualified, report.totals.rejected) == (4, 1, 0, 1)
    assert report.decision == "REJECTED"
    assert report.trust_mode == "ed25519"
    assert report.policy.sha256 == ev.policy.sha256
    assert report.tool_version == tool_version()
    (note,) = report.notes
    assert "appears in 4 folders" in note
    lines = result.out.splitlines()
    assert "audit REJECTED: 1 run(s) in 4 folder(s): 0 qualified, 1 rejected" in lines[-2]
    assert lines[-1].startswith("note: run ")
    assert json.loads(report_file.read_text())["runs"][3]["decision"]["mode"] == "audit"


# -- decisions say who and under what -------------------------------------------------------------------------


def test_a_local_decision_names_its_signers_policy_mode_and_version(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path)
    decision_file, summary = tmp_path / "d.json", tmp_path / "s.md"
    result = qualify(ev.verify_argv("--json", str(decision_file), "--summary", str(summary)))
    assert result.status == 0, result.text
    decision = ConsumerDecision.model_validate_json(decision_file.read_bytes())
    assert decision.mode == "local-check"
    assert decision.trust_mode == "ed25519"
    assert (decision.policy.name, decision.policy.path, decision.policy.sha256) == (
        "local", str(ev.policy_path), ev.policy.sha256)
    assert decision.tool_version == tool_version()
    by_file = {s.statement: s for s in decision.signers}
    assert set(by_file) == {f.name for f in ev.evidence_dir.iterdir()}
    aggregate = by_file["aggregate.dsse.json"]
    assert (aggregate.kind, aggregate.key_name, aggregate.keyring) == ("ed25519", "local-aggregate",
                                                                       str(ev.keys.keyring))
    assert all(s.san is None for s in decision.signers)
    # The note on what local mode cannot observe is printed, not only recorded.
    *_, note = decision.notes
    assert note.startswith("local mode")
    assert f"note: {note}" in result.out
    assert note.replace(":", "\\:") in summary.read_text()
    assert "local-aggregate" in result.out


# -- root causes first ------------------------------------------------------------------------------------------


def test_one_corrupted_statement_is_one_root_cause_and_its_consequences(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path)
    (statement,) = ev.evidence_dir.glob("platform-*")
    data = bytearray(statement.read_bytes())
    data[len(data) // 2] ^= 1
    statement.write_bytes(data)
    decision_file, summary = tmp_path / "d.json", tmp_path / "s.md"
    result = qualify(ev.verify_argv("--json", str(decision_file), "--summary", str(summary)))
    assert result.status == 1
    reasons = ConsumerDecision.model_validate_json(decision_file.read_bytes()).reasons
    assert [(r.cause, r.follows) for r in reasons] == [("root", None)] + [("consequence", 0)] * (len(reasons) - 1)
    assert reasons[0].code.value in ("QE_SIGNATURE_INVALID", "QE_JSON_MALFORMED", "QE_SCHEMA_INVALID")
    # The good artifact is not blamed as a fault of its own.
    assert "is not an artifact in the evidence" not in result.out
    assert "REJECTED: 1 root cause(s)" in result.out
    assert "which leaves" in summary.read_text()
    # The platform never got past its signature: its cells were not reached.
    row = ConsumerDecision.model_validate_json(decision_file.read_bytes()).rows[0]
    assert {row.gate, row.journey, row.candidate} == {"n/a"}


def test_local_evidence_under_the_release_policy_names_the_mode_mismatch_first(tmp_path: Path,
                                                                                qualify: Any) -> None:
    ev = make_evidence(tmp_path)
    decision_file = tmp_path / "d.json"
    result = qualify(["verify", "--policy", str(REPO / "policies" / "release.toml"), "--evidence",
                      str(ev.evidence_dir), "--json", str(decision_file)])
    assert result.status == 1
    decision = ConsumerDecision.model_validate_json(decision_file.read_bytes())
    assert decision.reasons[0].code.value == "QE_MODE_MISMATCH"
    assert all(r.cause == "consequence" for r in decision.reasons[1:])
    assert "QE_EVIDENCE_UNEXPECTED" not in result.out
    assert decision.mode == "release-gate"
    assert decision.trust_mode == "sigstore"
