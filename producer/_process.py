"""Running a child process with a timeout and bounded output capture.

Output beyond the cap is read and discarded (so the child never blocks on a
full pipe) and reported as truncated; a child that outlives its timeout is
killed and reaped. No shell is ever involved: argv is a list.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO


@dataclass(frozen=True)
class ProcessResult:
    exit_code: int | None
    timed_out: bool
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    duration_ms: int


def _drain(stream: IO[bytes], cap: int, sink: list[bytes], truncated: list[bool]) -> None:
    kept = 0
    while chunk := stream.read(65536):
        room = cap - kept
        if room > 0:
            sink.append(chunk[:room])
            kept += min(len(chunk), room)
        if len(chunk) > room:
            truncated[0] = True
    stream.close()


def minimal_environment(home: Path) -> dict[str, str]:
    """The environment an app under test gets: nothing of the CI job's secrets."""
    env = {"PATH": os.defpath if os.name != "nt" else os.environ.get("PATH", ""), "HOME": str(home),
           "TMPDIR": str(home), "TEMP": str(home), "TMP": str(home), "LANG": "C.UTF-8"}
    if os.name == "nt":
        # Windows processes cannot start without these.
        for name in ("SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT"):
            if name in os.environ:
                env[name] = os.environ[name]
        env["USERPROFILE"] = str(home)
    return env


def run_bounded(
    argv: Sequence[str],
    *,
    timeout: float,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    stdout_cap: int = 64 * 1024,
    stderr_cap: int = 16 * 1024,
) -> ProcessResult:
    started = time.monotonic()
    # A new process group on Windows, a new session on POSIX: the whole tree can be killed on timeout.
    creationflags = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0) if sys.platform == "win32" else 0
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        shell=False,
        creationflags=creationflags,
        start_new_session=sys.platform != "win32",
    )
    if proc.stdout is None or proc.stderr is None:  # pragma: no cover - both pipes were requested
        raise RuntimeError("child process pipes are missing")
    out: list[bytes] = []
    err: list[bytes] = []
    out_trunc = [False]
    err_trunc = [False]
    readers = [
        threading.Thread(target=_drain, args=(proc.stdout, stdout_cap, out, out_trunc), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, stderr_cap, err, err_trunc), daemon=True),
    ]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_tree(proc)
        proc.wait()
    for reader in readers:
        reader.join(timeout=5)
    return ProcessResult(
        exit_code=None if timed_out else proc.returncode,
        timed_out=timed_out,
        stdout=b"".join(out),
        stderr=b"".join(err),
        stdout_truncated=out_trunc[0],
        duration_ms=int((time.monotonic() - started) * 1000),
    )


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """Kill the child and, on POSIX, its whole session (workers it started)."""
    if sys.platform != "win32":
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
    else:
        proc.kill()


def excerpt(data: bytes, limit: int = 2000) -> str:
    """The tail of a stream, decoded leniently and bounded: enough to explain a failure."""
    text = data.decode("utf-8", errors="replace")
    return text[-limit:]
