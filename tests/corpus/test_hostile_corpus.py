"""The hostile-evidence corpus (corpus_table.py), run as one parametrised test, and the baselines it spoils.

Every row's evidence is a real qualification that is QUALIFIED untouched
(``test_untouched_local_evidence_qualifies``, ``test_untouched_github_evidence_qualifies``),
changed in one way, signed again by the trusted keys (or the test Sigstore
instance) and bound again by the aggregate; `qualify verify` must refuse it
with the row's code and exit status, with no traceback.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from corpus_github import GitHubSite, github_evidence
from corpus_local import THREE, host, put
from corpus_table import CORPUS, Row
from desktop_qualify.evidence_schemas import ConsumerDecision
from desktop_qualify.qualify_verify import COLUMN_CODES
from support.evidence_factory import PlatformSpec, make_evidence

# The ids of the table this corpus replaced (tests/unit/test_consumer_rejections.py's CASES): all kept.
CARRIED_OVER = (
    "artifact-byte-flipped", "artifact-unknown-file", "artifact-not-presented", "artifact-path-absent",
    "platform-signed-by-stranger", "platform-signed-by-aggregate-key", "aggregate-signed-by-platform-key",
    "aggregate-signed-by-stranger", "aggregate-from-another-chain", "platform-removed", "candidate-is-another-sha",
    "one-platform-another-sha", "runs-mixed", "attempts-mixed", "platform-duplicated", "platform-not-required",
    "statement-under-other-platform-name", "platform-truncated", "aggregate-truncated", "platform-oversized",
    "platform-is-png", "aggregate-is-png", "platform-is-json-array", "platform-is-json-string", "platform-is-empty",
    "platform-too-deep", "envelope-duplicate-key", "envelope-payload-not-base64", "envelope-other-payload-type",
    "aggregate-renamed-as-platform", "platform-renamed-as-aggregate", "aggregate-payload-as-platform",
    "aggregate-named-as-platform-file", "empty-folder", "extra-file", "extra-backup-file", "extra-folder",
    "symlinked-statement", "aggregate-missing", "aggregate-over-subset", "statement-resigned-after-aggregate",
    "aggregate-for-other-platforms", "aggregate-other-run", "aggregate-other-attempt", "aggregate-other-sha",
    "aggregate-other-trigger", "install-failed", "install-of-other-bytes", "install-empty", "probe-failed",
    "probe-no-report", "probe-timed-out", "probe-no-isolation", "probe-catalog-unverified", "probe-other-executable",
    "probe-other-platform", "journey-step-failed", "journey-step-missing", "journey-step-other-code",
    "journey-step-allowed-what-must-reject", "journey-step-reported-twice", "journey-step-reported-twice-both-passing",
    "journey-not-passed", "journey-exit-nonzero", "journey-timed-out", "source-gate-failed", "source-gate-not-head",
    "dirty-tree-under-require-clean", "os-signing-signed-not-accepted", "os-signing-failed",
    "os-signing-unsigned-where-signed-required", "artifact-signature-forged", "artifact-signature-readback-failed",
    "artifact-signature-other-digest", "artifact-signature-unknown-keyid", "artifact-signature-other-method",
    "claim-other-repository", "claim-other-workflow", "claim-other-trigger", "claim-other-runner",
    "claim-github-mode-under-local-policy", "claim-run-ref-branch", "claim-gate-ref-tag", "claim-gate-other-sha",
    "claim-build-other-sha", "claim-probe-other-sha", "claim-journey-other-sha", "subject-other-digest",
    "payload-unknown-predicate-type", "payload-no-predicate-type", "payload-duplicate-key", "payload-nan",
    "payload-infinity", "payload-not-json", "payload-not-utf8", "payload-extra-field", "payload-wrong-type",
    "payload-bad-sha-pattern", "payload-too-deep", "policy-missing", "policy-bad-toml", "keyring-missing",
    "sha-not-a-commit", "evidence-not-a-folder", "policy-flag-absent",
)


KEBAB = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


def _params(rows: list[Row]) -> list[Any]:
    """One parameter per row; a row with a documented verifier gap is a strict xfail."""
    return [pytest.param(row, id=row.id, marks=[pytest.mark.xfail(strict=True, reason=f"verifier gap: {row.gap}")]
                         if row.gap else []) for row in rows]


def _decide(qualify: Any, argv: list[str], tmp_path: Path) -> tuple[Any, Path, Path]:
    decision_file, summary_file = tmp_path / "decision.json", tmp_path / "summary.md"
    return qualify([*argv, "--json", str(decision_file), "--summary", str(summary_file)]), decision_file, summary_file


@pytest.mark.parametrize("row", _params(CORPUS))
def test_hostile_evidence(row: Row, tmp_path: Path, qualify: Any, request: pytest.FixtureRequest) -> None:
    where = request.getfixturevalue("github_site") if row.github else tmp_path
    result, decision_file, summary_file = _decide(qualify, row.mutation(where), tmp_path)
    assert "Traceback" not in result.text
    assert "QE_INTERNAL" not in result.text
    assert result.status == row.status, result.text
    assert row.code.value in result.text, result.text
    if row.status != 1:
        assert not decision_file.exists()
        assert not summary_file.exists()
        return
    decision = ConsumerDecision.model_validate_json(decision_file.read_bytes())
    assert decision.decision == "REJECTED"
    assert row.code in {r.code for r in decision.reasons}, decision.reasons
    summary = summary_file.read_text(encoding="utf-8")
    assert "REJECTED" in summary
    assert f"`{row.code.value}`" in summary
    # The decision table agrees with the reasons: a platform's stage code fails that stage's cell.
    rows = {r.platform: r for r in decision.rows}
    for reason in decision.reasons:
        cells = rows.get(reason.platform) if reason.platform else None
        for column, codes in COLUMN_CODES.items():
            if cells is not None and reason.code in codes and getattr(cells, column) not in ("missing", "n/a"):
                assert getattr(cells, column) == "fail", (reason, cells)


# -- the table itself ------------------------------------------------------------------------------------------


def test_the_corpus_is_one_table_of_unique_kebab_case_rows() -> None:
    ids = [row.id for row in CORPUS]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    assert [i for i in ids if not KEBAB.fullmatch(i)] == []
    local = [row for row in CORPUS if not row.github]
    github = [row for row in CORPUS if row.github]
    assert len(CORPUS) >= 150
    assert len(github) >= 15
    assert len(local) >= 135
    assert {row.status for row in CORPUS} == {1, 2}


def test_every_case_of_the_old_table_is_carried_over() -> None:
    ids = {row.id for row in CORPUS}
    assert [case for case in CARRIED_OVER if case not in ids] == []
    assert len(CARRIED_OVER) == len(set(CARRIED_OVER))


# -- the baselines every row spoils --------------------------------------------------------------------------


def _assert_qualified(qualify: Any, argv: list[str], tmp_path: Path) -> ConsumerDecision:
    result, decision_file, summary_file = _decide(qualify, argv, tmp_path)
    assert result.status == 0, result.text
    decision = ConsumerDecision.model_validate_json(decision_file.read_bytes())
    assert decision.decision == "QUALIFIED"
    assert decision.reasons == []
    for cells in decision.rows:
        assert {cells.gate, cells.build, cells.signature, cells.install, cells.probe, cells.journey} == {"pass"}
    assert "QUALIFIED" in summary_file.read_text(encoding="utf-8")
    return decision


def test_untouched_local_evidence_qualifies(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path)
    decision = _assert_qualified(qualify, ev.verify_argv("--sha", ev.sha), tmp_path)
    assert [r.platform for r in decision.rows] == [host()]


def test_untouched_three_platform_local_evidence_qualifies(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path, platforms=list(THREE))
    decision = _assert_qualified(qualify, ev.verify_argv("--sha", ev.sha), tmp_path)
    assert [r.platform for r in decision.rows] == list(THREE)


def test_untouched_github_evidence_qualifies(github_site: GitHubSite, tmp_path: Path, qualify: Any) -> None:
    ev = github_evidence(github_site)
    decision = _assert_qualified(qualify, ev.verify_argv("--sha", github_site.sha), tmp_path)
    assert decision.candidate_sha == github_site.sha
    assert (decision.run_id, decision.attempt) == ("4242", 1)
    assert [r.platform for r in decision.rows] == ["linux"]
    assert sorted(p.name for p in ev.evidence_dir.iterdir()) == ["aggregate.sigstore.json",
                                                                "platform-linux.sigstore.json",
                                                                "provenance-linux.sigstore.json"]
    # Who signed, as the certificates prove it: SAN, issuer and the run invocation URI of run 4242.
    assert (decision.mode, decision.trust_mode) == ("release-gate", "sigstore")
    assert [s.statement for s in decision.signers] == ["platform-linux.sigstore.json",
                                                       "provenance-linux.sigstore.json", "aggregate.sigstore.json"]
    for signer in decision.signers:
        assert signer.kind == "sigstore"
        assert signer.san is not None
        assert signer.san.startswith("https://github.com/")
        assert signer.issuer == "https://token.actions.githubusercontent.com"
        assert signer.run_uri is not None
        assert "/actions/runs/4242/attempts/1" in signer.run_uri
        assert signer.key_name is None


@pytest.mark.parametrize(("field", "value"), [
    ("journey.steps.0.detail", "d" * 400),
    ("journey.stderr_excerpt", "e" * 2000),
    ("launch_probe.stderr_excerpt", "e" * 2000),
    ("source_gate.observations.0.value", "v" * 4096),
    ("source_gate.observations.0.source", "s" * 256),
    ("build.tools.python", "3" * 256),
    ("launch_probe.report.app_version", "0" * 256),
])
def test_an_informational_field_at_its_bound_still_qualifies(field: str, value: str, tmp_path: Path,
                                                               qualify: Any) -> None:
    """The bound-plus-one rows are refused for the one character over the bound, not for the field."""
    ev = make_evidence(tmp_path, platforms=[PlatformSpec(host(), edit=put(field, value))])
    _assert_qualified(qualify, ev.verify_argv(), tmp_path)
