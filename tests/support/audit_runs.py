"""Several signed local runs under one policy, for audit reports: one of them fails, their names sort badly.

The folders are written in run order ``run1``, ``run2``, ``run10`` (a text sort
would give run1, run10, run2), each a whole three-platform run with its own run
id; ``run2``'s (or ``failing``'s) macOS journey observed an unsigned skill being allowed, a
failure the verifier must report as ``QE_JOURNEY_INCOMPLETE`` with the step's
expected and observed outcome. ``hostile`` text can be planted in run2's Linux install record (a
failed install whose reason quotes it) to check that the report escapes it.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.evidence_factory import DEFAULT_RUN_ID, OTHER_SHA, PlatformSpec, make_evidence

PLATFORMS = ("linux", "macos", "windows")
FAILING_STEP = "external-unsigned-rejected"
# Markup for an evidence field the reports print (run2's Linux install failure): it must show as text.
HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>|`**x**`"


@dataclass(frozen=True)
class AuditRuns:
    policy: Path
    folders: list[Path]  # in run order
    run_ids: list[str]  # in run order
    failing: Path


def allow_unsigned(pred: dict[str, Any]) -> None:
    """The journey observed an unsigned external skill run: a fail-closed path that failed open.

    The record is otherwise honest (its step and journey verdicts agree with its facts), so the one
    problem is the observation itself.
    """
    journey = pred["journey"]
    step = next(s for s in journey["steps"] if s["id"] == FAILING_STEP)
    step.update(observed="allow", code=None, passed=False, detail="the unsigned skill ran")
    journey["failed_steps"] = [FAILING_STEP]
    journey["passed"] = False


def make_audit_runs(tmp_path: Path, *, hostile: str | None = None, failing: str = "run2") -> AuditRuns:
    first_specs = [PlatformSpec(p, edit=allow_unsigned if failing == "run1" and p == "macos" else None)
                   for p in PLATFORMS]
    ev = make_evidence(tmp_path, platforms=first_specs, run_id=f"{DEFAULT_RUN_ID}-1")
    first = tmp_path / "runs" / "run1"
    first.parent.mkdir(parents=True)
    shutil.move(ev.evidence_dir, first)
    folders, run_ids = [first], [ev.run_id]
    for name, sha in (("run2", OTHER_SHA), ("run10", ev.sha)):
        time.sleep(0.01)  # distinct run times, whatever the clock's resolution
        folder = tmp_path / "runs" / name
        folder.mkdir()
        ev.evidence_dir, ev.sha, ev.run_id = folder, sha, f"{DEFAULT_RUN_ID}-{name[3:]}"
        ev.platforms = []
        for platform in PLATFORMS:
            edit = allow_unsigned if name == failing and platform == "macos" else None
            if hostile is not None and name == "run2" and platform == "linux":
                def plant(pred: dict[str, Any], text: str = hostile) -> None:
                    pred["install"]["failure"] = text[:256]
                edit = plant
            ev.write_platform(PlatformSpec(platform, edit=edit))
        ev.write_aggregate()
        folders.append(folder)
        run_ids.append(ev.run_id)
    return AuditRuns(policy=ev.policy_path, folders=folders, run_ids=run_ids,
                     failing=next(f for f in folders if f.name == failing))
