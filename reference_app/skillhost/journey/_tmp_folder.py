"""Journey step: the worker's own folder stays usable under the sandbox that refuses its escapes.

The hostile worker (``kernel_steps``) also writes a file in its temporary
folder, renames it and deletes it (``worker._hostile.tmp_round_trip``). A
sandbox can be tight by accident: on Windows the AppContainer's token is Low
integrity, so an unlabelled (Medium) folder refuses every write whatever its
DACL grants, and without ``DELETE`` a rename or a delete fails. The step passes
only when all three work there *and* the same worker's write outside its folder
was refused by a layer it reports (``kernel-refuses-write-outside-tmp``): a
folder that is usable because nothing is confined proves nothing. On Linux the
same step holds Landlock's grant on the folder (every right but execute).
"""

from __future__ import annotations

from collections.abc import Mapping

from skillhost.journey._step import Step, _step
from skillhost.worker import TMP_ROUND_TRIP

STEP_ID = "worker-tmp-write-rename-delete"
# The worker could not use its own folder: the sandbox is wrong, not the skill.
UNUSABLE_CODE = "CC_SKILL_SANDBOX_TMP_UNUSABLE"


def tmp_folder_step(answer: Mapping[str, object], outside: Step) -> Step:
    """The step from the hostile worker's ``answer`` and the step of its write outside the folder."""
    found = answer.get("tmp_round_trip")
    if not isinstance(found, dict) or found.get("op") != TMP_ROUND_TRIP or not isinstance(found.get("ok"), bool):
        return _step(STEP_ID, "allow", None, "reject", UNUSABLE_CODE, "no result from the worker for its own folder")
    if not found["ok"]:
        stage, errno = str(found.get("stage"))[:16], str(found.get("errno"))[:16]
        return _step(STEP_ID, "allow", None, "reject", UNUSABLE_CODE,
                     f"{stage} in its own folder refused with {errno}")
    confined = outside["passed"]
    detail = "write, rename and delete in its own folder; the write outside it was " + (
        "refused" if confined else f"not refused by a reported layer ({outside['detail'][:200]})")
    return _step(STEP_ID, "allow", None, "allow", None, detail, confined)
