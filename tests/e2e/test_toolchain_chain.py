"""A journey command's ``{python}`` named in ``[app.toolchains]``, through the real chain and the real confinement.

The small app of ``test_journey_runner.py``, its runner started by the policy's ``{python}``, which the policy
points at an interpreter by absolute path (not the producer's own). The producer resolves it once, asks its
version confined, substitutes it into the journey's command, binds its folder read-only into bubblewrap's
sandbox, and records it in the signed statement; the chain qualifies. A tool that is not there stops the job
before any app code runs, with its code.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import pytest
from desktop_qualify.producer.confinement import platform_confinement
from desktop_qualify.qualify_files import file_sha256
from e2e.test_journey_runner import APP_SECTION, RUNNER, STEPS, _chain, _tiny_repo
from support.chain import qualify
from support.confinement import confinement_section
from support.evidence_factory import make_keys, policy_text

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the tiny app's build names its output for linux; "
                                                               "the confinement exercised is bubblewrap")

# The interpreter itself, not the producer's virtual environment: the journey must run the one the policy names.
INTERPRETER = Path(sys.executable).resolve()


def _confinement_or_skip() -> None:
    why = platform_confinement("linux").unavailable()
    if why is not None:
        pytest.skip(f"app code cannot be confined here: {why}")


def _toolchain_app(python: str) -> str:
    return APP_SECTION + f"\n[app.toolchains]\npython = {json.dumps(python)}\n"


def test_a_named_python_runs_the_journey_confined_and_is_recorded(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _confinement_or_skip()
    # The runner says which interpreter runs it (stdout is a log; its tail lands in the record's excerpt).
    monkeypatch.setattr(sys.modules["e2e.test_journey_runner"], "RUNNER",
                        "import sys\nprint('runner python:', sys.executable)\n" + RUNNER)
    monkeypatch.setattr(sys.modules["e2e.test_journey_runner"], "APP_SECTION", _toolchain_app(str(INTERPRETER)))
    real_policy_text = policy_text

    def confined_policy(*args: object, **kwargs: object) -> str:
        return real_policy_text(*args, **kwargs) + confinement_section(("linux",))  # type: ignore[arg-type]

    monkeypatch.setattr(sys.modules["e2e.test_journey_runner"], "policy_text", confined_policy)
    repo, _ = _tiny_repo(tmp_path)
    done = _chain(tmp_path, repo)
    assert done["produce"].returncode == 0, done["produce"].stderr
    assert "toolchains" in done["produce"].stderr
    assert done["verify"].returncode == 0, done["verify"].stdout
    p = done["statement"].predicate
    # The command keeps the placeholder; the statement says what it stood for on this machine.
    assert p.journey.command[:2] == ["{python}", "journey/run.py"]
    assert p.journey.passed
    assert f"runner python: {INTERPRETER}" in p.journey.stderr_excerpt
    [tool] = p.toolchains
    assert (tool.name, tool.requested, tool.path, tool.resolved) == ("python", str(INTERPRETER), str(INTERPRETER),
                                                                    str(INTERPRETER))
    assert tool.sha256 == file_sha256(INTERPRETER)
    assert tool.version == f"Python {platform.python_version()}"
    assert tool.folders == [str(INTERPRETER.parent.parent if INTERPRETER.parent.name == "bin"
                                else INTERPRETER.parent)]
    # Every run of app code, the version query among them (as the probe stage), ran under bubblewrap.
    stages = [(entry.stage, entry.mechanism) for entry in p.confinement]
    assert ("journey", "bubblewrap") in stages
    assert [stage for stage, _ in stages].count("probe") == 2
    assert {mechanism for _, mechanism in stages} == {"bubblewrap"}


def test_a_missing_tool_stops_the_job_before_any_app_code(tmp_path: Path) -> None:
    repo, _ = _tiny_repo(tmp_path)
    keys = make_keys(tmp_path / "keys")
    policy = tmp_path / "tiny.toml"
    app = _toolchain_app(str(tmp_path / "no-such-python")).format(source=json.dumps(str(repo / "app")))
    policy.write_text(policy_text(keys, required=["linux"], app=app, journey_steps=STEPS, isolation=False))
    out = tmp_path / "out"
    produced = qualify("produce", "--policy", policy, "--platform", "linux", "--out", out, "--run-id", "tiny-2")
    assert produced.returncode == 2, produced.stderr
    assert "QE_TOOLCHAIN_UNAVAILABLE" in produced.stderr
    assert "toolchain {python}" in produced.stderr
    assert "Traceback" not in produced.stderr
    assert not (out / "work").exists()
