"""Progress of long stages (issue 32 item 7): a live line on a terminal, timestamped lines and a heartbeat in a log,
never on standard output."""

from __future__ import annotations

import io
import re
import sys
import time
from pathlib import Path

import pytest
from desktop_qualify.producer._progress import Progress, is_live_terminal
from desktop_qualify.producer.confinement import StageRunner, Unconfined
from rich.console import Console

STAMP = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z"
# How a reader of a log finds a stage's own lines (tests/faults reads them so, after the time).
STAGE_LINE = re.compile(rf"^{STAMP} \[produce linux\] (?P<stage>build|install)\s+(?P<rest>.*)$")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_log_gets_utc_timestamped_lines_for_each_stage() -> None:
    stream = io.StringIO()
    progress = Progress("produce linux", stream=stream, env={}, heartbeat=60)
    assert not progress.live
    with progress.stage("build") as said:
        said.append("skillhost.tar.gz 12 bytes")
    with pytest.raises(RuntimeError), progress.stage("install"):
        raise RuntimeError("disk full")
    lines = stream.getvalue().splitlines()
    assert [(m["stage"], m["rest"]) for m in map(STAGE_LINE.match, lines) if m] == [
        ("build", "..."), ("build", "skillhost.tar.gz 12 bytes  (0.0s)"), ("install", "..."),
        ("install", "FAILED after 0.0s")]
    assert all(re.match(rf"^{STAMP} \[produce linux\] ", line) for line in lines), lines
    assert progress.timings.keys() == {"build"}


def test_a_long_stage_in_a_log_says_it_is_still_running_and_what() -> None:
    stream = io.StringIO()
    progress = Progress("produce linux", stream=stream, env={}, heartbeat=0.05)
    with progress.stage("build"):
        progress.running("build: /usr/bin/python3 tools/build_release.py --out /w/out")
        time.sleep(0.4)
    lines = stream.getvalue().splitlines()
    beats = [line for line in lines if "still running" in line]
    assert len(beats) >= 2, lines
    assert all(re.fullmatch(rf"{STAMP} \[produce linux\] \.\.\. build still running \(0s\): build: "
                            r"/usr/bin/python3 tools/build_release\.py --out /w/out", line) for line in beats), beats
    # A heartbeat is never read as a stage's own line (its start, or its end).
    rests = [m["rest"] for m in map(STAGE_LINE.match, lines) if m]
    assert len(rests) == 2
    assert rests[0] == "..."
    assert re.fullmatch(r"ok  \(0\.\ds\)", rests[1]), rests
    # Once the stage has ended, no heartbeat follows.
    count = len(stream.getvalue().splitlines())
    time.sleep(0.2)
    assert len(stream.getvalue().splitlines()) == count


@pytest.mark.parametrize(("stream", "env", "live"), [
    (_Tty(), {}, True),
    (_Tty(), {"CI": "true"}, False),  # GitHub Actions: a log, even where it looks like a terminal
    (_Tty(), {"CI": ""}, True),
    (io.StringIO(), {}, False),  # a pipe or a file
])
def test_a_live_line_only_on_a_terminal_outside_ci(stream: io.StringIO, env: dict[str, str], live: bool) -> None:
    assert is_live_terminal(stream, env) is live
    assert Progress("produce linux", stream=stream, env=env).live is live


def test_a_terminal_shows_the_stage_its_elapsed_time_and_what_runs() -> None:
    out = io.StringIO()
    clock = _Clock()
    progress = Progress("produce linux", console=Console(force_terminal=True, file=out, width=160), clock=clock)
    assert progress.live
    with progress.stage("build") as said:
        clock.now = 165.0
        progress.running("build: python tools/build_release.py")
        assert progress.status() == "[produce linux] build  1m05s  build: python tools/build_release.py"
        time.sleep(0.6)  # the live display redraws four times a second
        said.append("done")
    text = out.getvalue()
    assert "[produce linux] build  1m05s  build: python tools/build_release.py" in text
    assert "[produce linux] build         done  (65.0s)" in text
    # Timestamps are for logs: a terminal shows its own time.
    assert not re.search(STAMP, text)


def test_what_the_app_runs_is_shown_escaped() -> None:
    progress = Progress("produce linux", stream=io.StringIO(), env={}, heartbeat=60)
    with progress.stage("build"):
        progress.running("build: evil\x1b[2J\u202ename")
        status = progress.status()
    assert "\x1b" not in status
    assert "\u202e" not in status
    assert "evil" in status


def test_progress_never_reaches_standard_output(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress("rebuild linux", heartbeat=0.05)
    with progress.stage("build"):
        time.sleep(0.15)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "[rebuild linux] build" in captured.err


@pytest.mark.skipif(sys.platform.startswith("win"), reason="the command is a POSIX tool")
def test_the_stage_runner_tells_what_it_starts(tmp_path: Path) -> None:
    told: list[str] = []
    runner = StageRunner(Unconfined("unit test"), (), observer=told.append)
    sandbox = runner.sandbox("build", home=tmp_path, tmp=tmp_path, writable=[tmp_path])
    runner.run(["true", "--flag"], sandbox, timeout=10, env={})
    assert told == ["build: true --flag"]
