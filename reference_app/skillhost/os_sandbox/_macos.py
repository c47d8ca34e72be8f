"""macOS: the worker starts under ``sandbox-exec`` with a deny-by-default profile; it asks the sandbox whether it is.

Standard library only. The profile starts from ``(deny default)`` and allows
only the rules in ``ALLOWED_RULES``, each listed with why the worker needs it:
reading the bundle, its own folder and the system libraries the interpreter
loads; writing its own folder; executing its own binary (``sandbox-exec``
execs it after the profile is in force); two Mach services of libSystem.
No network, no fork, no other file, no other process. The profile text holds
no path of the host: those reach it as ``-D`` parameters, so no path is ever
spliced into profile source (a quote or a parenthesis in a folder name cannot
change the rules). The worker reads the profile back the one way macOS allows,
by probing it (``READ_BACK_PROBES`` through ``sandbox_check``), and credits a
refusal to the sandbox only when ``sandbox_check`` says the profile denies that
operation (``sandbox_denies``, asked by ``worker._hostile``), never from the
errno alone. Never run here (no Mac): the tests parse the profile and the
command line and fake ``sandbox_check``; README, "Known boundaries".
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from collections.abc import Sequence
from pathlib import PurePosixPath

from skillhost.os_sandbox._interface import Layer, layer

__all__ = [
    "ALLOWED_RULES", "DENIED_RULES", "PROFILE", "READ_BACK_PROBES", "SANDBOX_EXEC", "SYSCTL_NAMES",
    "framework_executable", "parent_folders", "profile", "profile_digest", "sandbox_denies", "self_report",
    "wrap_command",
]  # fmt: skip

SANDBOX_EXEC = "/usr/bin/sandbox-exec"

MAX_READ_ROOTS = 8

# System folders the interpreter and its extension modules load from (dyld's shared cache and libSystem).
_SYSTEM_LIBRARIES = ("/usr/lib", "/System/Library", "/System/Volumes/Preboot/Cryptexes/OS", "/private/var/db/dyld")

MAX_PARENTS = 32

# The sysctl names the worker may read, each with who reads it; every other name stays denied.
SYSCTL_NAMES: tuple[tuple[str, str], ...] = (
    ("hw.ncpu", "os.cpu_count() and libdispatch size their pools from it"),
    ("hw.activecpu", "sysconf(_SC_NPROCESSORS_ONLN), which libSystem answers from it"),
    ("hw.pagesize", "getpagesize(): the allocator and mmap sizes"),
    ("hw.memsize", "libmalloc sizes its zones from the physical memory"),
    ("kern.osrelease", "uname() release (os.uname, platform)"),
    ("kern.osversion", "the OS build, read by libSystem's version checks"),
    ("kern.ostype", "uname() system name"),
    ("kern.version", "uname() version string"),
    ("hw.machine", "uname() machine (x86_64 or arm64)"),
    ("sysctl.proc_translated", "whether the process runs under Rosetta, asked by libSystem and platform"),
)
# hw.optional.*: the CPU features libSystem, libm and libcrypto dispatch on (avx2, arm64 extensions...).
SYSCTL_PREFIXES: tuple[tuple[str, str], ...] = (("hw.optional.", "CPU feature flags for code dispatch"),)

# Operations denied explicitly, as Mozilla's profiles do even under ``(deny default)``: a later allow cannot
# widen them by accident, and each stays denied outside the one allow rule that names its need.
DENIED_RULES: tuple[tuple[str, str], ...] = (
    ("(deny process-info*)", "no reading of other processes (pid lists, their arguments, their memory maps)"),
    ("(deny nvram*)", "no firmware variables"),
    ("(deny iokit-get-properties)", "no hardware registry properties (serial numbers, device identifiers)"),
    ("(deny file-map-executable)", "no executable mapping but the code the allow rule below names"),
)

_SYSCTL_FILTERS = " ".join([*(f'(sysctl-name "{n}")' for n, _ in SYSCTL_NAMES),
                            *(f'(sysctl-name-prefix "{n}")' for n, _ in SYSCTL_PREFIXES)])  # fmt: skip
_SYSTEM_SUBPATHS = " ".join(f'(subpath "{p}")' for p in _SYSTEM_LIBRARIES)

# Every allow rule of the profile and why; ``{read_roots}`` becomes one parameter per bundle folder,
# ``{parents}`` the folders above them (``MAX_PARENTS`` parameters, the unused ones "/").
ALLOWED_RULES: tuple[tuple[str, str], ...] = (
    ('(allow process-exec (literal (param "WORKER_EXE")) (literal (param "WORKER_EXE_REAL")) '
     '(literal (param "WORKER_EXE_FRAMEWORK")))',
     "sandbox-exec applies the profile, then execs the worker's own binary; from source, a framework build's "
     "bin/python3.x then execs Python.app/Contents/MacOS/Python, named by its resolved path (the worker's own "
     "binary again when there is none); nothing else may run"),
    ("(allow file-read* {read_roots} (subpath (param \"WORKER_TMP\")))",
     "the bundle (the interpreter, its modules, the bundled skills) and the worker's own folder"),
    ("(allow file-read* " + _SYSTEM_SUBPATHS + ")",
     "the system libraries dyld maps into every process, from the shared cache"),
    ("(allow file-map-executable {read_roots} " + _SYSTEM_SUBPATHS + ")",
     "dyld maps the interpreter, its extension modules and the system libraries executable; never a file "
     "of the worker's writable folder"),
    ('(allow file-read* (literal "/dev/null") (literal "/dev/urandom") (subpath "/private/var/db/timezone"))',
     "the null device, the random device the interpreter seeds from, and time-zone data for localtime()"),
    ('(allow file-read-metadata (literal "/") {parents} (literal "/private/etc/localtime"))',
     "stat of the folders above the ones it reads (realpath() and dyld resolve paths one component at a "
     "time) and of the localtime link; no other path's metadata"),
    ('(allow file-write* (subpath (param "WORKER_TMP")) (literal "/dev/null"))',
     "the worker's own folder, and discarding output"),
    ('(allow mach-lookup (global-name "com.apple.system.notification_center"))',
     "libnotify: localtime() registers for time-zone changes"),
    ('(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo"))',
     "libinfo: the interpreter's start looks up the user's record (getpwuid) for the home folder"),
    ("(allow sysctl-read " + _SYSCTL_FILTERS + ")", "the named sysctl values only (SYSCTL_NAMES)"),
    ("(allow process-info-pidinfo (target self))",
     "libSystem and the interpreter read their own process's information; never another process's"),
    ("(allow signal (target self))", "the interpreter's own signal handling (abort, a timer)"),
)  # fmt: skip

_FORBIDDEN = ("\x00", "\n", "\r")


def profile(read_roots: int) -> str:
    """The profile for ``read_roots`` bundle folders: parameter names only, never a path."""
    if not 1 <= read_roots <= MAX_READ_ROOTS:
        raise ValueError(f"between 1 and {MAX_READ_ROOTS} read roots")
    roots = " ".join(f'(subpath (param "READ_ROOT_{i}"))' for i in range(read_roots))
    parents = " ".join(f'(literal (param "PARENT_{i}"))' for i in range(MAX_PARENTS))
    denies = "\n".join(rule for rule, _why in DENIED_RULES)
    rules = "\n".join(rule.replace("{read_roots}", roots).replace("{parents}", parents) for rule, _why in ALLOWED_RULES)
    return f"(version 1)\n(deny default)\n{denies}\n{rules}\n"


# The profile of a frozen worker (one bundle folder).
PROFILE = profile(1)


def profile_digest(read_roots: int) -> str:
    return hashlib.sha256(profile(read_roots).encode("utf-8")).hexdigest()


def _param(name: str, value: str) -> list[str]:
    if not PurePosixPath(value).is_absolute() or any(c in value for c in _FORBIDDEN):
        raise ValueError(f"{name} must be an absolute path without control characters")
    return ["-D", f"{name}={value}"]


def parent_folders(paths: Sequence[str]) -> list[str]:
    """Every folder strictly above ``paths`` but "/", once, in order; ``ValueError`` past ``MAX_PARENTS``."""
    out: dict[str, None] = {}
    for path in paths:
        for parent in reversed(PurePosixPath(path).parents):
            if str(parent) != "/":
                out[str(parent)] = None
    if len(out) > MAX_PARENTS:
        raise ValueError(f"more than {MAX_PARENTS} parent folders")
    return list(out)


def framework_executable(base_prefix: str, framework: str | None, *, frozen: bool) -> str | None:
    """From source, a framework build's real interpreter, resolved: ``<base_prefix>/Resources/Python.app/Contents/
    MacOS/<framework>`` (``sysconfig``'s ``PYTHONFRAMEWORK``, "Python" for python.org's and Homebrew's builds),
    which ``bin/python3.x`` execs. ``None`` when frozen, not a framework build, or no such file."""
    if frozen or not framework or "/" in framework:
        return None
    path = os.path.join(base_prefix, "Resources", "Python.app", "Contents", "MacOS", framework)  # noqa: PTH118
    return os.path.realpath(path) if os.path.isfile(path) else None  # noqa: PTH113


def wrap_command(argv: Sequence[str], tmp_dir: str, read_roots: Sequence[str],
                 framework_exe: str | None = None) -> list[str]:  # fmt: skip
    """``sandbox-exec -D ... -p PROFILE <worker argv>``; paths are resolved as the kernel sees them.

    ``framework_exe``: the one more binary the worker's own may exec (``framework_executable``); without it the
    parameter names the worker's binary again, so the rule allows nothing more.
    """
    if not argv:
        raise ValueError("empty worker command")
    exe = argv[0]
    real_exe = os.path.realpath(exe)
    framework = os.path.realpath(framework_exe) if framework_exe else real_exe
    real_roots = [os.path.realpath(root) for root in read_roots]
    roots = [arg for i, root in enumerate(real_roots) for arg in _param(f"READ_ROOT_{i}", root)]
    above = parent_folders(list(dict.fromkeys([*real_roots, os.path.realpath(tmp_dir), real_exe, framework])))
    above += ["/"] * (MAX_PARENTS - len(above))
    parents = [arg for i, folder in enumerate(above) for arg in _param(f"PARENT_{i}", folder)]
    return [
        SANDBOX_EXEC,
        *roots,
        *parents,
        *_param("WORKER_TMP", os.path.realpath(tmp_dir)),
        *_param("WORKER_EXE", exe),
        *_param("WORKER_EXE_REAL", real_exe),
        *_param("WORKER_EXE_FRAMEWORK", framework),
        "-p",
        profile(len(read_roots)),
        *argv,
    ]


# The read-back. macOS hands no process its applied profile, so the worker probes it: it asks ``sandbox_check``
# (its own pid) about operations every profile this module generates denies whatever their argument, and counts
# the layer applied only when the sandbox says it denies each one. Each has no allow rule at all here (an explicit
# deny, or none under ``(deny default)``), so an unfiltered check has one right answer: a profile other than this
# module's (``(allow default)``, one with a network or fork rule, one without Mozilla's explicit denies) fails
# at least one probe, where ``sandbox_check(pid, NULL, 0)`` alone says only that some profile is in force.
# Path- and target-scoped operations are not probed here: their answer depends on the argument (and
# ``sandbox_check`` has no filter for another pid), so the hostile self-test asks about each of its real targets.
READ_BACK_PROBES: tuple[tuple[str, str], ...] = (
    ("process-info-listpids", "(deny process-info*): no list of the other processes"),
    ("nvram-get", "(deny nvram*): no firmware variables"),
    ("iokit-get-properties", "(deny iokit-get-properties): no hardware registry properties"),
    ("network-outbound", "no network rule at all: no connection, loopback included"),
    ("process-fork", "no fork rule: the worker starts no process"),
)


def self_report(read_roots: int, libc: ctypes.CDLL | None = None) -> list[Layer]:
    """``sandbox_check(getpid(), NULL, 0)`` is 1 in a sandboxed process (libsystem_sandbox); applied only when the
    sandbox also denies every ``READ_BACK_PROBES`` operation. The digest is of the profile this build *generates*
    for ``read_roots`` bundle folders and hands ``sandbox-exec``, not one read back: macOS has no call for that."""
    digest = f"profile sha256 {profile_digest(read_roots)[:16]}" if 1 <= read_roots <= MAX_READ_ROOTS else "no profile"
    try:
        lib = libc if libc is not None else ctypes.CDLL(None, use_errno=True)
        check = lib.sandbox_check
    except (OSError, AttributeError):
        return [layer("sandbox-exec", applied=False, detail="sandbox_check is not available")]
    check.restype, check.argtypes = ctypes.c_int, [ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    if check(os.getpid(), None, 0) != 1:
        return [layer("sandbox-exec", applied=False, detail="not sandboxed")]
    allowed = [op for op, _why in READ_BACK_PROBES if not sandbox_denies(op, libc=lib)]
    if allowed:
        return [layer("sandbox-exec", applied=False, detail=f"sandbox_check=1, not denied: {', '.join(allowed)}")]
    return [layer("sandbox-exec", applied=True, detail=f"sandbox_check=1, {digest}")]


# libsystem_sandbox's sandbox.h: the filter that names a path (``enum sandbox_filter_type``).
SANDBOX_FILTER_NONE, SANDBOX_FILTER_PATH = 0, 1


def sandbox_denies(operation: str, path: str | None = None, pid: int | None = None,
                   libc: ctypes.CDLL | None = None) -> bool:  # fmt: skip
    """Whether the sandbox itself says it denies ``operation`` (on ``path``) to ``pid``, this process by default.

    ``sandbox_check(pid, operation, SANDBOX_FILTER_PATH, path)`` is 1 when the profile in force denies it, 0 when
    it allows it, -1 on error. A refusal is the sandbox's only on 1: an ``EPERM`` or ``EACCES`` alone may be a
    file's own permissions, so anything else (0, an error, no ``sandbox_check``) is ``False``.
    """
    try:
        lib = libc if libc is not None else ctypes.CDLL(None, use_errno=True)
        check = lib.sandbox_check
    except (OSError, AttributeError):
        return False
    # Variadic: only the fixed arguments are declared, the path follows as one more ``char *``.
    check.restype, check.argtypes = ctypes.c_int, [ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    who, op = os.getpid() if pid is None else pid, operation.encode("ascii")
    if path is None:
        answer = check(who, op, SANDBOX_FILTER_NONE)
    else:
        answer = check(who, op, SANDBOX_FILTER_PATH, ctypes.c_char_p(os.fsencode(path)))
    return bool(answer == 1)
