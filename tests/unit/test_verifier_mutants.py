"""qualify_verify/_verifier.py, ``Verdict.rows``: the decision table has one row per required platform, in the
policy's order, whatever the rows before it held; a required platform whose statement is absent gets its row of
``missing`` cells and the platforms after it still get theirs. Written for the mutants of the module that survived
the verifier's tests (docs/mutation.md).
"""

from __future__ import annotations

from pathlib import Path

from desktop_qualify.evidence_schemas import Code
from desktop_qualify.qualify_verify import verify_release
from support.evidence_factory import make_evidence

COLUMNS = ("gate", "build", "signature", "install", "probe", "journey", "candidate")


def test_an_absent_first_platform_keeps_the_rows_of_the_platforms_after_it(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=["linux", "windows"])
    ev.platform_file("linux").unlink()
    verdict = verify_release(ev.policy, [ev.evidence_dir], ev.artifact_paths)
    assert not verdict.qualified
    assert Code.EVIDENCE_MISSING in {r.code for r in verdict.reasons}
    rows = verdict.rows()
    assert [row.platform for row in rows] == ["linux", "windows"]
    linux, windows = rows
    assert (linux.artifact, linux.sha256) == (None, None)
    assert [getattr(linux, column) for column in COLUMNS] == ["missing"] * len(COLUMNS)
    windows_written = next(w for w in ev.platforms if w.spec.platform == "windows")
    assert windows_written.predicate is not None
    artifact = windows_written.predicate.build.artifact
    assert (windows.artifact, windows.sha256) == (artifact.name, artifact.sha256)
    assert [getattr(windows, column) for column in COLUMNS] == ["pass"] * len(COLUMNS)


def test_an_audit_of_an_absent_first_platform_keeps_every_row_and_no_candidate_cell(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=["linux", "macos", "windows"])
    ev.platform_file("linux").unlink()
    verdict = verify_release(ev.policy, [ev.evidence_dir], None)
    rows = verdict.rows()
    assert [row.platform for row in rows] == ["linux", "macos", "windows"]
    assert [row.candidate for row in rows] == ["n/a", "n/a", "n/a"]
    assert [row.gate for row in rows] == ["missing", "pass", "pass"]
