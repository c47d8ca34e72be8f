"""SIGKILL at every producer stage, then a rerun into the same folder (issue 7, item 7).

One output folder takes one kill per stage, in stage order, each run starting
over whatever the run before it left; then a rerun must be QUALIFIED. Because
each run is killed one stage later than the one before it, every leftover that
is not cleaned up is still there when the final rerun runs all the way
through, and every run shows, up to its kill, that it got past the leftovers
of the one before.

The kill inside the real PyInstaller is the session's reference fixture (its
real rerun is the session's one real build); the runs here use the cached
build (producer_child.py). The gate and the last stage, sign and emit (after
the journey: the pipeline signs once every app process has ended), take
milliseconds, so they are held at their start and killed there every time;
install, launch probe and journey are killed as they run (the latter two while
the installed app runs, confined).
Two more kills on the qualified folder show when an earlier run's evidence
goes: never before the gate has passed, always right after.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from desktop_qualify.qualify_files import atomic_leftovers, remove_output
from faultkit import (
    PLATFORM,
    STAGES,
    App,
    KilledRun,
    ProducerJob,
    Reference,
    candidate_artifacts,
    codes,
    kill_in_stage,
    kill_inside_write_atomic,
    linux_only,
    listing,
    snapshot,
    verify,
)
from support.chain import qualify

pytestmark = [pytest.mark.slow, linux_only]

STATEMENT = f"platform-{PLATFORM}.dsse.json"
AGGREGATE = "aggregate.dsse.json"
PROVENANCE = f"provenance-{PLATFORM}.dsse.json"
KILLED_AFTER_THE_GATE = STAGES[1:]


@dataclass
class Killed:
    app: App
    out: Path
    steps: dict[str, KilledRun] = field(default_factory=dict)
    planted: list[str] = field(default_factory=list)
    leftover_verify: subprocess.CompletedProcess[str] | None = None
    final: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    final_evidence: list[str] = field(default_factory=list)
    final_artifacts: list[str] = field(default_factory=list)
    final_seconds: float = 0.0
    qualified_before: dict[str, bytes] = field(default_factory=dict)
    after_gate_kill: dict[str, bytes] = field(default_factory=dict)
    gate_kill_verify: subprocess.CompletedProcess[str] | None = None
    after_build_start_kill: KilledRun | None = None
    records_after_build_start_kill: list[str] = field(default_factory=list)
    after_build_kill: dict[str, bytes] = field(default_factory=dict)

    @property
    def evidence(self) -> Path:
        return self.out / "evidence"

    def evidence_and_records(self) -> dict[str, bytes]:
        return snapshot(self.evidence) | {f"records/{k}": v for k, v in snapshot(self.out / "records").items()}


def _plant_leftovers(killed: Killed, reference: Reference) -> None:
    """What a job killed inside write_atomic, and a build killed while packing, leave behind."""
    statement = (reference.out / "evidence" / STATEMENT).read_bytes()
    kill_inside_write_atomic(killed.evidence / STATEMENT, statement[: len(statement) // 2], killed.app.root)
    partial = killed.out / "artifacts" / f".{reference.archive.name}.partial"
    partial.parent.mkdir(parents=True, exist_ok=True)  # no killed run published: the folder may not exist yet
    partial.write_bytes(reference.archive.read_bytes()[:100_000])
    killed.planted = [*listing(killed.evidence), f"artifacts/{partial.name}"]
    killed.leftover_verify = verify(killed.app, killed.evidence, candidate_artifacts(killed.out))


@pytest.fixture(scope="module")
def killed(app: App, reference: Reference) -> Killed:
    killed = Killed(app, app.root / "killed")
    for stage in STAGES:
        # The kill inside PyInstaller is the reference fixture's, in a folder of its own.
        killed.steps[stage] = reference.build_kill if stage == "build" else kill_in_stage(
            app, killed.out, stage, f"kill-{stage.replace(' ', '-')}", cached=reference)
    _plant_leftovers(killed, reference)

    # The rerun into the same folder, all the way through.
    evidence = killed.evidence
    started = time.monotonic()
    killed.final["produce"] = qualify_cached(app, killed.out, reference)
    killed.final_seconds = time.monotonic() - started
    killed.final["aggregate"] = qualify("aggregate", "--policy", app.policy, "--evidence", evidence, "--out", evidence)
    killed.final["verify"] = verify(app, evidence, candidate_artifacts(killed.out))
    killed.final_evidence = listing(evidence)
    killed.final_artifacts = listing(killed.out / "artifacts")

    # A kill before the gate passed leaves the qualified folder exactly as it was ...
    killed.qualified_before = killed.evidence_and_records()
    kill_in_stage(app, killed.out, "source gate", "kill-gate-again", cached=reference)
    killed.after_gate_kill = killed.evidence_and_records()
    killed.gate_kill_verify = verify(app, evidence, candidate_artifacts(killed.out))

    # ... and so does a kill once it passed: the earlier run's output is replaced only when a run has emitted.
    killed.after_build_start_kill = kill_in_stage(app, killed.out, "build", "kill-build-start", cached=reference,
                                                  hold=True)
    killed.records_after_build_start_kill = listing(killed.out / "records" / PLATFORM)
    killed.after_build_kill = killed.evidence_and_records()
    return killed


def qualify_cached(app: App, out: Path, reference: Reference) -> subprocess.CompletedProcess[str]:
    """``qualify produce`` through producer_child.py on the cached build, run to its end."""
    job = ProducerJob(app, out, "rerun", cached=reference)
    code, stdout, stderr = job.finish()
    return subprocess.CompletedProcess(job.proc.args, code, stdout, stderr)


def test_a_kill_in_the_gate_of_a_fresh_job_writes_nothing(killed: Killed) -> None:
    step = killed.steps["source gate"]
    assert step.report.last_line.endswith("source gate   ..."), step.report.stderr
    # Nothing on disk changes before the gate passes: not even the output folder exists.
    assert step.evidence == []
    assert step.verify is None


@pytest.mark.parametrize("stage", KILLED_AFTER_THE_GATE)
def test_a_kill_leaves_nothing_that_verifies(killed: Killed, stage: str) -> None:
    step = killed.steps[stage]
    # The kill landed inside the stage: its start is the last progress line.
    assert step.report.last_line.endswith(f"{stage:<13} ..."), step.report.stderr
    # No statement, no temporary file: the job never reached its one write into the evidence folder.
    assert step.evidence == [], step.evidence
    if step.verify is not None:
        assert step.verify.returncode == 1, step.verify.stdout + step.verify.stderr
        assert codes(step.verify.stdout), step.verify.stdout
        assert "QUALIFIED" not in step.verify.stdout.replace("NOT QUALIFIED", "")
    assert "Traceback" not in step.report.stderr


@pytest.mark.parametrize("stage", KILLED_AFTER_THE_GATE)
def test_each_run_got_past_the_leftovers_of_the_killed_run_before_it(killed: Killed, stage: str) -> None:
    """Every stage the run finished before its kill finished well, over the previous run's leftovers."""
    step = killed.steps[stage]
    finished = [(name, rest) for name, rest in step.progress if rest != "..."]
    assert [name for name, _ in finished] == list(STAGES[: STAGES.index(stage)]), step.report.stderr
    for name, rest in finished:
        assert "FAILED" not in rest, f"{name}: {rest}"
        assert "passed=False" not in rest, f"{name}: {rest}"


def test_a_leftover_temporary_statement_is_refused_never_read(killed: Killed) -> None:
    (tmp,) = [name for name in killed.planted if name.endswith(".tmp")]
    assert tmp.startswith(f".{STATEMENT}.")
    checked = killed.leftover_verify
    assert checked is not None
    assert checked.returncode == 1
    assert "QE_EVIDENCE_UNEXPECTED" in checked.stdout
    assert tmp in checked.stdout
    # Refused as a stray file: never parsed, so never a signature or schema finding.
    assert not codes(checked.stdout) & {"QE_JSON_MALFORMED", "QE_SIGNATURE_INVALID", "QE_SCHEMA_INVALID"}


def test_the_rerun_after_every_kill_is_qualified(killed: Killed) -> None:
    for name in ("produce", "aggregate", "verify"):
        done = killed.final[name]
        assert done.returncode == 0, f"{name}:\n{done.stdout}\n{done.stderr}"
    assert "QUALIFIED" in killed.final["verify"].stdout
    # The killed writer's temporary statement and the partial archive are gone, not just outnumbered.
    assert killed.final_evidence == [AGGREGATE, STATEMENT, PROVENANCE]
    (archive,) = candidate_artifacts(killed.out)
    assert killed.final_artifacts == [archive.name]


def test_the_real_rerun_after_a_kill_inside_pyinstaller_is_qualified(reference: Reference) -> None:
    for done in (reference.rerun, reference.aggregate, reference.verify):
        assert done.returncode == 0, done.stdout + done.stderr
    assert "QUALIFIED" in reference.verify.stdout
    assert listing(reference.out / "evidence") == [AGGREGATE, STATEMENT, PROVENANCE]


def test_a_kill_in_the_gate_leaves_an_earlier_runs_evidence_alone(killed: Killed) -> None:
    assert killed.after_gate_kill == killed.qualified_before
    assert set(killed.qualified_before) >= {AGGREGATE, STATEMENT, f"records/{PLATFORM}/journey.json"}
    assert killed.gate_kill_verify is not None
    assert killed.gate_kill_verify.returncode == 0, killed.gate_kill_verify.stdout


def test_a_kill_after_the_gate_leaves_the_earlier_runs_output_in_place(killed: Killed) -> None:
    """A failed run loses nothing: the job wrote into its staging folder, never over the last good output."""
    step = killed.after_build_start_kill
    assert step is not None
    assert step.report.last_line.endswith("build         ..."), step.report.stderr
    assert step.evidence == [AGGREGATE, STATEMENT, PROVENANCE]
    assert killed.after_build_kill == killed.qualified_before
    assert step.verify is not None
    assert step.verify.returncode == 0, step.verify.stdout
    # This run's own gate record stands in its staging folder, apart from the qualified run's records.
    assert "source-gate.json" in killed.records_after_build_start_kill
    assert (killed.out / f".staging-{PLATFORM}" / "records" / PLATFORM / "source-gate.json").is_file()


def test_nothing_a_killed_producer_started_outlives_it(killed: Killed) -> None:
    survivors = {stage: step.report.survivors for stage, step in killed.steps.items() if step.report.survivors}
    assert survivors == {}


def test_a_killed_producer_leaves_nothing_in_the_temporary_folder(killed: Killed) -> None:
    leftovers = {stage: step.report.temp_leftovers for stage, step in killed.steps.items()
                 if step.report.temp_leftovers}
    assert leftovers == {}


def test_durations(killed: Killed, reference: Reference, capsys: pytest.CaptureFixture[str]) -> None:
    """Not a check: what each kill cost, for whoever tunes this suite."""
    with capsys.disabled():
        print(f"\nkill inside PyInstaller and the real rerun {reference.seconds:.1f}s; kills: " + ", ".join(
            f"{stage} {step.seconds:.1f}s" for stage, step in killed.steps.items())
            + f"; the rerun on the cached build {killed.final_seconds:.1f}s")


# -- write_atomic itself ---------------------------------------------------------------------------------------

def test_sigkill_inside_write_atomic_leaves_the_target_and_one_hidden_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "out" / STATEMENT
    target.parent.mkdir()
    target.write_bytes(b"the earlier, complete content")
    kill_inside_write_atomic(target, b'{"payloadType": "application/vnd.in-toto+json", "payload": "eyJf', tmp_path)
    assert target.read_bytes() == b"the earlier, complete content"
    (left,) = atomic_leftovers(target)
    assert left.name.startswith(f".{STATEMENT}.")
    assert left.name.endswith(".tmp")
    assert sorted(p.name for p in target.parent.iterdir()) == sorted([STATEMENT, left.name])
    # Another file's temporary files are not this one's leftovers.
    other = tmp_path / "out" / AGGREGATE
    assert atomic_leftovers(other) == []
    remove_output(target)
    assert list(target.parent.iterdir()) == []


def test_atomic_leftovers_match_only_write_atomic_names(tmp_path: Path) -> None:
    target = tmp_path / STATEMENT
    names = [f".{STATEMENT}.abcd_123.tmp", f".{STATEMENT}.abcd123.tmp", f".{STATEMENT}.abcd12345.tmp",
             f"{STATEMENT}.abcd1234.tmp", f".{STATEMENT}.abcd1234.partial", f".{STATEMENT}.x.abcd1234.tmp",
             STATEMENT]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    assert [p.name for p in atomic_leftovers(target)] == [f".{STATEMENT}.abcd_123.tmp"]
    shutil.rmtree(tmp_path)
    assert atomic_leftovers(target) == []
