"""The file layer (``qualify_files``) as the package imports it: staging swaps, atomic writes and their leftovers,
named outputs, streamed digests and name folding.

Other tests reach some of these through ``tools/staging.py`` (loaded by path) or through whole commands; these
hold each function's own promise, message and code, so that a mutant of any of them fails here.
"""

from __future__ import annotations

import codecs
import errno
import hashlib
import io
import os
import stat
import sys
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_files import (
    NOFOLLOW,
    append_text,
    atomic_leftovers,
    casefold_name,
    discard_leftovers,
    file_sha256,
    remove_output,
    staging_folder,
    swap_into_place,
    write_atomic,
    write_output,
)
from desktop_qualify.qualify_files import _outputs as outputs_module
from support.binary_open import BINARY, spy_on_binary_open

POSIX = os.name == "posix"


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


# --- staging: a whole run's output swapped in only when complete ---------------------------------------------------


def test_the_staging_folder_is_hidden_beside_the_output_and_starts_empty(tmp_path: Path) -> None:
    out = tmp_path / "qualification-out"
    stale = tmp_path / ".qualification-out.staging"
    (stale / "evidence").mkdir(parents=True)
    (stale / "evidence" / "half-written").write_text("an earlier run killed mid-way")
    staging = staging_folder(out)
    assert staging == stale
    # Removed, not created: the caller makes it when it starts writing.
    assert not staging.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_staging_folder_of_a_first_run_is_named_without_error(tmp_path: Path) -> None:
    assert staging_folder(tmp_path / "out") == tmp_path / ".out.staging"
    assert list(tmp_path.iterdir()) == []


def test_a_swap_with_no_earlier_output_moves_the_staging_folder_into_place(tmp_path: Path) -> None:
    out, staging = tmp_path / "out", tmp_path / ".out.staging"
    staging.mkdir()
    (staging / "decision.json").write_text("new")
    swap_into_place(staging, out)
    assert _tree(out) == {"decision.json": "new"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_swap_replaces_the_earlier_output_and_leaves_nothing_aside(tmp_path: Path) -> None:
    out, staging = tmp_path / "out", tmp_path / ".out.staging"
    out.mkdir()
    (out / "old.json").write_text("last good")
    # A folder an earlier interrupted swap left aside is not what the new swap keeps.
    (tmp_path / ".out.previous").mkdir()
    (tmp_path / ".out.previous" / "older.json").write_text("older")
    staging.mkdir()
    (staging / "new.json").write_text("this run")
    swap_into_place(staging, out)
    assert _tree(out) == {"new.json": "this run"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_failed_swap_puts_the_earlier_output_back_and_raises(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.json").write_text("last good")
    missing = tmp_path / ".out.staging"  # never made: its rename fails
    with pytest.raises(FileNotFoundError):
        swap_into_place(missing, out)
    assert _tree(out) == {"old.json": "last good"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_failed_swap_reports_its_own_error_when_there_is_nothing_to_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, staging = tmp_path / "out", tmp_path / ".out.staging"
    staging.mkdir()
    real_rename = Path.rename

    def refused(self: Path, target: Path) -> Path:
        if self == staging:
            raise PermissionError(13, "Permission denied")
        return real_rename(self, target)

    monkeypatch.setattr(Path, "rename", refused)
    with pytest.raises(PermissionError):
        swap_into_place(staging, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.staging"]


def test_a_failed_swap_with_no_earlier_output_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        swap_into_place(tmp_path / ".out.staging", tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


# --- streamed digests ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) * 2 + 17])
def test_the_streamed_digest_is_the_whole_files_sha256(tmp_path: Path, size: int) -> None:
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    path = tmp_path / "artifact.bin"
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()


def test_the_digest_reads_in_bounded_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "artifact.bin"
    path.write_bytes(b"x" * ((1 << 20) * 2 + 1))
    sizes: list[int] = []
    real_open = Path.open

    def spying_open(self: Path, *args: object, **kwargs: object) -> object:
        handle = real_open(self, *args, **kwargs)  # type: ignore[call-overload]
        real_read = handle.read

        def read(n: int = -1) -> bytes:
            sizes.append(n)
            return real_read(n)  # type: ignore[no-any-return]

        handle.read = read
        return handle

    monkeypatch.setattr(Path, "open", spying_open)
    file_sha256(path)
    assert sizes == [1 << 20] * 4


# --- atomic writes and their leftovers -----------------------------------------------------------------------------


def test_an_atomic_write_creates_its_folders_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "statement.json"
    write_atomic(path, b"{}")
    assert path.read_bytes() == b"{}"
    assert sorted(p.name for p in path.parent.iterdir()) == ["statement.json"]


@pytest.mark.skipif(not POSIX, reason="file modes are POSIX's")
@pytest.mark.parametrize(("mode", "expected"), [(None, 0o644), (0o600, 0o600), (0o755, 0o755)])
def test_an_atomic_write_gives_the_file_its_mode(tmp_path: Path, mode: int | None, expected: int) -> None:
    path = tmp_path / "key.pem"
    if mode is None:
        write_atomic(path, b"k")
    else:
        write_atomic(path, b"k", mode=mode)
    assert stat.S_IMODE(path.stat().st_mode) == expected


@pytest.mark.skipif(not POSIX, reason="Windows has no folder fsync")
def test_an_atomic_write_makes_its_rename_durable_by_syncing_the_folder(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append("folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    write_atomic(tmp_path / "statement.json", b"{}")
    # The file's data first, then the folder entry the rename made.
    assert synced == ["file", "folder"]


def test_an_atomic_write_replaces_earlier_content_whole(tmp_path: Path) -> None:
    path = tmp_path / "decision.json"
    write_atomic(path, b"first, longer content")
    write_atomic(path, b"second")
    assert path.read_bytes() == b"second"


def test_an_atomic_write_that_cannot_rename_is_an_environment_error_and_changes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()
    (target / "keep").write_text("a folder stands where the file goes")
    with pytest.raises(QualificationError) as caught:
        write_atomic(target, b"data")
    assert caught.value.code is Code.ENVIRONMENT
    assert str(target) in caught.value.message
    assert "cannot write" in caught.value.message
    assert atomic_leftovers(target) == []
    assert _tree(tmp_path) == {"out/keep": "a folder stands where the file goes"}


def test_an_atomic_write_under_a_file_is_an_environment_error(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")
    with pytest.raises(QualificationError) as caught:
        write_atomic(blocker / "statement.json", b"{}")
    assert caught.value.code is Code.ENVIRONMENT
    # mkdir of a folder where a file stands: EEXIST.
    assert caught.value.message == f"{blocker / 'statement.json'}: cannot write ({os.strerror(errno.EEXIST)})"
    assert blocker.read_text() == "a file, not a folder"


def test_the_temporary_file_is_hidden_beside_the_target_and_a_leftover_the_rule_recognises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "statement.json"
    seen: list[tuple[Path, list[Path]]] = []
    real_replace = Path.replace

    def spying_replace(self: Path, target: Path) -> Path:
        # The moment before the rename: what a kill would leave behind.
        seen.append((self, atomic_leftovers(path)))
        return real_replace(self, target)

    monkeypatch.setattr(Path, "replace", spying_replace)
    write_atomic(path, b"{}")
    [(temp, leftovers)] = seen
    assert temp.parent == tmp_path
    assert temp.name.startswith(".statement.json.")
    assert temp.name.endswith(".tmp")
    assert leftovers == [temp]


def test_an_atomic_write_whose_file_object_cannot_be_made_closes_its_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[int] = []
    real_close = os.close

    def no_file_object(fd: int, *args: object, **kwargs: object) -> object:
        raise OSError(24, "Too many open files")

    def spying_close(fd: int) -> None:
        closed.append(fd)
        real_close(fd)

    monkeypatch.setattr(os, "fdopen", no_file_object)
    monkeypatch.setattr(os, "close", spying_close)
    path = tmp_path / "statement.json"
    with pytest.raises(QualificationError) as caught:
        write_atomic(path, b"{}")
    assert caught.value.message == f"{path}: cannot write (Too many open files)"
    assert len(closed) == 1
    assert list(tmp_path.iterdir()) == []


def test_an_atomic_write_interrupted_by_any_exception_removes_its_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "statement.json"
    path.write_bytes(b"earlier")

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, b"later")
    assert path.read_bytes() == b"earlier"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["statement.json"]


def test_an_atomic_write_whose_fsync_fails_is_an_environment_error_and_keeps_the_earlier_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "statement.json"
    path.write_bytes(b"earlier")

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(QualificationError) as caught:
        write_atomic(path, b"later")
    assert caught.value.code is Code.ENVIRONMENT
    assert caught.value.message == f"{path}: cannot write (No space left on device)"
    assert path.read_bytes() == b"earlier"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["statement.json"]


def test_a_write_whose_clean_up_also_fails_reports_the_write_error(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "statement.json"

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    def stuck(self: Path, missing_ok: bool = False) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "fsync", full)
    monkeypatch.setattr(Path, "unlink", stuck)
    with pytest.raises(QualificationError) as caught:
        write_atomic(path, b"later")
    # The error reported is the write's, not the clean-up's.
    assert caught.value.message == f"{path}: cannot write (No space left on device)"


def test_leftovers_are_exactly_the_interrupted_writes_of_that_file(tmp_path: Path) -> None:
    path = tmp_path / "platform.json"
    path.write_text("complete")
    ours = [".platform.json.abcd_123.tmp", ".platform.json.zzzzzzzz.tmp"]
    not_ours = [
        ".platform.json.abcd_12.tmp",     # seven random characters
        ".platform.json.abcd_1234.tmp",   # nine
        ".platform.json.ABCD_123.tmp",    # tempfile's characters are lower case
        ".platform.json.abcd-123.tmp",    # nor a dash
        ".platform.json.abcd_123.tmpx",   # another suffix
        ".platform.json.abcd_123",        # no suffix
        "platform.json.abcd_123.tmp",     # not hidden
        ".other.json.abcd_123.tmp",       # another file's
        ".xplatform.json.abcd_123.tmp",   # a longer name's
    ]
    for name in ours + not_ours:
        (tmp_path / name).write_text("x")
    assert atomic_leftovers(path) == sorted(tmp_path / name for name in ours)


def test_a_real_interrupted_write_leaves_a_leftover_the_rule_recognises(tmp_path: Path) -> None:
    import tempfile

    path = tmp_path / "statement.json"
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=tmp_path)
    os.close(fd)
    assert atomic_leftovers(path) == [Path(name)]


def test_leftovers_of_a_file_in_a_missing_folder_are_none(tmp_path: Path) -> None:
    assert atomic_leftovers(tmp_path / "absent" / "statement.json") == []


def test_leftovers_under_a_file_are_an_environment_error(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    with pytest.raises(QualificationError) as caught:
        atomic_leftovers(blocker / "statement.json")
    assert caught.value.code is Code.ENVIRONMENT
    assert caught.value.message == f"{blocker}: cannot list ({os.strerror(errno.ENOTDIR)})"


def test_discarding_leftovers_keeps_the_file_and_everything_else(tmp_path: Path) -> None:
    path = tmp_path / "platform.json"
    path.write_text("complete")
    (tmp_path / ".platform.json.abcd_123.tmp").write_text("half")
    (tmp_path / "neighbour.json").write_text("n")
    discard_leftovers(path)
    assert _tree(tmp_path) == {"neighbour.json": "n", "platform.json": "complete"}


def test_removing_an_output_removes_it_and_its_leftovers_only(tmp_path: Path) -> None:
    path = tmp_path / "platform.json"
    path.write_text("complete")
    (tmp_path / ".platform.json.abcd_123.tmp").write_text("half")
    (tmp_path / "neighbour.json").write_text("n")
    remove_output(path)
    assert _tree(tmp_path) == {"neighbour.json": "n"}
    remove_output(path)  # absent: nothing to do, no error
    assert _tree(tmp_path) == {"neighbour.json": "n"}


def test_a_leftover_that_cannot_be_removed_is_an_environment_error(tmp_path: Path) -> None:
    path = tmp_path / "platform.json"
    stuck = tmp_path / ".platform.json.abcd_123.tmp"
    stuck.mkdir()  # a folder by that name: unlink refuses it
    (stuck / "inside").write_text("x")
    with pytest.raises(QualificationError) as caught:
        discard_leftovers(path)
    assert caught.value.code is Code.ENVIRONMENT
    # unlink(2) of a folder: EISDIR on Linux, EPERM where POSIX lets it say so.
    assert caught.value.message in {f"{stuck}: cannot remove a stale output ({os.strerror(e)})"
                                    for e in (errno.EISDIR, errno.EPERM, errno.EACCES)}
    assert (stuck / "inside").read_text() == "x"


def test_append_text_adds_to_what_others_wrote(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    path.write_text("their line\n", encoding="utf-8")
    append_text(path, "our line ✓\n")
    assert path.read_text(encoding="utf-8") == "their line\nour line ✓\n"


def test_append_text_writes_utf8_whatever_the_locale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A job summary is UTF-8 on every runner; Windows' locale encoding (cp1252) would not be.
    opened: list[object] = []
    real_open = Path.open

    def spying_open(self: Path, *args: object, **kwargs: object) -> object:
        opened.append(kwargs.get("encoding"))
        return real_open(self, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(Path, "open", spying_open)
    append_text(tmp_path / "summary.md", "x")
    assert len(opened) == 1
    assert isinstance(opened[0], str)
    assert codecs.lookup(opened[0]).name == "utf-8"


def test_append_text_to_a_folder_is_an_environment_error(tmp_path: Path) -> None:
    with pytest.raises(QualificationError) as caught:
        append_text(tmp_path, "x")
    assert caught.value.code is Code.ENVIRONMENT
    assert caught.value.message == f"{tmp_path}: cannot append ({os.strerror(errno.EISDIR)})"


# --- named outputs -------------------------------------------------------------------------------------------------


def test_dash_writes_standard_output_and_no_file(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_output(Path("-"), b"report bytes\n")
    assert capsysbinary.readouterr().out == b"report bytes\n"
    assert list(tmp_path.iterdir()) == []


def test_a_standard_output_that_fails_is_an_environment_error(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken(io.BytesIO):
        def write(self, data: object) -> int:
            raise OSError(32, "Broken pipe")

    class Stdout:
        buffer = Broken()

        def flush(self) -> None:
            return None

    monkeypatch.setattr(sys, "stdout", Stdout())
    with pytest.raises(QualificationError) as caught:
        write_output(Path("-"), b"x")
    assert caught.value.code is Code.ENVIRONMENT
    assert caught.value.message == "standard output: cannot write (Broken pipe)"


def test_a_named_output_is_written_whole_then_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    write_output(path, b"first, longer")
    write_output(path, b"second")
    assert path.read_bytes() == b"second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_an_appended_output_keeps_what_was_there(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    write_output(path, b"one\n", append=True)  # created when absent
    write_output(path, b"two\n", append=True)
    assert path.read_bytes() == b"one\ntwo\n"


def test_an_append_is_written_whole_however_the_kernel_splits_it(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "summary.md"
    real_write = os.write

    def one_byte(fd: int, data: object) -> int:
        return real_write(fd, bytes(memoryview(data)[:1]))  # type: ignore[arg-type]

    monkeypatch.setattr(os, "write", one_byte)
    write_output(path, b"written one byte at a time", append=True)
    assert path.read_bytes() == b"written one byte at a time"


@pytest.mark.skipif(not POSIX, reason="symbolic links need privileges on Windows")
@pytest.mark.parametrize("append", [False, True])
def test_an_output_that_is_a_link_is_refused_and_nothing_is_written_through(tmp_path: Path, append: bool) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("untouched")
    link = tmp_path / "report.html"
    link.symlink_to(target)
    with pytest.raises(QualificationError) as caught:
        write_output(link, b"x", append=append, option="--html")
    assert caught.value.code is Code.USAGE
    assert "--html" in caught.value.message
    assert target.read_text() == "untouched"
    assert link.is_symlink()


def test_an_output_that_is_a_folder_is_an_environment_error(tmp_path: Path) -> None:
    with pytest.raises(QualificationError) as caught:
        write_output(tmp_path, b"x", option="--json")
    assert caught.value.code is Code.ENVIRONMENT
    assert caught.value.message == f"--json {tmp_path}: cannot write (a folder)"


def test_an_output_named_by_no_option_is_called_output(tmp_path: Path) -> None:
    with pytest.raises(QualificationError) as caught:
        write_output(tmp_path, b"x")
    assert caught.value.message == f"output {tmp_path}: cannot write (a folder)"


@pytest.mark.skipif(not POSIX, reason="character devices are POSIX's")
def test_an_append_that_opens_something_other_than_a_regular_file_writes_nothing() -> None:
    # The check before the open cannot see a device swapped in afterwards; the opened file is checked again.
    with pytest.raises(QualificationError) as caught:
        outputs_module._append(Path(os.devnull), b"never written")
    assert caught.value.code is Code.USAGE
    assert caught.value.message == f"{os.devnull}: not a regular file; use - for standard output"


def test_an_append_that_cannot_open_is_an_environment_error(tmp_path: Path) -> None:
    path = tmp_path / "absent-folder" / "summary.md"
    with pytest.raises(QualificationError) as caught:
        outputs_module._append(path, b"x")
    assert caught.value.code is Code.ENVIRONMENT
    assert caught.value.message == f"{path}: cannot append ({os.strerror(errno.ENOENT)})"


def test_an_append_that_cannot_write_is_an_environment_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "summary.md"

    def full(fd: int, data: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(QualificationError) as caught:
        outputs_module._append(path, b"x")
    assert caught.value.code is Code.ENVIRONMENT
    assert caught.value.message == f"{path}: cannot append (No space left on device)"


@pytest.mark.skipif(not POSIX, reason="file modes are POSIX's")
def test_an_append_creates_a_missing_file_readable_by_all_writable_by_its_owner(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    old = os.umask(0o022)
    try:
        outputs_module._append(path, b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


@pytest.mark.skipif(not POSIX, reason="stands in for Windows' O_BINARY on a POSIX system")
def test_an_append_opens_in_binary_mode_where_the_platform_has_one(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    flags_seen = spy_on_binary_open(monkeypatch)
    outputs_module._append(tmp_path / "summary.md", b"x")
    assert len(flags_seen) == 1
    assert flags_seen[0] & BINARY


@pytest.mark.skipif(not POSIX, reason="O_NOFOLLOW is POSIX's")
def test_an_append_never_follows_a_link_even_unchecked(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("untouched")
    link = tmp_path / "summary.md"
    link.symlink_to(target)
    with pytest.raises(QualificationError) as caught:
        outputs_module._append(link, b"x")
    assert caught.value.code is Code.ENVIRONMENT
    assert target.read_text() == "untouched"


@pytest.mark.skipif(not POSIX, reason="these open flags are POSIX's")
def test_an_append_opens_with_every_guard_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Never through a link, never waiting on a FIFO, never taking a terminal as the controlling one; append only.
    flags_seen: list[int] = []
    real_open = os.open

    def spy(path: object, flags: int, *args: object) -> int:
        flags_seen.append(flags)
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", spy)
    outputs_module._append(tmp_path / "summary.md", b"x")
    wanted = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
    assert len(flags_seen) == 1
    assert flags_seen[0] & wanted == wanted


@pytest.mark.skipif(not POSIX, reason="these open flags are POSIX's")
def test_an_append_works_where_the_platform_lacks_the_guard_flags(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Windows has no O_NOFOLLOW, O_NONBLOCK or O_NOCTTY: each counts as no flag, never as an error.
    flags_seen: list[int] = []
    real_open = os.open

    def spy(path: object, flags: int, *args: object) -> int:
        flags_seen.append(flags)
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    for name in ("O_NOFOLLOW", "O_NONBLOCK", "O_NOCTTY"):
        monkeypatch.delattr(os, name)
    monkeypatch.setattr(os, "open", spy)
    path = tmp_path / "summary.md"
    outputs_module._append(path, b"appended")
    assert path.read_bytes() == b"appended"
    assert flags_seen == [os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)]


@pytest.mark.skipif(not POSIX, reason="named pipes are POSIX's")
def test_an_append_to_a_pipe_without_a_reader_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "summary.md"
    os.mkfifo(fifo)
    # O_NONBLOCK: opening a FIFO for writing with no reader fails at once (ENXIO) instead of waiting for one.
    with pytest.raises(QualificationError) as caught:
        outputs_module._append(fifo, b"x")
    assert caught.value.code is Code.ENVIRONMENT


# --- names ---------------------------------------------------------------------------------------------------------


def test_names_fold_case_and_normalisation_as_case_insensitive_file_systems_do() -> None:
    composed, decomposed = "Caf\u00e9.txt", "CAFE\u0301.TXT"
    assert casefold_name(composed) == casefold_name(decomposed) == "cafe\u0301.txt"
    assert casefold_name("STRASSE") == casefold_name("stra\u00dfe") == "strasse"
    # The fold of a decomposed form is decomposed again: U+1E9E (capital sharp s) folds to "ss".
    assert casefold_name("\u1e9e") == "ss"
    assert casefold_name("a") != casefold_name("b")


def test_a_name_whose_fold_composes_is_decomposed_after_folding() -> None:
    # The Angstrom sign and the precomposed A with ring fold to one decomposed name.
    assert casefold_name("\u212b") == "a\u030a"
    assert casefold_name("\u00c5") == "a\u030a"


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="the platform has no O_NOFOLLOW")
def test_the_read_flags_refuse_links() -> None:
    assert NOFOLLOW & os.O_NOFOLLOW
