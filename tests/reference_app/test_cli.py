import json
import re

from skillhost_testutil import run_source

HEX64 = re.compile(r"^[0-9a-f]{64}$")
JOURNEY_IDS = [
    "catalog-verified",
    "bundled-skill-runs",
    "bundled-swallowed-denial-refused",
    "audit-full-stops-skill",
    "external-signed-runs-in-worker",
    "external-secret-read-not-audited",
    "external-unsigned-rejected",
    "external-unknown-signer-rejected",
    "external-digest-drift-rejected",
    "external-undeclared-capability-rejected",
    "external-swallowed-denial-still-rejected",
    "external-raw-import-rejected",
    "external-submodule-import-refused-in-worker",
    "external-request-flood-killed",
    "external-oversized-frame-killed",
    "external-oversized-result-rejected",
    "external-timeout-killed",
    "bundled-read-notes-runs",
    "bundled-repo-status-runs",
    "bundled-host-info-runs",
    "bundled-fetch-status-runs",
    "authority-withholds-process-rejected",
    "authority-withholds-egress-rejected",
    "authority-narrows-egress-rejected",
    "authority-narrows-env-keys-rejected",
    "authority-withholds-fs-read-rejected",
    "authority-withholds-process-rule-rejected",
    "authority-unknown-external-rejected",
    "fs-dotdot-escape-rejected",
    "fs-symlink-escape-rejected",
    "process-not-allow-listed-rejected",
    "process-shell-metachar-rejected",
    "process-rule-bound-to-other-skill-rejected",
    "env-key-not-granted-rejected",
    "net-ip-literal-rejected",
    "net-non-https-rejected",
    "net-private-resolution-rejected",
    "net-loopback-resolution-rejected",
    "net-redirect-disallowed-rejected",
    "runtime-domain-decided-runs",
    "runtime-domain-undecided-rejected",
    "runtime-domain-expired-decision-rejected",
    "runtime-domain-other-authority-rejected",
    "runtime-domain-redirect-decided-runs",
    "loopback-service-runs",
    "loopback-port-not-listed-rejected",
    "loopback-unknown-service-rejected",
    "diagnostics-dns-lookup-runs",
    "diagnostics-host-not-allowed-rejected",
    "diagnostics-private-host-rejected",
    "diagnostics-unknown-tool-rejected",
    "external-broker-call-through-worker",
    "external-late-call-recorded",
    "external-fs-escape-rejected",
    "external-protocol-version-mismatch-killed",
    "external-abort-killed",
    "package-path-traversal-rejected",
    "package-symlink-rejected",
    "package-native-binary-rejected",
    "package-unknown-manifest-field-rejected",
    "prompt-only-no-execution",
    "safe-mode-bundled-runs",
    "safe-mode-external-refused",
    "host-boundary-external-not-loaded",
    "worker-environment-minimal",
    "kernel-refuses-read-outside-bundle",
    "kernel-refuses-write-outside-tmp",
    "kernel-refuses-tcp-connect-loopback",
    "kernel-refuses-ptrace-host",
    "kernel-refuses-exec-shell",
    "worker-tmp-write-rename-delete",
]
STEP_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
CODE = re.compile(r"^CC_SKILL_[A-Z_]{1,64}$")


def test_probe_shape():
    rc, out, _ = run_source(["probe"])
    assert rc == 0, out
    assert set(out) == {"kind", "version", "app_version", "build_sha", "platform", "executable_sha256", "checks",
                        "isolation_layers"}
    assert out["kind"] == "qualify-probe"
    assert out["version"] == 2
    assert out["app_version"] == "0.1.0"
    assert out["build_sha"] == "0" * 40
    assert out["platform"] in ("linux", "macos", "windows")
    assert HEX64.match(out["executable_sha256"])
    # The skill host's own requirements, as named checks (its policy's `[app.probe] require`).
    assert [(c["name"], c["passed"]) for c in out["checks"]] == [
        ("worker-entry-resolvable", True), ("isolation", True), ("catalog-verified", True)]


def test_probe_and_journey_write_their_record_file(tmp_path):
    record = tmp_path / "probe.json"
    rc, out, _ = run_source(["probe", "--record", str(record)])
    assert rc == 0
    assert json.loads(record.read_bytes()) == out
    # Never over an existing file, never through a link: the producer's fresh path or nothing.
    rc, out, _ = run_source(["probe", "--record", str(record)])
    assert (rc, out["code"]) == (3, "CC_SKILL_RECORD_UNWRITABLE")
    via_env = tmp_path / "env.json"
    rc, out, _ = run_source(["probe"], env_extra={"QUALIFY_RECORD": str(via_env)})
    assert rc == 0
    assert json.loads(via_env.read_bytes()) == out


def test_probe_build_info_from_env(tmp_path):
    info = tmp_path / "bi.json"
    info.write_text(
        '{"kind": "qualify-build-info", "version": 1, "build_sha": "' + "ab" * 32 + '", '
        '"built_at": "2026-01-01T00:00:00Z", "source_ref": "refs/heads/main", "platform": "linux"}'
    )
    rc, out, _ = run_source(["probe"], env_extra={"QUALIFY_BUILD_INFO": str(info)})
    assert rc == 0
    assert out["build_sha"] == "ab" * 32


def test_probe_bad_build_info_refused(tmp_path):
    info = tmp_path / "bi.json"
    info.write_text('{"build_sha": "NOT-HEX"}')
    rc, out, _ = run_source(["probe"], env_extra={"QUALIFY_BUILD_INFO": str(info)})
    assert rc == 3
    assert out["kind"] == "skillhost-error"
    assert out["code"] == "CC_SKILL_BUILD_INFO_INVALID"


def test_probe_refuses_on_catalog_drift(app_copy, tmp_path):
    handler = app_copy / "skillhost" / "bundled_skills" / "clock" / "handler.py"
    handler.write_bytes(handler.read_bytes() + b"# changed\n")
    record = tmp_path / "probe.json"
    rc, out, _ = run_source(["probe", "--record", str(record)], pythonpath=app_copy)
    assert rc == 3
    assert out == {"kind": "skillhost-error", "version": 1, "code": "CC_SKILL_CATALOG_DRIFT", "message": out["message"]}
    # The record still says which check failed, for the producer's evidence.
    checks = {c["name"]: c for c in json.loads(record.read_bytes())["checks"]}
    assert checks["catalog-verified"]["passed"] is False
    assert checks["catalog-verified"]["detail"].startswith("CC_SKILL_CATALOG_DRIFT: ")
    assert checks["isolation"]["passed"] is True


def test_journey_reports_observations_only():
    rc, out, _ = run_source(["journey"])
    assert out["kind"] == "qualify-journey"
    assert out["version"] == 2
    assert rc == 0
    ids = [s["id"] for s in out["steps"]]
    assert ids == JOURNEY_IDS
    assert len(set(ids)) == len(ids) <= 256
    assert set(out) == {"kind", "version", "app_version", "build_sha", "platform", "steps", "isolation_layers"}
    for step in out["steps"]:
        # What happened, never what was expected nor whether it passed: the policy judges.
        assert set(step) == {"id", "observed", "code", "errno", "layer", "detail"}
        # Only a kernel-refusal step names the layer that refused it.
        assert (step["layer"] is not None) == step["id"].startswith("kernel-refuses-"), step
        assert STEP_ID.match(step["id"])
        assert step["observed"] in ("allow", "reject"), step
        assert step["code"] is None or CODE.match(step["code"])
        assert (step["code"] is None) == (step["observed"] == "allow")
        assert len(step["detail"]) <= 200
    worker_step = next(s for s in out["steps"] if s["id"] == "external-signed-runs-in-worker")
    assert re.search(r"worker_pid=(\d+)", worker_step["detail"])
    assert "reaped=True" in worker_step["detail"]
    codes = {s["id"]: s["code"] for s in out["steps"]}
    assert codes["external-unsigned-rejected"] == "CC_SKILL_SIGNATURE_MISSING"
    assert codes["external-unknown-signer-rejected"] == "CC_SKILL_SIGNER_UNKNOWN"
    assert codes["external-digest-drift-rejected"] == "CC_SKILL_DIGEST_DRIFT"
    assert codes["external-undeclared-capability-rejected"] == "CC_SKILL_CAPABILITY_UNDECLARED"


def test_a_step_whose_own_check_failed_is_an_error_not_its_expected_outcome():
    from skillhost.journey._run import observed

    broken = {"id": "bundled-skill-runs", "expected": "allow", "expected_code": None, "observed": "allow",
              "observed_code": None, "passed": False, "detail": "returned no value", "errno": None, "layer": None}
    assert observed(broken) == {"id": "bundled-skill-runs", "observed": "error", "code": None, "errno": None,
                                "layer": None,
                                "detail": "returned no value"}
    refused = {**broken, "observed": "reject", "observed_code": "CC_SKILL_TIMEOUT", "detail": "timed out"}
    assert observed(refused)["observed"] == "reject"
    assert observed(refused)["code"] == "CC_SKILL_TIMEOUT"


def test_usage_errors_are_json():
    for args in ([], ["bogus"], ["sign-skill"], ["--help"], ["keygen"]):
        rc, out, _ = run_source(args)
        assert rc == 2, args
        assert out["kind"] == "skillhost-error", args
        assert out["code"] == "CC_SKILL_USAGE", args


def test_worker_self_test():
    rc, out, _ = run_source(["worker", "--self-test"])
    assert rc == 0
    assert out["kind"] == "skillhost-worker-self-test"
    assert isinstance(out["pid"], int)


def test_keygen_and_sign_skill(tmp_path):
    import os

    key = tmp_path / "k.pem"
    rc, out, _ = run_source(["keygen", "--out", str(key)])
    assert rc == 0
    assert out["kind"] == "skillhost-keygen"
    assert len(out["keyid"]) == 64
    if os.name == "posix":
        assert (key.stat().st_mode & 0o777) == 0o600
    rc, _out2, _ = run_source(["keygen", "--out", str(key)])
    assert rc == 2  # never overwrite a key
    skill = tmp_path / "s"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nid: s\nexecution-capabilities:\n  - runtime:time\n---\n")
    (skill / "handler.py").write_text("def run(ports, args):\n    return ports.time.now()\n")
    rc, out3, _ = run_source(["sign-skill", "--key", str(key), str(skill)])
    assert rc == 0
    assert out3["keyid"] == out["keyid"]
    assert out3["files"] == 2
    assert (skill / ".skill-lock.json").is_file()
    assert (skill / ".skill-signature.json").is_file()
