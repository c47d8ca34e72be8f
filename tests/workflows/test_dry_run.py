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
    assert [(c.job, c.argv[1]) for c, _ in planned] == [("produce", "produce"), ("aggregate", "aggregate"),
                                                      ("aggregate", "verify"), ("aggregate", "bundle"),
                                                      ("gate", "verify")]
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


def test_a_workflow_value_the_dry_run_cannot_fill_stops_it(tmp_path: Path) -> None:
    odd = dry.WorkflowCommand("qualify.yml", "aggregate", ("qualify", "aggregate", "--policy", "$POLICY"))
    with pytest.raises(SystemExit, match=r"no local value for '\$POLICY'"):
        dry.localize(odd, _local(tmp_path, "linux"))


def test_the_nox_session_runs_this_script() -> None:
    noxfile = (REPO / "noxfile.py").read_text(encoding="utf-8")
    assert '@nox.session(name="workflow-dry-run")' in noxfile
    assert 'session.run("python", "tools/workflow_dry_run.py"' in noxfile
