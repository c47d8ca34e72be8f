"""The app's committed source: ``git archive`` of one commit, and the digest of that tree.

The producer builds from this export, never from the work tree, and records
the tree's digest as ``build.source_digest``. Anyone holding a checkout that
contains the commit can export it again and recompute the digest, so the
record is a fact they check rather than the producer's word (the release gate,
``qualify audit`` and ``qualify rebuild`` do). Both sides use this one export,
so the same commit always gives the same digest.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
import tempfile
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, QualificationError

from ._tree import manifest_sha256, tree_manifest

MAX_SOURCE_ARCHIVE = 256 * 1024 * 1024
_GIT_TIMEOUT = 300


def app_relative_path(repo: Path, app_source: Path) -> str:
    """The app folder's path inside the checkout, as ``git archive`` names it (POSIX, no leading slash)."""
    try:
        return app_source.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"{app_source} is outside the repository {repo}") from exc


def _archive(repo: Path, sha: str, relative: str, code: Code) -> bytes:
    argv = ["git", "-C", str(repo), "archive", "--format=tar", sha, "--", relative]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=_GIT_TIMEOUT, check=False, shell=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise QualificationError(code, f"git archive of {relative} at {sha[:12]} could not run: {exc}") from exc
    if done.returncode != 0 or len(done.stdout) > MAX_SOURCE_ARCHIVE:
        why = done.stderr.decode("utf-8", errors="replace").strip()[:300] or "larger than the cap"
        raise QualificationError(code, f"git archive of {relative} at {sha[:12]} failed: {why}",
                                 hint="the app source must be committed, and the checkout must hold the commit")
    return done.stdout


def export_committed_tree(repo: Path, sha: str, relative: str, dest: Path, *,
                          code: Code = Code.ENVIRONMENT) -> Path:
    """Extract the folder ``relative`` as committed at ``sha`` into ``dest``; return the folder there.

    ``code``: the code a failure is reported with (the producer's is a failed build).
    """
    data = _archive(repo, sha, relative, code)
    with tarfile.open(fileobj=io.BytesIO(data)) as tf:
        # The "data" filter refuses absolute names, escapes and devices, and drops set-id bits.
        try:
            tf.extractall(dest, filter="data")
        except tarfile.FilterError as exc:
            # A committed member the filter refuses (a link to an absolute path or out of the export): the
            # caller's coded refusal, never an internal error.
            raise QualificationError(code, f"{relative} at {sha[:12]} holds a member the export refuses: "
                                           f"{exc!s:.300}",
                                     hint="the app folder's committed links must stay inside it") from exc
    folder = dest / relative
    if not folder.is_dir():
        raise QualificationError(code, f"{relative} is not a folder in commit {sha[:12]}")
    return folder


def tree_sha256(folder: Path) -> str:
    """``build.source_digest`` of an exported app folder: the digest of its manifest."""
    return manifest_sha256(tree_manifest(folder))


def committed_source_digest(repo: Path, sha: str, relative: str) -> str:
    """The source digest a build of ``relative`` at ``sha`` must record, recomputed from ``repo``."""
    with tempfile.TemporaryDirectory(prefix="qualify-source-") as scratch:
        return tree_sha256(export_committed_tree(repo, sha, relative, Path(scratch)))


def commit_epoch(repo: Path, sha: str, *, code: Code = Code.ENVIRONMENT) -> int:
    """The commit's time in seconds since the epoch: the build's ``SOURCE_DATE_EPOCH`` (reproducible-builds.org).

    The committer's time, which the commit's bytes hold: every build of the commit gets the same value. Only a
    commit is read (``^{commit}``): ``git show`` of a blob prints its bytes, which could pass for a time.
    """
    argv = ["git", "-C", str(repo), "show", "-s", "--format=%ct", f"{sha}^{{commit}}", "--"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, shell=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise QualificationError(code, f"git show of {sha[:12]} could not run: {exc}") from exc
    text = done.stdout.strip()
    if done.returncode != 0 or not (text.isascii() and text.isdigit()):  # int() refuses digits such as '²'
        raise QualificationError(code, f"the time of commit {sha[:12]} cannot be read: {done.stderr.strip()[:300]}")
    return int(text)
