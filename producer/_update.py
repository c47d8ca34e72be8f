"""The update journey (README, "The update journey"): from the last qualified release to the candidate and back.

In its own work folder, with one user home that every step shares (the user
state lives there, never in the installed prefix):

1. install the audited previous release into a fresh prefix with the policy's installer;
2. the previous version writes the known user state (``[app.state] write``);
   the home is then backed up, as an updater keeps the state it may roll back to;
3. the candidate is installed over it: the prefix's files replaced, the home kept;
4. the candidate checks the state (``[app.state] check``); 5. its probe runs in that home;
   the home is set aside as the candidate left it;
6. the previous release is installed again and the home restored from the backup;
7. the previous version checks the state (the rollback);
8. the home as the candidate left it is put back, and the previous version checks it: the policy's
   downgrade rule says whether it must open it or refuse it with a code.

Each step is recorded with its facts; ``update_facts`` (shared with the verifier) then judges them.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from desktop_qualify.evidence_schemas import (
    Code,
    InstallRecord,
    LaunchProbeRecord,
    QualificationError,
    StateStep,
    UpdateRecord,
)
from desktop_qualify.qualify_verify import UpdateRules, step_claims, update_facts

from ._launch import RunPlan, state_verb
from .installers import PrefixGrant, SignatureRequirement, install_expected
from .previous import AuditedPrevious


@dataclass(frozen=True)
class UpdatePlan:
    previous: AuditedPrevious
    candidate_archive: Path
    rules: UpdateRules
    # Builds the plan of one command (the policy's argv, its timeout): the probe's and the state verbs'.
    plan_for: Callable[[list[str], int], RunPlan]
    probe: Callable[[Path, InstallRecord, Path], LaunchProbeRecord]
    state_timeout: int
    # What the platform grants on each install of the journey (Windows: the app's AppContainer capability).
    grant: PrefixGrant | None = None
    # What the policy and the job ask of a package's own signature, as for the install stage: the previous
    # release and the candidate are installed by the same ``.pkg``/``.msi`` installer, so an unsigned package
    # the install stage would refuse is refused here too (the journey installs what users update through).
    signatures: SignatureRequirement | None = None


def _replace_tree(source: Path, dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    if dest.exists():
        raise QualificationError(Code.ENVIRONMENT, f"{dest}: cannot clear the update journey's folder")
    shutil.copytree(source, dest, symlinks=True)


class _Journey:
    def __init__(self, plan: UpdatePlan, work: Path) -> None:
        self.plan, self.work = plan, work
        self.prefix, self.home = work / "install", work / "home"

    def install(self, archive: Path, sha256: str, whose: str) -> InstallRecord:
        # "Over it": the app's files are replaced in the same prefix; the user's home is not touched.
        shutil.rmtree(self.prefix, ignore_errors=True)
        return install_expected(archive=archive, sha256=sha256, prefix=self.prefix, kind=self.plan.rules.installer,
                                executable=self.plan.rules.executable, whose=whose, grant=self.plan.grant,
                                signatures=self.plan.signatures)

    def state(self, installed: InstallRecord, verb: Literal["write", "check"]) -> StateStep:
        rules = self.plan.rules
        argv = list(rules.state_write if verb == "write" else rules.state_check)
        return state_verb(prefix=self.prefix, install=installed, verb=verb,
                          plan=self.plan.plan_for(argv, self.plan.state_timeout), home=self.home)


def run_update(plan: UpdatePlan, work: Path) -> UpdateRecord:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    j = _Journey(plan, work)
    previous, rules = plan.previous, plan.rules
    before, left = work / "home-before-upgrade", work / "home-after-upgrade"
    j.home.mkdir()
    prev_install = j.install(previous.artifact, previous.facts.artifact.sha256, "the audited previous release's")
    write = j.state(prev_install, "write")
    _replace_tree(j.home, before)
    upgrade_install = j.install(plan.candidate_archive, rules.candidate_artifact_sha256, "the build's")
    upgrade_check = j.state(upgrade_install, "check")
    upgrade_probe = plan.probe(j.prefix, upgrade_install, j.home)
    _replace_tree(j.home, left)
    rollback_install = j.install(previous.artifact, previous.facts.artifact.sha256, "the audited previous release's")
    _replace_tree(before, j.home)
    rollback_check = j.state(rollback_install, "check")
    _replace_tree(left, j.home)
    downgrade_check = j.state(rollback_install, "check")
    record = UpdateRecord(
        previous=previous.facts, installer=rules.installer, downgrade=rules.downgrade,
        downgrade_code=rules.downgrade_code,
        previous_install=prev_install, write_state=write, upgrade_install=upgrade_install,
        upgrade_check=upgrade_check, upgrade_probe=upgrade_probe, rollback_install=rollback_install,
        rollback_check=rollback_check, downgrade_check=downgrade_check, failed_steps=[], passed=False)
    return judged(record, rules)


def judged(record: UpdateRecord, rules: UpdateRules) -> UpdateRecord:
    """The record with every verdict the shared rule gives: the verifier will re-derive exactly these."""
    facts = update_facts(record, rules)
    verdicts = {name: facts.step_passed(name) for name in step_claims(record)}
    fields = {"previous-install": "previous_install", "write-state": "write_state",
              "upgrade-install": "upgrade_install", "upgrade-check": "upgrade_check",
              "rollback-install": "rollback_install", "rollback-check": "rollback_check",
              "downgrade-check": "downgrade_check"}
    changes: dict[str, object] = {
        field: getattr(record, field).model_copy(update={"passed": verdicts[name]}) for name, field in fields.items()
    }
    return record.model_copy(update={**changes, "failed_steps": list(facts.failed), "passed": facts.passed})


__all__ = ["UpdatePlan", "judged", "run_update"]
