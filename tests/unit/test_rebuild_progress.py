"""`qualify rebuild`'s long build shows its progress on standard error, timestamped in a log, and never in the
result on standard output."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.qualify_policy import host_platform
from support.checkout import commit_all
from support.evidence_factory import PlatformSpec, artifact_name, make_evidence
from support.rebuild_app import WHEN, app_checkout, built, rebuild

pytestmark = pytest.mark.skipif(host_platform() != "linux", reason="the small app's build writes a Linux archive")

STAMP = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z"


def test_the_rebuilds_progress_is_timestamped_on_stderr_only(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path, committed_layout=True)
    app = app_checkout(ev)
    sha = commit_all(ev.root, "the app", date=WHEN)
    archive, digest = built(ev, app, sha, tmp_path / "producer-work")
    for old in ev.artifacts_dir.iterdir():
        old.unlink()
    (ev.artifacts_dir / artifact_name("linux", sha)).write_bytes(archive.read_bytes())
    ev.sha, ev.platforms = sha, []
    ev.write_platform(PlatformSpec("linux", edit=lambda pred: pred["build"].update(source_digest=digest)))
    ev.write_aggregate()
    result = rebuild(qualify, ev)
    assert result.status == 0, result.text
    assert "REBUILT:" in result.out
    assert "[rebuild linux]" not in result.out
    lines = [line for line in result.err.splitlines() if "[rebuild linux]" in line]
    assert re.fullmatch(rf"{STAMP} \[rebuild linux\] build\s+\.\.\.", lines[0]), lines
    assert re.fullmatch(rf"{STAMP} \[rebuild linux\] build\s+skillhost-0\.1\.0-linux\.tar\.gz \d+ bytes "
                        rf"sha256=[0-9a-f]{{16}}  \(\d+\.\ds\)", lines[-1]), lines
