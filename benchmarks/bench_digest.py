"""Streaming SHA-256 of a 1 GiB artifact vs `openssl dgst -sha256`, and its peak memory vs file size."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import Row, median_time, run_process
from desktop_qualify.qualify_files import file_sha256

MIB = 1 << 20
BIG = 1024 * MIB
SMALL = 64 * MIB
REPEAT = 3
# "Flat": a 16x larger file may grow the child's peak RSS by at most this much.
FLAT_SLACK_KIB = 4 * 1024

_CHILD = (
    "import resource, sys\n"
    "from pathlib import Path\n"
    "from desktop_qualify.qualify_files import file_sha256\n"
    "file_sha256(Path(sys.argv[1]))\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
)


def _write(path: Path, size: int) -> None:
    """Real (not sparse) bytes, written fast: one random MiB repeated."""
    block = os.urandom(MIB)
    with path.open("wb") as handle:
        for _ in range(size // MIB):
            handle.write(block)


def _child_maxrss_kib(path: Path) -> int:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, check=True)
    value = int(out.stdout.strip())
    # ru_maxrss is KiB on Linux, bytes on macOS.
    return value // 1024 if sys.platform == "darwin" else value


def bench() -> list[Row]:
    """This module's figures, each a row of the bench table."""
    openssl = shutil.which("openssl")
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-digest-") as tmp:
        big, small = Path(tmp) / "artifact-1g.bin", Path(tmp) / "artifact-64m.bin"
        _write(big, BIG)
        _write(small, SMALL)
        file_sha256(big)  # warm the page cache so both sides read from memory
        ours = median_time(lambda: file_sha256(big), REPEAT)
        if openssl is None:
            rows.append(Row("file_sha256 throughput (1 GiB)", "openssl dgst -sha256", None, "x", ">= 0.90x", None,
                            "openssl not on PATH; not measured", {"ours_s": ours}))
        else:
            base = median_time(run_process([openssl, "dgst", "-sha256", str(big)]), REPEAT)
            ratio = base / ours  # throughput ratio: ours / openssl's
            rows.append(Row("file_sha256 throughput (1 GiB)", "openssl dgst -sha256 (same file)", ratio, "x",
                            ">= 0.90x", ratio >= 0.9,
                            f"median of {REPEAT}: ours {BIG / MIB / ours:.0f} MiB/s, openssl {BIG / MIB / base:.0f}"
                            " MiB/s; ours in process, openssl as a process",
                            {"ours_s": ours, "openssl_s": base}))
        rss_small, rss_big = _child_maxrss_kib(small), _child_maxrss_kib(big)
        growth = rss_big - rss_small
        rows.append(Row("file_sha256 peak RSS growth, 64 MiB -> 1 GiB", "same child at 64 MiB", growth / 1024, "MiB",
                        f"<= {FLAT_SLACK_KIB // 1024} MiB (flat)", growth <= FLAT_SLACK_KIB,
                        f"child ru_maxrss {rss_small / 1024:.1f} MiB at 64 MiB, {rss_big / 1024:.1f} MiB at 1 GiB",
                        {"maxrss_64m_kib": rss_small, "maxrss_1g_kib": rss_big}))
    return rows
