"""qualify_verify/_outcomes.py, install, launch probe and journey: the exact code and message of each refusal (a
failed install quoted to 300 characters, other bytes installed, no installer in the policy, the wrong installer kind
or executable; a probe that timed out, exited non-zero or gave no report; a command or display other than the
policy's), each stage's name and field in a self-contradicting record's message, the journey's one bounded summary
(cut at 1500 characters, marked ``...`` only past it) beside its wrong-layer steps under their own code, and the
wording of the journey's, layers' and checks' problems. Written for the mutants of the module that survived the
verifier's tests (docs/mutation.md).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from desktop_qualify.evidence_schemas import Code, IsolationLayer, JourneyStep
from desktop_qualify.qualify_policy import StepExpectation
from desktop_qualify.qualify_verify._outcomes import (
    StageOutcome,
    assess_install,
    assess_journey,
    assess_probe,
    check_problems,
    journey_facts,
    layer_problems,
    platform_journey_facts,
)

SHA = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
OTHER_SHA = "c0ffee0000000000000000000000000000000001"
ARTIFACT = "a" * 64
EXE = "e" * 64


def _codes(outcome: StageOutcome) -> list[tuple[Code, str]]:
    return [(p.code, p.message) for p in outcome.problems]


# -- install ------------------------------------------------------------------------------------------------


def _install(**changes: object) -> Any:
    inst: dict[str, object] = {"failure": None, "artifact_sha256": ARTIFACT, "method": "deb",
                               "executable": "/usr/bin/app", "file_count": 3, "total_bytes": 100,
                               "executable_sha256": EXE, "manifest_sha256": "b" * 64, "package_signature": None,
                               "passed": True}
    inst.update(changes)
    return SimpleNamespace(platform="linux", install=SimpleNamespace(**inst),
                           build=SimpleNamespace(artifact=SimpleNamespace(sha256=ARTIFACT)))


def _install_exp(*, installer: bool = True) -> Any:
    target = SimpleNamespace(kind="deb", executable="/usr/bin/app") if installer else None
    return SimpleNamespace(install_for=lambda _platform: target,
                           accepted_signing=lambda _platform: frozenset({"unsigned"}))


def test_an_install_as_the_policy_names_it_passes() -> None:
    outcome = assess_install(_install(), _install_exp())
    assert (outcome.stage, outcome.problems) == ("install", ())


def test_a_failed_install_is_refused_quoting_its_failure_to_300_characters() -> None:
    failure = "x" * 300 + "TAIL"
    outcome = assess_install(_install(failure=failure, passed=False), _install_exp())
    assert _codes(outcome) == [(Code.INSTALL_FAILED, "install failed: " + "x" * 300)]


def test_an_install_of_other_bytes_than_the_built_artifact_is_refused() -> None:
    outcome = assess_install(_install(artifact_sha256="c" * 64, passed=False), _install_exp())
    assert _codes(outcome) == [(Code.INSTALL_FAILED, "the install installed other bytes than the built artifact")]


def test_a_platform_the_policy_names_no_installer_for_is_refused_naming_it() -> None:
    outcome = assess_install(_install(passed=False), _install_exp(installer=False))
    assert _codes(outcome) == [(Code.INSTALL_FAILED, "the policy names no installer for linux")]


def test_an_installer_kind_or_executable_other_than_the_policys_is_refused_naming_both() -> None:
    outcome = assess_install(_install(method="rpm", executable="/opt/evil", passed=False), _install_exp())
    assert _codes(outcome) == [
        (Code.INSTALL_FAILED, "install method 'rpm' is not the policy's installer kind 'deb'"),
        (Code.INSTALL_FAILED, "the installed executable is '/opt/evil', the policy's is '/usr/bin/app'")]


# -- launch probe -------------------------------------------------------------------------------------------

PROBE_COMMAND = ("app", "--probe")


def _report(**changes: object) -> Any:
    report: dict[str, object] = {"build_sha": SHA, "executable_sha256": EXE, "platform": "linux", "checks": [],
                                 "isolation_layers": []}
    report.update(changes)
    return SimpleNamespace(**report)


def _probe(**changes: object) -> Any:
    probe: dict[str, object] = {"report": _report(), "exit_code": 0, "timed_out": False,
                                "command": list(PROBE_COMMAND), "display": ":99", "build_sha_matches": True,
                                "executable_matches_install": True, "passed": True}
    probe.update(changes)
    return SimpleNamespace(platform="linux", source_gate=SimpleNamespace(sha=SHA),
                           install=SimpleNamespace(executable_sha256=EXE), launch_probe=SimpleNamespace(**probe))


PROBE_EXP = SimpleNamespace(probe_checks=(), layers_for=lambda _platform: None, probe_command=PROBE_COMMAND,
                            display_for=lambda _platform: ":99")


def test_a_probe_as_the_policy_runs_it_passes_under_the_stages_name() -> None:
    outcome = assess_probe(_probe(), PROBE_EXP)
    assert (outcome.stage, outcome.problems) == ("launch probe", ())


def test_a_probe_that_timed_out_is_refused_for_that_even_with_exit_status_0() -> None:
    # Its own verdict says failed, as the facts give: the only problem is the time-out.
    outcome = assess_probe(_probe(timed_out=True, passed=False), PROBE_EXP)
    assert _codes(outcome) == [(Code.PROBE_FAILED, "the launch probe timed out")]


def test_a_probe_that_exited_non_zero_is_refused_naming_its_status() -> None:
    outcome = assess_probe(_probe(exit_code=3, passed=False), PROBE_EXP)
    assert _codes(outcome) == [(Code.PROBE_FAILED, "the launch probe exited 3")]


def test_a_probe_whose_app_gave_no_report_is_refused_saying_so() -> None:
    outcome = assess_probe(_probe(report=None, build_sha_matches=False, executable_matches_install=False,
                                  passed=False), PROBE_EXP)
    assert _codes(outcome) == [(Code.PROBE_FAILED, "the launched app gave no report")]


def test_a_report_for_another_platform_is_refused_with_the_reports_own_problem() -> None:
    outcome = assess_probe(_probe(report=_report(platform="windows"), passed=False), PROBE_EXP)
    assert _codes(outcome) == [
        (Code.PROBE_FAILED, "the app reports platform windows, the statement is for linux")]


def test_a_probe_command_and_display_other_than_the_policys_are_each_refused_naming_both() -> None:
    outcome = assess_probe(_probe(command=["app", "--fake"], display=":0"), PROBE_EXP)
    assert _codes(outcome) == [
        (Code.PROBE_FAILED, "the launch probe ran ['app', '--fake'], the policy's command is ['app', '--probe']"),
        (Code.PROBE_FAILED, "the launch probe ran under display ':0', the policy's is ':99'")]


def test_each_probe_claim_its_facts_contradict_is_refused_naming_the_stage_and_the_field() -> None:
    outcome = assess_probe(_probe(build_sha_matches=False, executable_matches_install=False, passed=False),
                           PROBE_EXP)
    assert _codes(outcome) == [
        (Code.PROBE_FAILED,
         "the launch probe record contradicts itself: build_sha_matches is False, its facts give True"),
        (Code.PROBE_FAILED,
         "the launch probe record contradicts itself: executable_matches_install is False, its facts give True"),
        (Code.PROBE_FAILED, "the launch probe record contradicts itself: passed is False, its facts give True")]


# -- journey ------------------------------------------------------------------------------------------------

KERNEL = "kernel-refuses-exec-shell"
ALLOW = StepExpectation.model_validate({"expect": "allow"})
TABLE = {
    "bundled-skill-runs": ALLOW,
    KERNEL: StepExpectation.model_validate({
        "expect": "reject", "code": "CC_SKILL_SANDBOX_DENIED", "errno": ["EACCES", "EPERM"],
        "layer": {"linux": "seccomp"}}),
}
LAYERS = [IsolationLayer(name=n, applied=True, detail="") for n in ("landlock-fs", "seccomp")]
REFUSES = {"seccomp": ["EPERM"], "landlock-fs": ["EACCES", "EPERM"]}
PASSING = {
    "bundled-skill-runs": {"observed": "allow"},
    KERNEL: {"observed": "reject", "code": "CC_SKILL_SANDBOX_DENIED", "errno": "EPERM", "layer": "seccomp"},
}
JOURNEY_COMMAND = ("app", "--journey")


def _step(step_id: str, **fields: object) -> JourneyStep:
    base: dict[str, object] = {"code": None, "errno": None, "layer": None, "detail": "", "passed": True}
    return JourneyStep.model_validate({**base, "id": step_id, **fields})


def _journey_exp(table: dict[str, StepExpectation] | None = None, *, layers: list[str] | None = None) -> Any:
    return SimpleNamespace(steps=TABLE if table is None else table, code_pattern="^CC_SKILL_[A-Z_]{1,64}$",
                           layers_for=lambda _platform: layers, refuses_with=REFUSES, journey_command=JOURNEY_COMMAND,
                           display_for=lambda _platform: ":99")


def _journey_predicate(steps: list[JourneyStep] | None = None, **changes: object) -> Any:
    steps = [_step(k, **v) for k, v in PASSING.items()] if steps is None else steps
    journey: dict[str, object] = {
        "steps": steps, "exit_code": 0, "timed_out": False, "app_build_sha": SHA, "isolation_layers": LAYERS,
        "command": list(JOURNEY_COMMAND), "display": ":99", "required_steps": list(TABLE), "missing_steps": [],
        "failed_steps": [], "passed": True}
    journey.update(changes)
    return SimpleNamespace(platform="linux", source_gate=SimpleNamespace(sha=SHA),
                           launch_probe=SimpleNamespace(report=None), journey=SimpleNamespace(**journey))


def test_a_journey_as_the_policy_requires_passes_under_the_stages_name() -> None:
    outcome = assess_journey(_journey_predicate(), _journey_exp())
    assert (outcome.stage, outcome.problems) == ("journey", ())


def test_the_journeys_problems_are_one_summary_and_a_wrong_layer_step_has_its_own_code() -> None:
    steps = [_step("bundled-skill-runs", observed="allow"),
             _step(KERNEL, observed="reject", code="CC_SKILL_SANDBOX_DENIED", errno="EPERM", layer="landlock-fs",
                   passed=False)]
    table = {**TABLE, "extra-step": ALLOW}
    outcome = assess_journey(
        _journey_predicate(steps, timed_out=True, exit_code=None, required_steps=list(table),
                           missing_steps=["extra-step"], failed_steps=[KERNEL], passed=False),
        _journey_exp(table))
    assert _codes(outcome) == [
        (Code.JOURNEY_INCOMPLETE, "2 problem(s): extra-step: missing; the journey timed out"),
        (Code.STEP_WRONG_LAYER, f"{KERNEL}: refused by landlock-fs, the policy requires seccomp on linux")]


def _long_listing(length: int) -> list[str]:
    """Ids of missing steps whose ``ID: missing`` entries, joined by ``; ``, are exactly ``length`` characters."""
    ids = [f"step-{i:02d}-" + "x" * 42 for i in range(24)]  # 24 entries of 59 characters, each with its "; "
    return [*ids, "last-" + "y" * (length - 24 * 61 - 9 - 5)]


def _summary(length: int) -> str:
    missing = _long_listing(length)
    table = dict.fromkeys(missing, ALLOW)
    outcome = assess_journey(
        _journey_predicate([], required_steps=missing, missing_steps=missing, passed=False), _journey_exp(table))
    [(code, message)] = _codes(outcome)
    assert code == Code.JOURNEY_INCOMPLETE
    listed = "; ".join(f"{step}: missing" for step in missing)
    assert len(listed) == length
    assert message.startswith(f"25 problem(s): {listed[:1500]}")
    return message.removeprefix(f"25 problem(s): {listed[:1500]}")


def test_a_journey_summary_of_exactly_1500_characters_is_given_whole_and_unmarked() -> None:
    assert _summary(1500) == ""


def test_a_journey_summary_past_1500_characters_is_cut_there_and_marked() -> None:
    assert _summary(1501) == " ..."


def test_a_journey_command_and_display_other_than_the_policys_are_refused_naming_the_journey() -> None:
    outcome = assess_journey(_journey_predicate(command=["app"], display=":1"), _journey_exp())
    assert _codes(outcome) == [
        (Code.JOURNEY_INCOMPLETE, "the journey ran ['app'], the policy's command is ['app', '--journey']"),
        (Code.JOURNEY_INCOMPLETE, "the journey ran under display ':1', the policy's is ':99'")]


def test_each_journey_claim_its_facts_contradict_is_refused_naming_the_stage_and_the_field() -> None:
    steps = [_step("bundled-skill-runs", observed="allow", passed=False),
             _step(KERNEL, **PASSING[KERNEL])]
    outcome = assess_journey(
        _journey_predicate(steps, required_steps=[], missing_steps=[KERNEL], failed_steps=["bundled-skill-runs"],
                           passed=False), _journey_exp())
    prefix = "the journey record contradicts itself: "
    assert _codes(outcome) == [
        (Code.JOURNEY_INCOMPLETE, prefix + "steps[bundled-skill-runs].passed is False, its facts give True"),
        (Code.JOURNEY_INCOMPLETE, prefix + f"required_steps is (), its facts give ('bundled-skill-runs', '{KERNEL}')"),
        (Code.JOURNEY_INCOMPLETE, prefix + f"missing_steps is ('{KERNEL}',), its facts give ()"),
        (Code.JOURNEY_INCOMPLETE, prefix + "failed_steps is ('bundled-skill-runs',), its facts give ()"),
        (Code.JOURNEY_INCOMPLETE, prefix + "passed is False, its facts give True")]


def _facts(steps: list[JourneyStep], **changes: Any) -> Any:
    args: dict[str, Any] = {"steps": steps, "expected": TABLE, "code_pattern": "^CC_SKILL_[A-Z_]{1,64}$",
                            "exit_code": 0, "timed_out": False, "app_build_sha": SHA, "sha": SHA,
                            "platform": "linux", "layers": LAYERS, "required_layers": None, "refuses_with": REFUSES,
                            "probe_layers": None}
    args.update(changes)
    return journey_facts(**args)


def test_a_step_reported_twice_fails_once_by_its_id_and_the_steps_after_it_are_still_judged() -> None:
    twice = _step("bundled-skill-runs", observed="allow")
    facts = _facts([twice, twice, _step(KERNEL, observed="error")])
    assert facts.failed == ("bundled-skill-runs", KERNEL)
    assert facts.problems == ("bundled-skill-runs: reported 2 times", f"{KERNEL}: the step could not be carried out")


def test_a_journey_that_timed_out_or_exited_non_zero_says_which() -> None:
    steps = [_step(k, **v) for k, v in PASSING.items()]
    assert _facts(steps, timed_out=True, exit_code=None).problems == ("the journey timed out",)
    assert _facts(steps, exit_code=3).problems == ("the journey exited 3",)


def test_a_journey_of_another_build_names_both_commits_to_12_hex_digits() -> None:
    steps = [_step(k, **v) for k, v in PASSING.items()]
    assert _facts(steps, app_build_sha=OTHER_SHA).problems == (
        "the journey ran build c0ffee000000, not 3b18e512dba7",)


def test_a_journey_worker_confined_otherwise_than_the_probes_is_refused() -> None:
    steps = [_step(k, **v) for k, v in PASSING.items()]
    assert _facts(steps, probe_layers=LAYERS[:1]).problems == (
        "the journey's worker reports other isolation layers than the probe's",)


def test_the_journey_is_held_to_the_policys_layers_for_the_statements_platform() -> None:
    facts = platform_journey_facts(_journey_predicate(), _journey_exp(layers=["seccomp", "no-new-privs"]))
    assert facts.problems == ("the journey's isolation: required isolation layer(s) not applied: no-new-privs",)
    assert not facts.passed


def test_layer_problems_name_a_repeated_layer_with_its_count_and_list_every_missing_one() -> None:
    layers = [IsolationLayer(name="seccomp", applied=True, detail=""),
              IsolationLayer(name="seccomp", applied=True, detail="")]
    assert layer_problems(layers, ["landlock-fs", "no-new-privs"]) == [
        "layer 'seccomp' is reported 2 times",
        "required isolation layer(s) not applied: landlock-fs, no-new-privs"]


def test_check_problems_list_every_missing_and_every_failed_check() -> None:
    assert check_problems([("x", False), ("y", False)], ["a", "b"]) == [
        "required check(s) not reported: a, b", "check(s) reported failed: x, y"]
