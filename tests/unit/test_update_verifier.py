"""The update journey under the verifier: one passing record, then one row per refusal it must give.

Each row changes the signed platform statement's ``update`` record (or the policy), signs it again with
the trusted keys and re-binds the aggregate, so only the verifier's own rule (``assess_update``) can
refuse it; every row names the stable code it must produce. The producer's side of the same rules (the
real journey on the real bundle) is tests/e2e/test_update_chain.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.cli import CliRun
from support.evidence_factory import OTHER_SHA
from support.update_evidence import NEWER, Edit, _sha, _state, evidence


def _set(path: str, value: Any) -> Edit:
    def edit(update: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = update
        for part in parents:
            target = target[part]
        target[last] = value
    return edit


def _all(*edits: Edit) -> Edit:
    def edit(update: dict[str, Any]) -> None:
        for one in edits:
            one(update)
    return edit


def test_a_passing_update_journey_qualifies(tmp_path: Path, qualify: Callable[[list[str]], CliRun]) -> None:
    for downgrade in ("refuse", "allow"):
        ev = evidence(tmp_path / downgrade, downgrade=downgrade)
        done = qualify(ev.verify_argv())
        assert done.status == 0, done.text
        assert "QUALIFIED" in done.out


ROWS: list[tuple[str, dict[str, Any], str]] = [
    # The four refusals the update journey exists for.
    ("state-lost-on-upgrade", {"edit": _set("upgrade_check.report.state_sha256", _sha("an empty state"))},
     "QE_UPDATE_FAILED"),
    ("state-missing-after-upgrade", {"edit": _set("upgrade_check", _state("check", "0" * 40, observed="reject",
                                                                            code="CC_SKILL_STATE_MISSING"))},
     "QE_UPDATE_FAILED"),
    ("rollback-failed", {"edit": _set("rollback_check", _state("check", OTHER_SHA, observed="reject",
                                                               code="CC_SKILL_STATE_MISSING"))},
     "QE_UPDATE_FAILED"),
    ("downgrade-allowed-where-forbidden", {"edit": _set("downgrade_check", _state("check", OTHER_SHA))},
     "QE_UPDATE_FAILED"),
    ("previous-release-not-audited", {"edit": _set("previous.audit_decision", "REJECTED")},
     "QE_PREVIOUS_RELEASE_UNQUALIFIED"),
    # The record's own claims and the policy's table.
    ("update-missing-where-required", {"with_update": False}, "QE_UPDATE_FAILED"),
    ("update-the-policy-does-not-ask-for", {"policy_update": False}, "QE_UPDATE_FAILED"),
    ("downgrade-rule-rewritten-in-record", {"edit": _all(_set("downgrade", "allow"), _set("downgrade_code", None),
                                                         _set("downgrade_check", _state("check", OTHER_SHA)))},
     "QE_UPDATE_FAILED"),
    ("downgrade-refused-with-another-code", {"edit": _set("downgrade_check.report.code", "CC_SKILL_STATE_INVALID")},
     "QE_UPDATE_FAILED"),
    ("downgrade-refused-where-allowed", {"downgrade": "allow",
                                         "edit": _set("downgrade_check", _state("check", OTHER_SHA,
                                                                                observed="reject", code=NEWER))},
     "QE_UPDATE_FAILED"),
    ("step-claims-failed-though-its-facts-pass", {"edit": _set("write_state.passed", False)}, "QE_UPDATE_FAILED"),
    ("journey-claims-passed-though-a-step-failed",
     {"edit": _all(_set("rollback_check.report.state_sha256", _sha("other")), _set("rollback_check.passed", False))},
     "QE_UPDATE_FAILED"),
    ("failed-steps-hidden", {"edit": _set("failed_steps", ["write-state"])}, "QE_UPDATE_FAILED"),
    ("previous-install-of-other-bytes", {"edit": _set("previous_install.artifact_sha256", _sha("other bytes"))},
     "QE_UPDATE_FAILED"),
    ("upgrade-installs-another-executable", {"edit": _set("upgrade_install.executable_sha256", _sha("other exe"))},
     "QE_UPDATE_FAILED"),
    ("rollback-installs-another-executable", {"edit": _set("rollback_install.executable_sha256", _sha("other"))},
     "QE_UPDATE_FAILED"),
    ("installed-by-another-installer", {"edit": _set("upgrade_install.method", "deb")}, "QE_UPDATE_FAILED"),
    ("state-written-by-the-candidate", {"edit": _set("write_state.report.build_sha", "f" * 40)}, "QE_UPDATE_FAILED"),
    ("state-verb-another-command", {"edit": _set("upgrade_check.command", ["{executable}", "state", "repair"])},
     "QE_UPDATE_FAILED"),
    ("state-check-timed-out", {"edit": _set("upgrade_check.timed_out", True)}, "QE_UPDATE_FAILED"),
    ("upgrade-probe-of-another-build", {"edit": _set("upgrade_probe.report.build_sha", "e" * 40)},
     "QE_UPDATE_FAILED"),
    ("upgrade-probe-failed-check", {"edit": _set("upgrade_probe.exit_code", 3)}, "QE_UPDATE_FAILED"),
    ("no-state-written", {"edit": _set("write_state.report.state_sha256", None)}, "QE_UPDATE_FAILED"),
]


@pytest.mark.parametrize(("row", "spoil", "code"), ROWS, ids=[row[0] for row in ROWS])
def test_update_row_is_refused(row: str, spoil: dict[str, Any], code: str, tmp_path: Path,
                               qualify: Callable[[list[str]], CliRun]) -> None:
    ev = evidence(tmp_path, **spoil)
    done = qualify(ev.verify_argv())
    assert done.status == 1, f"{row}: {done.text}"
    assert code in done.text, f"{row}: {done.text}"
