"""Measure the system calls the skill host's workers make once their seccomp filter is installed.

Runs a command (by default the app's journey from source) under ``strace -f``
and reads, for every process that installed a filter, each call it made after
the ``PR_SET_SECCOMP`` and the errno of each refused one. ptrace sees a call
before seccomp decides, so a call the filter refuses shows up as ``EPERM``:
the trace of the allow-list filter itself says which calls it refused.

    python reference_app/tools/trace_worker_syscalls.py                 # the source journey
    python reference_app/tools/trace_worker_syscalls.py -- DIST/skillhost/skillhost journey

Prints one JSON object: ``{"processes": N, "calls": {name: count}, "refused": {name: [errno...]}}``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

_APP = Path(__file__).resolve().parents[1]
_CALL = re.compile(r"([a-z0-9_]+)\(")
_REFUSED = re.compile(r"= -1 (E[A-Z0-9]+)")


def filtered_calls(trace_lines: Sequence[str]) -> tuple[Counter[str], dict[str, set[str]]] | None:
    """The calls of one traced process after it installed its filter, and each refused call's errnos."""
    start = next((i for i, line in enumerate(trace_lines) if "PR_SET_SECCOMP" in line), None)
    if start is None:
        return None
    calls: Counter[str] = Counter()
    refused: dict[str, set[str]] = {}
    for line in trace_lines[start + 1 :]:
        found = _CALL.match(line)
        if found is None:  # "+++ exited", "--- SIG...", a resumed call's tail
            continue
        calls[found.group(1)] += 1
        err = _REFUSED.search(line)
        if err:
            refused.setdefault(found.group(1), set()).add(err.group(1))
    return calls, refused


def trace(command: Sequence[str], env: dict[str, str] | None = None) -> dict[str, object]:
    """Run ``command`` under ``strace -f -ff`` and merge every filtered process's calls."""
    strace = shutil.which("strace")
    if strace is None:
        raise FileNotFoundError("strace is not installed")
    out_dir = tempfile.mkdtemp(prefix="skillhost-trace-")
    try:
        subprocess.run([strace, "-f", "-ff", "-qq", "-o", str(Path(out_dir) / "t"), *command],
                       env=env, capture_output=True, check=False, timeout=300)  # fmt: skip
        calls: Counter[str] = Counter()
        refused: dict[str, set[str]] = {}
        processes = 0
        for path in sorted(Path(out_dir).iterdir()):
            got = filtered_calls(path.read_text(encoding="utf-8", errors="replace").splitlines())
            if got is None:
                continue
            processes += 1
            calls.update(got[0])
            for call, errs in got[1].items():
                refused.setdefault(call, set()).update(errs)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    return {"processes": processes, "calls": dict(sorted(calls.items())),
            "refused": {k: sorted(v) for k, v in sorted(refused.items())}}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", nargs="*", help="what to trace (default: the journey from source)")
    ns = ap.parse_args(argv)
    command = ns.command or [sys.executable, "-s", "-B", "-m", "skillhost", "journey"]
    env = dict(os.environ, PYTHONPATH=str(_APP))
    print(json.dumps(trace(command, env), sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
