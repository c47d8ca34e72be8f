"""producer/installers/_appimage.py, function by function: where an AppImage's image starts, how its listing is read,
and what the installer asks of unsquashfs.

``squashfs_offset`` reads the ELF runtime's header, 32-bit or 64-bit, little- or big-endian, with its fields
unsigned at their exact places; the image starts where the section header table ends, at least 64 and strictly
before the file's end, and every refusal says exactly why. ``check_listing`` counts as members only the lines that
begin with a mode column (``unsquashfs``' other lines, indented text and words of ten letters are not members),
refuses any type but a file, a folder or a link, an ``s`` or ``S`` in either execute column, and an empty listing
or one longer than the member cap (that cap passes, one more is refused), quoting at most 160 characters of the
line. The installer reads only the header and the four bytes of the magic, and runs ``unsquashfs`` twice, in the
prefix's parent, the listing bounded by its own cap: an injected runner stands in for the tool, and a fake
``unsquashfs`` on ``PATH`` is all it needs found. Written for the mutants of the module that survived the fast test
set (docs/mutation.md).
"""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, ClassVar

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.installers._appimage import AppImageInstaller, check_listing, squashfs_offset
from desktop_qualify.producer.installers._tools import TOOL_TIMEOUT, ToolResult
from desktop_qualify.qualify_archive import MAX_MEMBERS

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux installer tools")

BIG = 10**15  # a file size no offset below reaches
FILE = "-rwxr-xr-x 0/0                 5 2026-12-01 12:00 squashfs-root/usr/bin/demo"
ROOT = "drwxr-xr-x 0/0                33 2026-12-01 12:00 squashfs-root"


def _head(elf_class: int, byte_order: int, shoff: int, shentsize: int, shnum: int) -> bytes:
    """A 64-byte ELF header with the AppImage type-2 mark; the other fields are filled so misreads show."""
    e = {1: "<", 2: ">"}.get(byte_order, "<")
    ident = b"\x7fELF" + bytes([elf_class, byte_order, 1, 0]) + b"AI\x02" + bytes(5)
    if elf_class == 2:
        rest = struct.pack(e + "HHIQQQIHHHHHH", 2, 0x3E, 1, 0x401000, 0x40, shoff, 0x12345678, 64, 56, 7,
                           shentsize, shnum, 0x1D)
    else:
        rest = struct.pack(e + "HHIIIIIHHHHHH", 2, 3, 1, 0x8048000, 0x34, shoff, 0x12345678, 52, 32, 7,
                           shentsize, shnum, 0x1D) + bytes(12)
    head = ident + rest
    assert len(head) == 64
    return head


def _refused(call: Any, *args: Any) -> str:
    with pytest.raises(QualificationError) as caught:
        call(*args)
    assert caught.value.code is Code.INSTALL_FAILED
    return caught.value.message


# --- squashfs_offset: the ELF header's fields ---------------------------------------------------------------------


@pytest.mark.parametrize("byte_order", [1, 2])
def test_an_elf64_header_places_the_image_after_its_section_headers(byte_order: int) -> None:
    assert squashfs_offset(_head(2, byte_order, 5000, 64, 3), BIG) == 5000 + 64 * 3


@pytest.mark.parametrize("byte_order", [1, 2])
def test_an_elf32_header_places_the_image_after_its_section_headers(byte_order: int) -> None:
    assert squashfs_offset(_head(1, byte_order, 1000, 40, 5), BIG) == 1000 + 40 * 5


@pytest.mark.parametrize("elf_class", [1, 2])
def test_the_section_header_fields_are_unsigned(elf_class: int) -> None:
    """Entry size and count above 32767 are not negative numbers: the offset grows, it does not shrink."""
    assert squashfs_offset(_head(elf_class, 1, 1000, 0x9000, 2), BIG) == 1000 + 0x9000 * 2
    assert squashfs_offset(_head(elf_class, 2, 1000, 1, 0x8001), BIG) == 1000 + 0x8001


@pytest.mark.parametrize(("elf_class", "shoff"), [(2, 2**64 - 64), (1, 2**32 - 64)])
def test_a_section_table_offset_with_its_top_bit_set_is_far_past_the_file(elf_class: int, shoff: int) -> None:
    """Read as signed, this offset plus the table's 192 bytes would be 128, inside a 4 GiB file: it is not."""
    message = _refused(squashfs_offset, _head(elf_class, 1, shoff, 64, 3), 2**32)
    assert message == f"AppImage names an image offset ({shoff + 192}) outside the file"


@pytest.mark.parametrize(("offset", "size", "inside"), [
    (63, BIG, False), (64, BIG, True), (999, 1000, True), (1000, 1000, False), (1001, 1000, False)])
def test_the_image_starts_at_64_or_later_and_before_the_files_end(offset: int, size: int, inside: bool) -> None:
    head = _head(2, 1, offset - 2 * 10, 10, 2)
    if inside:
        assert squashfs_offset(head, size) == offset
    else:
        assert _refused(squashfs_offset, head, size) == f"AppImage names an image offset ({offset}) outside the file"


def test_a_header_shorter_than_64_bytes_or_not_elf_is_refused() -> None:
    head = _head(2, 1, 1000, 64, 3)
    for bad in (head[:63], b"MZ" + head[2:]):
        assert _refused(squashfs_offset, bad, BIG) == "AppImage does not start with an ELF runtime"


def test_an_elf_without_the_type_2_mark_is_refused() -> None:
    head = _head(2, 1, 1000, 64, 3)
    assert _refused(squashfs_offset, head[:8] + b"AI\x01" + head[11:], BIG) == (
        "AppImage is not of type 2 (no 'AI\\x02' mark in the ELF header's padding)")


@pytest.mark.parametrize(("elf_class", "byte_order"), [(2, 0), (2, 3), (1, 0), (0, 1), (3, 1), (3, 2), (0, 0)])
def test_an_unknown_class_or_byte_order_is_refused(elf_class: int, byte_order: int) -> None:
    head = _head(elf_class, byte_order, 1000, 40, 5)
    assert _refused(squashfs_offset, head, BIG) == "AppImage has an ELF header of unknown class or byte order"


# --- check_listing: what counts as a member, what is refused --------------------------------------------------------


def test_each_owner_read_write_pair_is_a_member() -> None:
    listing = "\n".join([
        ROOT,
        "-r-xr-xr-x 0/0 5 2026-12-01 12:00 squashfs-root/a",
        "-rw-r--r-- 0/0 5 2026-12-01 12:00 squashfs-root/b",
        "---------- 0/0 5 2026-12-01 12:00 squashfs-root/c",
        "--w------- 0/0 5 2026-12-01 12:00 squashfs-root/d",
        "lrwxrwxrwx 0/0 5 2026-12-01 12:00 squashfs-root/e -> a",
    ])
    assert check_listing(listing) == 6


def test_lines_that_do_not_begin_with_a_mode_column_are_not_members() -> None:
    listing = "\n".join([
        "Parallel unsquashfs: Using 2 processors",
        "Filesystem is squashfs 4.0",  # a word of ten letters
        "Filesystem",
        "-rw",  # a mode-like word, too short
        "-rw-r--r--x 0/0 5 2026-12-01 12:00 too long a mode",
        "",
        ROOT,
        "  crw-rw-rw- 0/0 1, 3 2026-12-01 12:00 indented, as a member's name after a newline would be",
        "\t-rw-r--r-- 0/0 5 2026-12-01 12:00 indented by a tab",
        FILE,
    ])
    assert check_listing(listing) == 2


@pytest.mark.parametrize("kind", ["c", "b", "p", "s", "D", "X", "?"])
def test_any_type_but_file_folder_or_link_is_refused(kind: str) -> None:
    line = f"{kind}rw-rw-rw- 0/0 1, 3 2026-12-01 12:00 squashfs-root/node"
    assert _refused(check_listing, f"{ROOT}\n{line}\n{FILE}\n") == (
        f"AppImage lists a device, fifo or socket: {line!r}")


@pytest.mark.parametrize("mode", ["-rwsr-xr-x", "-rwSr--r--", "-rwxr-sr-x", "-rw-r-Sr--", "drwxr-Sr-x"])
def test_an_s_in_either_execute_column_is_refused(mode: str) -> None:
    line = f"{mode} 0/0 5 2026-12-01 12:00 squashfs-root/usr/bin/demo"
    assert _refused(check_listing, f"{ROOT}\n{line}\n") == (
        f"AppImage lists a set-user-id or set-group-id file: {line!r}")


def test_only_s_and_s_upper_mean_set_id_in_the_execute_columns() -> None:
    """The check reads exactly 's' and 'S': any other character in those columns (and the sticky 't') passes."""
    listing = "\n".join(f"{mode} 0/0 5 2026-12-01 12:00 squashfs-root/{n}" for n, mode in enumerate([
        "-rwxr-xr-x", "-rw-r-----", "-rwXr-xr-x", "-rwxr-Xr-x", "-rwtr-Tr--", "drwxrwxrwt"]))
    assert check_listing(listing) == 6


@pytest.mark.parametrize(("mode", "why"), [("crw-rw-rw-", "a device, fifo or socket"),
                                           ("-rwsr-xr-x", "a set-user-id or set-group-id file")])
def test_a_refused_line_is_quoted_to_its_first_160_characters(mode: str, why: str) -> None:
    line = f"{mode} 0/0 1 2026-12-01 12:00 squashfs-root/" + "n" * 300
    quoted = line[:160]
    assert len(quoted) == 160
    assert line[160] == "n"
    assert _refused(check_listing, line) == f"AppImage lists {why}: {quoted!r}"


def test_the_member_cap_passes_and_one_more_is_refused() -> None:
    lines = [f"-rw-r--r-- 0/0 1 2026-12-01 12:00 squashfs-root/{n}" for n in range(MAX_MEMBERS + 1)]
    assert check_listing("\n".join(lines[:MAX_MEMBERS])) == MAX_MEMBERS
    assert _refused(check_listing, "\n".join(lines)) == f"AppImage lists more than {MAX_MEMBERS} members"


def test_one_member_passes_and_none_is_refused() -> None:
    assert check_listing(FILE) == 1
    for nothing in ("", "Parallel unsquashfs: Using 2 processors\n"):
        assert _refused(check_listing, nothing) == "AppImage lists nothing (or its image cannot be read)"


# --- the installer: what it reads, what it runs ---------------------------------------------------------------------


OFFSET = 1000 + 64 * 3


class Runner:
    """Stands in for unsquashfs: records each call; the listing answers ``listing``, a run listed in ``fail`` fails."""

    def __init__(self, listing: str = f"{ROOT}\n{FILE}\n", fail: str = "") -> None:
        self.calls: list[tuple[list[str], Path, float, int]] = []
        self.listing = listing
        self.fail = fail

    def __call__(self, command: Sequence[str] | str, *, cwd: Path, timeout: float, stdout_cap: int) -> ToolResult:
        argv = list(command)
        self.calls.append((argv, cwd, timeout, stdout_cap))
        listing = "-lln" in argv
        if self.fail == ("list" if listing else "extract"):
            return ToolResult(1, "", stdout_truncated=False, output="  the tool's own words\n")
        return ToolResult(0, self.listing if listing else "", stdout_truncated=False, output="")


class _Handle:
    """A file handle that records the reads and seeks made on it."""

    def __init__(self, inner: IO[bytes], log: list[tuple[str, int | None]]) -> None:
        self._inner, self._log = inner, log

    def __enter__(self) -> _Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self._inner.close()

    def read(self, size: int | None = -1) -> bytes:
        self._log.append(("read", size))
        return self._inner.read(size)

    def seek(self, where: int) -> int:
        self._log.append(("seek", where))
        return self._inner.seek(where)


class _Watched(type(Path())):  # type: ignore[misc]
    """The copy's path: opening it gives a handle that records what is read."""

    log: ClassVar[list[tuple[str, int | None]]] = []

    def open(self, *args: Any, **kwargs: Any) -> Any:
        return _Handle(super().open(*args, **kwargs), self.log)


@pytest.fixture
def unsquashfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A stand-in unsquashfs on PATH (never run: the runner stands in for it); its path."""
    tools = tmp_path / "bin"
    tools.mkdir()
    tool = tools / "unsquashfs"
    tool.write_text("#!/bin/sh\nexit 99\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ.get('PATH', os.defpath)}")
    return str(tool)


def _copy(tmp_path: Path, magic: bytes = b"hsqs") -> Path:
    folder = tmp_path / "copy"
    folder.mkdir()
    copy = folder / "Demo.AppImage"
    body = _head(2, 1, 1000, 64, 3) + bytes(OFFSET - 64) + magic + b"\x01" * 4000
    copy.write_bytes(body)
    return copy


def _prefix(tmp_path: Path) -> Path:
    prefix = tmp_path / "work" / "install"
    prefix.mkdir(parents=True)
    return prefix


def test_the_installer_lists_then_extracts_in_the_prefixs_parent(tmp_path: Path, unsquashfs: str) -> None:
    copy, prefix, runner = _copy(tmp_path), _prefix(tmp_path), Runner()
    AppImageInstaller(runner).install(copy, prefix)
    assert runner.calls == [
        ([unsquashfs, "-o", str(OFFSET), "-lln", "-UTC", copy.as_posix()], prefix.parent, TOOL_TIMEOUT,
         600 * MAX_MEMBERS),
        ([unsquashfs, "-o", str(OFFSET), "-n", "-no-xattrs", "-st", "-d", str(prefix / "squashfs-root"),
          copy.as_posix()], prefix.parent, TOOL_TIMEOUT, 64 * 1024),
    ]


def test_the_installer_reads_only_the_header_and_the_magic(tmp_path: Path, unsquashfs: str) -> None:
    copy = _Watched(_copy(tmp_path))
    copy.log.clear()
    AppImageInstaller(Runner()).install(copy, _prefix(tmp_path))
    assert copy.log == [("read", 64), ("seek", OFFSET), ("read", 4)]


def test_no_magic_at_the_offset_is_refused_before_anything_runs(tmp_path: Path, unsquashfs: str) -> None:
    runner = Runner()
    message = _refused(AppImageInstaller(runner).install, _copy(tmp_path, magic=b"hsqt"), _prefix(tmp_path))
    assert message == f"AppImage has no squashfs image at offset {OFFSET}"
    assert runner.calls == []


def test_a_refused_listing_extracts_nothing(tmp_path: Path, unsquashfs: str) -> None:
    runner = Runner(listing=f"{ROOT}\ncrw-rw-rw- 0/0 1, 3 2026-12-01 12:00 squashfs-root/null\n")
    message = _refused(AppImageInstaller(runner).install, _copy(tmp_path), _prefix(tmp_path))
    assert message.startswith("AppImage lists a device, fifo or socket: ")
    assert [argv[3] for argv, *_ in runner.calls] == ["-lln"]


@pytest.mark.parametrize(("fail", "what"), [("list", "unsquashfs -lln"), ("extract", "unsquashfs")])
def test_a_failing_unsquashfs_is_named_with_its_own_words(tmp_path: Path, unsquashfs: str, fail: str,
                                                          what: str) -> None:
    message = _refused(AppImageInstaller(Runner(fail=fail)).install, _copy(tmp_path), _prefix(tmp_path))
    assert message == f"{what} failed (exit 1): the tool's own words"
