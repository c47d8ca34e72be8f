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
    """The document kind: always qualify-state."""
    version: Literal[1]
    """The version of the qualify-state format."""
    verb: StateVerb
    """Which state verb ran: write (create the known user state) or check (find it intact)."""
    app_version: ShortText
    """The app's own version, as the installed binary reports it."""
    build_sha: GitSha
    """The commit the installed binary says it was built from."""
    platform: Platform
    """The platform the app ran on."""
    # allow: the state was written, or found intact; reject: the app refused it (with its code); error: neither.
    observed: Literal["allow", "reject", "error"]
    """What happened: allow (state written or found intact), reject (the app refused it, with its code) or error."""
    code: AppCode | None
    """The app's refusal code, for a refused state; else None."""
    # One digest of the user state the app wrote or found (None when it refused or failed).
    state_sha256: Sha256Hex | None
    """The app's digest of the user state it wrote or found; None when it refused or failed."""
    detail: _Detail
    """What the app says about the state, for people."""


class StateStep(Record):
    """One run of a state verb by one installed version, against the journey's kept user home."""

    verb: StateVerb
    """Which state verb ran: write or check."""
    # The policy's argv for the verb, as written there.
    command: Argv
    """The policy's argv for the verb, as written there (placeholders unexpanded)."""
    exit_code: int | None
    """The process's exit status; None when it did not end on its own."""
    timed_out: bool
    """Whether the verb was stopped at the policy's time-out."""
    report: AppStateRecord | None
    """The qualify-state record the app wrote; None when none valid was read."""
    stderr_excerpt: Excerpt
    """The end of the process's standard error, bounded, for people."""
    passed: bool
    """The producer's verdict on the step: a claim the verifier re-derives from the facts and the policy."""


class PreviousRelease(Record):
    """The last qualified release the journey starts from, as the audit of its bundle established it."""

    bundle_sha256: Sha256Hex
    """The SHA-256 of the previous release's qualification bundle."""
    # The run the audit verified (its commit and run id), and its artifact for this platform (the file
    # installed was hashed against it).
    sha: GitSha
    """The commit the audited run qualified."""
    run_id: ShortText
    """The run id of the audited run."""
    artifact: ArtifactRef
    """The previous release's artifact for this platform (the file installed was hashed against it)."""
    # The anchor policy the bundle was audited under (the policy's [update] previous_policy, or itself).
    policy_sha256: Sha256Hex
    """The SHA-256 of the anchor policy the bundle was audited under."""
    audit_decision: Literal["QUALIFIED", "REJECTED"]
    """The audit's decision on the bundle (the journey starts only from QUALIFIED)."""


DowngradeRule = Literal["allow", "refuse"]
UpdateStepName = StepId


class UpdateRecord(Record):
    """The update journey's record: the last qualified release upgraded, rolled back, downgraded; each step's facts."""

    kind: Literal["update"] = "update"
    """The document kind: always update."""
    version: Literal[1] = 1
    """The version of this record's format."""
    previous: PreviousRelease
    """The last qualified release the journey started from, as the audit of its bundle established it."""
    installer: InstallerKind
    """The installer kind both versions were installed with (the policy's)."""
    # What the policy said about downgrades when the journey ran (checked against the policy again).
    downgrade: DowngradeRule
    """The policy's downgrade rule when the journey ran: allow, or refuse (with downgrade_code)."""
    downgrade_code: AppCode | None
    """The refusal code the older version must give on the candidate's state, when downgrades are refused."""
    # 1. the previous release into a fresh prefix; 2. it writes the known user state.
    previous_install: InstallRecord
    """Step 1: the previous release installed into a fresh prefix."""
    write_state: StateStep
    """Step 2: the previous release writes the known user state."""
    # 3. the candidate over it (same prefix, same home); 4. it finds the state; 5. its probe passes there.
    upgrade_install: InstallRecord
    """Step 3: the candidate installed over it (same prefix, same home)."""
    upgrade_check: StateStep
    """Step 4: the candidate finds the state intact."""
    upgrade_probe: LaunchProbeRecord
    """Step 5: the candidate's launch probe, run against that state."""
    # 6. the previous version restored with the state as it was before the upgrade; 7. it finds the state.
    rollback_install: InstallRecord
    """Step 6: the previous version restored, with the state as it was before the upgrade."""
    rollback_check: StateStep
    """Step 7: the restored previous version finds the state."""
    # 8. the previous version on the state the candidate left: the policy's downgrade rule.
    downgrade_check: StateStep
    """Step 8: the previous version on the state the candidate left, judged by the policy's downgrade rule."""
    failed_steps: list[UpdateStepName] = Field(max_length=16)
    """The steps that failed, by name: a claim the verifier re-derives."""
    passed: bool
    """The producer's verdict on the journey: a claim the verifier re-derives from the facts and the policy."""
