"""The Win32 structures and constants of the Windows worker start, laid out as on 64-bit Windows.

Standard library only. Fixed-width fields (``c_uint16``, ``c_uint32``,
``c_void_p``; never ``c_long``, which is 8 bytes on Linux and 4 on Windows), so
the layouts the tests hold on Linux x86_64 are the layouts Windows x64 reads.
"""

from __future__ import annotations

import ctypes

__all__ = [
    "ACE_HEADER", "ACL_SIZE_INFORMATION", "EXPLICIT_ACCESS_W", "JOBOBJECT_BASIC_UI_RESTRICTIONS",
    "PROCESS_INFORMATION", "SECURITY_CAPABILITIES",
    "SID_AND_ATTRIBUTES", "STARTUPINFOEXW",
    "STARTUPINFOW", "TOKEN_MANDATORY_LABEL", "TRUSTEE_W", "ExtendedLimits",
]  # fmt: skip

# CreateProcess flags.
CREATE_SUSPENDED = 0x00000004
CREATE_NEW_PROCESS_GROUP = 0x00000200
CREATE_UNICODE_ENVIRONMENT = 0x00000400
EXTENDED_STARTUPINFO_PRESENT = 0x00080000
CREATE_NO_WINDOW = 0x08000000
STARTF_USESTDHANDLES = 0x00000100
# Process/thread attributes (ProcThreadAttributeValue: number | THREAD 0x10000 | INPUT 0x20000).
PROC_THREAD_ATTRIBUTE_HANDLE_LIST = 0x00020002
PROC_THREAD_ATTRIBUTE_SECURITY_CAPABILITIES = 0x00020009
PROC_THREAD_ATTRIBUTE_ALL_APPLICATION_PACKAGES_POLICY = 0x0002000F
PROCESS_CREATION_ALL_APPLICATION_PACKAGES_OPT_OUT = 1
PROC_THREAD_ATTRIBUTE_CHILD_PROCESS_POLICY = 0x0002000E
PROCESS_CREATION_CHILD_PROCESS_RESTRICTED = 0x1
# ProcThreadAttributeMitigationPolicy (7): a DWORD64 of PROCESS_CREATION_MITIGATION_POLICY_* bits. Win32k lockdown
# (..._WIN32K_SYSTEM_CALL_DISABLE_ALWAYS_ON, 0x1 << 28) exists from Windows 8, build 9200.
PROC_THREAD_ATTRIBUTE_MITIGATION_POLICY = 0x00020007
WIN32K_SYSTEM_CALL_DISABLE_ALWAYS_ON = 0x1 << 28
WIN32K_LOCKDOWN_MIN_BUILD = 9200
# GetProcessMitigationPolicy: ProcessSystemCallDisablePolicy, whose DWORD's bit 0 is DisallowWin32kSystemCalls.
PROCESS_SYSTEM_CALL_DISABLE_POLICY, DISALLOW_WIN32K_SYSTEM_CALLS = 4, 0x1
# GetProcessMitigationPolicy: ProcessChildProcessPolicy, whose DWORD's bit 0 is NoChildProcessCreation.
PROCESS_CHILD_PROCESS_POLICY, NO_CHILD_PROCESS_CREATION = 13, 0x1
# Job object.
JOB_OBJECT_EXTENDED_LIMIT_INFORMATION = 9
KILL_ON_JOB_CLOSE, ACTIVE_PROCESS, PROCESS_MEMORY, DIE_ON_UNHANDLED_EXCEPTION = 0x2000, 0x8, 0x100, 0x400
JOB_LIMIT_FLAGS = KILL_ON_JOB_CLOSE | ACTIVE_PROCESS | PROCESS_MEMORY | DIE_ON_UNHANDLED_EXCEPTION
MEMORY_LIMIT = 1 << 30
# JobObjectBasicUIRestrictions: the worker has no window, so every UI limit (JOB_OBJECT_UILIMIT_*): no USER
# handles of other processes, no clipboard read or write, no system parameters, display settings, global
# atoms, desktop switch or ExitWindows.
JOB_OBJECT_BASIC_UI_RESTRICTIONS = 4
UILIMIT_HANDLES, UILIMIT_READCLIPBOARD, UILIMIT_WRITECLIPBOARD, UILIMIT_SYSTEMPARAMETERS = 0x1, 0x2, 0x4, 0x8
UILIMIT_DISPLAYSETTINGS, UILIMIT_GLOBALATOMS, UILIMIT_DESKTOP, UILIMIT_EXITWINDOWS = 0x10, 0x20, 0x40, 0x80
UI_LIMITS = (UILIMIT_HANDLES | UILIMIT_READCLIPBOARD | UILIMIT_WRITECLIPBOARD | UILIMIT_SYSTEMPARAMETERS
             | UILIMIT_DISPLAYSETTINGS | UILIMIT_GLOBALATOMS | UILIMIT_DESKTOP | UILIMIT_EXITWINDOWS)  # fmt: skip
# The worker's own desktop (CreateDesktopW): the rights Chromium's sandbox creates its alternate desktop with, and
# no more: read and create-window objects on it (what a process needs to connect to a desktop), READ_CONTROL and
# WRITE_DAC to add the container's entry, WRITE_OWNER to set its integrity label. No DESKTOP_SWITCHDESKTOP,
# DESKTOP_HOOKCONTROL, DESKTOP_JOURNAL*, DESKTOP_ENUMERATE.
DESKTOP_READOBJECTS, DESKTOP_CREATEWINDOW = 0x1, 0x2
READ_CONTROL, WRITE_DAC, WRITE_OWNER = 0x00020000, 0x00040000, 0x00080000
DESKTOP_ACCESS = DESKTOP_READOBJECTS | DESKTOP_CREATEWINDOW | READ_CONTROL | WRITE_DAC | WRITE_OWNER
# What the worker's AppContainer SID is granted on that desktop: to connect to it, nothing else.
DESKTOP_WORKER_ACCESS = DESKTOP_READOBJECTS | DESKTOP_CREATEWINDOW
UOI_NAME = 2  # GetUserObjectInformationW: the object's name
SE_WINDOW_OBJECT = 7  # SE_OBJECT_TYPE of window stations and desktops
NO_INHERITANCE = 0
# Security: ACL editing (SE_FILE_OBJECT, GRANT_ACCESS, TRUSTEE_IS_SID, TRUSTEE_IS_UNKNOWN) and rights.
SE_FILE_OBJECT = 1
DACL_SECURITY_INFORMATION = 0x4
LABEL_SECURITY_INFORMATION = 0x10
GRANT_ACCESS = 1
TRUSTEE_IS_SID, TRUSTEE_IS_UNKNOWN, NO_MULTIPLE_TRUSTEE = 0, 0, 0
OBJECT_INHERIT_ACE, CONTAINER_INHERIT_ACE = 0x1, 0x2
SUB_CONTAINERS_AND_OBJECTS_INHERIT = OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE
GENERIC_READ, GENERIC_WRITE, GENERIC_EXECUTE, GENERIC_ALL = 0x80000000, 0x40000000, 0x20000000, 0x10000000
DELETE = 0x00010000
# The worker's folder: read, write, and DELETE (a rename is a delete of the old name, and without it neither
# works), never execute. Granted on the files it creates there through inheritance.
FILE_TMP_ACCESS = GENERIC_READ | GENERIC_WRITE | DELETE
# What ``icacls PATH /grant SID:RX`` writes: FILE_GENERIC_READ | FILE_GENERIC_EXECUTE, mapped. The install grant
# passes with either this or the generic bits it maps from (an installer may write either form).
FILE_GENERIC_READ_EXECUTE = 0x001200A9
GENERIC_READ_EXECUTE = GENERIC_READ | GENERIC_EXECUTE
# ACEs as GetAce returns them (winnt.h): the header's type and flags.
ACCESS_ALLOWED_ACE_TYPE, ACCESS_DENIED_ACE_TYPE = 0x0, 0x1
INHERIT_ONLY_ACE = 0x8
ACL_SIZE_INFORMATION_CLASS = 2  # ACL_INFORMATION_CLASS AclSizeInformation
SE_GROUP_ENABLED = 0x4
# Tokens.
TOKEN_DUPLICATE, TOKEN_QUERY, TOKEN_ASSIGN_PRIMARY, TOKEN_ADJUST_DEFAULT = 0x2, 0x8, 0x1, 0x80
DISABLE_MAX_PRIVILEGE = 0x1
TOKEN_INTEGRITY_LEVEL, TOKEN_IS_APP_CONTAINER, TOKEN_APP_CONTAINER_SID = 25, 29, 31
SE_GROUP_INTEGRITY = 0x20
LOW_INTEGRITY_SID = "S-1-16-4096"
SECURITY_MANDATORY_LOW_RID, SECURITY_MANDATORY_MEDIUM_RID = 0x1000, 0x2000
SYSTEM_MANDATORY_LABEL_NO_WRITE_UP = 0x1
ACL_REVISION = 2
# Results.
HRESULT_ALREADY_EXISTS = 0x800700B7  # HRESULT_FROM_WIN32(ERROR_ALREADY_EXISTS)
WAIT_OBJECT_0, WAIT_TIMEOUT, INFINITE = 0, 0x102, 0xFFFFFFFF
STILL_ACTIVE = 259


class STARTUPINFOW(ctypes.Structure):
    _fields_ = (
        ("cb", ctypes.c_uint32), ("lpReserved", ctypes.c_void_p), ("lpDesktop", ctypes.c_void_p),
        ("lpTitle", ctypes.c_void_p), ("dwX", ctypes.c_uint32), ("dwY", ctypes.c_uint32),
        ("dwXSize", ctypes.c_uint32), ("dwYSize", ctypes.c_uint32), ("dwXCountChars", ctypes.c_uint32),
        ("dwYCountChars", ctypes.c_uint32), ("dwFillAttribute", ctypes.c_uint32), ("dwFlags", ctypes.c_uint32),
        ("wShowWindow", ctypes.c_uint16), ("cbReserved2", ctypes.c_uint16), ("lpReserved2", ctypes.c_void_p),
        ("hStdInput", ctypes.c_void_p), ("hStdOutput", ctypes.c_void_p), ("hStdError", ctypes.c_void_p),
    )  # fmt: skip


class STARTUPINFOEXW(ctypes.Structure):
    _fields_ = (("StartupInfo", STARTUPINFOW), ("lpAttributeList", ctypes.c_void_p))


class PROCESS_INFORMATION(ctypes.Structure):  # noqa: N801 - the Win32 name
    _fields_ = (("hProcess", ctypes.c_void_p), ("hThread", ctypes.c_void_p),
                ("dwProcessId", ctypes.c_uint32), ("dwThreadId", ctypes.c_uint32))  # fmt: skip


class SID_AND_ATTRIBUTES(ctypes.Structure):  # noqa: N801
    _fields_ = (("Sid", ctypes.c_void_p), ("Attributes", ctypes.c_uint32))


class SECURITY_CAPABILITIES(ctypes.Structure):  # noqa: N801
    _fields_ = (("AppContainerSid", ctypes.c_void_p), ("Capabilities", ctypes.POINTER(SID_AND_ATTRIBUTES)),
                ("CapabilityCount", ctypes.c_uint32), ("Reserved", ctypes.c_uint32))  # fmt: skip


class TRUSTEE_W(ctypes.Structure):  # noqa: N801
    _fields_ = (("pMultipleTrustee", ctypes.c_void_p), ("MultipleTrusteeOperation", ctypes.c_uint32),
                ("TrusteeForm", ctypes.c_uint32), ("TrusteeType", ctypes.c_uint32),
                ("ptstrName", ctypes.c_void_p))  # fmt: skip


class EXPLICIT_ACCESS_W(ctypes.Structure):  # noqa: N801
    _fields_ = (("grfAccessPermissions", ctypes.c_uint32), ("grfAccessMode", ctypes.c_uint32),
                ("grfInheritance", ctypes.c_uint32), ("Trustee", TRUSTEE_W))  # fmt: skip


class ACE_HEADER(ctypes.Structure):  # noqa: N801
    _fields_ = (("AceType", ctypes.c_uint8), ("AceFlags", ctypes.c_uint8), ("AceSize", ctypes.c_uint16))


class ACL_SIZE_INFORMATION(ctypes.Structure):  # noqa: N801
    _fields_ = (("AceCount", ctypes.c_uint32), ("AclBytesInUse", ctypes.c_uint32),
                ("AclBytesFree", ctypes.c_uint32))  # fmt: skip


class TOKEN_MANDATORY_LABEL(ctypes.Structure):  # noqa: N801
    _fields_ = (("Label", SID_AND_ATTRIBUTES),)


class _Basic(ctypes.Structure):
    _fields_ = (
        ("PerProcessUserTimeLimit", ctypes.c_int64), ("PerJobUserTimeLimit", ctypes.c_int64),
        ("LimitFlags", ctypes.c_uint32), ("MinimumWorkingSetSize", ctypes.c_size_t),
        ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", ctypes.c_uint32),
        ("Affinity", ctypes.c_size_t), ("PriorityClass", ctypes.c_uint32), ("SchedulingClass", ctypes.c_uint32),
    )  # fmt: skip


class JOBOBJECT_BASIC_UI_RESTRICTIONS(ctypes.Structure):  # noqa: N801
    _fields_ = (("UIRestrictionsClass", ctypes.c_uint32),)


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
