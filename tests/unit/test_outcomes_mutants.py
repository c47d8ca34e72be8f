"""qualify_verify/_outcomes.py, stage by stage: the exact code and message of each source-gate refusal (a ref other
than main, main at another commit, shown to 12 hex digits each, protection claimed by local mode, an unprotected
main in GitHub mode, where ``protected`` and ``ruleset`` both pass), the stage's name in a self-contradicting
record's message, a head_matches claim its commits contradict; the build's, reproduction's and signature's exact
refusals (the artifact's stem and every ending, or "no installer"; digests to 16 hex digits; each OS signing and
notarization claim no tool could have made; each record's self-contradiction naming its stage and field), the
installer's signature check naming the platform and quoting the tool to 200 characters, and the journey's exact step
wording (a step that could not be carried out, an allowed step naming
a refusal code, an outcome other than the policy's with or without codes on either side, an errno the policy does
not accept, a layer that never refuses with the step's errno, a kernel step whose policy names no layer), and the
launch probe's problem when the app reports another platform, naming both. Written for the mutants of the module
that survived the verifier's tests (docs/mutation.md).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code, InstallerSignature, IsolationLayer, JourneyStep
from desktop_qualify.qualify_policy import StepExpectation
from desktop_qualify.qualify_verify._outcomes import (
    JourneyFacts,
    assess_build,
    assess_reproduction,
    assess_signature,
    assess_source_gate,
    installer_signature_problems,
    journey_facts,
    probe_facts,
)

SHA = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
OTHER_SHA = "c0ffee0000000000000000000000000000000001"
MAIN = "refs/heads/main"


# -- source gate --------------------------------------------------------------------------------------------


def _gate(**changes: object) -> Any:
    gate: dict[str, object] = {"mode": "github", "ref": MAIN, "sha": SHA, "main_head": SHA, "protection": "protected",
                               "worktree_clean": True, "head_matches": True, "passed": True}
    gate.update(changes)
    return SimpleNamespace(source_gate=SimpleNamespace(**gate))


def _exp(*, require_clean_worktree: bool = True) -> Any:
    return SimpleNamespace(ref=MAIN, require_clean_worktree=require_clean_worktree)


def _problems(**changes: object) -> list[tuple[Code, str]]:
    outcome = assess_source_gate(_gate(**changes), _exp())
    assert outcome.stage == "source gate"
    return [(p.code, p.message) for p in outcome.problems]


@pytest.mark.parametrize(("mode", "protection"), [("github", "protected"), ("github", "ruleset"),
                                                  ("local", "not-observed")])
def test_a_protected_or_ruleset_main_in_github_mode_and_an_unobserved_one_in_local_mode_pass(
        mode: str, protection: str) -> None:
    outcome = assess_source_gate(_gate(mode=mode, protection=protection), _exp())
    assert outcome.problems == ()
    assert outcome.passed


def test_a_ref_other_than_main_is_refused_naming_both_refs() -> None:
    assert _problems(ref="refs/heads/dev", passed=False) == [
        (Code.REF_NOT_MAIN, "the source gate saw ref 'refs/heads/dev', not refs/heads/main")]


def test_main_at_another_commit_is_refused_with_both_commits_to_12_hex_digits() -> None:
    assert _problems(main_head=OTHER_SHA, head_matches=False, passed=False) == [
        (Code.NOT_MAIN_HEAD, "the source gate saw main at c0ffee000000, not at the built 3b18e512dba7")]


def test_local_mode_claiming_protection_is_refused_as_unobservable() -> None:
    assert _problems(mode="local", protection="protected", passed=False) == [
        (Code.CLAIM_UNOBSERVABLE,
         "local evidence claims main was 'protected'; local mode cannot observe protection")]


def test_an_unprotected_main_in_github_mode_is_refused_naming_its_protection() -> None:
    assert _problems(protection="unprotected", passed=False) == [(Code.MAIN_UNPROTECTED, "main was unprotected")]


def test_a_source_gate_record_claiming_a_pass_its_facts_refuse_names_the_stage() -> None:
    assert _problems(worktree_clean=False) == [
        (Code.WORKTREE_DIRTY, "the work tree was dirty"),
        (Code.NOT_MAIN_HEAD, "the source gate record contradicts itself: passed is True, its facts give False")]


def test_a_head_matches_claim_the_commits_contradict_is_refused_naming_the_field_and_fails_the_stage() -> None:
    # The contradiction is itself a problem: a record saying passed=False beside it is not contradicted too.
    assert _problems(head_matches=False, passed=False) == [
        (Code.NOT_MAIN_HEAD, "the source gate record contradicts itself: head_matches is False, its facts give True")]


def test_a_dirty_work_tree_passes_where_the_policy_does_not_require_a_clean_one() -> None:
    outcome = assess_source_gate(_gate(worktree_clean=False), _exp(require_clean_worktree=False))
    assert outcome.problems == ()


# -- journey ------------------------------------------------------------------------------------------------

KERNEL = "kernel-refuses-exec-shell"
TABLE = {
    "bundled-skill-runs": StepExpectation.model_validate({"expect": "allow"}),
    "external-unsigned-rejected": StepExpectation.model_validate(
        {"expect": "reject", "code": "CC_SKILL_SIGNATURE_MISSING"}),
    KERNEL: StepExpectation.model_validate({
        "expect": "reject", "code": "CC_SKILL_SANDBOX_DENIED", "errno": ["EACCES", "EPERM"],
        "layer": {"linux": "seccomp"}}),
}
# The same kernel step with no layer named for any platform: any applied layer, or none, is the app's to say.
NO_LAYER_TABLE = {KERNEL: StepExpectation.model_validate({
    "expect": "reject", "code": "CC_SKILL_SANDBOX_DENIED", "errno": ["EACCES", "EPERM"]})}
LAYERS = [IsolationLayer(name=n, applied=True, detail="") for n in ("landlock-fs", "seccomp", "sandbox-exec")]
REFUSES = {"seccomp": ["EPERM"], "landlock-fs": ["EACCES", "EXDEV"], "sandbox-exec": ["EACCES", "EPERM"]}
PASSING = {
    "bundled-skill-runs": {"observed": "allow"},
    "external-unsigned-rejected": {"observed": "reject", "code": "CC_SKILL_SIGNATURE_MISSING"},
    KERNEL: {"observed": "reject", "code": "CC_SKILL_SANDBOX_DENIED", "errno": "EPERM", "layer": "seccomp"},
}


def _step(step_id: str, **fields: object) -> JourneyStep:
    base: dict[str, object] = {"code": None, "errno": None, "layer": None, "detail": "", "passed": True}
    return JourneyStep.model_validate({**base, "id": step_id, **fields})


def _journey(changed: dict[str, dict[str, object]], *, table: dict[str, StepExpectation] | None = None,
             platform: str = "linux") -> JourneyFacts:
    table = TABLE if table is None else table
    reported = {**{k: v for k, v in PASSING.items() if k in table}, **changed}
    return journey_facts(steps=[_step(k, **v) for k, v in reported.items()], expected=table,
                         code_pattern="^CC_SKILL_[A-Z_]{1,64}$", exit_code=0, timed_out=False, app_build_sha=SHA,
                         sha=SHA, platform=platform, layers=LAYERS, required_layers=None, refuses_with=REFUSES,
                         probe_layers=None)


def test_the_policys_steps_reported_as_it_requires_pass() -> None:
    facts = _journey({})
    assert (facts.problems, facts.failed, facts.passed) == ((), (), True)


def test_a_step_that_could_not_be_carried_out_says_so_not_that_it_was_observed_otherwise() -> None:
    facts = _journey({"bundled-skill-runs": {"observed": "error"}})
    assert facts.problems == ("bundled-skill-runs: the step could not be carried out",)
    assert facts.failed == ("bundled-skill-runs",)


def test_an_allowed_step_naming_a_refusal_code_fails_even_where_the_policy_does_not_require_it() -> None:
    facts = _journey({"extra-step": {"observed": "allow", "code": "CC_SKILL_SIGNATURE_MISSING"}})
    assert facts.problems == ("extra-step: an allowed step names refusal code CC_SKILL_SIGNATURE_MISSING",)
    assert (facts.failed, facts.passed) == (("extra-step",), False)


def test_an_allowed_step_naming_a_refusal_code_the_policy_requires_allowed_says_so() -> None:
    facts = _journey({"bundled-skill-runs": {"observed": "allow", "code": "CC_SKILL_SIGNATURE_MISSING"}})
    assert facts.problems == ("bundled-skill-runs: an allowed step names refusal code CC_SKILL_SIGNATURE_MISSING",)


@pytest.mark.parametrize(("step", "observed", "why"), [
    # No code observed, a code required: no trailing blank after the observation, the policy's code shown.
    ("external-unsigned-rejected", {"observed": "allow"},
     "external-unsigned-rejected: observed allow, the policy requires reject CC_SKILL_SIGNATURE_MISSING"),
    # A code observed, none required: the observed code shown, no trailing blank after the policy's outcome.
    ("bundled-skill-runs", {"observed": "reject", "code": "CC_SKILL_SANDBOX_DENIED"},
     "bundled-skill-runs: observed reject CC_SKILL_SANDBOX_DENIED, the policy requires allow"),
    # Both sides name a code: both shown.
    ("external-unsigned-rejected", {"observed": "reject", "code": "CC_SKILL_SANDBOX_DENIED"},
     "external-unsigned-rejected: observed reject CC_SKILL_SANDBOX_DENIED, the policy requires reject "
     "CC_SKILL_SIGNATURE_MISSING"),
])
def test_an_outcome_other_than_the_policys_names_both_exactly(step: str, observed: dict[str, object],
                                                               why: str) -> None:
    facts = _journey({step: observed})
    assert facts.problems == (why,)
    assert facts.failed == (step,)


def test_an_errno_the_policy_does_not_accept_is_refused_listing_those_it_accepts() -> None:
    facts = _journey({KERNEL: {**PASSING[KERNEL], "errno": "ENOENT"}})
    assert facts.problems == (f"{KERNEL}: refused with errno ENOENT, the policy accepts EACCES, EPERM",)
    assert facts.wrong_layers == ()


def test_a_layer_that_never_refuses_with_the_steps_errno_is_a_wrong_layer_listing_what_it_refuses_with() -> None:
    # macOS: the table names no layer there, so only the layer's own errnos decide.
    facts = _journey({KERNEL: {**PASSING[KERNEL], "layer": "landlock-fs"}}, platform="macos")
    why = f"{KERNEL}: refused with EPERM, but landlock-fs refuses with EACCES, EXDEV: another layer refused it"
    assert (facts.problems, facts.wrong_layers, facts.failed) == ((why,), (why,), (KERNEL,))


@pytest.mark.parametrize("layer", [None, "sandbox-exec"])
def test_a_kernel_step_whose_policy_names_no_layer_passes_with_any_applied_layer_or_none(layer: str | None) -> None:
    facts = _journey({KERNEL: {**PASSING[KERNEL], "layer": layer}}, table=NO_LAYER_TABLE)
    assert (facts.problems, facts.wrong_layers, facts.passed) == ((), (), True)


# -- build --------------------------------------------------------------------------------------------------

ART_SHA = "a1" * 32
OTHER_ART_SHA = "b2" * 32
STEM = "app-3b18e512dba7-linux-x86_64"
BUILD_COMMAND = ("make", "dist")


def _build_exp(kind: str | None = "deb") -> Any:
    target = None if kind is None else SimpleNamespace(kind=kind)
    return SimpleNamespace(install_for=lambda _platform: target, artifact_name="app", build_command=BUILD_COMMAND)


def _build_predicate(**changes: object) -> Any:
    build: dict[str, object] = {"artifact": SimpleNamespace(name=STEM + ".deb", size=4096, sha256=ART_SHA),
                                "command": list(BUILD_COMMAND), "passed": True}
    build.update(changes)
    return SimpleNamespace(platform="linux", arch="x86_64", run=SimpleNamespace(sha=SHA),
                           build=SimpleNamespace(**build))


def _build_problems(exp: Any = None, **changes: object) -> list[tuple[Code, str]]:
    outcome = assess_build(_build_predicate(**changes), _build_exp() if exp is None else exp)
    assert outcome.stage == "build"
    return [(p.code, p.message) for p in outcome.problems]


def test_a_build_named_as_the_policy_requires_passes() -> None:
    assert _build_problems() == []


def test_a_misnamed_artifact_is_refused_naming_the_stem_with_the_commit_to_12_hex_digits_and_every_ending() -> None:
    assert _build_problems(_build_exp("archive"), artifact=SimpleNamespace(name="app.deb", size=1, sha256=ART_SHA),
                           passed=False) == [
        (Code.BUILD_FAILED, f"the build names its artifact 'app.deb'; a linux/x86_64 build of 3b18e512dba7 is "
                            f"'{STEM}' with an ending of .tar.gz, .zip")]


def test_a_platform_the_policy_names_no_installer_for_refuses_every_artifact_name_saying_so() -> None:
    assert _build_problems(_build_exp(None), passed=False) == [
        (Code.BUILD_FAILED, f"the build names its artifact '{STEM}.deb'; a linux/x86_64 build of 3b18e512dba7 is "
                            f"'{STEM}' with an ending of no installer")]


def test_an_empty_artifact_is_refused() -> None:
    assert _build_problems(artifact=SimpleNamespace(name=STEM + ".deb", size=0, sha256=ART_SHA), passed=False) == [
        (Code.BUILD_FAILED, "the built artifact is empty")]


def test_a_build_command_other_than_the_policys_is_refused_naming_both() -> None:
    assert _build_problems(command=["make", "evil"], passed=False) == [
        (Code.BUILD_FAILED, "the build ran ['make', 'evil'], the policy's build command is ['make', 'dist']")]


def test_a_build_record_claiming_a_pass_its_facts_refuse_names_the_stage_and_the_field() -> None:
    assert _build_problems(command=["make"]) == [
        (Code.BUILD_FAILED, "the build ran ['make'], the policy's build command is ['make', 'dist']"),
        (Code.BUILD_FAILED, "the build record contradicts itself: passed is True, its facts give False")]


# -- reproduction -------------------------------------------------------------------------------------------

FIRST = "1f" * 32
SECOND = "2e" * 32


def _repro_predicate(repro: object, *, state: str = "signed") -> Any:
    return SimpleNamespace(platform="linux", build=SimpleNamespace(reproduction=repro,
                                                                    artifact=SimpleNamespace(sha256=ART_SHA)),
                           signature=SimpleNamespace(platform_signing_state=state))


def _repro(first: str = FIRST, second: str = FIRST, *, reproduced: bool = True) -> Any:
    return SimpleNamespace(first_sha256=first, second_sha256=second, reproduced=reproduced,
                           variations=[SimpleNamespace(name="umask"), SimpleNamespace(name="TMPDIR")])


def _repro_problems(repro: object, *, required: bool = True, state: str = "signed") -> list[tuple[Code, str]]:
    exp = SimpleNamespace(reproducible=frozenset({"linux"} if required else ()))
    outcome = assess_reproduction(_repro_predicate(repro, state=state), exp)
    assert outcome.stage == "reproduction"
    return [(p.code, p.message) for p in outcome.problems]


def test_a_required_reproduction_the_record_lacks_is_refused_naming_the_platform() -> None:
    assert _repro_problems(None) == [
        (Code.BUILD_NOT_REPRODUCED,
         "the policy requires the linux build to reproduce; the build record has no second build")]
    assert _repro_problems(None, required=False) == []


def test_a_reproduced_flag_its_digests_contradict_is_refused_even_where_not_required() -> None:
    assert _repro_problems(_repro(FIRST, SECOND, reproduced=True), required=False) == [
        (Code.BUILD_NOT_REPRODUCED, "the reproduction record contradicts itself: reproduced is True, its facts give "
                                    "False")]


def test_an_unsigned_artifact_that_is_not_the_first_builds_output_is_refused_with_both_digests_to_16() -> None:
    assert _repro_problems(_repro(), required=False, state="unsigned") == [
        (Code.BUILD_NOT_REPRODUCED, "the first build's output 1f1f1f1f1f1f1f1f... is not the unsigned artifact "
                                    "a1a1a1a1a1a1a1a1...")]


def test_a_required_build_that_does_not_reproduce_names_the_variations_and_both_digests_to_16() -> None:
    assert _repro_problems(_repro(FIRST, SECOND, reproduced=False)) == [
        (Code.BUILD_NOT_REPRODUCED, "the second build (varied: umask, TMPDIR) gave 2e2e2e2e2e2e2e2e..., the first "
                                    "1f1f1f1f1f1f1f1f...: the build does not reproduce")]


# -- signature ----------------------------------------------------------------------------------------------

SUBMISSION = "0123abcd-0123-4567-89ab-0123456789ab"


def _notarization(outcome: str = "accepted", **changes: object) -> Any:
    fields: dict[str, object] = {"outcome": outcome, "submission_id": SUBMISSION, "status": "Accepted",
                                 "stapled": True}
    fields.update(changes)
    return SimpleNamespace(**fields)


def _sig_problems(platform: str = "linux", *, verifies: bool = True,
                  accepted: frozenset[str] = frozenset({"unsigned", "signed", "notarized"}),
                  **changes: object) -> list[tuple[Code, str]]:
    sig: dict[str, object] = {"method": "ed25519-detached", "artifact_sha256": ART_SHA, "readback_verified": True,
                              "platform_signing_state": "unsigned", "platform_signing_tool": "none",
                              "notarization": None, "passed": False}
    sig.update(changes)
    p = SimpleNamespace(platform=platform, build=SimpleNamespace(artifact=SimpleNamespace(sha256=ART_SHA)),
                        signature=SimpleNamespace(**sig))
    exp = SimpleNamespace(mode="local", accepted_signing=lambda _platform: accepted)
    outcome = assess_signature(p, exp, signature_verifies=verifies)
    assert outcome.stage == "signature"
    return [(c.code, c.message) for c in outcome.problems]


FAILED = Code.ARTIFACT_SIGNATURE_FAILED


def test_an_unsigned_linux_bundle_signed_by_the_pipeline_passes() -> None:
    assert _sig_problems(passed=True) == []


def test_the_artifact_signatures_own_failures_are_each_refused_with_their_own_message() -> None:
    assert _sig_problems(method="sigstore-bundle") == [
        (FAILED, "the artifact signature is sigstore-bundle; local mode signs ed25519-detached")]
    assert _sig_problems(artifact_sha256=OTHER_ART_SHA) == [
        (FAILED, "the artifact signature is over other bytes than the built artifact")]
    assert _sig_problems(verifies=False) == [(FAILED, "the artifact signature does not verify")]
    assert _sig_problems(readback_verified=False) == [
        (FAILED, "the producer's read-back of the artifact signature failed")]


def test_an_os_signing_state_the_policy_does_not_accept_is_refused_with_its_own_code() -> None:
    assert _sig_problems(accepted=frozenset({"signed"})) == [
        (Code.PLATFORM_SIGNING_UNACCEPTED, "OS signing state 'unsigned' is not accepted for linux")]


def test_a_signature_record_claiming_a_pass_its_facts_refuse_names_the_stage_and_the_field() -> None:
    assert _sig_problems(verifies=False, passed=True) == [
        (FAILED, "the artifact signature does not verify"),
        (FAILED, "the signature record contradicts itself: passed is True, its facts give False")]


def test_os_signing_claims_no_platform_tool_could_have_made_are_refused() -> None:
    assert _sig_problems(platform_signing_tool="codesign") == [
        (FAILED, "an unsigned bundle names signing tool 'codesign'")]
    assert _sig_problems(platform_signing_state="signed", platform_signing_tool="codesign") == [
        (FAILED, "linux has no OS code signing, yet the state is 'signed'")]
    assert _sig_problems("windows", platform_signing_state="signed", platform_signing_tool="codesign") == [
        (FAILED, "OS signing state 'signed' by 'codesign'; windows signs with 'signtool'")]


def test_a_notarized_windows_bundle_is_refused_as_notarization_is_macos_only() -> None:
    assert _sig_problems("windows", platform_signing_state="notarized", platform_signing_tool="signtool") == [
        (FAILED, "windows cannot be notarized (notarization is macOS only)"),
        (FAILED, "the state is 'notarized', but the record holds no notarization result")]


def test_a_notarized_macos_bundle_needs_an_accepted_notarization_naming_its_submission() -> None:
    mac = {"platform_signing_state": "notarized", "platform_signing_tool": "codesign"}
    assert _sig_problems("macos", **mac, notarization=_notarization(), passed=True) == []
    assert _sig_problems("macos", **mac) == [
        (FAILED, "the state is 'notarized', but the record holds no notarization result")]
    assert _sig_problems("macos", **mac, notarization=_notarization(submission_id=None)) == [
        (FAILED, "an accepted notarization names no submission id or not Apple's 'Accepted'")]


def test_a_notarization_result_is_refused_off_macos_and_on_an_unsigned_bundle() -> None:
    skipped = _notarization("skipped", submission_id=None, status=None, stapled=False)
    assert _sig_problems("windows", platform_signing_state="signed", platform_signing_tool="signtool",
                         notarization=skipped) == [
        (FAILED, "a notarization result on windows (notarization is macOS only)")]
    assert _sig_problems("macos", notarization=skipped) == [
        (FAILED, "a notarization result for an unsigned bundle (the hook runs only after signing)")]


def test_a_notarization_outcome_contradicting_the_signing_state_or_saying_more_than_it_saw_is_refused() -> None:
    signed = {"platform_signing_state": "signed", "platform_signing_tool": "codesign"}
    assert _sig_problems("macos", **signed, notarization=_notarization()) == [
        (FAILED, "notarization 'accepted' contradicts the OS signing state 'signed'")]
    assert _sig_problems("macos", **signed, notarization=_notarization("rejected", status="Invalid")) == [
        (FAILED, "a ticket stapled for a notarization that was 'rejected'")]
    assert _sig_problems("macos", **signed, notarization=_notarization("skipped", status=None, stapled=False)) == [
        (FAILED, "a skipped notarization names a submission")]


# -- the installer's check of the package's signature -------------------------------------------------------


def _install_predicate(check: InstallerSignature | None) -> Any:
    return SimpleNamespace(platform="macos", install=SimpleNamespace(method="pkg", package_signature=check))


SIGNED_ONLY = SimpleNamespace(accepted_signing=lambda _platform: frozenset({"signed", "notarized"}))


def test_a_signed_only_pkg_install_recording_no_check_is_refused_naming_the_platform() -> None:
    assert installer_signature_problems(_install_predicate(None), SIGNED_ONLY) == [
        ("the policy accepts only signed builds for macos, and the pkg install records no pkgutil check of the "
         "package's own signature", Code.INSTALLER_SIGNATURE_REFUSED)]


def test_a_failed_package_signature_check_is_refused_quoting_the_tool_to_200_characters() -> None:
    detail = "x" * 200 + "TAIL"
    check = InstallerSignature(tool="pkgutil", state="failed", detail=detail)
    assert installer_signature_problems(_install_predicate(check), SIGNED_ONLY) == [
        (f"the policy accepts only signed builds for macos; pkgutil found the package failed: {'x' * 200}",
         Code.INSTALLER_SIGNATURE_REFUSED)]


# -- the launch probe's facts ---------------------------------------------------------------------------------


def test_a_probe_report_of_another_platform_fails_the_probe_naming_both_platforms() -> None:
    report = SimpleNamespace(build_sha=SHA, executable_sha256="e" * 64, platform="macos",
                             checks=[SimpleNamespace(name="window", passed=True)], isolation_layers=[])
    facts = probe_facts(report=report, exit_code=0, timed_out=False, platform="linux", sha=SHA,
                        installed_executable_sha256="e" * 64, required_checks=["window"], required_layers=None)
    assert facts.build_sha_matches
    assert facts.executable_matches_install
    assert facts.problems == ("the app reports platform macos, the statement is for linux",)
    assert not facts.passed
