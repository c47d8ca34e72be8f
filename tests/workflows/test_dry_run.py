"""`nox -s workflow-dry-run` runs the workflows' own qualify commands: the two lists are compared here."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from workflow_rules import load, runs

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

import workflow_dry_run as dry  # noqa: E402

SHA = "0123456789abcdef0123456789abcdef01234567"


def _local(tmp_path: Path, host: str) -> dry.Local:
    artifacts = [tmp_path / "artifacts" / "skillhost-a.tar.gz", tmp_path / "artifacts" / "skillhost-b.tar.gz"]
    return dry.Local(tmp_path, SHA, host, lambda: artifacts)


def test_the_dry_run_reads_every_qualify_command_of_the_release_jobs() -> None:
    # Parsed independently: every `qualify` line of the workflows that produce, aggregate and release.
    workflows = load(REPO / ".github" / "workflows")
    names = {name for name, _ in dry.JOBS}
    in_yaml = [tuple(shlex.split(line)) for name, _, line in runs(workflows, *names) if line.startswith("qualify ")]
    assert sorted(c.argv for c in dry.workflow_commands()) == sorted(in_yaml)
    # ci.yml runs nox, not qualify: nothing there is left out.
    assert not [line for _, _, line in runs(workflows, "ci.yml") if line.startswith("qualify ")]


@pytest.mark.parametrize("host", ["linux", "macos", "windows"])
def test_the_dry_run_runs_the_yaml_commands_with_only_local_values(tmp_path: Path, host: str) -> None:
    commands = dry.workflow_commands()
    planned = dry.plan(_local(tmp_path, host), commands)
    # The same commands in the same order, other platforms' producers and what reads GitHub itself aside.
    assert [c for c, _ in planned] == [c for c in commands if c.platform in (None, host) and c.argv[1] != "readback"
                                       and "--from-attestations" not in c.argv]
    assert [(c.job, c.argv[1]) for c, _ in planned] == [("run", "produce"), ("sign", "sign"),
                                                      ("aggregate", "aggregate"), ("aggregate", "verify"),
                                                      ("aggregate", "bundle"), ("gate", "verify")]
    assert {c.workflow for c, _ in planned[:2]} == {f"produce-{host}.yml"}
    assert [c.argv[1] for c in commands if dry.skip_reason(c, _local(tmp_path, host)) == "it reads back a published "
            "GitHub release"] == ["readback"]
    # The read-back's verify of the published assets reads the attestation store (tests/e2e_github runs it).
    assert [(c.job, c.argv[1]) for c in commands if dry.skip_reason(c, _local(tmp_path, host)) == "it reads GitHub's "
            "attestation store"] == [("gate", "verify")]
    for command, argv in planned:
        # Same subcommand, same flags in the same order; only the values are local.
        assert argv[:2] == list(command.argv[:2])
        flags = [t for t in argv if t.startswith("--") and t != "--artifact"]
        assert flags == [t for t in command.argv if t.startswith("--")]
        assert "policies/local.toml" in argv
        assert "policies/release.toml" not in argv
        assert not [t for t in argv if "$" in t]
    verify = planned[-1][1]
    assert verify.count("--artifact") == 2
    assert verify[verify.index("--sha") + 1] == SHA


def test_the_run_job_the_sign_job_and_the_aggregate_use_their_own_folders(tmp_path: Path) -> None:
    """The run job writes its own folder; the sign job reads the handed-on copy and writes what the aggregate reads."""
    local = _local(tmp_path, "linux")
    planned = {(c.job, c.argv[1]): argv for c, argv in dry.plan(local)}
    produce, sign = planned[("run", "produce")], planned[("sign", "sign")]
    assert produce[produce.index("--out") + 1] == str(local.run_out)
    assert "--unsigned" in produce
    assert sign[sign.index("--run") + 1] == str(local.run_in)
    assert sign[sign.index("--out") + 1] == str(tmp_path)
    assert len({local.run_out, local.run_in, tmp_path}) == 3
    aggregate = planned[("aggregate", "aggregate")]
    assert aggregate[aggregate.index("--evidence") + 1] == str(tmp_path / "evidence")


@pytest.mark.parametrize("platform", ["linux", "macos", "windows"])
def test_the_sign_job_gets_only_what_the_run_job_uploads(tmp_path: Path, platform: str) -> None:
    assert dry.handed_on(platform) == ["unsigned", "artifacts"]
    local = _local(tmp_path, platform)
    (local.run_out / "unsigned").mkdir(parents=True)
    (local.run_out / "unsigned" / f"platform-{platform}.run.json").write_text("{}")
    (local.run_out / "artifacts").mkdir()
    (local.run_out / "artifacts" / "app.tar.gz").write_bytes(b"app")
    (local.run_out / "records").mkdir()  # the run job's own records: not uploaded, so not handed on
    (local.run_in / "stale").mkdir(parents=True)  # a folder left by an earlier dry run: gone
    dry.hand_on(local, platform)
    assert sorted(p.relative_to(local.run_in).as_posix() for p in local.run_in.rglob("*")) == [
        "artifacts", "artifacts/app.tar.gz", "unsigned", f"unsigned/platform-{platform}.run.json"]


def test_a_run_job_that_wrote_nothing_stops_the_hand_on(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="the run job wrote no"):
        dry.hand_on(_local(tmp_path, "linux"), "linux")


def test_a_workflow_value_the_dry_run_cannot_fill_stops_it(tmp_path: Path) -> None:
    odd = dry.WorkflowCommand("qualify.yml", "aggregate", ("qualify", "aggregate", "--policy", "$POLICY"))
    with pytest.raises(SystemExit, match=r"no local value for '\$POLICY'"):
        dry.localize(odd, _local(tmp_path, "linux"))


def test_the_nox_session_runs_this_script() -> None:
    noxfile = (REPO / "noxfile.py").read_text(encoding="utf-8")
    assert '@nox.session(name="workflow-dry-run")' in noxfile
    assert 'session.run("python", "tools/workflow_dry_run.py"' in noxfile
