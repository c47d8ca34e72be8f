"""producer/installers/_deb.py, function by function: how dpkg-deb is run and how its output is read.

The installer reads a hostile package's data tar through ``dpkg-deb --fsys-tarfile``; what it asks of that tool
is held here exactly: the tool runs in the copy's folder, with the minimal environment (none of the job's
secrets) and no input; a wedged tool is killed at the timeout and a refused stream's tool is killed and reaped;
a failure quotes the tool's own words, bounded (the last 600 characters of the first 64 KiB it wrote); what
follows the tar's end is drained up to 1 MiB (that bound passes, one byte more is refused, and a run-on is not
read to its end); the two readings of one copy must list the same number of members. Most tests run a fake
dpkg-deb (a small Python script written here) so that each of these can be provoked; the padded-package tests
run the real one. Written for the mutants of the module that survived the installer tests (docs/mutation.md).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.installers import _deb
from desktop_qualify.producer.installers._deb import DebInstaller, _drain_trailer, audit_listing, read_data_tar
from desktop_qualify.producer.installers._installers import install_with
from desktop_qualify.qualify_archive import tree_manifest
from support.packages import require
from support.raw_deb import app_blocks, deb_of, end

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux installer tools")

MIB = 1024 * 1024
CHUNK = 64 * 1024
RUNS_ON = "the package's data member runs on past its end"


def _fake_tool(folder: Path, body: str, *, name: str = "dpkg-deb") -> Path:
    """An executable standing in for dpkg-deb: ``body`` is Python, run with ``sys.argv`` as dpkg-deb's."""
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / name
    tool.write_text(f"#!{sys.executable} -I\nimport json, os, stat, sys, time\n{body}\n")
    tool.chmod(0o755)
    return tool


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "copy"
    folder.mkdir()
    copy = folder / "demo.deb"
    copy.write_bytes(b"!<arch>\n")
    return copy


def _read_all(stream: IO[bytes]) -> int:
    return len(stream.read())


def _plain_tar(names: list[str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name in names:
            info = tarfile.TarInfo(name)
            info.mtime = 1_700_000_000
            if name.endswith("/"):
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tf.addfile(info)
            else:
                info.size, info.mode = 2, 0o644
                tf.addfile(info, io.BytesIO(b"x\n"))
    return buffer.getvalue()


def _refusal(tool: Path, copy: Path, *, timeout: float = 60.0) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        read_data_tar(str(tool), copy, _read_all, timeout=timeout)
    assert caught.value.code is Code.INSTALL_FAILED
    return caught.value


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    os.kill(pid, signal.SIGKILL)  # the child this test started, left running by the code under test
    return False


@pytest.fixture
def typed_input() -> Iterator[None]:
    """Our own standard input is a pipe holding bytes (pytest's is /dev/null): a child that inherits it reads them."""
    read_end, write_end = os.pipe()
    os.write(write_end, b"typed by the job\n")
    os.close(write_end)
    saved = os.dup(0)
    os.dup2(read_end, 0)
    os.close(read_end)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        os.close(saved)


# --- how dpkg-deb is started ----------------------------------------------------------------------------------------


def test_the_tool_runs_in_the_copys_folder_with_the_minimal_environment_and_no_input(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, typed_input: None) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "a secret of the job")
    tool = _fake_tool(tmp_path / "bin", (
        "st = os.fstat(0)\n"
        "json.dump({'argv': sys.argv[1:], 'cwd': os.getcwd(), 'env': dict(os.environ),\n"
        "           'stdin_is_null': stat.S_ISCHR(st.st_mode) and st.st_rdev == os.stat(os.devnull).st_rdev,\n"
        "           'stdin': sys.stdin.buffer.read().decode()}, sys.stdout)\n"))
    copy = _copy(tmp_path)
    seen: list[dict[str, object]] = []

    def consume(stream: IO[bytes]) -> int:
        seen.append(json.loads(stream.read()))
        return 7

    assert read_data_tar(str(tool), copy, consume) == 7  # what the reader returned, as is
    home = str(copy.parent)
    assert seen == [{"argv": ["--fsys-tarfile", str(copy)], "cwd": home,
                     "env": {"PATH": os.defpath, "HOME": home, "TMPDIR": home, "TEMP": home, "TMP": home,
                             "LANG": "C.UTF-8"},
                     "stdin_is_null": True, "stdin": ""}]


# --- dpkg-deb's refusal, in its own words ---------------------------------------------------------------------------


def test_a_failing_tool_is_refused_with_its_exit_status_and_its_own_words(tmp_path: Path) -> None:
    tool = _fake_tool(tmp_path / "bin", (
        "sys.stderr.write(\"dpkg-deb: error: 'demo.deb' is not a Debian format archive\\n\")\n"
        "sys.exit(2)\n"))
    refusal = _refusal(tool, _copy(tmp_path))
    assert refusal.message == ("dpkg-deb cannot read the package (exit 2): "
                               "dpkg-deb: error: 'demo.deb' is not a Debian format archive")


def test_a_tool_failing_silently_is_refused_saying_no_output(tmp_path: Path) -> None:
    tool = _fake_tool(tmp_path / "bin", "sys.stderr.write('  \\n')\nsys.exit(2)\n")
    assert _refusal(tool, _copy(tmp_path)).message == "dpkg-deb cannot read the package (exit 2): no output"


def test_the_quoted_words_are_the_last_600_characters_of_the_first_64_kib(tmp_path: Path) -> None:
    """A tool flooding its error output: 64 KiB of it is read, and the message quotes the end of that."""
    flood = "x" * (CHUNK - 601) + "y" + "z" * 600 + "w" * 5000  # the 'z's end at byte 64 KiB exactly
    tool = _fake_tool(tmp_path / "bin", f"sys.stderr.write({flood!r})\nsys.exit(1)\n")
    assert _refusal(tool, _copy(tmp_path)).message == "dpkg-deb cannot read the package (exit 1): " + "z" * 600


# --- a wedged tool, a refused stream ----------------------------------------------------------------------------------


def test_a_wedged_tool_is_killed_at_the_timeout(tmp_path: Path) -> None:
    tool = _fake_tool(tmp_path / "bin", "time.sleep(4)\n")
    started = time.monotonic()
    refusal = _refusal(tool, _copy(tmp_path), timeout=0.5)
    assert refusal.message == "dpkg-deb cannot read the package (exit -9): no output"
    assert time.monotonic() - started < 3.5


def test_the_listing_is_bounded_by_the_timeout_it_is_given(tmp_path: Path) -> None:
    """A tool that writes a whole, valid tar and then hangs: killed at the listing's timeout, and refused."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "data.tar").write_bytes(_plain_tar(["./", "./opt/", "./opt/a"]))
    tool = _fake_tool(tools, (
        "sys.stdout.buffer.write(open(os.path.join(os.path.dirname(__file__), 'data.tar'), 'rb').read())\n"
        "sys.stdout.flush()\n"
        "time.sleep(4)\n"))
    started = time.monotonic()
    with pytest.raises(QualificationError) as caught:
        audit_listing(str(tool), _copy(tmp_path), timeout=0.5)
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == "dpkg-deb cannot read the package (exit -9): no output"
    assert time.monotonic() - started < 3.5


class _NeverFires:
    """A watchdog that does not fire, to show the wait is bounded on its own."""

    def __init__(self, interval: float, function: object) -> None:
        self.interval = interval

    def start(self) -> None:
        pass

    def cancel(self) -> None:
        pass


def test_the_wait_for_the_tool_is_bounded_even_without_the_watchdog(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_deb.threading, "Timer", _NeverFires)
    tool = _fake_tool(tmp_path / "bin", "print(os.getpid(), flush=True)\nos.close(1)\ntime.sleep(4)\n")
    pids: list[int] = []

    def consume(stream: IO[bytes]) -> int:
        pids.append(int(stream.read()))
        return 0

    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        read_data_tar(str(tool), _copy(tmp_path), consume, timeout=0.5)
    assert time.monotonic() - started < 3.5
    assert _gone(pids[0])  # killed and reaped on the way out


def test_a_refusal_by_the_reader_stands_and_the_tool_is_killed_and_reaped(tmp_path: Path) -> None:
    tool = _fake_tool(tmp_path / "bin", "print(os.getpid(), flush=True)\ntime.sleep(30)\n")
    pids: list[int] = []

    def consume(stream: IO[bytes]) -> int:
        pids.append(int(stream.readline()))
        raise QualificationError(Code.INSTALL_FAILED, "a member the reader refuses")

    with pytest.raises(QualificationError) as caught:
        read_data_tar(str(tool), _copy(tmp_path), consume)
    assert (caught.value.code, caught.value.message) == (Code.INSTALL_FAILED, "a member the reader refuses")
    assert _gone(pids[0])


# --- what follows the tar's end ---------------------------------------------------------------------------------------


def test_a_trailer_of_exactly_1_mib_is_drained_to_its_end() -> None:
    stream = io.BytesIO(b"\0" * MIB)
    _drain_trailer(stream)
    assert stream.tell() == MIB


def test_an_empty_trailer_passes() -> None:
    stream = io.BytesIO(b"")
    _drain_trailer(stream)
    assert stream.tell() == 0


def test_a_trailer_one_byte_over_1_mib_is_refused() -> None:
    with pytest.raises(QualificationError) as caught:
        _drain_trailer(io.BytesIO(b"\0" * (MIB + 1)))
    assert (caught.value.code, caught.value.message) == (Code.INSTALL_FAILED, RUNS_ON)


def test_a_run_on_is_refused_after_one_64_kib_read_past_the_bound_not_read_to_its_end() -> None:
    stream = io.BytesIO(b"\0" * (4 * MIB))
    with pytest.raises(QualificationError) as caught:
        _drain_trailer(stream)
    assert (caught.value.code, caught.value.message) == (Code.INSTALL_FAILED, RUNS_ON)
    assert stream.tell() == MIB + CHUNK


@pytest.mark.parametrize(("trailing", "refused"), [(MIB, False), (MIB + 1, True)])
def test_what_the_reader_leaves_is_drained_up_to_1_mib(tmp_path: Path, trailing: int, refused: bool) -> None:
    tool = _fake_tool(tmp_path / "bin", f"sys.stdout.buffer.write(bytes({trailing}))\n")
    copy = _copy(tmp_path)
    if not refused:
        assert read_data_tar(str(tool), copy, lambda stream: 3) == 3
        return
    with pytest.raises(QualificationError) as caught:
        read_data_tar(str(tool), copy, lambda stream: 3)
    assert (caught.value.code, caught.value.message) == (Code.INSTALL_FAILED, RUNS_ON)


@pytest.mark.parametrize(("padding", "refused"), [(512 * 1024, False), (3 * MIB, True)])
def test_a_real_package_padded_past_its_tar_end(tmp_path: Path, padding: int, refused: bool) -> None:
    """Zeros after the data tar's end: GNU tar's record padding passes, a run-on of megabytes is refused."""
    require("dpkg-deb", "dpkg")
    package = deb_of(tmp_path / "padded.deb", end(app_blocks()) + bytes(padding))
    prefix = tmp_path / "work" / "install"
    prefix.mkdir(parents=True)
    if not refused:
        assert install_with("deb", package, prefix) == "deb"
        assert [entry.path for entry in tree_manifest(prefix)] == ["opt/demo/demo"]
        return
    with pytest.raises(QualificationError) as caught:
        install_with("deb", package, prefix)
    assert (caught.value.code, caught.value.message) == (Code.INSTALL_FAILED, RUNS_ON)
    assert not prefix.exists() or not any(prefix.iterdir())


# --- the two readings of one copy -------------------------------------------------------------------------------------


def test_two_readings_that_list_different_members_are_refused(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The same copy read twice by the same tool must give the same count: a tool that changes its mind is refused."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "1.tar").write_bytes(_plain_tar(["./", "./opt/", "./opt/a", "./opt/b"]))
    (tools / "2.tar").write_bytes(_plain_tar(["./", "./opt/", "./opt/a", "./opt/b", "./opt/c"]))
    _fake_tool(tools, (
        "here = os.path.dirname(os.path.abspath(__file__))\n"
        "calls = os.path.join(here, 'calls')\n"
        "n = len(open(calls).read()) + 1 if os.path.exists(calls) else 1\n"
        "open(calls, 'w').write('x' * n)\n"
        "sys.stdout.buffer.write(open(os.path.join(here, f'{n}.tar'), 'rb').read())\n"))
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ.get('PATH', os.defpath)}")
    prefix = tmp_path / "work" / "install"
    prefix.mkdir(parents=True)
    with pytest.raises(QualificationError) as caught:
        DebInstaller().install(_copy(tmp_path), prefix)
    assert (caught.value.code, caught.value.message) == (
        Code.INSTALL_FAILED, "the package's data tar listed 4 members, then 5")
    assert (tools / "calls").read_text() == "xx"
