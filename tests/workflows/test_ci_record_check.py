"""ci.yml's macOS and Windows jobs check their frozen app's record (issue 35 item 7): the step is there, runs on
those two only, whatever the tests said, and runs tools/check_platform_record.py on the folder the tests write."""

from __future__ import annotations

from pathlib import Path

from shell_commands import invoked
from workflow_rules import load

REPO = Path(__file__).resolve().parents[2]


def test_the_macos_and_windows_jobs_check_their_record_with_the_tool() -> None:
    job = load(REPO / ".github" / "workflows")["ci.yml"]["jobs"]["tests"]
    steps = job["steps"]
    names = [step.get("name", step.get("uses", "")) for step in steps]
    check = next(step for step in steps if "check_platform_record.py" in step.get("run", ""))
    # After the tests wrote the record and it was uploaded, on macOS and Windows, even when a test failed.
    assert names.index(check["name"]) > next(i for i, s in enumerate(steps) if "upload-artifact" in s.get("uses", ""))
    assert check["if"] == "always() && matrix.os != 'ubuntu-latest'"
    assert set(job["strategy"]["matrix"]["os"]) - {"ubuntu-latest"} == {"macos-latest", "windows-latest"}
    assert check["env"]["RECORDS"] == "${{ runner.temp }}/app-record"
    tests = next(step for step in steps if step.get("run") == "nox -s tests")
    assert tests["env"]["SKILLHOST_RECORD_DIR"] == check["env"]["RECORDS"]  # the folder the tests write
    assert check["env"]["PLATFORM"] == "${{ matrix.os == 'windows-latest' && 'windows' || 'macos' }}"
    assert check["shell"] == "bash"  # the same script on the Windows runner
    commands = [argv for argv in invoked(check["run"]) if argv and argv[0] == "$venv_python"]
    assert commands == [["$venv_python", "tools/check_platform_record.py", "--platform", "$PLATFORM", "--records",
                         "$RECORDS"]]  # fmt: skip
    assert (REPO / "tools" / "check_platform_record.py").is_file()
