"""The update journey (docs/design.md §5): the last qualified release, upgraded, rolled back, downgraded.

Two shapes: ``AppStateRecord``, what an app's state verb writes to the file
the producer names (the app contract's ``qualify-state`` v1, untrusted input),
and ``UpdateRecord``, the producer's record of the whole journey, one field per
step, each with its own facts. Every ``passed`` here is a claim the verifier
re-derives from the facts and the policy's ``[update]`` table.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ._app_contract import InstallerKind
from ._records import Argv, ArtifactRef, InstallRecord, LaunchProbeRecord
from ._types import AppCode, Excerpt, GitSha, Platform, Record, Sha256Hex, ShortText, StepId

StateVerb = Literal["write", "check"]
_Detail = Annotated[str, Field(max_length=400)]


class AppStateRecord(Record):
    """``qualify-state`` v1: a state verb's outcome, written by the installed app to ``{record}``."""

    kind: Literal["qualify-state"]
    version: Literal[1]
    verb: StateVerb
    app_version: ShortText
    build_sha: GitSha
    platform: Platform
    # allow: the state was written, or found intact; reject: the app refused it (with its code); error: neither.
    observed: Literal["allow", "reject", "error"]
    code: AppCode | None
    # One digest of the user state the app wrote or found (None when it refused or failed).
    state_sha256: Sha256Hex | None
    detail: _Detail


class StateStep(Record):
    """One run of a state verb by one installed version, against the journey's kept user home."""

    verb: StateVerb
    # The policy's argv for the verb, as written there.
    command: Argv
    exit_code: int | None
    timed_out: bool
    report: AppStateRecord | None
    stderr_excerpt: Excerpt
    passed: bool


class PreviousRelease(Record):
    """The last qualified release the journey starts from, as the audit of its bundle established it."""

    bundle_sha256: Sha256Hex
    # The run the audit verified (its commit and run id), and its artifact for this platform (the file
    # installed was hashed against it).
    sha: GitSha
    run_id: ShortText
    artifact: ArtifactRef
    # The anchor policy the bundle was audited under (the policy's [update] previous_policy, or itself).
    policy_sha256: Sha256Hex
    audit_decision: Literal["QUALIFIED", "REJECTED"]


DowngradeRule = Literal["allow", "refuse"]
UpdateStepName = StepId


class UpdateRecord(Record):
    kind: Literal["update"] = "update"
    version: Literal[1] = 1
    previous: PreviousRelease
    installer: InstallerKind
    # What the policy said about downgrades when the journey ran (checked against the policy again).
    downgrade: DowngradeRule
    downgrade_code: AppCode | None
    # 1. the previous release into a fresh prefix; 2. it writes the known user state.
    previous_install: InstallRecord
    write_state: StateStep
    # 3. the candidate over it (same prefix, same home); 4. it finds the state; 5. its probe passes there.
    upgrade_install: InstallRecord
    upgrade_check: StateStep
    upgrade_probe: LaunchProbeRecord
    # 6. the previous version restored with the state as it was before the upgrade; 7. it finds the state.
    rollback_install: InstallRecord
    rollback_check: StateStep
    # 8. the previous version on the state the candidate left: the policy's downgrade rule.
    downgrade_check: StateStep
    failed_steps: list[UpdateStepName] = Field(max_length=16)
    passed: bool
