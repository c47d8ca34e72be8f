"""qualify_verify/_outcomes.py, stage by stage: the exact code and message of each source-gate refusal (a ref other
than main, main at another commit, shown to 12 hex digits each, protection claimed by local mode, an unprotected
main in GitHub mode, where ``protected`` and ``ruleset`` both pass), the stage's name in a self-contradicting
record's message, and the journey's exact step wording (a step that could not be carried out, an allowed step naming
a refusal code, an outcome other than the policy's with or without codes on either side, an errno the policy does
not accept, a layer that never refuses with the step's errno, a kernel step whose policy names no layer). Written
for the mutants of the module that survived the verifier's tests (docs/mutation.md).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code, IsolationLayer, JourneyStep
from desktop_qualify.qualify_policy import StepExpectation
from desktop_qualify.qualify_verify._outcomes import JourneyFacts, assess_source_gate, journey_facts

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
