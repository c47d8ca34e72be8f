"""producer/processes/_process: the child's whole tree dies on timeout, interrupt, SIGTERM or error, on every OS.

Windows cannot run here, so its tree kill is tested as the exact command line
with an injected runner; the POSIX paths run real process trees.
"""

from __future__ import annotations

import _thread
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.producer.processes import _process
from desktop_qualify.producer.processes._process import kill_tree, run_bounded, taskkill_argv
from desktop_qualify.producer.processes._tree_guard import watchdog_argv

PY = sys.executable
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX sessions and signals")


class _FakeChild:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.killed = 0

    def kill(self) -> None:
        self.killed += 1


class _Runner:
    def __init__(self, outcome: int | BaseException) -> None:
        self.outcome = outcome
        self.calls: list[tuple[list[str], dict[str, Any]]] = []

    def __call__(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        self.calls.append((argv, kwargs))
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return subprocess.CompletedProcess(argv, self.outcome, b"", b"")


# -- Windows: taskkill /T /F, as a fixed argv -------------------------------------------------------------

def test_taskkill_argv_is_fixed_and_absolute() -> None:
    assert taskkill_argv(4242, r"C:\Windows") == [r"C:\Windows\System32\taskkill.exe", "/T", "/F", "/PID", "4242"]
    assert taskkill_argv(7, None) == [r"C:\Windows\System32\taskkill.exe", "/T", "/F", "/PID", "7"]


def test_windows_kills_the_tree_with_taskkill(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYSTEMROOT", r"D:\Win")
    child, runner = _FakeChild(4242), _Runner(0)
    kill_tree(child, platform="win32", run=runner)
    [(argv, kwargs)] = runner.calls
    assert argv == [r"D:\Win\System32\taskkill.exe", "/T", "/F", "/PID", "4242"]
    assert kwargs["shell"] is False
    assert 0 < kwargs["timeout"] <= 60
    assert kwargs["stdin"] is subprocess.DEVNULL
    assert child.killed == 0, "taskkill succeeded: no need for the last-resort kill"


@pytest.mark.parametrize("outcome", [128, FileNotFoundError("taskkill.exe"),
                                     subprocess.TimeoutExpired("taskkill", 30), PermissionError("denied")],
                         ids=["nonzero-exit", "missing", "hung", "denied"])
def test_windows_falls_back_to_killing_the_child(outcome: int | BaseException) -> None:
    child, runner = _FakeChild(99), _Runner(outcome)
    kill_tree(child, platform="win32", run=runner, system_root=r"C:\Windows")
    assert len(runner.calls) == 1
    assert child.killed == 1


def test_posix_never_runs_taskkill(tmp_path: Path) -> None:
    proc = subprocess.Popen([PY, "-c", "import time; time.sleep(60)"], start_new_session=True)
    runner = _Runner(0)
    try:
        kill_tree(proc, platform="linux", run=runner)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        proc.kill()
        proc.wait()
    assert runner.calls == []
    kill_tree(proc, platform="linux", run=runner)  # already gone: not an error


# -- interrupt, SIGTERM and errors: kill and reap in a finally ----------------------------------------------

def _tree_code(pid_file: Path) -> str:
    """A child that starts a worker, then writes both pids (atomically) and sleeps."""
    return textwrap.dedent(f"""
        import os, subprocess, sys, time
        worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        tmp = {str(pid_file)!r} + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{{os.getpid()}} {{worker.pid}}")
        os.replace(tmp, {str(pid_file)!r})
        time.sleep(60)
    """)


def _wait_for(pid_file: Path, timeout: float = 20) -> list[int]:
    deadline = time.monotonic() + timeout
    while not pid_file.exists():
        if time.monotonic() > deadline:
            raise AssertionError("the child never started its worker")
        time.sleep(0.02)
    return [int(p) for p in pid_file.read_text().split()]


def _alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    if status.exists():
        try:
            return "\nState:\tZ" not in status.read_text()
        except OSError:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _assert_dead(pids: list[int]) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if _alive(p)], "part of the child's tree outlived run_bounded"


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt, as under a terminal's Ctrl-C, whatever this process inherited.

    A process started in the background by a shell without job control inherits SIGINT ignored, and
    interrupt_main() then does nothing: the test would wait out the child instead.
    """
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, handler)


@posix_only
@pytest.mark.usefixtures("sigint_raises")
def test_keyboard_interrupt_kills_and_reaps_the_tree(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"

    def interrupt_once_started() -> None:
        _wait_for(pid_file)
        _thread.interrupt_main()

    watcher = threading.Thread(target=interrupt_once_started, daemon=True)
    started = time.monotonic()
    watcher.start()
    with pytest.raises(KeyboardInterrupt):
        run_bounded([PY, "-c", _tree_code(pid_file)], timeout=60, cwd=tmp_path)
    assert time.monotonic() - started < 30
    _assert_dead(_wait_for(pid_file))


@posix_only
def test_any_error_while_running_kills_the_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pid_file = tmp_path / "pids"
    started: list[subprocess.Popen[bytes]] = []
    real_popen = subprocess.Popen

    def popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        proc = real_popen(*args, **kwargs)
        started.append(proc)
        return proc

    class BrokenThread(threading.Thread):
        def start(self) -> None:
            _wait_for(pid_file)  # the tree is fully up when the failure strikes
            raise RuntimeError("cannot start a reader")

    monkeypatch.setattr(_process.subprocess, "Popen", popen)
    monkeypatch.setattr(_process.threading, "Thread", BrokenThread)
    with pytest.raises(RuntimeError, match="cannot start a reader"):
        run_bounded([PY, "-c", _tree_code(pid_file)], timeout=60, cwd=tmp_path)
    # The tree guard (producer/processes/_tree_guard) is a process too; the child is the other one.
    [proc] = [p for p in started if p.args != watchdog_argv()]
    assert proc.returncode == -signal.SIGKILL, "the child was killed and reaped before the error propagated"
    _assert_dead(_wait_for(pid_file))


_CANCELLED_JOB = """
import sys
from pathlib import Path
from desktop_qualify.producer.processes._process import run_bounded
run_bounded([sys.executable, "-c", sys.argv[1]], timeout=60, cwd=Path(sys.argv[2]))
print("run_bounded returned", flush=True)
"""


@posix_only
def test_sigterm_to_the_job_kills_the_tree(tmp_path: Path) -> None:
    # A runner cancel: SIGTERM to the producer process. Its child is in another session and gets nothing.
    pid_file = tmp_path / "pids"
    job = subprocess.Popen([PY, "-c", _CANCELLED_JOB, _tree_code(pid_file), str(tmp_path)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        pids = _wait_for(pid_file)
        job.send_signal(signal.SIGTERM)
        out, err = job.communicate(timeout=30)
    finally:
        job.kill()
        job.wait()
    assert job.returncode == 128 + signal.SIGTERM, err.decode(errors="replace")
    assert b"returned" not in out
    assert b"Traceback" not in err
    _assert_dead(pids)


@posix_only
def test_the_sigterm_handler_is_restored(tmp_path: Path) -> None:
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        pytest.skip("something in this test process already handles SIGTERM")
    run_bounded([PY, "-c", "pass"], timeout=30, cwd=tmp_path)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_handler_installed_by_someone_else_is_kept(tmp_path: Path) -> None:
    seen: list[int] = []

    def theirs(signum: int, frame: object) -> None:
        seen.append(signum)

    previous = signal.signal(signal.SIGTERM, theirs)
    try:
        run_bounded([PY, "-c", "pass"], timeout=30, cwd=tmp_path)
        assert signal.getsignal(signal.SIGTERM) is theirs
    finally:
        signal.signal(signal.SIGTERM, previous)
