"""Windows: the worker is created suspended, put in a job object, then resumed; it reads its job back.

Standard library only. The job has kill-on-close (the worker dies with the
host's handle), an active-process limit of 1 (the worker cannot start a child)
and a per-process memory limit. The system calls go through ``Win32``, which
the tests replace with a recorder, so the call order and the limit structure
are tested on every platform. A restricted token is *not* applied yet:
``subprocess`` cannot create a process with another token, and the worker
reports ``restricted-token`` as not applied (README, "what remains outside").
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

from skillhost._os_sandbox import LaunchPlan, Layer, layer

__all__ = ["JOB_LIMIT_FLAGS", "MEMORY_LIMIT", "Win32", "job_limits", "job_plan", "self_report"]

CREATE_SUSPENDED = 0x00000004
CREATE_NEW_PROCESS_GROUP = 0x00000200
JOB_OBJECT_EXTENDED_LIMIT_INFORMATION = 9
KILL_ON_JOB_CLOSE, ACTIVE_PROCESS, PROCESS_MEMORY, DIE_ON_UNHANDLED_EXCEPTION = 0x2000, 0x8, 0x100, 0x400
JOB_LIMIT_FLAGS = KILL_ON_JOB_CLOSE | ACTIVE_PROCESS | PROCESS_MEMORY | DIE_ON_UNHANDLED_EXCEPTION
MEMORY_LIMIT = 1 << 30


class _Basic(ctypes.Structure):
    _fields_ = (
        ("PerProcessUserTimeLimit", ctypes.c_int64), ("PerJobUserTimeLimit", ctypes.c_int64),
        ("LimitFlags", ctypes.c_uint32), ("MinimumWorkingSetSize", ctypes.c_size_t),
        ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", ctypes.c_uint32),
        ("Affinity", ctypes.c_size_t), ("PriorityClass", ctypes.c_uint32), ("SchedulingClass", ctypes.c_uint32),
    )  # fmt: skip


class _IoCounters(ctypes.Structure):
    _fields_ = tuple((n, ctypes.c_uint64) for n in ("r", "w", "o", "rb", "wb", "ob"))


class ExtendedLimits(ctypes.Structure):
    """JOBOBJECT_EXTENDED_LIMIT_INFORMATION."""

    _fields_ = (
        ("BasicLimitInformation", _Basic), ("IoInfo", _IoCounters), ("ProcessMemoryLimit", ctypes.c_size_t),
        ("JobMemoryLimit", ctypes.c_size_t), ("PeakProcessMemoryUsed", ctypes.c_size_t),
        ("PeakJobMemoryUsed", ctypes.c_size_t),
    )  # fmt: skip


def job_limits() -> ExtendedLimits:
    info = ExtendedLimits()
    info.BasicLimitInformation.LimitFlags = JOB_LIMIT_FLAGS
    info.BasicLimitInformation.ActiveProcessLimit = 1
    info.ProcessMemoryLimit = MEMORY_LIMIT
    return info


class Win32:
    """The five calls the host makes; each raises ``OSError`` on failure (``ctypes.WinError``)."""

    def __init__(self) -> None:
        self.k32: Any = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
        self.ntdll: Any = ctypes.WinDLL("ntdll")  # type: ignore[attr-defined]

    def _ok(self, result: object) -> Any:
        if not result:
            raise ctypes.WinError(ctypes.get_last_error())  # type: ignore[attr-defined]
        return result

    def create_job(self) -> int:
        return int(self._ok(self.k32.CreateJobObjectW(None, None)))

    def set_limits(self, job: int, info: ExtendedLimits) -> None:
        self._ok(self.k32.SetInformationJobObject(
            job, JOB_OBJECT_EXTENDED_LIMIT_INFORMATION, ctypes.byref(info), ctypes.sizeof(info)))  # fmt: skip

    def assign(self, job: int, process: int) -> None:
        self._ok(self.k32.AssignProcessToJobObject(job, process))

    def resume(self, process: int) -> None:
        if self.ntdll.NtResumeProcess(process) != 0:  # an NTSTATUS: 0 is success
            raise OSError("NtResumeProcess failed")

    def close(self, handle: int) -> None:
        self.k32.CloseHandle(handle)


def confine_started(proc: object, api: Win32) -> int:
    """Job first, resume second: the worker runs no instruction outside its job. Returns the job handle."""
    handle = int(getattr(proc, "_handle"))  # noqa: B009 - Popen's process handle (CPython, Windows)
    job = api.create_job()
    try:
        api.set_limits(job, job_limits())
        api.assign(job, handle)
    except OSError:
        api.close(job)
        raise
    api.resume(handle)
    return job


def job_plan(argv: Sequence[str], api_factory: Callable[[], Win32] = Win32) -> LaunchPlan:
    """Start suspended in a group of its own; ``after_spawn`` confines, resumes, and returns the job's release."""

    def after_spawn(proc: object) -> Callable[[], None]:
        api = api_factory()
        job = confine_started(proc, api)
        # Closed only once the worker is reaped: closing it earlier kills the worker (kill-on-close).
        return lambda: api.close(job)

    flags = CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP
    return LaunchPlan(list(argv), {"creationflags": flags}, after_spawn)


def self_report(k32: Any = None) -> list[Layer]:
    """Ask the kernel for this process's job limits (NULL job handle = the caller's job)."""
    try:
        lib = k32 if k32 is not None else ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    except (OSError, AttributeError):
        return [layer("job-object", applied=False, detail="kernel32 not loadable"),
                layer("restricted-token", applied=False, detail="not implemented")]  # fmt: skip
    info, got = ExtendedLimits(), ctypes.c_uint32(0)
    ok = lib.QueryInformationJobObject(None, JOB_OBJECT_EXTENDED_LIMIT_INFORMATION, ctypes.byref(info),
                                       ctypes.sizeof(info), ctypes.byref(got))
    flags, active = info.BasicLimitInformation.LimitFlags, info.BasicLimitInformation.ActiveProcessLimit
    held = bool(ok) and flags & JOB_LIMIT_FLAGS == JOB_LIMIT_FLAGS and active == 1
    detail = f"limit flags {flags:#x}, active processes {active}"
    return [
        layer("job-object", applied=held, detail=detail if ok else "not in a job"),
        layer("restricted-token", applied=False, detail="not implemented: subprocess cannot pass a token"),
    ]

