"""The update journey's outcome, re-derived from each step's facts and the policy's ``[update]`` table.

The producer writes every ``passed`` of an ``UpdateRecord`` with ``update_facts``;
the verifier calls it again on the signed record and refuses a record whose
claims differ. The rules, step by step (README, "The update journey"):

1. previous-install: the audited previous artifact, by the policy's installer, at the policy's executable;
2. write-state: the previous build wrote a state and named its digest;
3. upgrade-install: the candidate's bytes (the same artifact and executable as the candidate's own install);
4. upgrade-check: the candidate found the very state the previous build wrote (else: state lost on upgrade);
5. upgrade-probe: the candidate's probe, in that home, passes by the probe's own rule;
6. rollback-install: the previous artifact again, the same executable as in step 1;
7. rollback-check: the previous build finds its state (else: a failed rollback);
8. downgrade-check: the previous build on the state the candidate left: opens it unchanged (``allow``) or
   refuses it with the policy's code (``refuse``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from desktop_qualify.evidence_schemas import (
    INSTALLER_SUFFIXES,
    AppStateRecord,
    Code,
    DisplayKind,
    InstallerKind,
    InstallRecord,
    PlatformPredicate,
    StateStep,
    UpdateRecord,
)

from ._expectations import Expectations
from ._outcomes import StageOutcome, _Collect, exited, package_signature_problems, probe_facts, signed_only

_ZERO_DIGEST = "0" * 64
STEP_NAMES = ("previous-release", "previous-install", "write-state", "upgrade-install", "upgrade-check",
              "upgrade-probe", "rollback-install", "rollback-check", "downgrade-check")


@dataclass(frozen=True)
class UpdateRules:
    """What the policy expects of one platform's update journey (no policy I/O in here)."""

    platform: str
    candidate_sha: str
    candidate_artifact_sha256: str
    candidate_executable_sha256: str
    installer: InstallerKind
    executable: str
    state_write: tuple[str, ...]
    state_check: tuple[str, ...]
    downgrade: Literal["allow", "refuse"]
    downgrade_code: str | None
    probe_command: tuple[str, ...]
    display: DisplayKind
    probe_checks: tuple[str, ...]
    layers: tuple[str, ...] | None
    # The candidate's own launch probe's layers (name, applied): one build on one machine reports the same.
    candidate_layers: tuple[tuple[str, bool], ...] | None
    # The policy accepts only signed builds here: each install of a pkg or msi must record its signature "signed",
    # as the candidate's own install must (the previous release's package is held to today's policy too).
    signed_only: bool


@dataclass(frozen=True)
class UpdateFacts:
    """The update journey judged step by step against the policy: what failed, and why."""

    # Per step, in the journey's order: why it does not count as passed (empty: passed).
    step_problems: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def failed(self) -> tuple[str, ...]:
        """The steps that do not count as passed, in the journey's order."""
        return tuple(name for name, problems in self.step_problems if problems)

    @property
    def problems(self) -> tuple[str, ...]:
        """Every reason a step failed, each as step: why."""
        return tuple(f"{name}: {why}" for name, problems in self.step_problems for why in problems)

    @property
    def passed(self) -> bool:
        """Whether every step passed."""
        return not self.failed

    def step_passed(self, name: str) -> bool:
        """Whether the step ``name`` passed."""
        return name not in self.failed


def _install_problems(inst: InstallRecord, rules: UpdateRules, *, artifact_sha256: str,
                      executable_sha256: str | None) -> list[str]:
    problems = []
    if inst.failure is not None:
        problems.append(f"install failed: {inst.failure[:200]}")
    if inst.artifact_sha256 != artifact_sha256:
        problems.append(f"installed artifact {inst.artifact_sha256[:16]}, expected {artifact_sha256[:16]}")
    if inst.method != rules.installer or inst.executable != rules.executable:
        problems.append(f"installed by {inst.method} at {inst.executable!r}; the policy's installer is "
                        f"{rules.installer} at {rules.executable!r}")
    if inst.file_count == 0 or inst.total_bytes == 0 or _ZERO_DIGEST in (inst.executable_sha256,
                                                                          inst.manifest_sha256):
        problems.append("nothing installed, or no digest of it recorded")
    elif executable_sha256 is not None and inst.executable_sha256 != executable_sha256:
        problems.append("the installed executable is not the one this version installs elsewhere")
    problems += [why for why, _ in package_signature_problems(inst, rules.platform, signed_only=rules.signed_only)]
    return problems


def _state_problems(step: StateStep, rules: UpdateRules, *, verb: str, sha: str, want: str,
                    code: str | None, digest: str | None) -> list[str]:
    """One state verb's run against what it must show: ``want`` allow (with ``digest``) or reject with ``code``."""
    problems = []
    command = rules.state_write if verb == "write" else rules.state_check
    if step.verb != verb or tuple(step.command) != command:
        problems.append(f"ran {step.verb} {list(step.command)!r}, the policy's {verb} verb is {list(command)!r}")
    report = step.report
    if step.timed_out:
        return [*problems, "timed out"]
    if report is None:
        return [*problems, f"the app wrote no state record (exit {step.exit_code})"]
    if report.verb != verb or report.platform != rules.platform:
        problems.append(f"the record is a {report.verb} on {report.platform}, not a {verb} on {rules.platform}")
    if report.build_sha != sha:
        problems.append(f"build {report.build_sha[:12]} ran it, not {sha[:12]}")
    return problems + _outcome_problems(step, report, want=want, code=code, digest=digest)


def _outcome_problems(step: StateStep, report: AppStateRecord, *, want: str, code: str | None,
                      digest: str | None) -> list[str]:
    """What the app observed against what the step must show, with the exit status and digest that go with it."""
    problems = []
    if (report.observed, report.code) != (want, code):
        problems.append(f"observed {report.observed} {report.code or ''}".rstrip()
                        + f", the policy requires {want} {code or ''}".rstrip())
    if want == "allow":
        if step.exit_code != 0:
            problems.append(exited(step.exit_code))
        if report.state_sha256 is None:
            problems.append("named no state digest")
        elif digest is not None and report.state_sha256 != digest:
            problems.append(f"found state {report.state_sha256[:16]}, the previous version wrote {digest[:16]}")
    else:
        if step.exit_code in (0, None):
            problems.append(f"a refusal that {exited(step.exit_code)}")
        if report.state_sha256 is not None:
            problems.append("a refusal that names a state digest")
    return problems


def _previous_problems(u: UpdateRecord, rules: UpdateRules) -> list[str]:
    problems = []
    if u.previous.audit_decision != "QUALIFIED":
        problems.append(f"the previous release's bundle audited {u.previous.audit_decision}")
    if not any(u.previous.artifact.name.endswith(end) for end in INSTALLER_SUFFIXES.get(rules.installer, ())):
        problems.append(f"the previous artifact {u.previous.artifact.name!r} is not a {rules.installer} file")
    return problems


def _probe_problems(u: UpdateRecord, rules: UpdateRules) -> list[str]:
    probe = u.upgrade_probe
    facts = probe_facts(report=probe.report, exit_code=probe.exit_code, timed_out=probe.timed_out,
                        platform=rules.platform, sha=rules.candidate_sha,
                        installed_executable_sha256=u.upgrade_install.executable_sha256,
                        required_checks=rules.probe_checks, required_layers=rules.layers)
    problems = list(facts.problems)
    if not facts.passed and not problems:
        problems.append(f"the probe {exited(probe.exit_code)}{' at its time limit' if probe.timed_out else ''}, "
                        f"its report {'present' if probe.report else 'absent'}")
    reported = tuple((layer.name, layer.applied) for layer in probe.report.isolation_layers) if probe.report else None
    if reported is not None and rules.candidate_layers is not None and reported != rules.candidate_layers:
        problems.append("the probe after the upgrade reports other isolation layers than the candidate's own probe")
    if tuple(probe.command) != rules.probe_command or probe.display != rules.display:
        problems.append("the probe ran another command or display than the policy's")
    if probe.build_sha_matches != facts.build_sha_matches or \
            probe.executable_matches_install != facts.executable_matches_install or probe.passed != facts.passed:
        problems.append("the probe record contradicts its facts")
    return problems


def update_facts(u: UpdateRecord, rules: UpdateRules) -> UpdateFacts:
    """Every step's problems, from its facts and the rules alone (never from a step's ``passed``)."""
    prev_sha, written = u.previous.sha, u.write_state.report
    digest = written.state_sha256 if written is not None else None
    refuse = rules.downgrade == "refuse"
    steps: list[tuple[str, Sequence[str]]] = [
        ("previous-release", _previous_problems(u, rules)),
        ("previous-install", _install_problems(u.previous_install, rules, artifact_sha256=u.previous.artifact.sha256,
                                               executable_sha256=None)),
        ("write-state", _state_problems(u.write_state, rules, verb="write", sha=prev_sha, want="allow", code=None,
                                        digest=None)),
        ("upgrade-install", _install_problems(u.upgrade_install, rules,
                                              artifact_sha256=rules.candidate_artifact_sha256,
                                              executable_sha256=rules.candidate_executable_sha256)),
        ("upgrade-check", _state_problems(u.upgrade_check, rules, verb="check", sha=rules.candidate_sha,
                                          want="allow", code=None, digest=digest)),
        ("upgrade-probe", _probe_problems(u, rules)),
        ("rollback-install", _install_problems(u.rollback_install, rules, artifact_sha256=u.previous.artifact.sha256,
                                               executable_sha256=u.previous_install.executable_sha256)),
        ("rollback-check", _state_problems(u.rollback_check, rules, verb="check", sha=prev_sha, want="allow",
                                           code=None, digest=digest)),
        ("downgrade-check", _state_problems(u.downgrade_check, rules, verb="check", sha=prev_sha,
                                            want="reject" if refuse else "allow",
                                            code=rules.downgrade_code if refuse else None, digest=digest)),
    ]
    if digest is None:
        # Without a written state nothing later can be held to it: every check names that.
        steps = [(name, [*why, "no state was written to compare with"] if name.endswith("-check") else why)
                 for name, why in steps]
    return UpdateFacts(tuple((name, tuple(why)) for name, why in steps))


def step_claims(u: UpdateRecord) -> dict[str, bool]:
    """Each step's own ``passed`` claim, by the step's name.

    ``previous-release`` has none; the upgrade probe's claims are the probe's own, held to the probe's rule in
    ``_probe_problems``.
    """
    return {"previous-install": u.previous_install.passed, "write-state": u.write_state.passed,
            "upgrade-install": u.upgrade_install.passed, "upgrade-check": u.upgrade_check.passed,
            "rollback-install": u.rollback_install.passed,
            "rollback-check": u.rollback_check.passed, "downgrade-check": u.downgrade_check.passed}


def rules_for(p: PlatformPredicate, exp: Expectations) -> UpdateRules | None:
    """The policy's rules for this statement's update journey; None when the policy asks for none."""
    target = exp.install_for(p.platform)
    if exp.update is None or target is None:
        return None
    return UpdateRules(
        platform=p.platform, candidate_sha=p.source_gate.sha, candidate_artifact_sha256=p.build.artifact.sha256,
        candidate_executable_sha256=p.install.executable_sha256, installer=target.kind,
        executable=target.executable, state_write=exp.update.state_write, state_check=exp.update.state_check,
        downgrade=exp.update.downgrade, downgrade_code=exp.update.downgrade_code,
        probe_command=exp.probe_command, display=exp.display_for(p.platform), probe_checks=exp.probe_checks,
        layers=exp.layers_for(p.platform), candidate_layers=candidate_layers(p), signed_only=signed_only(p, exp))


def candidate_layers(p: PlatformPredicate) -> tuple[tuple[str, bool], ...] | None:
    report = p.launch_probe.report
    return None if report is None else tuple((layer.name, layer.applied) for layer in report.isolation_layers)


def assess_update(p: PlatformPredicate, exp: Expectations) -> StageOutcome:
    """The update journey: required exactly when the policy has ``[update]``; every claim re-derived."""
    out = _Collect("update", Code.UPDATE_FAILED)
    u, rules = p.update, rules_for(p, exp)
    if rules is None:
        if u is not None:
            out.fail("the statement carries an update journey the policy does not ask for")
        return out.done()
    if u is None:
        out.fail("the policy requires the update journey ([update]); the statement has none")
        return out.done()
    if (u.installer, u.downgrade, u.downgrade_code) != (rules.installer, rules.downgrade, rules.downgrade_code):
        out.fail(f"the journey ran with installer {u.installer} and downgrade rule {u.downgrade} "
                 f"{u.downgrade_code or ''}; the policy's are {rules.installer} and {rules.downgrade} "
                 f"{rules.downgrade_code or ''}")
    facts = update_facts(u, rules)
    for name, problems in facts.step_problems:
        code = Code.PREVIOUS_RELEASE_UNQUALIFIED if name == "previous-release" else None
        for why in problems:
            out.fail(f"{name}: {why}"[:1500], code)
    for name, claimed in step_claims(u).items():
        out.claim(f"{name}.passed", claimed, facts.step_passed(name))
    out.claim("failed_steps", tuple(u.failed_steps), facts.failed)
    out.claim("passed", u.passed, facts.passed)
    return out.done()
