"""producer/installers/_msi.py, function by function: what the msi kind asks of signtool and msiexec, and what it
makes of their answers.

signtool and msiexec cannot run on this host; what is held here is exactly what the producer would ask of them
through an injected runner: msiexec taken from the job's system root, else ``SYSTEMROOT``, else ``C:\\Windows``;
the signature check and the administrative install run in the prefix's parent with their bounded time and output;
a double quote in a path refused by name before anything runs; the verbose log kept as ``msiexec.log`` in a private
``qualify-msi-`` folder that is removed afterwards (even when already gone); a failure's message quoting the log's
tail (UTF-16 when it has a byte-order mark or NUL bytes, else UTF-8, undecodable bytes replaced, from its last
8192 bytes and at most 800 characters) and nothing more when there is no log; the signature outcome kept before
and after install, and the exact refusal when only signed builds are accepted. Written for the mutants of the
module that survived the fast test set (docs/mutation.md).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, InstallerSignature, QualificationError
from desktop_qualify.producer.installers._msi import MsiInstaller, admin_install_command, msiexec_path
from desktop_qualify.producer.installers._tools import ToolResult

SAID = "the tool's own words"
BOM = b"\xff\xfe"

# An effect acts as the tool: its exit code (None: killed at its timeout), or it raises as a missing tool does.
Effect = Callable[[Sequence[str] | str], "int | None"]


class Recorder:
    """Records each command with its working folder, bounded time and output cap; ``effect`` acts as the tool."""

    def __init__(self, effect: Effect | None = None) -> None:
        self.calls: list[tuple[Sequence[str] | str, Path, float, int]] = []
        self._effect = effect

    @property
    def commands(self) -> list[Sequence[str] | str]:
        return [call[0] for call in self.calls]

    def __call__(self, command: Sequence[str] | str, *, cwd: Path, timeout: float, stdout_cap: int) -> ToolResult:
        self.calls.append((command, cwd, timeout, stdout_cap))
        code = self._effect(command) if self._effect else 0
        return ToolResult(code, "", stdout_truncated=False, output=SAID if code else "")


def _prefix(tmp_path: Path) -> Path:
    prefix = tmp_path / "work" / "install"
    prefix.mkdir(parents=True)
    return prefix


def _log(command: Sequence[str] | str) -> Path:
    assert isinstance(command, str)
    return Path(command.rsplit(" /L*v ", 1)[1].strip('"'))


@pytest.fixture
def private_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The job's temporary folder, where the log folder is made."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


@pytest.fixture
def no_systemroot(monkeypatch: pytest.MonkeyPatch) -> None:
    """The job's environment names no system root (as on this host), in any spelling."""
    for name in ("SYSTEMROOT", "systemroot", "XXSYSTEMROOTXX"):
        monkeypatch.delenv(name, raising=False)


# --- where msiexec is taken from -------------------------------------------------------------------------------


def test_msiexec_is_system32s_under_c_windows_when_no_system_root_is_known() -> None:
    assert msiexec_path(None) == r"C:\Windows\System32\msiexec.exe"
    assert msiexec_path("") == r"C:\Windows\System32\msiexec.exe"
    assert msiexec_path(r"D:\WinNT") == r"D:\WinNT\System32\msiexec.exe"


@pytest.mark.usefixtures("private_temp", "no_systemroot")
def test_without_any_system_root_the_install_runs_c_windows_msiexec(tmp_path: Path) -> None:
    runner = Recorder()
    MsiInstaller(runner).install(tmp_path / "x.msi", _prefix(tmp_path))
    [command] = runner.commands
    assert str(command).startswith(r'"C:\Windows\System32\msiexec.exe" /a ')


@pytest.mark.usefixtures("private_temp")
def test_without_a_system_root_the_install_takes_the_environments_systemroot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYSTEMROOT", r"E:\Windows")
    monkeypatch.delenv("systemroot", raising=False)
    runner = Recorder()
    MsiInstaller(runner).install(tmp_path / "x.msi", _prefix(tmp_path))
    [command] = runner.commands
    assert str(command).startswith(r'"E:\Windows\System32\msiexec.exe" /a ')


# --- how signtool and msiexec are run --------------------------------------------------------------------------


@pytest.mark.usefixtures("private_temp")
def test_signtool_then_msiexec_run_in_the_prefixs_parent_with_their_bounds(tmp_path: Path) -> None:
    runner = Recorder()
    copy = tmp_path / "x.msi"
    prefix = _prefix(tmp_path)
    MsiInstaller(runner, system_root=r"C:\Windows", signtool="signtool").install(copy, prefix)
    log = _log(runner.commands[1])
    assert runner.calls == [
        (["signtool", "verify", "/pa", "/tw", "/v", str(copy)], prefix.parent, 120.0, 16384),
        (rf'"C:\Windows\System32\msiexec.exe" /a "{copy}" /qn TARGETDIR="{prefix}" /L*v "{log}"', prefix.parent,
         600.0, 64 * 1024),
    ]


def test_the_log_is_msiexec_log_in_a_private_qualify_msi_folder_removed_afterwards(
        tmp_path: Path, private_temp: Path) -> None:
    seen: list[Path] = []

    def msiexec(command: Sequence[str] | str) -> int:
        log = _log(command)
        assert log.parent.is_dir()  # made before msiexec runs, for it to write into
        seen.append(log)
        log.write_text("MSI (s) done\n")
        return 0

    MsiInstaller(Recorder(msiexec), system_root=r"C:\Windows").install(tmp_path / "x.msi", _prefix(tmp_path))
    [log] = seen
    assert log.name == "msiexec.log"
    assert log.parent.parent == private_temp
    assert log.parent.name.startswith("qualify-msi-")
    assert list(private_temp.iterdir()) == []  # the log and its folder are gone


def test_a_log_folder_already_gone_does_not_fail_the_install(tmp_path: Path, private_temp: Path) -> None:
    def msiexec(command: Sequence[str] | str) -> int:
        folder = _log(command).parent
        # Delete only a folder of the private temp: a broken command line could name the working folder itself.
        assert folder.parent == private_temp, folder
        shutil.rmtree(folder)
        return 0

    MsiInstaller(Recorder(msiexec), system_root=r"C:\Windows").install(tmp_path / "x.msi", _prefix(tmp_path))


# --- a double quote in a path ----------------------------------------------------------------------------------


def test_a_double_quote_in_a_path_is_refused_by_name_and_runs_nothing(tmp_path: Path, private_temp: Path) -> None:
    runner = Recorder()
    prefix = tmp_path / 'in"stall'
    prefix.mkdir()
    with pytest.raises(QualificationError) as caught:
        MsiInstaller(runner, system_root=r"C:\Windows").install(tmp_path / "x.msi", prefix)
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == f"path {str(prefix)!r} holds a double quote"
    assert runner.commands == []
    assert list(private_temp.iterdir()) == []


def test_a_long_quoted_path_is_named_by_its_first_120_characters() -> None:
    copy = Path("C:/jobs/" + "n" * 150 + '".msi')
    with pytest.raises(QualificationError) as caught:
        admin_install_command(r"C:\Windows\System32\msiexec.exe", copy, Path("C:/install"), Path("C:/t/msiexec.log"))
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == f"path {('C:/jobs/' + 'n' * 112)!r} holds a double quote"


# --- a failed msiexec and its log ------------------------------------------------------------------------------


def _failing(log_bytes: bytes | None) -> Effect:
    def msiexec(command: Sequence[str] | str) -> int:
        if log_bytes is not None:
            _log(command).write_bytes(log_bytes)
        return 1603
    return msiexec


def _failure(tmp_path: Path, log_bytes: bytes | None) -> QualificationError:
    installer = MsiInstaller(Recorder(_failing(log_bytes)), system_root=r"C:\Windows")
    with pytest.raises(QualificationError) as caught:
        installer.install(tmp_path / "x.msi", _prefix(tmp_path))
    assert caught.value.code is Code.INSTALL_FAILED
    return caught.value


@pytest.mark.usefixtures("private_temp")
@pytest.mark.parametrize("log_bytes", [None, b"", b" \n"], ids=["no log", "empty log", "blank log"])
def test_a_failure_without_a_log_quotes_msiexec_alone(tmp_path: Path, log_bytes: bytes | None) -> None:
    assert _failure(tmp_path, log_bytes).message == f"msiexec /a failed (exit 1603): {SAID}"


LONG_TEXT = "A" * 6000 + "\n" + "B" * 799


@pytest.mark.usefixtures("private_temp")
@pytest.mark.parametrize(("log_bytes", "tail"), [
    (b"MSI (s) Product: Notes -- Installation failed.\r\n", "MSI (s) Product: Notes -- Installation failed."),
    (b"Fehler: Datei \xe9 fehlt\n", "Fehler: Datei \ufffd fehlt"),
    (BOM + ("日本語" * 300).encode("utf-16-le"), "本語" + "日本語" * 266),
    ("Error 1603".encode("utf-16-le"), "Error 1603"),
    ("Error 1603".encode("utf-16-le") + b"!", "Error 1603\ufffd"),
    (BOM + LONG_TEXT.encode("utf-16-le"), "B" * 799),
    (b"\x00" + b"C" * 8192, "C" * 800),
    (BOM + " Error 1603\r\n".encode("utf-16-le"), "Error 1603"),
], ids=["utf-8", "utf-8 with a stray byte", "utf-16 with a bom and no nul", "utf-16 without bom",
        "utf-16 cut mid-character", "long utf-16: its last 8192 bytes, 800 characters", "nul beyond the last 8192",
        "a short utf-16 log: its mark is not quoted"])
def test_a_failure_quotes_the_tail_of_its_log_as_it_was_written(tmp_path: Path, log_bytes: bytes, tail: str) -> None:
    assert _failure(tmp_path, log_bytes).message == f"msiexec /a failed (exit 1603): {SAID}; its log ends: {tail}"


# --- the signature check ---------------------------------------------------------------------------------------


def test_before_install_nothing_is_claimed_about_the_signature() -> None:
    installer = MsiInstaller(Recorder(), system_root=r"C:\Windows", signtool="signtool")
    assert installer.signature is None
    assert installer.checked() is None


def test_without_signtool_a_required_signature_is_refused_as_not_configured(tmp_path: Path) -> None:
    runner = Recorder()
    installer = MsiInstaller(runner, system_root=r"C:\Windows", require_signed=True)
    with pytest.raises(QualificationError) as caught:
        installer.install(tmp_path / "x.msi", _prefix(tmp_path))
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == "the package's own signature is refused: signtool is not configured"
    assert runner.commands == []
    assert installer.checked() == InstallerSignature(tool="signtool", state="not-checked",
                                                     detail="signtool is not configured")


def _refused(tmp_path: Path, signtool: Effect) -> MsiInstaller:
    def tools(command: Sequence[str] | str) -> int | None:
        return signtool(command) if isinstance(command, list) else 0

    runner = Recorder(tools)
    installer = MsiInstaller(runner, system_root=r"C:\Windows", signtool="signtool", require_signed=True)
    with pytest.raises(QualificationError) as caught:
        installer.install(tmp_path / "x.msi", _prefix(tmp_path))
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == f"the package's own signature is refused: {installer.signature}"
    assert len(runner.commands) == 1  # msiexec never ran
    return installer


def test_a_signtool_that_does_not_finish_is_refused_so(tmp_path: Path) -> None:
    installer = _refused(tmp_path, lambda command: None)
    assert installer.signature == "signtool verify did not finish"
    assert installer.checked() == InstallerSignature(tool="signtool", state="failed",
                                                     detail="signtool verify did not finish")


@pytest.mark.parametrize(("error", "why"), [
    (FileNotFoundError(2, "No such file or directory", "signtool"), "No such file or directory"),
    (OSError("signtool is not a program"), "signtool is not a program"),
], ids=["with strerror", "without strerror"])
def test_a_signtool_that_cannot_be_run_is_refused_in_the_systems_words(
        tmp_path: Path, error: OSError, why: str) -> None:
    def signtool(command: Sequence[str] | str) -> int:
        raise error

    installer = _refused(tmp_path, signtool)
    assert installer.signature == f"signtool cannot be run: {why}"


def test_a_failed_signature_is_recorded_as_failed_with_its_first_300_characters(tmp_path: Path) -> None:
    def signtool(command: Sequence[str] | str) -> int:
        raise OSError(5, "x" * 400)

    installer = _refused(tmp_path, signtool)
    assert installer.checked() == InstallerSignature(tool="signtool", state="failed",
                                                     detail=("signtool cannot be run: " + "x" * 400)[:300])
