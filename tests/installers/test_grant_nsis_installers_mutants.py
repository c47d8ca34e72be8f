"""producer/installers/_grant.py, _nsis.py and _installers.py, function by function: what the Windows pieces ask of
icacls and of an NSIS installer, and how the installers the pipeline builds are wired.

icacls and an NSIS installer cannot run on this host; what is held here is exactly what the producer would ask of
them through an injected runner: the capability SID (and its refusal of a name Windows would derive differently),
the icacls path (the job's ``system_root``, else ``SYSTEMROOT``, else ``C:\\Windows``), the grant's bounded time
and working folder, the NSIS command line (a double quote in either path refused before anything runs) and the
words a failed tool's refusal carries. For ``installers_for``: every kind that runs a tool runs it through the
job's runner, and msiexec is taken from the job's system root. For ``install_with``: the exact refusal of an
unknown kind and of a prefix that cannot be made. Written for the mutants of these modules that survived the
installer tests (docs/mutation.md).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.installers import _grant
from desktop_qualify.producer.installers._installers import SignatureRequirement, install_with, installers_for
from desktop_qualify.producer.installers._nsis import NsisInstaller, silent_install_command
from desktop_qualify.producer.installers._tools import ToolResult

SKILLHOST_SID = ("S-1-15-3-1024-572955721-240784588-1815088520-1806784465-1630863122-1527793873-4020719888-"
                 "2386442809")
SAID = "the tool's own words"


class Recorder:
    """Records each command with its working folder and bounded time; answers with ``code`` (and ``SAID``)."""

    def __init__(self, code: int | Callable[[Sequence[str] | str], int] = 0) -> None:
        self.calls: list[tuple[Sequence[str] | str, Path, float]] = []
        self._code = code

    @property
    def commands(self) -> list[Sequence[str] | str]:
        return [command for command, _cwd, _timeout in self.calls]

    def __call__(self, command: Sequence[str] | str, *, cwd: Path, timeout: float, stdout_cap: int) -> ToolResult:
        self.calls.append((command, cwd, timeout))
        code = self._code(command) if callable(self._code) else self._code
        return ToolResult(code, "", stdout_truncated=False, output=SAID if code else "")


def _prefix(tmp_path: Path) -> Path:
    prefix = tmp_path / "work" / "install"
    prefix.mkdir(parents=True)
    return prefix


@pytest.fixture
def no_systemroot(monkeypatch: pytest.MonkeyPatch) -> None:
    """The job's environment names no system root (as on this host), in any spelling."""
    for name in ("SYSTEMROOT", "systemroot", "XXSYSTEMROOTXX"):
        monkeypatch.delenv(name, raising=False)


# --- _grant: the capability SID -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "skillhöstInstallFiles", "\u00e9"])
def test_an_empty_or_non_ascii_capability_name_is_refused_by_name(name: str) -> None:
    # Windows upper-cases a name by its own tables: only ASCII is derived the same way here.
    with pytest.raises(ValueError, match=r"^a capability name is ASCII$") as caught:
        _grant.capability_sid(name)
    assert str(caught.value) == "a capability name is ASCII"


def test_the_sid_of_the_reference_apps_capability_is_windows_own() -> None:
    assert _grant.capability_sid(_grant.capability_name("skillhost")) == SKILLHOST_SID
    assert _grant.capability_sid("SKILLHOSTINSTALLFILES") == SKILLHOST_SID  # the name is upper-cased first


# --- _grant: where icacls is taken from ------------------------------------------------------------------


def test_icacls_is_system32s_under_c_windows_when_no_system_root_is_known() -> None:
    assert _grant.icacls_path(None) == r"C:\Windows\System32\icacls.exe"
    assert _grant.icacls_path("") == r"C:\Windows\System32\icacls.exe"
    assert _grant.icacls_path(r"D:\WinNT") == r"D:\WinNT\System32\icacls.exe"


@pytest.mark.usefixtures("no_systemroot")
def test_the_grants_icacls_is_under_the_jobs_system_root(tmp_path: Path) -> None:
    grant = _grant.CapabilityGrant("skillhostInstallFiles", Recorder(), system_root=r"D:\WinNT")
    assert grant.command(tmp_path / "install") == [
        r"D:\WinNT\System32\icacls.exe", str(tmp_path / "install"), "/grant", f"*{SKILLHOST_SID}:(OI)(CI)RX", "/q"]


def test_without_a_system_root_the_grant_takes_the_environments_systemroot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYSTEMROOT", r"E:\Windows")
    monkeypatch.delenv("systemroot", raising=False)
    grant = _grant.CapabilityGrant("skillhostInstallFiles", Recorder())
    assert grant.command(tmp_path / "install")[0] == r"E:\Windows\System32\icacls.exe"


@pytest.mark.usefixtures("no_systemroot")
def test_without_any_system_root_the_grant_takes_c_windows(tmp_path: Path) -> None:
    grant = _grant.CapabilityGrant("skillhostInstallFiles", Recorder())
    assert grant.command(tmp_path / "install")[0] == r"C:\Windows\System32\icacls.exe"


# --- _grant: how icacls is run -----------------------------------------------------------------------------


def test_the_grant_runs_icacls_once_in_the_prefixs_parent_within_300_seconds(tmp_path: Path) -> None:
    runner = Recorder()
    prefix = _prefix(tmp_path)
    _grant.CapabilityGrant("skillhostInstallFiles", runner, system_root=r"C:\Windows")(prefix)
    assert runner.calls == [([r"C:\Windows\System32\icacls.exe", str(prefix), "/grant",
                              f"*{SKILLHOST_SID}:(OI)(CI)RX", "/q"], prefix.parent, 300.0)]


def test_a_refused_grant_names_icacls_and_the_capability(tmp_path: Path) -> None:
    with pytest.raises(QualificationError) as caught:
        _grant.CapabilityGrant("skillhostInstallFiles", Recorder(5), system_root=r"C:\Windows")(_prefix(tmp_path))
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == (
        f"icacls (read and execute for the skillhostInstallFiles capability) failed (exit 5): {SAID}")


@pytest.mark.usefixtures("no_systemroot")
def test_windows_grant_runs_through_the_jobs_runner(tmp_path: Path) -> None:
    runner = Recorder()
    grant = _grant.prefix_grant("windows", "skillhost", runner)
    assert grant is not None
    prefix = _prefix(tmp_path)
    grant(prefix)
    assert runner.commands == [[r"C:\Windows\System32\icacls.exe", str(prefix), "/grant",
                                f"*{SKILLHOST_SID}:(OI)(CI)RX", "/q"]]


# --- _nsis: the silent install command line --------------------------------------------------------------


@pytest.mark.parametrize(("copy", "prefix"), [
    ('C:/jobs/Notes "Setup".exe', "C:/jobs/install"),
    ("C:/jobs/Notes Setup.exe", 'C:/jobs/"install'),
    ('C:/jobs/"a".exe', 'C:/jobs/"b"'),
])
def test_a_double_quote_in_either_path_is_refused(copy: str, prefix: str) -> None:
    with pytest.raises(QualificationError) as caught:
        silent_install_command(Path(copy), Path(prefix))
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == "an install path holds a double quote"


def test_the_command_quotes_the_installer_and_leaves_d_last_and_bare() -> None:
    assert silent_install_command(Path("C:/jobs/Notes Setup.exe"), Path("C:/job folder/install")) == (
        '"C:/jobs/Notes Setup.exe" /S /D=C:/job folder/install')


def test_a_quoted_prefix_runs_no_installer(tmp_path: Path) -> None:
    runner = Recorder()
    prefix = tmp_path / 'in"stall'
    prefix.mkdir()
    with pytest.raises(QualificationError, match="an install path holds a double quote"):
        NsisInstaller(runner).install(tmp_path / "Notes Setup.exe", prefix)
    assert runner.commands == []


# --- _nsis: how the installer is run --------------------------------------------------------------------------


def test_the_nsis_installer_runs_in_the_prefixs_parent(tmp_path: Path) -> None:
    runner = Recorder()
    prefix = _prefix(tmp_path)
    copy = tmp_path / "Notes Setup.exe"
    NsisInstaller(runner).install(copy, prefix)
    assert runner.calls == [(f'"{copy}" /S /D={prefix}', prefix.parent, 600.0)]


def test_a_failed_nsis_installer_is_named_in_the_refusal(tmp_path: Path) -> None:
    with pytest.raises(QualificationError) as caught:
        NsisInstaller(Recorder(2)).install(tmp_path / "Notes Setup.EXE", _prefix(tmp_path))
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == f"the NSIS installer failed (exit 2): {SAID}"


# --- _installers: installers_for wires the job's runner and system root into every tool-running kind ----------


def _appimage(path: Path) -> Path:
    """An ELF64 little-endian type-2 AppImage header whose runtime ends at 64, then a squashfs magic."""
    head = bytearray(64)
    head[:4], head[4], head[5], head[8:11] = b"\x7fELF", 2, 1, b"AI\x02"
    struct.pack_into("<Q", head, 0x28, 64)
    struct.pack_into("<HH", head, 0x3A, 0, 0)
    path.write_bytes(bytes(head) + b"hsqs" + b"\0" * 60)
    return path


def test_the_appimage_installer_lists_through_the_jobs_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    unsquashfs = tools / "unsquashfs"
    unsquashfs.write_text("#!/bin/sh\nexit 99\n")
    unsquashfs.chmod(0o755)
    monkeypatch.setenv("PATH", str(tools))
    runner = Recorder(1)
    copy = _appimage(tmp_path / "Demo.AppImage")
    with pytest.raises(QualificationError, match=r"^QE_INSTALL_FAILED: unsquashfs -lln failed \(exit 1\)"):
        installers_for(SignatureRequirement(), runner)["appimage"].install(copy, _prefix(tmp_path))
    assert runner.commands == [[str(unsquashfs), "-o", "64", "-lln", "-UTC", copy.as_posix()]]


def test_the_dmg_installer_attaches_through_the_jobs_runner(tmp_path: Path) -> None:
    runner = Recorder(1)
    copy = tmp_path / "Notes.dmg"
    with pytest.raises(QualificationError, match=r"hdiutil attach failed \(exit 1\)"):
        installers_for(SignatureRequirement(), runner)["dmg"].install(copy, _prefix(tmp_path))
    [command] = runner.commands
    assert list(command[:2]) == ["/usr/bin/hdiutil", "attach"]
    assert command[-1] == str(copy)


@pytest.mark.usefixtures("no_systemroot")
def test_the_msi_installer_takes_msiexec_from_the_jobs_system_root(tmp_path: Path) -> None:
    runner = Recorder()
    copy = tmp_path / "Notes.msi"
    installers_for(SignatureRequirement(), runner, r"D:\WinNT")["msi"].install(copy, _prefix(tmp_path))
    [command] = runner.commands
    assert isinstance(command, str)
    assert command.startswith(rf'"D:\WinNT\System32\msiexec.exe" /a "{copy}" /qn TARGETDIR=')


def test_the_nsis_installer_runs_through_the_jobs_runner(tmp_path: Path) -> None:
    runner = Recorder()
    prefix = _prefix(tmp_path)
    copy = tmp_path / "Setup.exe"
    installers_for(SignatureRequirement(), runner)["nsis"].install(copy, prefix)
    assert runner.commands == [f'"{copy}" /S /D={prefix}']


# --- _installers: install_with's refusals ---------------------------------------------------------------------


def test_an_unknown_kind_is_refused_naming_the_kinds_available(tmp_path: Path) -> None:
    with pytest.raises(QualificationError) as caught:
        install_with("snap", tmp_path / "x.snap", tmp_path / "install")
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == ("installer kind 'snap' is not available in this producer; "
                                    "one of archive, deb, appimage, dmg, pkg, msi, nsis")
    assert not (tmp_path / "install").exists()


def test_a_prefix_that_cannot_be_made_is_refused_quoting_the_os(tmp_path: Path) -> None:
    (tmp_path / "work").write_text("a file, not a folder")
    prefix = tmp_path / "work" / "install"
    runner = Recorder()
    with pytest.raises(QualificationError) as caught:
        install_with("nsis", tmp_path / "Setup.exe", prefix, installers={"nsis": NsisInstaller(runner)})
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == f"install prefix {prefix} cannot be read: [Errno 20] Not a directory: '{prefix}'"
    assert runner.commands == []
