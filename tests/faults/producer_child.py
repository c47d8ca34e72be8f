"""`qualify ARGS...` in a child process, with fault-injection hooks chosen through the environment.

Run as a script (``python producer_child.py produce --policy ...``). Without
any FAULTS_* variable it is exactly ``python -m desktop_qualify.qualify_cli``. The hooks touch
as little of the producer as they can, and only from the outside:

* ``FAULTS_CACHED_OUTPUT=FILE``: the app's build command (its own
  ``tools/build_release.py``: PyInstaller, then its archive) is replaced by a
  copy of FILE into the build's output folder, the archive that command made
  earlier in this test session from the same commit. Everything else in the
  build (git archive of the gated SHA, source digest, the version commands, the
  output glob, OS signing, the artifact's atomic placement and its digest)
  runs for real. It keeps a kill-per-stage suite from paying for one real
  build per stage; the kill during the build and the final rerun use the
  real one.
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
BUILD_SCRIPT = "tools/build_release.py"


def cached_build(output: Path, real_run_bounded: RunBounded) -> RunBounded:
    """A stand-in for producer._build's ``run_bounded`` that answers the app's build command from a cached build."""

    def run_bounded(argv: list[str], **kwargs: Any) -> Any:
        if BUILD_SCRIPT not in argv:
            return real_run_bounded(argv, **kwargs)
        from desktop_qualify.producer._process import ProcessResult

        out = Path(argv[argv.index("--out") + 1])
        shutil.copyfile(output, out / output.name)
        return ProcessResult(exit_code=0, timed_out=False, stdout=b"", stderr=b"", stdout_truncated=False,
                             duration_ms=0)

    return run_bounded


def _use_cached_build(output: Path) -> None:
    from desktop_qualify.producer import _build

    _build.run_bounded = cached_build(output, _build.run_bounded)  # type: ignore[assignment]


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

    def emit(**kwargs: Any) -> Any:
        # CPython already ignores SIGXFSZ; said again because the test depends on it: a write past the
        # limit must fail with EFBIG, not kill the process.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        return real_emit(**kwargs)

    _pipeline.emit = emit


def main() -> int:
    if output := os.environ.get("FAULTS_CACHED_OUTPUT"):
        _use_cached_build(Path(output))
    if stage := os.environ.get("FAULTS_HOLD_AT"):
        _hold_at(stage, Path(os.environ["FAULTS_HOLD_MARKER"]))
    if limit := os.environ.get("FAULTS_FSIZE_AT_EMIT"):
        _limit_file_size_at_emit(int(limit))
    from desktop_qualify.qualify_cli import main as qualify_main

    return qualify_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
