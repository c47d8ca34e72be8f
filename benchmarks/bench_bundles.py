"""Auditing 1,000 local qualification bundles in one call (parallel across cores) vs one process per bundle."""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

from _common import Row, run_process, script
from _evidence import evidence
from desktop_qualify.consumer._bundles import audit_bundles
from desktop_qualify.qualify_bundle import write_bundle
from desktop_qualify.qualify_policy import load_policy

COUNT = 1000
PROCESS_SAMPLE = 20


def bench() -> list[Row]:
    """This module's figures, each a row of the bench table."""
    with tempfile.TemporaryDirectory(prefix="bench-bundles-") as name:
        tmp = Path(name)
        ev = evidence(tmp / "run", committed_layout=True)
        policy = load_policy(ev.policy_path)
        first = tmp / "b0000.qualify-bundle.zip"
        write_bundle(policy, ev.evidence_dir, first)
        # Copies of one run: an auditor's keyring vouches for one machine's keys. Each copy is opened and
        # verified in full; the report counts them as one run.
        bundles = [first, *(shutil.copyfile(first, tmp / f"b{i:04d}.qualify-bundle.zip") for i in range(1, COUNT))]
        started = time.perf_counter()
        decisions = audit_bundles([Path(b) for b in bundles], policy)
        in_process = time.perf_counter() - started
        if any(d.decision.decision != "QUALIFIED" for d in decisions):
            bad = next(d for d in decisions if d.decision.decision != "QUALIFIED")
            raise RuntimeError(f"benchmark bundles are not QUALIFIED: {bad.decision.reasons[:2]}")
        qualify = script("qualify")
        times = []
        for bundle in bundles[:PROCESS_SAMPLE]:
            call = run_process([qualify, "audit", "--policy", str(ev.policy_path), "--bundle", str(bundle)])
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
    per_process = statistics.median(times)
    ratio = per_process * COUNT / in_process
    return [Row(f"audit {COUNT:,} local bundles in one call (parallel)",
                f"one `qualify audit --bundle` process each ({PROCESS_SAMPLE} measured, x{COUNT // PROCESS_SAMPLE})",
                ratio, "x", ">= 50x", ratio >= 50,
                f"{in_process:.1f} s in all ({COUNT / in_process:.0f} bundles/s), processes "
                f"{per_process * 1e3:.0f} ms each -> {per_process * COUNT:.0f} s",
                {"in_process_s": in_process, "per_process_s": per_process, "bundles_per_s": COUNT / in_process})]
