"""macOS: the worker starts under ``sandbox-exec`` with a deny-by-default profile; it asks the kernel whether it is.

Standard library only. The profile starts from ``(deny default)`` and allows
only the rules in ``ALLOWED_RULES``, each listed with why the worker needs it:
reading the bundle, its own folder and the system libraries the interpreter
loads; writing its own folder; executing its own binary (``sandbox-exec``
execs it after the profile is in force); two Mach services of libSystem.
No network, no fork, no other file, no other process. The profile text holds
no path of the host: those reach it as ``-D`` parameters, so no path is ever
spliced into profile source (a quote or a parenthesis in a folder name cannot
change the rules). Never run here (no Mac): the tests parse the profile and
the command line; README, "Known boundaries".
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from collections.abc import Sequence
from pathlib import PurePosixPath

from skillhost.os_sandbox._interface import Layer, layer

__all__ = ["ALLOWED_RULES", "PROFILE", "SANDBOX_EXEC", "profile", "profile_digest", "self_report", "wrap_command"]

SANDBOX_EXEC = "/usr/bin/sandbox-exec"

MAX_READ_ROOTS = 8

# System folders the interpreter and its extension modules load from (dyld's shared cache and libSystem).
_SYSTEM_LIBRARIES = ("/usr/lib", "/System/Library", "/System/Volumes/Preboot/Cryptexes/OS", "/private/var/db/dyld")

# Every allow rule of the profile and why; ``{read_roots}`` becomes one parameter per bundle folder.
ALLOWED_RULES: tuple[tuple[str, str], ...] = (
    ('(allow process-exec (literal (param "WORKER_EXE")) (literal (param "WORKER_EXE_REAL")))',
     "sandbox-exec applies the profile, then execs the worker's own binary; nothing else may run"),
    ("(allow file-read* {read_roots} (subpath (param \"WORKER_TMP\")))",
     "the bundle (the interpreter, its modules, the bundled skills) and the worker's own folder"),
    ("(allow file-read* " + " ".join(f'(subpath "{p}")' for p in _SYSTEM_LIBRARIES) + ")",
     "the system libraries dyld maps into every process, from the shared cache"),
    ('(allow file-read* (literal "/dev/null") (literal "/dev/urandom") (subpath "/private/var/db/timezone"))',
     "the null device, the random device the interpreter seeds from, and time-zone data for localtime()"),
    ("(allow file-read-metadata)",
     "stat of a path's parent folders: dyld and the interpreter resolve paths one component at a time "
     "(metadata only: a folder's listing and a file's contents stay denied)"),
    ('(allow file-write* (subpath (param "WORKER_TMP")) (literal "/dev/null"))',
     "the worker's own folder, and discarding output"),
    ('(allow mach-lookup (global-name "com.apple.system.notification_center"))',
     "libnotify: localtime() registers for time-zone changes"),
    ('(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo"))',
     "libinfo: the interpreter's start looks up the user's record (getpwuid) for the home folder"),
    ("(allow sysctl-read)", "libSystem and the interpreter read the CPU count, page size and OS version"),
    ("(allow signal (target self))", "the interpreter's own signal handling (abort, a timer)"),
)  # fmt: skip

_FORBIDDEN = ("\x00", "\n", "\r")


def profile(read_roots: int) -> str:
    """The profile for ``read_roots`` bundle folders: parameter names only, never a path."""
    if not 1 <= read_roots <= MAX_READ_ROOTS:
        raise ValueError(f"between 1 and {MAX_READ_ROOTS} read roots")
    roots = " ".join(f'(subpath (param "READ_ROOT_{i}"))' for i in range(read_roots))
    rules = "\n".join(rule.replace("{read_roots}", roots) for rule, _why in ALLOWED_RULES)
    return f"(version 1)\n(deny default)\n{rules}\n"


# The profile of a frozen worker (one bundle folder).
PROFILE = profile(1)


def profile_digest(read_roots: int) -> str:
    return hashlib.sha256(profile(read_roots).encode("utf-8")).hexdigest()


def _param(name: str, value: str) -> list[str]:
    if not PurePosixPath(value).is_absolute() or any(c in value for c in _FORBIDDEN):
        raise ValueError(f"{name} must be an absolute path without control characters")
    return ["-D", f"{name}={value}"]


def wrap_command(argv: Sequence[str], tmp_dir: str, read_roots: Sequence[str]) -> list[str]:
    """``sandbox-exec -D ... -p PROFILE <worker argv>``; paths are resolved as the kernel sees them."""
    if not argv:
        raise ValueError("empty worker command")
    exe = argv[0]
    roots = [arg for i, root in enumerate(read_roots) for arg in _param(f"READ_ROOT_{i}", os.path.realpath(root))]
    return [
        SANDBOX_EXEC,
        *roots,
        *_param("WORKER_TMP", os.path.realpath(tmp_dir)),
        *_param("WORKER_EXE", exe),
        *_param("WORKER_EXE_REAL", os.path.realpath(exe)),
        "-p",
        profile(len(read_roots)),
        *argv,
    ]


def self_report(read_roots: int, libc: ctypes.CDLL | None = None) -> list[Layer]:
    """``sandbox_check(getpid(), NULL, 0)`` is 1 in a sandboxed process (libsystem_sandbox); with the digest of
    the profile this build gives ``sandbox-exec`` for ``read_roots`` bundle folders."""
    digest = f"profile sha256 {profile_digest(read_roots)[:16]}" if 1 <= read_roots <= MAX_READ_ROOTS else "no profile"
    try:
        lib = libc if libc is not None else ctypes.CDLL(None, use_errno=True)
        check = lib.sandbox_check
    except (OSError, AttributeError):
        return [layer("sandbox-exec", applied=False, detail="sandbox_check is not available")]
    check.restype = ctypes.c_int
    sandboxed = check(os.getpid(), None, 0) == 1
    return [layer("sandbox-exec", applied=sandboxed, detail=f"sandbox_check=1, {digest}" if sandboxed else
                  "not sandboxed")]  # fmt: skip
