"""The macOS and Windows installer kinds, through an injected runner: their exact command lines, and their order.

These tools (hdiutil, pkgutil, msiexec, an NSIS installer) cannot run on this
host; what is tested is what the producer would ask of them, what it does
with what they leave in the prefix, and that a mounted image is always
detached.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.installers._dmg import DmgInstaller
from desktop_qualify.producer.installers._installers import INSTALLERS, Installer, install_with
from desktop_qualify.producer.installers._msi import MsiInstaller
from desktop_qualify.producer.installers._nsis import NsisInstaller
from desktop_qualify.producer.installers._pkg import PkgInstaller
from desktop_qualify.producer.installers._tools import ToolResult

# An effect acts as the tool: its exit code, or (exit code, what it printed).
Effect = Callable[[Sequence[str] | str], "int | tuple[int, str]"]


class Recorder:
    """A runner that records each command and lets a test act as the tool (write files, fail)."""

    def __init__(self, effect: Effect | None = None) -> None:
        self.commands: list[Sequence[str] | str] = []
        self._effect = effect

    def __call__(self, command: Sequence[str] | str, *, cwd: Path, timeout: float, stdout_cap: int) -> ToolResult:
        self.commands.append(command)
        answer = self._effect(command) if self._effect else 0
        code, said = answer if isinstance(answer, tuple) else (answer, "")
        return ToolResult(code, said, stdout_truncated=False, output=said or ("the tool's own words" if code else ""))


def _prefix(tmp_path: Path) -> Path:
    prefix = tmp_path / "work" / "install"
    prefix.mkdir(parents=True)
    return prefix


def _with(kind: str, installer: Installer) -> dict[str, Installer]:
    return {**INSTALLERS, kind: installer}


def _app_bundle(root: Path) -> None:
    exe = root / "Notes.app" / "Contents" / "MacOS" / "Notes"
    exe.parent.mkdir(parents=True)
    exe.write_bytes(b"\xcf\xfa\xed\xfe")
    (root / "Notes.app" / "Contents" / "Frameworks").mkdir()
    (root / "Notes.app" / "Contents" / "Frameworks" / "Current").symlink_to("../MacOS")


def _ditto(command: Sequence[str] | str) -> int:
    """Acts as `ditto SRC DST` does: links copied as links, a folder's contents into DST."""
    source, target = Path(command[1]), Path(command[2])
    if source.is_dir():
        shutil.copytree(source, target, symlinks=True)
    else:
        shutil.copy2(source, target, follow_symlinks=False)
    return 0


def test_dmg_attaches_read_only_at_a_private_mount_point_copies_with_ditto_and_detaches(tmp_path: Path) -> None:
    mounts: list[Path] = []

    def hdiutil(command: Sequence[str] | str) -> int:
        if command[0] == "/usr/bin/ditto":
            return _ditto(command)
        if command[1] == "attach":
            mount = Path(command[-2])
            mounts.append(mount)
            _app_bundle(mount)
            (mount / "Applications").symlink_to("/Applications")  # the drag-to-install alias: not copied
            (mount / ".fseventsd").mkdir()
            (mount / "README.txt").write_text("drag to Applications")
        return 0

    runner = Recorder(hdiutil)
    copy = tmp_path / "Notes-1.0.dmg"
    prefix = _prefix(tmp_path)
    assert install_with("dmg", copy, prefix, installers=_with("dmg", DmgInstaller(runner))) == "dmg"
    mount = mounts[0]
    assert runner.commands == [
        ["/usr/bin/hdiutil", "attach", "-readonly", "-nobrowse", "-noautoopen", "-mountpoint", str(mount), str(copy)],
        # ditto, not shutil: it keeps the extended attributes a code signature's resources live in.
        ["/usr/bin/ditto", str(mount / "Notes.app"), str(prefix / "Notes.app")],
        ["/usr/bin/ditto", str(mount / "README.txt"), str(prefix / "README.txt")],
        ["/usr/bin/hdiutil", "detach", str(mount)],
    ]
    assert not mount.is_relative_to(prefix)
    assert not mount.exists()
    assert sorted(p.name for p in prefix.iterdir()) == ["Notes.app", "README.txt"]
    assert (prefix / "Notes.app/Contents/Frameworks/Current").is_symlink()


def test_dmg_is_detached_even_when_its_volume_is_refused_and_forced_when_busy(tmp_path: Path) -> None:
    def hdiutil(command: Sequence[str] | str) -> int:
        if command[1] == "attach":
            mount = Path(command[-2])
            _app_bundle(mount)
            os.mkfifo(mount / "Notes.app" / "Contents" / "pipe")
            return 0
        return 16 if command[-1] != "-force" else 0  # "resource busy" the first time

    runner = Recorder(hdiutil)
    prefix = _prefix(tmp_path)
    with pytest.raises(QualificationError, match="device, fifo or socket") as caught:
        install_with("dmg", tmp_path / "x.dmg", prefix, installers=_with("dmg", DmgInstaller(runner)))
    assert caught.value.code is Code.INSTALL_FAILED
    assert [command[1] for command in runner.commands] == ["attach", "detach", "detach"]
    assert runner.commands[-1][-1] == "-force"
    assert not prefix.exists()


def test_dmg_that_fails_to_attach_is_an_install_failure_quoting_hdiutil(tmp_path: Path) -> None:
    runner = Recorder(lambda command: 1)
    with pytest.raises(QualificationError, match=r"hdiutil attach failed \(exit 1\): the tool's own words"):
        install_with("dmg", tmp_path / "x.dmg", _prefix(tmp_path), installers=_with("dmg", DmgInstaller(runner)))
    assert len(runner.commands) == 1  # nothing attached, nothing to detach


SIGNED_PKG = ('Package "Notes-1.0.pkg":\n   Status: signed by a developer certificate issued by Apple for '
              'distribution\n   Signed with a trusted timestamp on: 2024-01-01 10:00:00 +0000\n')


def test_pkg_expands_fully_into_the_prefix_it_names_and_runs_no_script(tmp_path: Path) -> None:
    def pkgutil(command: Sequence[str] | str) -> int | tuple[int, str]:
        if command[1] == "--check-signature":
            return 0, SIGNED_PKG
        dest = Path(command[-1])
        assert not dest.exists()  # pkgutil refuses a destination that exists
        _app_bundle(dest / "notes.pkg" / "Payload")
        return 0

    runner = Recorder(pkgutil)
    copy = tmp_path / "Notes-1.0.pkg"
    prefix = _prefix(tmp_path)
    installer = PkgInstaller(runner, require_signed=True)
    assert install_with("pkg", copy, prefix, installers=_with("pkg", installer)) == "pkg"
    assert runner.commands == [["/usr/sbin/pkgutil", "--check-signature", str(copy)],
                               ["/usr/sbin/pkgutil", "--expand-full", str(copy), str(prefix)]]
    assert installer.signature is not None
    assert installer.signature.state == "signed"
    assert (prefix / "notes.pkg/Payload/Notes.app/Contents/MacOS/Notes").is_file()


@pytest.mark.parametrize(("answer", "state"), [
    ((1, 'Package "x.pkg":\n   Status: no signature\n'), "unsigned"),
    ((1, 'Package "x.pkg":\n   Status: signed by untrusted certificate\n'), "invalid"),
    ((1, "Error: package is invalid (checksum did not verify)\n"), "invalid"),
    ((0, ""), "invalid"),
], ids=["no signature", "untrusted", "broken", "no status"])
def test_pkg_without_a_good_signature_is_refused_when_only_signed_is_accepted(
        tmp_path: Path, answer: tuple[int, str], state: str) -> None:
    runner = Recorder(lambda command: answer)
    prefix = _prefix(tmp_path)
    installer = PkgInstaller(runner, require_signed=True)
    with pytest.raises(QualificationError, match="the package's own signature is refused") as caught:
        install_with("pkg", tmp_path / "x.pkg", prefix, installers=_with("pkg", installer))
    assert caught.value.code is Code.INSTALL_FAILED
    assert runner.commands == [["/usr/sbin/pkgutil", "--check-signature", str(tmp_path / "x.pkg")]]  # not expanded
    assert installer.signature is not None
    assert installer.signature.state == state


def test_pkg_unsigned_is_recorded_but_expanded_when_the_policy_accepts_unsigned(tmp_path: Path) -> None:
    def pkgutil(command: Sequence[str] | str) -> int | tuple[int, str]:
        if command[1] == "--check-signature":
            return 1, "   Status: no signature\n"
        Path(command[-1]).mkdir()
        return 0

    installer = PkgInstaller(Recorder(pkgutil))
    install_with("pkg", tmp_path / "x.pkg", _prefix(tmp_path), installers=_with("pkg", installer))
    assert installer.signature is not None
    assert (installer.signature.state, installer.signature.detail) == ("unsigned", "no signature")


def test_pkg_whose_payload_holds_a_set_id_file_is_refused(tmp_path: Path) -> None:
    def pkgutil(command: Sequence[str] | str) -> int:
        if command[1] == "--check-signature":
            return 0
        tool = Path(command[-1]) / "Payload" / "tool"
        tool.parent.mkdir(parents=True)
        tool.write_bytes(b"x")
        tool.chmod(0o4755)
        return 0

    prefix = _prefix(tmp_path)
    with pytest.raises(QualificationError, match="set-user-id"):
        install_with("pkg", tmp_path / "x.pkg", prefix, installers=_with("pkg", PkgInstaller(Recorder(pkgutil))))
    assert not prefix.exists()


def test_msi_is_an_administrative_install_into_the_prefix_with_a_log(tmp_path: Path) -> None:
    def msiexec(command: Sequence[str] | str) -> int:
        assert isinstance(command, str)
        (prefix / "Notes").mkdir()
        (prefix / "Notes" / "Notes.exe").write_bytes(b"MZ")
        return 0

    runner = Recorder(msiexec)
    copy = tmp_path / "Notes 1.0.msi"
    prefix = _prefix(tmp_path)
    installer = MsiInstaller(runner, system_root=r"C:\Windows")
    assert install_with("msi", copy, prefix, installers=_with("msi", installer)) == "msi"
    [command] = runner.commands
    assert isinstance(command, str)
    log = command.rsplit(" /L*v ", 1)[1].strip('"')
    assert command == (rf'"C:\Windows\System32\msiexec.exe" /a "{copy}" /qn TARGETDIR="{prefix}" /L*v "{log}"')
    assert not Path(log).is_relative_to(prefix)  # the log is not part of what was installed


def test_msi_failure_quotes_the_tail_of_its_log(tmp_path: Path) -> None:
    def msiexec(command: Sequence[str] | str) -> int:
        assert isinstance(command, str)
        log = Path(command.rsplit(" /L*v ", 1)[1].strip('"'))
        log.write_bytes("\ufeffMSI (s) Note: 1: 2203 cannot open the database\n".encode("utf-16-le"))
        return 1620

    with pytest.raises(QualificationError, match=r"exit 1620.*its log ends: .*cannot open the database"):
        install_with("msi", tmp_path / "x.msi", _prefix(tmp_path),
                     installers=_with("msi", MsiInstaller(Recorder(msiexec), system_root=r"C:\Windows")))


@pytest.mark.parametrize(("answer", "passed"), [
    ((0, "Successfully verified: x.msi\nThe signature is timestamped: Mon Jan 01 10:00:00 2024\n"), True),
    ((2, "SignTool Warning: Signature is not timestamped.\n"), False),
    ((1, "SignTool Error: No signature found.\n"), False),
], ids=["verified", "no timestamp", "unsigned"])
def test_msi_signature_is_verified_pinned_with_a_timestamp_before_msiexec(
        tmp_path: Path, answer: tuple[int, str], passed: bool) -> None:
    def tools(command: Sequence[str] | str) -> int | tuple[int, str]:
        return answer if isinstance(command, list) else 0

    runner = Recorder(tools)
    copy = tmp_path / "x.msi"
    prefix = _prefix(tmp_path)
    installer = MsiInstaller(runner, system_root=r"C:\Windows", signtool="signtool", thumbprint="ab" * 20,
                             require_signed=True)
    if passed:
        install_with("msi", copy, prefix, installers=_with("msi", installer))
    else:
        with pytest.raises(QualificationError, match="the package's own signature is refused"):
            install_with("msi", copy, prefix, installers=_with("msi", installer))
    assert runner.commands[0] == ["signtool", "verify", "/pa", "/tw", "/sha1", "ab" * 20, "/v", str(copy)]
    assert len(runner.commands) == (2 if passed else 1)  # msiexec only after the signature passed
    assert (installer.signature == "") is passed


def test_nsis_runs_silently_with_d_last_and_unquoted_even_with_spaces(tmp_path: Path) -> None:
    base = tmp_path / "job folder"

    def setup(command: Sequence[str] | str) -> int:
        (prefix / "Notes.exe").write_bytes(b"MZ")
        (prefix / "Uninstall.exe").write_bytes(b"MZ")
        return 0

    runner = Recorder(setup)
    copy = base / "Notes Setup 1.0.exe"
    prefix = _prefix(base)
    assert install_with("nsis", copy, prefix, installers=_with("nsis", NsisInstaller(runner))) == "nsis"
    assert runner.commands == [f'"{copy}" /S /D={prefix}']
    assert str(runner.commands[0]).endswith(f"/D={prefix}")
    assert " " in str(prefix)


def test_nsis_refuses_a_copy_that_is_not_an_exe_and_runs_nothing(tmp_path: Path) -> None:
    runner = Recorder()
    with pytest.raises(QualificationError, match=r"must end in \.exe"):
        install_with("nsis", tmp_path / "setup.msi", _prefix(tmp_path), installers=_with("nsis", NsisInstaller(runner)))
    assert runner.commands == []


def test_a_tool_that_times_out_is_an_install_failure(tmp_path: Path) -> None:
    class Hung(Recorder):
        def __call__(self, command: Sequence[str] | str, *, cwd: Path, timeout: float,
                     stdout_cap: int) -> ToolResult:
            return ToolResult(None, "", stdout_truncated=False, output="")

    with pytest.raises(QualificationError, match="did not finish within"):
        install_with("pkg", tmp_path / "x.pkg", _prefix(tmp_path), installers=_with("pkg", PkgInstaller(Hung())))


def test_an_unknown_kind_is_refused(tmp_path: Path) -> None:
    with pytest.raises(QualificationError) as caught:
        install_with("snap", tmp_path / "x.snap", _prefix(tmp_path))
    assert caught.value.code is Code.INSTALL_FAILED


def test_every_kind_has_one_adapter_named_after_it() -> None:
    assert sorted(INSTALLERS) == sorted(["archive", "deb", "appimage", "dmg", "pkg", "msi", "nsis"])
    assert all(installer.kind == kind for kind, installer in INSTALLERS.items())


@pytest.mark.parametrize(("kind", "tool"), [("deb", "dpkg-deb"), ("appimage", "unsquashfs")])
def test_a_missing_linux_tool_is_an_environment_error_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               kind: str, tool: str) -> None:
    copy = tmp_path / f"app.{kind}"
    copy.write_bytes(b"x" * 128)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    prefix = _prefix(tmp_path)
    with pytest.raises(QualificationError) as caught:
        install_with(kind, copy, prefix)
    assert caught.value.code is Code.ENVIRONMENT
    assert tool in caught.value.message
    assert "apt-get install" in caught.value.message
    assert not prefix.exists()
