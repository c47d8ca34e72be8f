"""build.source_digest recomputed from git archive of the run's commit wherever a checkout is at hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from desktop_qualify.evidence_schemas import ConsumerDecision
from desktop_qualify.qualify_archive import committed_source_digest
from support.checkout import at_real_commit, commit_all
from support.evidence_factory import make_evidence


def _decision(qualify: Any, argv: list[str], tmp_path: Path) -> tuple[Any, ConsumerDecision]:
    out = tmp_path / "decision.json"
    result = qualify([*argv, "--json", str(out)])
    return result, ConsumerDecision.model_validate_json(out.read_text())


def test_the_true_digest_qualifies_and_the_decision_says_it_was_recomputed(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path, committed_layout=True)
    at_real_commit(ev)
    result, decision = _decision(qualify, ev.verify_argv(), tmp_path)
    assert result.status == 0, result.text
    assert any(n.startswith("source digest recomputed from git archive") and "every build names it" in n
               for n in decision.notes), decision.notes


def test_a_changed_digest_is_refused_with_a_checkout(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path, committed_layout=True)
    at_real_commit(ev, lambda pred: pred["build"].update(source_digest="b" * 64))
    result, decision = _decision(qualify, ev.verify_argv(), tmp_path)
    assert result.status == 1
    assert [r.code for r in decision.reasons] == ["QE_SOURCE_DIGEST_MISMATCH"]
    (row,) = decision.rows
    assert row.build == "fail"


def test_without_a_checkout_the_decision_says_it_was_not_recomputed(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path)
    result, decision = _decision(qualify, ev.verify_argv(), tmp_path)
    assert result.status == 0, result.text
    assert any(n.startswith("source digest not recomputed") for n in decision.notes), decision.notes


def test_a_checkout_without_the_commit_is_noted_not_trusted(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path, committed_layout=True)  # the factory's made-up commit
    commit_all(ev.root)
    result, decision = _decision(qualify, ev.verify_argv(), tmp_path)
    assert result.status == 0, result.text
    assert any(n.startswith("source digest not recomputed from") for n in decision.notes), decision.notes


def test_audit_with_root_refuses_a_changed_digest(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path, committed_layout=True)
    at_real_commit(ev, lambda pred: pred["build"].update(source_digest="c" * 64))
    report = tmp_path / "audit.json"
    result = qualify(["audit", "--policy", str(ev.policy_path), "--root", str(ev.root),
                      "--evidence", str(ev.evidence_dir), "--json", str(report)])
    assert result.status == 1, result.text
    assert "QE_SOURCE_DIGEST_MISMATCH" in result.text
    run = json.loads(report.read_text())["runs"][0]
    assert [r["code"] for r in run["decision"]["reasons"]] == ["QE_SOURCE_DIGEST_MISMATCH"]


def test_the_digest_is_the_committed_tree_not_the_work_tree(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("print(1)\n")
    sha = commit_all(tmp_path)
    before = committed_source_digest(tmp_path, sha, "app")
    (tmp_path / "app" / "main.py").write_text("print(2)\n")  # uncommitted: not the commit's source
    assert committed_source_digest(tmp_path, sha, "app") == before
    assert committed_source_digest(tmp_path, commit_all(tmp_path), "app") != before


def test_a_bundle_audit_recomputes_it_in_the_auditors_checkout(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path, committed_layout=True)
    text = ev.policy_path.read_text(encoding="utf-8")
    old = next(line for line in text.splitlines() if line.startswith("source = "))
    ev.policy_path.write_text(text.replace(old, 'source = "../trust"'), encoding="utf-8")  # as a committed policy
    at_real_commit(ev, lambda pred: pred["build"].update(source_digest="d" * 64))
    bundle = tmp_path / "run.qualify-bundle.zip"
    assert qualify(["bundle", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                    "--out", str(bundle)]).status == 0
    report = tmp_path / "audit.json"
    result = qualify(["audit", "--policy", str(ev.policy_path), "--root", str(ev.root), "--bundle", str(bundle),
                      "--json", str(report)])
    assert result.status == 1, result.text
    run = json.loads(report.read_text())["runs"][0]
    assert [r["code"] for r in run["decision"]["reasons"]] == ["QE_SOURCE_DIGEST_MISMATCH"]
    assert any(n.startswith("source digest recomputed from git archive of trust") for n in run["decision"]["notes"])
