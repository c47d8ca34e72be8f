"""Issue 35 items 1 to 3 on Windows (and item 2 on macOS), held through the seams: the recorder for ``Win32``,
the fake DLLs that refuse any call without its declared signature, and the macOS command line.

1. The install folder's grant is given once, at install time, to a capability SID (as Chromium's installer
   does); each start only reads it back, and refuses with ``CC_SKILL_INSTALL_GRANT_MISSING`` when it is not
   there, before anything is written or started.
2. From source, Windows starts the base interpreter (``sys._base_executable``) and reads only its folder and the
   app source; macOS allows a framework build's real executable by its resolved path, nothing wider.
3. The AppContainer's folder is labelled Low and grants ``DELETE`` on every start, not only on the fallback.
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import skillhost._probe as probe
import skillhost.os_sandbox._dispatch as dispatch
import skillhost.os_sandbox._macos as macos
import skillhost.os_sandbox._windows_grant as grant
import skillhost.os_sandbox._windows_structs as st
from skillhost._cli import main
from skillhost._runtime import worker_command
from test_os_sandbox_windows import _CAP, _CAP_ACE_SID, _SID, _TMP, Recorder, _api, _fill, _start

# -- the capability SID and the installer's command ----------------------------------------------------------


def test_a_capability_sid_is_derived_from_its_name_as_windows_does() -> None:
    # Chromium's installer grants these two on its install folder (device/vr/README.md, "Windows Build setup").
    assert grant.capability_sid("chromeInstallFiles") == (
        "S-1-15-3-1024-3424233489-972189580-2057154623-747635277-1604371224-316187997-3786583170-1043257646")
    assert grant.capability_sid("lpacChromeInstallFiles") == (
        "S-1-15-3-1024-2302894289-466761758-1166120688-1039016420-2430351297-4240214049-4028510897-3317428798")
    assert grant.capability_sid("skillhostInstallFiles") == grant.capability_sid("SKILLHOSTINSTALLFILES")
    for bad in ("skillhost Install", "skillhöst", ""):
        with pytest.raises(ValueError):  # noqa: PT011
            grant.capability_sid(bad)


def test_the_installer_grants_read_and_execute_inherited_by_sid_never_by_account_name() -> None:
    assert grant.grant_command(r"C:\Program Files\skillhost", icacls=r"C:\Windows\System32\icacls.exe") == [
        r"C:\Windows\System32\icacls.exe", r"C:\Program Files\skillhost", "/grant",
        "*S-1-15-3-1024-572955721-240784588-1815088520-1806784465-1630863122-1527793873-4020719888-2386442809"
        ":(OI)(CI)RX", "/q"]  # fmt: skip


# -- the check, as ACEs ---------------------------------------------------------------------------------------

_RX, _OICI = st.FILE_GENERIC_READ_EXECUTE, st.SUB_CONTAINERS_AND_OBJECTS_INHERIT
_OTHER_SID = 0x6008


class _Acl:
    """``_AclReader`` over a list of ACEs; records the calls and what it freed."""

    def __init__(self, aces: list[tuple[int, int, int, int]], dacl: int = 0xAC10) -> None:
        self.aces, self.dacl, self.calls = aces, dacl, []  # type: ignore[var-annotated]

    def get_named_security_info(self, path: str, info: int) -> tuple[int, int]:
        self.calls.append(("get_named_security_info", path, info))
        return self.dacl, 0xD500

    def acl_entries(self, acl: int) -> list[tuple[int, int, int, int]]:
        self.calls.append(("acl_entries", acl))
        return self.aces

    def equal_sid(self, one: int, other: int) -> bool:
        return (one, other) == (_CAP_ACE_SID, _CAP)

    def local_free(self, pointer: int) -> None:
        self.calls.append(("local_free", pointer))


_ALLOW, _DENY = st.ACCESS_ALLOWED_ACE_TYPE, st.ACCESS_DENIED_ACE_TYPE


@pytest.mark.parametrize(("aces", "why"), [
    ([(_ALLOW, _OICI, _RX, _CAP_ACE_SID)], None),  # as ``icacls /grant *SID:(OI)(CI)RX`` writes it
    ([(_ALLOW, _OICI, st.GENERIC_READ | st.GENERIC_EXECUTE, _CAP_ACE_SID)], None),  # the generic form
    ([(_ALLOW, _OICI | 0x10, _RX, _CAP_ACE_SID)], None),  # inherited from the folder above: still the grant
    ([(_ALLOW, _OICI, _RX, _OTHER_SID)], "no inherited read and execute"),  # another SID's grant
    ([(_ALLOW, 0, _RX, _CAP_ACE_SID)], "no inherited read and execute"),  # the folder only, not its files
    ([(_ALLOW, _OICI | st.INHERIT_ONLY_ACE, _RX, _CAP_ACE_SID)], "no inherited read and execute"),
    ([(_ALLOW, _OICI, 0x120089, _CAP_ACE_SID)], "no inherited read and execute"),  # read, no execute
    ([(_DENY, _OICI, 0x20, _CAP_ACE_SID), (_ALLOW, _OICI, _RX, _CAP_ACE_SID)], "a deny entry"),
    ([(0x11, 0, 0x1, _CAP_ACE_SID)], "no inherited read and execute"),  # a label ACE is not a grant
    ([], "no inherited read and execute"),
])  # fmt: skip
def test_the_grant_holds_only_as_an_inherited_read_execute_allow_entry(aces: list[Any], why: str | None) -> None:
    acl = _Acl(aces)
    answer = grant.missing_grant(acl, _CAP, r"C:\Program Files\skillhost")  # type: ignore[arg-type]
    assert answer == why if why is None else why in str(answer)
    assert acl.calls[0] == ("get_named_security_info", r"C:\Program Files\skillhost", st.DACL_SECURITY_INFORMATION)
    assert acl.calls[-1] == ("local_free", 0xD500)  # the descriptor, freed on every path
    assert not any(c[0].startswith("set") for c in acl.calls)


def test_a_folder_without_a_dacl_is_not_a_grant() -> None:
    acl = _Acl([(_ALLOW, _OICI, _RX, _CAP_ACE_SID)], dacl=0)
    assert grant.missing_grant(acl, _CAP, "C:\\x") == "the folder has no DACL"  # type: ignore[arg-type]
    assert acl.calls[-1] == ("local_free", 0xD500)


def test_the_check_reads_the_acl_through_its_win32_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The very ``Win32`` methods over the fake DLLs: each export called with its declared signature."""
    seen: dict[str, tuple[Any, ...]] = {}
    ace = ctypes.create_string_buffer(bytes([0, 0x3]) + (20).to_bytes(2, "little") + _RX.to_bytes(4, "little")
                                      + b"\x01\x0a" + b"\0" * 10)  # fmt: skip

    def record(name: str, answer: Any) -> Any:
        def call(*args: Any) -> Any:
            seen[name] = args
            return answer(*args)
        return call

    def dacl(*args: Any) -> int:
        _fill(args[5], 0xAC10)
        _fill(args[7], 0xD500)
        return 0

    def size(*args: Any) -> int:
        ctypes.cast(args[1], ctypes.POINTER(st.ACL_SIZE_INFORMATION)).contents.AceCount = 1
        return 1

    def one_ace(*args: Any) -> int:
        _fill(args[2], ctypes.addressof(ace))
        return 1

    win32, _ = _api(monkeypatch, GetNamedSecurityInfoW=record("GetNamedSecurityInfoW", dacl),
                    GetAclInformation=record("GetAclInformation", size), GetAce=record("GetAce", one_ace),
                    EqualSid=record("EqualSid", lambda one, other: int(one.value == other.value)))  # fmt: skip
    assert grant.missing_grant(win32, ctypes.addressof(ace) + 8, "C:\\app") is None
    path, object_type, info = seen["GetNamedSecurityInfoW"][:3]
    assert (path, object_type, info) == ("C:\\app", st.SE_FILE_OBJECT, st.DACL_SECURITY_INFORMATION)
    acl, _, length, info_class = seen["GetAclInformation"]
    assert (acl.value, length, info_class) == (0xAC10, 12, st.ACL_SIZE_INFORMATION_CLASS)
    assert (seen["GetAce"][0].value, seen["GetAce"][1]) == (0xAC10, 0)
    # The SID compared is the one inside the ACE, after its header and mask.
    assert seen["EqualSid"][0].value == ctypes.addressof(ace) + 8
    failing, _ = _api(monkeypatch, GetAclInformation=0)
    with pytest.raises(OSError):  # noqa: PT011
        failing.acl_entries(0xAC10)
    with pytest.raises(OSError, match="no ACL"):
        failing.acl_entries(0)


# -- the start: checks, never writes, the bundle; refuses with its own code -----------------------------------


def test_a_missing_grant_refuses_the_start_before_anything_is_written_or_started() -> None:
    api = Recorder(aces=[])
    with pytest.raises(grant.InstallGrantMissingError) as refused:
        _start(api)
    assert refused.value.code == "CC_SKILL_INSTALL_GRANT_MISSING"
    assert refused.value.folder == r"C:\Program Files\skillhost"
    assert "icacls" in str(refused.value)  # says how to grant it once
    names = api.names()
    assert not [n for n in names if n.startswith(("set_", "create_process", "new_label"))], names
    assert api.live == set()  # the container's SID, the capability's SID and the descriptor all freed


def test_the_bundle_is_never_written_at_start_and_the_container_carries_the_install_capability() -> None:
    api = Recorder()
    _start(api)
    written = [d[0] for n, d in api.calls if n == "set_named_security_info"]
    assert written == [_TMP, _TMP]  # the worker's own folder (its DACL, then its label), never the bundle
    capabilities = next(d for n, d in api.calls if n == "update_attribute:0x20009")
    assert capabilities == (_SID, [(_CAP, st.SE_GROUP_ENABLED)], 1)


def test_the_container_folder_is_labelled_low_and_grants_delete_on_every_start() -> None:
    api = Recorder()
    _start(api)
    tmp_grant = next(d for n, d in api.calls if n == "set_entries_in_acl")
    assert tmp_grant[1] == st.GENERIC_READ | st.GENERIC_WRITE | 0x10000  # DELETE: rename and delete need it
    assert tmp_grant[1] & st.GENERIC_EXECUTE == 0  # nothing written there may be executed
    assert ("new_label_acl", (0x5300, st.SUB_CONTAINERS_AND_OBJECTS_INHERIT,
                              st.SYSTEM_MANDATORY_LABEL_NO_WRITE_UP)) in api.calls  # fmt: skip
    assert ("set_named_security_info", (_TMP, st.LABEL_SECURITY_INFORMATION, False, True)) in api.calls


def test_the_probe_reports_a_missing_grant_with_its_own_code(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    def refuse() -> None:
        raise grant.InstallGrantMissingError(r"C:\Program Files\skillhost", "no inherited read and execute entry")

    monkeypatch.setattr(probe, "self_test", refuse)
    assert main(["probe"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["code"] == "CC_SKILL_INSTALL_GRANT_MISSING"


# -- item 2: from source ---------------------------------------------------------------------------------------


def _base_and_venv(tmp_path: Path) -> tuple[Path, Path]:
    base = tmp_path / "Python311"
    base.mkdir()
    (base / "python.exe").write_bytes(b"MZ")
    venv = tmp_path / "venv" / "Scripts"
    venv.mkdir(parents=True)
    (venv / "python.exe").write_bytes(b"MZ redirector")
    link = tmp_path / "base-link"
    link.symlink_to(base)  # the base interpreter reached through a link: resolved
    return link / "python.exe", venv / "python.exe"


def test_windows_from_source_runs_the_base_interpreter_and_reads_only_its_folder_and_the_app(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    base, venv = _base_and_venv(tmp_path)
    monkeypatch.setattr(dispatch, "platform_key", lambda: "windows")
    monkeypatch.setattr(sys, "executable", str(venv))
    monkeypatch.setattr(sys, "_base_executable", str(base), raising=False)
    monkeypatch.delattr(sys, "frozen", raising=False)
    real = str((tmp_path / "Python311" / "python.exe").resolve())
    assert dispatch.worker_interpreter() == real
    assert worker_command()[0] == real  # never the venv's redirector
    app_src = str(Path(dispatch.__file__).resolve().parents[2])
    assert dispatch.worker_read_roots() == sorted([app_src, str(Path(real).parent)])
    assert str(venv.parent.parent) not in dispatch.worker_read_roots()  # the venv's prefix is not read


def test_elsewhere_the_worker_runs_this_interpreter(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    base, venv = _base_and_venv(tmp_path)
    monkeypatch.setattr(sys, "executable", str(venv))
    monkeypatch.setattr(sys, "_base_executable", str(base), raising=False)
    for platform in ("linux", "macos"):
        monkeypatch.setattr(dispatch, "platform_key", lambda p=platform: p)
        assert dispatch.worker_interpreter() == str(venv)


def _framework(tmp_path: Path) -> tuple[Path, Path]:
    base = tmp_path / "Library/Frameworks/Python.framework/Versions/3.11"
    real = base / "Resources/Python.app/Contents/MacOS/Python"
    real.parent.mkdir(parents=True)
    real.write_bytes(b"\xcf\xfa\xed\xfe")
    (base / "bin").mkdir()
    (base / "bin" / "python3.11").write_bytes(b"\xcf\xfa\xed\xfe stub that execs the real one")
    return base, real


def test_macos_framework_executable_is_the_resolved_python_app_binary_or_none(tmp_path: Path) -> None:
    base, real = _framework(tmp_path)
    assert macos.framework_executable(str(base), "Python", frozen=False) == str(real.resolve())
    assert macos.framework_executable(str(base), "Python", frozen=True) is None
    assert macos.framework_executable(str(base), "", frozen=False) is None  # not a framework build
    assert macos.framework_executable(str(base), None, frozen=False) is None
    assert macos.framework_executable(str(base), "../../bin/python3.11", frozen=False) is None
    assert macos.framework_executable(str(tmp_path / "nowhere"), "Python", frozen=False) is None


def test_macos_from_source_allows_exactly_the_framework_binary_to_be_execed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    base, real = _framework(tmp_path)
    monkeypatch.setattr(dispatch, "platform_key", lambda: "macos")
    monkeypatch.setattr(sys, "base_prefix", str(base))
    monkeypatch.delattr(sys, "frozen", raising=False)
    monkeypatch.setattr("sysconfig.get_config_var", lambda name: "Python" if name == "PYTHONFRAMEWORK" else None)
    exe = str(base / "bin" / "python3.11")
    plan = dispatch.launch_plan([exe, "-m", "skillhost", "worker"], str(tmp_path), [str(base)])
    params = dict(plan.argv[i + 1].split("=", 1) for i, a in enumerate(plan.argv) if a == "-D")
    assert params["WORKER_EXE"] == exe
    assert params["WORKER_EXE_FRAMEWORK"] == str(real.resolve())
    # stat of each folder above it is allowed (dyld resolves it one component at a time); nothing is widened.
    parents = {v for k, v in params.items() if k.startswith("PARENT_")}
    assert str(real.resolve().parent) in parents
    exec_rule = next(rule for rule, _why in macos.ALLOWED_RULES if "process-exec" in rule)
    assert "subpath" not in exec_rule  # literals only: one file each, never a folder
    assert str(Path(params["WORKER_EXE_FRAMEWORK"]).parent) not in plan.argv[plan.argv.index("-p") + 1]


@pytest.mark.parametrize("policy", ["release.toml", "local.toml"])
def test_the_producer_grants_on_its_prefix_the_capability_the_app_carries(policy: str) -> None:
    from desktop_qualify.producer.installers import _grant as producer
    from desktop_qualify.qualify_policy import load_policy
    from skillhost_testutil import REPO

    name = producer.capability_name(load_policy(REPO / "policies" / policy).file.app.name)
    assert name == grant.INSTALL_CAPABILITY
    assert producer.capability_sid(name) == grant.capability_sid(grant.INSTALL_CAPABILITY)
    assert f"*{producer.capability_sid(name)}:(OI)(CI)RX" in grant.grant_command("C:\\app")


def test_the_grant_tool_prints_then_runs_one_icacls_per_folder(capsys: pytest.CaptureFixture[str]) -> None:
    from tools.grant_install_folder import main as grant_tool

    ran: list[list[str]] = []
    assert grant_tool(["C:\\Program Files\\skillhost"]) == 0
    assert ran == []  # printed only
    assert grant_tool(["--run", "C:\\a", "C:\\b"], run=lambda c: ran.append(c) or 0) == 0
    assert ran == [grant.grant_command("C:\\a"), grant.grant_command("C:\\b")]
    assert grant_tool(["--run", "C:\\a"], run=lambda c: 5) == 1
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == ('icacls "C:\\Program Files\\skillhost" /grant *S-1-15-3-1024-572955721-240784588-'
                          "1815088520-1806784465-1630863122-1527793873-4020719888-2386442809:(OI)(CI)RX /q")
