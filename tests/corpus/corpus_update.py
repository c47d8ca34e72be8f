"""The update journey's rows of the hostile corpus (README, "The update journey"; corpus_table.py).

Each row is a local qualification whose platform statement carries a passing update journey under a
policy with ``[update]`` (tests/support/update_evidence.py), spoiled in one way before it is signed,
then signed and bound again: only the verifier's update rule can refuse it. The previous release is
OTHER_SHA's build; the policy's downgrade rule refuses with CC_SKILL_STATE_NEWER unless a row says
otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop_qualify.evidence_schemas import Code
from desktop_qualify.qualify_policy import host_platform
from support.evidence_factory import OTHER_SHA
from support.update_evidence import NEWER, Edit, evidence, sha_of, state_step


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


# A platform and a display no statement of this host's run carries.
OTHER_PLATFORM = "windows" if host_platform() != "windows" else "linux"
OTHER_DISPLAY = "offscreen"


def _flip_first_layer(step: str) -> Edit:
    """The step's probe reports its first isolation layer's ``applied`` the other way round."""
    def edit(update: dict[str, Any]) -> None:
        layers = update[step]["report"]["isolation_layers"]
        layers[0]["applied"] = not layers[0]["applied"]
    return edit


_ROWS: list[tuple[str, dict[str, Any], str]] = [
    # The four refusals the update journey exists for.
    ("state-lost-on-upgrade", {"edit": _set("upgrade_check.report.state_sha256", sha_of("an empty state"))},
     "QE_UPDATE_FAILED"),
    ("state-missing-after-upgrade", {"edit": _set("upgrade_check", state_step("check", "0" * 40, observed="reject",
                                                                            code="CC_SKILL_STATE_MISSING"))},
     "QE_UPDATE_FAILED"),
    ("rollback-failed", {"edit": _set("rollback_check", state_step("check", OTHER_SHA, observed="reject",
                                                               code="CC_SKILL_STATE_MISSING"))},
     "QE_UPDATE_FAILED"),
    ("downgrade-allowed-where-forbidden", {"edit": _set("downgrade_check", state_step("check", OTHER_SHA))},
     "QE_UPDATE_FAILED"),
    ("previous-release-not-audited", {"edit": _set("previous.audit_decision", "REJECTED")},
     "QE_PREVIOUS_RELEASE_UNQUALIFIED"),
    # The record's own claims and the policy's table.
    ("update-missing-where-required", {"with_update": False}, "QE_UPDATE_FAILED"),
    ("update-the-policy-does-not-ask-for", {"policy_update": False}, "QE_UPDATE_FAILED"),
    ("downgrade-rule-rewritten-in-record", {"edit": _all(_set("downgrade", "allow"), _set("downgrade_code", None),
                                                         _set("downgrade_check", state_step("check", OTHER_SHA)))},
     "QE_UPDATE_FAILED"),
    ("downgrade-refused-with-another-code", {"edit": _set("downgrade_check.report.code", "CC_SKILL_STATE_INVALID")},
     "QE_UPDATE_FAILED"),
    ("downgrade-refused-where-allowed", {"downgrade": "allow",
                                         "edit": _set("downgrade_check", state_step("check", OTHER_SHA,
                                                                                observed="reject", code=NEWER))},
     "QE_UPDATE_FAILED"),
    ("step-claims-failed-though-its-facts-pass", {"edit": _set("write_state.passed", False)}, "QE_UPDATE_FAILED"),
    ("journey-claims-passed-though-a-step-failed",
     {"edit": _all(_set("rollback_check.report.state_sha256", sha_of("other")), _set("rollback_check.passed", False))},
     "QE_UPDATE_FAILED"),
    ("failed-steps-hidden", {"edit": _set("failed_steps", ["write-state"])}, "QE_UPDATE_FAILED"),
    ("previous-install-of-other-bytes", {"edit": _set("previous_install.artifact_sha256", sha_of("other bytes"))},
     "QE_UPDATE_FAILED"),
    ("upgrade-installs-another-executable", {"edit": _set("upgrade_install.executable_sha256", sha_of("other exe"))},
     "QE_UPDATE_FAILED"),
    ("rollback-installs-another-executable", {"edit": _set("rollback_install.executable_sha256", sha_of("other"))},
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
    # One row per remaining check of the update record (qualify_verify/_update_outcome.py), each alone.
    ("previous-artifact-not-an-installer-file",
     {"edit": _set("previous.artifact.name", "skillhost-previous.msi")}, "QE_PREVIOUS_RELEASE_UNQUALIFIED"),
    ("upgrade-install-failed", {"edit": _all(_set("upgrade_install.failure", "refused: " + "x" * 240),
                                             _set("upgrade_install.passed", False))}, "QE_UPDATE_FAILED"),
    ("previous-install-installed-nothing", {"edit": _set("previous_install.file_count", 0)}, "QE_UPDATE_FAILED"),
    ("previous-install-at-another-executable", {"edit": _set("previous_install.executable", "bin/other")},
     "QE_UPDATE_FAILED"),
    ("state-record-from-another-platform", {"edit": _set("upgrade_check.report.platform", OTHER_PLATFORM)},
     "QE_UPDATE_FAILED"),
    ("state-record-of-another-verb", {"edit": _set("upgrade_check.report.verb", "write")}, "QE_UPDATE_FAILED"),
    ("state-found-but-exited-nonzero", {"edit": _set("upgrade_check.exit_code", 1)}, "QE_UPDATE_FAILED"),
    ("state-found-but-no-digest-named", {"edit": _set("rollback_check.report.state_sha256", None)},
     "QE_UPDATE_FAILED"),
    ("state-check-wrote-no-record", {"edit": _set("rollback_check.report", None)}, "QE_UPDATE_FAILED"),
    ("downgrade-refusal-exited-zero", {"edit": _set("downgrade_check.exit_code", 0)}, "QE_UPDATE_FAILED"),
    ("downgrade-refusal-names-a-state", {"edit": _set("downgrade_check.report.state_sha256", sha_of("a state"))},
     "QE_UPDATE_FAILED"),
    ("installer-rewritten-in-record", {"edit": _set("installer", "deb")}, "QE_UPDATE_FAILED"),
    ("upgrade-probe-under-another-display", {"edit": _set("upgrade_probe.display", OTHER_DISPLAY)},
     "QE_UPDATE_FAILED"),
    ("upgrade-probe-contradicts-its-facts", {"edit": _set("upgrade_probe.build_sha_matches", False)},
     "QE_UPDATE_FAILED"),
    ("upgrade-probe-other-isolation-layers", {"edit": _flip_first_layer("upgrade_probe")}, "QE_UPDATE_FAILED"),
    ("upgrade-probe-wrote-no-report", {"edit": _set("upgrade_probe.report", None)}, "QE_UPDATE_FAILED"),
    ("write-state-wrote-no-record", {"edit": _set("write_state.report", None)}, "QE_UPDATE_FAILED"),
    ("previous-install-recorded-zero-bytes", {"edit": _set("previous_install.total_bytes", 0)}, "QE_UPDATE_FAILED"),
    ("downgrade-allowed-but-another-state-found",
     {"downgrade": "allow", "edit": _set("downgrade_check.report.state_sha256", sha_of("another state"))},
     "QE_UPDATE_FAILED"),
]




def _mutation(spoil: dict[str, Any]) -> Callable[[Path], list[str]]:
    return lambda tmp_path: evidence(tmp_path, **spoil).verify_argv()


# (id, mutation, code) for corpus_table.CORPUS.
UPDATE_ROWS: list[tuple[str, Callable[[Path], list[str]], Code]] = [
    (f"update-{row}", _mutation(spoil), Code(code)) for row, spoil, code in _ROWS
]
