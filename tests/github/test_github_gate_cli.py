"""`qualify gate --policy FILE --out DIR`: exit 0 with a record, 1 on a refusal, 2 on usage or environment."""

from __future__ import annotations

from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import SourceGateRecord
from desktop_qualify.producer._gate_cli import RECORD_NAME, build_gate_parser, run_gate
from gh_testenv import REPOSITORY, WORKFLOW, git
from support.github_emulator import DEFAULT_TOKEN, Branch, GitHubEmulator

LOCAL_POLICY = Path(__file__).resolve().parents[2] / "policies" / "local.toml"


@pytest.fixture
def env(github_emulator: GitHubEmulator, policy_dir: Path) -> dict[str, str]:
    sha = git(policy_dir / "checkout", "rev-parse", "HEAD")
    github_emulator.repo(REPOSITORY).branches["main"] = Branch(sha, protected=True, required_checks=True)
    return {"GITHUB_API_URL": github_emulator.api_url, "GITHUB_TOKEN": DEFAULT_TOKEN,
            "GITHUB_REPOSITORY": REPOSITORY, "GITHUB_REF": "refs/heads/main", "GITHUB_SHA": sha,
            "GITHUB_RUN_ID": "99", "GITHUB_RUN_ATTEMPT": "2",
            "GITHUB_WORKFLOW_REF": f"{REPOSITORY}/{WORKFLOW}@refs/heads/main", "GITHUB_EVENT_NAME": "push"}


def _run(policy: Path, out: Path, env: dict[str, str]) -> int:
    return run_gate(build_gate_parser().parse_args(["--policy", str(policy), "--out", str(out)]), env)


def test_pass_writes_the_record(policy_dir: Path, env: dict[str, str], tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert _run(policy_dir / "policy.toml", out, env) == 0
    record = SourceGateRecord.model_validate_json((out / RECORD_NAME).read_bytes())
    assert (record.mode, record.sha, record.protection) == ("github", env["GITHUB_SHA"], "protected")
    assert [p.name for p in out.iterdir()] == [RECORD_NAME]
    assert "source gate passed" in capsys.readouterr().err


def test_refusal_exits_1_and_writes_nothing(policy_dir: Path, env: dict[str, str], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert _run(policy_dir / "policy.toml", out, {**env, "GITHUB_REF": "refs/tags/v1.0"}) == 1
    assert "QE_REF_NOT_MAIN" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("change", ["no-actions-env", "local-policy", "missing-policy", "api-down"])
def test_usage_and_environment_exit_2(policy_dir: Path, env: dict[str, str], tmp_path: Path, *,
                                      github_emulator: GitHubEmulator, capsys: pytest.CaptureFixture[str],
                                      change: str) -> None:
    policy = policy_dir / "policy.toml"
    if change == "no-actions-env":
        env = {"GITHUB_API_URL": env["GITHUB_API_URL"]}
    elif change == "local-policy":
        policy = LOCAL_POLICY
    elif change == "missing-policy":
        policy = tmp_path / "absent.toml"
    else:
        # 404 on the API is an environment error (wrong GITHUB_API_URL or repository not visible).
        github_emulator.repos.clear()
    assert _run(policy, tmp_path / "out", env) == 2
    err = capsys.readouterr().err
    assert err.startswith("QE_"), err
    assert "Traceback" not in err
    assert DEFAULT_TOKEN not in err
    assert not (tmp_path / "out").exists()


def test_usage_error_from_argparse(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        build_gate_parser().parse_args(["--policy"])
    assert caught.value.code == 2
    assert "QE_USAGE" in capsys.readouterr().err
