"""The host's end of a worker: its own process group, raw pipe descriptors, bounded reads.

Why raw descriptors: a worker that escaped its handler rules can fork a child that
keeps the worker's stdout open after the worker is killed. A ``BufferedReader``
then blocks in ``close()`` behind its reader; here the host owns the bare file
descriptors, reads with ``select`` + ``os.read`` against a deadline (POSIX) or
from an abandonable thread through a bounded queue (Windows), and ``os.close``
never waits for the other end. Why a process group: one kill reaches every
process the worker started without leaving its group (a child that calls
``setsid`` itself leaves it; RLIMIT_NPROC stops that for non-root users).
"""
# ruff: noqa: PTH118

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from skillhost.os_sandbox import WorkerProcess, launch_plan, worker_read_roots

MAX_FRAME = 64 * 1024
_CHUNK = 64 * 1024
_WINDOWS = os.name == "nt"
# A worker may be ahead of the host by this many chunks at most (Windows reader thread).
_QUEUE_CHUNKS = 4


def harden_host() -> bool:
    """Linux: mark the host non-dumpable, so a same-uid worker cannot read ``/proc/<host>/environ``
    or ptrace the host. Root is not stopped by this. Returns whether the flag is now set."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes  # noqa: PLC0415 - Linux only, loaded when a worker is about to start

        # The running program's own symbols include libc's prctl; no library search, no ldconfig child.
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_dumpable, pr_get_dumpable = 4, 3
        if libc.prctl(pr_set_dumpable, 0, 0, 0, 0) != 0:
            return False
        return int(libc.prctl(pr_get_dumpable, 0, 0, 0, 0)) == 0
    except (OSError, AttributeError, ImportError):
        return False


def _nothing() -> None:
    return None


def spawn_confined(argv: Sequence[str], env: dict[str, str], cwd: str,
                   **popen: Any) -> tuple[WorkerProcess, Callable[[], None]]:
    """Start a worker the way this platform confines it (``os_sandbox.launch_plan``), in a group of its own.

    Returns the process and what to call once it is reaped. A worker the host could not confine is
    killed before it runs a single instruction of its own (Windows: it is still suspended) and the
    ``OSError`` propagates.
    """
    plan = launch_plan(argv, cwd, worker_read_roots())
    if plan.start is not None:  # Windows: the AppContainer start, with the same stream arguments
        return plan.start(env, cwd, **popen)
    flags = int(popen.pop("creationflags", 0)) | int(plan.popen_kwargs.get("creationflags", 0))  # type: ignore[call-overload]
    proc = subprocess.Popen(  # fixed worker entry point, no shell
        plan.argv,
        shell=False,
        env=env,
        cwd=cwd,
        creationflags=flags,
        start_new_session=not _WINDOWS,
        **popen,
    )
    if plan.after_spawn is None:
        return proc, _nothing
    try:
        return proc, plan.after_spawn(proc)
    except OSError:
        proc.kill()
        proc.wait()
        raise


class Worker:
    """A started worker: the ``Popen`` plus the host's two raw pipe ends."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], cwd: str) -> None:
        child_in, self.stdin_fd = os.pipe()
        self.stdout_fd, child_out = os.pipe()
        # A group of its own: one kill reaches everything the worker started inside it.
        creationflags: int = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0) if _WINDOWS else 0
        try:
            self.proc, self._release = spawn_confined(
                argv,
                env,
                cwd,
                stdin=child_in,
                stdout=child_out,
                stderr=subprocess.DEVNULL,
                close_fds=True,
                creationflags=creationflags,
            )
        except BaseException:
            for fd in (child_in, child_out, self.stdin_fd, self.stdout_fd):
                with contextlib.suppress(OSError):
                    os.close(fd)
            raise
        os.close(child_in)
        os.close(child_out)
        self.pid = self.proc.pid
        self._buf = b""
        self._eof = False
        self._closed = False
        self._queue: queue.Queue[bytes] | None = None
        if _WINDOWS:
            self._queue = queue.Queue(maxsize=_QUEUE_CHUNKS)
            threading.Thread(target=self._pump, daemon=True).start()
        else:
            os.set_blocking(self.stdin_fd, False)

    # -- reading ---------------------------------------------------------------------------

    def _pump(self) -> None:
        """Windows: blocking reads in a daemon thread; ``put`` blocks when the host is busy (back-pressure)."""
        assert self._queue is not None  # noqa: S101 - set before the thread starts
        while True:
            try:
                block = os.read(self.stdout_fd, _CHUNK)
            except OSError:
                block = b""
            self._queue.put(block)
            if not block:
                # This thread owns the descriptor on Windows: nobody else closes it under a pending read.
                with contextlib.suppress(OSError):
                    os.close(self.stdout_fd)
                return

    def _read_chunk(self, timeout: float) -> bytes | None:
        """One chunk (``b""`` at EOF) or ``None`` when nothing arrived within ``timeout``."""
        if self._queue is not None:
            try:
                return self._queue.get(timeout=max(timeout, 0.0))
            except queue.Empty:
                return None
        import select  # noqa: PLC0415 - POSIX path only

        ready, _, _ = select.select([self.stdout_fd], [], [], max(timeout, 0.0))
        if not ready:
            return None
        try:
            return os.read(self.stdout_fd, _CHUNK)
        except OSError:
            return b""

    def next_frame(self, timeout: float) -> tuple[str, bytes] | None:
        """``("line", bytes)``, ``("eof", b"")``, ``("truncated", b"")``, ``("too-large", b"")`` or ``None``.

        At most one frame plus one chunk is ever buffered: nothing is read while a
        complete line is waiting, so a flooding writer only fills the pipe.
        """
        deadline = time.monotonic() + timeout
        while True:
            nl = self._buf.find(b"\n")
            if 0 <= nl <= MAX_FRAME - 1:
                line, self._buf = self._buf[: nl + 1], self._buf[nl + 1 :]
                return ("line", line)
            if nl > MAX_FRAME - 1 or (nl < 0 and len(self._buf) >= MAX_FRAME):
                return ("too-large", b"")
            if self._eof:
                return ("truncated", b"") if self._buf else ("eof", b"")
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            block = self._read_chunk(left)
            if block is None:
                return None
            if not block:
                self._eof = True
                continue
            self._buf += block

    # -- writing ---------------------------------------------------------------------------

    def write(self, data: bytes, deadline: float) -> bool:
        """Write all of ``data`` before ``deadline``; ``False`` if the worker stopped reading in time."""
        view = memoryview(data)
        if _WINDOWS:
            # No select on Windows pipes: a blocking write (the frame is at most 64 KiB).
            while view:
                view = view[os.write(self.stdin_fd, view) :]
            return True
        import select  # noqa: PLC0415 - POSIX path only

        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            _, ready, _ = select.select([], [self.stdin_fd], [], left)
            if not ready:
                continue
            try:
                view = view[os.write(self.stdin_fd, view) :]
            except BlockingIOError:
                continue
        return True

    def close_stdin(self) -> None:
        if self.stdin_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.stdin_fd)
            self.stdin_fd = -1

    # -- ending ----------------------------------------------------------------------------

    def wait_exit(self, timeout: float) -> None:
        """Wait up to ``timeout`` for the worker to exit, without reaping it on POSIX: while it is
        unreaped its pid stays reserved, so the group kill that follows cannot hit a reused pgid."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if _WINDOWS:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
                return
            try:
                if os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
                    return
            except ChildProcessError:
                return
            time.sleep(0.01)

    def kill_tree(self) -> None:
        """Kill the worker and every process still in its group (POSIX) or tree (Windows)."""
        if _WINDOWS:
            root = os.environ.get("SYSTEMROOT", r"C:\Windows")
            taskkill = os.path.join(root, "System32", "taskkill.exe")
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(
                    [taskkill, "/T", "/F", "/PID", str(self.pid)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=5,
                    check=False,
                )
        else:
            # start_new_session made the worker a group leader: its pgid is its pid.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.kill()

    def close(self) -> None:
        """Close the host's descriptors; never waits for whoever still holds the other end."""
        self.close_stdin()
        if not self._closed:
            self._closed = True
            if self.proc.poll() is not None:
                self._release()
            if self._queue is None:
                with contextlib.suppress(OSError):
                    os.close(self.stdout_fd)
            # Windows: the reader thread may still be inside os.read on this fd; closing it under the
            # thread could hand the number to another file. The thread closes it at EOF.
