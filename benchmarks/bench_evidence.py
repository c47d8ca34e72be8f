"""Benchmarks of the hot paths, each printed as a ratio (or a figure) against a named baseline.

Run with `nox -s bench`. Each figure is a median, its baseline measured in the
same run. Benchmarks are not tests: no absolute time is asserted; each line
says whether its target was met or missed, and the run exits 0 either way
(exit 1 only when a benchmark could not run at all). The table is written to
`bench.json` at the repository root (git-ignored).

Figures (modules alongside this file):

- bench_digest: streaming `file_sha256` of a 1 GiB file vs `openssl dgst -sha256`
  (throughput, >= 0.9x) and peak RSS of a child at 64 MiB vs 1 GiB (flat);
- bench_verify: `verify_release` of one local qualification vs the bare calls it
  rests on: keyring load, Ed25519 verifies, json.loads, the artifact's SHA-256
  (<= 1.5x); 1,000 qualifications in one process vs one `qualify verify`
  process each (>= 50x);
- bench_sigstore: the same for one GitHub-mode qualification vs sigstore-python's
  `Verifier.verify_dsse` over each bundle (<= 1.5x);
- bench_startup: `qualify --help` vs `python3 -c pass` (<= 4x), one local
  `qualify verify` process (<= 0.5 s), the frozen bundle's worker start (<= 150 ms);
- bench_bundles: 1,000 local bundles audited in one call (parallel across cores) vs
  one `qualify audit --bundle` process each (>= 50x);
- bench_install: the archive and deb installers' time per GiB (a ~256 MiB payload) vs `tar -xzf` and
  `dpkg-deb -x` of the same file (<= 2x);
- bench_sizes: bytes of each statement vs `max_statement_bytes`;
- bench_worker_sandbox: the worker sandbox's cost, layer by layer, and the source worker's start
  with and without it;
- bench_confinement: one app stage's command started through bubblewrap vs bare (the added time per stage,
  <= 100 ms);
- bench_parse: bounded `load_json` vs `json.loads`, `verify_envelope` vs raw Ed25519;
- bench_journey: the reference app's journey stage at HEAD vs at a named commit before the skill host's third
  round of steps (<= 1.5x);
- bench_rerun: a rerun of `nox -s qualify` vs its first run in a scratch clone (<= 0.5x), and the
  producer's own time, `qualify produce` minus the app's build command (<= 5 s).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_bundles
import bench_confinement
import bench_digest
import bench_install
import bench_journey
import bench_parse
import bench_rerun
import bench_sigstore
import bench_sizes
import bench_startup
import bench_verify
import bench_worker_sandbox
from _common import ROOT, Row

OUTPUT = ROOT / "bench.json"


def machine() -> dict[str, object]:
    """What the figures were measured on: core count, CPU model, platform and Python version."""
    model = "unknown"
    with_cpuinfo = Path("/proc/cpuinfo")
    if with_cpuinfo.is_file():
        for line in with_cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    return {"nproc": os.cpu_count(), "cpu": model, "platform": platform.platform(),
            "python": sys.version.split()[0]}


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "of bound":
        return f"{value:.2%}"
    return f"{value:.3g} {unit}"


def print_table(rows: list[Row]) -> None:
    """The bench table, one line per figure with its result, and its note under it."""
    print(f"{'figure':<62} {'baseline':<58} {'measured':>10} {'target':>18}  result")
    for row in rows:
        result = {True: "target met", False: "target MISSED", None: "not measured"}[row.met]
        print(f"{row.figure:<62} {row.baseline:<58} {_fmt(row.value, row.unit):>10} {row.target:>18}  {result}")
        if row.note:
            print(f"    {row.note}")


NAMES = ("digest", "verify", "start-up", "sigstore verify", "bundles", "worker", "worker sandbox", "confinement",
         "install", "sizes", "parse", "rerun", "journey")


def main(argv: list[str]) -> int:
    """Run the named benchmarks (all by default), print the table, write it as JSON; 1 if one could not run."""
    # `nox -s bench -- rerun sizes`: only the named benchmarks (all by default).
    unknown = sorted(set(argv) - set(NAMES))
    if unknown:
        print(f"unknown benchmark {', '.join(unknown)}; choose from: {', '.join(NAMES)}", file=sys.stderr)
        return 2
    rows: list[Row] = []
    failed = 0
    started = time.perf_counter()

    def run(name: str, fn: Callable[[], list[Row]]) -> None:
        nonlocal failed
        if argv and name not in argv:
            return
        t0 = time.perf_counter()
        try:
            rows.extend(fn())
        except Exception as exc:  # a broken benchmark is reported, and fails the run
            failed += 1
            traceback.print_exc()
            rows.append(Row(name, "-", None, "", "-", None, f"benchmark error: {exc.__class__.__name__}: {exc}"))
        print(f"[bench] {name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)

    per_process: list[float] = []

    def verify() -> list[Row]:
        found, seconds = bench_verify.bench()
        per_process.append(seconds)
        return found

    run("digest", bench_digest.bench)
    run("verify", verify)
    run("start-up", lambda: [bench_startup.bench_help(),
                             *([bench_startup.verify_row(per_process[0])] if per_process else [])])
    run("sigstore verify", bench_sigstore.bench)
    run("bundles", bench_bundles.bench)
    run("worker", lambda: [bench_startup.bench_worker()])
    run("worker sandbox", bench_worker_sandbox.bench)
    run("confinement", bench_confinement.bench)
    run("install", bench_install.bench)
    run("sizes", bench_sizes.bench)
    run("parse", bench_parse.bench)
    run("rerun", bench_rerun.bench)
    run("journey", bench_journey.bench)
    print()
    print_table(rows)
    met = sum(r.met is True for r in rows)
    missed = sum(r.met is False for r in rows)
    print(f"\n{met} met, {missed} missed, {sum(r.met is None for r in rows)} not measured; "
          f"{time.perf_counter() - started:.0f} s; machine: {machine()}")
    OUTPUT.write_text(json.dumps({"machine": machine(), "rows": [r.as_json() for r in rows]}, indent=2) + "\n",
                      encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
