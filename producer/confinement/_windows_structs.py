"""Windows: the Win32 constants and structures the job-object launcher uses, laid out as on 64-bit Windows.

Standard library only. Fixed-width fields (``c_uint32``, ``c_int64``, ``c_void_p``, ``c_size_t``; never
``c_long``, 8 bytes on Linux and 4 on Windows), so the layouts the tests hold on Linux x86_64 are the ones
Windows x64 reads.
"""

from __future__ import annotations

import ctypes

# Job objects: the information classes, the limits every stage gets, the UI limits (no reach into other
# processes' windows, the clipboard, the session's settings or logoff).
JOB_BASIC_ACCOUNTING, JOB_BASIC_UI_RESTRICTIONS, JOB_EXTENDED_LIMITS = 1, 4, 9
KILL_ON_JOB_CLOSE, DIE_ON_UNHANDLED_EXCEPTION, BREAKAWAY_OK, SILENT_BREAKAWAY_OK = 0x2000, 0x400, 0x800, 0x1000
JOB_LIMITS = KILL_ON_JOB_CLOSE | DIE_ON_UNHANDLED_EXCEPTION
UI_LIMITS = 0x1 | 0x2 | 0x4 | 0x8 | 0x10 | 0x20 | 0x40 | 0x80  # handles, clipboard, parameters... exitwindows
# Tokens.
TOKEN_ASSIGN_PRIMARY, TOKEN_DUPLICATE, TOKEN_QUERY, TOKEN_ADJUST_DEFAULT = 0x1, 0x2, 0x8, 0x80
OWN_TOKEN_ACCESS = TOKEN_ASSIGN_PRIMARY | TOKEN_DUPLICATE | TOKEN_QUERY | TOKEN_ADJUST_DEFAULT
TOKEN_GROUPS_CLASS, TOKEN_DEFAULT_DACL_CLASS, TOKEN_INTEGRITY_LEVEL_CLASS = 2, 6, 25
DISABLE_MAX_PRIVILEGE = 0x1
SE_GROUP_INTEGRITY, SE_GROUP_LOGON_ID = 0x20, 0xC0000000
LOW_INTEGRITY = "S-1-16-4096"
# The restricted token's second access check passes only through these (and the logon session's SID, for the
# window station and desktop): system files readable by Users or Everyone, and the stage's own folders,
# which grant RESTRICTED. The checkout and the key folders grant none of them.
EVERYONE, USERS, RESTRICTED, ADMINISTRATORS = "S-1-1-0", "S-1-5-32-545", "S-1-5-12", "S-1-5-32-544"
RESTRICTING = (EVERYONE, USERS, RESTRICTED)
SDDL_REVISION_1 = 1
# Processes.
CREATE_SUSPENDED, CREATE_UNICODE_ENVIRONMENT, CREATE_NO_WINDOW = 0x4, 0x400, 0x08000000
START_FLAGS = CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT | CREATE_NO_WINDOW
STARTF_USESTDHANDLES = 0x100
STD_INPUT, STD_OUTPUT, STD_ERROR = 0xFFFFFFF6, 0xFFFFFFF5, 0xFFFFFFF4  # (DWORD)-10, -11, -12
INFINITE, WAIT_OBJECT_0 = 0xFFFFFFFF, 0


class SID_AND_ATTRIBUTES(ctypes.Structure):  # noqa: N801 - the Win32 name
    _fields_ = (("Sid", ctypes.c_void_p), ("Attributes", ctypes.c_uint32))


class TOKEN_GROUPS(ctypes.Structure):  # noqa: N801
    _fields_ = (("GroupCount", ctypes.c_uint32), ("Groups", SID_AND_ATTRIBUTES * 1))


class TOKEN_MANDATORY_LABEL(ctypes.Structure):  # noqa: N801
    _fields_ = (("Label", SID_AND_ATTRIBUTES),)


class TOKEN_DEFAULT_DACL(ctypes.Structure):  # noqa: N801
    _fields_ = (("DefaultDacl", ctypes.c_void_p),)


class STARTUPINFOW(ctypes.Structure):
    _fields_ = (
        ("cb", ctypes.c_uint32), ("lpReserved", ctypes.c_void_p), ("lpDesktop", ctypes.c_void_p),
        ("lpTitle", ctypes.c_void_p), ("dwX", ctypes.c_uint32), ("dwY", ctypes.c_uint32),
        ("dwXSize", ctypes.c_uint32), ("dwYSize", ctypes.c_uint32), ("dwXCountChars", ctypes.c_uint32),
        ("dwYCountChars", ctypes.c_uint32), ("dwFillAttribute", ctypes.c_uint32), ("dwFlags", ctypes.c_uint32),
        ("wShowWindow", ctypes.c_uint16), ("cbReserved2", ctypes.c_uint16), ("lpReserved2", ctypes.c_void_p),
        ("hStdInput", ctypes.c_void_p), ("hStdOutput", ctypes.c_void_p), ("hStdError", ctypes.c_void_p),
    )  # fmt: skip


class PROCESS_INFORMATION(ctypes.Structure):  # noqa: N801
    _fields_ = (("hProcess", ctypes.c_void_p), ("hThread", ctypes.c_void_p),
                ("dwProcessId", ctypes.c_uint32), ("dwThreadId", ctypes.c_uint32))  # fmt: skip


class _BasicLimits(ctypes.Structure):
    _fields_ = (
        ("PerProcessUserTimeLimit", ctypes.c_int64), ("PerJobUserTimeLimit", ctypes.c_int64),
        ("LimitFlags", ctypes.c_uint32), ("MinimumWorkingSetSize", ctypes.c_size_t),
        ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", ctypes.c_uint32),
        ("Affinity", ctypes.c_size_t), ("PriorityClass", ctypes.c_uint32), ("SchedulingClass", ctypes.c_uint32),
    )  # fmt: skip


class _IoCounters(ctypes.Structure):
    _fields_ = tuple((n, ctypes.c_uint64) for n in ("Reads", "Writes", "Others", "ReadBytes", "WriteBytes",
                                                    "OtherBytes"))


class EXTENDED_LIMITS(ctypes.Structure):  # noqa: N801
    """JOBOBJECT_EXTENDED_LIMIT_INFORMATION."""

    _fields_ = (
        ("BasicLimitInformation", _BasicLimits), ("IoInfo", _IoCounters), ("ProcessMemoryLimit", ctypes.c_size_t),
        ("JobMemoryLimit", ctypes.c_size_t), ("PeakProcessMemoryUsed", ctypes.c_size_t),
        ("PeakJobMemoryUsed", ctypes.c_size_t),
    )  # fmt: skip


class UI_RESTRICTIONS(ctypes.Structure):  # noqa: N801
    """JOBOBJECT_BASIC_UI_RESTRICTIONS."""

    _fields_ = (("UIRestrictionsClass", ctypes.c_uint32),)


class ACCOUNTING(ctypes.Structure):
    """JOBOBJECT_BASIC_ACCOUNTING_INFORMATION."""

    _fields_ = (
        ("TotalUserTime", ctypes.c_int64), ("TotalKernelTime", ctypes.c_int64),
        ("ThisPeriodTotalUserTime", ctypes.c_int64), ("ThisPeriodTotalKernelTime", ctypes.c_int64),
        ("TotalPageFaultCount", ctypes.c_uint32), ("TotalProcesses", ctypes.c_uint32),
        ("ActiveProcesses", ctypes.c_uint32), ("TotalTerminatedProcesses", ctypes.c_uint32),
    )  # fmt: skip


def job_limits() -> EXTENDED_LIMITS:
    """Kill on close, die on an unhandled exception (no error dialog holding the stage); no breakaway flag."""
    info = EXTENDED_LIMITS()
    info.BasicLimitInformation.LimitFlags = JOB_LIMITS
    return info


__all__ = ["ACCOUNTING", "EXTENDED_LIMITS", "PROCESS_INFORMATION", "SID_AND_ATTRIBUTES", "STARTUPINFOW",
           "TOKEN_DEFAULT_DACL", "TOKEN_GROUPS", "TOKEN_MANDATORY_LABEL", "UI_RESTRICTIONS", "job_limits"]
