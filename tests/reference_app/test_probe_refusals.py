import json
import sys

import pytest
import skillhost._probe as probe
import skillhost.host._runner as runner
from skillhost._cli import main


def _run_cli(capsys, argv):
    rc = main(argv)
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return rc, json.loads(out)


def test_missing_worker_entry_refuses_start(monkeypatch, capsys, tmp_path):
    missing = [str(tmp_path / "no-such-exe"), "worker"]
    monkeypatch.setattr(probe, "worker_command", lambda: missing)
    monkeypatch.setattr(runner, "worker_command", lambda: missing)
    rc, out = _run_cli(capsys, ["probe"])
    assert rc == 3
    assert out["code"] == "CC_SKILL_ISOLATION_UNAVAILABLE"
    assert out["kind"] == "skillhost-error"


def test_worker_without_limits_refuses_start(monkeypatch, capsys):
    if sys.platform.startswith("win"):
        pytest.skip("POSIX resource limits only")
    fake = {
        "kind": "skillhost-worker-self-test",
        "pid": -1,
        "limits_applied": False,
        "frozen": False,
        "env_keys": [],
        "_env_passed": [],
    }
    monkeypatch.setattr(probe, "self_test", lambda: fake)
    rc, out = _run_cli(capsys, ["probe"])
    assert rc == 3
    assert out["code"] == "CC_SKILL_ISOLATION_UNAVAILABLE"


def test_worker_with_leaked_env_refuses_start(monkeypatch, capsys):
    fake = {
        "kind": "skillhost-worker-self-test",
        "pid": -1,
        "limits_applied": True,
        "memory_limited": True,
        "frozen": False,
        "env_keys": ["AWS_SECRET_ACCESS_KEY"],
        "_env_passed": [],
    }
    monkeypatch.setattr(probe, "self_test", lambda: fake)
    rc, out = _run_cli(capsys, ["probe"])
    assert rc == 3
    assert out["code"] == "CC_SKILL_ISOLATION_UNAVAILABLE"
    assert "not minimal" in out["message"]


def test_worker_without_memory_limit_refuses_start_on_linux(monkeypatch, capsys):
    if not sys.platform.startswith("linux"):
        pytest.skip("RLIMIT_AS is required on Linux only (reported elsewhere)")
    fake = {
        "kind": "skillhost-worker-self-test",
        "pid": -1,
        "limits_applied": True,
        "memory_limited": False,
        "frozen": False,
        "env_keys": [],
        "_env_passed": [],
    }
    monkeypatch.setattr(probe, "self_test", lambda: fake)
    rc, out = _run_cli(capsys, ["probe"])
    assert rc == 3
    assert out["code"] == "CC_SKILL_ISOLATION_UNAVAILABLE"
    assert "RLIMIT_AS" in out["message"]


def test_real_worker_reports_memory_limit():
    answer = runner.self_test()
    if sys.platform.startswith("linux"):
        assert answer["memory_limited"] is True
    else:
        assert isinstance(answer["memory_limited"], bool)


def test_internal_error_is_json_not_traceback(monkeypatch, capsys):
    def boom():
        raise RuntimeError("secret detail")

    monkeypatch.setattr(probe, "build_info", boom)
    rc, out = _run_cli(capsys, ["probe"])
    assert rc == 4
    assert out["code"] == "CC_SKILL_INTERNAL"
    assert "secret detail" not in out["message"]
