"""The kernel steps the app would record on macOS and Windows, judged by the verifier's rule under the release
policy: the platforms that cannot run here, held at the seam where the app's errno table meets the policy's
step table. Each case feeds the app's own step builder the errno each platform's layers give, with the layer
report that platform's worker would make, and requires exactly the verdict the policy's ``layer`` table gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import skillhost.journey._kernel as journey_kernel
from desktop_qualify.evidence_schemas import AppStep, IsolationLayer
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_verify import journey_facts
from skillhost.journey._run import observed
from skillhost.os_sandbox._interface import layer
from skillhost.worker._hostile import OPERATIONS
from skillhost_testutil import REPO

RELEASE = load_policy(REPO / "policies" / "release.toml").file
WINDOWS_FULL = ("job-object", "no-child-process", "appcontainer", "restricted-token")
WINDOWS_FALLBACK = ("job-object", "no-child-process", "restricted-token")


def _judge(platform: str, errnos: dict[str, str], applied: tuple[str, ...], monkeypatch: pytest.MonkeyPatch,
           tmp_path: Path) -> Any:
    monkeypatch.setattr(journey_kernel, "platform_key", lambda: platform)
    reported = [layer(name, applied=True, detail="") for name in applied]
    # macOS: the worker's own sandbox_check said the profile denies each (the attempt's layer); the errno alone
    # credits no layer there (tests/reference_app/test_macos_sandbox_attribution.py).
    said = {"layer": "sandbox-exec"} if platform == "macos" else {}
    steps = [journey_kernel._attempt_step(op, {"op": op, "ok": False, "errno": errnos[op], **said},
                                          tmp_path / "absent", reported) for op in OPERATIONS]
    table = {sid: want for sid, want in RELEASE.journey.steps.items() if sid.startswith("kernel-refuses-")}
    layers = [IsolationLayer.model_validate(entry) for entry in reported]
    assert RELEASE.isolation is not None
    return steps, journey_facts(
        steps=[AppStep.model_validate(observed(s)) for s in steps], expected=table,
        code_pattern=RELEASE.app.codes.pattern, exit_code=0, timed_out=False, app_build_sha="0" * 40, sha="0" * 40,
        platform=platform, layers=layers, required_layers=None, refuses_with=RELEASE.isolation.refuses_with,
        probe_layers=None)


def test_windows_with_an_appcontainer_passes_every_kernel_step(monkeypatch, tmp_path) -> None:
    steps, facts = _judge("windows", dict.fromkeys(OPERATIONS, "EACCES"), WINDOWS_FULL, monkeypatch, tmp_path)
    assert facts.passed, facts.problems
    assert {s["id"]: s["layer"] for s in steps} == {
        "kernel-refuses-read-outside-bundle": "appcontainer", "kernel-refuses-write-outside-tmp": "appcontainer",
        "kernel-refuses-tcp-connect-loopback": "appcontainer", "kernel-refuses-ptrace-host": "appcontainer",
        "kernel-refuses-exec-shell": "no-child-process"}  # fmt: skip


def test_windows_under_the_fallback_token_fails_the_steps_the_appcontainer_owns(monkeypatch, tmp_path) -> None:
    """The restricted token refuses the write and the host open itself (wrong layer), nothing refuses the read
    or the connect (no layer): the four AppContainer steps fail, the exec (the child-process policy) passes."""
    steps, facts = _judge("windows", dict.fromkeys(OPERATIONS, "EACCES"), WINDOWS_FALLBACK, monkeypatch, tmp_path)
    owned = {sid for sid, want in RELEASE.journey.steps.items()
             if want.layer is not None and want.layer.windows == "appcontainer"}
    assert set(facts.failed) == owned
    assert sorted(why.split(":", 1)[0] for why in facts.wrong_layers) == [
        "kernel-refuses-ptrace-host", "kernel-refuses-write-outside-tmp"]
    assert {s["id"]: s["layer"] for s in steps if s["layer"] is not None} == {
        "kernel-refuses-write-outside-tmp": "restricted-token", "kernel-refuses-ptrace-host": "restricted-token",
        "kernel-refuses-exec-shell": "no-child-process"}  # fmt: skip


def test_windows_refusals_with_an_errno_no_layer_gives_fail(monkeypatch, tmp_path) -> None:
    # EPERM is accepted by the step table, but no Windows layer answers with it: the app attributes it to none.
    _, facts = _judge("windows", dict.fromkeys(OPERATIONS, "EPERM"), WINDOWS_FULL, monkeypatch, tmp_path)
    assert set(facts.failed) == {f"kernel-refuses-{op}" for op in OPERATIONS}


@pytest.mark.parametrize("errno", ["EPERM", "EACCES"])
def test_macos_passes_every_kernel_step_by_the_sandbox_profile(errno, monkeypatch, tmp_path) -> None:
    steps, facts = _judge("macos", dict.fromkeys(OPERATIONS, errno), ("sandbox-exec",), monkeypatch, tmp_path)
    assert facts.passed, facts.problems
    assert {s["layer"] for s in steps} == {"sandbox-exec"}


def test_macos_without_the_profile_fails_every_kernel_step(monkeypatch, tmp_path) -> None:
    _, facts = _judge("macos", dict.fromkeys(OPERATIONS, "EPERM"), (), monkeypatch, tmp_path)
    assert set(facts.failed) == {f"kernel-refuses-{op}" for op in OPERATIONS}
