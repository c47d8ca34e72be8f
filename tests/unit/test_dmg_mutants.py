"""producer/installers/_dmg.py, function by function: what the dmg installer asks of hdiutil and ditto, and when.

hdiutil and ditto cannot run on this host; what is held here, through an injected runner, is exactly what the
producer would ask of them: the image is attached at a fresh ``qualify-dmg-`` folder of the system's temporary
directory, and every tool (attach, each ditto, detach, forced detach) runs in the prefix's parent folder; the
detach and the forced detach each have their own bounded time (120 s, not the tools' default), the forced one is
asked of the same mount point, and a failure of either tool is quoted under its own name. A volume holding only
the system's bookkeeping folders and top-level links is refused with exact words; a bookkeeping folder is neither
audited nor copied; a volume that cannot be read is an install failure with exact words; the mount point is gone
afterwards even when the detach already took it away. Written for the mutants of the module that survived the
fast test set (docs/mutation.md).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.installers._dmg import DITTO, HDIUTIL, DmgInstaller
from desktop_qualify.producer.installers._installers import INSTALLERS, install_with
from desktop_qualify.producer.installers._tools import ToolResult

SAID = "the tool's own words"
DETACH_TIMEOUT = 120.0
TOOL_TIMEOUT = 600.0


@dataclass(frozen=True)
class Call:
    command: Sequence[str] | str
    cwd: Path
    timeout: float


# An effect acts as the tool: its exit code (None: killed at the timeout).
Effect = Callable[[Sequence[str]], "int | None"]


class Recorder:
    """A runner that records each call with its folder and time bound, and lets a test act as hdiutil and ditto."""

    def __init__(self, effect: Effect) -> None:
        self.calls: list[Call] = []
        self._effect = effect

    def __call__(self, command: Sequence[str] | str, *, cwd: Path, timeout: float, stdout_cap: int) -> ToolResult:
        self.calls.append(Call(command, cwd, timeout))
        assert not isinstance(command, str)
        code = self._effect(command)
        return ToolResult(code, "", stdout_truncated=False, output=SAID if code else "")

    @property
    def mount(self) -> Path:
        return Path(self.calls[0].command[-2])


def _prefix(tmp_path: Path) -> Path:
    return tmp_path / "work" / "install"


def _install(runner: Recorder, copy: Path, prefix: Path) -> None:
    install_with("dmg", copy, prefix, installers={**INSTALLERS, "dmg": DmgInstaller(runner)})


def _ditto(command: Sequence[str]) -> int:
    """Acts as `ditto SRC DST` does: links copied as links, a folder's contents into DST."""
    source, target = Path(command[1]), Path(command[2])
    if source.is_dir():
        shutil.copytree(source, target, symlinks=True)
    else:
        shutil.copy2(source, target, follow_symlinks=False)
    return 0


def _volume(fill: Callable[[Path], None], *, ditto: int | None = None, detach: int | None = 0,
            force: int | None = 0) -> Effect:
    """hdiutil attaching what ``fill`` lays out, detaching with ``detach`` then ``force``.

    ditto copies as ditto does, or (``ditto`` given) exits with that code.
    """
    def effect(command: Sequence[str]) -> int | None:
        if command[0] == DITTO:
            return _ditto(command) if ditto is None else ditto
        if command[1] == "attach":
            fill(Path(command[-2]))
            return 0
        return force if command[-1] == "-force" else detach
    return effect


def _readme(mount: Path) -> None:
    (mount / "README.txt").write_text("drag to Applications")


# --- where and how long each tool runs --------------------------------------------------------------------------


def test_the_mount_point_is_a_fresh_qualify_dmg_folder_of_the_temporary_directory_and_is_removed(
        tmp_path: Path) -> None:
    runner = Recorder(_volume(_readme))
    _install(runner, tmp_path / "Notes-1.0.dmg", _prefix(tmp_path))
    mount = runner.mount
    assert mount.name.startswith("qualify-dmg-")
    assert mount.parent == Path(tempfile.gettempdir())
    assert not mount.exists()


def test_attach_ditto_and_detach_all_run_in_the_prefixs_parent_and_the_detach_within_its_own_120_s(
        tmp_path: Path) -> None:
    runner = Recorder(_volume(_readme))
    copy, prefix = tmp_path / "Notes-1.0.dmg", _prefix(tmp_path)
    _install(runner, copy, prefix)
    mount = runner.mount
    assert runner.calls == [
        Call([HDIUTIL, "attach", "-readonly", "-nobrowse", "-noautoopen", "-mountpoint", str(mount), str(copy)],
             prefix.parent, TOOL_TIMEOUT),
        Call([DITTO, str(mount / "README.txt"), str(prefix / "README.txt")], prefix.parent, TOOL_TIMEOUT),
        Call([HDIUTIL, "detach", str(mount)], prefix.parent, DETACH_TIMEOUT),
    ]


def test_a_busy_volume_is_forced_off_the_same_mount_point_in_the_same_folder_within_its_own_120_s(
        tmp_path: Path) -> None:
    runner = Recorder(_volume(_readme, detach=16))
    prefix = _prefix(tmp_path)
    _install(runner, tmp_path / "Notes-1.0.dmg", prefix)
    mount = runner.mount
    assert runner.calls[-2:] == [
        Call([HDIUTIL, "detach", str(mount)], prefix.parent, DETACH_TIMEOUT),
        Call([HDIUTIL, "detach", str(mount), "-force"], prefix.parent, DETACH_TIMEOUT),
    ]
    assert (prefix / "README.txt").read_text() == "drag to Applications"
    assert not mount.exists()


# --- what a failing tool is called -------------------------------------------------------------------------------


def test_a_failing_ditto_is_an_install_failure_quoted_under_its_name_and_the_image_is_still_detached(
        tmp_path: Path) -> None:
    runner = Recorder(_volume(_readme, ditto=1))
    prefix = _prefix(tmp_path)
    with pytest.raises(QualificationError) as caught:
        _install(runner, tmp_path / "Notes-1.0.dmg", prefix)
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == f"ditto failed (exit 1): {SAID}"
    assert runner.calls[-1].command == [HDIUTIL, "detach", str(runner.mount)]
    assert not prefix.exists()


def test_a_volume_that_will_not_come_off_even_forced_is_an_install_failure_naming_the_forced_detach(
        tmp_path: Path) -> None:
    runner = Recorder(_volume(_readme, detach=16, force=16))
    with pytest.raises(QualificationError) as caught:
        _install(runner, tmp_path / "Notes-1.0.dmg", _prefix(tmp_path))
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == f"hdiutil detach -force failed (exit 16): {SAID}"


def test_a_refused_volume_that_will_not_come_off_keeps_its_refusal_as_the_reason(tmp_path: Path) -> None:
    # The refusal is what an auditor must read: a detach failing after it (even forced) must not replace it.
    runner = Recorder(_volume(_readme, ditto=1, detach=16, force=16))
    prefix = _prefix(tmp_path)
    with pytest.raises(QualificationError) as caught:
        _install(runner, tmp_path / "Notes-1.0.dmg", prefix)
    assert caught.value.message == f"ditto failed (exit 1): {SAID}"
    assert runner.calls[-2:] == [
        Call([HDIUTIL, "detach", str(runner.mount)], prefix.parent, DETACH_TIMEOUT),
        Call([HDIUTIL, "detach", str(runner.mount), "-force"], prefix.parent, DETACH_TIMEOUT)]


def test_a_wedged_detach_then_a_wedged_forced_detach_are_each_cut_at_120_s(tmp_path: Path) -> None:
    runner = Recorder(_volume(_readme, detach=None, force=None))
    with pytest.raises(QualificationError) as caught:
        _install(runner, tmp_path / "Notes-1.0.dmg", _prefix(tmp_path))
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == "hdiutil detach -force did not finish within 120 s"
    assert [(call.command[1:], call.timeout) for call in runner.calls] == [
        (["attach", "-readonly", "-nobrowse", "-noautoopen", "-mountpoint", str(runner.mount),
          str(tmp_path / "Notes-1.0.dmg")], TOOL_TIMEOUT),
        ([str(runner.mount / "README.txt"), str(_prefix(tmp_path) / "README.txt")], TOOL_TIMEOUT),
        (["detach", str(runner.mount)], DETACH_TIMEOUT),
        (["detach", str(runner.mount), "-force"], DETACH_TIMEOUT),
    ]


# --- what the volume holds --------------------------------------------------------------------------------------


def _bookkeeping_and_links_only(mount: Path) -> None:
    (mount / ".fseventsd").mkdir()
    (mount / ".Trashes").mkdir()
    (mount / "Applications").symlink_to("/Applications")
    (mount / "Notes.app").symlink_to(mount / ".Trashes")


def test_a_volume_of_bookkeeping_folders_and_top_level_links_only_is_refused_as_holding_nothing(
        tmp_path: Path) -> None:
    runner = Recorder(_volume(_bookkeeping_and_links_only))
    prefix = _prefix(tmp_path)
    with pytest.raises(QualificationError) as caught:
        _install(runner, tmp_path / "Notes-1.0.dmg", prefix)
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == "the disk image's volume holds nothing to install"
    assert [call.command[1] for call in runner.calls] == ["attach", "detach"]  # nothing copied, still detached
    assert not runner.mount.exists()
    assert not prefix.exists()


def test_an_empty_volume_is_refused_as_holding_nothing(tmp_path: Path) -> None:
    runner = Recorder(_volume(lambda mount: None))
    with pytest.raises(QualificationError) as caught:
        _install(runner, tmp_path / "Notes-1.0.dmg", _prefix(tmp_path))
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == "the disk image's volume holds nothing to install"


def test_a_bookkeeping_folder_is_neither_audited_nor_copied(tmp_path: Path) -> None:
    def fill(mount: Path) -> None:
        _readme(mount)
        (mount / ".Spotlight-V100").mkdir()
        os.mkfifo(mount / ".Spotlight-V100" / "pipe")  # refused were it audited; the system's, not the image's

    runner = Recorder(_volume(fill))
    prefix = _prefix(tmp_path)
    _install(runner, tmp_path / "Notes-1.0.dmg", prefix)
    assert sorted(p.name for p in prefix.iterdir()) == ["README.txt"]


def test_a_volume_that_cannot_be_read_is_an_install_failure_with_the_systems_words_and_is_detached(
        tmp_path: Path) -> None:
    def gone(mount: Path) -> None:
        mount.rmdir()  # the volume vanished under the mount point: listing it fails

    runner = Recorder(_volume(gone))
    with pytest.raises(QualificationError) as caught:
        _install(runner, tmp_path / "Notes-1.0.dmg", _prefix(tmp_path))
    mount = runner.mount
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == (f"the disk image's volume cannot be copied: "
                                    f"[Errno 2] No such file or directory: '{mount}'")
    assert [call.command for call in runner.calls] == [runner.calls[0].command, [HDIUTIL, "detach", str(mount)]]


def test_a_mount_point_the_detach_already_took_away_is_no_failure(tmp_path: Path) -> None:
    def effect(command: Sequence[str]) -> int | None:
        answer = _volume(_readme)(command)
        if command[1] == "detach":
            # Delete only a mount point of the temp folder: a broken command line could name the working folder.
            assert Path(command[2]).parent == Path(tempfile.gettempdir()), command
            shutil.rmtree(command[2])
        return answer

    runner = Recorder(effect)
    prefix = _prefix(tmp_path)
    _install(runner, tmp_path / "Notes-1.0.dmg", prefix)
    assert (prefix / "README.txt").is_file()
    assert not runner.mount.exists()
