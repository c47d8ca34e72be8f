"""macOS: the worker starts under ``sandbox-exec`` with a fixed profile; the worker asks the kernel whether it is.

Standard library only. The profile text holds no path: the paths reach it as
``-D`` parameters, so no path is ever spliced into profile source (a quote or a
parenthesis in a folder name cannot change the rules). What it denies: every
network operation; reading file contents under the user's home and the system
temporary folder, except the bundle and the worker's own temporary folder (a
later rule wins in a sandbox profile); every file write outside the worker's
temporary folder (and ``/dev/null``); executing anything but the worker's own
binary (``sandbox-exec`` itself execs the worker after the profile is in force);
forking; signals to other processes. Reads elsewhere (system files) stay allowed
(README, "what remains outside"). Never run here: only the command line and the
profile text are tested.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
from collections.abc import Sequence
from pathlib import PurePosixPath

from skillhost._os_sandbox import Layer, layer

__all__ = ["PROFILE", "SANDBOX_EXEC", "profile", "self_report", "wrap_command"]

SANDBOX_EXEC = "/usr/bin/sandbox-exec"

MAX_READ_ROOTS = 8

_PROFILE = """(version 1)
(allow default)
(deny network*)
(deny file-read-data (subpath (param "HOST_HOME")) (subpath (param "HOST_TMP")))
(allow file-read-data {read_roots} (subpath (param "WORKER_TMP")))
(deny file-write*)
(allow file-write* (subpath (param "WORKER_TMP")) (literal "/dev/null"))
(deny process-exec*)
(allow process-exec (literal (param "WORKER_EXE")) (literal (param "WORKER_EXE_REAL")))
(deny process-fork)
(deny signal (target others))
"""

_FORBIDDEN = ("\x00", "\n", "\r")


def profile(read_roots: int) -> str:
    """The profile for ``read_roots`` bundle folders: parameter names only, never a path."""
    if not 1 <= read_roots <= MAX_READ_ROOTS:
        raise ValueError(f"between 1 and {MAX_READ_ROOTS} read roots")
    return _PROFILE.format(read_roots=" ".join(f'(subpath (param "READ_ROOT_{i}"))' for i in range(read_roots)))


# The profile of a frozen worker (one bundle folder).
PROFILE = profile(1)


def _param(name: str, value: str) -> list[str]:
    if not PurePosixPath(value).is_absolute() or any(c in value for c in _FORBIDDEN):
        raise ValueError(f"{name} must be an absolute path without control characters")
    return ["-D", f"{name}={value}"]


def wrap_command(argv: Sequence[str], tmp_dir: str, read_roots: Sequence[str],
                 home: str | None = None) -> list[str]:
    """``sandbox-exec -D ... -p PROFILE <worker argv>``; paths are resolved as the kernel sees them."""
    if not argv:
        raise ValueError("empty worker command")
    exe = argv[0]
    roots = [arg for i, root in enumerate(read_roots) for arg in _param(f"READ_ROOT_{i}", os.path.realpath(root))]
    return [
        SANDBOX_EXEC,
        *_param("HOST_HOME", os.path.realpath(home or os.path.expanduser("~"))),  # noqa: PTH111
        *_param("HOST_TMP", os.path.realpath(tempfile.gettempdir())),
        *roots,
        *_param("WORKER_TMP", os.path.realpath(tmp_dir)),
        *_param("WORKER_EXE", exe),
        *_param("WORKER_EXE_REAL", os.path.realpath(exe)),
        "-p",
        profile(len(read_roots)),
        *argv,
    ]


def self_report(libc: ctypes.CDLL | None = None) -> list[Layer]:
    """``sandbox_check(getpid(), NULL, 0)`` is 1 in a sandboxed process (libsystem_sandbox)."""
    try:
        lib = libc if libc is not None else ctypes.CDLL(None, use_errno=True)
        check = lib.sandbox_check
    except (OSError, AttributeError):
        return [layer("sandbox-exec", applied=False, detail="sandbox_check is not available")]
    check.restype = ctypes.c_int
    sandboxed = check(os.getpid(), None, 0) == 1
    return [layer("sandbox-exec", applied=sandboxed, detail="sandbox_check=1" if sandboxed else "not sandboxed")]
