"""A producer job writes into a staging folder; its output replaces the previous run's only once it has emitted.

Until the statement is signed, the output folder (``--out``) keeps the last
run's evidence, artifact and records untouched: a refused gate, a failed
build, a kill or a full disk loses nothing. Once the statement is emitted,
this platform's files are moved into place, each by a rename in the same file
system, and what the earlier run left of this platform is removed:

* its statement and provenance, and the aggregate signed over them (it binds the earlier
  statement, so it could only mislead);
* the temporary files of interrupted atomic writes of either;
* its artifacts (``<app>-*-<platform>-*``) and partial archives;
* its records folder.

Other platforms' files in the same output folder are left alone.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_files import discard_leftovers, remove_output

STAGING_PREFIX = ".staging-"


def staging_folder(out: Path, platform: str) -> Path:
    """Where one platform's job writes until it has emitted: hidden, inside ``out``, so a rename stays put."""
    return out / f"{STAGING_PREFIX}{platform}"


@dataclass(frozen=True)
class Staged:
    """What a job emitted into its staging folder, and where it goes."""

    out: Path
    staging: Path
    platform: str
    app: str
    statement: Path
    archive: Path
    aggregate_name: str
    # None for the run job's unsigned run, which has no provenance (the signing job signs both).
    provenance: Path | None
    # Where the statement goes under ``out``: evidence/, or unsigned/ for the run job's unsigned run.
    statement_folder: str = "evidence"


def _environment(what: str, exc: OSError) -> QualificationError:
    return QualificationError(Code.ENVIRONMENT, f"{what} ({exc.strerror or exc})")


def _replace_tree(new: Path, target: Path) -> None:
    aside = target.with_name(f".{target.name}.previous")
    shutil.rmtree(aside, ignore_errors=True)
    if target.exists() or target.is_symlink():
        target.rename(aside)
    new.rename(target)
    shutil.rmtree(aside, ignore_errors=True)


def _earlier_artifacts(folder: Path, app: str, platform: str) -> list[Path]:
    if not folder.is_dir():
        return []
    return [*folder.glob(f"{app}-*-{platform}-*"), *folder.glob(f".{app}-*-{platform}-*.partial")]


def publish(staged: Staged) -> tuple[Path, Path]:
    """Move the emitted statement, artifact and records into ``out``; returns the statement's and archive's paths."""
    out, name = staged.out, staged.statement.name
    evidence, artifacts = out / staged.statement_folder, out / "artifacts"
    try:
        evidence.mkdir(parents=True, exist_ok=True)
        artifacts.mkdir(parents=True, exist_ok=True)
        (out / "records").mkdir(parents=True, exist_ok=True)
        # The earlier aggregate binds the earlier statement: removed first, so no moment pairs it with this one.
        remove_output(out / "evidence" / staged.aggregate_name)
        for earlier in _earlier_artifacts(artifacts, staged.app, staged.platform):
            if earlier.name != staged.archive.name:
                earlier.unlink(missing_ok=True)
        archive = artifacts / staged.archive.name
        staged.archive.replace(archive)
        discard_leftovers(evidence / name)
        if staged.provenance is not None:
            discard_leftovers(evidence / staged.provenance.name)
            staged.provenance.replace(evidence / staged.provenance.name)
        statement = evidence / name
        staged.statement.replace(statement)
        records = staged.staging / "records" / staged.platform
        if records.is_dir():
            _replace_tree(records, out / "records" / staged.platform)
    except OSError as exc:
        raise _environment(f"{out}: cannot move this run's output into place", exc) from exc
    with contextlib.suppress(OSError):
        shutil.rmtree(staged.staging)
    return statement, archive
