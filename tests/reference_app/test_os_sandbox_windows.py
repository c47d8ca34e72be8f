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
_PROCESS, _THREAD, _JOB, _PID = 0x80, 0x81, 0x90, 4321


class Recorder:
    """Every Win32 call in order, with the values a reviewer checks; ``live`` is what is not yet released."""

    def __init__(self, fail_on: str = "", create_hr: int = 0) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.fail_on, self.create_hr = fail_on, create_hr
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

    def local_free(self, pointer: int) -> None:
        self._call("local_free", pointer)
        self.live.remove(("local", pointer) if ("local", pointer) in self.live else ("lowsid", pointer))

    def string_sid_to_sid(self, text: str) -> int:
        self._call("string_sid_to_sid", text)
        self.live.add(("lowsid", _LOW))
        return _LOW

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
            detail: object = (value.AppContainerSid, bool(value.Capabilities), value.CapabilityCount)
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


def _start(api: Recorder, std: tuple[int, int, int] = _STD) -> windows.Started:
    return windows.start_worker(api, _ARGV, _ENV, _TMP, std=std, read_roots=_ROOTS, tmp_dir=_TMP)  # type: ignore[arg-type]


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
    assert started == windows.Started(_PROCESS, _PID, _JOB, "appcontainer")
    calls = [c for c in api.calls if c[0] != "local_free"]
    name = windows.container_name(_ARGV[0])
    assert calls == [
        ("create_appcontainer_profile", name),
        *_grant_calls(_ROOTS[0], _SID, st.GENERIC_READ | st.GENERIC_EXECUTE),
        *_grant_calls(_TMP, _SID, st.GENERIC_READ | st.GENERIC_WRITE),
        ("make_inheritable", 0x11), ("make_inheritable", 0x12), ("make_inheritable", 0x13),
        ("initialize_attribute_list", 4),
        ("update_attribute:0x20009", (_SID, False, 0)),  # the container's SID, no capability at all
        ("update_attribute:0x2000f", (1, 4)),  # PROCESS_CREATION_ALL_APPLICATION_PACKAGES_OPT_OUT, a DWORD
        ("update_attribute:0x2000e", (1, 4)),  # PROCESS_CREATION_CHILD_PROCESS_RESTRICTED: no process at all
        ("update_attribute:0x20002", ([0x11, 0x12, 0x13], 24)),  # the only handles it inherits
        ("create_process", {
            "token": None, "application": _ARGV[0], "command_line": f'"{_ARGV[0]}" worker',
            "flags": windows.START_FLAGS, "environment": "PATH=C:\\Windows\\System32\0SYSTEMROOT=C:\\Windows\0\0",
            "cwd": _TMP, "cb": 112, "dwFlags": st.STARTF_USESTDHANDLES, "std": _STD, "attributes_at_list": True,
        }),
        ("create_job", None),
        ("set_limits", (_JOB, st.JOB_LIMIT_FLAGS, 1, 1 << 30)),
        ("assign", (_JOB, _PROCESS)),
        ("resume_thread", _THREAD),
        ("close", _THREAD),
        ("delete_attribute_list", None),
        ("free_sid", _SID),
    ]  # fmt: skip
    # Each grant frees its merged ACL and its descriptor; only the process and its job outlive the start.
    assert api.names().count("local_free") == 4
    assert api.live == {("handle", _PROCESS), ("handle", _JOB)}
    assert len(name) <= 64
    assert name == windows.container_name(_ARGV[0])  # stable: the same profile every run


def test_an_existing_profile_is_reused_by_its_derived_sid() -> None:
    api = Recorder(create_hr=st.HRESULT_ALREADY_EXISTS)
    assert _start(api).layer == "appcontainer"
    assert api.names()[:2] == ["create_appcontainer_profile", "derive_appcontainer_sid"]
    assert ("update_attribute:0x20009", (_DERIVED, False, 0)) in api.calls
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
    assert api.live == {("handle", _PROCESS), ("handle", _JOB)}


def test_without_an_appcontainer_the_fallback_is_a_restricted_low_integrity_token() -> None:
    api = Recorder(create_hr=0x80070005)  # E_ACCESSDENIED
    started = _start(api)
    assert started.layer == "restricted-token"
    calls = [c for c in api.calls if c[0] != "local_free"]
    assert calls[:8] == [
        ("create_appcontainer_profile", windows.container_name(_ARGV[0])),
        ("open_process_token", st.TOKEN_DUPLICATE | st.TOKEN_QUERY | st.TOKEN_ASSIGN_PRIMARY | st.TOKEN_ADJUST_DEFAULT),
        ("create_restricted_token", (_TOKEN, st.DISABLE_MAX_PRIVILEGE)),
        ("close", _TOKEN),
        ("string_sid_to_sid", "S-1-16-4096"),
        ("set_token_information", (_RESTRICTED, st.TOKEN_INTEGRITY_LEVEL, _LOW, st.SE_GROUP_INTEGRITY, 16 + 12)),
        ("new_label_acl", (_LOW, st.SUB_CONTAINERS_AND_OBJECTS_INHERIT, st.SYSTEM_MANDATORY_LABEL_NO_WRITE_UP)),
        ("set_named_security_info", (_TMP, st.LABEL_SECURITY_INFORMATION, False, True)),
    ]  # fmt: skip
    assert "get_named_security_info" not in api.names()  # no AppContainer SID to grant anything to
    assert ("initialize_attribute_list", 2) in api.calls  # no child process, and the handle list
    assert [n for n in api.names() if n.startswith("update_attribute")] == [
        "update_attribute:0x2000e", "update_attribute:0x20002"]
    process = next(d for n, d in api.calls if n == "create_process")
    assert process["token"] == _RESTRICTED
    assert api.calls[-1] == ("close", _RESTRICTED)
    assert api.live == {("handle", _PROCESS), ("handle", _JOB)}


_APPCONTAINER_STEPS = [
    "derive_appcontainer_sid", "get_named_security_info", "set_entries_in_acl", "set_named_security_info",
    "make_inheritable", "initialize_attribute_list", "update_attribute:0x20009", "update_attribute:0x20002",
    "create_process", "create_job", "set_limits", "assign", "resume_thread",
]  # fmt: skip
_FALLBACK_STEPS = [
    "open_process_token", "create_restricted_token", "string_sid_to_sid", "set_token_information", "new_label_acl",
    "set_named_security_info", "initialize_attribute_list", "create_process", "create_job", "assign", "resume_thread",
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
    assert api.calls[-2:] == [("close", _PROCESS), ("close", _JOB)]
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
    def __init__(self, container: bool, rid: int) -> None:
        self.container, self.rid = container, rid
        self.child_flags = 1 if container else 0
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
        assert policy == st.PROCESS_CHILD_PROCESS_POLICY
        return self.child_flags

    def close(self, handle: int) -> None:
        self.closed.append(handle)


class _K32:
    @staticmethod
    def QueryInformationJobObject(job, cls, info_ref, size, got_ref) -> int:  # noqa: N802
        info = ctypes.cast(info_ref, ctypes.POINTER(st.ExtendedLimits)).contents
        info.BasicLimitInformation.LimitFlags = st.JOB_LIMIT_FLAGS
        info.BasicLimitInformation.ActiveProcessLimit = 1
        return 1


def test_the_worker_reports_its_container_sid_and_integrity_as_read_from_its_token() -> None:
    api = _TokenApi(container=True, rid=st.SECURITY_MANDATORY_LOW_RID)
    report = windows.self_report(_K32(), api_factory=lambda: api)  # type: ignore[arg-type,return-value]
    assert [e["name"] for e in report] == list(windows.WINDOWS_LAYERS)
    assert all(e["applied"] for e in report)
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
