"""The release gate on GitHub's attestation store: statements looked up by the candidate files' digests.

The aggregate job stores each verified statement through the attestation API;
GitHub hands each back re-serialised (the emulator sorts the keys and the client
re-encodes). The aggregate binds the signed statement bytes, so the chain still
qualifies, and everything a folder of evidence is refused for is refused here:
the store is a transport, never a verdict.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.serialization import Encoding
from desktop_qualify.evidence_schemas import (
    PLATFORM_PREDICATE_TYPE,
    SLSA_PROVENANCE_PREDICATE_TYPE,
    Code,
    canonical_bytes,
)
from desktop_qualify.qualify_github import GitHubClient, attestations_for, store_evidence
from sigstore.models import Bundle
from support.github_chain import REPOSITORY, GitHubChain, platform_identity

from desktop_qualify import qualify_cli

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="builds the linux bundle")]

PLATFORM_FILE = "platform-linux.sigstore.json"
AGGREGATE_FILE = "aggregate.sigstore.json"
PROVENANCE_FILE = "provenance-linux.sigstore.json"


@pytest.fixture(autouse=True)
def empty_store(github_chain: GitHubChain) -> Iterator[None]:
    """Each test stores what it needs; the chain's module-wide emulator keeps nothing between tests."""
    repo = github_chain.emulator.repo(REPOSITORY)
    repo.attestations.clear()
    yield
    repo.attestations.clear()
    repo.attestations_inline = True


def _client(chain: GitHubChain) -> GitHubClient:
    return GitHubClient.from_env(chain.env)


def _gate(chain: GitHubChain, *extra: str, artifacts: list[Path] | None = None) -> int:
    args = ["verify", "--policy", str(chain.policy.path), "--from-attestations"]
    for artifact in chain.artifacts if artifacts is None else artifacts:
        args += ["--artifact", str(artifact)]
    return qualify_cli.main([*args, *extra])


def _signed_bytes(bundle: bytes) -> bytes:
    return base64.b64decode(json.loads(bundle)["dsseEnvelope"]["payload"])


def _payload(bundle: bytes) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(_signed_bytes(bundle))
    return loaded


def _keyid(bundle: bytes) -> str:
    """The leaf certificate's SHA-256: what an aggregate entry records as the signer's key id."""
    return hashlib.sha256(Bundle.from_json(bundle).signing_certificate.public_bytes(Encoding.DER)).hexdigest()


def _store(chain: GitHubChain, folder: Path, files: dict[str, bytes]) -> None:
    folder.mkdir(exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    store_evidence(_client(chain), REPOSITORY, folder)


def _resigned_platform(chain: GitHubChain, edit: Callable[[dict[str, Any]], None] | None = None,
                       platform: str = "linux", attempt: int = 1) -> bytes:
    """The linux statement (edited), signed by ``platform``'s job of attempt ``attempt`` of the chain's run."""
    statement = _payload((chain.evidence / PLATFORM_FILE).read_bytes())
    statement["predicate"]["run"]["attempt"] = attempt
    if edit is not None:
        edit(statement)
    who = replace(platform_identity(chain.identity, platform), attempt=attempt)
    return chain.signer(who).sign_statement(canonical_bytes(statement))


def _rebound_aggregate(chain: GitHubChain, platform_bundle: bytes | None = None, *, attempt: int = 1,
                       run_id: int = 4242, sha: str | None = None, extra_subject: str | None = None) -> bytes:
    """What an attacker holding the aggregate job's identity signs: the aggregate re-bound, of another attempt."""
    statement = _payload((chain.evidence / AGGREGATE_FILE).read_bytes())
    run = statement["predicate"]["run"]
    run.update(attempt=attempt, run_id=str(run_id), sha=sha or run["sha"])
    if platform_bundle is not None:
        entry = statement["predicate"]["platforms"][0]
        entry["payload_sha256"] = hashlib.sha256(_signed_bytes(platform_bundle)).hexdigest()
        entry["signer_keyid"] = _keyid(platform_bundle)
    if extra_subject is not None:
        statement["subject"].append({"name": "extra.tar.gz", "digest": {"sha256": extra_subject}})
    who = replace(chain.aggregate_identity, attempt=attempt, run_id=run_id, sha=sha or chain.sha)
    return chain.signer(who).sign_statement(canonical_bytes(statement))


def _junk_bundle(index: int, digest: str) -> dict[str, Any]:
    """A stored "attestation" that claims our platform type for the digest and carries no valid signature."""
    statement = {"_type": "https://in-toto.io/Statement/v1", "subject": [{"name": "x", "digest": {"sha256": digest}}],
                 "predicateType": PLATFORM_PREDICATE_TYPE, "predicate": {"junk": index}}
    return {"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "dsseEnvelope": {"payload": base64.b64encode(canonical_bytes(statement)).decode(),
                             "payloadType": "application/vnd.in-toto+json", "signatures": []}}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_statements_read_back_from_the_attestation_store_qualify(github_chain: GitHubChain, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    stored = store_evidence(_client(github_chain), REPOSITORY, github_chain.evidence)
    # The platform statement, its SLSA provenance (stored beside it) and the aggregate.
    assert [s.file for s in stored] == [PLATFORM_FILE, PROVENANCE_FILE, AGGREGATE_FILE]
    # GitHub's copy is not the uploaded bytes: an exact-bytes binding could not survive this transport.
    (artifact,) = github_chain.artifacts
    fetched = attestations_for(_client(github_chain), REPOSITORY, hashlib.sha256(artifact.read_bytes()).hexdigest())
    on_disk = {(github_chain.evidence / n).read_bytes() for n in (PLATFORM_FILE, PROVENANCE_FILE, AGGREGATE_FILE)}
    assert len(fetched) == 3
    # gh attestation verify's default predicate type finds the provenance alone.
    provenance = attestations_for(_client(github_chain), REPOSITORY, hashlib.sha256(artifact.read_bytes()).hexdigest(),
                                  predicate_type=SLSA_PROVENANCE_PREDICATE_TYPE)
    assert [json.loads(_signed_bytes(b))["predicateType"] for b in provenance] == [SLSA_PROVENANCE_PREDICATE_TYPE]
    assert not set(fetched) & on_disk

    decision = tmp_path / "decision.json"
    code = _gate(github_chain, "--sha", github_chain.sha, "--json", str(decision))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "QUALIFIED" in out
    notes = json.loads(decision.read_text(encoding="utf-8"))["notes"]
    assert notes[0] == (f"evidence from GitHub's attestation API ({REPOSITORY}), by the digests of 1 candidate "
                        "file(s): 3 distinct bundles listed, 3 verified")
    assert notes[1].startswith(f"chose the aggregate of run 4242#1 at {github_chain.sha[:12]} (--sha)")
    assert any(n.startswith(f"GET /repos/{REPOSITORY}/branches/main") for n in notes)


def test_nothing_stored_is_one_root_cause(github_chain: GitHubChain, capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    decision = tmp_path / "decision.json"
    assert _gate(github_chain, "--json", str(decision)) == 1
    reasons = json.loads(decision.read_text(encoding="utf-8"))["reasons"]
    assert reasons[0]["code"] == Code.EVIDENCE_MISSING.value
    assert "holds no verified aggregate" in reasons[0]["message"]
    # What is absent follows from it, and is not shown as faults of their own.
    assert {r["code"] for r in reasons[1:]} == {Code.PLATFORM_MISSING.value, Code.AGGREGATE_MISSING.value,
                                                Code.ARTIFACT_DIGEST_MISMATCH.value}
    assert all(r["cause"] == "consequence" for r in reasons[1:])
    assert "REJECTED" in capsys.readouterr().out


@pytest.mark.parametrize("forger", ["macos", "windows"])
def test_a_forged_attestation_beside_the_real_ones_is_ignored(github_chain: GitHubChain, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str],
                                                              forger: str) -> None:
    """Anyone who may write attestations can store one; a statement another job signed is no evidence."""
    store_evidence(_client(github_chain), REPOSITORY, github_chain.evidence)
    _store(github_chain, tmp_path / "forged", {PLATFORM_FILE: _resigned_platform(github_chain, platform=forger)})
    decision = tmp_path / "decision.json"
    assert _gate(github_chain, "--json", str(decision)) == 0, capsys.readouterr().err.out
    notes = json.loads(decision.read_text(encoding="utf-8"))["notes"]
    assert f"4 distinct bundles listed, 3 verified, 1 refused ({Code.WORKFLOW_IDENTITY_MISMATCH.value} x1)" \
        in notes[0]


def test_an_aggregate_bound_to_a_forged_statement_is_refused_for_the_forgery(
        github_chain: GitHubChain, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The genuine run, and a later attempt whose aggregate binds a statement another job signed.

    The later aggregate is the one chosen; the refused statement it binds goes to the verification as it was
    stored, so the decision names its real fault, not just a missing platform.
    """
    store_evidence(_client(github_chain), REPOSITORY, github_chain.evidence)
    forged = _resigned_platform(github_chain, platform="macos", attempt=2)
    _store(github_chain, tmp_path / "forged", {PLATFORM_FILE: forged,
                                               AGGREGATE_FILE: _rebound_aggregate(github_chain, forged, attempt=2)})
    decision = tmp_path / "decision.json"
    assert _gate(github_chain, "--json", str(decision)) == 1
    reasons = json.loads(decision.read_text(encoding="utf-8"))["reasons"]
    assert reasons[0]["code"] == Code.WORKFLOW_IDENTITY_MISMATCH.value, reasons
    assert Code.PLATFORM_MISSING.value in {r["code"] for r in reasons if r["cause"] == "consequence"}
    capsys.readouterr()


def test_an_aggregate_whose_claims_its_certificate_denies_is_refused_before_the_choice(
        github_chain: GitHubChain, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A later attempt claimed in the payload but not in the certificate never outranks the genuine aggregate."""
    store_evidence(_client(github_chain), REPOSITORY, github_chain.evidence)
    statement = _payload((github_chain.evidence / AGGREGATE_FILE).read_bytes())
    statement["predicate"]["run"]["attempt"] = 9  # the certificate below says attempt 1
    lying = github_chain.signer(github_chain.aggregate_identity).sign_statement(canonical_bytes(statement))
    _store(github_chain, tmp_path / "lying", {AGGREGATE_FILE: lying})
    decision = tmp_path / "decision.json"
    assert _gate(github_chain, "--json", str(decision)) == 0, capsys.readouterr().err.out
    notes = json.loads(decision.read_text(encoding="utf-8"))["notes"]
    assert "4 distinct bundles listed, 3 verified, 1 refused (QE_RUN_MISMATCH x1)" in notes[0], notes
    assert notes[1].startswith("chose the aggregate of run 4242#1")


def test_a_newer_rebound_aggregate_over_a_resigned_failed_journey_is_refused(
        github_chain: GitHubChain, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An attacker with the trusted identities edits the evidence, re-signs it, re-binds a later attempt.

    The gate picks the latest run and attempt for these files and does not fall back to the earlier, genuine one:
    what decides is the re-derived outcome of the statement it binds, not the signatures.
    """
    store_evidence(_client(github_chain), REPOSITORY, github_chain.evidence)

    def journey_crashed(statement: dict[str, Any]) -> None:
        statement["predicate"]["journey"]["exit_code"] = 3

    edited = _resigned_platform(github_chain, journey_crashed, attempt=2)
    _store(github_chain, tmp_path / "edited", {PLATFORM_FILE: edited,
                                               AGGREGATE_FILE: _rebound_aggregate(github_chain, edited, attempt=2)})
    decision = tmp_path / "decision.json"
    assert _gate(github_chain, "--json", str(decision)) == 1
    document = json.loads(decision.read_text(encoding="utf-8"))
    codes = {r["code"] for r in document["reasons"]}
    assert Code.JOURNEY_INCOMPLETE.value in codes, document["reasons"]
    assert document["notes"][1].startswith("chose the aggregate of run 4242#2")
    assert "1 other verified aggregate(s) of earlier runs or attempts not used" in document["notes"][1]
    capsys.readouterr()


def test_an_aggregate_over_more_files_than_the_candidate_is_not_chosen(
        github_chain: GitHubChain, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A later aggregate naming one more subject is not a qualification of exactly these files."""
    store_evidence(_client(github_chain), REPOSITORY, github_chain.evidence)
    _store(github_chain, tmp_path / "superset",
           {AGGREGATE_FILE: _rebound_aggregate(github_chain, attempt=2, extra_subject="5" * 64)})
    decision = tmp_path / "decision.json"
    assert _gate(github_chain, "--json", str(decision)) == 0, capsys.readouterr().err.out
    assert json.loads(decision.read_text(encoding="utf-8"))["notes"][1].startswith("chose the aggregate of run 4242#1")


def test_a_candidate_set_larger_than_the_aggregate_finds_no_qualification(
        github_chain: GitHubChain, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store_evidence(_client(github_chain), REPOSITORY, github_chain.evidence)
    extra = tmp_path / "extra.tar.gz"
    extra.write_bytes(b"one more file")
    assert _gate(github_chain, artifacts=[*github_chain.artifacts, extra]) == 1
    assert Code.EVIDENCE_MISSING.value in capsys.readouterr().out


def test_without_sha_the_aggregate_of_mains_head_is_chosen(github_chain: GitHubChain, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A later run of another commit with the same bytes (a reproducible build) does not displace main's head."""
    store_evidence(_client(github_chain), REPOSITORY, github_chain.evidence)
    _store(github_chain, tmp_path / "other-commit",
           {AGGREGATE_FILE: _rebound_aggregate(github_chain, run_id=4300, sha="e" * 40)})
    decision = tmp_path / "decision.json"
    assert _gate(github_chain, "--json", str(decision)) == 0, capsys.readouterr().err.out
    notes = json.loads(decision.read_text(encoding="utf-8"))["notes"]
    assert "4 distinct bundles listed, 4 verified" in notes[0]
    assert notes[1].startswith(f"chose the aggregate of run 4242#1 at {github_chain.sha[:12]} (main's head)")


def test_a_flood_of_junk_attestations_is_read_across_pages_and_ignored(github_chain: GitHubChain, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    store_evidence(_client(github_chain), REPOSITORY, github_chain.evidence)
    (artifact,) = github_chain.artifacts
    repo = github_chain.emulator.repo(REPOSITORY)
    for index in range(130):
        repo.attestations[len(repo.attestations) + 1] = _junk_bundle(index, _digest(artifact))
    # A payload nested 100,000 deep: parsed under load_json's bounds, it is not ours (never a QE_INTERNAL).
    deep = _junk_bundle(0, _digest(artifact))
    head = (f'{{"_type":"https://in-toto.io/Statement/v1","predicateType":"{PLATFORM_PREDICATE_TYPE}",'
            f'"subject":[{{"name":"x","digest":{{"sha256":"{_digest(artifact)}"}}}}],"predicate":').encode()
    deep["dsseEnvelope"]["payload"] = base64.b64encode(head + b"[" * 100_000 + b"]" * 100_000 + b"}").decode()
    repo.attestations[len(repo.attestations) + 1] = deep
    decision = tmp_path / "decision.json"
    assert _gate(github_chain, "--json", str(decision)) == 0, capsys.readouterr().err
    notes = json.loads(decision.read_text(encoding="utf-8"))["notes"]
    assert "134 distinct bundles listed, 3 verified, 130 refused" in notes[0]
    assert "1 of other predicate types ignored" in notes[0]
    pages = github_chain.emulator.calls(rf"/attestations/sha256:{_digest(artifact)}")
    assert len(pages) >= 3  # the platform type's 131 over two pages of 100, and the aggregate type's one


def test_the_platform_statement_missing_from_the_store_is_refused(github_chain: GitHubChain, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _store(github_chain, tmp_path / "partial", {AGGREGATE_FILE: (github_chain.evidence / AGGREGATE_FILE).read_bytes()})
    assert _gate(github_chain) == 1
    out = capsys.readouterr().out
    assert Code.PLATFORM_MISSING.value in out
    assert "REJECTED" in out


def test_another_candidate_file_finds_no_qualification(github_chain: GitHubChain, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    store_evidence(_client(github_chain), REPOSITORY, github_chain.evidence)
    (artifact,) = github_chain.artifacts
    other = tmp_path / artifact.name
    other.write_bytes(artifact.read_bytes() + b"\0")
    assert _gate(github_chain, artifacts=[other]) == 1
    out = capsys.readouterr().out
    assert Code.EVIDENCE_MISSING.value in out


def test_another_commit_finds_no_qualification(github_chain: GitHubChain, capsys: pytest.CaptureFixture[str]) -> None:
    store_evidence(_client(github_chain), REPOSITORY, github_chain.evidence)
    assert _gate(github_chain, "--sha", "f" * 40) == 1
    assert Code.EVIDENCE_MISSING.value in capsys.readouterr().out


def test_bundles_listed_by_url_only_are_an_environment_error(github_chain: GitHubChain,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    store_evidence(_client(github_chain), REPOSITORY, github_chain.evidence)
    github_chain.emulator.repo(REPOSITORY).attestations_inline = False
    code = _gate(github_chain)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "bundle_url only" in err
    assert "Traceback" not in err


def test_the_release_gate_under_a_local_policy_is_a_usage_error(github_chain: GitHubChain, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from support.evidence_factory import make_evidence

    local = make_evidence(tmp_path)
    code = qualify_cli.main(["verify", "--policy", str(local.policy_path), "--from-attestations",
                             "--artifact", str(github_chain.artifacts[0])])
    assert code == 2
    assert "needs a GitHub-mode policy" in capsys.readouterr().err


def test_no_candidate_file_is_a_usage_error(github_chain: GitHubChain, capsys: pytest.CaptureFixture[str]) -> None:
    assert _gate(github_chain, artifacts=[]) == 2
    assert "name each candidate file with --artifact" in capsys.readouterr().err


def test_evidence_and_attestations_together_are_a_usage_error(github_chain: GitHubChain,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as leaving:
        _gate(github_chain, "--evidence", str(github_chain.evidence))
    assert leaving.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_the_provenance_missing_from_the_store_is_refused(github_chain: GitHubChain, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The aggregate binds the provenance; a store without it does not qualify, and the notes say it is unlisted."""
    evidence = github_chain.evidence
    _store(github_chain, tmp_path / "partial", {name: (evidence / name).read_bytes()
                                                for name in (PLATFORM_FILE, AGGREGATE_FILE)})
    decision = tmp_path / "decision.json"
    assert _gate(github_chain, "--json", str(decision)) == 1
    document = json.loads(decision.read_text(encoding="utf-8"))
    assert Code.PROVENANCE_MISSING.value in {r["code"] for r in document["reasons"]}
    assert "1 platform statement(s) or provenance the aggregate binds are not among the listed attestations" \
        in document["notes"]
    capsys.readouterr()


def test_a_provenance_another_job_signed_beside_the_real_one_is_ignored(github_chain: GitHubChain, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    store_evidence(_client(github_chain), REPOSITORY, github_chain.evidence)
    provenance = _signed_bytes((github_chain.evidence / PROVENANCE_FILE).read_bytes())
    forged = github_chain.signer(platform_identity(github_chain.identity, "macos")).sign_statement(provenance)
    _store(github_chain, tmp_path / "forged", {PROVENANCE_FILE: forged})
    decision = tmp_path / "decision.json"
    assert _gate(github_chain, "--json", str(decision)) == 0, capsys.readouterr().out
    notes = json.loads(decision.read_text(encoding="utf-8"))["notes"]
    assert f"4 distinct bundles listed, 3 verified, 1 refused ({Code.WORKFLOW_IDENTITY_MISMATCH.value} x1)" \
        in notes[0]
