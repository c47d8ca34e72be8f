"""The checklist for one platform statement, in the order docs/design.md §5.1 gives.

1. the signature verifies and its key is trusted for the platform role;
2. the signed payload is a valid statement of the platform predicate type, and
   its signer is the one the policy names for that platform (GitHub mode: the
   platform's own reusable workflow, so no job speaks for another platform);
3. the file name, the subject and the build record name the same artifact;
4. every identity claim equals what the policy fixes (repository, workflow,
   ref, trigger, runner environment);
5. every SHA in the predicate is the same commit;
6. the outcomes: every stage's pass or fail re-derived from the record's facts
   and the policy (``_outcomes``), never read from the record's ``passed``;
   a record whose verdict contradicts its facts is refused; and every run of
   app code was confined as the policy's ``[confinement]`` requires
   (``_confinement_checks``).
Checks 1-2 stop at the first failure (nothing else can be trusted), which is then
the root cause of what the file's absence leaves undone; 3-6 report everything
they find.
"""

from __future__ import annotations

from dataclasses import dataclass

from desktop_qualify.evidence_schemas import (
    Code,
    Platform,
    PlatformStatement,
    QualificationError,
    Reason,
    RunIdentity,
    parse_statement,
    platform_file_name,
)
from desktop_qualify.qualify_trust import (
    ArtifactSignature,
    GitHubIdentity,
    StatementVerifier,
    VerifiedStatement,
    cross_check_claims,
)

from ._confinement_checks import check_app_stages_confined
from ._expectations import Expectations
from ._findings import Findings
from ._outcomes import (
    StageOutcome,
    assess_build,
    assess_install,
    assess_journey,
    assess_probe,
    assess_reproduction,
    assess_signature,
    assess_source_gate,
)
from ._update_outcome import assess_update


@dataclass(frozen=True)
class VerifiedPlatform:
    """A platform statement whose signature and payload verified: its file name, the statement, the signer."""

    file_name: str
    statement: PlatformStatement
    signed: VerifiedStatement

    @property
    def platform(self) -> Platform:
        """The platform the statement is for."""
        return self.statement.predicate.platform


def verify_signature_and_payload(name: str, data: bytes, verifier: StatementVerifier,
                                 findings: Findings) -> VerifiedPlatform | Reason:
    """The verified statement, or the root cause that stops every later check of this file."""
    try:
        signed = verifier.verify_statement(data, role="platform", what=name)
        statement = parse_statement(signed.payload, what=name)
    except QualificationError as exc:
        return findings.add_error(exc)
    if not isinstance(statement, PlatformStatement):
        return findings.add(Code.PREDICATE_TYPE_UNKNOWN, f"{name}: carries {statement.predicateType}, not a "
                                                         "platform qualification")
    platform = statement.predicate.platform
    try:
        verifier.check_speaks_for(signed.signer, platform)
    except QualificationError as exc:
        # Nothing a statement says counts when its signer may not speak for its platform.
        return findings.add(exc.code, f"{name}: {exc.message}", platform)
    return VerifiedPlatform(name, statement, signed)


def check_artifact_identity(vp: VerifiedPlatform, suffix: str, findings: Findings) -> None:
    p = vp.statement.predicate
    if vp.file_name != platform_file_name(p.platform, suffix):
        findings.add(Code.PLATFORM_UNKNOWN, f"{vp.file_name}: the statement is for {p.platform}", p.platform)
    subjects = vp.statement.subject
    artifact = p.build.artifact
    if len(subjects) != 1 or subjects[0].name != artifact.name or subjects[0].digest.sha256 != artifact.sha256:
        findings.add(Code.SUBJECT_MISMATCH, f"{vp.file_name}: the subject is not exactly the built artifact",
                     p.platform)


def check_identity_claims(vp: VerifiedPlatform, exp: Expectations, findings: Findings) -> None:
    p = vp.statement.predicate
    run = p.run
    if run.mode != exp.mode:
        findings.add(Code.WORKFLOW_IDENTITY_MISMATCH, f"{vp.file_name}: {run.mode} evidence under a "
                                                      f"{exp.trust_mode} policy", p.platform)
    # A local chain runs once: only GitHub re-runs a workflow, so only GitHub evidence has later attempts.
    if run.mode == "local" and run.attempt != 1:
        findings.add(Code.WORKFLOW_IDENTITY_MISMATCH, f"{vp.file_name}: local evidence claims attempt "
                                                      f"{run.attempt}; a local run has one attempt", p.platform)
    if run.repository != exp.repository or run.workflow != exp.workflow:
        findings.add(Code.WORKFLOW_IDENTITY_MISMATCH,
                     f"{vp.file_name}: produced by {run.repository}:{run.workflow}, the policy fixes "
                     f"{exp.repository}:{exp.workflow}", p.platform)
    if run.trigger not in exp.allowed_triggers or run.runner_environment != exp.runner_environment:
        findings.add(Code.WORKFLOW_IDENTITY_MISMATCH,
                     f"{vp.file_name}: trigger {run.trigger!r} on {run.runner_environment!r} is not allowed",
                     p.platform)
    # The source gate's own ref is the gate's outcome (``assess_source_gate``).
    if run.ref != exp.ref:
        findings.add(Code.REF_NOT_MAIN, f"{vp.file_name}: run ref is {run.ref!r}, not {exp.ref}", p.platform)
    check_claims_match_certificate(vp.signed, run, vp.file_name, findings, p.platform)


def check_claims_match_certificate(signed: VerifiedStatement, run: RunIdentity, name: str, findings: Findings,
                                   platform: Platform | None = None) -> None:
    """A claim the certificate also carries must equal the certificate's value (GitHub mode)."""
    claims = signed.signer.claims
    if isinstance(claims, GitHubIdentity):
        try:
            cross_check_claims(claims, run)
        except QualificationError as exc:
            findings.add(exc.code, f"{name}: {exc.message}", platform)


def check_single_commit(vp: VerifiedPlatform, findings: Findings) -> None:
    p = vp.statement.predicate
    shas = {"run": p.run.sha, "source gate": p.source_gate.sha, "build": p.build.build_sha}
    if p.launch_probe.report is not None:
        shas["launch probe"] = p.launch_probe.report.build_sha
    if p.journey.app_build_sha is not None:
        shas["journey"] = p.journey.app_build_sha
    if len(set(shas.values())) != 1:
        listed = ", ".join(f"{k}={v[:12]}" for k, v in shas.items())
        findings.add(Code.SHA_MISMATCH, f"{vp.file_name}: records name different commits ({listed})", p.platform)


def check_source_gate_identity(vp: VerifiedPlatform, exp: Expectations, findings: Findings) -> None:
    """The gate's record must describe the same source as the run it belongs to, in the policy's mode."""
    p = vp.statement.predicate
    gate = p.source_gate
    if gate.mode != p.run.mode or gate.repository != p.run.repository or gate.mode != exp.mode:
        findings.add(Code.WORKFLOW_IDENTITY_MISMATCH,
                     f"{vp.file_name}: the source gate observed {gate.mode}:{gate.repository}, the run is "
                     f"{p.run.mode}:{p.run.repository}", p.platform)


def check_artifact_signer(vp: VerifiedPlatform, verifier: StatementVerifier, findings: Findings) -> bool:
    """The detached artifact signature, re-verified here rather than taken from the record's word.

    Who signed it is read from the signature and must be the job that signed the
    statement: locally the same key; in GitHub mode a certificate of the same run,
    attempt, commit, trigger and workflow (an artifact signature cannot be borrowed
    from another run). Returns whether the signature verifies at all.
    """
    p = vp.statement.predicate
    sig = p.signature
    signer = verifier.verify_artifact_signature(p.build.artifact.sha256,
                                                ArtifactSignature(sig.method, sig.keyid, sig.signature))
    if signer is None:
        return False
    if signer.kind == "ed25519":
        return signer.keyid == vp.signed.signer.keyid
    claims = signer.claims
    if isinstance(claims, GitHubIdentity):
        try:
            cross_check_claims(claims, p.run)
        except QualificationError as exc:
            findings.add(exc.code, f"{vp.file_name}: artifact signature: {exc.message}", p.platform)
        # The same platform job signs both: another platform's signer cannot sign this artifact.
        if signer.name != vp.signed.signer.name:
            findings.add(Code.WORKFLOW_IDENTITY_MISMATCH, f"{vp.file_name}: artifact signed by {signer.name!r}, "
                                                          f"the statement by {vp.signed.signer.name!r}", p.platform)
    return True


def stage_outcomes(vp: VerifiedPlatform, exp: Expectations, verifier: StatementVerifier,
                   findings: Findings) -> list[StageOutcome]:
    """Every stage's outcome, re-derived from the facts, in the chain's order."""
    p = vp.statement.predicate
    return [
        assess_source_gate(p, exp),
        assess_build(p, exp),
        assess_reproduction(p, exp),
        assess_signature(p, exp, signature_verifies=check_artifact_signer(vp, verifier, findings)),
        assess_install(p, exp),
        assess_probe(p, exp),
        assess_journey(p, exp),
        assess_update(p, exp),
    ]


def check_outcomes(vp: VerifiedPlatform, exp: Expectations, verifier: StatementVerifier,
                   findings: Findings) -> None:
    check_source_gate_identity(vp, exp, findings)
    # Stages run in order on what the one before made: once a stage failed, a later stage's problems (a probe of an
    # install that failed, a journey that never ran) are shown as its consequences, so one fault reads as one root
    # cause. They are still listed and still refuse; only the first failing stage's problems are root causes.
    first: Reason | None = None
    for outcome in stage_outcomes(vp, exp, verifier, findings):
        failed_here: Reason | None = None
        for problem in outcome.problems:
            reason = findings.add(problem.code, f"{vp.file_name}: {problem.message}", vp.platform, follows=first)
            failed_here = failed_here or reason
        first = first or failed_here


def verify_platform(name: str, data: bytes, exp: Expectations, verifier: StatementVerifier,
                    findings: Findings) -> VerifiedPlatform | Reason:
    """Checks 1-6 for one file; a statement that does not verify returns its root cause instead."""
    vp = verify_signature_and_payload(name, data, verifier, findings)
    if isinstance(vp, Reason):
        return vp
    check_artifact_identity(vp, verifier.file_suffix, findings)
    check_identity_claims(vp, exp, findings)
    check_single_commit(vp, findings)
    check_outcomes(vp, exp, verifier, findings)
    check_app_stages_confined(vp, exp, findings)
    return vp
