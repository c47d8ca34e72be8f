"""Issue 35 item 3: the worker's own folder stays usable under its sandbox (write, rename, delete), and the step
that proves it also requires the same worker's write outside the folder to have been refused.

The journey runs the step for real on Linux (its drift test requires ``allow``; Landlock grants the folder every
right but execute, and the seccomp list carries rename and unlink); here, the worker's round trip and the step's
judgement, each way it can go.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
import skillhost.worker._hostile as hostile
from skillhost.journey._kernel import kernel_steps
from skillhost.journey._step import _step
from skillhost.journey._tmp_folder import STEP_ID, UNUSABLE_CODE, tmp_folder_step
from skillhost.os_sandbox import platform_key


def test_the_round_trip_writes_renames_and_deletes_and_leaves_nothing(tmp_path: Path) -> None:
    assert hostile.tmp_round_trip(str(tmp_path)) == {"op": "tmp-write-rename-delete", "ok": True, "errno": None,
                                                     "stage": None}  # fmt: skip
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("stage", "patch"), [("rename", "rename"), ("delete", "remove")])
def test_the_round_trip_names_the_stage_that_was_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         stage: str, patch: str) -> None:
    def refuse(*_args: object) -> None:
        raise PermissionError(errno.EACCES, "refused")

    monkeypatch.setattr(hostile.os, patch, refuse)
    assert hostile.tmp_round_trip(str(tmp_path)) == {"op": "tmp-write-rename-delete", "ok": False,
                                                     "errno": "EACCES", "stage": stage}  # fmt: skip


def test_a_folder_it_cannot_write_fails_at_the_write(tmp_path: Path) -> None:
    answer = hostile.tmp_round_trip(str(tmp_path / "no-such-folder"))
    assert (answer["ok"], answer["stage"], answer["errno"]) == (False, "write", "ENOENT")


_REFUSED_OUTSIDE = _step("kernel-refuses-write-outside-tmp", "reject", "CC_SKILL_SANDBOX_DENIED", "reject",
                         "CC_SKILL_SANDBOX_DENIED", "refused with EACCES by landlock-fs", errno="EACCES",
                         layer="landlock-fs")  # fmt: skip
_ALLOWED_OUTSIDE = _step("kernel-refuses-write-outside-tmp", "reject", "CC_SKILL_SANDBOX_DENIED", "allow", None,
                         "write-outside-tmp: the operating system allowed it")  # fmt: skip
_OK = {"tmp_round_trip": {"op": "tmp-write-rename-delete", "ok": True, "errno": None, "stage": None}}


def test_the_step_passes_when_its_folder_works_and_the_write_outside_was_refused() -> None:
    step = tmp_folder_step(_OK, _REFUSED_OUTSIDE)
    assert (step["id"], step["expected"], step["observed"], step["observed_code"], step["passed"]) == (
        STEP_ID, "allow", "allow", None, True)
    assert "the write outside it was refused" in step["detail"]


def test_a_usable_folder_proves_nothing_when_nothing_is_confined() -> None:
    step = tmp_folder_step(_OK, _ALLOWED_OUTSIDE)
    assert step["observed"] == "allow"
    assert not step["passed"]
    assert "not refused by a reported layer" in step["detail"]


@pytest.mark.parametrize("answer", [
    {"tmp_round_trip": {"op": "tmp-write-rename-delete", "ok": False, "errno": "EACCES", "stage": "write"}},
    {"tmp_round_trip": {"op": "tmp-write-rename-delete", "ok": "yes"}},
    {"tmp_round_trip": {"op": "read-outside-bundle", "ok": True}},
    {},
])  # fmt: skip
def test_a_refused_or_missing_round_trip_is_a_rejection_with_its_own_code(answer: dict[str, object]) -> None:
    step = tmp_folder_step(answer, _REFUSED_OUTSIDE)
    assert (step["observed"], step["observed_code"], step["passed"]) == ("reject", UNUSABLE_CODE, False)


@pytest.mark.skipif(platform_key() != "linux", reason="the Linux layer, confined for real")
def test_the_confined_linux_worker_uses_its_folder_and_is_refused_outside_it(tmp_path: Path) -> None:
    steps, layers = kernel_steps(tmp_path)
    by_id = {step["id"]: step for step in steps}
    assert [s["id"] for s in steps][-1] == STEP_ID  # registered after the five kernel steps
    assert {entry["name"] for entry in layers if entry["applied"]} >= {"landlock-fs", "seccomp"}
    assert by_id[STEP_ID]["passed"], by_id[STEP_ID]
    assert by_id["kernel-refuses-write-outside-tmp"]["passed"]
