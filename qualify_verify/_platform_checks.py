"""The checklist for one platform statement, in the order DESIGN.md section 3 gives.

1. the signature verifies and its key is trusted for the platform role;
2. the signed payload is a valid statement of the platform predicate type;
3. the file name, the subject and the build record name the same artifact;
4. every identity claim equals what the policy fixes (repository, workflow,
   ref, trigger, runner environment);
5. every SHA in the predicate is the same commit;
6. the outcomes: source gate, signature (re-verified here), install, launch
   probe and each journey step the policy requires.
Checks 1-2 stop at the first failure (nothing else can be trusted); 3-6 report
everything they find.
"""

from __future__ import annotations

from dataclasses import dataclass

from evidence_schemas import Code, Platform, PlatformStatement, QualificationError, RunIdentity, parse_statement
from qualify_trust import ArtifactSignature, GitHubIdentity, StatementVerifier, VerifiedStatement, cross_check_claims

from ._expectations import Expectations
from ._findings import Findings


@dataclass(frozen=True)
class VerifiedPlatform:
    file_name: str
    statement: PlatformStatement
    signed: VerifiedStatement

    @property
    def platform(self) -> Platform:
        return self.statement.predicate.platform


def verify_signature_and_payload(name: str, data: bytes, verifier: StatementVerifier,
                                 findings: Findings) -> VerifiedPlatform | None:
    try:
        signed = verifier.verify_statement(data, role="platform", what=name)
        statement = parse_statement(signed.payload, what=name)
    except QualificationError as exc:
        findings.add_error(exc)
        return None
    if not isinstance(statement, PlatformStatement):
        findings.add(Code.PREDICATE_TYPE_UNKNOWN, f"{name}: carries {statement.predicateType}, not a platform "
                                                  "qualification")
        return None
    return VerifiedPlatform(name, statement, signed)


def check_artifact_identity(vp: VerifiedPlatform, suffix: str, findings: Findings) -> None:
    p = vp.statement.predicate
    if vp.file_name != f"platform-{p.platform}{suffix}":
        findings.add(Code.PLATFORM_UNKNOWN, f"{vp.file_name}: the statement is for {p.platform}", p.platform)
    subjects = vp.statement.subject
    artifact = p.build.artifact
    if len(subjects) != 1 or subjects[0].name != artifact.name or subjects[0].digest.sha256 != artifact.sha256:
        findings.add(Code.SUBJECT_MISMATCH, f"{vp.file_name}: the subject is not exactly the built artifact",
                     p.platform)


def check_identity_claims(vp: VerifiedPlatform, exp: Expectations, findings: Findings) -> None:
    p = vp.statement.predicate
    run = p.run
    if run.mode != ("local" if exp.trust_mode == "ed25519" else "github"):
        findings.add(Code.WORKFLOW_IDENTITY_MISMATCH, f"{vp.file_name}: {run.mode} evidence under a "
                                                      f"{exp.trust_mode} policy", p.platform)
    if run.repository != exp.repository or run.workflow != exp.workflow:
        findings.add(Code.WORKFLOW_IDENTITY_MISMATCH,
                     f"{vp.file_name}: produced by {run.repository}:{run.workflow}, the policy fixes "
                     f"{exp.repository}:{exp.workflow}", p.platform)
    if run.trigger not in exp.allowed_triggers or run.runner_environment != exp.runner_environment:
        findings.add(Code.WORKFLOW_IDENTITY_MISMATCH,
                     f"{vp.file_name}: trigger {run.trigger!r} on {run.runner_environment!r} is not allowed",
                     p.platform)
    for where, ref in (("run", run.ref), ("source gate", p.source_gate.ref)):
        if ref != exp.ref:
            findings.add(Code.REF_NOT_MAIN, f"{vp.file_name}: {where} ref is {ref!r}, not {exp.ref}", p.platform)
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


def check_source_gate(vp: VerifiedPlatform, exp: Expectations, findings: Findings) -> None:
    p = vp.statement.predicate
    gate = p.source_gate
    # The gate's record must describe the same source as the run it belongs to.
    if gate.mode != p.run.mode or gate.repository != p.run.repository:
        findings.add(Code.WORKFLOW_IDENTITY_MISMATCH,
                     f"{vp.file_name}: the source gate observed {gate.mode}:{gate.repository}, the run is "
                     f"{p.run.mode}:{p.run.repository}", p.platform)
    if not gate.passed or not gate.head_matches:
        findings.add(Code.NOT_MAIN_HEAD, f"{vp.file_name}: the source gate did not see the head of main", p.platform)
    # Only GitHub mode can observe protection; local evidence honestly says it did not.
    if exp.trust_mode == "sigstore" and gate.protection not in ("protected", "ruleset"):
        findings.add(Code.MAIN_UNPROTECTED, f"{vp.file_name}: main was {gate.protection}", p.platform)
    if exp.require_clean_worktree and not gate.worktree_clean:
        findings.add(Code.WORKTREE_DIRTY, f"{vp.file_name}: the work tree was dirty", p.platform)


def check_signature_record(vp: VerifiedPlatform, exp: Expectations, verifier: StatementVerifier,
                           findings: Findings) -> None:
    p = vp.statement.predicate
    sig = p.signature
    artifact = p.build.artifact
    if sig.artifact_sha256 != artifact.sha256 or not sig.readback_verified:
        findings.add(Code.ARTIFACT_SIGNATURE_FAILED, f"{vp.file_name}: the artifact signature read-back failed",
                     p.platform)
    # The detached signature is re-verified here, not taken from the record's word.
    claimed = ArtifactSignature(sig.method, sig.keyid, sig.signature)
    if not verifier.verify_artifact_signature(artifact.sha256, claimed):
        findings.add(Code.ARTIFACT_SIGNATURE_FAILED, f"{vp.file_name}: the artifact signature does not verify",
                     p.platform)
    if sig.platform_signing_state not in exp.accepted_signing[p.platform]:
        findings.add(Code.PLATFORM_SIGNING_UNACCEPTED,
                     f"{vp.file_name}: OS signing state {sig.platform_signing_state!r} is not accepted for "
                     f"{p.platform}", p.platform)


def install_ok(vp: VerifiedPlatform) -> bool:
    p = vp.statement.predicate
    return p.install.passed and p.install.artifact_sha256 == p.build.artifact.sha256 and p.install.file_count > 0


def probe_ok(vp: VerifiedPlatform) -> bool:
    p = vp.statement.predicate
    probe = p.launch_probe
    report = probe.report
    return (
        probe.passed and probe.exit_code == 0 and not probe.timed_out and report is not None
        and report.build_sha == p.run.sha and report.platform == p.platform
        and report.executable_sha256 == p.install.executable_sha256
        and report.worker_entry_resolvable and report.catalog_verified and report.isolation_available
    )


def journey_gaps(vp: VerifiedPlatform, exp: Expectations) -> list[str]:
    """The steps the policy requires that are absent or did not pass (the consumer's list, not the producer's)."""
    j = vp.statement.predicate.journey
    ids = [s.id for s in j.steps]
    # A step reported twice could pair a failure with a pass: neither copy counts.
    repeated = {step for step in ids if ids.count(step) > 1}
    passed = {s.id for s in j.steps if s.passed and s.observed == s.expected and s.observed_code == s.expected_code
              and s.id not in repeated}
    gaps = [step for step in exp.required_steps if step not in passed]
    gaps += [f"{step} (reported {ids.count(step)} times)" for step in sorted(repeated)]
    if not (j.passed and j.exit_code == 0 and not j.timed_out):
        gaps.append("<journey did not complete>")
    return gaps


def check_outcomes(vp: VerifiedPlatform, exp: Expectations, verifier: StatementVerifier,
                   findings: Findings) -> None:
    p = vp.statement.predicate
    check_source_gate(vp, exp, findings)
    if not p.build.passed:
        findings.add(Code.BUILD_FAILED, f"{vp.file_name}: the build did not pass", p.platform)
    check_signature_record(vp, exp, verifier, findings)
    if not install_ok(vp):
        why = p.install.failure or "no files installed"
        findings.add(Code.INSTALL_FAILED, f"{vp.file_name}: install did not pass ({why})", p.platform)
    if not probe_ok(vp):
        findings.add(Code.PROBE_FAILED, f"{vp.file_name}: the launch probe did not pass", p.platform)
    gaps = journey_gaps(vp, exp)
    if gaps:
        findings.add(Code.JOURNEY_INCOMPLETE, f"{vp.file_name}: journey steps missing or failed: "
                                              f"{', '.join(gaps)[:500]}", p.platform)


def verify_platform(name: str, data: bytes, exp: Expectations, verifier: StatementVerifier,
                    findings: Findings) -> VerifiedPlatform | None:
    vp = verify_signature_and_payload(name, data, verifier, findings)
    if vp is None:
        return None
    check_artifact_identity(vp, verifier.file_suffix, findings)
    check_identity_claims(vp, exp, findings)
    check_single_commit(vp, findings)
    check_outcomes(vp, exp, verifier, findings)
    return vp
