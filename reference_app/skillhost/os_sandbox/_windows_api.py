"""The Win32 calls of the Windows worker start, one method per API function, each raising ``OSError``.

Standard library only. ``Win32`` is the seam: ``_windows`` decides the
order and the cleanup, and the tests replace this class with a recorder, so
every call, argument and structure is held on every platform. Nothing here
decides anything; each method is the one call it names.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any, NamedTuple

from skillhost.os_sandbox._windows_structs import (
    ACE_HEADER,
    ACL_REVISION,
    ACL_SIZE_INFORMATION,
    ACL_SIZE_INFORMATION_CLASS,
    JOB_OBJECT_BASIC_UI_RESTRICTIONS,
    JOB_OBJECT_EXTENDED_LIMIT_INFORMATION,
    JOBOBJECT_BASIC_UI_RESTRICTIONS,
    PROCESS_INFORMATION,
    SE_FILE_OBJECT,
    STARTUPINFOEXW,
    UOI_NAME,
    ExtendedLimits,
)

__all__ = ["PROTOTYPES", "AceEntry", "Win32"]

_ERROR_INSUFFICIENT_BUFFER = 122
_HANDLE_FLAG_INHERIT = 0x1
_WAIT_FAILED = 0xFFFFFFFF

# The C types of the Windows SDK, with fixed widths (``c_long`` is 8 bytes on Linux, 4 on Windows).
_HANDLE = _PVOID = _PSID = _PACL = ctypes.c_void_p  # pointers and handles: pointer-sized
_DWORD = _ULONG = _UINT = ctypes.c_uint32
_BOOL = _ENUM = ctypes.c_int32  # BOOL is an int; SE_OBJECT_TYPE, TOKEN_INFORMATION_CLASS... are C enums
_HRESULT = ctypes.c_uint32  # a LONG, read unsigned so that it compares with the SDK's 0x8007.... values
_SIZE_T = ctypes.c_size_t
_LPCWSTR = ctypes.c_wchar_p
_OUT = ctypes.c_void_p  # an out-parameter: ``byref`` of the value the call fills
_INT = ctypes.c_int32
_CREATE_PROCESS = [_LPCWSTR, _LPCWSTR, _PVOID, _PVOID, _BOOL, _DWORD, _PVOID, _LPCWSTR, _OUT, _OUT]

# ``dll -> function -> (restype, argtypes)``: every Win32 function this module calls, and nothing else.
PROTOTYPES: dict[str, dict[str, tuple[Any, list[Any]]]] = {
    "kernel32": {
        "AssignProcessToJobObject": (_BOOL, [_HANDLE, _HANDLE]),
        "CloseHandle": (_BOOL, [_HANDLE]),
        "CreateJobObjectW": (_HANDLE, [_PVOID, _LPCWSTR]),
        "CreateProcessW": (_BOOL, _CREATE_PROCESS),
        "DeleteProcThreadAttributeList": (None, [_PVOID]),
        "GetCurrentProcess": (_HANDLE, []),
        "GetExitCodeProcess": (_BOOL, [_HANDLE, _OUT]),
        "GetProcessMitigationPolicy": (_BOOL, [_HANDLE, _ENUM, _PVOID, _SIZE_T]),
        "InitializeProcThreadAttributeList": (_BOOL, [_PVOID, _DWORD, _DWORD, _OUT]),
        "LocalFree": (_PVOID, [_PVOID]),
        "QueryInformationJobObject": (_BOOL, [_HANDLE, _ENUM, _PVOID, _DWORD, _OUT]),
        "ResumeThread": (_DWORD, [_HANDLE]),
        "SetHandleInformation": (_BOOL, [_HANDLE, _DWORD, _DWORD]),
        "SetInformationJobObject": (_BOOL, [_HANDLE, _ENUM, _PVOID, _DWORD]),
        "TerminateProcess": (_BOOL, [_HANDLE, _UINT]),
        "UpdateProcThreadAttribute": (_BOOL, [_PVOID, _DWORD, _SIZE_T, _PVOID, _SIZE_T, _PVOID, _PVOID]),
        "WaitForSingleObject": (_DWORD, [_HANDLE, _DWORD]),
    },
    "advapi32": {
        "AddMandatoryAce": (_BOOL, [_PACL, _DWORD, _DWORD, _DWORD, _PSID]),
        "ConvertSidToStringSidW": (_BOOL, [_PSID, _OUT]),
        "ConvertStringSidToSidW": (_BOOL, [_LPCWSTR, _OUT]),
        "CreateProcessAsUserW": (_BOOL, [_HANDLE, *_CREATE_PROCESS]),
        "CreateRestrictedToken": (_BOOL, [_HANDLE, _DWORD, _DWORD, _PVOID, _DWORD, _PVOID, _DWORD, _PVOID, _OUT]),
        "EqualSid": (_BOOL, [_PSID, _PSID]),
        "FreeSid": (_PVOID, [_PSID]),
        "GetAce": (_BOOL, [_PACL, _DWORD, _OUT]),
        "GetAclInformation": (_BOOL, [_PACL, _PVOID, _DWORD, _ENUM]),
        "GetLengthSid": (_DWORD, [_PSID]),
        "GetNamedSecurityInfoW": (_DWORD, [_LPCWSTR, _ENUM, _DWORD, _OUT, _OUT, _OUT, _OUT, _OUT]),
        "GetSecurityInfo": (_DWORD, [_HANDLE, _ENUM, _DWORD, _OUT, _OUT, _OUT, _OUT, _OUT]),
        "GetSidSubAuthority": (_PVOID, [_PSID, _DWORD]),
        "GetSidSubAuthorityCount": (_PVOID, [_PSID]),
        "GetTokenInformation": (_BOOL, [_HANDLE, _ENUM, _PVOID, _DWORD, _OUT]),
        "InitializeAcl": (_BOOL, [_PACL, _DWORD, _DWORD]),
        "IsValidSid": (_BOOL, [_PSID]),
        "OpenProcessToken": (_BOOL, [_HANDLE, _DWORD, _OUT]),
        "SetEntriesInAclW": (_DWORD, [_ULONG, _PVOID, _PACL, _OUT]),
        "SetNamedSecurityInfoW": (_DWORD, [_LPCWSTR, _ENUM, _DWORD, _PSID, _PSID, _PACL, _PACL]),
        "SetSecurityInfo": (_DWORD, [_HANDLE, _ENUM, _DWORD, _PSID, _PSID, _PACL, _PACL]),
        "SetTokenInformation": (_BOOL, [_HANDLE, _ENUM, _PVOID, _DWORD]),
    },
    "userenv": {
        "CreateAppContainerProfile": (_HRESULT, [_LPCWSTR, _LPCWSTR, _LPCWSTR, _PVOID, _DWORD, _OUT]),
        "DeriveAppContainerSidFromAppContainerName": (_HRESULT, [_LPCWSTR, _OUT]),
    },
    # The worker's own desktop (host side only). HWINSTA and HDESK are handles; ACCESS_MASK a DWORD.
    "user32": {
        "CloseDesktop": (_BOOL, [_HANDLE]),
        "CreateDesktopW": (_HANDLE, [_LPCWSTR, _LPCWSTR, _PVOID, _DWORD, _DWORD, _PVOID]),
        "GetProcessWindowStation": (_HANDLE, []),
        "GetUserObjectInformationW": (_BOOL, [_HANDLE, _INT, _PVOID, _DWORD, _OUT]),
    },
}
# Loaded on first use, never by the worker's read-back (``self_report`` needs kernel32 and advapi32 only): user32's
# initialisation calls into win32k, which the worker's win32k lockdown refuses, and the worker has no window.
_LOADED_ON_USE = frozenset({"userenv", "user32"})
_STATION_NAME_CHARS = 256


class AceEntry(NamedTuple):
    """One ACE of a DACL as ``GetAce`` gives it: its type, flags, access mask, and where its SID lies."""

    type: int
    flags: int
    mask: int
    sid: int  # an address inside the ACL: valid while the ACL's security descriptor is


# ACCESS_ALLOWED_ACE and ACCESS_DENIED_ACE (winnt.h): the header, the mask, then the SID itself.
_ACE_MASK_OFFSET, _ACE_SID_OFFSET = 4, 8


def _dll(name: str) -> Any:
    return ctypes.WinDLL(name, use_last_error=True)  # type: ignore[attr-defined]


def _last_error() -> int:
    get = getattr(ctypes, "get_last_error", None)  # Windows only
    return int(get()) if get is not None else 0


def _fail(code: int | None = None) -> OSError:
    err = _last_error() if code is None else code
    win_error = getattr(ctypes, "WinError", None)  # Windows only
    return win_error(err) if win_error is not None else OSError(f"Win32 error {err}")


class Win32:
    """kernel32 and advapi32 (loaded at once), userenv and user32 (loaded on first use, by the host only), as the
    host and the worker call them."""

    def __init__(self, loader: Callable[[str], Any] = _dll) -> None:
        self._loader = loader
        self._libs: dict[str, Any] = {}
        self.k32, self.advapi = self._lib("kernel32"), self._lib("advapi32")

    def _lib(self, dll: str) -> Any:
        """``dll`` loaded once, every function of it given its C signature: without ``argtypes`` ctypes passes a
        Python int as a C int (32 bits, truncating a 64-bit handle) and without ``restype`` reads the result as a
        C int."""
        if dll not in self._libs:
            lib = self._loader(dll)
            for name, (restype, argtypes) in PROTOTYPES[dll].items():
                function = getattr(lib, name)
                function.restype, function.argtypes = restype, argtypes
            self._libs[dll] = lib
        return self._libs[dll]

    @property
    def userenv(self) -> Any:
        return self._lib("userenv")

    @property
    def user32(self) -> Any:
        return self._lib("user32")

    def loaded(self) -> frozenset[str]:
        """The DLLs this object has loaded so far (the worker's read-back must not load user32)."""
        return frozenset(self._libs)

    @staticmethod
    def _ok(result: object) -> Any:
        if not result:
            raise _fail()
        return result

    # -- AppContainer profile and SIDs -------------------------------------------------------------------

    def create_appcontainer_profile(self, name: str, display: str, description: str) -> tuple[int, int]:
        """``(HRESULT, SID)``; the SID is 0 unless the HRESULT is 0. No capabilities."""
        sid = ctypes.c_void_p()
        hr = self.userenv.CreateAppContainerProfile(name, display, description, None, 0, ctypes.byref(sid))
        if hr == 0 and not sid.value:
            raise OSError("CreateAppContainerProfile succeeded without a SID")
        return int(hr), int(sid.value or 0)

    def derive_appcontainer_sid(self, name: str) -> int:
        sid = ctypes.c_void_p()
        hr = self.userenv.DeriveAppContainerSidFromAppContainerName(name, ctypes.byref(sid))
        if hr != 0:
            raise OSError(f"DeriveAppContainerSidFromAppContainerName: HRESULT {hr:#x}")
        if not sid.value:
            raise OSError("DeriveAppContainerSidFromAppContainerName succeeded without a SID")
        return int(sid.value)

    def free_sid(self, sid: int) -> None:
        self.advapi.FreeSid(ctypes.c_void_p(sid))

    def string_sid_to_sid(self, text: str) -> int:
        sid = ctypes.c_void_p()
        self._ok(self.advapi.ConvertStringSidToSidW(text, ctypes.byref(sid)))
        return int(sid.value or 0)

    def sid_to_string(self, sid: int) -> str:
        text = ctypes.c_wchar_p()
        self._ok(self.advapi.ConvertSidToStringSidW(ctypes.c_void_p(sid), ctypes.byref(text)))
        try:
            return str(text.value)
        finally:
            self.local_free(ctypes.cast(text, ctypes.c_void_p).value or 0)

    def sid_last_rid(self, sid: int) -> int:
        """The SID's last sub-authority; ``OSError``, never a NULL dereference, when the SID or a call is bad.

        Neither ``GetSidSubAuthority*`` validates its SID (their result is then undefined), so the SID is
        checked first (``IsValidSid``), and each pointer they return is checked before it is read.
        """
        if not sid or not self.advapi.IsValidSid(sid):
            raise OSError("not a valid SID")
        count_at = self.advapi.GetSidSubAuthorityCount(sid)
        if not count_at:
            raise _fail()
        count = ctypes.c_ubyte.from_address(count_at).value
        if count == 0:
            raise OSError("the SID has no sub-authority")
        last_at = self.advapi.GetSidSubAuthority(sid, count - 1)
        if not last_at:
            raise _fail()
        return int(ctypes.c_uint32.from_address(last_at).value)

    def sid_length(self, sid: int) -> int:
        return int(self._ok(self.advapi.GetLengthSid(ctypes.c_void_p(sid))))

    def local_free(self, pointer: int) -> None:
        self.k32.LocalFree(ctypes.c_void_p(pointer))

    # -- ACLs --------------------------------------------------------------------------------------------

    def get_named_security_info(self, path: str, info: int) -> tuple[int, int]:
        """``(DACL, security descriptor)`` of a file; the caller frees the descriptor (``local_free``)."""
        dacl, sd = ctypes.c_void_p(), ctypes.c_void_p()
        err = self.advapi.GetNamedSecurityInfoW(path, SE_FILE_OBJECT, info, None, None, ctypes.byref(dacl), None,
                                                ctypes.byref(sd))  # fmt: skip
        if err:
            raise _fail(err)
        if not sd.value:
            raise OSError("GetNamedSecurityInfoW returned no security descriptor")
        return int(dacl.value or 0), int(sd.value)

    def set_entries_in_acl(self, entries: ctypes.Array[Any], old_acl: int) -> int:
        """The merged ACL; the caller frees it (``local_free``)."""
        new = ctypes.c_void_p()
        err = self.advapi.SetEntriesInAclW(len(entries), entries, ctypes.c_void_p(old_acl), ctypes.byref(new))
        if err:
            raise _fail(err)
        if not new.value:
            raise OSError("SetEntriesInAclW returned no ACL")
        return int(new.value)

    def set_named_security_info(self, path: str, info: int, dacl: int, sacl: int) -> None:
        err = self.advapi.SetNamedSecurityInfoW(path, SE_FILE_OBJECT, info, None, None, ctypes.c_void_p(dacl or None),
                                                ctypes.c_void_p(sacl or None))  # fmt: skip
        if err:
            raise _fail(err)

    def acl_entries(self, acl: int) -> list[AceEntry]:
        """Every ACE of ``acl`` (``GetAclInformation``, then ``GetAce`` for each); each pointer checked first."""
        if not acl:
            raise OSError("no ACL")
        size = ACL_SIZE_INFORMATION()
        self._ok(self.advapi.GetAclInformation(ctypes.c_void_p(acl), ctypes.byref(size), ctypes.sizeof(size),
                                               ACL_SIZE_INFORMATION_CLASS))  # fmt: skip
        entries = []
        for index in range(size.AceCount):
            ace = ctypes.c_void_p()
            self._ok(self.advapi.GetAce(ctypes.c_void_p(acl), index, ctypes.byref(ace)))
            if not ace.value:
                raise OSError(f"GetAce gave no ACE at {index}")
            header = ACE_HEADER.from_address(ace.value)
            mask = ctypes.c_uint32.from_address(ace.value + _ACE_MASK_OFFSET).value
            entries.append(AceEntry(int(header.AceType), int(header.AceFlags), int(mask), ace.value + _ACE_SID_OFFSET))
        return entries

    def get_security_info(self, handle: int, object_type: int, info: int) -> tuple[int, int]:
        """``(DACL, security descriptor)`` of a kernel or USER object by handle; the caller frees the descriptor."""
        dacl, sd = ctypes.c_void_p(), ctypes.c_void_p()
        err = self.advapi.GetSecurityInfo(ctypes.c_void_p(handle), object_type, info, None, None, ctypes.byref(dacl),
                                          None, ctypes.byref(sd))  # fmt: skip
        if err:
            raise _fail(err)
        if not sd.value:
            raise OSError("GetSecurityInfo returned no security descriptor")
        return int(dacl.value or 0), int(sd.value)

    def set_security_info(self, handle: int, object_type: int, info: int, dacl: int, sacl: int) -> None:
        err = self.advapi.SetSecurityInfo(ctypes.c_void_p(handle), object_type, info, None, None,
                                          ctypes.c_void_p(dacl or None), ctypes.c_void_p(sacl or None))  # fmt: skip
        if err:
            raise _fail(err)

    def equal_sid(self, one: int, other: int) -> bool:
        return bool(self.advapi.EqualSid(ctypes.c_void_p(one), ctypes.c_void_p(other)))

    def new_label_acl(self, label_sid: int, inheritance: int, policy: int) -> ctypes.Array[ctypes.c_char]:
        """A SACL holding one mandatory-label ACE (``InitializeAcl`` + ``AddMandatoryAce``), in Python memory."""
        buf = ctypes.create_string_buffer(256)
        self._ok(self.advapi.InitializeAcl(buf, len(buf), ACL_REVISION))
        self._ok(self.advapi.AddMandatoryAce(buf, ACL_REVISION, inheritance, policy, ctypes.c_void_p(label_sid)))
        return buf

    # -- the attribute list ------------------------------------------------------------------------------

    def initialize_attribute_list(self, count: int) -> ctypes.Array[ctypes.c_char]:
        size = ctypes.c_size_t(0)
        self.k32.InitializeProcThreadAttributeList(None, count, 0, ctypes.byref(size))  # asks for the size
        if _last_error() != _ERROR_INSUFFICIENT_BUFFER or not size.value:
            raise _fail()
        buf = ctypes.create_string_buffer(size.value)
        self._ok(self.k32.InitializeProcThreadAttributeList(buf, count, 0, ctypes.byref(size)))
        return buf

    def update_attribute(self, attributes: ctypes.Array[ctypes.c_char], attribute: int, value: Any) -> None:
        self._ok(self.k32.UpdateProcThreadAttribute(attributes, 0, ctypes.c_size_t(attribute), ctypes.byref(value),
                                                    ctypes.sizeof(value), None, None))  # fmt: skip

    def delete_attribute_list(self, attributes: ctypes.Array[ctypes.c_char]) -> None:
        self.k32.DeleteProcThreadAttributeList(attributes)

    # -- tokens ------------------------------------------------------------------------------------------

    def open_process_token(self, access: int) -> int:
        token = ctypes.c_void_p()
        self._ok(self.advapi.OpenProcessToken(ctypes.c_void_p(self.k32.GetCurrentProcess()), access,
                                              ctypes.byref(token)))  # fmt: skip
        return int(token.value or 0)

    def create_restricted_token(self, token: int, flags: int) -> int:
        new = ctypes.c_void_p()
        self._ok(self.advapi.CreateRestrictedToken(ctypes.c_void_p(token), flags, 0, None, 0, None, 0, None,
                                                   ctypes.byref(new)))  # fmt: skip
        return int(new.value or 0)

    def set_token_information(self, token: int, info_class: int, value: Any, size: int) -> None:
        self._ok(self.advapi.SetTokenInformation(ctypes.c_void_p(token), info_class, ctypes.byref(value), size))

    def get_token_information(self, token: int, info_class: int) -> ctypes.Array[ctypes.c_char]:
        """The answer in a buffer the caller keeps alive: the SIDs it holds point into it."""
        size = ctypes.c_uint32(0)
        # Asks for the size: fails with ERROR_INSUFFICIENT_BUFFER; any other failure is the answer's.
        if not self.advapi.GetTokenInformation(ctypes.c_void_p(token), info_class, None, 0, ctypes.byref(size)) and (
            _last_error() != _ERROR_INSUFFICIENT_BUFFER
        ):
            raise _fail()
        buf = ctypes.create_string_buffer(max(size.value, 8))
        self._ok(self.advapi.GetTokenInformation(ctypes.c_void_p(token), info_class, buf, len(buf),
                                                 ctypes.byref(size)))  # fmt: skip
        return buf

    def process_mitigation_flags(self, policy: int) -> int:
        """This process's ``GetProcessMitigationPolicy`` answer for ``policy``, a DWORD of flags."""
        flags = ctypes.c_uint32(0)
        self._ok(self.k32.GetProcessMitigationPolicy(ctypes.c_void_p(self.k32.GetCurrentProcess()), policy,
                                                     ctypes.byref(flags), ctypes.sizeof(flags)))  # fmt: skip
        return int(flags.value)

    # -- the worker's desktop (user32, loaded here on first use) ------------------------------------------

    def window_station_name(self) -> str:
        """This process's window station's name (``WinSta0`` in an interactive session, another in a service's)."""
        station = self.user32.GetProcessWindowStation()  # not to be closed: the process's own
        if not station:
            raise _fail()
        name, needed = ctypes.create_unicode_buffer(_STATION_NAME_CHARS), ctypes.c_uint32(0)
        self._ok(self.user32.GetUserObjectInformationW(ctypes.c_void_p(station), UOI_NAME, name,
                                                       ctypes.sizeof(name), ctypes.byref(needed)))  # fmt: skip
        if not name.value:
            raise OSError("GetUserObjectInformationW gave the window station no name")
        return str(name.value)

    def create_desktop(self, name: str, access: int) -> int:
        """A new desktop on this process's window station, its DACL the creator's default; closed by
        ``close_desktop``."""
        desktop = self.user32.CreateDesktopW(name, None, None, 0, access, None)
        if not desktop:
            raise _fail()
        return int(desktop)

    def close_desktop(self, desktop: int) -> None:
        self.user32.CloseDesktop(ctypes.c_void_p(desktop))

    # -- processes, handles, jobs ------------------------------------------------------------------------

    def make_inheritable(self, handle: int) -> None:
        self._ok(self.k32.SetHandleInformation(ctypes.c_void_p(handle), _HANDLE_FLAG_INHERIT, _HANDLE_FLAG_INHERIT))

    def create_process(self, token: int | None, application: str, command_line: str, *, flags: int,
                       environment: str, cwd: str, startup: STARTUPINFOEXW) -> PROCESS_INFORMATION:
        """``CreateProcessW``, or ``CreateProcessAsUserW`` with ``token``; handles inherited: the list only."""
        info = PROCESS_INFORMATION()
        cmd = ctypes.create_unicode_buffer(command_line)  # CreateProcessW may write into it
        env = ctypes.create_unicode_buffer(environment, len(environment))
        args = (application, cmd, None, None, True, flags, env, cwd, ctypes.byref(startup), ctypes.byref(info))
        if token is None:
            self._ok(self.k32.CreateProcessW(*args))
        else:
            self._ok(self.advapi.CreateProcessAsUserW(ctypes.c_void_p(token), *args))
        return info

    def create_job(self) -> int:
        return int(self._ok(self.k32.CreateJobObjectW(None, None)))

    def set_limits(self, job: int, info: ExtendedLimits) -> None:
        self._ok(self.k32.SetInformationJobObject(ctypes.c_void_p(job), JOB_OBJECT_EXTENDED_LIMIT_INFORMATION,
                                                  ctypes.byref(info), ctypes.sizeof(info)))  # fmt: skip

    def set_ui_limits(self, job: int, flags: int) -> None:
        info = JOBOBJECT_BASIC_UI_RESTRICTIONS(flags)
        self._ok(self.k32.SetInformationJobObject(ctypes.c_void_p(job), JOB_OBJECT_BASIC_UI_RESTRICTIONS,
                                                  ctypes.byref(info), ctypes.sizeof(info)))  # fmt: skip

    def assign(self, job: int, process: int) -> None:
        self._ok(self.k32.AssignProcessToJobObject(ctypes.c_void_p(job), ctypes.c_void_p(process)))

    def resume_thread(self, thread: int) -> None:
        if self.k32.ResumeThread(ctypes.c_void_p(thread)) == 0xFFFFFFFF:
            raise _fail()

    def terminate(self, process: int, code: int) -> None:
        self.k32.TerminateProcess(ctypes.c_void_p(process), code)

    def wait(self, process: int, milliseconds: int) -> int:
        result = int(self.k32.WaitForSingleObject(ctypes.c_void_p(process), milliseconds))
        if result == _WAIT_FAILED:  # never read as "still running" or "exited"
            raise _fail()
        return result

    def exit_code(self, process: int) -> int:
        code = ctypes.c_uint32(0)
        self._ok(self.k32.GetExitCodeProcess(ctypes.c_void_p(process), ctypes.byref(code)))
        return int(code.value)

    def close(self, handle: int) -> None:
        self.k32.CloseHandle(ctypes.c_void_p(handle))
