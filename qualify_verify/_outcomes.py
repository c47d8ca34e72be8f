"""Each stage's outcome, re-derived from the record's facts and the policy (docs/design.md §5.2).

A record's ``passed`` (and its ``*_matches``, ``missing_steps`` and
``failed_steps``) is a claim like any other. One function per stage computes
the outcome from the facts beside those claims and from what the policy
expects; the producer writes its records with the same functions, so an honest
record always agrees with them, and the verifier refuses one that does not,
with that stage's code. The findings and the decision table are both built
from these outcomes.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from desktop_qualify.evidence_schemas import (
    INSTALLER_SIGNATURE_TOOLS,
    INSTALLER_SUFFIXES,
    Code,
    InstallRecord,
    IsolationLayer,
    PlatformPredicate,
    ProbeReport,
    artifact_stem,
)
from desktop_qualify.qualify_policy import StepExpectation

from ._expectations import Expectations

# The OS code-signing tool each platform's signer runs; "none" is the only honest tool of an unsigned bundle.
SIGNING_TOOLS: Mapping[str, str] = {"linux": "none", "macos": "codesign", "windows": "signtool"}
_ZERO_DIGEST = "0" * 64


@dataclass(frozen=True)
class Problem:
    code: Code
    message: str


@dataclass(frozen=True)
class StageOutcome:
    """One stage's re-derived outcome: passed exactly when no problem was found."""

    stage: str
    problems: tuple[Problem, ...]

    @property
    def passed(self) -> bool:
        return not self.problems


class _Collect:
    def __init__(self, stage: str, code: Code) -> None:
        self.stage, self.code, self.problems = stage, code, list[Problem]()

    def fail(self, message: str, code: Code | None = None) -> None:
        self.problems.append(Problem(code or self.code, message))

    def claim(self, field: str, claimed: object, derived: object) -> None:
        """The record's own verdict field must equal what its facts give."""
        if claimed != derived:
            self.fail(f"the {self.stage} record contradicts itself: {field} is {claimed!r}, its facts give "
                      f"{derived!r}")

    def done(self) -> StageOutcome:
        return StageOutcome(self.stage, tuple(self.problems))


# -- source gate --------------------------------------------------------------------------------------------


def assess_source_gate(p: PlatformPredicate, exp: Expectations) -> StageOutcome:
    gate = p.source_gate
    out = _Collect("source gate", Code.NOT_MAIN_HEAD)
    if gate.ref != exp.ref:
        out.fail(f"the source gate saw ref {gate.ref!r}, not {exp.ref}", Code.REF_NOT_MAIN)
    if gate.main_head != gate.sha:
        out.fail(f"the source gate saw main at {gate.main_head[:12]}, not at the built {gate.sha[:12]}")
    # Local mode reads git only: it cannot observe protection, so it may only say so.
    if gate.mode == "local" and gate.protection != "not-observed":
        out.fail(f"local evidence claims main was {gate.protection!r}; local mode cannot observe protection",
                 Code.CLAIM_UNOBSERVABLE)
    if gate.mode == "github" and gate.protection not in ("protected", "ruleset"):
        out.fail(f"main was {gate.protection}", Code.MAIN_UNPROTECTED)
    if exp.require_clean_worktree and not gate.worktree_clean:
        out.fail("the work tree was dirty", Code.WORKTREE_DIRTY)
    out.claim("head_matches", gate.head_matches, gate.main_head == gate.sha)
    facts_pass = not out.problems
    out.claim("passed", gate.passed, facts_pass)
    return out.done()


# -- build --------------------------------------------------------------------------------------------------


def assess_build(p: PlatformPredicate, exp: Expectations) -> StageOutcome:
    build = p.build
    out = _Collect("build", Code.BUILD_FAILED)
    target = exp.install_for(p.platform)
    stem = artifact_stem(exp.artifact_name, p.run.sha, p.platform, p.arch)
    endings = INSTALLER_SUFFIXES[target.kind] if target is not None else ()
    if not any(build.artifact.name == stem + ending for ending in endings):
        out.fail(f"the build names its artifact {build.artifact.name!r}; a {p.platform}/{p.arch} build of "
                 f"{p.run.sha[:12]} is {stem!r} with an ending of {', '.join(endings) or 'no installer'}")
    if build.artifact.size == 0:
        out.fail("the built artifact is empty")
    if tuple(build.command) != exp.build_command:
        out.fail(f"the build ran {build.command!r}, the policy's build command is {list(exp.build_command)!r}")
    # A failed build produces no statement at all, so a signed build record that says it failed is a lie.
    out.claim("passed", build.passed, not out.problems)
    return out.done()


# -- reproduction -------------------------------------------------------------------------------------------


def assess_reproduction(p: PlatformPredicate, exp: Expectations) -> StageOutcome:
    """The second build: ``reproduced`` re-derived from the two digests, and required where the policy says.

    A record whose flag contradicts its digests is refused whether or not the policy requires the check (a
    record is never believed over its facts). For an unsigned artifact the first build's output is the
    artifact itself, so its digest must be the artifact's: a reproduction of some other build proves nothing.
    """
    out = _Collect("reproduction", Code.BUILD_NOT_REPRODUCED)
    repro = p.build.reproduction
    required = p.platform in exp.reproducible
    if repro is None:
        if required:
            out.fail(f"the policy requires the {p.platform} build to reproduce; the build record has no second "
                     "build")
        return out.done()
    same = repro.first_sha256 == repro.second_sha256
    out.claim("reproduced", repro.reproduced, same)
    if p.signature.platform_signing_state == "unsigned" and repro.first_sha256 != p.build.artifact.sha256:
        out.fail(f"the first build's output {repro.first_sha256[:16]}... is not the unsigned artifact "
                 f"{p.build.artifact.sha256[:16]}...")
    if required and not same:
        names = ", ".join(v.name for v in repro.variations)
        out.fail(f"the second build (varied: {names}) gave {repro.second_sha256[:16]}..., the first "
                 f"{repro.first_sha256[:16]}...: the build does not reproduce")
    return out.done()


# -- signature ----------------------------------------------------------------------------------------------


def assess_signature(p: PlatformPredicate, exp: Expectations, *, signature_verifies: bool) -> StageOutcome:
    """``signature_verifies`` is the verifier's own re-verification of the detached signature."""
    sig = p.signature
    out = _Collect("signature", Code.ARTIFACT_SIGNATURE_FAILED)
    method = "ed25519-detached" if exp.mode == "local" else "sigstore-bundle"
    if sig.method != method:
        out.fail(f"the artifact signature is {sig.method}; {exp.mode} mode signs {method}")
    if sig.artifact_sha256 != p.build.artifact.sha256:
        out.fail("the artifact signature is over other bytes than the built artifact")
    if not signature_verifies:
        out.fail("the artifact signature does not verify")
    if not sig.readback_verified:
        out.fail("the producer's read-back of the artifact signature failed")
    _check_os_signing_claim(p, out)
    if sig.platform_signing_state not in exp.accepted_signing(p.platform):
        out.fail(f"OS signing state {sig.platform_signing_state!r} is not accepted for {p.platform}",
                 Code.PLATFORM_SIGNING_UNACCEPTED)
    out.claim("passed", sig.passed, not out.problems)
    return out.done()


def _check_os_signing_claim(p: PlatformPredicate, out: _Collect) -> None:
    """The OS signing state must be one the platform's own tool can have produced."""
    sig = p.signature
    tool = SIGNING_TOOLS[p.platform]
    state, named = sig.platform_signing_state, sig.platform_signing_tool
    if state == "unsigned":
        if named != "none":
            out.fail(f"an unsigned bundle names signing tool {named!r}")
    elif tool == "none":
        out.fail(f"{p.platform} has no OS code signing, yet the state is {state!r}")
    elif named != tool:
        out.fail(f"OS signing state {state!r} by {named!r}; {p.platform} signs with {tool!r}")
    elif state == "notarized" and p.platform != "macos":
        out.fail(f"{p.platform} cannot be notarized (notarization is macOS only)")
    _check_notarization_claim(p, out)


def _check_notarization_claim(p: PlatformPredicate, out: _Collect) -> None:
    """'notarized' only with Apple's acceptance of a named submission; the record cannot say more than it saw."""
    sig, n = p.signature, p.signature.notarization
    if n is None:
        if sig.platform_signing_state == "notarized":
            out.fail("the state is 'notarized', but the record holds no notarization result")
        return
    if p.platform != "macos":
        out.fail(f"a notarization result on {p.platform} (notarization is macOS only)")
    if sig.platform_signing_state == "unsigned":
        out.fail("a notarization result for an unsigned bundle (the hook runs only after signing)")
    accepted = n.outcome == "accepted"
    if accepted != (sig.platform_signing_state == "notarized"):
        out.fail(f"notarization {n.outcome!r} contradicts the OS signing state {sig.platform_signing_state!r}")
    if accepted and (n.submission_id is None or n.status != "Accepted"):
        out.fail("an accepted notarization names no submission id or not Apple's 'Accepted'")
    if not accepted and n.stapled:
        out.fail(f"a ticket stapled for a notarization that was {n.outcome!r}")
    if n.outcome == "skipped" and (n.submission_id is not None or n.status is not None):
        out.fail("a skipped notarization names a submission")


# -- install ------------------------------------------------------------------------------------------------


def assess_install(p: PlatformPredicate, exp: Expectations) -> StageOutcome:
    inst = p.install
    out = _Collect("install", Code.INSTALL_FAILED)
    target = exp.install_for(p.platform)
    if inst.failure is not None:
        out.fail(f"install failed: {inst.failure[:300]}")
    if inst.artifact_sha256 != p.build.artifact.sha256:
        out.fail("the install installed other bytes than the built artifact")
    if target is None:
        out.fail(f"the policy names no installer for {p.platform}")
    else:
        # The app cannot choose its installer: the policy's kind, and the policy's executable in it.
        if inst.method != target.kind:
            out.fail(f"install method {inst.method!r} is not the policy's installer kind {target.kind!r}")
        if inst.executable != target.executable:
            out.fail(f"the installed executable is {inst.executable!r}, the policy's is {target.executable!r}")
    # An install that says it failed installed nothing and hashed nothing: that is its failure, not two more.
    if inst.failure is None and (inst.file_count == 0 or inst.total_bytes == 0):
        out.fail("no files installed")
    if inst.failure is None and _ZERO_DIGEST in (inst.executable_sha256, inst.manifest_sha256):
        out.fail("the install recorded no digest of what it installed")
    for problem in installer_signature_problems(p, exp):
        out.fail(*problem)
    out.claim("passed", inst.passed, not out.problems)
    return out.done()


def exited(exit_code: int | None) -> str:
    """How a recorded command ended: ``exited 3``, or, with no exit status, that it did not exit on its own."""
    return f"exited {exit_code}" if exit_code is not None else "did not exit on its own (not run, or stopped)"


def installer_signature_problems(p: PlatformPredicate, exp: Expectations) -> list[tuple[str, Code]]:
    """Why the installer's own check of the package's signature does not hold (empty when it does).

    A check recorded for a kind that has none, or by another tool than the kind's, contradicts the record
    (``QE_INSTALL_FAILED``). Where the policy accepts only signed builds for the platform (its ``[signing]``
    states lack ``unsigned``), an install of a kind that checks (``pkg``, ``msi``) must record the check, and the
    check must say ``signed`` (``QE_INSTALLER_SIGNATURE_REFUSED``): the producer refuses such an install itself,
    and a record that says otherwise is not taken on its word.
    """
    return package_signature_problems(p.install, p.platform, signed_only=signed_only(p, exp))


def signed_only(p: PlatformPredicate, exp: Expectations) -> bool:
    """Whether the policy accepts only signed builds for the statement's platform (no ``unsigned`` state)."""
    return "unsigned" not in exp.accepted_signing(p.platform)


def package_signature_problems(inst: InstallRecord, platform: str, *, signed_only: bool) -> list[tuple[str, Code]]:
    """``installer_signature_problems`` for one install record: the candidate's, or one the update journey made."""
    check = inst.package_signature
    tool = INSTALLER_SIGNATURE_TOOLS.get(inst.method)
    if check is not None and check.tool != tool:
        return [(f"the install records a {check.tool} signature check; a {inst.method} install has "
                 f"{'none' if tool is None else 'a ' + tool + ' one'}", Code.INSTALL_FAILED)]
    if tool is None or not signed_only:
        return []
    if check is None:
        return [(f"the policy accepts only signed builds for {platform}, and the {inst.method} install records "
                 f"no {tool} check of the package's own signature", Code.INSTALLER_SIGNATURE_REFUSED)]
    if check.state != "signed":
        return [(f"the policy accepts only signed builds for {platform}; {tool} found the package "
                 f"{check.state}: {check.detail[:200]}", Code.INSTALLER_SIGNATURE_REFUSED)]
    return []


# -- launch probe -------------------------------------------------------------------------------------------


def layer_problems(layers: Sequence[IsolationLayer], required: Sequence[str]) -> list[str]:
    """Why a worker's layer report falls short of the policy's layers for its platform (fail closed).

    Derived from the recorded layers alone: the app's ``isolation_available`` is its own claim against its
    own list, never a substitute for the policy's.
    """
    names = [entry.name for entry in layers]
    problems = [f"layer {name!r} is reported {names.count(name)} times" for name in sorted(set(names))
                if names.count(name) > 1]
    applied = {entry.name for entry in layers if entry.applied}
    missing = [name for name in required if name not in applied]
    if missing:
        problems.append(f"required isolation layer(s) not applied: {', '.join(missing)}")
    return problems


def _layer_pairs(layers: Sequence[IsolationLayer]) -> list[tuple[str, bool]]:
    return [(entry.name, entry.applied) for entry in layers]


def check_problems(checks: Sequence[tuple[str, bool]], required: Sequence[str]) -> list[str]:
    """Why a probe's named checks fall short of the policy's ``require``: each required one reported once and
    passed, and no check reported failed (an app may add checks, never drop or fail the policy's)."""
    names = [name for name, _ in checks]
    problems = [f"check {name!r} is reported {names.count(name)} times" for name in sorted(set(names))
                if names.count(name) > 1]
    missing = [name for name in required if name not in names]
    if missing:
        problems.append(f"required check(s) not reported: {', '.join(missing)}")
    failed = [name for name, passed in checks if not passed]
    if failed:
        problems.append(f"check(s) reported failed: {', '.join(failed)}")
    return problems


@dataclass(frozen=True)
class ProbeFacts:
    """The launch probe's facts and verdict, as derived from what the app reported."""

    build_sha_matches: bool
    executable_matches_install: bool
    # What the report falls short of (empty when there is no report: the stage fails on that alone).
    problems: tuple[str, ...]
    passed: bool


def probe_facts(*, report: ProbeReport | None, exit_code: int | None, timed_out: bool, platform: str, sha: str,
                installed_executable_sha256: str, required_checks: Sequence[str],
                required_layers: Sequence[str] | None) -> ProbeFacts:
    """The probe's verdict from what the app reported: the producer writes it, the verifier re-derives it."""
    sha_ok = report is not None and report.build_sha == sha
    exe_ok = report is not None and report.executable_sha256 == installed_executable_sha256
    problems: list[str] = []
    if report is not None:
        if not sha_ok:
            problems.append(f"the app reports build {report.build_sha[:12]}, the gate's commit is {sha[:12]}")
        if not exe_ok:
            problems.append("the app's own executable digest differs from the installed executable's")
        if report.platform != platform:
            problems.append(f"the app reports platform {report.platform}, the statement is for {platform}")
        problems += check_problems([(c.name, c.passed) for c in report.checks], required_checks)
        problems += [f"the probe's isolation: {why}"
                     for why in layer_problems(report.isolation_layers, required_layers or ())]
    passed = exit_code == 0 and not timed_out and report is not None and not problems
    return ProbeFacts(sha_ok, exe_ok, tuple(problems), passed)


def _command_problems(out: _Collect, what: str, ran: tuple[Sequence[str], str],
                      want: tuple[Sequence[str], str]) -> None:
    """The command and display a stage ran with must be the policy's (the app cannot swap in its own)."""
    (command, display), (want_command, want_display) = ran, want
    if tuple(command) != tuple(want_command):
        out.fail(f"the {what} ran {list(command)!r}, the policy's command is {list(want_command)!r}")
    if display != want_display:
        out.fail(f"the {what} ran under display {display!r}, the policy's is {want_display!r}")


def assess_probe(p: PlatformPredicate, exp: Expectations) -> StageOutcome:
    probe = p.launch_probe
    out = _Collect("launch probe", Code.PROBE_FAILED)
    facts = probe_facts(report=probe.report, exit_code=probe.exit_code, timed_out=probe.timed_out,
                        platform=p.platform, sha=p.source_gate.sha,
                        installed_executable_sha256=p.install.executable_sha256,
                        required_checks=exp.probe_checks, required_layers=exp.layers_for(p.platform))
    if probe.timed_out:
        out.fail("the launch probe timed out")
    elif probe.exit_code != 0:
        out.fail(f"the launch probe {exited(probe.exit_code)}")
    if probe.report is None:
        out.fail("the launched app gave no report")
    for problem in facts.problems:
        out.fail(problem)
    _command_problems(out, "launch probe", (probe.command, probe.display),
                      (exp.probe_command, exp.display_for(p.platform)))
    out.claim("build_sha_matches", probe.build_sha_matches, facts.build_sha_matches)
    out.claim("executable_matches_install", probe.executable_matches_install, facts.executable_matches_install)
    # The command and display are the policy's, checked above; the verdict's claim is about the app's facts.
    out.claim("passed", probe.passed, facts.passed)
    return out.done()


# -- journey ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JourneyFacts:
    """The journey's facts and verdict against the policy's step table."""

    required: tuple[str, ...]
    missing: tuple[str, ...]
    # In the order the steps were reported; a step reported twice is listed once, here.
    failed: tuple[str, ...]
    problems: tuple[str, ...]
    # The subset of ``problems`` that are a step refused by the wrong layer (QE_STEP_WRONG_LAYER).
    wrong_layers: tuple[str, ...]
    passed: bool


class ObservedStep(Protocol):
    """A journey step as observed: the app's record (``AppStep``) or the evidence's copy (``JourneyStep``)."""

    @property
    def id(self) -> str: ...
    @property
    def observed(self) -> str: ...
    @property
    def code(self) -> str | None: ...
    @property
    def errno(self) -> str | None: ...
    @property
    def layer(self) -> str | None: ...


def _errno_problem(step: ObservedStep, want: StepExpectation) -> str | None:
    """A kernel-refusal step must carry an errno the policy accepts; every other step carries none."""
    if want.errno is None:
        return None if step.errno is None else f"{step.id}: records errno {step.errno}, the policy expects none"
    if step.errno not in want.errno:
        return f"{step.id}: refused with errno {step.errno}, the policy accepts {', '.join(want.errno)}"
    return None


def _layer_problem(step: ObservedStep, want: StepExpectation, platform: str, applied: frozenset[str],
                   refuses_with: Mapping[str, Collection[str]] | None) -> str | None:
    """Which layer refused a step: only a kernel-refusal step names one, an applied one, the policy's if it names
    one for the platform, and one that refuses with the step's errno. The record's layer is the app's reading of
    its errno and its worker's layer report; re-derived here from the same facts, a layer the worker does not
    report applied, or one that never answers with that errno, cannot have refused it."""
    if want.errno is None:
        if step.layer is not None:
            return f"{step.id}: names refusing layer {step.layer}; only a kernel-refusal step names one"
        return None
    required = want.layer.for_platform(platform) if want.layer is not None else None
    if step.layer is None:
        return None if required is None else f"{step.id}: names no refusing layer, the policy requires {required}"
    if step.layer not in applied:
        return f"{step.id}: refused by {step.layer}, which the journey's worker does not report applied"
    if required is not None and step.layer != required:
        return f"{step.id}: refused by {step.layer}, the policy requires {required} on {platform}"
    gives = refuses_with.get(step.layer) if refuses_with is not None else None
    if refuses_with is not None and (gives is None or step.errno not in gives):
        said = f"refuses with {', '.join(sorted(gives))}" if gives else "is not in [isolation.refuses_with]"
        return f"{step.id}: refused with {step.errno}, but {step.layer} {said}: another layer refused it"
    return None


def _step_problem(step: ObservedStep, want: StepExpectation | None, codes: re.Pattern[str]) -> str | None:
    """Why one reported step does not count as passed, or None. The policy's table is the only expectation."""
    if step.observed == "error":
        return f"{step.id}: the step could not be carried out"
    if step.observed == "allow" and step.code is not None:
        return f"{step.id}: an allowed step names refusal code {step.code}"
    if step.code is not None and not codes.fullmatch(step.code):
        return f"{step.id}: refusal code {step.code} is outside the policy's pattern {codes.pattern}"
    if want is None:
        # Not required: the policy does not judge its outcome.
        return None
    if (step.observed, step.code) != (want.expect, want.code):
        return (f"{step.id}: observed {step.observed} {step.code or ''}".rstrip()
                + f", the policy requires {want.expect} {want.code or ''}".rstrip())
    return _errno_problem(step, want)


def journey_facts(*, steps: Sequence[ObservedStep], expected: Mapping[str, StepExpectation], code_pattern: str,
                  exit_code: int | None, timed_out: bool, app_build_sha: str | None, sha: str, platform: str,
                  layers: Sequence[IsolationLayer], required_layers: Sequence[str] | None,
                  refuses_with: Mapping[str, Collection[str]] | None,
                  probe_layers: Sequence[IsolationLayer] | None) -> JourneyFacts:
    """The journey's verdict against the policy's step table: the producer writes it, the verifier re-derives it."""
    codes = re.compile(code_pattern)
    ids = [s.id for s in steps]
    repeated = {step for step in ids if ids.count(step) > 1}
    applied = frozenset(entry.name for entry in layers if entry.applied)
    problems: list[str] = []
    wrong_layers: list[str] = []
    failed: list[str] = []
    for step in steps:
        if step.id in repeated:
            # Reported twice, a failure could hide behind a pass: neither copy counts.
            if step.id not in failed:
                failed.append(step.id)
                problems.append(f"{step.id}: reported {ids.count(step.id)} times")
            continue
        want = expected.get(step.id)
        why = _step_problem(step, want, codes)
        wrong = None if why is not None or want is None else _layer_problem(step, want, platform, applied, refuses_with)
        if wrong is not None:
            wrong_layers.append(wrong)
            why = wrong
        if why is not None:
            failed.append(step.id)
            problems.append(why)
    missing = tuple(step for step in expected if step not in ids)
    problems += [f"{step}: missing" for step in missing]
    if timed_out:
        problems.append("the journey timed out")
    elif exit_code != 0:
        problems.append(f"the journey {exited(exit_code)}")
    if app_build_sha != sha:
        problems.append(f"the journey ran build {str(app_build_sha)[:12]}, not {sha[:12]}")
    problems += [f"the journey's isolation: {why}" for why in layer_problems(layers, required_layers or ())]
    if probe_layers is not None and _layer_pairs(probe_layers) != _layer_pairs(layers):
        # One build on one machine: its probe's worker and its journey's cannot have been confined differently.
        problems.append("the journey's worker reports other isolation layers than the probe's")
    return JourneyFacts(tuple(expected), missing, tuple(failed), tuple(problems), tuple(wrong_layers), not problems)


def platform_journey_facts(p: PlatformPredicate, exp: Expectations) -> JourneyFacts:
    """The journey facts of one platform statement under the policy: one rule for the verdict and every report."""
    j = p.journey
    return journey_facts(steps=j.steps, expected=exp.steps, code_pattern=exp.code_pattern, exit_code=j.exit_code,
                         timed_out=j.timed_out, app_build_sha=j.app_build_sha, sha=p.source_gate.sha,
                         platform=p.platform, layers=j.isolation_layers, required_layers=exp.layers_for(p.platform),
                         refuses_with=exp.refuses_with,
                         probe_layers=p.launch_probe.report.isolation_layers if p.launch_probe.report else None)


def assess_journey(p: PlatformPredicate, exp: Expectations) -> StageOutcome:
    j = p.journey
    out = _Collect("journey", Code.JOURNEY_INCOMPLETE)
    facts = platform_journey_facts(p, exp)
    problems = [why for why in facts.problems if why not in facts.wrong_layers]
    if problems:
        # One reason for the journey, however many steps: each step's why, in the order reported, bounded.
        listed = "; ".join(problems)
        out.fail(f"{len(problems)} problem(s): {listed[:1500]}{' ...' if len(listed) > 1500 else ''}")
    for why in facts.wrong_layers:
        # Its own code: the step was refused, but not by the layer that proves it.
        out.fail(why, Code.STEP_WRONG_LAYER)
    _command_problems(out, "journey", (j.command, j.display), (exp.journey_command, exp.display_for(p.platform)))
    # Each step's own verdict is the producer's claim too: it must be what the policy's table gives.
    for step in j.steps:
        out.claim(f"steps[{step.id}].passed", step.passed, step.id not in facts.failed)
    out.claim("required_steps", tuple(j.required_steps), facts.required)
    out.claim("missing_steps", tuple(j.missing_steps), facts.missing)
    out.claim("failed_steps", tuple(j.failed_steps), facts.failed)
    out.claim("passed", j.passed, facts.passed)
    return out.done()
