"""`qualify ARGS...` in a child process, with fault-injection hooks chosen through the environment.

Run as a script (``python producer_child.py produce --policy ...``). Without
any FAULTS_* variable it is exactly ``python -m desktop_qualify.qualify_cli``. The hooks touch
as little of the producer as they can, and only from the outside:

* ``FAULTS_CACHED_BUNDLE=DIR`` and ``FAULTS_CACHED_ARCHIVE=FILE``: the
  PyInstaller child of the build stage is replaced by a copy of DIR, a bundle
  PyInstaller built earlier in this test session from the same commit, and
  packing it by a copy of FILE, the archive the real pack made of that bundle
  (pack is reproducible: same bundle, same bytes). Everything else in the
  build (git archive of the gated SHA, source digest, OS signing, the
  archive's atomic placement and its digest) runs for real. It keeps a
  kill-per-stage suite from paying for one real build per stage (PyInstaller
  ~10 s, packing ~1 s); the kill during the build and the final rerun
  use the real ones.
* ``FAULTS_HOLD_AT=STAGE`` with ``FAULTS_HOLD_MARKER=FILE``: once the progress
  line for STAGE's start is written, create FILE and sleep until killed. A
  stage that takes milliseconds (gate, sign, emit) can then be killed inside
  it every time instead of only when the race is won.
* ``FAULTS_FSIZE_AT_EMIT=BYTES``: just before the emit stage, limit the size of
  any file this process writes (RLIMIT_FSIZE, SIGXFSZ ignored), as a disk
  that fills up while the job runs would.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RunBounded = Callable[..., Any]
Pack = Callable[[Path, Path], None]


def cached_build(bundle: Path, archive: Path, real_run_bounded: RunBounded) -> tuple[RunBounded, Pack]:
    """Stand-ins for producer._build's ``run_bounded`` (PyInstaller only) and ``pack``, from a cached build."""

    def run_bounded(argv: list[str], **kwargs: Any) -> Any:
        if "PyInstaller" not in argv:
            return real_run_bounded(argv, **kwargs)
        from desktop_qualify.producer._process import ProcessResult

        dist = Path(argv[argv.index("--distpath") + 1])
        shutil.copytree(bundle, dist / bundle.name, symlinks=True)
        return ProcessResult(exit_code=0, timed_out=False, stdout=b"", stderr=b"", stdout_truncated=False,
                             duration_ms=0)

    def pack(bundle_dir: Path, target: Path) -> None:
        if bundle_dir.name != bundle.name:
            raise AssertionError(f"asked to pack {bundle_dir}, not a copy of {bundle}")
        shutil.copyfile(archive, target)

    return run_bounded, pack


def _use_cached_build(bundle: Path, archive: Path) -> None:
    from desktop_qualify.producer import _build

    _build.run_bounded, _build.pack = cached_build(bundle, archive, _build.run_bounded)  # type: ignore[assignment]


def _hold_at(stage: str, marker: Path) -> None:
    from desktop_qualify.producer._progress import Progress

    real_say = Progress.say
    start_line = f"{stage:<13} ..."

    def say(self: Progress, text: str) -> None:
        real_say(self, text)
        if text == start_line:
            marker.touch()
            time.sleep(3600)

    Progress.say = say  # type: ignore[method-assign]


def _limit_file_size_at_emit(limit: int) -> None:
    from desktop_qualify.producer import _pipeline

    real_emit = _pipeline.emit

    def emit(**kwargs: Any) -> Path:
        # CPython already ignores SIGXFSZ; said again because the test depends on it: a write past the
        # limit must fail with EFBIG, not kill the process.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        return real_emit(**kwargs)

    _pipeline.emit = emit


def main() -> int:
    if bundle := os.environ.get("FAULTS_CACHED_BUNDLE"):
        _use_cached_build(Path(bundle), Path(os.environ["FAULTS_CACHED_ARCHIVE"]))
    if stage := os.environ.get("FAULTS_HOLD_AT"):
        _hold_at(stage, Path(os.environ["FAULTS_HOLD_MARKER"]))
    if limit := os.environ.get("FAULTS_FSIZE_AT_EMIT"):
        _limit_file_size_at_emit(int(limit))
    from desktop_qualify.qualify_cli import main as qualify_main

    return qualify_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
