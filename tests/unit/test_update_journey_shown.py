"""The update journey is shown: in the gate's job summary (``--summary``) and in the audit report (JSON, Markdown,
HTML, text), its previous release, upgrade, user state, rollback and downgrade rows, each judged by the
verifier's own rule; the app's words in them are escaped as every other evidence field is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.cli import CliRun
from support.update_evidence import evidence, sha_of

Qualify = Callable[[list[str]], CliRun]
STEPS = ["previous-release", "previous-install", "write-state", "upgrade-install", "upgrade-check", "upgrade-probe",
         "rollback-install", "rollback-check", "downgrade-check"]
# What an app could write as its version: Markdown and HTML that must stay text.
HOSTILE = "0.1.0<img src=x>|**x**"


def _hostile_version(update: dict[str, Any]) -> None:
    update["write_state"]["report"]["app_version"] = HOSTILE


def _lose_state(update: dict[str, Any]) -> None:
    update["upgrade_check"]["report"]["state_sha256"] = sha_of("an empty state")


def _outputs(qualify: Qualify, ev: Any, tmp_path: Path) -> tuple[CliRun, CliRun, dict[str, str]]:
    summary = tmp_path / "summary.md"
    gate = qualify(ev.verify_argv("--summary", str(summary)))
    out = {"summary": summary.read_text(encoding="utf-8")}
    files = {"json": tmp_path / "audit.json", "markdown": tmp_path / "audit.md", "html": tmp_path / "audit.html"}
    audit = qualify(["audit", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                     *(arg for kind, path in files.items() for arg in (f"--{kind}", str(path)))])
    out |= {kind: path.read_text(encoding="utf-8") for kind, path in files.items()}
    return gate, audit, out


def test_a_passing_journey_is_shown_step_by_step(qualify: Qualify, tmp_path: Path) -> None:
    ev = evidence(tmp_path / "run", edit=_hostile_version)
    gate, audit, out = _outputs(qualify, ev, tmp_path)
    assert gate.status == audit.status == 0, gate.text + audit.text
    (column,) = json.loads(out["json"])["runs"][0]["platforms"]
    rows = column["update"]
    assert [r["step"] for r in rows] == STEPS
    assert {r["part"] for r in rows} == {"previous", "upgrade", "state", "rollback", "downgrade"}
    assert all(r["outcome"] == "pass" for r in rows), rows
    assert "downgrade rule refuse CC_SKILL_STATE_NEWER" in rows[-1]["observed"]
    for kind in ("summary", "markdown"):
        assert "Update journey" in out[kind]
        for step in STEPS:
            assert f"`{step}`" in out[kind]
        assert "downgrade rule refuse CC\\_SKILL\\_STATE\\_NEWER" in out[kind]
        # The app's words are text: no tag, no bold, no extra table cell.
        assert re.search(r"(?<!\\)<img", out[kind]) is None
        assert "\\<img src=x\\>\\|\\*\\*x\\*\\*" in out[kind]
    assert "Update journey" in out["html"]
    assert "<img" not in out["html"]
    assert "&lt;img src=x&gt;|**x**" in out["html"]
    assert "update [" in audit.out
    assert "rollback-check" in audit.out


def test_state_lost_on_upgrade_is_the_failing_row(qualify: Qualify, tmp_path: Path) -> None:
    ev = evidence(tmp_path / "run", edit=_lose_state)
    gate, audit, out = _outputs(qualify, ev, tmp_path)
    assert gate.status == audit.status == 1
    rows = {r["step"]: r for r in json.loads(out["json"])["runs"][0]["platforms"][0]["update"]}
    assert rows["upgrade-check"]["outcome"] == "fail"
    assert rows["upgrade-check"]["part"] == "state"
    assert "the previous version wrote" in rows["upgrade-check"]["problem"]
    assert rows["rollback-check"]["outcome"] == "pass"
    line = next(line for line in out["summary"].splitlines() if "`upgrade-check`" in line)
    assert "| fail |" in line
    assert "fails" in line


def test_a_policy_without_update_shows_no_journey(qualify: Qualify, tmp_path: Path) -> None:
    ev = evidence(tmp_path / "run", policy_update=False, with_update=False)
    gate, _, out = _outputs(qualify, ev, tmp_path)
    assert gate.status == 0, gate.text
    assert "Update journey" not in out["summary"]
    assert json.loads(out["json"])["runs"][0]["platforms"][0]["update"] == []


def test_a_required_journey_that_is_absent_is_a_row(qualify: Qualify, tmp_path: Path) -> None:
    ev = evidence(tmp_path / "run", with_update=False)
    gate, _, out = _outputs(qualify, ev, tmp_path)
    assert gate.status == 1
    (row,) = json.loads(out["json"])["runs"][0]["platforms"][0]["update"]
    assert (row["step"], row["part"], row["outcome"]) == ("update-journey", "journey", "missing")
    assert "`update-journey`" in out["summary"]
