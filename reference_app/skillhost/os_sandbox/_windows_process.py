"""Windows: the host's side of a worker it started itself (``_windows.start_worker``).

Standard library only. ``plan`` is the launch plan whose ``start`` takes the
same stream arguments as ``subprocess.Popen`` (a descriptor, ``PIPE`` or
``DEVNULL``), hands the child its three standard handles and nothing else,
and returns a ``WindowsProcess``: the part of ``Popen`` the host uses, over the
process handle. Released once reaped: the process handle, then the job (whose
kill-on-close ends anything left in it), then the worker's own desktop.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from skillhost.os_sandbox._interface import LaunchPlan
from skillhost.os_sandbox._windows import Started, start_worker, win32k_lockdown_asked
from skillhost.os_sandbox._windows_api import Win32
from skillhost.os_sandbox._windows_structs import INFINITE, WAIT_OBJECT_0, WAIT_TIMEOUT

__all__ = ["WindowsProcess", "plan"]


class WindowsProcess:
    """The part of ``subprocess.Popen`` the host uses, over a process handle this module started."""

    def __init__(self, api: Win32, started: Started, argv: Sequence[str], stdin: IO[bytes] | None,
                 stdout: IO[bytes] | None) -> None:  # fmt: skip
        self._api, self._handle, self.args = api, started.process, list(argv)
        self.pid, self.stdin, self.stdout = started.pid, stdin, stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and self._api.wait(self._handle, 0) == WAIT_OBJECT_0:
            self.returncode = self._api.exit_code(self._handle)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            millis = INFINITE if timeout is None else max(int(timeout * 1000), 0)
            if self._api.wait(self._handle, millis) == WAIT_TIMEOUT:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            self.returncode = self._api.exit_code(self._handle)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            self._api.terminate(self._handle, 1)

    def communicate(self, input: bytes | None = None, timeout: float | None = None) -> tuple[bytes, None]:
        """Write ``input`` and close stdin, read stdout to its end; ``TimeoutExpired`` when it does not end."""
        chunks: list[bytes] = []

        def pump() -> None:
            if self.stdin is not None:
                try:
                    if input:
                        self.stdin.write(input)
                    self.stdin.close()
                except OSError:
                    pass  # the worker exited without reading: its answer says why
            if self.stdout is not None:
                chunks.append(self.stdout.read())

        thread = threading.Thread(target=pump, daemon=True)
        thread.start()
        thread.join(timeout)
        if thread.is_alive():
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        self.wait(timeout)
        return b"".join(chunks), None

    def close_handle(self) -> None:
        self._api.close(self._handle)


def _std_handle(spec: object, to_handle: Callable[[int], int], opened: list[int],
                parent: list[tuple[int, str]], *, reading: bool) -> int:  # fmt: skip
    """The child's OS handle for one ``Popen``-style stream argument; pipes' host ends go to ``parent``."""
    if spec == subprocess.PIPE:
        read_end, write_end = os.pipe()
        child, host = (read_end, write_end) if reading else (write_end, read_end)
        opened.append(child)
        parent.append((host, "wb" if reading else "rb"))
        return to_handle(child)
    if isinstance(spec, int) and spec >= 0:
        return to_handle(spec)
    fd = os.open(os.devnull, os.O_RDWR)  # DEVNULL or None: never the host's own console
    opened.append(fd)
    return to_handle(fd)


def plan(argv: Sequence[str], tmp_dir: str, read_roots: Sequence[str], api_factory: Callable[[], Win32] = Win32,
         to_handle: Callable[[int], int] | None = None, *, environ: Mapping[str, str] = os.environ) -> LaunchPlan:
    """A launch plan whose ``start`` starts the worker itself (``subprocess`` cannot pass an AppContainer).

    Win32k lockdown is asked for when the host's ``environ`` says so (``win32k_lockdown_asked``).
    """
    win32k_lockdown = win32k_lockdown_asked(environ)

    def start(env: dict[str, str], cwd: str, **popen: Any) -> tuple[WindowsProcess, Callable[[], None]]:
        convert = to_handle or _osf_handle
        opened: list[int] = []
        parent: list[tuple[int, str]] = []
        try:
            std = (_std_handle(popen.get("stdin"), convert, opened, parent, reading=True),
                   _std_handle(popen.get("stdout"), convert, opened, parent, reading=False),
                   _std_handle(popen.get("stderr"), convert, opened, parent, reading=False))  # fmt: skip
            api = api_factory()
            started = start_worker(api, argv, env, cwd, std=std, read_roots=read_roots, tmp_dir=tmp_dir,
                                   win32k_lockdown=win32k_lockdown)
        except BaseException:
            for fd, _mode in parent:
                os.close(fd)
            raise
        finally:
            for fd in opened:  # the child holds its own copies now
                os.close(fd)
        ends = {mode: os.fdopen(fd, mode) for fd, mode in parent}
        proc = WindowsProcess(api, started, argv, ends.get("wb"), ends.get("rb"))

        def release() -> None:
            # Once reaped: the process handle, then the job (kill-on-close ends anything left in it), then the
            # desktop, which nothing of the worker's uses any more.
            proc.close_handle()
            api.close(started.job)
            if started.desktop:
                api.close_desktop(started.desktop)

        return proc, release

    return LaunchPlan(list(argv), {}, None, start)


def _osf_handle(fd: int) -> int:
    import msvcrt  # noqa: PLC0415 - Windows only

    return int(msvcrt.get_osfhandle(fd))  # type: ignore[attr-defined]
