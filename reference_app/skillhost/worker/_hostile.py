"""The hostile-worker self-test: what an escaped handler would try, done by the worker's own trusted code.

Standard library only (the worker imports it). Each operation is the real
thing, not a probe of a Python guard: no handler, no allow-listed builtins, no
module views are in the way, so only the operating system can refuse it. The
journey runs it in a sandboxed worker and requires every operation to be
refused with ``EACCES`` or ``EPERM``; the tests run the same function in an
unconfined process and require every operation to succeed, so a step that
passes proves the kernel refused.

The targets come from the host: a file it wrote outside the bundle (the host's
data), a path outside the worker's temporary folder, and a loopback TCP port
it listens on. The host to trace is the worker's parent.

On macOS an errno does not say who refused (a hardened-runtime host refuses
``ptrace`` with ``EPERM`` under no sandbox at all): each refused attempt asks
the sandbox itself, ``sandbox_check`` with the attempt's Seatbelt operation and
argument (``SANDBOX_OPERATIONS``), and names the layer ``sandbox-exec`` only
when the sandbox says it denies it (``layer``, else ``None``). Linux and
Windows attempts carry no ``layer``: their layers are read from the errno.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from typing import NotRequired, TypedDict

__all__ = ["EXEC_OK_LINE", "OPERATIONS", "SANDBOX_LAYER", "SANDBOX_OPERATIONS", "TMP_ROUND_TRIP", "Attempt",
           "RoundTrip", "attempt", "exec_shell", "tmp_round_trip"]  # fmt: skip

OPERATIONS = ("read-outside-bundle", "write-outside-tmp", "tcp-connect-loopback", "ptrace-host", "exec-shell")
# What /bin/sh prints when the exec was allowed: the shell, not the worker, wrote it.
EXEC_OK_LINE = '{"op":"exec-shell","ok":true,"errno":null}'
_PTRACE_SEIZE = 0x4206
_PT_ATTACHEXC = 14  # macOS


class Attempt(TypedDict):
    op: str
    ok: bool
    errno: str | None
    # macOS only: ``SANDBOX_LAYER`` when ``sandbox_check`` says the profile denies the operation, else ``None``.
    layer: NotRequired[str | None]


SANDBOX_LAYER = "sandbox-exec"
_SHELL = "/bin/sh"
# Each attempt's Seatbelt operation, the name ``sandbox_check`` takes, and the target that is its argument
# (``None``: the check names the operation alone). The worker asks the sandbox exactly this, nothing else.
SANDBOX_OPERATIONS: dict[str, tuple[str, str | None]] = {
    "read-outside-bundle": ("file-read-data", "read_path"),  # open(O_RDONLY) of the host's file
    "write-outside-tmp": ("file-write-create", "write_path"),  # open(O_CREAT | O_EXCL): a new file
    # sandbox_check filters name paths and services, never a network address; the profile has no network
    # rule at all, so the one unfiltered answer is every address's.
    "tcp-connect-loopback": ("network-outbound", None),
    # Seatbelt names no ptrace operation; the nearest, seizing another process, is its task port
    # (task_for_pid). Unconfirmed until a real run (docs/boundaries.md: log stream, sender "Sandbox").
    "ptrace-host": ("mach-priv-task-port", None),
    # The table's operation (SBPL's process-exec is an alias of it) on the path execv is given.
    "exec-shell": ("process-exec*", "shell"),
}


class RoundTrip(TypedDict):
    """The worker's use of its own folder: which stage failed (``None``: all three passed) and with which errno."""

    op: str
    ok: bool
    errno: str | None
    stage: str | None


# What the worker must be able to do in its own folder: a handler's scratch file is written, renamed and removed.
TMP_ROUND_TRIP = "tmp-write-rename-delete"


def _errno_name(exc: OSError) -> str:
    code = exc.errno if isinstance(exc.errno, int) else 0
    name = errno.errorcode.get(code, f"E{code}")
    # WinSock's errors carry their own numbers (WSAEACCES is 10013): the same refusal under its POSIX name.
    return name[3:] if name.startswith("WSAE") else name


def tmp_round_trip(folder: str) -> RoundTrip:
    """Write a file in ``folder`` (the worker's own), rename it, delete it; the first stage that fails, if any.

    On Windows the AppContainer needs the folder's Low label (its token is Low: no writing up to an unlabelled,
    Medium folder) and ``DELETE`` in its grant (a rename is a delete of the old name); on Linux Landlock must
    grant the folder's make, remove and refer rights. Nothing is left behind on success.
    """
    first = os.path.join(folder, "skillhost-round-trip.tmp")  # noqa: PTH118 - os.path: no pathlib in the worker
    second = os.path.join(folder, "skillhost-round-trip-renamed.tmp")  # noqa: PTH118
    stage = "write"
    try:
        _write(first)
        stage = "rename"
        os.rename(first, second)  # noqa: PTH104 - the plain system call is the point
        stage = "delete"
        os.remove(second)  # noqa: PTH107
    except OSError as exc:
        return {"op": TMP_ROUND_TRIP, "ok": False, "errno": _errno_name(exc), "stage": stage}
    return {"op": TMP_ROUND_TRIP, "ok": True, "errno": None, "stage": None}


def _result(op: str, exc: OSError | None) -> Attempt:
    if exc is None:
        return {"op": op, "ok": True, "errno": None}
    return {"op": op, "ok": False, "errno": _errno_name(exc)}


def _sandbox_denies() -> Callable[[str, str | None], bool] | None:
    """macOS: the sandbox's own report (``sandbox_check``); elsewhere ``None`` (no attribution by the worker)."""
    if sys.platform != "darwin":
        return None
    from skillhost.os_sandbox import sandbox_denies  # noqa: PLC0415 - macOS only

    return sandbox_denies


def _attributed(result: Attempt, arguments: dict[str, object]) -> Attempt:
    """On macOS, ``result`` with the layer the sandbox itself names for its refusal; elsewhere ``result``."""
    denies = _sandbox_denies()
    if denies is None:
        return result
    operation, key = SANDBOX_OPERATIONS.get(result["op"], ("", None))
    argument = arguments.get(key) if key is not None else None
    said = (not result["ok"] and operation != "" and result["errno"] in ("EACCES", "EPERM")
            and denies(operation, None if argument is None else str(argument)))  # fmt: skip
    return {"op": result["op"], "ok": result["ok"], "errno": result["errno"], "layer": SANDBOX_LAYER if said else None}


def _read(path: str) -> None:
    with open(path, "rb") as fh:  # noqa: PTH123 - the plain system call is the point
        fh.read(64)


def _write(path: str) -> None:
    with open(path, "xb") as fh:  # noqa: PTH123
        fh.write(b"written by the worker\n")


def _connect(port: int) -> None:
    import socket  # noqa: PLC0415 - only this operation needs it, and every worker imports this module

    with socket.create_connection(("127.0.0.1", port), timeout=2.0):
        pass


_PROCESS_INJECT = 0x0002 | 0x0008 | 0x0020  # PROCESS_CREATE_THREAD | VM_OPERATION | VM_WRITE


def _open_parent_windows() -> None:
    """Windows has no ptrace: the same seizure is opening the host for code injection."""
    import ctypes  # noqa: PLC0415 - only this operation needs it

    k32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    k32.OpenProcess.restype = ctypes.c_void_p
    handle = k32.OpenProcess(_PROCESS_INJECT, False, os.getppid())
    if not handle:
        raise ctypes.WinError(ctypes.get_last_error())  # type: ignore[attr-defined] # errno EACCES for access denied
    k32.CloseHandle(ctypes.c_void_p(handle))


def _ptrace_parent() -> None:
    import ctypes  # noqa: PLC0415 - only this operation needs it

    if os.name == "nt":
        _open_parent_windows()
        return
    libc = ctypes.CDLL(None, use_errno=True)
    request = _PT_ATTACHEXC if sys.platform == "darwin" else _PTRACE_SEIZE
    # The tracer's exit detaches: a seized host is never left stopped.
    if libc.ptrace(request, os.getppid(), None, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def attempt(op: str, targets: dict[str, object]) -> Attempt:
    """Run one operation (never ``exec-shell``, see ``exec_shell``); the outcome with its errno name."""
    try:
        if op == "read-outside-bundle":
            _read(str(targets["read_path"]))
        elif op == "write-outside-tmp":
            _write(str(targets["write_path"]))
        elif op == "tcp-connect-loopback":
            port = targets["tcp_port"]
            if not isinstance(port, int):
                raise OSError(errno.EINVAL, "no port")  # noqa: TRY301 - one reporting path
            _connect(port)
        elif op == "ptrace-host":
            _ptrace_parent()
        else:
            raise OSError(errno.EINVAL, f"unknown operation {op}")  # noqa: TRY301
    except OSError as exc:
        return _attributed(_result(op, exc), targets)
    return _attributed(_result(op, None), targets)


def exec_shell() -> Attempt:
    """Replace this process with ``/bin/sh`` (``cmd.exe`` on Windows); returns only when refused.

    It must come last: when it succeeds, the shell prints ``EXEC_OK_LINE`` in the worker's place.
    """
    if os.name == "nt":
        shell = os.path.join(os.environ.get("SYSTEMROOT", r"C:\Windows"), "System32", "cmd.exe")  # noqa: PTH118
        argv = [shell, "/c", "echo " + EXEC_OK_LINE]
    else:
        shell = _SHELL
        argv = [shell, "-c", 'printf "%s\\n" "$0"', EXEC_OK_LINE]
    try:
        os.execv(shell, argv)  # noqa: S606 - the operation the sandbox must refuse
    except OSError as exc:
        return _attributed(_result("exec-shell", exc), {"shell": shell})
    return _result("exec-shell", None)  # not reached: execv returns only by raising
