"""producer/installers/_tools.py: how an installer's own tool is started, and how its outcome is read.

The real runner starts the tool in the folder it is given, with the minimal environment (none of the job's
secrets) and no input, whether the tool is an argv or a Windows command line given as one string (refused off
Windows; on Windows handed to CreateProcess as is, which these tests also drive on other hosts by showing the module
the platform ``win32`` and handing it an executable script's path as the command line): either form runs bounded,
its whole tree killed at the timeout. What comes back is held exactly: the exit status (none at the timeout, what
it printed kept), the tool's stdout up to the cap asked for (the cap itself passes, one byte more is truncated),
undecodable bytes replaced, and the last 1500 characters of stdout then stderr for the failure message.
``run_tool`` turns a tool that cannot start, fails, or prints too much into QE_INSTALL_FAILED in exact words;
``require_tool`` looks the tool up on the job's PATH, or in ``os.defpath`` when there is none. The tools are
small Python scripts written here. Written for the mutants of the module that survived the fast test set
(docs/mutation.md).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.installers import _tools
from desktop_qualify.producer.installers._tools import ToolResult, require_tool, run_tool, run_tool_process
from desktop_qualify.producer.processes import minimal_environment

WINDOWS = sys.platform == "win32"

# Where the tool looks: its folder, its environment, its standard input (a pipe holding bytes when it inherits ours).
_REPORT = (
    "json.dump({'cwd': os.getcwd(), 'env': dict(os.environ), 'stdin': sys.stdin.buffer.read().decode()},\n"
    "          sys.stdout)\n")


def _tool(folder: Path, body: str) -> Path:
    """A tool: an executable Python script (``body``), runnable by its path on POSIX."""
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / "tool.py"
    tool.write_text(f"#!{sys.executable} -I\nimport json, os, subprocess, sys, time\n{body}\n")
    tool.chmod(0o755)
    return tool


def _argv(tool: Path) -> list[str]:
    return [sys.executable, "-I", str(tool)]


@pytest.fixture
def command_line(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], str]:
    """A Windows tool's command line as one string. Off Windows the module is shown the platform ``win32`` and
    the line is the script's own path, which ``subprocess`` runs as a program on POSIX."""
    if WINDOWS:
        return lambda tool: subprocess.list2cmdline(_argv(tool))
    if any(c.isspace() for c in sys.executable):
        pytest.skip("the interpreter's path has white space, which a script's #! line cannot hold")
    monkeypatch.setattr(_tools, "sys", types.SimpleNamespace(platform="win32"))
    return str


@pytest.fixture
def typed_input() -> Iterator[None]:
    """Our own standard input is a pipe holding bytes: a child that inherits it reads them."""
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


def _seen(result: ToolResult) -> dict[str, object]:
    assert result.exit_code == 0, result.output
    assert result.stdout_truncated is False
    assert result.output == result.stdout  # nothing on stderr
    seen: dict[str, object] = json.loads(result.stdout)
    return seen


def _expected_start(cwd: Path) -> dict[str, object]:
    return {"cwd": str(cwd), "env": minimal_environment(cwd), "stdin": ""}


# --- how the tool is started ------------------------------------------------------------------------------------


def test_an_argv_tool_runs_in_its_folder_with_the_minimal_environment_and_no_input(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, typed_input: None) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "a secret of the job")
    tool = _tool(tmp_path / "bin", _REPORT)
    cwd = tmp_path / "copy"
    cwd.mkdir()
    seen = _seen(run_tool_process(_argv(tool), cwd=cwd, timeout=30))
    assert seen == _expected_start(cwd)
    env = seen["env"]
    assert isinstance(env, dict)
    assert env["HOME"] == str(cwd)
    assert "GITHUB_TOKEN" not in env


def test_a_windows_command_line_runs_in_its_folder_with_the_minimal_environment_and_no_input(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, typed_input: None,
        command_line: Callable[[Path], str]) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "a secret of the job")
    tool = _tool(tmp_path / "bin", _REPORT)
    cwd = tmp_path / "copy"
    cwd.mkdir()
    seen = _seen(run_tool_process(command_line(tool), cwd=cwd, timeout=30))
    assert seen == _expected_start(cwd)
    env = seen["env"]
    assert isinstance(env, dict)
    assert env["HOME"] == str(cwd)
    assert "GITHUB_TOKEN" not in env


@pytest.mark.parametrize("platform", ["linux", "darwin"])
def test_a_command_line_as_one_string_is_refused_off_windows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, platform: str) -> None:
    monkeypatch.setattr(_tools, "sys", types.SimpleNamespace(platform=platform))
    with pytest.raises(QualificationError) as caught:
        run_tool_process("msiexec /i demo.msi /qn", cwd=tmp_path, timeout=30)
    assert caught.value.code is Code.INTERNAL
    assert caught.value.message == "a command line as one string is for Windows tools only"


# --- what comes back: exit status, stdout up to its cap, the tail for the message ------------------------------

_LOUD = ("sys.stdout.buffer.write(b'o' * 1000)\n"
         "sys.stdout.flush()\n"
         "sys.stderr.buffer.write(b'e' * 999 + b'E')\n"
         "sys.exit(3)\n")
_LOUD_RESULT = ToolResult(3, "o" * 1000, stdout_truncated=False, output=("o" * 1000 + "e" * 999 + "E")[-1500:])


def test_an_argv_tools_exit_status_and_the_last_1500_characters_of_stdout_then_stderr(tmp_path: Path) -> None:
    result = run_tool_process(_argv(_tool(tmp_path / "bin", _LOUD)), cwd=tmp_path, timeout=30)
    assert result == _LOUD_RESULT
    assert len(result.output) == 1500
    assert result.output.startswith("o" * 500 + "e")


def test_a_windows_tools_exit_status_and_the_last_1500_characters_of_stdout_then_stderr(
        tmp_path: Path, command_line: Callable[[Path], str]) -> None:
    result = run_tool_process(command_line(_tool(tmp_path / "bin", _LOUD)), cwd=tmp_path, timeout=30)
    assert result == _LOUD_RESULT
    assert len(result.output) == 1500
    assert result.output.startswith("o" * 500 + "e")


@pytest.mark.parametrize(("printed", "expected"), [
    (10, ToolResult(0, "0123456789", stdout_truncated=False, output="0123456789")),
    (11, ToolResult(0, "0123456789", stdout_truncated=True, output="0123456789")),
])
def test_an_argv_tools_stdout_is_cut_at_the_cap_asked_for(
        tmp_path: Path, printed: int, expected: ToolResult) -> None:
    tool = _tool(tmp_path / "bin", f"sys.stdout.buffer.write(b'0123456789abc'[:{printed}])\n")
    assert run_tool_process(_argv(tool), cwd=tmp_path, timeout=30, stdout_cap=10) == expected


@pytest.mark.parametrize(("printed", "expected"), [
    (10, ToolResult(0, "0123456789", stdout_truncated=False, output="0123456789")),
    (11, ToolResult(0, "0123456789", stdout_truncated=True, output="0123456789")),
])
def test_a_windows_tools_stdout_is_cut_at_the_cap_asked_for(
        tmp_path: Path, command_line: Callable[[Path], str], printed: int, expected: ToolResult) -> None:
    """The cap itself passes; one byte more is truncated, and never held in memory (the message's tail too)."""
    tool = _tool(tmp_path / "bin", f"sys.stdout.buffer.write(b'0123456789abc'[:{printed}])\n")
    assert run_tool_process(command_line(tool), cwd=tmp_path, timeout=30, stdout_cap=10) == expected


_UNDECODABLE = "sys.stdout.buffer.write(b'ok \\xff\\xfe end')\n"
_REPLACED = ToolResult(0, "ok \ufffd\ufffd end", stdout_truncated=False, output="ok \ufffd\ufffd end")


def test_an_argv_tools_undecodable_bytes_are_replaced(tmp_path: Path) -> None:
    assert run_tool_process(_argv(_tool(tmp_path / "bin", _UNDECODABLE)), cwd=tmp_path, timeout=30) == _REPLACED


def test_a_windows_tools_undecodable_bytes_are_replaced(
        tmp_path: Path, command_line: Callable[[Path], str]) -> None:
    assert run_tool_process(command_line(_tool(tmp_path / "bin", _UNDECODABLE)), cwd=tmp_path,
                            timeout=30) == _REPLACED


# --- a wedged tool --------------------------------------------------------------------------------------------


def test_a_wedged_windows_tool_is_killed_at_the_timeout_keeping_what_it_printed(
        tmp_path: Path, command_line: Callable[[Path], str]) -> None:
    tool = _tool(tmp_path / "bin", "sys.stdout.write('started'); sys.stdout.flush()\ntime.sleep(5)\n")
    started = time.monotonic()
    result = run_tool_process(command_line(tool), cwd=tmp_path, timeout=0.5)
    assert result == ToolResult(None, "started", stdout_truncated=False, output="started")
    assert time.monotonic() - started < 4


def _gone(pid: int) -> bool:
    """The process is no more (a zombie awaiting its reaper counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture(params=["argv", "command line"])
def either_form(request: pytest.FixtureRequest) -> Callable[[Path], list[str] | str]:
    """The tool as an argv, or as a Windows command line (the ``command_line`` fixture's)."""
    if request.param == "argv":
        return _argv
    form: Callable[[Path], str] = request.getfixturevalue("command_line")
    return form


@pytest.mark.skipif(WINDOWS, reason="POSIX process groups (Windows kills the tree with taskkill)")
def test_a_wedged_tool_is_killed_at_the_timeout_with_what_it_started(
        tmp_path: Path, either_form: Callable[[Path], list[str] | str]) -> None:
    # An NSIS installer or msiexec starts helpers of its own: the timeout must end them too, in either form.
    tool = _tool(tmp_path / "bin", (
        "child = subprocess.Popen([sys.executable, '-I', '-c', 'import time; time.sleep(30)'])\n"
        "sys.stdout.write(str(child.pid)); sys.stdout.flush()\n"
        "time.sleep(30)\n"))
    started = time.monotonic()
    result = run_tool_process(either_form(tool), cwd=tmp_path, timeout=1.0)
    assert time.monotonic() - started < 4
    assert result.exit_code is None
    grandchild = int(result.stdout)
    deadline = time.monotonic() + 2
    while not _gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.02)
    if not _gone(grandchild):
        os.kill(grandchild, signal.SIGKILL)  # the process this test started, left running by the code under test
        pytest.fail("the tool's own child outlived the timeout")


# --- run_tool: the outcome as the installer reports it --------------------------------------------------------


def _answering(result: ToolResult | OSError) -> Callable[..., ToolResult]:
    def runner(command: Sequence[str] | str, *, cwd: Path, timeout: float, stdout_cap: int) -> ToolResult:
        if isinstance(result, OSError):
            raise result
        return result
    return runner


def _install_failure(runner: Callable[..., ToolResult], tmp_path: Path, **kwargs: int) -> str:
    with pytest.raises(QualificationError) as caught:
        run_tool(runner, ["hdiutil", "attach"], cwd=tmp_path, what="hdiutil attach", **kwargs)
    assert caught.value.code is Code.INSTALL_FAILED
    return caught.value.message


@pytest.mark.parametrize(("error", "said"), [
    (OSError(errno.ENOENT, "No such file or directory"), "No such file or directory"),
    (OSError("the tool's folder is gone"), "the tool's folder is gone"),
])
def test_a_tool_that_cannot_start_is_an_install_failure_in_the_systems_words(
        tmp_path: Path, error: OSError, said: str) -> None:
    assert _install_failure(_answering(error), tmp_path) == f"hdiutil attach cannot be run: {said}"


def test_a_missing_tool_run_for_real_is_an_install_failure_naming_the_reason(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-tool"
    with pytest.raises(QualificationError) as caught:
        run_tool(run_tool_process, [str(missing)], cwd=tmp_path, what="unsquashfs")
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message.startswith("unsquashfs cannot be run: ")
    assert "Errno" not in caught.value.message  # the system's words, not the exception's spelling
    if not WINDOWS:
        assert caught.value.message == f"unsquashfs cannot be run: {os.strerror(errno.ENOENT)}"


def test_a_failing_tool_is_quoted_by_the_last_600_characters_of_its_words(tmp_path: Path) -> None:
    words = "  " + "x" * 50 + "y" + "z" * 599 + "\n\n"
    runner = _answering(ToolResult(1, "", stdout_truncated=False, output=words))
    assert _install_failure(runner, tmp_path) == "hdiutil attach failed (exit 1): y" + "z" * 599


def test_a_tool_failing_silently_is_quoted_as_no_output(tmp_path: Path) -> None:
    runner = _answering(ToolResult(2, "", stdout_truncated=False, output=" \n\t "))
    assert _install_failure(runner, tmp_path) == "hdiutil attach failed (exit 2): no output"


def test_a_tool_printing_more_than_asked_is_an_install_failure(tmp_path: Path) -> None:
    runner = _answering(ToolResult(0, "0123456789", stdout_truncated=True, output="0123456789a"))
    assert _install_failure(runner, tmp_path, max_output=10) == "hdiutil attach printed more than 10 bytes"


def test_a_tools_stdout_is_returned_when_it_succeeds_for_real(tmp_path: Path) -> None:
    tool = _tool(tmp_path / "bin", "sys.stdout.buffer.write(b'/dev/disk4\\t/Volumes/Notes\\n')\n")
    printed = run_tool(run_tool_process, _argv(tool), cwd=tmp_path, what="hdiutil attach")
    assert printed == "/dev/disk4\t/Volumes/Notes\n"


# --- require_tool -----------------------------------------------------------------------------------------------


@pytest.mark.skipif(WINDOWS, reason="an executable without an extension is found on POSIX only")
def test_with_no_path_the_tool_is_looked_up_in_os_defpath(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No PATH in the job: the same default search path the tools themselves are given (os.defpath)."""
    tool = _tool(tmp_path / "defpath", "")
    monkeypatch.delenv("PATH", raising=False)
    monkeypatch.setattr(os, "defpath", str(tool.parent))
    assert require_tool("tool.py", "mounting needs it") == str(tool)


@pytest.mark.skipif(WINDOWS, reason="an executable without an extension is found on POSIX only")
def test_the_tool_is_looked_up_on_the_jobs_path_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = _tool(tmp_path / "onpath", "")
    monkeypatch.setenv("PATH", str(tool.parent))
    assert require_tool("tool.py", "mounting needs it") == str(tool)
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))
    monkeypatch.setattr(os, "defpath", str(tool.parent))
    with pytest.raises(QualificationError) as caught:
        require_tool("tool.py", "a .dmg is mounted by hdiutil (macOS)")
    assert caught.value.code is Code.ENVIRONMENT
    assert caught.value.message == "a .dmg is mounted by hdiutil (macOS); tool.py is not installed"
