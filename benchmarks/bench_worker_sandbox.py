"""The worker sandbox's start-up cost, layer by layer (issue 11: worker start within 150 ms with the sandbox on).

Each sample is a fresh interpreter (the layers are irreversible) that times, with ``perf_counter``, the
import of the sandbox modules and then each Linux layer in the order the worker applies them. A second
figure is the whole source worker start (``python -m skillhost worker --self-test``, spawn to reaped) with
the sandbox and with ``confine`` replaced by a no-op (the sandbox modules are still imported; ``ctypes``
and the layers are not), interleaved run by run. The frozen bundle's whole
start is ``bench_startup.bench_worker``. Runnable alone: ``python benchmarks/bench_worker_sandbox.py``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time

from _common import ROOT, Row

REPEAT = 15
APP = ROOT / "reference_app"

_LAYERS = """
import json, os, time
t0 = time.perf_counter()
import ctypes
import skillhost.os_sandbox._dispatch, skillhost.os_sandbox._linux as L, skillhost.os_sandbox._seccomp_bpf
t1 = time.perf_counter()
libc = L._libc()
out = {"import": t1 - t0}

def per_call(n=20000):
    # getppid is near the end of the allow-list: close to the longest path through the filter.
    t = time.perf_counter()
    for _ in range(n):
        os.getppid()
    return (time.perf_counter() - t) / n

unfiltered = min(per_call() for _ in range(3))
t = time.perf_counter(); nnp = L._no_new_privs(libc); out["no-new-privs"] = time.perf_counter() - t
t = time.perf_counter(); ns = L._namespaces(libc); out["user-net-namespace"] = time.perf_counter() - t
roots = skillhost.os_sandbox._dispatch.worker_read_roots()
t = time.perf_counter(); ll = L._landlock(libc, roots, os.getcwd()); out["landlock"] = time.perf_counter() - t
t = time.perf_counter(); sc = L._seccomp(libc, no_new_privs=nnp["applied"]); out["seccomp"] = time.perf_counter() - t
out["filtered-call"] = min(per_call() for _ in range(3)) - unfiltered
applied = [x["name"] for x in [nnp, ns, *ll, sc] if x["applied"]]
print(json.dumps({"seconds": out, "applied": applied}))
"""

_NO_SANDBOX = """
import sys
import skillhost.worker._main as w
w.confine = lambda tmp: []
sys.exit(w.main(["--self-test"]))
"""


def _env() -> dict[str, str]:
    return {"PYTHONPATH": str(APP), "PYTHONDONTWRITEBYTECODE": "1"}


def _layers_once(cwd: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", _LAYERS], env=_env(), cwd=cwd, capture_output=True, check=True,
                         timeout=30).stdout
    answer: dict[str, object] = json.loads(out)
    return answer


def _spawn_once(argv: list[str], cwd: str) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, env=_env(), cwd=cwd, capture_output=True, timeout=30, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0 or b"skillhost-worker-self-test" not in proc.stdout:
        raise RuntimeError(f"worker self-test exited {proc.returncode}")
    return elapsed


def bench() -> list[Row]:
    """This module's figures, each a row of the bench table."""
    if not sys.platform.startswith("linux"):
        return [Row("worker sandbox layers (Linux)", "absolute", None, "ms", "-", None, "Linux only")]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as cwd:
        samples = [_layers_once(cwd) for _ in range(REPEAT)]
        applied = samples[0]["applied"]
        for name in ("import", "no-new-privs", "user-net-namespace", "landlock", "seccomp"):
            ms = statistics.median(s["seconds"][name] for s in samples) * 1e3  # type: ignore[index]
            rows.append(Row(f"worker sandbox: {name}", "absolute", ms, "ms", "-", None,
                            f"median of {REPEAT} fresh interpreters; applied here: {applied}"))
        total = sum(r.value or 0 for r in rows)
        rows.append(Row("worker sandbox: all layers incl. import", "absolute", total, "ms", "<= 150 ms",
                        total <= 150, "sum of the medians above"))
        extra = statistics.median(s["seconds"]["filtered-call"] for s in samples) * 1e9  # type: ignore[index]
        rows.append(Row("seccomp allow-list: added cost of one system call (getppid, 20th of 22 checks)",
                        "the same call before the filter", extra, "ns", "-", None,
                        f"median of {REPEAT} fresh interpreters, best of 3 x 20000 calls each"))
        sandboxed = [sys.executable, "-s", "-B", "-m", "skillhost", "worker", "--self-test"]
        bare = [sys.executable, "-s", "-B", "-c", _NO_SANDBOX]
        _spawn_once(sandboxed, cwd)
        _spawn_once(bare, cwd)
        ours, base = [], []
        for _ in range(REPEAT):
            ours.append(_spawn_once(sandboxed, cwd))
            base.append(_spawn_once(bare, cwd))
        on, off = statistics.median(ours) * 1e3, statistics.median(base) * 1e3
        rows.append(Row("source worker start, sandbox on (`python -m skillhost worker --self-test`)",
                        "the same with confine() a no-op", on, "ms", "<= 150 ms", on <= 150,
                        f"median of {REPEAT}, interleaved; sandbox off: {off:.1f} ms, difference {on - off:.1f} ms",
                        {"on_ms": on, "off_ms": off}))
    return rows


if __name__ == "__main__":
    for row in bench():
        value = "-" if row.value is None else f"{row.value:.2f} {row.unit}"
        print(f"{row.figure:<78} {value:>10}  {row.note}")
