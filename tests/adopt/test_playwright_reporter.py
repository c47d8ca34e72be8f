"""The Playwright reporter writes the qualify-journey v2 record from Playwright's reporter events.

node drives the reporter shipped in the package (the file `qualify init --journey playwright` writes) with a
recorded sequence of events (playwright/events.json), as Playwright calls it: onBegin with the suite,
onTestEnd per attempt, onEnd. The record is parsed exactly as the producer parses an app's record. No npm, no
network; skipped where node is missing.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import AppJourneyRecord
from desktop_qualify.producer._app_output import load_app_record
from desktop_qualify.qualify_init._render import Choices, render

HERE = Path(__file__).resolve().parent / "playwright"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (the reporter is tested with node)")

EXPECTED = [
    ("open-document", "allow", None, None, None),
    ("open-outside-refused", "reject", "TINY_PATH_DENIED", None, None),
    ("open-absolute-refused", "error", None, None, None),  # its expected refusal did not happen
    ("save-is-durable", "allow", None, None, None),  # named by its qualify-step annotation
    ("export-pdf", "allow", None, None, None),  # failed, then passed on retry: the last attempt counts
    ("sync-large-folder", "error", None, None, None),  # timed out
    ("drag-and-drop", "error", None, None, None),  # expected to fail: never a pass
    ("exec-shell-refused", "reject", "TINY_SANDBOX_DENIED", "EPERM", "seccomp"),
]  # "print on windows" was skipped: no step


@pytest.fixture
def reporter(tmp_path: Path) -> Path:
    """The reporter as `qualify init --journey playwright` writes it into a team's repository."""
    files = render(Choices(name="tiny", kind="appimage", display="xvfb", journey="playwright", example=False))
    path = tmp_path / "journey" / "qualify-reporter.js"
    path.parent.mkdir()
    path.write_text(files["journey/qualify-reporter.js"], encoding="utf-8")
    return path


def _events() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HERE / "events.json").read_text(encoding="utf-8"))
    return data


def _drive(reporter: Path, events: dict[str, Any], record: Path | str, tmp_path: Path) -> tuple[Any, str]:
    feed = tmp_path / "events.json"
    feed.write_text(json.dumps(events), encoding="utf-8")
    done = subprocess.run([str(NODE), str(HERE / "driver.js"), str(reporter), str(feed), str(record)],
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout.splitlines()[-1]), done.stdout + done.stderr


def test_the_reporter_writes_a_record_the_producer_reads(reporter: Path, tmp_path: Path) -> None:
    record = tmp_path / "record" / "record.json"
    record.parent.mkdir()
    ended, _ = _drive(reporter, _events(), record, tmp_path)
    # Written: the run's status is passed, so npx exits 0 and the verifier judges the error steps.
    assert ended == {"status": "passed"}
    parsed = load_app_record(AppJourneyRecord, record, what="journey record")
    assert (parsed.app_version, parsed.build_sha, parsed.platform) == ("2.0.0", "b" * 40, "linux")
    assert [(s.id, s.observed, s.code, s.errno, s.layer) for s in parsed.steps] == EXPECTED
    details = {s.id: s.detail for s in parsed.steps}
    assert details["open-absolute-refused"] == ("expected refusal TINY_PATH_DENIED not observed: failed: Error: "
                                                "expect(received).toBe(expected)")  # colour codes stripped
    assert list(record.parent.iterdir()) == [record]  # the temporary file was renamed, none left


def test_the_record_path_comes_from_the_environment(reporter: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    record = tmp_path / "from-env.json"
    monkeypatch.setenv("QUALIFY_RECORD", str(record))
    ended, _ = _drive(reporter, _events(), "-", tmp_path)
    assert ended == {"status": "passed"}
    assert load_app_record(AppJourneyRecord, record, what="journey record").steps[0].id == "open-document"


def _without_identity(events: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(events)
    for event in changed["events"]:
        event.pop("annotations", None)
    return changed


def _bad_sha(events: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(events)
    identity = changed["events"][0]["annotations"][0]
    identity["description"] = identity["description"].replace("b" * 40, "main")
    return changed


def _bad_step_id(events: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(events)
    changed["tests"][3]["annotations"][0]["description"] = "Save Is Durable"
    return changed


def _interrupted(events: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(events)
    changed["end"]["status"] = "interrupted"
    return changed


@pytest.mark.parametrize(("change", "message"), [
    (_without_identity, "no test said which build ran"),
    (_bad_sha, "does not name an app_version, a build_sha and a platform"),
    (_bad_step_id, "is not one the record can hold"),
    (_interrupted, "the run ended interrupted"),
])
def test_no_record_is_written_for_a_run_it_cannot_describe(reporter: Path, tmp_path: Path, change: Any,
                                                           message: str) -> None:
    record = tmp_path / "record.json"
    ended, output = _drive(reporter, change(_events()), record, tmp_path)
    assert ended == {"status": "failed"}
    assert message in output
    assert not record.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.json", "journey"]
