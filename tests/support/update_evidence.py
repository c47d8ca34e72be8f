"""Local evidence whose platform statement carries a passing update journey, under a policy that asks for it.

Shared by the update journey's verifier rows (tests/unit/test_update_verifier.py) and the leaf walk
(tests/unit/test_evidence_leaves.py): the previous release is OTHER_SHA's build, the candidate the
factory's; ``edit`` spoils the update record before it is signed.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop_qualify.qualify_policy import host_platform

from support.evidence_factory import EXECUTABLES, OTHER_SHA, Evidence, PlatformSpec, make_evidence

Edit = Callable[[dict[str, Any]], None]
STATE_WRITE = ["{executable}", "state", "write", "--record", "{record}"]
STATE_CHECK = ["{executable}", "state", "check", "--record", "{record}"]
NEWER = "CC_SKILL_STATE_NEWER"


def sha_of(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


STATE = sha_of("the user state")


def state_step(verb: str, sha: str, *, observed: str = "allow", code: str | None = None,
           digest: str | None = STATE) -> dict[str, Any]:
    report = {"kind": "qualify-state", "version": 1, "verb": verb, "app_version": "0.1.0", "build_sha": sha,
              "platform": host_platform(), "observed": observed, "code": code,
              "state_sha256": digest if observed == "allow" else None, "detail": ""}
    return {"verb": verb, "command": list(STATE_WRITE if verb == "write" else STATE_CHECK),
            "exit_code": 0 if observed == "allow" else 3, "timed_out": False, "report": report,
            "stderr_excerpt": "", "passed": True}


def update_record(pred: dict[str, Any], *, downgrade: str) -> dict[str, Any]:
    """A passing update journey for this predicate: the previous release is OTHER_SHA's build."""
    platform = pred["platform"]
    prev_digest, prev_exe = sha_of("previous artifact"), sha_of("previous executable")
    previous_install = {**copy.deepcopy(pred["install"]), "artifact_sha256": prev_digest,
                        "executable_sha256": prev_exe, "executable": EXECUTABLES[platform]}
    refused = downgrade == "refuse"
    return {
        "kind": "update", "version": 1,
        "previous": {"bundle_sha256": sha_of("bundle"), "sha": OTHER_SHA, "run_id": "local-previous",
                     "artifact": {"name": pred["build"]["artifact"]["name"].replace(pred["run"]["sha"][:12],
                                                                                  OTHER_SHA[:12]),
                                  "size": 4096, "sha256": prev_digest},
                     "policy_sha256": sha_of("previous policy"), "audit_decision": "QUALIFIED"},
        "installer": "archive", "downgrade": downgrade, "downgrade_code": NEWER if refused else None,
        "previous_install": previous_install,
        "write_state": state_step("write", OTHER_SHA),
        "upgrade_install": copy.deepcopy(pred["install"]),
        "upgrade_check": state_step("check", pred["run"]["sha"]),
        "upgrade_probe": copy.deepcopy(pred["launch_probe"]),
        "rollback_install": copy.deepcopy(previous_install),
        "rollback_check": state_step("check", OTHER_SHA),
        "downgrade_check": state_step("check", OTHER_SHA, observed="reject", code=NEWER) if refused
        else state_step("check", OTHER_SHA),
        "failed_steps": [], "passed": True,
    }


def _policy_sections(downgrade: str) -> str:
    rule = f'{{ refuse = "{NEWER}" }}' if downgrade == "refuse" else '"allow"'
    return (f"\n[app.state]\nwrite = {STATE_WRITE!r}\ncheck = {STATE_CHECK!r}\n\n[update]\ndowngrade = {rule}\n"
            .replace("'", '"'))


def evidence(tmp_path: Path, *, edit: Edit | None = None, downgrade: str = "refuse", policy_update: bool = True,
             with_update: bool = True) -> Evidence:
    ev = make_evidence(tmp_path, aggregate=False)
    if policy_update:
        with ev.policy_path.open("a", encoding="utf-8") as fh:
            fh.write(_policy_sections(downgrade))

    def add(pred: dict[str, Any]) -> None:
        if with_update:
            pred["update"] = update_record(pred, downgrade=downgrade)
            if edit is not None:
                edit(pred["update"])

    ev.write_platform(PlatformSpec(host_platform(), edit=add))
    ev.write_aggregate()
    return ev


