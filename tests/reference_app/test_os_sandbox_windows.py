"""The Windows worker start as the Win32 calls it makes, on every platform: a recorder stands in for ``Win32``.

Held here: the 64-bit layout of every structure, the call order (the worker runs no instruction outside its
AppContainer and job), the attribute list, the ACL grants, the handle list, the restricted-token fallback,
that every handle, SID, descriptor and list is released on every path, and the worker's read-back of its token.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import skillhost.os_sandbox._windows as windows
import skillhost.os_sandbox._windows_api as api_module
import skillhost.os_sandbox._windows_process as process
import skillhost.os_sandbox._windows_structs as st
from skillhost.journey._kernel import refusing_layer
from skillhost.os_sandbox._interface import layer

# -- layouts -----------------------------------------------------------------------------------------------


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="64-bit layouts")
def test_every_structure_has_its_64_bit_windows_size_and_offsets() -> None:
    sizes = {st.STARTUPINFOW: 104, st.STARTUPINFOEXW: 112, st.PROCESS_INFORMATION: 24, st.SID_AND_ATTRIBUTES: 16,
             st.SECURITY_CAPABILITIES: 24, st.TRUSTEE_W: 32, st.EXPLICIT_ACCESS_W: 48, st.TOKEN_MANDATORY_LABEL: 16,
             st.ExtendedLimits: 144}  # fmt: skip
    assert {cls.__name__: ctypes.sizeof(cls) for cls in sizes} == {cls.__name__: n for cls, n in sizes.items()}
    assert st.STARTUPINFOW.dwFlags.offset == 60
    assert st.STARTUPINFOW.hStdInput.offset == 80
    assert st.STARTUPINFOEXW.lpAttributeList.offset == 104
    assert st.PROCESS_INFORMATION.dwProcessId.offset == 16
    assert st.SECURITY_CAPABILITIES.CapabilityCount.offset == 16
    assert st.TRUSTEE_W.ptstrName.offset == 24
    assert st.EXPLICIT_ACCESS_W.Trustee.offset == 16
    assert st.ExtendedLimits.ProcessMemoryLimit.offset == 112


def test_attribute_and_flag_values_are_the_sdk_s() -> None:
    assert st.PROC_THREAD_ATTRIBUTE_HANDLE_LIST == 0x20002
    assert st.PROC_THREAD_ATTRIBUTE_SECURITY_CAPABILITIES == 0x20009
    assert st.PROC_THREAD_ATTRIBUTE_ALL_APPLICATION_PACKAGES_POLICY == 0x2000F
    assert st.PROC_THREAD_ATTRIBUTE_CHILD_PROCESS_POLICY == 0x2000E
    assert windows.START_FLAGS == 0x00080000 | 0x4 | 0x400 | 0x200 | 0x08000000
    assert st.JOB_LIMIT_FLAGS == 0x2000 | 0x8 | 0x100 | 0x400


# -- the recorder ------------------------------------------------------------------------------------------

_SID, _DERIVED, _LOW, _TOKEN, _RESTRICTED = 0x5100, 0x5200, 0x5300, 0x70, 0x71
# skillhostInstallFiles' capability SID's sub-authorities after S-1-15-3-1024 (its derivation is held against
# Chromium's published SIDs in test_windows_install_grant.py).
_SKILLHOST_INSTALL_FILES = (572955721, 240784588, 1815088520, 1806784465, 1630863122, 1527793873, 4020719888,
                            2386442809)
_CAP, _CAP_ACE_SID = 0x5400, 0x5408  # the install capability's SID, and where an ACE naming it holds its SID
# The install folder's DACL as an installer leaves it: read and execute for the capability, inherited.
GRANTED = [(st.ACCESS_ALLOWED_ACE_TYPE, st.SUB_CONTAINERS_AND_OBJECTS_INHERIT, st.FILE_GENERIC_READ_EXECUTE,
            _CAP_ACE_SID)]
_PROCESS, _THREAD, _JOB, _PID = 0x80, 0x81, 0x90, 4321
_DESKTOP, _DESKTOP_DACL, _DESKTOP_NAME = 0xDE5C, 0xDAC1, "skillhost.worker.77.00112233aabbccdd"


@pytest.fixture(autouse=True)
def _one_desktop_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(windows, "desktop_name", lambda: _DESKTOP_NAME)


class Recorder:
    """Every Win32 call in order, with the values a reviewer checks; ``live`` is what is not yet released."""

    def __init__(self, fail_on: str = "", create_hr: int = 0, aces: list[tuple[int, int, int, int]] | None = None,
                 ) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.fail_on, self.create_hr = fail_on, create_hr
        self.aces = GRANTED if aces is None else aces
        self.live: set[object] = set()
        self._next = 0x1000

    def _call(self, name: str, detail: object = None) -> None:
        self.calls.append((name, detail))
        if name == self.fail_on:
            raise OSError(f"{name} failed")

    def _new(self, kind: str) -> int:
        self._next += 1
        self.live.add((kind, self._next))
        return self._next

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def create_appcontainer_profile(self, name: str, display: str, description: str) -> tuple[int, int]:
        self._call("create_appcontainer_profile", name)
        if self.create_hr:
            return self.create_hr, 0
        self.live.add(("sid", _SID))
        return 0, _SID

    def derive_appcontainer_sid(self, name: str) -> int:
        self._call("derive_appcontainer_sid", name)
        self.live.add(("sid", _DERIVED))
        return _DERIVED

    def free_sid(self, sid: int) -> None:
        self._call("free_sid", sid)
        self.live.remove(("sid", sid))

    def get_named_security_info(self, path: str, info: int) -> tuple[int, int]:
        self._call("get_named_security_info", (path, info))
        return 0xAC10, self._new("local")  # the DACL points into the descriptor, freed with it

    def set_entries_in_acl(self, entries: ctypes.Array[Any], old_acl: int) -> int:
        e = entries[0]
        t = e.Trustee
        self._call("set_entries_in_acl", (len(entries), e.grfAccessPermissions, e.grfAccessMode, e.grfInheritance,
                                          t.TrusteeForm, t.ptstrName, t.pMultipleTrustee, old_acl))  # fmt: skip
        return self._new("local")

    def set_named_security_info(self, path: str, info: int, dacl: int, sacl: int) -> None:
        self._call("set_named_security_info", (path, info, bool(dacl), bool(sacl)))

    def window_station_name(self) -> str:
        self._call("window_station_name")
        return "WinSta0"

    def create_desktop(self, name: str, access: int) -> int:
        self._call("create_desktop", (name, access))
        self.live.add(("desktop", _DESKTOP))
        return _DESKTOP

    def close_desktop(self, desktop: int) -> None:
        self._call("close_desktop", desktop)
        self.live.remove(("desktop", desktop))

    def get_security_info(self, handle: int, object_type: int, info: int) -> tuple[int, int]:
        self._call("get_security_info", (handle, object_type, info))
        return _DESKTOP_DACL, self._new("local")

    def set_security_info(self, handle: int, object_type: int, info: int, dacl: int, sacl: int) -> None:
        self._call("set_security_info", (handle, object_type, info, bool(dacl), bool(sacl)))

    def local_free(self, pointer: int) -> None:
        self._call("local_free", pointer)
        self.live.remove(("local", pointer) if ("local", pointer) in self.live else ("stringsid", pointer))

    def string_sid_to_sid(self, text: str) -> int:
        self._call("string_sid_to_sid", text)
        sid = _LOW if text == st.LOW_INTEGRITY_SID else _CAP
        self.live.add(("stringsid", sid))
        return sid

    def acl_entries(self, acl: int) -> list[tuple[int, int, int, int]]:
        self._call("acl_entries", acl)
        return self.aces

    def equal_sid(self, one: int, other: int) -> bool:
        return (one, other) == (_CAP_ACE_SID, _CAP)

    def sid_length(self, sid: int) -> int:
        return 12

    def new_label_acl(self, label_sid: int, inheritance: int, policy: int) -> ctypes.Array[ctypes.c_char]:
        self._call("new_label_acl", (label_sid, inheritance, policy))
        return ctypes.create_string_buffer(8)

    def initialize_attribute_list(self, count: int) -> ctypes.Array[ctypes.c_char]:
        self._call("initialize_attribute_list", count)
        buf = ctypes.create_string_buffer(64)
        self.live.add(("attributes", ctypes.addressof(buf)))
        self.attributes = buf
        return buf

    def update_attribute(self, attributes: ctypes.Array[ctypes.c_char], attribute: int, value: Any) -> None:
        if attribute == st.PROC_THREAD_ATTRIBUTE_SECURITY_CAPABILITIES:
            granted = [(value.Capabilities[i].Sid, value.Capabilities[i].Attributes)
                       for i in range(value.CapabilityCount)]
            detail: object = (value.AppContainerSid, granted, value.CapabilityCount)
        elif attribute == st.PROC_THREAD_ATTRIBUTE_HANDLE_LIST:
            detail = (list(value), ctypes.sizeof(value))
        else:
            detail = (value.value, ctypes.sizeof(value))
        self._call(f"update_attribute:{attribute:#x}", detail)

    def delete_attribute_list(self, attributes: ctypes.Array[ctypes.c_char]) -> None:
        self._call("delete_attribute_list")
        self.live.remove(("attributes", ctypes.addressof(attributes)))

    def open_process_token(self, access: int) -> int:
        self._call("open_process_token", access)
        self.live.add(("handle", _TOKEN))
        return _TOKEN

    def create_restricted_token(self, token: int, flags: int) -> int:
        self._call("create_restricted_token", (token, flags))
        self.live.add(("handle", _RESTRICTED))
        return _RESTRICTED

    def set_token_information(self, token: int, info_class: int, value: Any, size: int) -> None:
        self._call("set_token_information", (token, info_class, value.Label.Sid, value.Label.Attributes, size))

    def make_inheritable(self, handle: int) -> None:
        self._call("make_inheritable", handle)

    def create_process(self, token: int | None, application: str, command_line: str, *, flags: int,
                       environment: str, cwd: str, startup: st.STARTUPINFOEXW) -> st.PROCESS_INFORMATION:
        si = startup.StartupInfo
        self._call("create_process", {
            "token": token, "application": application, "command_line": command_line, "flags": flags,
            "environment": environment, "cwd": cwd, "cb": si.cb, "dwFlags": si.dwFlags,
            "std": (si.hStdInput, si.hStdOutput, si.hStdError),
            "attributes_at_list": startup.lpAttributeList == ctypes.addressof(self.attributes),
            "desktop": ctypes.wstring_at(si.lpDesktop) if si.lpDesktop else None,
        })  # fmt: skip
        self.live |= {("handle", _PROCESS), ("handle", _THREAD)}
        return st.PROCESS_INFORMATION(_PROCESS, _THREAD, _PID, 1)

    def create_job(self) -> int:
        self._call("create_job")
        self.live.add(("handle", _JOB))
        return _JOB

    def set_limits(self, job: int, info: st.ExtendedLimits) -> None:
        basic = info.BasicLimitInformation
        self._call("set_limits", (job, basic.LimitFlags, basic.ActiveProcessLimit, info.ProcessMemoryLimit))

    def set_ui_limits(self, job: int, flags: int) -> None:
        self._call("set_ui_limits", (job, flags))

    def assign(self, job: int, process: int) -> None:
        self._call("assign", (job, process))

    def resume_thread(self, thread: int) -> None:
        self._call("resume_thread", thread)

    def terminate(self, process: int, code: int) -> None:
        self._call("terminate", process)

    def close(self, handle: int) -> None:
        self._call("close", handle)
        self.live.remove(("handle", handle))


_ARGV = [r"C:\Program Files\skillhost\skillhost.exe", "worker"]
_ENV = {"SYSTEMROOT": r"C:\Windows", "PATH": r"C:\Windows\System32"}
_ROOTS = [r"C:\Program Files\skillhost"]
_TMP = r"C:\Users\u\AppData\Local\Temp\skillhost-worker-1"
_STD = (0x11, 0x12, 0x13)


def _start(api: Recorder, std: tuple[int, int, int] = _STD, **options: Any) -> windows.Started:
    return windows.start_worker(api, _ARGV, _ENV, _TMP, std=std, read_roots=_ROOTS,  # type: ignore[arg-type]
                                tmp_dir=_TMP, **options)


def _desktop_calls(container: int | None) -> list[tuple[str, Any]]:
    """A desktop of the worker's own, labelled Low, granted to its container (where it has one) to connect only."""
    label = [("window_station_name", None),
             ("create_desktop", (_DESKTOP_NAME, 0x1 | 0x2 | 0x20000 | 0x40000 | 0x80000)),  # Chromium's rights
             ("string_sid_to_sid", st.LOW_INTEGRITY_SID),
             ("new_label_acl", (_LOW, 0, st.SYSTEM_MANDATORY_LABEL_NO_WRITE_UP)),
             ("set_security_info", (_DESKTOP, 7, st.LABEL_SECURITY_INFORMATION, False, True))]  # fmt: skip
    if container is None:
        return label
    return [*label,
            ("get_security_info", (_DESKTOP, 7, st.DACL_SECURITY_INFORMATION)),
            ("set_entries_in_acl", (1, 0x1 | 0x2, st.GRANT_ACCESS, 0, st.TRUSTEE_IS_SID, container, None,
                                    _DESKTOP_DACL)),
            ("set_security_info", (_DESKTOP, 7, st.DACL_SECURITY_INFORMATION, True, False))]  # fmt: skip


def _check_calls(path: str) -> list[tuple[str, Any]]:
    """Reading a bundle folder's DACL: never a write (no ``set_*`` call)."""
    return [("get_named_security_info", (path, st.DACL_SECURITY_INFORMATION)), ("acl_entries", 0xAC10)]


def _label_calls(path: str) -> list[tuple[str, Any]]:
    return [("string_sid_to_sid", st.LOW_INTEGRITY_SID),
            ("new_label_acl", (_LOW, st.SUB_CONTAINERS_AND_OBJECTS_INHERIT, st.SYSTEM_MANDATORY_LABEL_NO_WRITE_UP)),
            ("set_named_security_info", (path, st.LABEL_SECURITY_INFORMATION, False, True))]  # fmt: skip


def _grant_calls(path: str, sid: int, access: int) -> list[tuple[str, Any]]:
    return [
        ("get_named_security_info", (path, st.DACL_SECURITY_INFORMATION)),
        ("set_entries_in_acl", (1, access, st.GRANT_ACCESS, st.SUB_CONTAINERS_AND_OBJECTS_INHERIT, st.TRUSTEE_IS_SID,
                                sid, None, 0xAC10)),
        ("set_named_security_info", (path, st.DACL_SECURITY_INFORMATION, True, False)),
    ]  # fmt: skip


def test_the_worker_starts_in_its_appcontainer_suspended_in_its_job_then_resumes() -> None:
    api = Recorder()
    started = _start(api)
    assert started == windows.Started(_PROCESS, _PID, _JOB, "appcontainer", _DESKTOP)
    calls = [c for c in api.calls if c[0] != "local_free"]
    name = windows.container_name(_ARGV[0])
    assert calls == [
        ("create_appcontainer_profile", name),
        ("string_sid_to_sid", "S-1-15-3-1024-" + "-".join(str(n) for n in _SKILLHOST_INSTALL_FILES)),
        *_check_calls(_ROOTS[0]),  # the bundle is read, never written
        *_grant_calls(_TMP, _SID, st.GENERIC_READ | st.GENERIC_WRITE | st.DELETE),
        *_label_calls(_TMP),  # Low, as the container's token: no-write-up would refuse every write
        *_desktop_calls(_SID),  # not WinSta0\Default: no window, hook or message of the user's reaches it
        ("make_inheritable", 0x11), ("make_inheritable", 0x12), ("make_inheritable", 0x13),
        ("initialize_attribute_list", 4),
        ("update_attribute:0x20009", (_SID, [(_CAP, st.SE_GROUP_ENABLED)], 1)),  # the install capability alone
        ("update_attribute:0x2000f", (1, 4)),  # PROCESS_CREATION_ALL_APPLICATION_PACKAGES_OPT_OUT, a DWORD
        ("update_attribute:0x2000e", (1, 4)),  # PROCESS_CREATION_CHILD_PROCESS_RESTRICTED: no process at all
        ("update_attribute:0x20002", ([0x11, 0x12, 0x13], 24)),  # the only handles it inherits
        ("create_process", {
            "token": None, "application": _ARGV[0], "command_line": f'"{_ARGV[0]}" worker',
            "flags": windows.START_FLAGS, "environment": "PATH=C:\\Windows\\System32\0SYSTEMROOT=C:\\Windows\0\0",
            "cwd": _TMP, "cb": 112, "dwFlags": st.STARTF_USESTDHANDLES, "std": _STD, "attributes_at_list": True,
            "desktop": "WinSta0\\" + _DESKTOP_NAME,
        }),
        ("create_job", None),
        ("set_limits", (_JOB, st.JOB_LIMIT_FLAGS, 1, 1 << 30)),
        ("set_ui_limits", (_JOB, 0xFF)),  # every JOB_OBJECT_UILIMIT_*: no clipboard, desktop, atoms, USER handles
        ("assign", (_JOB, _PROCESS)),
        ("resume_thread", _THREAD),
        ("close", _THREAD),
        ("delete_attribute_list", None),
        ("free_sid", _SID),
    ]  # fmt: skip
    # The check frees its descriptor, the grants their merged ACLs and descriptors, the labels and the capability
    # their SIDs; only the process, its job and its desktop outlive the start.
    assert api.names().count("local_free") == 8
    assert api.live == {("handle", _PROCESS), ("handle", _JOB), ("desktop", _DESKTOP)}
    assert len(name) <= 64
    assert name == windows.container_name(_ARGV[0])  # stable: the same profile every run


def test_an_existing_profile_is_reused_by_its_derived_sid() -> None:
    api = Recorder(create_hr=st.HRESULT_ALREADY_EXISTS)
    assert _start(api).layer == "appcontainer"
    assert api.names()[:2] == ["create_appcontainer_profile", "derive_appcontainer_sid"]
    assert ("update_attribute:0x20009", (_DERIVED, [(_CAP, st.SE_GROUP_ENABLED)], 1)) in api.calls
    assert api.calls[-1] == ("free_sid", _DERIVED)


def test_duplicate_standard_handles_are_listed_once() -> None:
    api = Recorder()
    _start(api, std=(0x11, 0x12, 0x12))
    assert ("update_attribute:0x20002", ([0x11, 0x12], 16)) in api.calls


@pytest.mark.parametrize("attribute", ["update_attribute:0x2000f", "update_attribute:0x2000e"])
def test_windows_without_an_optional_policy_still_starts_the_container(attribute: str) -> None:
    """Older Windows lacks the packages opt-out (10 1703) or the child-process policy (10 1709): the worker
    starts, and its read-back says what it lacks (the policy then decides)."""
    api = Recorder(fail_on=attribute)
    assert _start(api).layer == "appcontainer"
    assert "create_process" in api.names()
    assert api.live == {("handle", _PROCESS), ("handle", _JOB), ("desktop", _DESKTOP)}


def test_without_an_appcontainer_the_fallback_is_a_restricted_low_integrity_token() -> None:
    api = Recorder(create_hr=0x80070005)  # E_ACCESSDENIED
    started = _start(api)
    assert started.layer == "restricted-token"
    calls = [c for c in api.calls if c[0] != "local_free"]
    assert calls[:9] == [
        ("create_appcontainer_profile", windows.container_name(_ARGV[0])),
        *_label_calls(_TMP),
        ("open_process_token", st.TOKEN_DUPLICATE | st.TOKEN_QUERY | st.TOKEN_ASSIGN_PRIMARY | st.TOKEN_ADJUST_DEFAULT),
        ("create_restricted_token", (_TOKEN, st.DISABLE_MAX_PRIVILEGE)),
        ("close", _TOKEN),
        ("string_sid_to_sid", "S-1-16-4096"),
        ("set_token_information", (_RESTRICTED, st.TOKEN_INTEGRITY_LEVEL, _LOW, st.SE_GROUP_INTEGRITY, 16 + 12)),
    ]  # fmt: skip
    assert "get_named_security_info" not in api.names()  # no AppContainer SID to grant anything to
    assert calls[9:14] == _desktop_calls(None)  # its own desktop too, labelled Low as the token; no grant
    assert "get_security_info" not in api.names()
    assert ("initialize_attribute_list", 2) in api.calls  # no child process, and the handle list
    assert [n for n in api.names() if n.startswith("update_attribute")] == [
        "update_attribute:0x2000e", "update_attribute:0x20002"]
    process = next(d for n, d in api.calls if n == "create_process")
    assert process["token"] == _RESTRICTED
    assert api.calls[-1] == ("close", _RESTRICTED)
    assert api.live == {("handle", _PROCESS), ("handle", _JOB), ("desktop", _DESKTOP)}


_APPCONTAINER_STEPS = [
    "derive_appcontainer_sid", "string_sid_to_sid", "get_named_security_info", "acl_entries", "set_entries_in_acl",
    "set_named_security_info", "new_label_acl", "window_station_name", "create_desktop", "set_security_info",
    "get_security_info", "make_inheritable", "initialize_attribute_list",
    "update_attribute:0x20009", "update_attribute:0x20002",
    "create_process", "create_job", "set_limits", "set_ui_limits", "assign", "resume_thread",
]  # fmt: skip
_FALLBACK_STEPS = [
    "open_process_token", "create_restricted_token", "string_sid_to_sid", "set_token_information", "new_label_acl",
    "set_named_security_info", "window_station_name", "create_desktop", "set_security_info",
    "initialize_attribute_list", "create_process", "create_job", "set_ui_limits", "assign", "resume_thread",
]  # fmt: skip


@pytest.mark.parametrize(("create_hr", "step"), [
    *((st.HRESULT_ALREADY_EXISTS, s) for s in _APPCONTAINER_STEPS), *((0x80070005, s) for s in _FALLBACK_STEPS),
])  # fmt: skip
def test_a_failure_at_any_step_releases_everything_and_never_resumes(create_hr: int, step: str) -> None:
    api = Recorder(fail_on=step, create_hr=create_hr)
    with pytest.raises(OSError, match=step):
        _start(api)
    assert api.live == set(), api.live  # every handle, SID, descriptor, ACL and attribute list released
    names = api.names()
    assert "resume_thread" not in names or step == "resume_thread"  # the worker never ran unconfined
    if "create_process" in names[: names.index(step)]:
        assert ("terminate", _PROCESS) in api.calls  # started suspended, killed before its first instruction


# -- the host's process object -----------------------------------------------------------------------------


class _WaitApi(Recorder):
    def __init__(self, waits: list[int], code: int = 0) -> None:
        super().__init__()
        self.waits, self.code = waits, code

    def wait(self, process: int, millis: int) -> int:
        self._call("wait", (process, millis))
        return self.waits.pop(0)

    def exit_code(self, process: int) -> int:
        return self.code


def test_the_plan_starts_with_pipes_and_releases_the_process_then_the_job(tmp_path: Path) -> None:
    api = _WaitApi([st.WAIT_TIMEOUT, st.WAIT_OBJECT_0], code=3)
    plan = process.plan(_ARGV, str(tmp_path), _ROOTS, api_factory=lambda: api, to_handle=lambda fd: fd + 0x10000)  # type: ignore[arg-type,return-value]
    assert plan.start is not None
    assert plan.after_spawn is None
    proc, release = plan.start(_ENV, str(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    std = next(d for n, d in api.calls if n == "create_process")["std"]
    assert all(h > 0x10000 for h in std)
    for handle in std:  # the child's ends were closed in the host once the child held them
        with pytest.raises(OSError, match="Bad file descriptor"):
            os.fstat(handle - 0x10000)
    assert proc.pid == _PID
    assert proc.poll() is None
    assert proc.wait(1.0) == 3
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.close()
    proc.stdout.close()
    release()
    assert api.calls[-3:] == [("close", _PROCESS), ("close", _JOB), ("close_desktop", _DESKTOP)]
    assert api.live == set()


def test_a_wait_that_times_out_says_so() -> None:
    api = _WaitApi([st.WAIT_TIMEOUT])
    proc = process.WindowsProcess(api, windows.Started(_PROCESS, _PID, _JOB, "appcontainer"), _ARGV, None, None)  # type: ignore[arg-type]
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(0.5)
    assert api.calls == [("wait", (_PROCESS, 500))]


def test_a_failed_start_closes_the_host_ends_of_its_pipes(tmp_path: Path) -> None:
    api = Recorder(fail_on="create_process")
    plan = process.plan(_ARGV, str(tmp_path), _ROOTS, api_factory=lambda: api, to_handle=lambda fd: fd)  # type: ignore[arg-type,return-value]
    fds = Path("/proc/self/fd")
    before = {p.name for p in fds.iterdir()} if fds.is_dir() else None
    assert plan.start is not None
    with pytest.raises(OSError, match="create_process"):
        plan.start(_ENV, str(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None)
    if before is not None:
        assert {p.name for p in fds.iterdir()} == before
    assert api.live == set()


# -- the worker's read-back --------------------------------------------------------------------------------


class _TokenApi:
    def __init__(self, container: bool, rid: int, win32k: int | None = 0) -> None:
        self.container, self.rid = container, rid
        self.child_flags = 1 if container else 0
        self.win32k = win32k  # ProcessSystemCallDisablePolicy's flags; None: not readable (Windows 7)
        self.closed: list[int] = []

    def open_process_token(self, access: int) -> int:
        assert access == st.TOKEN_QUERY
        return 9

    def get_token_information(self, token: int, info_class: int) -> ctypes.Array[ctypes.c_char]:
        if info_class == st.TOKEN_IS_APP_CONTAINER:
            raw = int(self.container).to_bytes(4, "little")
        elif info_class == st.TOKEN_INTEGRITY_LEVEL:
            raw = bytes(st.TOKEN_MANDATORY_LABEL(st.SID_AND_ATTRIBUTES(0x7777, 0x20))) + b"\0" * 12
        else:
            assert info_class == st.TOKEN_APP_CONTAINER_SID
            raw = (0x8888).to_bytes(8, "little")
        return ctypes.create_string_buffer(raw, len(raw))

    def sid_last_rid(self, sid: int) -> int:
        assert sid == 0x7777
        return self.rid

    def sid_to_string(self, sid: int) -> str:
        assert sid == 0x8888
        return "S-1-15-2-1-2-3-4-5-6-7"

    def process_mitigation_flags(self, policy: int) -> int:
        if policy == st.PROCESS_SYSTEM_CALL_DISABLE_POLICY:
            if self.win32k is None:
                raise OSError("ERROR_INVALID_PARAMETER")
            return self.win32k
        assert policy == st.PROCESS_CHILD_PROCESS_POLICY
        return self.child_flags

    def close(self, handle: int) -> None:
        self.closed.append(handle)


class _K32:
    def __init__(self, ui: int | None = st.UI_LIMITS) -> None:
        self.ui = ui

    def QueryInformationJobObject(self, job, cls, info_ref, size, got_ref) -> int:  # noqa: N802
        if cls == st.JOB_OBJECT_BASIC_UI_RESTRICTIONS:
            if self.ui is None:
                return 0
            ctypes.cast(info_ref, ctypes.POINTER(st.JOBOBJECT_BASIC_UI_RESTRICTIONS)).contents.UIRestrictionsClass = (
                self.ui
            )
            return 1
        info = ctypes.cast(info_ref, ctypes.POINTER(st.ExtendedLimits)).contents
        info.BasicLimitInformation.LimitFlags = st.JOB_LIMIT_FLAGS
        info.BasicLimitInformation.ActiveProcessLimit = 1
        return 1


def test_the_worker_reports_its_container_sid_and_integrity_as_read_from_its_token() -> None:
    api = _TokenApi(container=True, rid=st.SECURITY_MANDATORY_LOW_RID)
    report = windows.self_report(_K32(), api_factory=lambda: api)  # type: ignore[arg-type,return-value]
    assert [e["name"] for e in report] == [*windows.WINDOWS_LAYERS, "win32k-lockdown"]
    assert all(e["applied"] for e in report[:4])
    # Off by default (the worker loads user32 through ctypes): reported as read back, not as asked.
    assert report[4] == layer("win32k-lockdown", applied=False, detail="system call disable policy flags 0x0")
    assert report[1] == layer("no-child-process", applied=True, detail="child process policy flags 0x1")
    assert report[2]["detail"] == "S-1-15-2-1-2-3-4-5-6-7, integrity RID 0x1000"
    assert api.closed == [9]


def test_a_medium_integrity_token_outside_a_container_reports_neither_token_layer() -> None:
    api = _TokenApi(container=False, rid=st.SECURITY_MANDATORY_MEDIUM_RID)
    report = windows.self_report(_K32(), api_factory=lambda: api)  # type: ignore[arg-type,return-value]
    assert report[0]["applied"]
    assert report[1] == layer("no-child-process", applied=False, detail="child process policy flags 0x0")
    assert report[2] == layer("appcontainer", applied=False, detail="not an AppContainer token, integrity RID 0x2000")
    assert report[3] == layer("restricted-token", applied=False, detail="integrity RID 0x2000 (not low)")


def test_each_windows_refusal_is_owned_by_the_layer_that_gives_it() -> None:
    full = [layer(n, applied=True, detail="") for n in windows.WINDOWS_LAYERS]
    fallback = [layer(n, applied=True, detail="") for n in ("job-object", "no-child-process", "restricted-token")]
    assert refusing_layer("windows", "tcp-connect-loopback", "EACCES", full) == "appcontainer"
    assert refusing_layer("windows", "exec-shell", "EACCES", full) == "no-child-process"
    assert refusing_layer("windows", "exec-shell", "EACCES", fallback) == "no-child-process"
    assert refusing_layer("windows", "write-outside-tmp", "EACCES", fallback) == "restricted-token"
    assert refusing_layer("windows", "ptrace-host", "EACCES", fallback) == "restricted-token"
    # A low-integrity token refuses neither a world-readable file nor a loopback connect.
    assert refusing_layer("windows", "read-outside-bundle", "EACCES", fallback) is None
    assert refusing_layer("windows", "tcp-connect-loopback", "EACCES", fallback) is None


def test_the_job_layer_requires_every_ui_limit_as_read_back() -> None:
    api = _TokenApi(container=True, rid=st.SECURITY_MANDATORY_LOW_RID)
    assert st.UI_LIMITS == 0xFF
    report = windows.self_report(_K32(), api_factory=lambda: api)  # type: ignore[arg-type,return-value]
    assert report[0] == layer("job-object", applied=True,
                              detail="limit flags 0x2508, active processes 1, ui limits 0xff")  # fmt: skip
    for ui in (0x7F, None):  # one limit missing, or not readable
        report = windows.self_report(_K32(ui=ui), api_factory=lambda: api)  # type: ignore[arg-type,return-value]
        assert not report[0]["applied"], report[0]


# -- the Win32 calls themselves: every function with its C signature, every failure checked ------------------

_VOID_P, _U32, _I32 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int32

# The SDK's signatures, written here from the Windows headers, not from the module: (restype, argument count).
# Handles, SIDs, ACLs and out-pointers must be pointer-sized; BOOL is a 32-bit int, DWORD/HRESULT 32 bits.
_SDK = {
    "CreateJobObjectW": (_VOID_P, 2), "GetCurrentProcess": (_VOID_P, 0), "LocalFree": (_VOID_P, 1),
    "ResumeThread": (_U32, 1), "WaitForSingleObject": (_U32, 2), "CloseHandle": (_I32, 1),
    "TerminateProcess": (_I32, 2), "GetExitCodeProcess": (_I32, 2), "AssignProcessToJobObject": (_I32, 2),
    "SetInformationJobObject": (_I32, 4), "QueryInformationJobObject": (_I32, 5), "SetHandleInformation": (_I32, 3),
    "CreateProcessW": (_I32, 10), "CreateProcessAsUserW": (_I32, 11), "InitializeProcThreadAttributeList": (_I32, 4),
    "UpdateProcThreadAttribute": (_I32, 7), "DeleteProcThreadAttributeList": (None, 1),
    "GetProcessMitigationPolicy": (_I32, 4), "GetSidSubAuthorityCount": (_VOID_P, 1),
    "GetSidSubAuthority": (_VOID_P, 2), "IsValidSid": (_I32, 1), "GetLengthSid": (_U32, 1), "FreeSid": (_VOID_P, 1),
    "ConvertStringSidToSidW": (_I32, 2), "ConvertSidToStringSidW": (_I32, 2), "GetNamedSecurityInfoW": (_U32, 8),
    "SetEntriesInAclW": (_U32, 4), "SetNamedSecurityInfoW": (_U32, 7), "InitializeAcl": (_I32, 3),
    "AddMandatoryAce": (_I32, 5), "OpenProcessToken": (_I32, 3), "CreateRestrictedToken": (_I32, 9),
    "SetTokenInformation": (_I32, 4), "GetTokenInformation": (_I32, 5), "CreateAppContainerProfile": (_U32, 6),
    "DeriveAppContainerSidFromAppContainerName": (_U32, 2), "GetAclInformation": (_I32, 4), "GetAce": (_I32, 3),
    "EqualSid": (_I32, 2), "GetSecurityInfo": (_U32, 8), "SetSecurityInfo": (_U32, 7),
    # user32: HWINSTA and HDESK are handles, pointer-sized.
    "GetProcessWindowStation": (_VOID_P, 0), "GetUserObjectInformationW": (_I32, 5), "CreateDesktopW": (_VOID_P, 6),
    "CloseDesktop": (_I32, 1),
}  # fmt: skip
# Arguments that are handles or pointers, by position: a 64-bit value there must never be cut to a C int.
_POINTER_ARGS = {
    "CloseHandle": (0,), "AssignProcessToJobObject": (0, 1), "ResumeThread": (0,), "WaitForSingleObject": (0,),
    "TerminateProcess": (0,), "GetSidSubAuthority": (0,), "GetSidSubAuthorityCount": (0,), "IsValidSid": (0,),
    "SetEntriesInAclW": (1, 2, 3), "SetNamedSecurityInfoW": (5, 6), "CreateProcessAsUserW": (0,),
    "UpdateProcThreadAttribute": (0, 3, 5, 6), "LocalFree": (0,), "FreeSid": (0,), "GetAclInformation": (0, 1),
    "GetAce": (0, 2), "EqualSid": (0, 1), "GetSecurityInfo": (0, 3, 4, 5, 6, 7), "SetSecurityInfo": (0, 3, 4, 5, 6),
    "GetUserObjectInformationW": (0, 2, 4), "CreateDesktopW": (2, 5), "CloseDesktop": (0,),
}  # fmt: skip


class _Function:
    """A DLL export: refuses a call unless its signature was declared, and converts each argument as ctypes would."""

    def __init__(self, name: str, dll: _Dll) -> None:
        self.name, self.dll = name, dll
        self.argtypes: list[Any] | None = None
        self.restype: Any = "unset"

    def __call__(self, *args: Any) -> Any:
        assert self.argtypes is not None, f"{self.name} called without its argtypes"
        assert self.restype != "unset", f"{self.name} called without its restype"
        assert len(args) == len(self.argtypes), self.name
        for argtype, arg in zip(self.argtypes, args, strict=True):
            argtype.from_param(arg)  # TypeError where ctypes would refuse it
        self.dll.called.append(self.name)
        return self.dll.answer(self.name, args)


class _Dll:
    def __init__(self, name: str, answer: Any) -> None:
        self.name, self.answer, self.called = name, answer, []
        self.functions: dict[str, _Function] = {}

    def __getattr__(self, name: str) -> _Function:
        if name not in _SDK:
            raise AttributeError(name)
        return self.functions.setdefault(name, _Function(name, self))


def _fill(ref: Any, value: int) -> None:
    ref._obj.value = value  # the object a byref() points at, as the DLL would write it


class _Answers:
    """Success answers, with every out-pointer filled; ``overrides`` replace one function's answer."""

    def __init__(self, **overrides: Any) -> None:
        self.overrides = overrides
        self.count = ctypes.c_ubyte(3)
        self.rids = (ctypes.c_uint32 * 3)(21, 22, 0x1000)
        # One ACCESS_ALLOWED_ACE as it lies in an ACL: type, flags, size, mask, then the SID's first DWORD.
        self.ace = ctypes.create_string_buffer(bytes([0, 0x3]) + (20).to_bytes(2, "little")
                                               + (0x1200A9).to_bytes(4, "little") + b"\x01\x0a" + b"\0" * 10)

    def __call__(self, name: str, args: tuple[Any, ...]) -> Any:
        if name in self.overrides:
            return self.overrides[name](*args) if callable(self.overrides[name]) else self.overrides[name]
        if name in {"CreateAppContainerProfile", "DeriveAppContainerSidFromAppContainerName",
                    "ConvertStringSidToSidW", "OpenProcessToken", "CreateRestrictedToken", "SetEntriesInAclW"}:
            _fill(args[-1], 0x5100)
        elif name == "GetAclInformation":
            ctypes.cast(args[1], ctypes.POINTER(st.ACL_SIZE_INFORMATION)).contents.AceCount = 1
        elif name == "GetAce":
            _fill(args[2], ctypes.addressof(self.ace))
        elif name in {"GetNamedSecurityInfoW", "GetSecurityInfo"}:
            _fill(args[5], 0xAC10)
            _fill(args[7], 0xD500)
        elif name == "GetUserObjectInformationW":
            args[2].value = "WinSta0"  # the name buffer itself, not a byref
        elif name == "GetSidSubAuthorityCount":
            return ctypes.addressof(self.count)
        elif name == "GetSidSubAuthority":
            return ctypes.addressof(self.rids) + 4 * args[1]
        elif name == "InitializeProcThreadAttributeList" and args[0] is None:
            _fill(args[3], 48)
            return 0
        elif name == "ConvertSidToStringSidW":
            args[1]._obj.value = "S-1-15-2-1"
        elif name == "GetExitCodeProcess":
            _fill(args[1], 7)
        _result = {"GetLengthSid": 12, "ResumeThread": 1, "GetCurrentProcess": 0xFFFFFFFFFFFFFFFF,
                   "CreateJobObjectW": 0x7FFF00001234, "GetProcessWindowStation": 0x7FFF00000050,
                   "CreateDesktopW": 0x7FFF00000060}  # handles above 32 bits
        restype = _SDK[name][0]
        return _result.get(name, 1 if restype is _I32 else 0 if restype is _U32 else None)


def _api(monkeypatch: pytest.MonkeyPatch, last_error: int = 122, **overrides: Any) -> tuple[Any, dict[str, _Dll]]:
    monkeypatch.setattr(api_module, "_last_error", lambda: last_error)
    answers = _Answers(**overrides)
    dlls: dict[str, _Dll] = {}
    win32 = api_module.Win32(loader=lambda name: dlls.setdefault(name, _Dll(name, answers)))
    return win32, dlls


def _every_method(win32: Any) -> None:
    win32.create_appcontainer_profile("n", "d", "x")
    win32.derive_appcontainer_sid("n")
    win32.free_sid(0x5100)
    win32.string_sid_to_sid(st.LOW_INTEGRITY_SID)
    win32.sid_last_rid(0x5100)
    win32.sid_length(0x5100)
    win32.local_free(0xD500)
    win32.get_named_security_info("C:\\x", st.DACL_SECURITY_INFORMATION)
    win32.set_entries_in_acl((st.EXPLICIT_ACCESS_W * 1)(), 0xAC10)
    win32.set_named_security_info("C:\\x", st.DACL_SECURITY_INFORMATION, 0x5100, 0)
    win32.new_label_acl(0x5100, st.SUB_CONTAINERS_AND_OBJECTS_INHERIT, st.SYSTEM_MANDATORY_LABEL_NO_WRITE_UP)
    [entry] = win32.acl_entries(0xAC10)
    assert entry[:3] == (st.ACCESS_ALLOWED_ACE_TYPE, st.SUB_CONTAINERS_AND_OBJECTS_INHERIT, 0x1200A9)
    assert win32.equal_sid(entry.sid, 0x5400)
    attributes = win32.initialize_attribute_list(2)
    win32.update_attribute(attributes, st.PROC_THREAD_ATTRIBUTE_CHILD_PROCESS_POLICY, ctypes.c_uint32(1))
    win32.delete_attribute_list(attributes)
    token = win32.open_process_token(st.TOKEN_QUERY)
    win32.create_restricted_token(token, st.DISABLE_MAX_PRIVILEGE)
    win32.set_token_information(token, st.TOKEN_INTEGRITY_LEVEL, st.TOKEN_MANDATORY_LABEL(), 28)
    win32.process_mitigation_flags(st.PROCESS_CHILD_PROCESS_POLICY)
    win32.make_inheritable(0x7FFF00000011)
    assert len(win32.get_token_information(token, st.TOKEN_IS_APP_CONTAINER)) == 8
    assert win32.sid_to_string(0x5100) == "S-1-15-2-1"
    for tok in (None, token):
        win32.create_process(tok, "C:\\w.exe", '"C:\\w.exe" worker', flags=windows.START_FLAGS,
                             environment="A=b\0\0", cwd="C:\\", startup=st.STARTUPINFOEXW())  # fmt: skip
    job = win32.create_job()
    assert job == 0x7FFF00001234  # a 64-bit handle, whole
    win32.set_limits(job, st.job_limits())
    win32.set_ui_limits(job, st.UI_LIMITS)
    win32.assign(job, 0x7FFF00000080)
    win32.resume_thread(0x7FFF00000081)
    win32.terminate(0x7FFF00000080, 1)
    assert win32.wait(0x7FFF00000080, 0) == st.WAIT_OBJECT_0
    assert win32.exit_code(0x7FFF00000080) == 7
    win32.close(job)
    assert win32.window_station_name() == "WinSta0"
    desktop = win32.create_desktop("skillhost.worker.1.0", st.DESKTOP_ACCESS)
    assert desktop == 0x7FFF00000060  # a 64-bit handle, whole
    assert win32.get_security_info(desktop, st.SE_WINDOW_OBJECT, st.DACL_SECURITY_INFORMATION) == (0xAC10, 0xD500)
    win32.set_security_info(desktop, st.SE_WINDOW_OBJECT, st.DACL_SECURITY_INFORMATION, 0xAC11, 0)
    win32.close_desktop(desktop)


def test_every_win32_function_is_called_with_its_sdk_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    win32, dlls = _api(monkeypatch)
    # The worker's read-back builds this object too: it loads kernel32 and advapi32, never user32 (whose
    # initialisation calls into win32k) nor userenv; those load, with their signatures, on first use.
    assert set(dlls) == {"kernel32", "advapi32"} == win32.loaded()
    _every_method(win32)
    assert set(dlls) == {"kernel32", "advapi32", "userenv", "user32"} == win32.loaded()
    declared = {name: (fn.restype, len(fn.argtypes or ())) for dll in dlls.values()
                for name, fn in dll.functions.items()}  # fmt: skip
    assert declared == _SDK  # every export the module names, as the SDK
    assert {name for name in declared if name in dlls["user32"].functions} == set(api_module.PROTOTYPES["user32"])
    for dll in dlls.values():
        for name, positions in _POINTER_ARGS.items():
            if name in dll.functions:
                assert all(dll.functions[name].argtypes[i] is ctypes.c_void_p for i in positions), name
    called = {name for dll in dlls.values() for name in dll.called}
    # Every export the methods call has its signature (the fake refuses any other); the job read-back is the
    # worker's (``self_report``), through the same prototyped kernel32.
    assert set(_SDK) - called == {"QueryInformationJobObject"}


def test_sid_last_rid_reads_the_last_sub_authority_and_never_dereferences_null(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    win32, _ = _api(monkeypatch)
    assert win32.sid_last_rid(0x5100) == 0x1000
    for overrides in ({"IsValidSid": 0}, {"GetSidSubAuthorityCount": None}, {"GetSidSubAuthority": None}):
        win32, dlls = _api(monkeypatch, **overrides)
        with pytest.raises(OSError):  # noqa: PT011
            win32.sid_last_rid(0x5100)
    win32, _ = _api(monkeypatch)
    with pytest.raises(OSError):  # noqa: PT011
        win32.sid_last_rid(0)  # a token whose label has no SID
    answers_count_zero = _Answers()
    answers_count_zero.count.value = 0
    dlls = {}
    monkeypatch.setattr(api_module, "_last_error", lambda: 0)
    win32 = api_module.Win32(loader=lambda name: dlls.setdefault(name, _Dll(name, answers_count_zero)))
    with pytest.raises(OSError, match="no sub-authority"):
        win32.sid_last_rid(0x5100)  # count - 1 would index -1


@pytest.mark.parametrize(("method", "overrides"), [
    ("wait", {"WaitForSingleObject": 0xFFFFFFFF}),  # WAIT_FAILED is neither "running" nor "exited"
    ("sid_length", {"GetLengthSid": 0}),
    ("get_named_security_info", {"GetNamedSecurityInfoW": 0x5}),
    ("get_named_security_info", {"GetNamedSecurityInfoW": lambda *a: _fill(a[5], 0xAC10) or 0}),  # no descriptor
    ("set_entries_in_acl", {"SetEntriesInAclW": lambda *a: 0}),  # success, but no ACL
    ("create_appcontainer_profile", {"CreateAppContainerProfile": lambda *a: 0}),  # S_OK without a SID
    ("derive_appcontainer_sid", {"DeriveAppContainerSidFromAppContainerName": lambda *a: 0}),
    ("get_token_information", {"GetTokenInformation": 0}),  # the size query failed for another reason
    ("initialize_attribute_list", {"InitializeProcThreadAttributeList": 0}),  # no size given
    ("create_job", {"CreateJobObjectW": None}),
    ("set_ui_limits", {"SetInformationJobObject": 0}),
    ("window_station_name", {"GetProcessWindowStation": None}),
    ("window_station_name", {"GetUserObjectInformationW": 0}),
    ("window_station_name", {"GetUserObjectInformationW": 1}),  # success, but no name written
    ("create_desktop", {"CreateDesktopW": None}),
    ("get_security_info", {"GetSecurityInfo": 0x5}),
    ("get_security_info", {"GetSecurityInfo": lambda *a: _fill(a[5], 0xAC10) or 0}),  # no descriptor
    ("set_security_info", {"SetSecurityInfo": 0x5}),
])  # fmt: skip
def test_each_win32_failure_is_raised_before_its_result_is_used(
    monkeypatch: pytest.MonkeyPatch, method: str, overrides: dict[str, Any],
) -> None:
    win32, _ = _api(monkeypatch, last_error=5 if method == "get_token_information" else 122, **overrides)
    args = {
        "wait": (0x80, 0), "sid_length": (0x5100,), "get_named_security_info": ("C:\\x", 4),
        "set_entries_in_acl": ((st.EXPLICIT_ACCESS_W * 1)(), 0), "create_appcontainer_profile": ("n", "d", "x"),
        "derive_appcontainer_sid": ("n",), "get_token_information": (0x70, st.TOKEN_INTEGRITY_LEVEL),
        "initialize_attribute_list": (2,), "create_job": (), "set_ui_limits": (0x90, st.UI_LIMITS),
        "window_station_name": (), "create_desktop": ("skillhost.worker.1.0", st.DESKTOP_ACCESS),
        "get_security_info": (0xDE5C, st.SE_WINDOW_OBJECT, st.DACL_SECURITY_INFORMATION),
        "set_security_info": (0xDE5C, st.SE_WINDOW_OBJECT, st.DACL_SECURITY_INFORMATION, 0xAC11, 0),
    }[method]  # fmt: skip
    with pytest.raises(OSError):  # noqa: PT011
        getattr(win32, method)(*args)
