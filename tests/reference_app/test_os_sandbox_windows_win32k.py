"""Issue 35 item 4, remainder: the worker's own desktop and the win32k lockdown option, as the Win32 calls they make.

The recorder of test_os_sandbox_windows stands in for ``Win32``: the mitigation attribute's value, size and slot in
the attribute list, the OS build that decides it, the host's option, a desktop failure's code, the desktop closed
on every path, and the worker's read-back of the policy.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import skillhost.os_sandbox._windows as windows
import skillhost.os_sandbox._windows_process as process
import skillhost.os_sandbox._windows_structs as st
from skillhost.os_sandbox._interface import layer
from test_os_sandbox_windows import _ARGV, _DESKTOP, _DESKTOP_NAME, _ENV, _K32, _ROOTS, Recorder, _start, _TokenApi


@pytest.fixture(autouse=True)
def _one_desktop_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(windows, "desktop_name", lambda: _DESKTOP_NAME)


def _attributes(api: Recorder) -> list[tuple[str, Any]]:
    return [(n, d) for n, d in api.calls if n.startswith(("initialize_attribute_list", "update_attribute"))]


def _never_read() -> int:
    raise AssertionError("the OS build is read only when win32k lockdown is asked for")


def test_the_sdk_values_of_the_mitigation_policy_and_the_desktop_rights() -> None:
    assert st.PROC_THREAD_ATTRIBUTE_MITIGATION_POLICY == 0x20007  # ProcThreadAttributeMitigationPolicy, input
    assert st.WIN32K_SYSTEM_CALL_DISABLE_ALWAYS_ON == 0x10000000  # PROCESS_CREATION_MITIGATION_POLICY_WIN32K_...
    assert st.PROCESS_SYSTEM_CALL_DISABLE_POLICY == 4  # ProcessSystemCallDisablePolicy
    # DESKTOP_READOBJECTS | DESKTOP_CREATEWINDOW | READ_CONTROL | WRITE_DAC | WRITE_OWNER
    assert st.DESKTOP_ACCESS == 0xE0003
    assert st.DESKTOP_WORKER_ACCESS == 0x3
    assert (st.UOI_NAME, st.SE_WINDOW_OBJECT) == (2, 7)


def test_asked_for_on_windows_8_or_later_win32k_lockdown_is_one_more_dword64_attribute() -> None:
    api = Recorder()
    _start(api, win32k_lockdown=True, os_build=lambda: 9200)
    assert _attributes(api) == [
        ("initialize_attribute_list", 5),  # one slot more than without it: the list holds exactly what is set
        ("update_attribute:0x20009", (0x5100, [(0x5400, st.SE_GROUP_ENABLED)], 1)),
        ("update_attribute:0x2000f", (1, 4)),
        ("update_attribute:0x2000e", (1, 4)),
        ("update_attribute:0x20007", (0x10000000, 8)),  # WIN32K_SYSTEM_CALL_DISABLE_ALWAYS_ON, a DWORD64
        ("update_attribute:0x20002", ([0x11, 0x12, 0x13], 24)),
    ]


def test_the_fallback_token_gets_win32k_lockdown_too_in_a_list_of_three() -> None:
    api = Recorder(create_hr=0x80070005)
    assert _start(api, win32k_lockdown=True, os_build=lambda: 19045).layer == "restricted-token"
    assert _attributes(api) == [("initialize_attribute_list", 3), ("update_attribute:0x2000e", (1, 4)),
                                ("update_attribute:0x20007", (0x10000000, 8)),
                                ("update_attribute:0x20002", ([0x11, 0x12, 0x13], 24))]  # fmt: skip


@pytest.mark.parametrize(("asked", "build"), [(True, 7601), (True, 9199), (False, None)])
def test_not_asked_for_or_before_windows_8_no_mitigation_attribute_is_set(asked: bool, build: int | None) -> None:
    api = Recorder()
    _start(api, win32k_lockdown=asked, os_build=_never_read if build is None else build.__int__)
    assert ("initialize_attribute_list", 4) in api.calls
    assert not [n for n in api.names() if n == "update_attribute:0x20007"]


def test_a_refused_mitigation_attribute_fails_the_start_and_releases_everything() -> None:
    """Asked for and known to this Windows: a refusal is never swallowed into a worker that lacks it."""
    api = Recorder(fail_on="update_attribute:0x20007")
    with pytest.raises(OSError, match="update_attribute:0x20007"):
        _start(api, win32k_lockdown=True, os_build=lambda: 9200)
    assert "create_process" not in api.names()
    assert api.live == set()


def test_the_host_asks_for_win32k_lockdown_only_when_its_environment_says_exactly_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(windows, "windows_build", lambda: 22631)
    for value, asked in (("1", True), ("0", False), ("yes", False), (None, False)):
        api = Recorder()
        environ = {} if value is None else {windows.WIN32K_LOCKDOWN_ENV: value}
        plan = process.plan(_ARGV, str(tmp_path), _ROOTS, api_factory=lambda api=api: api,  # type: ignore[misc]
                            to_handle=lambda fd: fd, environ=environ)
        assert plan.start is not None
        _proc, release = plan.start(_ENV, str(tmp_path), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)  # fmt: skip
        assert ("update_attribute:0x20007" in api.names()) is asked, value
        release()
    assert windows.WIN32K_LOCKDOWN_ENV == "SKILLHOST_WORKER_WIN32K_LOCKDOWN"


def test_windows_build_is_read_from_sys_getwindowsversion(monkeypatch: pytest.MonkeyPatch) -> None:
    version = type("WindowsVersion", (), {"build": 26100})
    monkeypatch.setattr(windows.sys, "getwindowsversion", version, raising=False)
    assert windows.windows_build() == 26100
    monkeypatch.delattr(windows.sys, "getwindowsversion")
    assert windows.windows_build() == 0  # not Windows: never at least 9200


# -- the desktop -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("step", ["window_station_name", "create_desktop", "set_security_info",
                                  "get_security_info"])  # fmt: skip
def test_a_desktop_that_cannot_be_made_is_its_own_code_and_nothing_starts(step: str) -> None:
    api = Recorder(fail_on=step)
    with pytest.raises(windows.DesktopUnavailableError, match=f"^CC_SKILL_DESKTOP_UNAVAILABLE: .*{step} failed"
                       ) as caught:  # fmt: skip
        _start(api)
    assert caught.value.code == "CC_SKILL_DESKTOP_UNAVAILABLE"  # the host keeps a CC_SKILL_ code (_probe.py)
    assert "create_process" not in api.names()
    assert api.live == set()  # the desktop too, where it was made
    if step not in {"window_station_name", "create_desktop"}:
        assert ("close_desktop", _DESKTOP) in api.calls


def test_a_start_that_fails_after_the_desktop_closes_it() -> None:
    api = Recorder(fail_on="create_process")
    with pytest.raises(OSError, match="create_process"):
        _start(api)
    names = api.names()
    # The attribute list deleted first, then the desktop, then the container's SIDs.
    assert names.index("delete_attribute_list") < names.index("close_desktop")
    assert names[-3:] == ["close_desktop", "local_free", "free_sid"]
    assert api.live == set()


def test_each_start_gets_a_desktop_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()  # the real names
    first, second = windows.desktop_name(), windows.desktop_name()
    assert first != second
    assert first.startswith(f"skillhost.worker.{windows.os.getpid()}.")
    assert len(first) <= 64
    assert "\\" not in first  # one name on the station, no path


# -- the worker's read-back --------------------------------------------------------------------------------


@pytest.mark.parametrize(("flags", "expected"), [
    (0x1, layer("win32k-lockdown", applied=True, detail="system call disable policy flags 0x1")),
    (0x0, layer("win32k-lockdown", applied=False, detail="system call disable policy flags 0x0")),
    (None, layer("win32k-lockdown", applied=False, detail="policy not readable: OSError")),  # Windows 7
])  # fmt: skip
def test_the_worker_reports_win32k_lockdown_as_it_reads_it_back(flags: int | None, expected: Any) -> None:
    api = _TokenApi(container=True, rid=st.SECURITY_MANDATORY_LOW_RID, win32k=flags)
    report = windows.self_report(_K32(), api_factory=lambda: api)  # type: ignore[arg-type,return-value]
    assert report[-1] == expected
    assert [e["name"] for e in report[:4]] == list(windows.WINDOWS_LAYERS)  # the required four, unchanged


def test_without_kernel32_every_layer_and_win32k_lockdown_are_reported_not_applied() -> None:
    def unloadable() -> Any:
        raise OSError("no kernel32")

    report = windows.self_report(api_factory=unloadable)
    assert report == [layer(n, applied=False, detail="kernel32 not loadable")
                      for n in (*windows.WINDOWS_LAYERS, "win32k-lockdown")]  # fmt: skip

