import re

from skillhost_testutil import run_source

HEX64 = re.compile(r"^[0-9a-f]{64}$")
JOURNEY_IDS = [
    "catalog-verified",
    "bundled-skill-runs",
    "external-signed-runs-in-worker",
    "external-unsigned-rejected",
    "external-unknown-signer-rejected",
    "external-digest-drift-rejected",
    "external-undeclared-capability-rejected",
    "external-swallowed-denial-still-rejected",
    "external-raw-import-rejected",
    "external-request-flood-killed",
    "external-oversized-frame-killed",
    "external-oversized-result-rejected",
    "external-timeout-killed",
    "bundled-read-notes-runs",
    "bundled-repo-status-runs",
    "bundled-host-info-runs",
    "bundled-fetch-status-runs",
    "fs-dotdot-escape-rejected",
    "fs-symlink-escape-rejected",
    "process-not-allow-listed-rejected",
    "process-shell-metachar-rejected",
    "env-key-not-granted-rejected",
    "net-ip-literal-rejected",
    "net-non-https-rejected",
    "net-private-resolution-rejected",
    "net-redirect-disallowed-rejected",
    "external-broker-call-through-worker",
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
]
STEP_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
CODE = re.compile(r"^CC_SKILL_[A-Z_]{1,64}$")


def test_probe_shape():
    rc, out, _ = run_source(["probe"])
    assert rc == 0, out
    assert set(out) == {
        "kind",
        "version",
        "app_version",
        "build_sha",
        "built_at",
        "platform",
        "frozen",
        "executable_sha256",
        "worker_entry_resolvable",
        "catalog_verified",
        "isolation_available",
        "isolation_layers",
    }
    assert out["kind"] == "skillhost-probe"
    assert out["version"] == 1
    assert out["app_version"] == "0.1.0"
    assert out["build_sha"] == "0" * 40
    assert out["frozen"] is False
    assert out["platform"] in ("linux", "macos", "windows")
    assert HEX64.match(out["executable_sha256"])
    assert out["worker_entry_resolvable"] is out["catalog_verified"] is out["isolation_available"] is True


def test_probe_build_info_from_env(tmp_path):
    info = tmp_path / "bi.json"
    info.write_text(
        '{"build_sha": "' + "ab" * 32 + '", "built_at": "2026-01-01T00:00:00Z", "source_ref": "refs/heads/main"}'
    )
    rc, out, _ = run_source(["probe"], env_extra={"QUALIFY_BUILD_INFO": str(info)})
    assert rc == 0
    assert out["build_sha"] == "ab" * 32
    assert out["built_at"] == "2026-01-01T00:00:00Z"


def test_probe_bad_build_info_refused(tmp_path):
    info = tmp_path / "bi.json"
    info.write_text('{"build_sha": "NOT-HEX"}')
    rc, out, _ = run_source(["probe"], env_extra={"QUALIFY_BUILD_INFO": str(info)})
    assert rc == 3
    assert out["kind"] == "skillhost-error"
    assert out["code"] == "CC_SKILL_BUILD_INFO_INVALID"


def test_probe_refuses_on_catalog_drift(app_copy):
    handler = app_copy / "skillhost" / "bundled_skills" / "clock" / "handler.py"
    handler.write_bytes(handler.read_bytes() + b"# changed\n")
    rc, out, _ = run_source(["probe"], pythonpath=app_copy)
    assert rc == 3
    assert out == {"kind": "skillhost-error", "version": 1, "code": "CC_SKILL_CATALOG_DRIFT", "message": out["message"]}


def test_journey_all_steps_pass():
    rc, out, _ = run_source(["journey"])
    assert out["kind"] == "skillhost-journey"
    assert out["version"] == 1
    failed = [s for s in out["steps"] if not s["passed"]]
    assert rc == 0, failed
    assert out["passed"] is True, failed
    ids = [s["id"] for s in out["steps"]]
    assert ids == JOURNEY_IDS
    assert len(set(ids)) == len(ids) <= 256
    assert set(out) == {
        "kind",
        "version",
        "app_version",
        "build_sha",
        "platform",
        "host_pid",
        "duration_ms",
        "passed",
        "steps",
        "isolation_layers",
    }
    for step in out["steps"]:
        assert set(step) == {"id", "expected", "expected_code", "observed", "observed_code", "passed", "detail",
                             "errno"}
        assert STEP_ID.match(step["id"])
        assert len(step["detail"]) <= 400
        for key in ("expected_code", "observed_code"):
            assert step[key] is None or CODE.match(step[key])
    assert out["duration_ms"] < 20000
    for s in out["steps"]:
        assert len(s["detail"]) <= 200
        assert (s["expected_code"] is None) == (s["expected"] == "allow")
    worker_step = out["steps"][2]
    pid = int(re.search(r"worker_pid=(\d+)", worker_step["detail"]).group(1))
    assert pid != out["host_pid"]
    assert "reaped=True" in worker_step["detail"]
    codes = {s["id"]: s["observed_code"] for s in out["steps"]}
    assert codes["external-unsigned-rejected"] == "CC_SKILL_SIGNATURE_MISSING"
    assert codes["external-unknown-signer-rejected"] == "CC_SKILL_SIGNER_UNKNOWN"
    assert codes["external-digest-drift-rejected"] == "CC_SKILL_DIGEST_DRIFT"
    assert codes["external-undeclared-capability-rejected"] == "CC_SKILL_CAPABILITY_UNDECLARED"


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
