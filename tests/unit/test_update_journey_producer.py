"""The producer's update journey on a small fake app: what it records when the state survives, and when not.

The fake app is a POSIX shell script in a .tar.gz (the archive installer installs it for real), with the
probe and the two state verbs; the previous and the candidate version differ only in how `state check`
behaves. The producer's verdicts must be the shared rule's (``update_facts``), which the verifier applies
again to the signed record. Every journey runs both unconfined and under the real Linux adapter (bubblewrap):
confined, the user state in the kept HOME must still survive from one run of the app to the next.
"""

from __future__ import annotations

import hashlib
import io
import sys
import tarfile
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import (
    ArtifactRef,
    InstallRecord,
    LaunchProbeRecord,
    PreviousRelease,
    UpdateRecord,
)
from desktop_qualify.producer._launch import RunPlan, launch_probe
from desktop_qualify.producer._update import UpdatePlan, run_update
from desktop_qualify.producer.confinement import StageRunner
from desktop_qualify.producer.previous._previous import AuditedPrevious
from desktop_qualify.qualify_files import file_sha256
from desktop_qualify.qualify_verify import UpdateRules, update_facts
from support.stage_runners import confined_runner, unconfined_runner

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fake app is a POSIX shell "
                                                                             "script; the journey pins linux")

PREVIOUS, CANDIDATE = "1" * 40, "2" * 40
PROBE = ["{executable}", "probe", "--record", "{record}"]
WRITE = ["{executable}", "state", "write", "--record", "{record}"]
CHECK = ["{executable}", "state", "check", "--record", "{record}"]
NEWER = "APP_STATE_NEWER"

# MODE: plain (opens any state), guard (refuses state a newer version marked), marks (marks the state as opened
# by a newer version, outside what the digest covers), lossy (loses the state when it opens it).
_APP = r"""#!/bin/sh
BUILD=__BUILD__
MODE=__MODE__
S="$HOME/.fake-app"
H="\"app_version\":\"1.0.0\",\"build_sha\":\"$BUILD\",\"platform\":\"linux\""
rec() { printf '%s\n' "$1" > "$REC"; }
if [ "$1" = probe ]; then
  REC="$3"; me=$(sha256sum "$0" | cut -d' ' -f1)
  rec "{\"kind\":\"qualify-probe\",\"version\":2,$H,\"executable_sha256\":\"$me\",\"checks\":[],\
\"isolation_layers\":[]}"
  exit 0
fi
verb="$2"; REC="$4"
state() {
  rec "{\"kind\":\"qualify-state\",\"version\":1,\"verb\":\"$verb\",$H,\"observed\":\"$1\",\"code\":$2,\
\"state_sha256\":$3,\"detail\":\"\"}"
}
if [ "$verb" = write ]; then
  mkdir -p "$S"; echo "the user's notes" > "$S/data"
  state allow null "\"$(sha256sum "$S/data" | cut -d' ' -f1)\""; exit 0
fi
[ "$MODE" = lossy ] && rm -rf "$S"
if [ "$MODE" = guard ] && [ -f "$S/newer" ]; then state reject "\"APP_STATE_NEWER\"" null; exit 3; fi
if [ ! -f "$S/data" ]; then state reject "\"APP_STATE_MISSING\"" null; exit 3; fi
[ "$MODE" = marks ] && touch "$S/newer"
state allow null "\"$(sha256sum "$S/data" | cut -d' ' -f1)\""
"""


def _release(folder: Path, build: str, mode: str) -> Path:
    """The app as a .tar.gz holding app/app (mode 0755)."""
    folder.mkdir(parents=True, exist_ok=True)
    body = _APP.replace("__BUILD__", build).replace("__MODE__", mode).encode()
    path = folder / f"fake-{build[:12]}-linux-x86_64.tar.gz"
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tf:
        folder_info = tarfile.TarInfo("app")
        folder_info.type, folder_info.mode = tarfile.DIRTYPE, 0o755
        tf.addfile(folder_info)
        info = tarfile.TarInfo("app/app")
        info.size, info.mode = len(body), 0o755
        tf.addfile(info, io.BytesIO(body))
    return path


def _exe_sha(build: str, mode: str) -> str:
    return hashlib.sha256(_APP.replace("__BUILD__", build).replace("__MODE__", mode).encode()).hexdigest()


def _no_export(dest: Path) -> Path:
    raise AssertionError("the app's own subcommands need no source export")


@pytest.fixture(params=["unconfined", "bubblewrap"])
def runner(request: pytest.FixtureRequest) -> StageRunner:
    return unconfined_runner() if request.param == "unconfined" else confined_runner()


def _journey(tmp_path: Path, runner: StageRunner, *, previous_mode: str, candidate_mode: str,
             downgrade: str) -> tuple[UpdateRecord, UpdateRules]:
    previous = _release(tmp_path / "previous", PREVIOUS, previous_mode)
    candidate = _release(tmp_path / "candidate", CANDIDATE, candidate_mode)
    facts = PreviousRelease(bundle_sha256="b" * 64, sha=PREVIOUS, run_id="local-previous",
                            artifact=ArtifactRef(name=previous.name, size=previous.stat().st_size,
                                                 sha256=file_sha256(previous)),
                            policy_sha256="c" * 64, audit_decision="QUALIFIED")
    rules = UpdateRules(platform="linux", candidate_sha=CANDIDATE, candidate_artifact_sha256=file_sha256(candidate),
                        candidate_executable_sha256=_exe_sha(CANDIDATE, candidate_mode), installer="archive",
                        executable="app/app", state_write=tuple(WRITE), state_check=tuple(CHECK),
                        downgrade="refuse" if downgrade == "refuse" else "allow",
                        downgrade_code=NEWER if downgrade == "refuse" else None, probe_command=tuple(PROBE),
                        display="none", probe_checks=(), layers=None, candidate_layers=(),
                        signed_only=False)

    def plan_for(argv: list[str], timeout: int) -> RunPlan:
        return RunPlan(argv=argv, display="none", timeout=timeout, export_source=_no_export, runner=runner,
                       stage="update")

    def probe(prefix: Path, installed: InstallRecord, home: Path) -> LaunchProbeRecord:
        return launch_probe(prefix=prefix, install=installed, platform="linux",
                            gate_sha=CANDIDATE, plan=plan_for(PROBE, 30), required_checks=[], required_layers=None,
                            kept_home=home)

    plan = UpdatePlan(previous=AuditedPrevious(facts, previous), candidate_archive=candidate, rules=rules,
                      plan_for=plan_for, probe=probe, state_timeout=30)
    record = run_update(plan, tmp_path / "work" / "update")
    # Every run of the app in the journey (its probe too) went through the runner, recorded as the update stage.
    assert runner.facts
    assert {facts.stage for facts in runner.facts} == {"update"}
    return record, rules


def test_state_kept_rolled_back_and_a_guarded_downgrade_refused(tmp_path: Path, runner: StageRunner) -> None:
    record, rules = _journey(tmp_path, runner, previous_mode="guard", candidate_mode="marks", downgrade="refuse")
    assert record.failed_steps == [], update_facts(record, rules).problems
    assert record.passed
    written, upgraded, downgraded = (record.write_state.report, record.upgrade_check.report,
                                     record.downgrade_check.report)
    assert written is not None
    assert upgraded is not None
    assert downgraded is not None
    assert upgraded.state_sha256 == written.state_sha256
    assert (downgraded.observed, downgraded.code) == ("reject", NEWER)
    assert record.upgrade_probe.passed


def test_state_lost_on_upgrade_fails_the_journey(tmp_path: Path, runner: StageRunner) -> None:
    record, rules = _journey(tmp_path, runner, previous_mode="guard", candidate_mode="lossy", downgrade="refuse")
    assert not record.passed
    assert "upgrade-check" in record.failed_steps
    assert not record.upgrade_check.passed
    assert record.upgrade_check.report is not None
    assert record.upgrade_check.report.code == "APP_STATE_MISSING"
    # The rollback restores the state kept before the upgrade: the previous version finds it.
    assert record.rollback_check.passed
    assert record.failed_steps == list(update_facts(record, rules).failed)


def test_a_downgrade_the_policy_forbids_but_the_app_allows_fails(tmp_path: Path, runner: StageRunner) -> None:
    record, _ = _journey(tmp_path, runner, previous_mode="plain", candidate_mode="marks", downgrade="refuse")
    assert record.failed_steps == ["downgrade-check"]
    assert record.downgrade_check.report is not None
    assert record.downgrade_check.report.observed == "allow"


def test_an_allowed_downgrade_passes_with_an_app_that_opens_newer_state(tmp_path: Path, runner: StageRunner) -> None:
    record, _ = _journey(tmp_path, runner, previous_mode="plain", candidate_mode="marks", downgrade="allow")
    assert record.passed
