"""The messages a reader acts on: one root cause for one fault, the run named when it is known, `n/a` where
nothing was presented, options spelled as given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from desktop_qualify.evidence_schemas import Code
from desktop_qualify.qualify_policy import host_platform
from support.evidence_factory import Evidence, make_evidence


def _decision(qualify: Any, ev: Evidence, tmp_path: Path, *argv: str) -> dict[str, Any]:
    out = tmp_path / "decision.json"
    done = qualify([*argv, "--json", str(out)] if argv else ev.verify_argv("--json", str(out)))
    assert done.status == 1, done.text
    return json.loads(out.read_text())


def test_a_missing_platform_statement_is_one_root_with_the_rest_under_it(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path)
    name = f"platform-{host_platform()}.dsse.json"
    (ev.evidence_dir / name).unlink()
    decision = _decision(qualify, ev, tmp_path)
    reasons = decision["reasons"]
    roots = [r for r in reasons if r["cause"] == "root"]
    assert [r["code"] for r in roots] == [Code.EVIDENCE_MISSING.value], reasons
    assert roots[0]["message"].startswith(f"{name}: the statement of required platform {host_platform()} is absent")
    consequences = {r["code"]: r for r in reasons if r["cause"] == "consequence"}
    assert set(consequences) == {Code.PLATFORM_MISSING.value, Code.AGGREGATE_MISMATCH.value,
                                 Code.ARTIFACT_DIGEST_MISMATCH.value}
    assert all(r["follows"] == 0 for r in consequences.values())
    # The aggregate's unmatched entry is named, and the candidate is not called "not an artifact".
    assert "it lists" in consequences[Code.AGGREGATE_MISMATCH.value]["message"]
    assert "is absent" in consequences[Code.AGGREGATE_MISMATCH.value]["message"]
    assert "not an artifact in the evidence" not in consequences[Code.ARTIFACT_DIGEST_MISMATCH.value]["message"]
    assert "was not found (see QE_EVIDENCE_MISSING)" in consequences[Code.ARTIFACT_DIGEST_MISMATCH.value]["message"]
    # The platform's row says missing (its statement is absent), not n/a.
    assert decision["rows"][0]["gate"] == "missing"


def test_an_audit_of_a_rejected_run_names_the_run_from_its_verified_aggregate(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path)
    (ev.evidence_dir / f"platform-{host_platform()}.dsse.json").unlink()
    report = tmp_path / "report.json"
    done = qualify(["audit", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir), "--json",
                    str(report)])
    assert done.status == 1
    [run] = json.loads(report.read_text())["runs"]
    assert run["decision"]["run_id"] == ev.run_id
    assert run["decision"]["candidate_sha"] == ev.sha
    assert f"{ev.run_id}#1" in done.out
    assert "unknown" not in done.out.split("\n")[2]  # the summary row of the run
    # An audit presents no candidate: the column says n/a, even for a platform with no statement.
    assert run["decision"]["rows"][0]["candidate"] == "n/a"


def test_a_mistyped_option_is_named_as_unknown_and_abbreviations_are_refused(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path)
    mistyped = qualify(["verify", "--policy", str(ev.policy_path), "--evidnce", str(ev.evidence_dir)])
    assert mistyped.status == 2
    assert "QE_USAGE: unknown option --evidnce (did you mean --evidence?)" in mistyped.err
    assert "required" not in mistyped.err
    abbreviated = qualify(["verify", "--policy", str(ev.policy_path), "--evid", str(ev.evidence_dir)])
    assert abbreviated.status == 2
    assert "unknown option --evid" in abbreviated.err
    for command in (["audit", "--policy", "p", "--bund", "b"], ["keygen", "--pol", "p"], ["produce", "--plat", "x"]):
        done = qualify(command)
        assert done.status == 2
        assert "QE_USAGE: unknown option" in done.err
    # A value that looks like an option's neighbour is still a value: '-' names standard output.
    assert qualify(ev.verify_argv("--json", "-")).status == 0
