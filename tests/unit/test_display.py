"""The display a GUI app's probe and journey get: a real private Xvfb, Qt's offscreen platform, or none."""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.processes._display import display_env, xvfb_argv, xvfb_display


def _xvfb() -> str:
    found = shutil.which("Xvfb")
    if found is None or not sys.platform.startswith("linux"):
        pytest.skip("Xvfb is not installed here (Debian: apt-get install xvfb); the real display test needs it")
    return found


def _accepts_a_client(display: str) -> bool:
    """An X client's first step: connect to the server's local socket."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        try:
            client.connect(f"/tmp/.X11-unix/X{display.lstrip(':')}")
        except OSError:
            return False
    return True


def test_xvfb_is_ready_when_the_block_starts_and_gone_when_it_ends() -> None:
    _xvfb()
    with display_env("xvfb") as env:
        assert set(env) == {"DISPLAY"}  # no XAUTHORITY: the job's own would be a credential of the runner's
        assert _accepts_a_client(env["DISPLAY"])
    assert not _accepts_a_client(env["DISPLAY"])


def test_two_displays_at_once_get_different_numbers() -> None:
    _xvfb()
    with display_env("xvfb") as first, display_env("xvfb") as second:
        assert first["DISPLAY"] != second["DISPLAY"]


def test_xvfb_is_torn_down_when_the_block_raises() -> None:
    _xvfb()
    with pytest.raises(RuntimeError), display_env("xvfb") as env:
        raise RuntimeError("the probe failed")
    assert not _accepts_a_client(env["DISPLAY"])


def test_missing_xvfb_is_an_environment_error_naming_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(QualificationError) as caught, display_env("xvfb", platform="linux"):
        pass
    assert caught.value.code is Code.ENVIRONMENT
    assert "Xvfb is not installed" in caught.value.message
    assert "apt-get install xvfb" in caught.value.message


def test_an_xvfb_that_exits_at_once_is_an_environment_error_quoting_it(tmp_path: Path) -> None:
    fake = tmp_path / "Xvfb"
    fake.write_text("#!/bin/sh\necho 'Fatal server error: no screens' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(QualificationError, match="Xvfb exited: Fatal server error") as caught, \
            xvfb_display(xvfb=str(fake)):
        pass
    assert caught.value.code is Code.ENVIRONMENT


def test_an_xvfb_that_never_gets_ready_is_stopped_within_the_bound(tmp_path: Path) -> None:
    fake = tmp_path / "Xvfb"
    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    fake.chmod(0o755)
    with pytest.raises(QualificationError, match=r"was not ready within 1 s"), \
            xvfb_display(xvfb=str(fake), start_timeout=1.0):
        pass


def test_xvfb_command_line_lets_the_server_choose_a_free_display_and_listens_locally_only() -> None:
    assert xvfb_argv("/usr/bin/Xvfb", 7) == ["/usr/bin/Xvfb", "-displayfd", "7", "-nolisten", "tcp", "-noreset",
                                             "-screen", "0", "1280x800x24"]


def test_offscreen_and_none() -> None:
    with display_env("offscreen") as env:
        assert env == {"QT_QPA_PLATFORM": "offscreen"}
    with display_env("none") as env:
        assert env == {}


def test_xvfb_is_refused_off_linux() -> None:
    with pytest.raises(QualificationError, match="Linux runners only"), display_env("xvfb", platform="darwin"):
        pass


def test_no_display_process_is_left_behind() -> None:
    _xvfb()
    with display_env("xvfb"):
        pass
    mine = [entry.name for entry in Path("/proc").iterdir() if entry.name.isdigit() and _is_my_xvfb(entry.name)]
    assert mine == []


def _is_my_xvfb(pid: str) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return False
    return cmdline[0].endswith(b"Xvfb") and parent == os.getpid()
