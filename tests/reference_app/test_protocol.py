"""Worker protocol hardening, driven by fake workers that misbehave on purpose."""

import os
import sys
import threading
import time

import pytest
import skillhost.host._runner as runner
from skillhost.brokers._broker import default_ports
from skillhost.host._runner import PROTOCOL_VERSION, run_external
from skillhost.packaging._package import VerifiedSkill

# The one capability these runs use, granted explicitly (the broker has no default grant).
TIME = frozenset({"runtime:time"})

PRELUDE = """
import json, sys, os
out = sys.stdout.buffer
start = json.loads(sys.stdin.buffer.readline())
X = start["exec_id"]
def send(obj):
    out.write(json.dumps(obj).encode() + b"\\n"); out.flush()
"""

FAKES = {
    "wrong-version": 'send({"v": 2, "exec_id": X, "type": "result", "value": 1, "pid": os.getpid()})',
    "wrong-exec-id": 'send({"v": 1, "exec_id": "0" * 32, "type": "result", "value": 1, "pid": os.getpid()})',
    "unknown-type": 'send({"v": 1, "exec_id": X, "type": "shell", "cmd": "id"})',
    "host-frame-type": 'send({"v": 1, "exec_id": X, "type": "start", "source": ""})',
    "not-json": 'out.write(b"hello\\n"); out.flush()',
    "no-newline-huge": 'out.write(b"x" * 70000); out.flush()',
    "silent": "import time\ntime.sleep(30)",
    "eof": "sys.exit(0)",
    "flood": (
        "for i in range(1000):\n"
        '    send({"v": 1, "exec_id": X, "type": "capability-request", "request_id": i, "port": "time",'
        ' "method": "now", "args": [], "kwargs": {}})'
    ),
    "forged-pid": 'send({"v": 1, "exec_id": X, "type": "result", "value": 1, "pid": 1})',
    "forged-code": 'send({"v": 1, "exec_id": X, "type": "error", "code": "NOT_OURS", "message": "m"})',
}
EXPECTED = {
    "wrong-version": "CC_SKILL_PROTOCOL_VIOLATION",
    "wrong-exec-id": "CC_SKILL_PROTOCOL_VIOLATION",
    "unknown-type": "CC_SKILL_PROTOCOL_VIOLATION",
    "host-frame-type": "CC_SKILL_PROTOCOL_VIOLATION",
    "not-json": "CC_SKILL_PROTOCOL_VIOLATION",
    "no-newline-huge": "CC_SKILL_FRAME_TOO_LARGE",
    "silent": "CC_SKILL_TIMEOUT",
    "eof": "CC_SKILL_PROTOCOL_VIOLATION",
    "flood": "CC_SKILL_PROTOCOL_VIOLATION",
    "forged-pid": "CC_SKILL_PROTOCOL_VIOLATION",
    "forged-code": "CC_SKILL_HANDLER_FAILED",
}
VERIFIED = VerifiedSkill("demo", ["runtime:time"], "def run(ports, args):\n    return 1\n", "0" * 64, "t")


def _alive(pid):
    if os.name != "posix":
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


@pytest.mark.parametrize("name", sorted(FAKES))
def test_misbehaving_worker_is_killed_and_reaped(tmp_path, monkeypatch, name):
    script = tmp_path / "fake_worker.py"
    script.write_text(PRELUDE + FAKES[name] + "\n")
    monkeypatch.setattr(runner, "worker_command", lambda: [sys.executable, str(script)])
    out = run_external(VERIFIED, default_ports([]), granted=TIME, max_duration=1.5)
    assert not out.ok
    assert out.code == EXPECTED[name], out.message
    assert out.reaped
    assert out.returncode is not None
    assert not _alive(out.worker_pid)
    assert out.requests <= 32


def test_real_worker_refuses_other_protocol_version():
    out = run_external(VERIFIED, default_ports([]), granted=TIME, protocol_version=PROTOCOL_VERSION + 1)
    assert out.code == "CC_SKILL_PROTOCOL_VIOLATION"
    assert out.requests == 0
    assert out.value is None
    assert out.reaped


def test_abort_kills_and_reaps_mid_run():
    loop = VerifiedSkill(
        "loop", ["runtime:time"], "def run(ports, args):\n    while True:\n        pass\n", "0" * 64, "t"
    )
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    t0 = time.monotonic()
    out = run_external(loop, default_ports([]), granted=TIME, cancel=cancel)
    elapsed = time.monotonic() - t0
    assert out.code == "CC_SKILL_ABORTED"
    assert out.reaped
    assert out.returncode is not None
    assert not _alive(out.worker_pid)
    assert elapsed < 3.0


def test_abort_before_start_runs_nothing():
    cancel = threading.Event()
    cancel.set()
    out = run_external(VERIFIED, default_ports([]), granted=TIME, cancel=cancel)
    assert out.code == "CC_SKILL_ABORTED"
    assert out.value is None
    assert out.reaped
