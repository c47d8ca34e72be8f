"""qualify_verify/_platform_checks.py, the checklist for one platform statement: the exact finding (code, message,
platform) for a payload that is not a statement, a statement of another predicate type, a signer that may not speak
for its platform; a file name for another platform, a subject that is not exactly the built artifact (another name,
another digest, a second subject); each identity claim that departs from the policy (mode, a local run's attempt,
repository and workflow, trigger and runner, ref) and each claim that departs from the signing certificate; the
records naming different commits, each named with its first 12 hex digits; a source gate of another mode; the
detached artifact signature (another keyring key than the statement's does not verify; a certificate whose claims
depart from the run, or another job's certificate, is named); and the platform of every stage's problem. Written
for the mutants of the module that survived the verifier's other tests (docs/mutation.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from desktop_qualify.evidence_schemas import (
    Code,
    DigestSet,
    QualificationError,
    Reason,
    Subject,
)
from desktop_qualify.qualify_trust import (
    ArtifactSignature,
    GitHubIdentity,
    SignerIdentity,
    StatementVerifier,
    VerifiedStatement,
    add_to_keyring,
    verifier_for,
)
from desktop_qualify.qualify_trust._envelope import sign_artifact_digest, sign_envelope
from desktop_qualify.qualify_trust._keyring import Role
from desktop_qualify.qualify_trust._keys import keyid_of
from desktop_qualify.qualify_verify._expectations import Expectations
from desktop_qualify.qualify_verify._findings import Findings
from desktop_qualify.qualify_verify._platform_checks import (
    VerifiedPlatform,
    check_artifact_identity,
    check_artifact_signer,
    check_identity_claims,
    check_outcomes,
    check_single_commit,
    check_source_gate_identity,
    verify_signature_and_payload,
)
from support.evidence_factory import MAIN_REF, REPOSITORY, WORKFLOW, Evidence, PlatformSpec, make_evidence

NAME = "platform-linux.dsse.json"
WIM = Code.WORKFLOW_IDENTITY_MISMATCH.value
GATE_SHA = "a" * 40
BUILD_SHA = "b" * 40
PROBE_SHA = "c" * 40
JOURNEY_SHA = "d" * 40
# Certificate claims of another platform's job; a local run carrying them is refused at the first claim.
SIGNER_MACOS = "https://github.com/acme/desktop/.github/workflows/produce-macos.yml@refs/heads/main"
SIGNER_LINUX = "https://github.com/acme/desktop/.github/workflows/produce-linux.yml@refs/heads/main"
NOT_SIGSTORE = "predicate claims 'local' mode but carries a Sigstore signature"


@dataclass
class Chain:
    evidence: Evidence
    vp: VerifiedPlatform
    exp: Expectations
    verifier: StatementVerifier


def _chain(tmp_path: Path, edit: Callable[[dict[str, Any]], None] | None = None) -> Chain:
    """A local chain's Linux statement, verified (signature and payload) as the verifier does it."""
    ev = make_evidence(tmp_path, platforms=[PlatformSpec("linux", edit=edit)], aggregate=False)
    policy = ev.policy
    verifier = verifier_for(policy)
    findings = Findings()
    written = ev.platforms[0]
    vp = verify_signature_and_payload(written.path.name, written.envelope, verifier, findings)
    assert isinstance(vp, VerifiedPlatform), findings.reasons
    assert findings.ok
    return Chain(ev, vp, Expectations.from_policy(policy), verifier)


def _found(findings: Findings) -> list[tuple[str, str, str | None, str, int | None]]:
    return [(r.code.value, r.message, r.platform, r.cause, r.follows) for r in findings.reasons]


def _root(code: str, message: str) -> tuple[str, str, str | None, str, int | None]:
    return code, message, "linux", "root", None


def _github_claims() -> GitHubIdentity:
    return GitHubIdentity(
        issuer="https://token.actions.githubusercontent.com", san_uri=SIGNER_LINUX, build_signer_uri=SIGNER_LINUX,
        build_signer_digest="e" * 40, runner_environment="github-hosted",
        source_repository_uri="https://github.com/acme/desktop", source_repository_digest="f" * 40,
        source_repository_ref=MAIN_REF,
        build_config_uri="https://github.com/acme/desktop/.github/workflows/qualify.yml@refs/heads/main",
        build_trigger="push", run_invocation_uri="https://github.com/acme/desktop/actions/runs/7/attempts/1",
        run_repository="acme/desktop", run_id="7", run_attempt=1)


def _sigstore(name: str) -> SignerIdentity:
    return SignerIdentity("sigstore", name, "9" * 64, claims=_github_claims())


def _signed_by(vp: VerifiedPlatform, signer: SignerIdentity) -> VerifiedPlatform:
    signed = VerifiedStatement(vp.signed.payload, signer, vp.signed.envelope_sha256)
    return VerifiedPlatform(vp.file_name, vp.statement, signed)


class _Delegating(StatementVerifier):
    """The chain's own verifier, but for the one answer a test replaces."""

    def __init__(self, inner: StatementVerifier, *, refuse_speaks_for: str | None = None,
                 artifact_signer: SignerIdentity | None = None) -> None:
        self.inner = inner
        self.file_suffix = inner.file_suffix
        self.refuse_speaks_for = refuse_speaks_for
        self.artifact_signer = artifact_signer

    def verify_statement(self, data: bytes, *, role: Role, what: str) -> VerifiedStatement:
        return self.inner.verify_statement(data, role=role, what=what)

    def check_speaks_for(self, signer: SignerIdentity, platform: str) -> None:
        if self.refuse_speaks_for is not None:
            raise QualificationError(Code.SIGNER_UNTRUSTED, self.refuse_speaks_for)
        self.inner.check_speaks_for(signer, platform)

    def verify_artifact_signature(self, sha256_hex: str, signature: ArtifactSignature) -> SignerIdentity | None:
        if self.artifact_signer is not None:
            return self.artifact_signer
        return self.inner.verify_artifact_signature(sha256_hex, signature)


# --- verify_signature_and_payload: the root cause that stops the file's other checks --------------------------------


def test_a_signed_payload_that_is_not_a_json_object_is_refused_naming_the_file(tmp_path: Path) -> None:
    chain = _chain(tmp_path)
    envelope = sign_envelope(b"[]", chain.evidence.keys.platform)
    findings = Findings()
    got = verify_signature_and_payload(NAME, envelope, chain.verifier, findings)
    assert isinstance(got, Reason)
    assert _found(findings) == [
        (Code.SCHEMA_INVALID.value, f"{NAME}: a statement must be a JSON object", None, "root", None)]


def test_an_aggregate_signed_with_the_platform_key_is_not_a_platform_qualification(tmp_path: Path) -> None:
    chain = _chain(tmp_path)
    payload = chain.evidence.aggregate_payload()
    envelope = sign_envelope(payload, chain.evidence.keys.platform)
    findings = Findings()
    got = verify_signature_and_payload(NAME, envelope, chain.verifier, findings)
    assert isinstance(got, Reason)
    assert _found(findings) == [(
        Code.PREDICATE_TYPE_UNKNOWN.value,
        f"{NAME}: carries https://desktop-qualify.invalid/evidence/aggregate-qualification/v3, not a platform "
        "qualification", None, "root", None)]


def test_a_signer_that_may_not_speak_for_the_platform_is_refused_for_that_platform(tmp_path: Path) -> None:
    chain = _chain(tmp_path)
    verifier = _Delegating(chain.verifier, refuse_speaks_for="produce-macos.yml may not sign for linux")
    findings = Findings()
    got = verify_signature_and_payload(NAME, chain.evidence.platforms[0].envelope, verifier, findings)
    assert isinstance(got, Reason)
    assert _found(findings) == [_root(Code.SIGNER_UNTRUSTED.value,
                                      f"{NAME}: produce-macos.yml may not sign for linux")]


# --- check_artifact_identity: file name, subject and build record name one artifact ---------------------------------


def test_a_linux_statement_under_the_macos_file_name_is_platform_unknown_for_linux(tmp_path: Path) -> None:
    chain = _chain(tmp_path)
    vp = VerifiedPlatform("platform-macos.dsse.json", chain.vp.statement, chain.vp.signed)
    findings = Findings()
    check_artifact_identity(vp, chain.verifier.file_suffix, findings)
    assert _found(findings) == [_root(Code.PLATFORM_UNKNOWN.value,
                                      "platform-macos.dsse.json: the statement is for linux")]


def _with_subjects(vp: VerifiedPlatform, subjects: list[Subject]) -> VerifiedPlatform:
    return VerifiedPlatform(vp.file_name, vp.statement.model_copy(update={"subject": subjects}), vp.signed)


def _subject_mismatch() -> list[tuple[str, str, str | None, str, int | None]]:
    return [_root(Code.SUBJECT_MISMATCH.value, f"{NAME}: the subject is not exactly the built artifact")]


@pytest.mark.parametrize("spoil", [{"sha256": "0" * 64}, {"name": "other.tar.gz"}],
                         ids=["artifact-name-other-digest", "artifact-digest-other-name"])
def test_a_subject_unlike_the_artifact_in_one_field_is_a_subject_mismatch(tmp_path: Path,
                                                                          spoil: dict[str, str]) -> None:
    chain = _chain(tmp_path)
    artifact = chain.vp.statement.predicate.build.artifact
    fields = {"name": artifact.name, "sha256": artifact.sha256, **spoil}
    vp = _with_subjects(chain.vp, [Subject(name=fields["name"], digest=DigestSet(sha256=fields["sha256"]))])
    findings = Findings()
    check_artifact_identity(vp, chain.verifier.file_suffix, findings)
    assert _found(findings) == _subject_mismatch()


def test_a_second_subject_after_the_exact_artifact_is_a_subject_mismatch(tmp_path: Path) -> None:
    chain = _chain(tmp_path)
    artifact = chain.vp.statement.predicate.build.artifact
    exact = Subject(name=artifact.name, digest=DigestSet(sha256=artifact.sha256))
    extra = Subject(name="extra.tar.gz", digest=DigestSet(sha256="0" * 64))
    findings = Findings()
    check_artifact_identity(_with_subjects(chain.vp, [exact, extra]), chain.verifier.file_suffix, findings)
    assert _found(findings) == _subject_mismatch()
    findings = Findings()
    check_artifact_identity(_with_subjects(chain.vp, [exact]), chain.verifier.file_suffix, findings)
    assert findings.ok


# --- check_identity_claims: each claim against the policy and the certificate -----------------------------------------


def _run(**fields: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["run"].update(fields)
    return edit


def _claims_found(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> list[Any]:
    chain = _chain(tmp_path, edit)
    findings = Findings()
    check_identity_claims(chain.vp, chain.exp, findings)
    return _found(findings)


def test_github_evidence_under_a_local_policy_names_the_mode_and_the_trust_mode(tmp_path: Path) -> None:
    assert _claims_found(tmp_path, _run(mode="github", attempt=2)) == [
        _root(WIM, f"{NAME}: github evidence under a ed25519 policy")]


def test_a_local_run_claiming_a_second_attempt_is_refused_for_its_platform(tmp_path: Path) -> None:
    assert _claims_found(tmp_path, _run(attempt=2)) == [
        _root(WIM, f"{NAME}: local evidence claims attempt 2; a local run has one attempt")]


def test_another_repository_and_workflow_are_named_beside_the_policys(tmp_path: Path) -> None:
    got = _claims_found(tmp_path, _run(repository="evil/fork", workflow=".github/workflows/other.yml"))
    assert got == [_root(WIM, f"{NAME}: produced by evil/fork:.github/workflows/other.yml, the policy fixes "
                              f"{REPOSITORY}:{WORKFLOW}")]


def test_a_trigger_the_policy_does_not_allow_is_named_with_the_runner(tmp_path: Path) -> None:
    assert _claims_found(tmp_path, _run(trigger="pull_request")) == [
        _root(WIM, f"{NAME}: trigger 'pull_request' on 'local' is not allowed")]


def test_a_run_from_another_ref_is_ref_not_main_for_its_platform(tmp_path: Path) -> None:
    assert _claims_found(tmp_path, _run(ref="refs/heads/feature")) == [
        _root(Code.REF_NOT_MAIN.value, f"{NAME}: run ref is 'refs/heads/feature', not {MAIN_REF}")]


def test_a_claim_the_certificate_contradicts_is_named_by_file_and_platform(tmp_path: Path) -> None:
    chain = _chain(tmp_path)
    findings = Findings()
    check_identity_claims(_signed_by(chain.vp, _sigstore(SIGNER_LINUX)), chain.exp, findings)
    assert _found(findings) == [_root(WIM, f"{NAME}: {NOT_SIGSTORE}")]


# --- check_single_commit: every record names one commit ---------------------------------------------------------------


def _five_commits(data: dict[str, Any]) -> None:
    data["source_gate"]["sha"] = GATE_SHA
    data["build"]["build_sha"] = BUILD_SHA
    data["launch_probe"]["report"]["build_sha"] = PROBE_SHA
    data["journey"]["app_build_sha"] = JOURNEY_SHA


def test_records_naming_different_commits_are_each_named_by_12_hex_digits(tmp_path: Path) -> None:
    chain = _chain(tmp_path, _five_commits)
    run_sha = chain.vp.statement.predicate.run.sha
    findings = Findings()
    check_single_commit(chain.vp, findings)
    assert _found(findings) == [_root(
        Code.SHA_MISMATCH.value,
        f"{NAME}: records name different commits (run={run_sha[:12]}, source gate={GATE_SHA[:12]}, "
        f"build={BUILD_SHA[:12]}, launch probe={PROBE_SHA[:12]}, journey={JOURNEY_SHA[:12]})")]


def test_one_commit_throughout_is_no_finding(tmp_path: Path) -> None:
    chain = _chain(tmp_path)
    findings = Findings()
    check_single_commit(chain.vp, findings)
    assert findings.ok


# --- check_source_gate_identity ---------------------------------------------------------------------------------------


def test_a_source_gate_of_another_mode_names_both_sides_for_its_platform(tmp_path: Path) -> None:
    def gate_on_github(data: dict[str, Any]) -> None:
        data["source_gate"]["mode"] = "github"

    chain = _chain(tmp_path, gate_on_github)
    findings = Findings()
    check_source_gate_identity(chain.vp, chain.exp, findings)
    assert _found(findings) == [_root(WIM, f"{NAME}: the source gate observed github:{REPOSITORY}, the run is "
                                           f"local:{REPOSITORY}")]


# --- check_artifact_signer: the detached signature, re-verified -------------------------------------------------


def test_an_artifact_signed_by_another_platform_key_than_the_statement_does_not_verify(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=["linux"], aggregate=False)
    # A second key the keyring trusts for the platform role: trusted, but not the key that signed the statement.
    other = Ed25519PrivateKey.generate()
    add_to_keyring(ev.keys.keyring, "second-platform", other.public_key(), ["platform"])

    def signed_by_second_key(data: dict[str, Any]) -> None:
        digest = data["build"]["artifact"]["sha256"]
        data["signature"]["keyid"] = keyid_of(other.public_key())
        data["signature"]["signature"] = sign_artifact_digest(digest, other)

    written = ev.write_platform(PlatformSpec("linux", edit=signed_by_second_key))
    verifier = verifier_for(ev.policy)
    findings = Findings()
    vp = verify_signature_and_payload(written.path.name, written.envelope, verifier, findings)
    assert isinstance(vp, VerifiedPlatform)
    assert verifier.verify_artifact_signature(
        vp.statement.predicate.build.artifact.sha256,
        ArtifactSignature("ed25519-detached", keyid_of(other.public_key()), vp.statement.predicate.signature.signature),
    ) is not None
    assert check_artifact_signer(vp, verifier, findings) is False
    assert findings.ok


def test_the_statements_own_key_on_the_artifact_verifies(tmp_path: Path) -> None:
    chain = _chain(tmp_path)
    findings = Findings()
    assert check_artifact_signer(chain.vp, chain.verifier, findings) is True
    assert findings.ok


def test_an_artifact_certificate_whose_claims_depart_from_the_run_is_named(tmp_path: Path) -> None:
    chain = _chain(tmp_path)
    vp = _signed_by(chain.vp, _sigstore(SIGNER_LINUX))
    verifier = _Delegating(chain.verifier, artifact_signer=_sigstore(SIGNER_LINUX))
    findings = Findings()
    assert check_artifact_signer(vp, verifier, findings) is True
    assert _found(findings) == [_root(WIM, f"{NAME}: artifact signature: {NOT_SIGSTORE}")]


def test_an_artifact_signed_by_another_platforms_job_names_both_signers(tmp_path: Path) -> None:
    chain = _chain(tmp_path)
    vp = _signed_by(chain.vp, _sigstore(SIGNER_LINUX))
    verifier = _Delegating(chain.verifier, artifact_signer=_sigstore(SIGNER_MACOS))
    findings = Findings()
    assert check_artifact_signer(vp, verifier, findings) is True
    assert _found(findings) == [
        _root(WIM, f"{NAME}: artifact signature: {NOT_SIGSTORE}"),
        _root(WIM, f"{NAME}: artifact signed by {SIGNER_MACOS!r}, the statement by {SIGNER_LINUX!r}")]


# --- check_outcomes: each stage's problem belongs to the platform ---------------------------------------------------


def test_a_signature_stage_that_does_not_verify_is_refused_for_the_statements_platform(tmp_path: Path) -> None:
    def bad_signature(data: dict[str, Any]) -> None:
        data["signature"]["signature"] = data["signature"]["signature"][::-1]

    chain = _chain(tmp_path, bad_signature)
    findings = Findings()
    check_outcomes(chain.vp, chain.exp, chain.verifier, findings)
    failed = Code.ARTIFACT_SIGNATURE_FAILED.value
    assert _found(findings) == [
        _root(failed, f"{NAME}: the artifact signature does not verify"),
        _root(failed, f"{NAME}: the signature record contradicts itself: passed is True, its facts give False")]
