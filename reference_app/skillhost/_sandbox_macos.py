"""macOS: the worker starts under ``sandbox-exec`` with a fixed profile; the worker asks the kernel whether it is.

Standard library only. The profile text is constant: the paths reach it as
``-D`` parameters, so no path is ever spliced into profile source (a quote or a
parenthesis in a folder name cannot change the rules). What it denies: every
network operation, every file write outside the worker's temporary folder (and
``/dev/null``), executing anything but the worker's own binary (``sandbox-exec``
itself execs the worker after the profile is in force), forking, and signals to
other processes. Reads are *not* confined on macOS (README, "what remains outside").
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from pathlib import PurePosixPath

from skillhost._os_sandbox import Layer, layer

__all__ = ["PROFILE", "SANDBOX_EXEC", "self_report", "wrap_command"]

SANDBOX_EXEC = "/usr/bin/sandbox-exec"

PROFILE = """(version 1)
(allow default)
(deny network*)
(deny file-write*)
(allow file-write* (subpath (param "WORKER_TMP")) (literal "/dev/null"))
(deny process-exec*)
(allow process-exec (literal (param "WORKER_EXE")) (literal (param "WORKER_EXE_REAL")))
(deny process-fork)
(deny signal (target others))
"""

_FORBIDDEN = ("\x00", "\n", "\r")


def _param(name: str, value: str) -> list[str]:
    if not PurePosixPath(value).is_absolute() or any(c in value for c in _FORBIDDEN):
        raise ValueError(f"{name} must be an absolute path without control characters")
    return ["-D", f"{name}={value}"]


def wrap_command(argv: Sequence[str], tmp_dir: str, read_roots: Sequence[str]) -> list[str]:
    """``sandbox-exec -D ... -p PROFILE <worker argv>``; ``read_roots`` are unused: reads are not confined."""
    del read_roots  # the profile allows reads by default; kept for the one launch_plan signature
    if not argv:
        raise ValueError("empty worker command")
    exe = argv[0]
    return [
        SANDBOX_EXEC,
        *_param("WORKER_TMP", os.path.realpath(tmp_dir)),
        *_param("WORKER_EXE", exe),
        *_param("WORKER_EXE_REAL", os.path.realpath(exe)),
        "-p",
        PROFILE,
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
