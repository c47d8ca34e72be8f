"""Running a child process with a timeout and bounded output capture.

Output beyond the cap is read and discarded (so the child never blocks on a
full pipe) and reported as truncated; a child that outlives its timeout is
killed and reaped. No shell is ever involved: argv is a list, or on Windows
a command line as one string (msiexec and NSIS installers parse their own),
which CreateProcess receives as it is.

The child starts in a new session (POSIX) or process group (Windows), so a
runner's cancel signal does not reach it on its own: whatever ends
``run_bounded`` early (timeout, KeyboardInterrupt, SIGTERM, any exception)
kills the child's whole tree (the app and the skill workers it started) and
reaps it before returning or re-raising. What ends the producer outright
(SIGKILL) is covered by a watchdog process (``_tree_guard``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from types import FrameType
from typing import IO, Any, Protocol

from desktop_qualify.qualify_runtime import terminal_safe

from ._tree_guard import TreeGuard

_log = logging.getLogger(__name__)

# How long the tree kill itself may take: a hung taskkill must not hang the job.
_KILL_TIMEOUT = 30.0
# How long to wait for a killed child to be reaped before giving up on it.
_REAP_TIMEOUT = 30.0
# How often a child with a ``cancel`` switch looks at it: a cancelled build stops within this much.
_CANCEL_POLL = 0.1


@dataclass(frozen=True)
class ProcessResult:
    exit_code: int | None
    timed_out: bool
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    duration_ms: int
    # Ended by the caller's ``cancel`` (its tree killed), not by itself or the timeout.
    cancelled: bool = False


class Killable(Protocol):
    """What ``kill_tree`` needs of a child: its pid and a last-resort kill."""

    @property
    def pid(self) -> int: ...

    def kill(self) -> None: ...


Runner = Callable[..., "subprocess.CompletedProcess[Any]"]


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


def taskkill_argv(pid: int, system_root: str | None) -> list[str]:
    """The fixed command that kills a Windows process and every descendant (/T), forcibly (/F).

    The absolute System32 path, not a PATH lookup: Windows searches the
    current folder first, which may hold files of the artifact under test.
    """
    root = PureWindowsPath(system_root or r"C:\Windows")
    return [str(root / "System32" / "taskkill.exe"), "/T", "/F", "/PID", str(pid)]


def kill_tree(proc: Killable, *, platform: str = sys.platform, run: Runner = subprocess.run,
              system_root: str | None = None) -> None:
    """Kill the child and every process it started; never raises.

    POSIX: the child leads its own session, so SIGKILL to its process group
    reaches the workers too. Windows has no process groups to signal, so
    ``taskkill /T`` walks the tree; if that cannot run or fails, the direct
    child is still killed.
    """
    if platform != "win32":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        return
    argv = taskkill_argv(proc.pid, system_root if system_root is not None else os.environ.get("SYSTEMROOT"))
    try:
        done = run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=_KILL_TIMEOUT, check=False, shell=False)
        if done.returncode == 0:
            return
    except (OSError, subprocess.SubprocessError):
        pass
    with contextlib.suppress(OSError):
        proc.kill()


def _reap(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=_REAP_TIMEOUT)


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """While a child runs, turn SIGTERM into SystemExit so the ``finally`` below kills its tree.

    Python's default SIGTERM action ends the interpreter without unwinding,
    which would leave the child's session running after a runner cancel. Only
    the main thread may set handlers, and a handler someone else installed is
    theirs to keep.
    """
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def run_bounded(
    argv: Sequence[str] | str,
    *,
    timeout: float,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    stdout_cap: int = 64 * 1024,
    stderr_cap: int = 16 * 1024,
    umask: int | None = None,
    cancel: threading.Event | None = None,
    pass_fds: Sequence[int] = (),
) -> ProcessResult:
    """``umask``: the child's umask on POSIX (a reproducibility check's varied condition); ignored on Windows.

    ``pass_fds``: descriptors the child keeps (a confinement wrapper's report pipe); POSIX only.

    ``cancel``: set from another thread, it ends the child's whole tree as a timeout would (a second build
    running beside the first is stopped so when the first fails). Only the main thread turns SIGTERM into a
    kill; a child on another thread is ended through ``cancel`` by the main thread's unwinding.
    """
    # A string goes to Popen as it is: CreateProcess's command line on Windows (POSIX would take it as one
    # program's path; the installers refuse a string there before it gets here).
    command = argv if isinstance(argv, str) else list(argv)
    shown = argv if isinstance(argv, str) else " ".join(argv)
    started = time.monotonic()
    cancelled = False
    # A new process group on Windows, a new session on POSIX: the whole tree can be killed as one.
    creationflags = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0) if sys.platform == "win32" else 0
    out: list[bytes] = []
    err: list[bytes] = []
    out_trunc = [False]
    err_trunc = [False]
    timed_out = False
    # Started first, so that the child is never without one: a producer killed outright takes the tree along.
    guard = TreeGuard.start()
    with _sigterm_raises():
        try:
            proc = subprocess.Popen(
                command,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                shell=False,
                creationflags=creationflags,
                start_new_session=sys.platform != "win32",
                umask=umask if umask is not None and sys.platform != "win32" else -1,
                pass_fds=tuple(pass_fds) if sys.platform != "win32" else (),
            )
        except BaseException:
            if guard is not None:
                guard.release()
            raise
        if guard is not None:
            guard.watch(proc.pid)
        settled = False
        try:
            if proc.stdout is None or proc.stderr is None:  # pragma: no cover - both pipes were requested
                raise RuntimeError("child process pipes are missing")
            readers = [
                threading.Thread(target=_drain, args=(proc.stdout, stdout_cap, out, out_trunc), daemon=True),
                threading.Thread(target=_drain, args=(proc.stderr, stderr_cap, err, err_trunc), daemon=True),
            ]
            for reader in readers:
                reader.start()
            timed_out, cancelled = _wait(proc, started + timeout, cancel)
            settled = True
        finally:
            # Interrupted (Ctrl-C, SIGTERM, any error): the tree must not outlive the job.
            if not settled:
                kill_tree(proc)
                _reap(proc)
            if guard is not None:
                guard.release()
    for reader in readers:
        reader.join(timeout=5)
    duration_ms = int((time.monotonic() - started) * 1000)
    # QUALIFY_LOGLEVEL=INFO shows where a stage's time went; `nox -s bench` reads the build stage's children so.
    # The start is on this process's monotonic clock: children that ran side by side can be told apart.
    _log.info("child %s: %.3f s, %s (started at t=%.3f s)", terminal_safe(shown[:300]),
              duration_ms / 1000, "cancelled" if cancelled else "timed out" if timed_out else f"exit {proc.returncode}",
              started)
    return ProcessResult(
        exit_code=None if timed_out or cancelled else proc.returncode,
        timed_out=timed_out,
        stdout=b"".join(out),
        stderr=b"".join(err),
        stdout_truncated=out_trunc[0],
        duration_ms=duration_ms,
        cancelled=cancelled,
    )


def _wait(proc: subprocess.Popen[bytes], deadline: float, cancel: threading.Event | None) -> tuple[bool, bool]:
    """Wait for the child until ``deadline`` or ``cancel``; kill its tree on either. (timed out, cancelled)."""
    while True:
        left = deadline - time.monotonic()
        try:
            proc.wait(timeout=max(left, 0.0) if cancel is None else min(max(left, 0.0), _CANCEL_POLL))
            return False, False
        except subprocess.TimeoutExpired:
            stop = time.monotonic() >= deadline, cancel is not None and cancel.is_set()
            if any(stop):
                kill_tree(proc)
                proc.wait()
                return stop[0] and not stop[1], stop[1]


def excerpt(data: bytes, limit: int = 2000) -> str:
    """The tail of a stream, decoded leniently and bounded: enough to explain a failure."""
    text = data.decode("utf-8", errors="replace")
    return text[-limit:]
