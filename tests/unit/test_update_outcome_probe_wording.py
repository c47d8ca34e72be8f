"""qualify_verify/_update_outcome.py's ``_probe_problems``: the upgrade probe's problem when it failed without a
reported reason says how it ended, ``at its time limit`` when it timed out (no update-journey row has a probe
that timed out, so mutants of those words survived every row).
"""

from __future__ import annotations

from types import SimpleNamespace

from desktop_qualify.qualify_verify._update_outcome import UpdateRules, _probe_problems

SHA = "a" * 40
COMMAND = ("app", "--probe")

RULES = UpdateRules(
    platform="linux", candidate_sha=SHA, candidate_artifact_sha256="b" * 64, candidate_executable_sha256="c" * 64,
    installer="appimage", executable="app", state_write=("app", "--write"), state_check=("app", "--check"),
    downgrade="allow", downgrade_code=None, probe_command=COMMAND, display="none", probe_checks=(), layers=None,
    candidate_layers=None, signed_only=False,
)


def _record(*, exit_code: int | None, timed_out: bool) -> object:
    """An update record whose upgrade probe wrote no report, ran the policy's command, and claims what its facts say."""
    probe = SimpleNamespace(report=None, exit_code=exit_code, timed_out=timed_out, command=list(COMMAND),
                            display="none", build_sha_matches=False, executable_matches_install=False, passed=False)
    return SimpleNamespace(upgrade_probe=probe, upgrade_install=SimpleNamespace(executable_sha256="c" * 64))


def test_a_probe_stopped_at_its_time_limit_says_so() -> None:
    problems = _probe_problems(_record(exit_code=None, timed_out=True), RULES)  # type: ignore[arg-type]
    assert problems == ["the probe did not exit on its own (not run, or stopped) at its time limit, its report absent"]


def test_a_probe_that_exited_at_its_time_limit_says_so_after_its_exit_status() -> None:
    problems = _probe_problems(_record(exit_code=137, timed_out=True), RULES)  # type: ignore[arg-type]
    assert problems == ["the probe exited 137 at its time limit, its report absent"]


def test_a_probe_that_did_not_time_out_does_not_mention_the_time_limit() -> None:
    problems = _probe_problems(_record(exit_code=3, timed_out=False), RULES)  # type: ignore[arg-type]
    assert problems == ["the probe exited 3, its report absent"]
