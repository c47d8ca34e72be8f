"""The producer's launch probe fails closed on the worker's sandbox: a required layer the app does not report
as applied, or an app that refuses to start without one, fails the probe, and the record says why."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import InstallRecord, IsolationLayer, ProbeReport
from desktop_qualify.producer._launch import launch_probe
from desktop_qualify.qualify_archive import manifest_sha256, tree_manifest
from desktop_qualify.qualify_files import file_sha256
from desktop_qualify.qualify_verify import probe_facts

pytestmark = pytest.mark.skipif(sys.platform.startswith("win"), reason="the fake app is a POSIX shell script")

SHA = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
LINUX = ["no-new-privs", "landlock-fs", "landlock-net", "seccomp"]


def _layers(*off: str) -> list[dict[str, object]]:
    return [{"name": name, "applied": name not in off, "detail": ""} for name in LINUX]


def _installed(tmp_path: Path, stdout: str, exit_code: int) -> tuple[Path, InstallRecord]:
    """A one-file 'installed app' that prints ``stdout`` and exits ``exit_code``, with its install record."""
    prefix = tmp_path / "prefix"
    exe = prefix / "skillhost" / "skillhost"
    exe.parent.mkdir(parents=True)
    exe.write_text(f"#!/bin/sh\ncat <<'EOF'\n{stdout}\nEOF\nexit {exit_code}\n", encoding="utf-8")
    exe.chmod(0o755)
    record = InstallRecord(artifact_sha256="1" * 64, method="unpack", file_count=1, total_bytes=exe.stat().st_size,
                           manifest_sha256=manifest_sha256(tree_manifest(prefix)), executable="skillhost/skillhost",
                           executable_sha256=file_sha256(exe), duration_ms=1, passed=True)
    return prefix, record


def _probe_line(exe_sha: str, layers: list[dict[str, object]]) -> str:
    return json.dumps({"kind": "skillhost-probe", "version": 1, "app_version": "0.1.0", "build_sha": SHA,
                       "built_at": "2026-12-02T00:00:00Z", "platform": "linux", "frozen": True,
                       "executable_sha256": exe_sha,
                       "worker_entry_resolvable": True, "catalog_verified": True, "isolation_available": True,
                       "isolation_layers": layers})


def _run(tmp_path: Path, layers: list[dict[str, object]]) -> tuple[bool, str]:
    # A script cannot print its own digest, so this probe also fails on the digest; the excerpt says both.
    prefix, install = _installed(tmp_path, _probe_line("0" * 64, layers), 0)
    record = launch_probe(prefix=prefix, install=install, platform="linux", gate_sha=SHA, timeout=30,
                          required_layers=LINUX)
    assert record.report is not None
    assert [entry.name for entry in record.report.isolation_layers] == LINUX
    return record.passed, record.stderr_excerpt


def test_a_required_layer_not_applied_fails_the_probe_and_says_which() -> None:
    report = ProbeReport(app_version="0.1.0", build_sha=SHA, platform="linux", executable_sha256="0" * 64,
                         worker_entry_resolvable=True, catalog_verified=True, isolation_available=True,
                         isolation_layers=[IsolationLayer(**entry) for entry in _layers("seccomp")])  # type: ignore[arg-type]
    facts = probe_facts(report=report, exit_code=0, timed_out=False, platform="linux", sha=SHA,
                        installed_executable_sha256="0" * 64, required_layers=LINUX)
    assert not facts.passed
    assert facts.layer_problems == ("required isolation layer(s) not applied: seccomp",)
    whole = probe_facts(report=report.model_copy(update={"isolation_layers": [
        IsolationLayer(**entry) for entry in _layers()]}), exit_code=0, timed_out=False, platform="linux",  # type: ignore[arg-type]
        sha=SHA, installed_executable_sha256="0" * 64, required_layers=LINUX)
    assert whole.passed
    assert whole.layer_problems == ()


def test_the_producer_records_the_missing_layer(tmp_path: Path) -> None:
    passed, excerpt = _run(tmp_path, _layers("landlock-net"))
    assert not passed
    assert "required isolation layer(s) not applied: landlock-net" in excerpt


def test_the_producer_records_the_apps_own_refusal_code(tmp_path: Path) -> None:
    refusal = json.dumps({"kind": "skillhost-error", "version": 1, "code": "CC_SKILL_ISOLATION_UNAVAILABLE",
                          "message": "required sandbox layer(s) not applied: ['seccomp']"})
    prefix, install = _installed(tmp_path, refusal, 3)
    record = launch_probe(prefix=prefix, install=install, platform="linux", gate_sha=SHA, timeout=30,
                          required_layers=LINUX)
    assert not record.passed
    assert record.exit_code == 3
    assert record.report is None
    assert record.stderr_excerpt.startswith("the app refused: CC_SKILL_ISOLATION_UNAVAILABLE: required sandbox")
