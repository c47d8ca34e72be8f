"""producer/processes/_tree_guard: a child's process tree ends with the producer, even when it is SIGKILLed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from desktop_qualify.producer.processes._tree_guard import TreeGuard, watchdog_argv

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX; Windows uses taskkill /T")

# A stand-in producer: guards a child session (a sleeper that starts a grandchild), reports the pids, then
# either kills itself outright or releases the guard and exits normally.
_OWNER = """
import json, os, signal, subprocess, sys, time
from desktop_qualify.producer.processes._tree_guard import TreeGuard
guard = TreeGuard.start()
child = subprocess.Popen([sys.executable, "-c",
    "import subprocess, sys, time; g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
    " print(g.pid, flush=True); time.sleep(60)"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    start_new_session=True)
grandchild = int(child.stdout.readline())
guard.watch(child.pid)
print(json.dumps({"child": child.pid, "grandchild": grandchild}), flush=True)
if sys.argv[1] == "die":
    os.kill(os.getpid(), signal.SIGKILL)
guard.release()
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0): read its state where /proc exists.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.is_file() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def _wait_gone(pids: list[int], seconds: float = 10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _owner(mode: str) -> dict[str, int]:
    done = subprocess.run([sys.executable, "-c", _OWNER, mode], capture_output=True, text=True, timeout=60,
                          check=False)
    return json.loads(done.stdout.splitlines()[0])


@posix_only
def test_a_producer_killed_outright_takes_its_childs_whole_tree_along() -> None:
    pids = _owner("die")
    assert _wait_gone([pids["child"], pids["grandchild"]]) == []


@posix_only
def test_a_released_guard_kills_nothing() -> None:
    pids = _owner("release")
    try:
        assert _alive(pids["child"])
        assert _alive(pids["grandchild"])
    finally:
        os.killpg(pids["child"], signal.SIGKILL)
    assert _wait_gone([pids["child"], pids["grandchild"]]) == []


def test_the_watchdog_starts_isolated_and_without_site_packages() -> None:
    argv = watchdog_argv("/usr/bin/python3")
    assert argv[:4] == ["/usr/bin/python3", "-I", "-S", "-c"]


def test_windows_has_no_process_group_to_guard() -> None:
    assert TreeGuard.start(platform="win32") is None
