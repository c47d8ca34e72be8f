"""Windows: the Win32 calls of the job-object launcher, one method per call, each failure raised at once.

Standard library only. ``Win32`` is the seam: the launcher (``_windows_launcher``) decides the order and the
cleanup, and the tests replace this class with a recorder. Every function's ``argtypes`` and ``restype`` are
set from ``SIGNATURES`` before any call (ctypes' default ``int`` result would cut a 64-bit handle in half),
and every result is checked before it is used: a failed call raises ``Win32Error`` with the call's name and
``GetLastError``'s code. The DLL loader and the last-error reader are injected, so the tests can drive these
very methods over stand-in functions that check each argument against its declared type.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

from ._windows_structs import PROCESS_INFORMATION, SID_AND_ATTRIBUTES, STARTUPINFOW

_H, _DW, _BOOL, _P = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_void_p
_PH, _PDW = ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint32)
# name: (DLL, restype, argtypes), exactly as the Windows SDK declares them for x64.
SIGNATURES: dict[str, tuple[str, Any, tuple[Any, ...]]] = {
    "CreateJobObjectW": ("kernel32", _H, (_P, ctypes.c_wchar_p)),
    "SetInformationJobObject": ("kernel32", _BOOL, (_H, ctypes.c_int, _P, _DW)),
    "QueryInformationJobObject": ("kernel32", _BOOL, (_H, ctypes.c_int, _P, _DW, _PDW)),
    "AssignProcessToJobObject": ("kernel32", _BOOL, (_H, _H)),
    "TerminateJobObject": ("kernel32", _BOOL, (_H, ctypes.c_uint32)),
    "GetCurrentProcess": ("kernel32", _H, ()),
    "GetStdHandle": ("kernel32", _H, (_DW,)),
    "ResumeThread": ("kernel32", _DW, (_H,)),
    "WaitForSingleObject": ("kernel32", _DW, (_H, _DW)),
    "GetExitCodeProcess": ("kernel32", _BOOL, (_H, _PDW)),
    "TerminateProcess": ("kernel32", _BOOL, (_H, ctypes.c_uint32)),
    "CloseHandle": ("kernel32", _BOOL, (_H,)),
    "LocalFree": ("kernel32", _P, (_P,)),
    "OpenProcessToken": ("advapi32", _BOOL, (_H, _DW, _PH)),
    "GetTokenInformation": ("advapi32", _BOOL, (_H, ctypes.c_int, _P, _DW, _PDW)),
    "SetTokenInformation": ("advapi32", _BOOL, (_H, ctypes.c_int, _P, _DW)),
    "CreateRestrictedToken": ("advapi32", _BOOL, (_H, _DW, _DW, _P, _DW, _P, _DW, _P, _PH)),
    "IsTokenRestricted": ("advapi32", _BOOL, (_H,)),
    "ConvertStringSidToSidW": ("advapi32", _BOOL, (ctypes.c_wchar_p, _PH)),
    "ConvertSidToStringSidW": ("advapi32", _BOOL, (_P, _PH)),
    "GetLengthSid": ("advapi32", _DW, (_P,)),
    "ConvertStringSecurityDescriptorToSecurityDescriptorW": ("advapi32", _BOOL,
                                                             (ctypes.c_wchar_p, _DW, _PH, _PDW)),
    "GetSecurityDescriptorDacl": ("advapi32", _BOOL, (_P, ctypes.POINTER(ctypes.c_int), _PH,
                                                      ctypes.POINTER(ctypes.c_int))),
    "CreateProcessAsUserW": ("advapi32", _BOOL, (_H, ctypes.c_wchar_p, ctypes.c_wchar_p, _P, _P, _BOOL, _DW, _P,
                                                 ctypes.c_wchar_p, ctypes.POINTER(STARTUPINFOW),
                                                 ctypes.POINTER(PROCESS_INFORMATION))),
}
_INVALID_HANDLE = ctypes.c_void_p(-1).value
_WAIT_FAILED = 0xFFFFFFFF
_RESUME_FAILED = 0xFFFFFFFF
_ERROR_INSUFFICIENT_BUFFER = 122


class Win32Error(OSError):
    """One Win32 call failed: its name and ``GetLastError``'s code."""

    def __init__(self, function: str, code: int) -> None:
        super().__init__(f"{function} failed (Win32 error {code})")
        self.function, self.code = function, code


def _windll(name: str) -> Any:
    return ctypes.WinDLL(name, use_last_error=True)  # type: ignore[attr-defined]


def _last_error() -> int:
    return int(ctypes.get_last_error())  # type: ignore[attr-defined]


class Win32:
    """kernel32 and advapi32 as the launcher calls them (module docstring)."""

    def __init__(self, loader: Callable[[str], Any] = _windll, last_error: Callable[[], int] = _last_error) -> None:
        libs = {name: loader(name) for name in ("kernel32", "advapi32")}
        self._fn: dict[str, Any] = {}
        for name, (lib, restype, argtypes) in SIGNATURES.items():
            function = getattr(libs[lib], name)
            function.restype, function.argtypes = restype, list(argtypes)
            self._fn[name] = function
        self._last_error = last_error

    def _ok(self, name: str, *args: Any) -> Any:
        """Call ``name``; a zero (FALSE, NULL) result is its failure."""
        result = self._fn[name](*args)
        if not result:
            raise Win32Error(name, self._last_error())
        return result

    # -- the job ---------------------------------------------------------------------------------------

    def create_job(self) -> int:
        """An unnamed job, its handle not inheritable: only this process can hold it open."""
        return int(self._ok("CreateJobObjectW", None, None))

    def set_job_information(self, job: int, info_class: int, info: ctypes.Structure) -> None:
        self._ok("SetInformationJobObject", job, info_class, ctypes.byref(info), ctypes.sizeof(info))

    def query_job_information(self, job: int, info_class: int, info: ctypes.Structure) -> None:
        """Fill ``info`` with what the job holds now."""
        got = ctypes.c_uint32(0)
        self._ok("QueryInformationJobObject", job, info_class, ctypes.byref(info), ctypes.sizeof(info),
                 ctypes.byref(got))

    def assign(self, job: int, process: int) -> None:
        self._ok("AssignProcessToJobObject", job, process)

    def terminate_job(self, job: int, code: int) -> None:
        self._ok("TerminateJobObject", job, code)

    # -- tokens and SIDs -------------------------------------------------------------------------------

    def open_process_token(self, access: int) -> int:
        token = ctypes.c_void_p()
        self._ok("OpenProcessToken", self._fn["GetCurrentProcess"](), access, ctypes.byref(token))
        return int(token.value or 0)

    def token_information(self, token: int, info_class: int) -> ctypes.Array[ctypes.c_char]:
        """The answer in a buffer the caller keeps alive (the SIDs in it point into it)."""
        size = ctypes.c_uint32(0)
        if self._fn["GetTokenInformation"](token, info_class, None, 0, ctypes.byref(size)) == 0 \
                and self._last_error() != _ERROR_INSUFFICIENT_BUFFER:
            raise Win32Error("GetTokenInformation", self._last_error())
        buffer = ctypes.create_string_buffer(max(size.value, 8))
        self._ok("GetTokenInformation", token, info_class, buffer, len(buffer), ctypes.byref(size))
        return buffer

    def set_token_information(self, token: int, info_class: int, info: ctypes.Structure, size: int) -> None:
        self._ok("SetTokenInformation", token, info_class, ctypes.byref(info), size)

    def create_restricted_token(self, token: int, flags: int, disable: Sequence[int],
                                restrict: Sequence[int]) -> int:
        """``token`` without its privileges, ``disable`` deny-only, and the second check through ``restrict``."""
        off = (SID_AND_ATTRIBUTES * max(len(disable), 1))(*(SID_AND_ATTRIBUTES(sid, 0) for sid in disable))
        only = (SID_AND_ATTRIBUTES * max(len(restrict), 1))(*(SID_AND_ATTRIBUTES(sid, 0) for sid in restrict))
        new = ctypes.c_void_p()
        self._ok("CreateRestrictedToken", token, flags, len(disable), off, 0, None, len(restrict), only,
                 ctypes.byref(new))
        return int(new.value or 0)

    def is_token_restricted(self, token: int) -> bool:
        return bool(self._fn["IsTokenRestricted"](token))

    def string_to_sid(self, text: str) -> int:
        """A SID the caller frees with ``local_free``."""
        sid = ctypes.c_void_p()
        self._ok("ConvertStringSidToSidW", text, ctypes.byref(sid))
        return int(sid.value or 0)

    def sid_to_string(self, sid: int) -> str:
        text = ctypes.c_void_p()
        self._ok("ConvertSidToStringSidW", sid, ctypes.byref(text))
        try:
            return ctypes.wstring_at(text.value or 0)
        finally:
            self.local_free(text.value or 0)

    def sid_length(self, sid: int) -> int:
        return int(self._ok("GetLengthSid", sid))

    def descriptor_from_sddl(self, sddl: str, revision: int) -> int:
        """A self-relative security descriptor the caller frees with ``local_free``."""
        descriptor = ctypes.c_void_p()
        self._ok("ConvertStringSecurityDescriptorToSecurityDescriptorW", sddl, revision, ctypes.byref(descriptor),
                 None)
        return int(descriptor.value or 0)

    def descriptor_dacl(self, descriptor: int) -> int:
        """The DACL inside ``descriptor`` (freed with it); refused when it has none."""
        present, dacl, defaulted = ctypes.c_int(0), ctypes.c_void_p(), ctypes.c_int(0)
        self._ok("GetSecurityDescriptorDacl", descriptor, ctypes.byref(present), ctypes.byref(dacl),
                 ctypes.byref(defaulted))
        if not present.value or not dacl.value:
            raise Win32Error("GetSecurityDescriptorDacl", 0)
        return int(dacl.value)

    # -- the process -----------------------------------------------------------------------------------

    def std_handle(self, which: int) -> int:
        handle = self._fn["GetStdHandle"](which)
        if handle == _INVALID_HANDLE:
            raise Win32Error("GetStdHandle", self._last_error())
        return int(handle or 0)

    def create_process_as_user(self, token: int, command_line: str, environment: str, cwd: str, *,
                               startup: STARTUPINFOW, flags: int) -> PROCESS_INFORMATION:
        """Started with ``token``; inherits only the handles marked inheritable (the three standard ones)."""
        info = PROCESS_INFORMATION()
        command = ctypes.create_unicode_buffer(command_line)  # the call may write into it
        block = ctypes.create_unicode_buffer(environment, len(environment))
        self._ok("CreateProcessAsUserW", token, None, command, None, None, True, flags, block, cwd,
                 ctypes.byref(startup), ctypes.byref(info))
        return info

    def resume_thread(self, thread: int) -> None:
        if self._fn["ResumeThread"](thread) == _RESUME_FAILED:
            raise Win32Error("ResumeThread", self._last_error())

    def wait(self, handle: int, milliseconds: int) -> int:
        result = int(self._fn["WaitForSingleObject"](handle, milliseconds))
        if result == _WAIT_FAILED:
            raise Win32Error("WaitForSingleObject", self._last_error())
        return result

    def exit_code(self, process: int) -> int:
        code = ctypes.c_uint32(0)
        self._ok("GetExitCodeProcess", process, ctypes.byref(code))
        return int(code.value)

    def terminate_process(self, process: int, code: int) -> None:
        self._ok("TerminateProcess", process, code)

    def close(self, handle: int) -> None:
        self._ok("CloseHandle", handle)

    def local_free(self, pointer: int) -> None:
        self._fn["LocalFree"](pointer)  # returns NULL on success: nothing to check that would not mislead


__all__ = ["SIGNATURES", "Win32", "Win32Error"]
