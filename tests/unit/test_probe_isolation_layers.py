"""The producer's launch probe fails closed on the policy's requirements: a required check the app does not
report as passed, a required isolation layer not applied, or an app that refuses to start, fails the probe, and
the record says why. Where the policy has no ``[isolation]``, no layer is required."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import (
    AppCheck,
    Code,
    InstallRecord,
    IsolationLayer,
    ProbeReport,
    QualificationError,
)
from desktop_qualify.producer import _launch
from desktop_qualify.producer._launch import RunPlan, launch_probe
from desktop_qualify.qualify_archive import manifest_sha256, tree_manifest
from desktop_qualify.qualify_files import file_sha256
from desktop_qualify.qualify_verify import probe_facts
from support.stage_runners import unconfined_runner

pytestmark = pytest.mark.skipif(sys.platform.startswith("win"), reason="the fake app is a POSIX shell script")

SHA = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
LINUX = ["no-new-privs", "landlock-fs", "landlock-net", "seccomp"]
CHECKS = ["catalog-verified", "worker-entry-resolvable", "isolation"]
PROBE_ARGV = ["{executable}", "probe", "--record", "{record}"]


def _layers(*off: str) -> list[dict[str, object]]:
    return [{"name": name, "applied": name not in off, "detail": ""} for name in LINUX]


def _checks(*failed: str) -> list[dict[str, object]]:
    return [{"name": name, "passed": name not in failed, "detail": "" if name not in failed else "broken"}
            for name in CHECKS]


def _installed(tmp_path: Path, record: str | None, exit_code: int, stdout: str = "") -> tuple[Path, InstallRecord]:
    """A one-file 'installed app' that writes ``record`` to its --record path, prints ``stdout``, exits."""
    prefix = tmp_path / "prefix"
    exe = prefix / "skillhost" / "skillhost"
    exe.parent.mkdir(parents=True)
    write = f"cat > \"$3\" <<'EOF'\n{record}\nEOF\n" if record is not None else ""
    exe.write_text(f"#!/bin/sh\n{write}echo '{stdout}'\nexit {exit_code}\n", encoding="utf-8")
    exe.chmod(0o755)
    install = InstallRecord(artifact_sha256="1" * 64, method="archive", file_count=1,
                            total_bytes=exe.stat().st_size, manifest_sha256=manifest_sha256(tree_manifest(prefix)),
                            executable="skillhost/skillhost", executable_sha256=file_sha256(exe), duration_ms=1,
                            passed=True)
    return prefix, install


def _record(exe_sha: str, *, checks: list[dict[str, object]] | None = None,
            layers: list[dict[str, object]] | None = None) -> str:
    return json.dumps({"kind": "qualify-probe", "version": 2, "app_version": "0.1.0", "build_sha": SHA,
                       "platform": "linux", "executable_sha256": exe_sha,
                       "checks": _checks() if checks is None else checks,
                       "isolation_layers": _layers() if layers is None else layers})


def _plan() -> RunPlan:
    def no_export(dest: Path) -> Path:
        raise AssertionError("the app's own subcommand needs no source export")
    return RunPlan(argv=PROBE_ARGV, display="none", timeout=30, export_source=no_export, runner=unconfined_runner(),
                   stage="probe")


def _report(*, checks: list[dict[str, object]], layers: list[dict[str, object]]) -> ProbeReport:
    return ProbeReport(app_version="0.1.0", build_sha=SHA, platform="linux", executable_sha256="0" * 64,
                       checks=[AppCheck(**c) for c in checks],  # type: ignore[arg-type]
                       isolation_layers=[IsolationLayer(**entry) for entry in layers])  # type: ignore[arg-type]


def _facts(report: ProbeReport, *, required_checks: list[str] = CHECKS,
           required_layers: list[str] | None = LINUX):  # type: ignore[no-untyped-def]
    return probe_facts(report=report, exit_code=0, timed_out=False, platform="linux", sha=SHA,
                       installed_executable_sha256="0" * 64, required_checks=required_checks,
                       required_layers=required_layers)


def test_a_required_layer_not_applied_fails_the_probe_and_says_which() -> None:
    facts = _facts(_report(checks=_checks(), layers=_layers("seccomp")))
    assert not facts.passed
    assert facts.problems == ("the probe's isolation: required isolation layer(s) not applied: seccomp",)
    assert _facts(_report(checks=_checks(), layers=_layers())).passed


def test_without_isolation_in_the_policy_no_layer_is_required() -> None:
    assert _facts(_report(checks=_checks(), layers=[]), required_layers=None).passed
    # ... and with it, no layers is a failure (fail closed).
    assert not _facts(_report(checks=_checks(), layers=[]), required_layers=LINUX).passed


def test_the_app_cannot_drop_or_fail_a_required_check() -> None:
    missing = _facts(_report(checks=[c for c in _checks() if c["name"] != "catalog-verified"], layers=_layers()))
    assert missing.problems == ("required check(s) not reported: catalog-verified",)
    failed = _facts(_report(checks=_checks("isolation"), layers=_layers()))
    assert failed.problems == ("check(s) reported failed: isolation",)
    twice = _facts(_report(checks=[*_checks(), _checks()[0]], layers=_layers()))
    assert twice.problems == ("check 'catalog-verified' is reported 2 times",)
    # A check the policy does not require still fails the probe when the app reports it failed ...
    extra = _facts(_report(checks=[*_checks(), {"name": "gpu", "passed": False, "detail": ""}], layers=_layers()))
    assert extra.problems == ("check(s) reported failed: gpu",)
    # ... and an app that reports more checks than required, all passed, passes.
    assert _facts(_report(checks=[*_checks(), {"name": "gpu", "passed": True, "detail": ""}], layers=_layers())).passed


def test_the_producer_reads_the_record_file_and_records_the_missing_layer(tmp_path: Path) -> None:
    prefix, install = _installed(tmp_path, None, 0)
    # The script cannot write its own digest before it exists: rewrite it with the record it must write.
    exe = prefix / install.executable
    record = _record(file_sha256(exe), layers=_layers("landlock-net"))
    prefix, install = _installed(tmp_path / "again", record, 0, stdout="log line on stdout, never parsed")
    result = launch_probe(prefix=prefix, install=install, platform="linux", gate_sha=SHA, plan=_plan(),
                          required_checks=CHECKS, required_layers=LINUX)
    assert result.report is not None
    assert [entry.name for entry in result.report.isolation_layers] == LINUX
    assert not result.passed
    assert "required isolation layer(s) not applied: landlock-net" in result.stderr_excerpt
    assert (result.command, result.display) == (PROBE_ARGV, "none")


def test_the_producer_records_the_apps_own_refusal(tmp_path: Path) -> None:
    refusal = json.dumps({"kind": "skillhost-error", "version": 1, "code": "CC_SKILL_ISOLATION_UNAVAILABLE",
                          "message": "required sandbox layer(s) not applied"})
    prefix, install = _installed(tmp_path, None, 3, stdout=refusal)
    record = launch_probe(prefix=prefix, install=install, platform="linux", gate_sha=SHA, plan=_plan(),
                          required_checks=CHECKS, required_layers=LINUX)
    assert not record.passed
    assert record.exit_code == 3
    assert record.report is None
    assert "the app wrote no record" in record.stderr_excerpt
    assert "CC_SKILL_ISOLATION_UNAVAILABLE" in record.stderr_excerpt


def test_a_display_the_producer_cannot_give_fails_the_stage_without_running_the_app(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    @contextmanager
    def unavailable(kind: str) -> Iterator[dict[str, str]]:
        raise QualificationError(Code.ENVIRONMENT, f"display kind {kind!r} is not available on this machine")
        yield {}

    monkeypatch.setattr(_launch, "display_env", unavailable)
    prefix, install = _installed(tmp_path, _record("0" * 64), 0)
    plan = RunPlan(argv=PROBE_ARGV, display="xvfb", timeout=30, export_source=_plan().export_source,
                   runner=unconfined_runner(), stage="probe")
    record = launch_probe(prefix=prefix, install=install, platform="linux", gate_sha=SHA, plan=plan,
                          required_checks=CHECKS, required_layers=LINUX)
    assert (record.passed, record.exit_code, record.display) == (False, None, "xvfb")
    assert plan.runner.facts == [], "the app ran"
    assert record.stderr_excerpt.startswith("not run: display kind 'xvfb'")
