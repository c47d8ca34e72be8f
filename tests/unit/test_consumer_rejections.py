"""Hostile evidence, table-style: each case changes one thing and names the code it must produce.

Every case runs `qualify verify` in-process on evidence from the factory whose
untouched form is QUALIFIED (``test_untouched_evidence_qualifies``), so a
rejection here is caused by the one change the case makes.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.evidence_factory import OTHER_SHA, Evidence, PlatformSpec, make_evidence

from evidence_schemas import PLATFORM_PREDICATE_TYPE, Code, ConsumerDecision, DigestSet, Platform, Subject
from qualify_policy import host_platform
from qualify_trust import sign_envelope

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
THREE: tuple[Platform, ...] = ("linux", "macos", "windows")


@dataclass(frozen=True)
class Case:
    id: str
    code: Code
    build: Callable[[Path], list[str]]
    status: int = 1


def _one(edit: Callable[[dict[str, Any]], None], **kwargs: Any) -> Callable[[Path], list[str]]:
    """A host-platform chain whose one statement gets ``edit``."""

    def build(tmp_path: Path) -> list[str]:
        ev = make_evidence(tmp_path, platforms=[PlatformSpec(_host(), edit=edit)], **kwargs)
        return ev.verify_argv()

    return build


def _payload(change: Callable[[bytes], bytes]) -> Callable[[Path], list[str]]:
    """A host-platform chain whose signed payload bytes are ``change``d (and properly signed)."""

    def build(tmp_path: Path) -> list[str]:
        return make_evidence(tmp_path, platforms=[PlatformSpec(_host(), payload=change)]).verify_argv()

    return build


def _host() -> Platform:
    return host_platform()


def _flip(path: Path, offset: int, mask: int = 0x01) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= mask
    path.write_bytes(bytes(data))


# -- builders for cases that need more than one edit --------------------------------------------------------


def _artifact_byte_flipped(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    _flip(ev.artifact_paths[0], 100)
    return ev.verify_argv()


def _artifact_unknown_file(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    stranger = tmp_path / "something-else.tar.gz"
    stranger.write_bytes(b"not the artifact")
    return ev.verify_argv(artifacts=[*ev.artifact_paths, stranger])


def _artifact_not_presented(tmp_path: Path) -> list[str]:
    return make_evidence(tmp_path).verify_argv(artifacts=[])


def _artifact_path_absent(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    return ev.verify_argv(artifacts=[ev.artifacts_dir / "skillhost-gone.tar.gz"])


def _candidate_other_sha(tmp_path: Path) -> list[str]:
    return make_evidence(tmp_path).verify_argv("--sha", OTHER_SHA)


def _one_platform_other_sha(tmp_path: Path) -> list[str]:
    specs = [PlatformSpec("linux"), PlatformSpec("macos", sha=OTHER_SHA), PlatformSpec("windows")]
    return make_evidence(tmp_path, platforms=specs).verify_argv()


def _runs_mixed(tmp_path: Path) -> list[str]:
    specs = [PlatformSpec("linux"), PlatformSpec("macos", run_id="local-20260102T000000-ffffffff"),
             PlatformSpec("windows")]
    return make_evidence(tmp_path, platforms=specs).verify_argv()


def _attempts_mixed(tmp_path: Path) -> list[str]:
    specs = [PlatformSpec("linux"), PlatformSpec("macos"), PlatformSpec("windows", attempt=2)]
    return make_evidence(tmp_path, platforms=specs).verify_argv()


def _duplicated_platform(tmp_path: Path) -> list[str]:
    specs = [PlatformSpec("linux"), PlatformSpec("linux", file_name="platform-linux2.dsse.json")]
    return make_evidence(tmp_path, platforms=specs, required=["linux"]).verify_argv()


def _unknown_platform(tmp_path: Path) -> list[str]:
    return make_evidence(tmp_path, platforms=["linux", "macos"], required=["linux"]).verify_argv()


def _statement_under_other_platform_name(tmp_path: Path) -> list[str]:
    specs = [PlatformSpec("macos", file_name="platform-linux.dsse.json")]
    return make_evidence(tmp_path, platforms=specs, required=["linux"]).verify_argv()


def _platform_removed(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path, platforms=list(THREE))
    ev.platform_file("macos").unlink()
    return ev.verify_argv()


def _platform_key(choice: str, *, aggregate: bool) -> Callable[[Path], list[str]]:
    def build(tmp_path: Path) -> list[str]:
        if aggregate:
            return make_evidence(tmp_path, aggregate_key=choice).verify_argv()  # type: ignore[arg-type]
        return make_evidence(tmp_path, platforms=[PlatformSpec(_host(), key=choice)]).verify_argv()  # type: ignore[arg-type]

    return build


def _truncated(file: str) -> Callable[[Path], list[str]]:
    def build(tmp_path: Path) -> list[str]:
        ev = make_evidence(tmp_path)
        path = ev.evidence_dir / file.format(_host())
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        return ev.verify_argv()

    return build


def _replaced(content: bytes, file: str = "platform-{}.dsse.json") -> Callable[[Path], list[str]]:
    def build(tmp_path: Path) -> list[str]:
        ev = make_evidence(tmp_path)
        (ev.evidence_dir / file.format(_host())).write_bytes(content)
        return ev.verify_argv()

    return build


def _oversized(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    path = ev.platform_file(_host())
    data = path.read_bytes()
    # Still valid JSON: only the size is wrong, and it must be refused before parsing.
    path.write_bytes(data + b" " * (1048576 + 1 - len(data)))
    return ev.verify_argv()


def _aggregate_renamed_as_platform(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    assert ev.aggregate_path is not None
    shutil.copyfile(ev.aggregate_path, ev.platform_file(_host()))
    return ev.verify_argv()


def _platform_renamed_as_aggregate(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    assert ev.aggregate_path is not None
    shutil.copyfile(ev.platform_file(_host()), ev.aggregate_path)
    return ev.verify_argv()


def _aggregate_payload_under_platform_key(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    ev.platform_file(_host()).write_bytes(sign_envelope(ev.aggregate_payload(), ev.keys.platform))
    return ev.verify_argv()


def _empty_folder(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    for path in ev.evidence_dir.iterdir():
        path.unlink()
    return ev.verify_argv()


def _extra(make: Callable[[Path], object]) -> Callable[[Path], list[str]]:
    def build(tmp_path: Path) -> list[str]:
        ev = make_evidence(tmp_path)
        make(ev.evidence_dir)
        return ev.verify_argv()

    return build


def _aggregate_missing(tmp_path: Path) -> list[str]:
    return make_evidence(tmp_path, aggregate=False).verify_argv()


def _aggregate_over_subset(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path, platforms=list(THREE), aggregate=False)
    ev.write_aggregate(over=ev.platforms[:2])
    return ev.verify_argv()


def _statement_replaced_after_aggregate(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    # Same content, signed again later: other bytes than the aggregate bound.
    ev.write_platform(PlatformSpec(_host(), edit=lambda p: p.update(produced_at="2026-01-02T00:00:00Z")))
    return ev.verify_argv()


def _aggregate_for_other_platforms(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path, aggregate=False)
    ev.write_aggregate(required=list(THREE))
    return ev.verify_argv()


def _aggregate_from_other_chain(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path / "a")
    other = make_evidence(tmp_path / "b")
    assert other.aggregate_path is not None
    assert ev.aggregate_path is not None
    shutil.copyfile(other.aggregate_path, ev.aggregate_path)
    # The other chain's aggregate key is not in this keyring: untrusted before anything else.
    return ev.verify_argv()


def _aggregate_run_edit(field: str, value: Any) -> Callable[[Path], list[str]]:
    def build(tmp_path: Path) -> list[str]:
        return make_evidence(tmp_path, aggregate_edit=lambda s: s["predicate"]["run"].update({field: value})
                             ).verify_argv()

    return build


def _aggregate_under_platform_pattern(tmp_path: Path) -> list[str]:
    # A second aggregate under a name the platform pattern accepts must be read as a platform statement
    # (and refused for its signer), never counted as the aggregate.
    ev = make_evidence(tmp_path)
    assert ev.aggregate_path is not None
    shutil.copyfile(ev.aggregate_path, ev.evidence_dir / "platform-aggregate.dsse.json")
    return ev.verify_argv()


def _dirty_tree(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path, require_clean=True,
                       platforms=[PlatformSpec(_host(), edit=lambda p: p["source_gate"].update(worktree_clean=False))])
    return ev.verify_argv()


def _step(step_id: str, **changes: Any) -> Callable[[dict[str, Any]], None]:
    def apply(pred: dict[str, Any]) -> None:
        for step in pred["journey"]["steps"]:
            if step["id"] == step_id:
                step.update(changes)

    return apply


def _drop_step(step_id: str) -> Callable[[dict[str, Any]], None]:
    def apply(pred: dict[str, Any]) -> None:
        pred["journey"]["steps"] = [s for s in pred["journey"]["steps"] if s["id"] != step_id]

    return apply


def _repeat_step(step_id: str, **changes: Any) -> Callable[[dict[str, Any]], None]:
    """The step reported twice: a changed copy beside the original passing one."""

    def apply(pred: dict[str, Any]) -> None:
        original = next(s for s in pred["journey"]["steps"] if s["id"] == step_id)
        pred["journey"]["steps"].append({**original, **changes})

    return apply


def _set(section: str, **changes: Any) -> Callable[[dict[str, Any]], None]:
    def apply(pred: dict[str, Any]) -> None:
        target = pred
        for part in section.split("."):
            target = target[part]
        target.update(changes)

    return apply


def _usage(argv_of: Callable[[Evidence, Path], list[str]]) -> Callable[[Path], list[str]]:
    def build(tmp_path: Path) -> list[str]:
        return argv_of(make_evidence(tmp_path), tmp_path)

    return build


def _policy_replaced(text: str) -> Callable[[Evidence, Path], list[str]]:
    def argv(ev: Evidence, tmp_path: Path) -> list[str]:
        ev.policy_path.write_text(text, encoding="utf-8")
        return ev.verify_argv()

    return argv


def _keyring_removed(ev: Evidence, tmp_path: Path) -> list[str]:
    ev.keys.keyring.unlink()
    return ev.verify_argv()


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _sub(old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    def change(payload: bytes) -> bytes:
        assert old in payload, old
        return payload.replace(old, new, 1)

    return change


CASES = [
    # Artifacts
    Case("artifact-byte-flipped", Code.ARTIFACT_DIGEST_MISMATCH, _artifact_byte_flipped),
    Case("artifact-unknown-file", Code.ARTIFACT_DIGEST_MISMATCH, _artifact_unknown_file),
    Case("artifact-not-presented", Code.ARTIFACT_MISSING, _artifact_not_presented),
    Case("artifact-path-absent", Code.ARTIFACT_MISSING, _artifact_path_absent),
    # Signers and roles
    Case("platform-signed-by-stranger", Code.SIGNER_UNTRUSTED, _platform_key("stranger", aggregate=False)),
    Case("platform-signed-by-aggregate-key", Code.SIGNER_UNTRUSTED, _platform_key("aggregate", aggregate=False)),
    Case("aggregate-signed-by-platform-key", Code.SIGNER_UNTRUSTED, _platform_key("platform", aggregate=True)),
    Case("aggregate-signed-by-stranger", Code.SIGNER_UNTRUSTED, _platform_key("stranger", aggregate=True)),
    Case("aggregate-from-another-chain", Code.SIGNER_UNTRUSTED, _aggregate_from_other_chain),
    # Coverage, commit, run
    Case("platform-removed", Code.PLATFORM_MISSING, _platform_removed),
    Case("candidate-is-another-sha", Code.SHA_MISMATCH, _candidate_other_sha),
    Case("one-platform-another-sha", Code.SHA_MISMATCH, _one_platform_other_sha),
    Case("runs-mixed", Code.RUN_MISMATCH, _runs_mixed),
    Case("attempts-mixed", Code.RUN_MISMATCH, _attempts_mixed),
    Case("platform-duplicated", Code.PLATFORM_DUPLICATE, _duplicated_platform),
    Case("platform-not-required", Code.PLATFORM_UNKNOWN, _unknown_platform),
    Case("statement-under-other-platform-name", Code.PLATFORM_UNKNOWN, _statement_under_other_platform_name),
    # Damaged or foreign files
    Case("platform-truncated", Code.JSON_MALFORMED, _truncated("platform-{}.dsse.json")),
    Case("aggregate-truncated", Code.JSON_MALFORMED, _truncated("aggregate.dsse.json")),
    Case("platform-oversized", Code.EVIDENCE_TOO_LARGE, _oversized),
    Case("platform-is-png", Code.JSON_INVALID_UTF8, _replaced(PNG)),
    Case("aggregate-is-png", Code.JSON_INVALID_UTF8, _replaced(PNG, "aggregate.dsse.json")),
    Case("platform-is-json-array", Code.SCHEMA_INVALID, _replaced(b"[]")),
    Case("platform-is-json-string", Code.SCHEMA_INVALID, _replaced(b'"hello"')),
    Case("platform-is-empty", Code.JSON_MALFORMED, _replaced(b"")),
    Case("platform-too-deep", Code.JSON_TOO_DEEP, _replaced(_nested(200))),
    Case("envelope-duplicate-key", Code.JSON_DUPLICATE_KEY,
         _replaced(b'{"payloadType":"application/vnd.in-toto+json","payloadType":"x","payload":"e30=",'
                   b'"signatures":[]}')),
    Case("envelope-payload-not-base64", Code.SCHEMA_INVALID,
         _replaced(b'{"payloadType":"application/vnd.in-toto+json","payload":"!!!!","signatures":[{"keyid":"'
                   + b"0" * 64 + b'","sig":"AAAA"}]}')),
    Case("envelope-other-payload-type", Code.SCHEMA_INVALID,
         _replaced(b'{"payloadType":"text/plain","payload":"e30=","signatures":[{"keyid":"' + b"0" * 64
                   + b'","sig":"AAAA"}]}')),
    Case("aggregate-renamed-as-platform", Code.SIGNER_UNTRUSTED, _aggregate_renamed_as_platform),
    Case("platform-renamed-as-aggregate", Code.SIGNER_UNTRUSTED, _platform_renamed_as_aggregate),
    Case("aggregate-payload-as-platform", Code.PREDICATE_TYPE_UNKNOWN, _aggregate_payload_under_platform_key),
    Case("aggregate-named-as-platform-file", Code.SIGNER_UNTRUSTED, _aggregate_under_platform_pattern),
    # The folder itself
    Case("empty-folder", Code.EVIDENCE_MISSING, _empty_folder),
    Case("extra-file", Code.EVIDENCE_UNEXPECTED, _extra(lambda d: (d / "notes.txt").write_text("hi"))),
    Case("extra-backup-file", Code.EVIDENCE_UNEXPECTED,
         _extra(lambda d: (d / "aggregate.dsse.json.bak").write_text("{}"))),
    Case("extra-folder", Code.EVIDENCE_UNEXPECTED, _extra(lambda d: (d / "platform-macos.dsse.json").mkdir())),
    Case("symlinked-statement", Code.EVIDENCE_UNEXPECTED,
         _extra(lambda d: (d / "platform-windows.dsse.json").symlink_to(d / "aggregate.dsse.json"))),
    # The aggregate
    Case("aggregate-missing", Code.AGGREGATE_MISSING, _aggregate_missing),
    Case("aggregate-over-subset", Code.AGGREGATE_MISMATCH, _aggregate_over_subset),
    Case("statement-resigned-after-aggregate", Code.AGGREGATE_MISMATCH, _statement_replaced_after_aggregate),
    Case("aggregate-for-other-platforms", Code.AGGREGATE_MISMATCH, _aggregate_for_other_platforms),
    Case("aggregate-other-run", Code.RUN_MISMATCH, _aggregate_run_edit("run_id", "local-other")),
    Case("aggregate-other-attempt", Code.RUN_MISMATCH, _aggregate_run_edit("attempt", 7)),
    Case("aggregate-other-sha", Code.SHA_MISMATCH, _aggregate_run_edit("sha", OTHER_SHA)),
    Case("aggregate-other-trigger", Code.WORKFLOW_IDENTITY_MISMATCH, _aggregate_run_edit("trigger", "push")),
    # Stage outcomes
    Case("install-failed", Code.INSTALL_FAILED, _one(_set("install", passed=False, failure="disk full"))),
    Case("install-of-other-bytes", Code.INSTALL_FAILED, _one(_set("install", artifact_sha256="0" * 64))),
    Case("install-empty", Code.INSTALL_FAILED, _one(_set("install", file_count=0))),
    Case("probe-failed", Code.PROBE_FAILED, _one(_set("launch_probe", passed=False))),
    Case("probe-no-report", Code.PROBE_FAILED, _one(_set("launch_probe", report=None, exit_code=3))),
    Case("probe-timed-out", Code.PROBE_FAILED, _one(_set("launch_probe", timed_out=True, exit_code=None))),
    Case("probe-no-isolation", Code.PROBE_FAILED, _one(_set("launch_probe.report", isolation_available=False))),
    Case("probe-catalog-unverified", Code.PROBE_FAILED, _one(_set("launch_probe.report", catalog_verified=False))),
    Case("probe-other-executable", Code.PROBE_FAILED, _one(_set("launch_probe.report", executable_sha256="1" * 64))),
    Case("probe-other-platform", Code.PROBE_FAILED, _one(_set("launch_probe.report", platform="windows"))),
    Case("journey-step-failed", Code.JOURNEY_INCOMPLETE,
         _one(_step("external-signed-runs-in-worker", passed=False, observed="reject"))),
    Case("journey-step-missing", Code.JOURNEY_INCOMPLETE, _one(_drop_step("external-unsigned-rejected"))),
    Case("journey-step-other-code", Code.JOURNEY_INCOMPLETE,
         _one(_step("external-unsigned-rejected", observed_code="CC_SKILL_TIMEOUT"))),
    Case("journey-step-allowed-what-must-reject", Code.JOURNEY_INCOMPLETE,
         _one(_step("external-unsigned-rejected", observed="allow", observed_code=None))),
    Case("journey-step-reported-twice", Code.JOURNEY_INCOMPLETE,
         _one(_repeat_step("external-signed-runs-in-worker", passed=False, observed="reject"))),
    Case("journey-step-reported-twice-both-passing", Code.JOURNEY_INCOMPLETE,
         _one(_repeat_step("external-signed-runs-in-worker"))),
    Case("journey-not-passed", Code.JOURNEY_INCOMPLETE, _one(_set("journey", passed=False))),
    Case("journey-exit-nonzero", Code.JOURNEY_INCOMPLETE, _one(_set("journey", exit_code=1))),
    Case("journey-timed-out", Code.JOURNEY_INCOMPLETE, _one(_set("journey", timed_out=True))),
    Case("source-gate-failed", Code.NOT_MAIN_HEAD, _one(_set("source_gate", passed=False))),
    Case("source-gate-not-head", Code.NOT_MAIN_HEAD, _one(_set("source_gate", head_matches=False))),
    Case("dirty-tree-under-require-clean", Code.WORKTREE_DIRTY, _dirty_tree),
    Case("os-signing-signed-not-accepted", Code.PLATFORM_SIGNING_UNACCEPTED,
         _one(_set("signature", platform_signing_state="signed", platform_signing_tool="codesign"))),
    Case("os-signing-failed", Code.PLATFORM_SIGNING_UNACCEPTED,
         _one(_set("signature", platform_signing_state="failed"))),
    Case("os-signing-unsigned-where-signed-required", Code.PLATFORM_SIGNING_UNACCEPTED,
         _one(lambda p: None, signing={"linux": ["signed"], "macos": ["signed"], "windows": ["signed"]})),
    Case("artifact-signature-forged", Code.ARTIFACT_SIGNATURE_FAILED,
         _one(_set("signature", signature="A" * 86 + "=="))),
    Case("artifact-signature-readback-failed", Code.ARTIFACT_SIGNATURE_FAILED,
         _one(_set("signature", readback_verified=False))),
    Case("artifact-signature-other-digest", Code.ARTIFACT_SIGNATURE_FAILED,
         _one(_set("signature", artifact_sha256="2" * 64))),
    Case("artifact-signature-unknown-keyid", Code.ARTIFACT_SIGNATURE_FAILED,
         _one(_set("signature", keyid="3" * 64))),
    Case("artifact-signature-other-method", Code.ARTIFACT_SIGNATURE_FAILED,
         _one(_set("signature", method="sigstore-bundle"))),
    # Claims in the payload that disagree with the policy or with each other
    Case("claim-other-repository", Code.WORKFLOW_IDENTITY_MISMATCH, _one(_set("run", repository="evil/fork"))),
    Case("claim-other-workflow", Code.WORKFLOW_IDENTITY_MISMATCH,
         _one(_set("run", workflow=".github/workflows/other.yml"))),
    Case("claim-other-trigger", Code.WORKFLOW_IDENTITY_MISMATCH, _one(_set("run", trigger="pull_request"))),
    Case("claim-other-runner", Code.WORKFLOW_IDENTITY_MISMATCH, _one(_set("run", runner_environment="self-hosted"))),
    Case("claim-github-mode-under-local-policy", Code.WORKFLOW_IDENTITY_MISMATCH, _one(_set("run", mode="github"))),
    Case("claim-run-ref-branch", Code.REF_NOT_MAIN, _one(_set("run", ref="refs/heads/feature"))),
    Case("claim-gate-ref-tag", Code.REF_NOT_MAIN, _one(_set("source_gate", ref="refs/tags/v1.0.0"))),
    Case("claim-gate-other-sha", Code.SHA_MISMATCH, _one(_set("source_gate", sha=OTHER_SHA))),
    Case("claim-build-other-sha", Code.SHA_MISMATCH, _one(_set("build", build_sha=OTHER_SHA))),
    Case("claim-probe-other-sha", Code.SHA_MISMATCH, _one(_set("launch_probe.report", build_sha=OTHER_SHA))),
    Case("claim-journey-other-sha", Code.SHA_MISMATCH, _one(_set("journey", app_build_sha=OTHER_SHA))),
    Case("subject-other-digest", Code.SUBJECT_MISMATCH,
         lambda t: make_evidence(t, platforms=[PlatformSpec(
             _host(), subject=Subject(name="skillhost.tar.gz", digest=DigestSet(sha256="4" * 64)))]).verify_argv()),
    # Signed payloads that are not a valid statement
    Case("payload-unknown-predicate-type", Code.PREDICATE_TYPE_UNKNOWN,
         _payload(_sub(PLATFORM_PREDICATE_TYPE.encode(), PLATFORM_PREDICATE_TYPE.replace("/v1", "/v2").encode()))),
    Case("payload-no-predicate-type", Code.PREDICATE_TYPE_UNKNOWN,
         _payload(_sub(b'"predicateType"', b'"predicateTyp"'))),
    Case("payload-duplicate-key", Code.JSON_DUPLICATE_KEY, _payload(_sub(b'{"_type"', b'{"_type":"x","_type"'))),
    Case("payload-nan", Code.JSON_NONFINITE, _payload(_sub(b'"duration_ms":1000', b'"duration_ms":NaN'))),
    Case("payload-infinity", Code.JSON_NONFINITE, _payload(_sub(b'"duration_ms":1000', b'"duration_ms":-Infinity'))),
    Case("payload-not-json", Code.JSON_MALFORMED, _payload(lambda b: b[:-1])),
    Case("payload-not-utf8", Code.JSON_INVALID_UTF8, _payload(_sub(b'"x86_64"', b'"x86\xff64"'))),
    Case("payload-extra-field", Code.SCHEMA_INVALID, _payload(_sub(b'{"_type"', b'{"note":"trust me","_type"'))),
    Case("payload-wrong-type", Code.SCHEMA_INVALID, _payload(_sub(b'"attempt":1', b'"attempt":"1"'))),
    Case("payload-bad-sha-pattern", Code.SCHEMA_INVALID, _payload(_sub(b'"build_sha":"3b18e', b'"build_sha":"3B18E'))),
    Case("payload-too-deep", Code.JSON_TOO_DEEP, _payload(lambda b: _nested(30))),
    # Usage and environment: exit status 2
    Case("policy-missing", Code.POLICY_INVALID,
         _usage(lambda ev, t: [*ev.verify_argv()[:2], str(t / "nope.toml"), *ev.verify_argv()[3:]]), status=2),
    Case("policy-bad-toml", Code.POLICY_INVALID, _usage(_policy_replaced("version = = 1\n")), status=2),
    Case("keyring-missing", Code.KEY_INVALID, _usage(_keyring_removed), status=2),
    Case("sha-not-a-commit", Code.USAGE, _usage(lambda ev, t: ev.verify_argv("--sha", "main")), status=2),
    Case("evidence-not-a-folder", Code.USAGE,
         _usage(lambda ev, t: ["verify", "--policy", str(ev.policy_path), "--evidence", str(ev.policy_path)]),
         status=2),
    Case("policy-flag-absent", Code.USAGE, _usage(lambda ev, t: ["verify", "--evidence", str(ev.evidence_dir)]),
         status=2),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_evidence(case: Case, tmp_path: Path, qualify: Any) -> None:
    argv = case.build(tmp_path)
    decision_file, summary_file = tmp_path / "decision.json", tmp_path / "summary.md"
    result = qualify([*argv, "--json", str(decision_file), "--summary", str(summary_file)])
    assert "Traceback" not in result.text
    assert result.status == case.status, result.text
    assert case.code.value in result.text, result.text
    if case.status == 1:
        decision = ConsumerDecision.model_validate_json(decision_file.read_bytes())
        assert decision.decision == "REJECTED"
        assert case.code in {r.code for r in decision.reasons}
        summary = summary_file.read_text(encoding="utf-8")
        assert "REJECTED" in summary
        assert f"`{case.code.value}`" in summary
    else:
        assert not decision_file.exists()


def test_untouched_evidence_qualifies(tmp_path: Path, qualify: Any) -> None:
    """The baseline every case above spoils: without a change, the factory's evidence is QUALIFIED."""
    ev = make_evidence(tmp_path)
    decision_file, summary_file = tmp_path / "decision.json", tmp_path / "summary.md"
    result = qualify([*ev.verify_argv("--sha", ev.sha), "--json", str(decision_file), "--summary",
                      str(summary_file)])
    assert result.status == 0, result.text
    decision = ConsumerDecision.model_validate_json(decision_file.read_bytes())
    assert decision.decision == "QUALIFIED"
    assert decision.reasons == []
    assert decision.candidate_sha == ev.sha
    assert (decision.run_id, decision.attempt) == (ev.run_id, 1)
    assert [row.platform for row in decision.rows] == [_host()]
    assert decision.rows[0].sha256 == ev.platforms[0].predicate.build.artifact.sha256  # type: ignore[union-attr]
    assert {decision.rows[0].install, decision.rows[0].probe, decision.rows[0].journey,
            decision.rows[0].signature} == {"pass"}
    summary = summary_file.read_text(encoding="utf-8").splitlines()
    assert summary[0].startswith("## ")
    assert "QUALIFIED" in summary[0]
    header = summary.index("| platform | artifact | sha256 | install | probe | journey | signature |")
    assert summary[header + 1] == "|---|---|---|---|---|---|---|"
    assert summary[header + 2].startswith(f"| {_host()} | {ev.artifact_paths[0].name} | ")
    assert summary[header + 2].endswith("| pass | pass | pass | pass |")


def test_three_platforms_qualify_and_the_table_has_a_row_each(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path, platforms=list(THREE))
    result = qualify(ev.verify_argv())
    assert result.status == 0, result.text
    rows = [line.split()[0] for line in result.out.splitlines() if line.split()[:1] in (["linux"], ["macos"],
                                                                                           ["windows"])]
    assert rows == list(THREE)


def test_a_missing_platform_shows_as_a_missing_row(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path, platforms=list(THREE))
    ev.platform_file("windows").unlink()
    decision_file = tmp_path / "d.json"
    result = qualify([*ev.verify_argv(), "--json", str(decision_file)])
    assert result.status == 1
    rows = {r.platform: r for r in ConsumerDecision.model_validate_json(decision_file.read_bytes()).rows}
    assert rows["windows"].install == rows["windows"].journey == "missing"
    assert rows["linux"].install == "pass"


def _envelope_offsets(data: bytes) -> dict[str, int]:
    """Byte offsets of interesting places inside an RFC 8785 DSSE envelope."""
    envelope = json.loads(data)
    payload_at = data.index(b'"payload":"') + len(b'"payload":"')
    sig_at = data.index(b'"sig":"') + len(b'"sig":"')
    keyid_at = data.index(b'"keyid":"') + len(b'"keyid":"')
    type_at = data.index(b'"payloadType":"') + len(b'"payloadType":"')
    return {
        "open-brace": 0,
        "close-brace": len(data) - 1,
        "payload-start": payload_at,
        "payload-middle": payload_at + len(envelope["payload"]) // 2,
        "sig-middle": sig_at + len(envelope["signatures"][0]["sig"]) // 2,
        "keyid": keyid_at + 10,
        "payload-type": type_at + 3,
    }


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


_HEX = "0123456789abcdef"


def _substitute(path: Path, offset: int, alphabet: str) -> None:
    """Change one byte to the next one of its alphabet: the meaning changes, the syntax does not."""
    data = bytearray(path.read_bytes())
    char = chr(data[offset])
    data[offset] = ord(alphabet[(alphabet.index(char) + 1) % len(alphabet)]) if char in alphabet else data[offset] ^ 1
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("file", ["platform", "aggregate"])
@pytest.mark.parametrize(
    ("where", "code"),
    [
        ("open-brace", Code.JSON_MALFORMED),
        ("close-brace", Code.JSON_MALFORMED),
        ("payload-start", Code.SIGNATURE_INVALID),
        ("payload-middle", Code.SIGNATURE_INVALID),
        ("sig-middle", Code.SIGNATURE_INVALID),
        ("keyid", Code.SIGNER_UNTRUSTED),
        ("payload-type", Code.SCHEMA_INVALID),
    ],
)
def test_statement_byte_changed(file: str, where: str, code: Code, tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path)
    path = ev.platform_file(_host()) if file == "platform" else ev.evidence_dir / "aggregate.dsse.json"
    _substitute(path, _envelope_offsets(path.read_bytes())[where], _HEX if where == "keyid" else _B64)
    result = qualify(ev.verify_argv())
    assert "Traceback" not in result.text
    assert result.status == 1
    assert code.value in result.text, result.text


# A flip inside the "signatures" key leaves an envelope with no signatures: QE_SIGNATURE_MISSING.
_DAMAGE_CODES = {Code.JSON_MALFORMED, Code.SCHEMA_INVALID, Code.SIGNATURE_INVALID, Code.SIGNER_UNTRUSTED,
                 Code.JSON_INVALID_UTF8, Code.AGGREGATE_MISMATCH, Code.JSON_DUPLICATE_KEY, Code.SIGNATURE_MISSING}


@pytest.mark.parametrize("file", ["platform", "aggregate"])
def test_every_sampled_byte_flip_is_rejected(file: str, tmp_path: Path, qualify: Any) -> None:
    """A sweep: flipping the low bit of any sampled byte rejects with a damage code, never a traceback."""
    ev = make_evidence(tmp_path)
    path = ev.platform_file(_host()) if file == "platform" else ev.evidence_dir / "aggregate.dsse.json"
    original = path.read_bytes()
    step = max(1, len(original) // 40)
    for offset in [*range(0, len(original), step), len(original) - 1]:
        data = bytearray(original)
        data[offset] ^= 0x01
        path.write_bytes(bytes(data))
        decision_file = tmp_path / "d.json"
        result = qualify([*ev.verify_argv(), "--json", str(decision_file)])
        assert "Traceback" not in result.text
        assert result.status == 1, f"offset {offset}: {result.text}"
        codes = {r.code for r in ConsumerDecision.model_validate_json(decision_file.read_bytes()).reasons}
        assert codes & _DAMAGE_CODES, f"offset {offset}: {codes}"
    path.write_bytes(original)
    assert qualify(ev.verify_argv()).status == 0


@pytest.mark.parametrize("signatures", [[], None], ids=["empty-list", "absent"])
def test_unsigned_envelope_is_signature_missing(signatures: list[Any] | None, tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path)
    path = ev.platform_file(_host())
    envelope = json.loads(path.read_bytes())
    if signatures is None:
        del envelope["signatures"]
    else:
        envelope["signatures"] = signatures
    path.write_bytes(json.dumps(envelope).encode())
    result = qualify(ev.verify_argv())
    assert result.status == 1
    assert Code.SIGNATURE_MISSING.value in result.text, result.text
