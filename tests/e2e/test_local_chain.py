"""The whole local chain on the real PyInstaller bundle, then tampering a consumer must refuse."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import ConsumerDecision, PlatformStatement, canonical_bytes
from desktop_qualify.qualify_trust import generate_private_key
from desktop_qualify.qualify_trust._envelope import sign_envelope
from support.chain import Chain, git, qualify

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="the chain runs per host; "
                                                   "this test pins the linux platform")]


def _verify(chain: Chain, evidence: Path, artifacts: list[Path], *extra: str | Path):
    args: list[str | Path] = ["verify", "--policy", chain.policy, "--evidence", evidence]
    for artifact in artifacts:
        args += ["--artifact", artifact]
    return qualify(*args, *extra)


def _copy_evidence(chain: Chain, tmp_path: Path) -> Path:
    target = tmp_path / "evidence"
    shutil.copytree(chain.evidence, target)
    return target


def test_produce_reports_every_stage_with_timings(chain: Chain) -> None:
    err = chain.logs["produce"].stderr
    for stage in ("source gate", "build", "install", "launch probe", "journey", "sign and emit"):
        assert f"[produce linux] {stage}" in err
    assert "passed=False" not in err
    assert f"sha={chain.sha[:12]}" in err


def test_untouched_chain_is_qualified(chain: Chain, tmp_path: Path) -> None:
    decision_file, summary = tmp_path / "decision.json", tmp_path / "summary.md"
    done = _verify(chain, chain.evidence, chain.artifacts, "--json", decision_file, "--summary", summary)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "QUALIFIED" in done.stdout
    decision = ConsumerDecision.model_validate_json(decision_file.read_text())
    assert decision.decision == "QUALIFIED"
    assert decision.candidate_sha == chain.sha
    assert [(r.platform, r.install, r.probe, r.journey, r.signature) for r in decision.rows] == [
        ("linux", "pass", "pass", "pass", "pass")]
    assert "| linux |" in summary.read_text()


def test_statement_binds_the_built_artifact_and_the_gated_sha(chain: Chain) -> None:
    envelope = json.loads((chain.evidence / "platform-linux.dsse.json").read_bytes())
    statement = PlatformStatement.model_validate_json(base64.b64decode(envelope["payload"]))
    (artifact,) = chain.artifacts
    p = statement.predicate
    assert statement.subject[0].name == artifact.name
    assert p.run.sha == p.build.build_sha == p.launch_probe.report.build_sha == chain.sha  # type: ignore[union-attr]
    assert p.source_gate.protection == "not-observed"
    assert p.journey.passed
    assert not p.journey.missing_steps
    assert p.launch_probe.report is not None
    # The reference app's own requirements, reported as the policy's named checks, each passed.
    assert [(c.name, c.passed) for c in p.launch_probe.report.checks] == [
        ("worker-entry-resolvable", True), ("isolation", True), ("catalog-verified", True)]
    # The app's own build command, installer kind and commands, as the policy names them.
    assert p.build.command == ["{python}", "tools/build_release.py", "--out", "{out}"]
    assert "pyinstaller" in p.build.tools
    assert (p.install.method, p.install.executable) == ("archive", "skillhost/skillhost")
    assert p.launch_probe.command == ["{executable}", "probe", "--record", "{record}"]
    assert p.journey.command == ["{executable}", "journey", "--record", "{record}"]
    assert p.launch_probe.display == p.journey.display == "none"


def test_the_frozen_worker_is_confined_and_the_kernel_refused_each_escape(chain: Chain) -> None:
    """On this machine (Linux 6.18, Landlock ABI 7) every Linux layer applies, in the probe and the journey."""
    envelope = json.loads((chain.evidence / "platform-linux.dsse.json").read_bytes())
    p = PlatformStatement.model_validate_json(base64.b64decode(envelope["payload"])).predicate
    assert p.launch_probe.report is not None
    for layers in (p.launch_probe.report.isolation_layers, p.journey.isolation_layers):
        assert [(entry.name, entry.applied) for entry in layers] == [
            ("no-new-privs", True), ("user-net-namespace", True), ("landlock-fs", True), ("landlock-net", True),
            ("landlock-scope", True), ("seccomp", True)]
    # Each refusal with the layer that made it, as the policy's step table requires; no other step names one.
    kernel = {s.id: (s.code, s.errno, s.layer) for s in p.journey.steps if s.id.startswith("kernel-refuses-")}
    assert kernel == {
        "kernel-refuses-read-outside-bundle": ("CC_SKILL_SANDBOX_DENIED", "EACCES", "landlock-fs"),
        "kernel-refuses-write-outside-tmp": ("CC_SKILL_SANDBOX_DENIED", "EACCES", "landlock-fs"),
        "kernel-refuses-tcp-connect-loopback": ("CC_SKILL_SANDBOX_DENIED", "EPERM", "seccomp"),
        "kernel-refuses-ptrace-host": ("CC_SKILL_SANDBOX_DENIED", "EPERM", "seccomp"),
        "kernel-refuses-exec-shell": ("CC_SKILL_SANDBOX_DENIED", "EPERM", "seccomp"),
    }
    assert [s.id for s in p.journey.steps if s.layer is not None] == list(kernel)


def test_the_frozen_app_starts_without_the_runtime_hooks_it_does_not_use(chain: Chain, tmp_path: Path) -> None:
    """The spec drops PyInstaller's inspect, pkgutil and multiprocessing hooks: a worker starts per skill run.

    And it leaves out multiprocessing (and what only it imports): the app runs skills in workers of its own.
    """
    (artifact,) = sorted((chain.out / "artifacts").iterdir())
    with tarfile.open(artifact) as tf:
        tf.extract("skillhost/skillhost", tmp_path, filter="data")
    viewer = Path(sys.executable).with_name("pyi-archive_viewer")
    executable = tmp_path / "skillhost" / "skillhost"
    listed = subprocess.run([str(viewer), "--list", "--brief", "--recursive", str(executable)],
                            capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert "skillhost_launcher" in listed, listed
    assert "pyi_rth_cryptography_openssl" in listed, listed  # a hook the app needs stays
    assert not {"pyi_rth_inspect", "pyi_rth_pkgutil", "pyi_rth_multiprocessing"} & set(listed), listed
    # The modules of the app's compressed archive (PYZ), listed through the executable's own archive.
    assert {"skillhost.worker._main", "concurrent.futures.thread", "http.client"} <= set(listed), listed
    kept = [name for name in listed if name.split(".")[0] in ("multiprocessing", "xmlrpc")
            or name == "concurrent.futures.process"]
    assert not kept, kept


def test_flipped_artifact_byte_is_refused(chain: Chain, tmp_path: Path) -> None:
    (artifact,) = chain.artifacts
    copy = tmp_path / artifact.name
    data = bytearray(artifact.read_bytes())
    data[len(data) // 2] ^= 1
    copy.write_bytes(data)
    done = _verify(chain, chain.evidence, [copy])
    assert done.returncode == 1
    assert "QE_ARTIFACT_DIGEST_MISMATCH" in done.stdout


@pytest.mark.parametrize("name", ["platform-linux.dsse.json", "provenance-linux.dsse.json", "aggregate.dsse.json"])
@pytest.mark.parametrize("where", [0.1, 0.5, 0.9])
def test_flipped_statement_byte_is_refused(chain: Chain, tmp_path: Path, name: str, where: float) -> None:
    evidence = _copy_evidence(chain, tmp_path)
    path = evidence / name
    data = bytearray(path.read_bytes())
    i = int(len(data) * where)
    data[i] = ord("A") if data[i] != ord("A") else ord("B")
    path.write_bytes(data)
    done = _verify(chain, evidence, chain.artifacts)
    assert done.returncode == 1
    # A byte in the envelope's "signatures" key leaves an envelope without one: QE_SIGNATURE_MISSING.
    assert any(code in done.stdout for code in ("QE_SIGNATURE_INVALID", "QE_JSON_MALFORMED", "QE_SCHEMA_INVALID",
                                                "QE_SIGNATURE_MISSING"))
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize(("name", "code"), [("platform-linux.dsse.json", "QE_PLATFORM_MISSING"),
                                            ("provenance-linux.dsse.json", "QE_PROVENANCE_MISSING"),
                                            ("aggregate.dsse.json", "QE_AGGREGATE_MISSING")])
def test_removed_statement_is_refused(chain: Chain, tmp_path: Path, name: str, code: str) -> None:
    evidence = _copy_evidence(chain, tmp_path)
    (evidence / name).unlink()
    done = _verify(chain, evidence, chain.artifacts)
    assert done.returncode == 1
    assert code in done.stdout


def _resign(path: Path, key_path: Path, mutate) -> None:  # type: ignore[no-untyped-def]
    from desktop_qualify.qualify_trust import load_private_key

    envelope = json.loads(path.read_bytes())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    mutate(statement)
    key = load_private_key(key_path) if key_path.exists() else generate_private_key(key_path)
    path.write_bytes(sign_envelope(canonical_bytes(statement), key))


def test_statement_signed_by_an_unknown_key_is_refused(chain: Chain, tmp_path: Path) -> None:
    evidence = _copy_evidence(chain, tmp_path)
    _resign(evidence / "platform-linux.dsse.json", tmp_path / "stranger.pem", lambda s: None)
    done = _verify(chain, evidence, chain.artifacts)
    assert done.returncode == 1
    assert "QE_SIGNER_UNTRUSTED" in done.stdout


def test_statement_for_another_sha_is_refused(chain: Chain, tmp_path: Path) -> None:
    evidence = _copy_evidence(chain, tmp_path)
    other = "0123456789abcdef0123456789abcdef01234567"

    def to_other_sha(statement: dict) -> None:  # type: ignore[type-arg]
        statement["predicate"]["run"]["sha"] = other

    # Signed with the trusted platform key: only the content check can catch it.
    _resign(evidence / "platform-linux.dsse.json", chain.platform_key, to_other_sha)
    done = _verify(chain, evidence, chain.artifacts)
    assert done.returncode == 1
    assert "QE_SHA_MISMATCH" in done.stdout
    assert "QE_AGGREGATE_MISMATCH" in done.stdout


def test_verify_names_the_candidate_sha(chain: Chain) -> None:
    ok = _verify(chain, chain.evidence, chain.artifacts, "--sha", chain.sha)
    assert ok.returncode == 0
    wrong = _verify(chain, chain.evidence, chain.artifacts, "--sha", "f" * 40)
    assert wrong.returncode == 1
    assert "QE_SHA_MISMATCH" in wrong.stdout


def test_audit_checks_the_historical_run_offline(chain: Chain, tmp_path: Path) -> None:
    report, html = tmp_path / "audit.json", tmp_path / "audit.html"
    done = qualify("audit", "--policy", chain.policy, "--evidence", chain.evidence, "--json", report,
                   "--html", html)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(report.read_text())["runs"][0]["decision"]["decision"] == "QUALIFIED"
    assert "QUALIFIED" in html.read_text()


def test_a_bundle_of_the_real_chain_audits_offline_to_a_pass(chain: Chain, tmp_path: Path) -> None:
    bundle = tmp_path / f"qualification-{chain.sha}.qualify-bundle.zip"
    done = qualify("bundle", "--policy", chain.policy, "--evidence", chain.evidence, "--out", bundle)
    assert done.returncode == 0, done.stdout + done.stderr
    # The auditor holds the bundle and the checkout's policy; the evidence folder is gone.
    report = tmp_path / "audit.json"
    done = qualify("audit", "--policy", chain.policy, "--bundle", bundle, "--json", report)
    assert done.returncode == 0, done.stdout + done.stderr
    [run] = json.loads(report.read_text())["runs"]
    assert run["decision"]["decision"] == "QUALIFIED"
    assert run["decision"]["candidate_sha"] == chain.sha


def test_empty_evidence_folder_is_refused(chain: Chain, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = _verify(chain, empty, chain.artifacts)
    assert done.returncode == 1
    assert "QE_EVIDENCE_MISSING" in done.stdout


@pytest.mark.parametrize(("checkout", "code"), [
    (["checkout", "-q", "--detach"], "QE_REF_NOT_MAIN"),
    (["checkout", "-q", "v1.0"], "QE_REF_NOT_MAIN"),
    (["checkout", "-q", "-b", "release"], "QE_REF_NOT_MAIN"),
])
def test_gate_refuses_anything_but_main_even_at_the_same_commit(chain: Chain, tmp_path: Path,
                                                                checkout: list[str], code: str) -> None:
    """A detached HEAD, a v* tag or another branch at main's own commit is refused; nothing is written."""
    repo = tmp_path / "repo"
    shutil.copytree(chain.source_repo, repo)
    git(repo, "tag", "v1.0")
    git(repo, *checkout)
    assert git(repo, "rev-parse", "HEAD") == chain.sha
    policy = repo / "policies" / "local.toml"  # the copy's own policy, keys and app
    done = qualify("produce", "--policy", policy, "--platform", "linux", "--out", tmp_path / "out")
    assert done.returncode == 1, done.stderr
    assert code in done.stderr
    assert not (tmp_path / "out").exists()


def test_the_chain_writes_slsa_provenance_of_the_artifact_by_the_platform_key(chain: Chain) -> None:
    """The producer's provenance: SLSA Provenance v1 by the in-toto framework's definitions, its subject the
    artifact, the gated commit, the run, the committed policy, and the platform key as builder."""
    from desktop_qualify.qualify_trust._keys import keyid_of, load_private_key
    from support.slsa_format import check_slsa_provenance

    envelope = json.loads((chain.evidence / "provenance-linux.dsse.json").read_bytes())
    payload = base64.b64decode(envelope["payload"])
    provenance = check_slsa_provenance(payload)
    statement = json.loads(payload)
    (artifact,) = chain.artifacts
    assert statement["subject"] == [{"name": artifact.name,
                                     "digest": {"sha256": hashlib.sha256(artifact.read_bytes()).hexdigest()}}]
    parameters = statement["predicate"]["buildDefinition"]["externalParameters"]
    assert parameters["policy"] == {"path": "policies/local.toml",
                                    "sha256": hashlib.sha256(chain.policy.read_bytes()).hexdigest()}
    assert provenance.build_definition.resolved_dependencies[0].digest["gitCommit"] == chain.sha
    assert provenance.run_details.metadata.invocation_id.endswith("/runs/e2e-run-1/attempts/1")
    keyid = keyid_of(load_private_key(chain.platform_key).public_key())
    assert provenance.run_details.builder.id.endswith(f"/ed25519/{keyid}")
    assert envelope["signatures"][0]["keyid"] == keyid
