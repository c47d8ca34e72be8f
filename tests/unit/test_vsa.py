"""The gate's Verification Summary Attestations: written by verify and audit, read back by verify-vsa.

Each refusal row of verify-vsa is a summary someone could hand an update
server: one for another artifact, under another policy, of a failed result,
signed by a stranger, or edited and re-signed with a key the keyring trusts
for another role. Each must be refused with its own code; the real summary
must be accepted.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from desktop_qualify.evidence_schemas import VSA_PREDICATE_TYPE, canonical_bytes
from desktop_qualify.qualify_trust import Keyring, add_to_keyring, generate_private_key
from desktop_qualify.qualify_trust._envelope import sign_envelope
from google.protobuf import json_format
from in_toto_attestation.predicates.vsa.v1 import vsa_pb2
from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
from in_toto_attestation.v1.statement import Statement
from support.bundles import make_bundle
from support.cli import CliRun
from support.evidence_factory import Evidence, make_evidence

Qualify = Callable[[list[str]], CliRun]


def _with_verifier_key(evidence: Evidence) -> Ed25519PrivateKey:
    """The factory's chain plus the keyring's verifier key, as `qualify keygen` now makes it; re-aggregated."""
    path = evidence.keys.keyring.parent / "keys" / "verifier.ed25519.pem"
    key = generate_private_key(path)
    add_to_keyring(evidence.keys.keyring, "local-verifier", key.public_key(), ["verifier"])
    text = evidence.policy_path.read_text(encoding="utf-8")
    line = f"verifier_key = {json.dumps(str(path))}\n"
    evidence.policy_path.write_text(text.replace("\n[source]", f"{line}\n[source]", 1), encoding="utf-8")
    # The provenance and the aggregate bind the policy's digest: made again under the policy that names the key.
    evidence.rebind_provenance()
    evidence.write_aggregate()
    return key


@pytest.fixture
def chain(tmp_path: Path) -> Evidence:
    evidence = make_evidence(tmp_path)
    _with_verifier_key(evidence)
    return evidence


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def _payload(line: bytes) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(base64.b64decode(json.loads(line)["payload"]))
    return value


def _verify_vsa(qualify: Qualify, chain: Evidence, vsa: Path, artifact: Path | None = None,
                policy: Path | None = None) -> CliRun:
    return qualify(["verify-vsa", "--policy", str(policy or chain.policy_path), "--artifact",
                    str(artifact or chain.artifact_paths[0]), str(vsa)])


def _written(qualify: Qualify, chain: Evidence, tmp_path: Path) -> Path:
    vsa = tmp_path / "vsa.intoto.jsonl"
    result = qualify(chain.verify_argv("--vsa", str(vsa)))
    assert result.status == 0, result.text
    return vsa


def test_the_gate_writes_one_signed_summary_per_artifact_and_verify_vsa_accepts_it(
        qualify: Qualify, chain: Evidence, tmp_path: Path) -> None:
    vsa = _written(qualify, chain, tmp_path)
    lines = _lines(vsa)
    assert len(lines) == len(chain.artifact_paths) == 1
    statement = _payload(lines[0])
    artifact = chain.artifact_paths[0]
    predicate = statement["predicate"]
    assert statement["predicateType"] == VSA_PREDICATE_TYPE
    assert statement["subject"][0]["name"] == artifact.name
    assert predicate["resourceUri"] == artifact.name
    assert predicate["policy"]["digest"] == {"sha256": chain.policy.sha256}
    assert predicate["verificationResult"] == "PASSED"
    assert predicate["verifiedLevels"] == ["DESKTOP_QUALIFIED_LOCAL_CHECK"]
    # Every statement that verified, by the digest of its signed bytes: the platform's, its provenance, the aggregate.
    assert {item["uri"] for item in predicate["inputAttestations"]} == {p.name for p in chain.evidence_dir.iterdir()}
    for item in predicate["inputAttestations"]:
        signed = base64.b64decode(json.loads((chain.evidence_dir / item["uri"]).read_bytes())["payload"])
        assert item["digest"]["sha256"] == hashlib.sha256(signed).hexdigest()
    accepted = _verify_vsa(qualify, chain, vsa)
    assert accepted.status == 0, accepted.text
    assert "VSA ACCEPTED" in accepted.out


def test_the_summary_is_valid_under_the_in_toto_attestation_framework(
        qualify: Qualify, chain: Evidence, tmp_path: Path) -> None:
    """The upstream models (in-toto-attestation's Statement and VSA v1 protos) accept what the gate signs."""
    statement = _payload(_lines(_written(qualify, chain, tmp_path))[0])
    predicate = statement["predicate"]
    # in-toto-attestation 0.9.3's proto differs from the SLSA spec in two places, adapted here and nowhere else:
    # it predates verifier.version (SLSA v1.1), and it types verifiedLevels as one string where the spec (and
    # slsa-verifier) read an array; the gate writes at most one level, so the string is that level.
    levels = predicate["verifiedLevels"]
    assert len(levels) <= 1
    upstream = {**predicate, "verifier": {"id": predicate["verifier"]["id"]}, "verifiedLevels": "".join(levels)}
    json_format.ParseDict(upstream, vsa_pb2.VerificationSummary(), ignore_unknown_fields=False)
    subjects = [ResourceDescriptor(name=s["name"], digest=s["digest"]).pb for s in statement["subject"]]
    Statement(subjects, statement["predicateType"], predicate).validate()
    # The same proto refuses a misspelt field: the check above can fail.
    with pytest.raises(json_format.ParseError):
        json_format.ParseDict({**upstream, "verificationResults": "PASSED"}, vsa_pb2.VerificationSummary())


def test_writing_a_summary_changes_neither_the_verdict_nor_the_exit_status(
        qualify: Qualify, chain: Evidence, tmp_path: Path) -> None:
    spoilt = tmp_path / chain.artifact_paths[0].name
    data = bytearray(chain.artifact_paths[0].read_bytes())
    data[len(data) // 2] ^= 1
    spoilt.write_bytes(bytes(data))
    without = qualify(chain.verify_argv(artifacts=[spoilt]))
    vsa = tmp_path / "vsa.jsonl"
    with_vsa = qualify(chain.verify_argv("--vsa", str(vsa), artifacts=[spoilt]))
    assert without.status == with_vsa.status == 1
    assert "QE_ARTIFACT_DIGEST_MISMATCH" in with_vsa.out
    # The failed candidate gets a FAILED summary of the bytes the gate hashed, which verify-vsa refuses.
    statement = _payload(_lines(vsa)[0])
    assert statement["predicate"]["verificationResult"] == "FAILED"
    assert statement["predicate"]["verifiedLevels"] == []
    assert statement["subject"][0]["digest"]["sha256"] == hashlib.sha256(bytes(data)).hexdigest()
    refused = _verify_vsa(qualify, chain, vsa, artifact=spoilt)
    assert refused.status == 1
    assert "QE_VSA_FAILED" in refused.err


def _resign(line: bytes, key: Ed25519PrivateKey, edit: Callable[[dict[str, Any]], None] | None = None) -> bytes:
    statement = _payload(line)
    if edit is not None:
        edit(statement)
    return sign_envelope(canonical_bytes(statement), key)


def _passed(statement: dict[str, Any]) -> None:
    statement["predicate"]["verificationResult"] = "PASSED"
    statement["predicate"]["verifiedLevels"] = ["DESKTOP_QUALIFIED_LOCAL_CHECK"]


# (row, how the summaries file is made from the real one, the code verify-vsa must refuse it with)
def _stranger(line: bytes, chain: Evidence, key: Ed25519PrivateKey) -> bytes:
    return _resign(line, chain.keys.stranger)


def _platform_key_edit(line: bytes, chain: Evidence, key: Ed25519PrivateKey) -> bytes:
    # A producer job's key is trusted, for its own role only: its re-signed edit is no verdict.
    return _resign(line, chain.keys.platform, lambda s: s["predicate"].update(resourceUri="edited"))


def _aggregate_key_edit(line: bytes, chain: Evidence, key: Ed25519PrivateKey) -> bytes:
    return _resign(line, chain.keys.aggregate, _passed)


def _broken_signature(line: bytes, chain: Evidence, key: Ed25519PrivateKey) -> bytes:
    envelope = json.loads(line)
    envelope["payload"] = base64.b64encode(canonical_bytes({**_payload(line), "predicateType": VSA_PREDICATE_TYPE,
                                                            "extra": 1})).decode()
    return json.dumps(envelope).encode()


def _another_artifact(line: bytes, chain: Evidence, key: Ed25519PrivateKey) -> bytes:
    return _resign(line, key, lambda s: s["subject"][0]["digest"].update(sha256="ab" * 32))


def _another_policy(line: bytes, chain: Evidence, key: Ed25519PrivateKey) -> bytes:
    return _resign(line, key, lambda s: s["predicate"]["policy"]["digest"].update(sha256="cd" * 32))


def _failed(line: bytes, chain: Evidence, key: Ed25519PrivateKey) -> bytes:
    def fail(statement: dict[str, Any]) -> None:
        statement["predicate"]["verificationResult"] = "FAILED"
        statement["predicate"]["verifiedLevels"] = []

    return _resign(line, key, fail)


def _forged_line_beside_the_real_one(line: bytes, chain: Evidence, key: Ed25519PrivateKey) -> bytes:
    return line + b"\n" + _resign(line, chain.keys.stranger)


def _not_a_summary(line: bytes, chain: Evidence, key: Ed25519PrivateKey) -> bytes:
    return _resign(line, key, lambda s: s.update(predicateType="https://slsa.dev/provenance/v1"))


def _audit_level(line: bytes, chain: Evidence, key: Ed25519PrivateKey) -> bytes:
    # Signed by the verifier key, PASSED, this artifact, this policy: but an audit's verdict, not the gate's.
    return _resign(line, key, lambda s: s["predicate"].update(verifiedLevels=["DESKTOP_QUALIFIED_AUDIT"]))


def _foreign_level(line: bytes, chain: Evidence, key: Ed25519PrivateKey) -> bytes:
    return _resign(line, key, lambda s: s["predicate"].update(verifiedLevels=["SLSA_BUILD_LEVEL_3"]))


def _github_level_under_a_local_policy(line: bytes, chain: Evidence, key: Ed25519PrivateKey) -> bytes:
    # A level the project writes, but never under a local policy: not the local gate's.
    return _resign(line, key, lambda s: s["predicate"].update(verifiedLevels=["DESKTOP_QUALIFIED_RELEASE_GATE"]))


def _passed_with_no_level(line: bytes, chain: Evidence, key: Ed25519PrivateKey) -> bytes:
    return _resign(line, key, lambda s: s["predicate"].update(verifiedLevels=[]))


def _not_json(line: bytes, chain: Evidence, key: Ed25519PrivateKey) -> bytes:
    return line[: len(line) // 2]


def _empty(line: bytes, chain: Evidence, key: Ed25519PrivateKey) -> bytes:
    return b""


ROWS = [
    ("another-signer", _stranger, "QE_VSA_SIGNATURE"),
    ("re-signed-edit-by-a-platform-key", _platform_key_edit, "QE_VSA_SIGNATURE"),
    ("failed-re-signed-as-passed-by-the-aggregate-key", _aggregate_key_edit, "QE_VSA_SIGNATURE"),
    ("payload-edited-signature-kept", _broken_signature, "QE_VSA_SIGNATURE"),
    ("forged-line-beside-the-real-one", _forged_line_beside_the_real_one, "QE_VSA_SIGNATURE"),
    ("summary-of-another-artifact", _another_artifact, "QE_VSA_SUBJECT"),
    ("another-policy", _another_policy, "QE_VSA_POLICY"),
    ("failed-result", _failed, "QE_VSA_FAILED"),
    ("audit-level-where-the-gate-is-expected", _audit_level, "QE_VSA_LEVEL"),
    ("level-the-project-never-writes", _foreign_level, "QE_VSA_LEVEL"),
    ("release-gate-level-under-a-local-policy", _github_level_under_a_local_policy, "QE_VSA_LEVEL"),
    ("passed-with-no-level", _passed_with_no_level, "QE_VSA_LEVEL"),
    ("another-statement-type", _not_a_summary, "QE_PREDICATE_TYPE_UNKNOWN"),
    ("truncated", _not_json, "QE_JSON_MALFORMED"),
    ("no-summary", _empty, "QE_VSA_SUBJECT"),
]


@pytest.mark.parametrize(("row", "make", "code"), ROWS, ids=[row[0] for row in ROWS])
def test_verify_vsa_refuses(qualify: Qualify, tmp_path: Path, row: str,
                            make: Callable[[bytes, Evidence, Ed25519PrivateKey], bytes], code: str) -> None:
    chain = make_evidence(tmp_path)
    key = _with_verifier_key(chain)
    real = _lines(_written(qualify, chain, tmp_path))[0]
    forged = tmp_path / "forged.jsonl"
    made = make(real, chain, key)
    forged.write_bytes(made + b"\n" if made else b"")
    result = _verify_vsa(qualify, chain, forged)
    assert result.status == 1, result.text
    assert code in result.err, result.text
    assert "Traceback" not in result.text


def test_a_summary_of_another_artifact_file_is_refused(qualify: Qualify, chain: Evidence, tmp_path: Path) -> None:
    vsa = _written(qualify, chain, tmp_path)
    other = tmp_path / "other.tar.gz"
    other.write_bytes(b"not the artifact")
    result = _verify_vsa(qualify, chain, vsa, artifact=other)
    assert result.status == 1
    assert "QE_VSA_SUBJECT" in result.err


def test_another_policy_file_is_refused(qualify: Qualify, chain: Evidence, tmp_path: Path) -> None:
    vsa = _written(qualify, chain, tmp_path)
    edited = tmp_path / "edited-policy.toml"
    edited.write_text(chain.policy_path.read_text(encoding="utf-8") + "# one more line\n", encoding="utf-8")
    result = _verify_vsa(qualify, chain, vsa, policy=edited)
    assert result.status == 1
    assert "QE_VSA_POLICY" in result.err


def test_unusable_inputs_are_exit_2(qualify: Qualify, chain: Evidence, tmp_path: Path) -> None:
    vsa = _written(qualify, chain, tmp_path)
    missing = _verify_vsa(qualify, chain, tmp_path / "absent.jsonl")
    assert missing.status == 2
    assert "QE_USAGE" in missing.err
    no_artifact = _verify_vsa(qualify, chain, vsa, artifact=tmp_path / "absent.tar.gz")
    assert no_artifact.status == 2


def test_a_policy_without_a_verifier_key_writes_nothing_and_says_so(qualify: Qualify, tmp_path: Path) -> None:
    chain = make_evidence(tmp_path)
    vsa = tmp_path / "vsa.jsonl"
    vsa.write_bytes(b"an older file\n")
    result = qualify(chain.verify_argv("--vsa", str(vsa)))
    assert result.status == 2
    assert "QE_POLICY_INVALID" in result.err
    assert "QUALIFIED" not in result.out  # refused before anything was verified
    assert vsa.read_bytes() == b"an older file\n"


def test_a_local_release_tag_names_no_github_url(qualify: Qualify, chain: Evidence, tmp_path: Path) -> None:
    vsa = tmp_path / "v.jsonl"
    result = qualify(chain.verify_argv("--vsa", str(vsa), "--release-tag", "v1.0.0"))
    assert result.status == 0, result.text
    name = chain.artifact_paths[0].name
    assert _payload(_lines(vsa)[0])["predicate"]["resourceUri"] == (
        f"urn:desktop-qualify:{chain.policy.file.producer.repository}:release:v1.0.0:{name}")
    alone = qualify(chain.verify_argv("--release-tag", "v1.0.0"))
    assert alone.status == 2
    assert "needs --vsa" in alone.err


def test_audit_writes_a_summary_per_run(qualify: Qualify, chain: Evidence, tmp_path: Path) -> None:
    vsa = tmp_path / "audit.jsonl"
    result = qualify(["audit", "--policy", str(chain.policy_path), "--evidence", str(chain.evidence_dir),
                      "--vsa", str(vsa)])
    assert result.status == 0, result.text
    statement = _payload(_lines(vsa)[0])
    assert statement["predicate"]["verifiedLevels"] == ["DESKTOP_QUALIFIED_AUDIT"]
    # An audit's summary is not the gate's: refused by default, accepted only when the audit's level is asked for.
    refused = _verify_vsa(qualify, chain, vsa)
    assert refused.status == 1, refused.text
    assert "QE_VSA_LEVEL" in refused.err
    accepted = qualify(["verify-vsa", "--policy", str(chain.policy_path), "--artifact", str(chain.artifact_paths[0]),
                        "--level", "DESKTOP_QUALIFIED_AUDIT", str(vsa)])
    assert accepted.status == 0, accepted.text
    assert "DESKTOP_QUALIFIED_AUDIT" in accepted.out


def test_the_gates_summary_is_accepted_at_its_level_only(qualify: Qualify, chain: Evidence, tmp_path: Path) -> None:
    vsa = _written(qualify, chain, tmp_path)
    argv = ["verify-vsa", "--policy", str(chain.policy_path), "--artifact", str(chain.artifact_paths[0])]
    assert qualify([*argv, "--level", "DESKTOP_QUALIFIED_LOCAL_CHECK", str(vsa)]).status == 0
    audit = qualify([*argv, "--level", "DESKTOP_QUALIFIED_AUDIT", str(vsa)])
    assert audit.status == 1
    assert "QE_VSA_LEVEL" in audit.err
    unknown = qualify([*argv, "--level", "SLSA_BUILD_LEVEL_3", str(vsa)])
    assert unknown.status == 2
    assert "QE_USAGE" in unknown.err


def test_audit_of_a_bundle_writes_its_summary_under_the_bundles_policy(qualify: Qualify, tmp_path: Path) -> None:
    chain = make_evidence(tmp_path / "run", committed_layout=True)
    _with_verifier_key(chain)
    bundle = make_bundle(qualify, chain.policy_path, chain.evidence_dir, tmp_path / "run.qualify-bundle.zip")
    vsa = tmp_path / "audit.jsonl"
    result = qualify(["audit", "--policy", str(chain.policy_path), "--bundle", str(bundle), "--vsa", str(vsa)])
    assert result.status == 0, result.text
    lines = _lines(vsa)
    assert len(lines) == 1
    predicate = _payload(lines[0])["predicate"]
    assert predicate["verifiedLevels"] == ["DESKTOP_QUALIFIED_AUDIT"]
    assert predicate["policy"]["digest"]["sha256"] == chain.policy.sha256
    assert _verify_vsa(qualify, chain, vsa).status == 1  # an audit's level, not the gate's
    assert qualify(["verify-vsa", "--policy", str(chain.policy_path), "--artifact", str(chain.artifact_paths[0]),
                    "--level", "DESKTOP_QUALIFIED_AUDIT", str(vsa)]).status == 0


@pytest.mark.parametrize(("section", "message"), [
    ('[verifier]\nworkflow = ".github/workflows/release.yml"\nallowed_triggers = ["workflow_dispatch"]\n\n',
     "an ed25519 policy names trust.verifier_key"),
])
def test_a_verifier_workflow_under_a_local_policy_is_refused(qualify: Qualify, chain: Evidence, section: str,
                                                             message: str) -> None:
    text = chain.policy_path.read_text(encoding="utf-8")
    chain.policy_path.write_text(text.replace("[source]", section + "[source]", 1), encoding="utf-8")
    result = qualify(chain.verify_argv())
    assert result.status == 2
    assert "QE_POLICY_INVALID" in result.err
    assert message in result.err


def test_the_verifier_key_signs_no_evidence(qualify: Qualify, tmp_path: Path) -> None:
    """keygen gives the verifier key its one role: a platform statement it signs is untrusted."""
    chain = make_evidence(tmp_path)
    key = _with_verifier_key(chain)
    platform = next(chain.evidence_dir.glob("platform-*.dsse.json"))
    platform.write_bytes(sign_envelope(base64.b64decode(json.loads(platform.read_bytes())["payload"]), key))
    result = qualify(chain.verify_argv())
    assert result.status == 1
    assert "QE_SIGNER_UNTRUSTED" in result.out


def test_keygen_makes_the_verifier_key_with_the_verifier_role_only(tmp_path: Path, qualify: Qualify) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "policies").mkdir()
    shutil.copyfile(Path(__file__).resolve().parents[2] / "policies" / "local.toml", repo / "policies" / "local.toml")
    result = qualify(["keygen", "--policy", str(repo / "policies" / "local.toml")])
    assert result.status == 0, result.text
    assert "created verifier key" in result.out
    roles = {key.name: key.roles for key in Keyring.load(repo / ".qualify" / "keyring.json").keys.values()}
    assert roles == {"local-platform": {"platform"}, "local-aggregate": {"aggregate"}, "local-verifier": {"verifier"}}
    # Run again: every key is kept (evidence and summaries signed earlier stay verifiable).
    again = qualify(["keygen", "--policy", str(repo / "policies" / "local.toml")])
    assert "kept verifier key" in again.out
