"""A reproducibility check: the same commit built a second time under varied conditions, and one digest.

The policy's ``[reproducible] required`` names the platforms whose build must
reproduce. The second build runs the same build command on a fresh ``git
archive`` export with the variations of Debian's reprotest that apply to a
build the producer runs (the clock is not faked, so "time" is only a later
start): another source folder, ``TMPDIR`` and ``HOME``, the other common umask,
another locale and a time zone far from the first's. The second build runs
beside the first, on a thread of its own, started a second later (so the two
never read the same clock second), and both have ended, their process trees
killed, before anything is signed, installed or run. Both outputs are hashed
before any operating-system code signing (a signature holds a time and a
certificate of its own). The build record carries both digests and the
variations; the verifier re-derives ``reproduced`` from the digests.

When the outputs differ, a bounded summary of where (diffoscope's, where it is
installed, after the first differing archive member) is written beside the
records, for people: it is never evidence.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from desktop_qualify.evidence_schemas import BuildReproduction, BuildVariation, utc_now
from desktop_qualify.qualify_archive import first_difference
from desktop_qualify.qualify_files import file_sha256

from ._build_run import BuildRun
from .processes import excerpt, run_bounded

# The varied values: reprotest's second locale and a time zone as far as can be from UTC.
SECOND_LOCALE = "fr_CH.UTF-8"
SECOND_TIMEZONE = "GMT-14"
# diffoscope on two bundles of tens of MiB takes under a minute here; its report is cut to this many bytes.
DIFFOSCOPE_TIMEOUT = 600
MAX_SUMMARY = 64 * 1024
SUMMARY_NAME = "build-reproduction.diff.txt"

# How much later than the first the second build starts: its "time" variation (the clock is not faked).
START_DELAY = 1.0

# (root, environment overrides, umask, cancel switch) -> the second run.
SecondRun = Callable[[Path, Mapping[str, str], int | None, threading.Event], BuildRun]


def current_umask() -> int:
    """This process's umask (the first build's): POSIX can only read it by setting it, so set it back at once."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def varied_conditions(first_env: Mapping[str, str], root: Path) -> tuple[dict[str, str], int | None,
                                                                          list[tuple[str, str, str]]]:
    """The second build's environment overrides and umask, and each variation as (name, first, second)."""
    home, temp = root / "home", root / "build-tmp"
    home.mkdir(parents=True)
    first_locale = first_env.get("LC_ALL") or first_env.get("LANG") or "unset"
    locale = SECOND_LOCALE if first_locale != SECOND_LOCALE else "C.UTF-8"
    overrides = {"HOME": str(home), "LC_ALL": locale, "LANG": locale, "TZ": SECOND_TIMEZONE}
    if sys.platform == "win32":
        overrides["USERPROFILE"] = str(home)
    variations = [
        ("tmpdir", first_env.get("TMPDIR", "unset"), str(temp)),
        ("home", first_env.get("HOME", first_env.get("USERPROFILE", "unset")), str(home)),
        ("locale", first_locale, locale),
        ("timezone", first_env.get("TZ", "unset"), SECOND_TIMEZONE),
    ]
    umask: int | None = None
    if sys.platform != "win32":
        mask = current_umask()
        umask = 0o002 if mask != 0o002 else 0o022
        variations.append(("umask", f"{mask:04o}", f"{umask:04o}"))
    return overrides, umask, variations


def difference_summary(first: Path, second: Path) -> str:
    """Where the two outputs differ: the first differing member, then diffoscope's report where installed."""
    lines = [f"first build:  {first}", f"second build: {second}",
             f"first difference: {first_difference(first, second) or 'none found member by member'}"]
    diffoscope = shutil.which("diffoscope")
    if diffoscope is None:
        lines.append("diffoscope is not installed here (Debian: apt-get install diffoscope): no detailed report")
    else:
        result = run_bounded([diffoscope, "--no-progress", "--text", "-", "--max-report-size", str(MAX_SUMMARY),
                              str(first), str(second)], timeout=DIFFOSCOPE_TIMEOUT, cwd=first.parent,
                             stdout_cap=MAX_SUMMARY, stderr_cap=4096)
        # diffoscope exits 1 when it found differences: that is its answer, not a failure.
        if result.timed_out or result.exit_code not in (0, 1):
            why = "timed out" if result.timed_out else f"exit {result.exit_code}"
            lines.append(f"diffoscope {why}: {excerpt(result.stderr, 400)}")
        else:
            lines += ["", "diffoscope:", result.stdout.decode("utf-8", errors="replace")]
    return "\n".join(lines)[:MAX_SUMMARY] + "\n"


class SecondBuild:
    """The reproducibility check's second build, running beside the first on a thread of its own.

    Made, it reads the varied conditions on the calling thread (reading the umask sets it for a moment, which
    no other thread may see) and starts the build; ``finish`` waits for it and returns the record; ``abandon``
    ends it, killing its process tree, when the first build or anything after it fails.
    """

    def __init__(self, *, first_env: Mapping[str, str], work: Path, run: SecondRun) -> None:
        # A deeper folder of another name: the build path is one of the conditions that must not show.
        self._root = work / "reproduce" / "second-build-elsewhere"
        self._overrides, self._umask, self._variations = varied_conditions(first_env, self._root)
        self._cancel = threading.Event()
        self._started_at = ""
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="second-build")
        # Started last: the thread reads what the lines above set.
        self._future = self._pool.submit(self._build, run)

    def _build(self, run: SecondRun) -> tuple[BuildRun, str, int] | None:
        if self._cancel.wait(START_DELAY):
            return None
        self._started_at, started = utc_now(), time.monotonic()
        second = run(self._root, self._overrides, self._umask, self._cancel)
        # Hashed here, beside the first build's hash on the main thread.
        digest = file_sha256(second.output)
        return second, digest, int((time.monotonic() - started) * 1000)

    def abandon(self) -> None:
        """End the second build (its process tree is killed) and wait for its thread; never raises."""
        self._cancel.set()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def finish(self, *, first: Path, first_started_at: str) -> tuple[BuildReproduction, str | None]:
        """Wait for the second build; the record of both digests, and where they differ (None if not)."""
        try:
            done = self._future.result()
        finally:
            self._pool.shutdown(wait=True)
        if done is None:  # pragma: no cover - only abandon() cancels, and it never calls finish()
            raise RuntimeError("the second build was cancelled")
        second, second_digest, duration_ms = done
        first_digest = file_sha256(first)
        variations = [("build-path", str(first.parent.parent / "source"), str(second.app_dir.parent)),
                      ("time", first_started_at, self._started_at), *self._variations]
        record = BuildReproduction(
            first_sha256=first_digest, second_sha256=second_digest, second_size=second.output.stat().st_size,
            variations=[BuildVariation(name=name, first=a[:200] or "empty", second=b[:200] or "empty")  # type: ignore[arg-type]
                        for name, a, b in variations],
            reproduced=first_digest == second_digest, duration_ms=duration_ms)
        return record, None if record.reproduced else difference_summary(first, second.output)
