"""A reproducibility check: the same commit built a second time under varied conditions, and one digest.

The policy's ``[reproducible] required`` names the platforms whose build must
reproduce. The second build runs the same build command on a fresh ``git
archive`` export with the variations of Debian's reprotest that apply to a
build the producer runs (the clock is not faked, so "time" is only a later
start): another source folder, ``TMPDIR`` and ``HOME``, the other common umask,
another locale and a time zone far from the first's. Both outputs are hashed
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
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from desktop_qualify.evidence_schemas import BuildReproduction, BuildVariation, utc_now
from desktop_qualify.qualify_archive import first_difference
from desktop_qualify.qualify_files import file_sha256

from ._process import excerpt, run_bounded

if TYPE_CHECKING:
    from ._build import BuildRun

# The varied values: reprotest's second locale and a time zone as far as can be from UTC.
SECOND_LOCALE = "fr_CH.UTF-8"
SECOND_TIMEZONE = "GMT-14"
# diffoscope on two bundles of tens of MiB takes under a minute here; its report is cut to this many bytes.
DIFFOSCOPE_TIMEOUT = 600
MAX_SUMMARY = 64 * 1024
SUMMARY_NAME = "build-reproduction.diff.txt"

# (root, environment overrides, umask) -> the second run.
SecondRun = Callable[[Path, Mapping[str, str], int | None], "BuildRun"]


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


def second_build(*, first: Path, first_started_at: str, first_env: Mapping[str, str], work: Path,
                 run: SecondRun) -> tuple[BuildReproduction, str | None]:
    """Build again under varied conditions; the record of both digests, and where they differ (None if not)."""
    # A deeper folder of another name: the build path is one of the conditions that must not show.
    root = work / "reproduce" / "second-build-elsewhere"
    started_at, started = utc_now(), time.monotonic()
    overrides, umask, variations = varied_conditions(first_env, root)
    second = run(root, overrides, umask)
    first_digest, second_digest = file_sha256(first), file_sha256(second.output)
    variations[:0] = [("build-path", str(first.parent.parent / "source"), str(second.app_dir.parent)),
                      ("time", first_started_at, started_at)]
    record = BuildReproduction(
        first_sha256=first_digest, second_sha256=second_digest, second_size=second.output.stat().st_size,
        variations=[BuildVariation(name=name, first=a[:200] or "empty", second=b[:200] or "empty")  # type: ignore[arg-type]
                    for name, a, b in variations],
        reproduced=first_digest == second_digest, duration_ms=int((time.monotonic() - started) * 1000))
    return record, None if record.reproduced else difference_summary(first, second.output)
