"""Which layer refused a kernel-refusal step, held to the policy's step table (QE_STEP_WRONG_LAYER).

The rule the producer writes its journey verdict with and the verifier re-derives it with: a kernel step names
the layer that refused it, that layer is one its worker reports applied, and where the policy names a layer for
the platform it is that one; an ordinary step names none.
"""

from __future__ import annotations

from typing import Any

import pytest
from desktop_qualify.evidence_schemas import IsolationLayer, JourneyStep
from desktop_qualify.qualify_policy import StepExpectation
from desktop_qualify.qualify_verify import journey_facts

SHA = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
KERNEL = "kernel-refuses-exec-shell"
TABLE = {
    "bundled-skill-runs": StepExpectation.model_validate({"expect": "allow"}),
    KERNEL: StepExpectation.model_validate({
        "expect": "reject", "code": "CC_SKILL_SANDBOX_DENIED", "errno": ["EACCES", "EPERM"],
        # No layer for macOS: a platform the policy leaves out is not held to one.
        "layer": {"linux": "seccomp", "windows": "no-child-process"}}),
}
# What each layer refuses with ([isolation.refuses_with]).
REFUSES = {"seccomp": ["EPERM"], "landlock-fs": ["EACCES"], "landlock-net": ["EACCES"],
           "no-child-process": ["EACCES"], "sandbox-exec": ["EACCES", "EPERM"]}
LAYERS = [IsolationLayer(name=n, applied=n != "landlock-net", detail="") for n in
          ("no-new-privs", "landlock-fs", "landlock-net", "seccomp", "no-child-process", "sandbox-exec")]


def _steps(kernel_layer: str | None, ordinary_layer: str | None = None, errno: str = "EPERM",
           extra: dict[str, Any] | None = None) -> list[JourneyStep]:
    base = {"code": None, "errno": None, "detail": "", "passed": True}
    steps = [JourneyStep.model_validate({**base, "id": "bundled-skill-runs", "observed": "allow",
                                         "layer": ordinary_layer}),
             JourneyStep.model_validate({**base, "id": KERNEL, "observed": "reject",
                                         "code": "CC_SKILL_SANDBOX_DENIED", "errno": errno, "layer": kernel_layer})]
    if extra is not None:
        steps.append(JourneyStep.model_validate({**base, **extra}))
    return steps


def _facts(steps: list[JourneyStep], platform: str, refuses_with: dict[str, list[str]] | None = REFUSES) -> Any:
    return journey_facts(steps=steps, expected=TABLE, code_pattern="^CC_SKILL_[A-Z_]{1,64}$", exit_code=0,
                         timed_out=False, app_build_sha=SHA, sha=SHA, platform=platform, layers=LAYERS,
                         required_layers=None, refuses_with=refuses_with, probe_layers=None)


@pytest.mark.parametrize(("platform", "steps", "wrong"), [
    ("linux", _steps("seccomp"), None),
    ("windows", _steps("no-child-process", errno="EACCES"), None),
    # The policy names no layer for macOS: any applied layer, or none, is the app's to say.
    ("macos", _steps("sandbox-exec"), None),
    ("macos", _steps(None), None),
    # A step the policy does not require is not judged, whatever it names.
    ("linux", _steps("seccomp", extra={"id": "extra", "observed": "allow", "layer": "seccomp"}), None),
    ("linux", _steps("landlock-fs"), "refused by landlock-fs, the policy requires seccomp on linux"),
    ("windows", _steps("seccomp"), "refused by seccomp, the policy requires no-child-process on windows"),
    ("linux", _steps(None), "names no refusing layer, the policy requires seccomp"),
    # Reported, but not applied (or not reported at all): it cannot have refused anything.
    ("linux", _steps("landlock-net"), "refused by landlock-net, which the journey's worker does not report"),
    ("macos", _steps("language-guard"), "refused by language-guard, which the journey's worker does not report"),
    ("linux", _steps("seccomp", ordinary_layer="seccomp"), "bundled-skill-runs: names refusing layer seccomp"),
    # The errno re-derives the layer: seccomp never answers EACCES, whatever the step says.
    ("linux", _steps("seccomp", errno="EACCES"), "refused with EACCES, but seccomp refuses with EPERM"),
    ("windows", _steps("no-child-process", errno="EPERM"), "refused with EPERM, but no-child-process refuses with"),
    ("macos", _steps("no-new-privs"), "but no-new-privs is not in [isolation.refuses_with]"),
])  # fmt: skip
def test_the_refusing_layer_is_the_policys(platform: str, steps: list[JourneyStep], wrong: str | None) -> None:
    facts = _facts(steps, platform)
    if wrong is None:
        assert facts.passed, facts.problems
        assert facts.wrong_layers == ()
        return
    assert not facts.passed
    assert len(facts.wrong_layers) == 1
    assert wrong in facts.wrong_layers[0]
    # A wrong layer fails its step, and is one of the journey's problems (so the record's claims must say so).
    assert facts.wrong_layers[0] in facts.problems
    assert len(facts.failed) == 1


def test_without_the_refusals_table_the_errno_does_not_judge_the_layer() -> None:
    assert _facts(_steps("seccomp", errno="EACCES"), "linux", refuses_with=None).passed


def test_an_errno_the_policy_does_not_accept_is_that_problem_not_a_layer_one() -> None:
    facts = _facts(_steps("seccomp", errno="ENOENT"), "linux")
    assert facts.failed == (KERNEL,)
    assert facts.wrong_layers == ()
    assert any("errno ENOENT" in why for why in facts.problems)
