"""`qualify ARGS...` in a child process, with fault-injection hooks chosen through the environment.

Run as a script (``python producer_child.py produce --policy ...``). Without
any FAULTS_* variable it is exactly ``python -m desktop_qualify.qualify_cli``. The hooks touch
as little of the producer as they can, and only from the outside:

* ``FAULTS_CACHED_OUTPUT=FILE``: the app's build command (its own
  ``tools/build_release.py``: PyInstaller, then its archive) is replaced by a
  command that copies FILE into the build's output folder, the archive that
  command made earlier in this test session from the same commit. The copy
  runs where the build would: through the job's ``StageRunner``, confined as
  the build stage, with FILE bound read-only, so the stage's confinement is
  observed and recorded for real. Everything else in the build (git archive of
  the gated SHA, source digest, the version commands, the output glob, OS
  signing, the artifact's atomic placement and its digest) runs for real. It
  keeps a kill-per-stage suite from paying for one real build per stage; the
  kill during the build and the final rerun use the real one.
* ``FAULTS_HOLD_AT=STAGE`` with ``FAULTS_HOLD_MARKER=FILE``: once the progress
  line for STAGE's start is written, create FILE and sleep until killed. A
  stage that takes milliseconds (gate, sign and emit) can then be killed inside
  it every time instead of only when the race is won.
* ``FAULTS_FSIZE_AT_EMIT=BYTES``: just before the emit (inside the "sign and
  emit" stage, once the artifact is signed), limit the size of any file this
  process writes (RLIMIT_FSIZE, SIGXFSZ ignored), as a disk that fills up
  while the job runs would.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

StageRun = Callable[..., Any]
BUILD_SCRIPT = "tools/build_release.py"
# Run confined in place of the app's build command: copy the cached output into the build's output folder.
_COPY = "import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])"


def cached_build(output: Path, real_run: StageRun) -> StageRun:
    """A stand-in for ``StageRunner.run`` that answers the app's build command from a cached build.

    Any other command runs as it is. The build command is replaced by a copy of ``output`` into the build's
    ``--out`` folder, run by the real ``StageRunner.run`` in the build's own sandbox (``output`` added to what
    it reads): the stage is confined, read back and recorded as the real build's would be.
    """

    def run(self: Any, argv: Sequence[str], sandbox: Any, **kwargs: Any) -> Any:
        if BUILD_SCRIPT not in argv:
            return real_run(self, argv, sandbox, **kwargs)
        out = Path(argv[list(argv).index("--out") + 1])
        copy = [sys.executable, "-c", _COPY, str(output), str(out / output.name)]
        return real_run(self, copy, dataclasses.replace(sandbox, readable=(*sandbox.readable, output)), **kwargs)

    return run


def _use_cached_build(output: Path) -> None:
    from desktop_qualify.producer.confinement import StageRunner

    StageRunner.run = cached_build(output, StageRunner.run)  # type: ignore[method-assign]


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
    from desktop_qualify.producer import _sign_run

    real_emit = _sign_run.emit

    def emit(**kwargs: Any) -> Any:
        # CPython already ignores SIGXFSZ; said again because the test depends on it: a write past the
        # limit must fail with EFBIG, not kill the process.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        return real_emit(**kwargs)

    _sign_run.emit = emit


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
