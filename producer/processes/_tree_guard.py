"""A watchdog that ends a child's process tree when the producer itself is killed (POSIX).

``run_bounded`` starts each child in a session of its own so that it can kill
the whole tree, but that also means nothing ties the tree to the producer's
life: a SIGKILL to the producer (a runner cancel, the OOM killer) would leave
PyInstaller or the installed app running, still writing into a work folder
that the rerun removes. A signal handler cannot help against SIGKILL, so a
second, tiny process keeps watch instead: it holds the read end of a pipe
whose only write end is the producer's, and when that end closes without the
word "done" (the kernel closes it when the producer dies, however it dies), it
kills the child's process group.

The watchdog runs in a session of its own, so a kill aimed at the producer's
group does not take it along. Windows has no process groups to kill and is
left to ``kill_tree``'s ``taskkill /T`` on the paths that unwind.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys

# Reads the child's process group id, then waits: "done" releases it; end of file means the producer died.
_WATCHDOG = (
    "import os, signal, sys\n"
    "line = sys.stdin.buffer.readline()\n"
    "if line.strip().isdigit():\n"
    "    if sys.stdin.buffer.read(4) != b'done':\n"
    "        try:\n"
    "            os.killpg(int(line), signal.SIGKILL)\n"
    "        except (ProcessLookupError, PermissionError):\n"
    "            pass\n"
)
_RELEASE_TIMEOUT = 10.0


def watchdog_argv(python: str = sys.executable) -> list[str]:
    """The watchdog's command line: isolated mode, no site packages, so it starts in milliseconds."""
    return [python, "-I", "-S", "-c", _WATCHDOG]


class TreeGuard:
    """Started before the child, told its process group, released once the child has been reaped."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = proc

    @classmethod
    def start(cls, *, platform: str = sys.platform) -> TreeGuard | None:
        """A running watchdog, or None where there is no process group to guard (Windows) or it cannot start."""
        if platform == "win32":
            return None
        try:
            proc = subprocess.Popen(watchdog_argv(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
        except OSError:
            return None
        return cls(proc)

    def watch(self, pgid: int) -> None:
        stdin = self._proc.stdin
        if stdin is None:  # pragma: no cover - the pipe was requested
            return
        with contextlib.suppress(OSError):
            stdin.write(f"{pgid}\n".encode("ascii"))
            stdin.flush()

    def release(self) -> None:
        """The child is gone: the watchdog exits without killing anything."""
        stdin = self._proc.stdin
        with contextlib.suppress(OSError):
            if stdin is not None:
                stdin.write(b"done")
                stdin.close()
        try:
            self._proc.wait(timeout=_RELEASE_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


__all__ = ["TreeGuard", "watchdog_argv"]
