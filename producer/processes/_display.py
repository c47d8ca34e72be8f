"""A display for a GUI app's probe and journey: a private Xvfb, Qt's offscreen platform, or none.

Linux CI runners have no display, so a GUI toolkit cannot even start its
application object there. The policy names what the app gets, per platform:

* ``xvfb``: a private X server started for this job alone. ``-displayfd``
  lets Xvfb choose a free display number and write it to a pipe once it
  accepts connections, so there is no guessing at numbers, no race with
  another job's server, and no sleep: the number arriving is the readiness.
  It listens on its local socket only (``-nolisten tcp``) and, with no
  ``-auth`` file, admits local clients, so the child needs no XAUTHORITY
  (the job's own, were it passed, would be a credential of the runner's).
  Its start is bounded, it is torn down on every path out, and a watchdog
  ends it should the producer itself be killed outright.
* ``offscreen``: ``QT_QPA_PLATFORM=offscreen``, Qt's own headless platform.
* ``none``: nothing added (macOS and Windows runners have a desktop).

``display_env`` is a context manager yielding the names to add to the
app's minimal environment; nothing else of the job's environment reaches it.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

from desktop_qualify.evidence_schemas import Code, DisplayKind, QualificationError

from ._tree_guard import TreeGuard

DISPLAY_KINDS: tuple[str, ...] = get_args(DisplayKind)

# Xvfb is up in well under a second; a loaded two-core runner gets ample room, a wedged one a bounded wait.
START_TIMEOUT = 20.0
_STOP_TIMEOUT = 5.0
_SCREEN = "1280x800x24"


def xvfb_argv(xvfb: str, write_fd: int) -> list[str]:
    """Xvfb's command line: a free display chosen by the server, local socket only, no reset between clients."""
    return [xvfb, "-displayfd", str(write_fd), "-nolisten", "tcp", "-noreset", "-screen", "0", _SCREEN]


def _read_display(read_fd: int, proc: subprocess.Popen[bytes], deadline: float) -> str:
    """The display number Xvfb writes once it is ready; '' if it exits or the deadline passes first."""
    said = b""
    while time.monotonic() < deadline and b"\n" not in said:
        ready, _, _ = select.select([read_fd], [], [], min(0.2, max(0.0, deadline - time.monotonic())))
        if ready:
            chunk = os.read(read_fd, 64)
            if not chunk:  # the server closed its end: it exited (or will) without a display
                break
            said += chunk
        elif proc.poll() is not None:
            break
    number = said.split(b"\n", 1)[0].strip()
    return number.decode("ascii") if number.isdigit() and b"\n" in said else ""


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate, then kill; always reaped."""
    if proc.poll() is None:
        with contextlib.suppress(OSError):
            proc.terminate()
        try:
            proc.wait(timeout=_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                proc.kill()
            proc.wait()


def _log_tail(log: Path) -> str:
    try:
        return log.read_bytes()[-600:].decode("utf-8", errors="replace").strip()
    except OSError:
        return ""


@contextlib.contextmanager
def xvfb_display(*, xvfb: str | None = None, start_timeout: float = START_TIMEOUT) -> Iterator[dict[str, str]]:
    """A private Xvfb for the duration of the block; yields ``{"DISPLAY": ":N"}``."""
    found = xvfb or shutil.which("Xvfb")
    if found is None:
        raise QualificationError(Code.ENVIRONMENT, "the policy asks for an Xvfb display, and Xvfb is not installed "
                                                   "(Debian: apt-get install xvfb)",
                                 hint="or set [app.display] to \"offscreen\" for a toolkit with a headless platform")
    read_fd, write_fd = os.pipe()
    guard = TreeGuard.start()
    with tempfile.TemporaryDirectory(prefix="qualify-xvfb-") as scratch:
        log = Path(scratch) / "xvfb.log"
        try:
            with log.open("wb") as sink:
                proc = subprocess.Popen(xvfb_argv(found, write_fd), pass_fds=(write_fd,), stdin=subprocess.DEVNULL,
                                        stdout=sink, stderr=sink, start_new_session=True, close_fds=True)
        except OSError as exc:
            os.close(read_fd)
            os.close(write_fd)
            if guard is not None:
                guard.release()
            raise QualificationError(Code.ENVIRONMENT, f"Xvfb ({found}) cannot be started: {exc}") from exc
        os.close(write_fd)  # the server's copy is the only one left: its exit closes the pipe
        if guard is not None:
            guard.watch(proc.pid)
        try:
            deadline = time.monotonic() + start_timeout
            number = _read_display(read_fd, proc, deadline)
            if not number:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=0 if time.monotonic() >= deadline else 2)  # a closed pipe: it is exiting
                state = "exited" if proc.poll() is not None else f"was not ready within {start_timeout:.0f} s"
                raise QualificationError(Code.ENVIRONMENT, f"Xvfb {state}: {_log_tail(log) or 'it said nothing'}")
            yield {"DISPLAY": f":{number}"}
        finally:
            os.close(read_fd)
            _stop(proc)
            if guard is not None:
                guard.release()


@contextlib.contextmanager
def display_env(kind: DisplayKind, *, platform: str = sys.platform) -> Iterator[dict[str, str]]:
    """The environment names a GUI app's probe and journey get for ``kind``, valid inside the block."""
    if kind == "xvfb":
        if not platform.startswith("linux"):
            raise QualificationError(Code.POLICY_INVALID, "an Xvfb display is for Linux runners only; macOS and "
                                                          "Windows runners have a desktop (use \"none\")")
        with xvfb_display() as env:
            yield env
    elif kind == "offscreen":
        yield {"QT_QPA_PLATFORM": "offscreen"}
    elif kind == "none":
        yield {}
    else:
        raise QualificationError(Code.POLICY_INVALID, f"unknown display kind {kind!r}; "
                                                      f"one of {', '.join(DISPLAY_KINDS)}")


__all__ = ["DISPLAY_KINDS", "display_env", "xvfb_display"]
