"""Benchmarks of the hot paths, each printed as a ratio against a named baseline.

Run with `nox -s bench`. Targets are checked here, not in timed tests:

- bounded JSON loading of a large statement vs the baseline `json.loads`
  (the price of the depth scan, duplicate-key and NaN checks);
- local envelope verification (PAE + Ed25519 + bounded parse + strict models)
  vs the baseline "raw Ed25519 verify + json.loads" of the same bytes;
- streaming an artifact's SHA-256 vs the baseline `hashlib.file_digest`, and
  the peak memory of doing so vs the file's size (it must not grow with it).

Exit status 1 when a target is missed.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from evidence_schemas import QualificationError, file_sha256, load_json, parse_statement
from qualify_trust import Keyring, add_to_keyring, keyid_of, pae, sign_envelope, verify_envelope

ROOT = Path(__file__).resolve().parents[1]


def best_of(fn: Callable[[], object], repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def sample_statement() -> bytes:
    """A realistic platform statement, from the e2e shape, padded with journey steps."""
    step = {"id": "external-step", "expected": "reject", "expected_code": "CC_SKILL_DIGEST_DRIFT",
            "observed": "reject", "observed_code": "CC_SKILL_DIGEST_DRIFT", "passed": True, "detail": "x" * 300}
    doc = {"_type": "https://in-toto.io/Statement/v1", "predicateType": "unknown/v1",
           "subject": [{"name": "a.tar.gz", "digest": {"sha256": "0" * 64}}],
           "predicate": {"steps": [dict(step, id=f"step-{i}") for i in range(256)],
                         "files": [{"path": f"lib/file{i}.so", "sha256": "1" * 64, "size": i} for i in
                                   range(2000)]}}
    return json.dumps(doc).encode()


def bench_loader(report: list[tuple[str, float, float]]) -> None:
    data = sample_statement()
    ours = best_of(lambda: load_json(data, what="bench"))
    base = best_of(lambda: json.loads(data))
    report.append((f"bounded load_json ({len(data) // 1024} KiB) vs json.loads", ours / base, 4.0))


def bench_envelope(report: list[tuple[str, float, float]]) -> None:
    key = Ed25519PrivateKey.generate()
    keyid = keyid_of(key.public_key())
    with tempfile.TemporaryDirectory() as tmp:
        ring = Path(tmp) / "keyring.json"
        add_to_keyring(ring, "bench", key.public_key(), ["platform"])
        keyring = Keyring.load(ring)
    payload = sample_statement()
    envelope = sign_envelope(payload, key)
    public = key.public_key()
    raw = json.loads(envelope)
    sig = base64.b64decode(raw["signatures"][0]["sig"])

    def ours() -> None:
        verified = verify_envelope(envelope, keyring, role="platform", what="bench")
        # The sample's predicate type is unknown on purpose: parsing runs in full, then refuses.
        with contextlib.suppress(QualificationError):
            parse_statement(verified.payload, what="bench")

    def baseline() -> None:
        outer = json.loads(envelope)
        body = base64.b64decode(outer["payload"])
        public.verify(sig, pae(outer["payloadType"], body))
        json.loads(body)

    if keyid != raw["signatures"][0]["keyid"]:
        raise SystemExit("benchmark set-up error: key id mismatch")
    report.append(("verify_envelope+parse vs raw Ed25519+json.loads", best_of(ours) / best_of(baseline), 5.0))


def bench_hash(report: list[tuple[str, float, float]]) -> None:
    size = 64 * 1024 * 1024
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "artifact.bin"
        with path.open("wb") as handle:
            for _ in range(size // (1 << 20)):
                handle.write(os.urandom(1 << 20))
        ours = best_of(lambda: file_sha256(path), repeat=3)

        def baseline() -> None:
            with path.open("rb") as handle:
                hashlib.file_digest(handle, "sha256")

        base = best_of(baseline, repeat=3)
        report.append(("file_sha256 (64 MiB) vs hashlib.file_digest", ours / base, 1.5))
        tracemalloc.start()
        file_sha256(path)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        report.append(("file_sha256 peak memory vs file size", peak / size, 0.05))


def main() -> int:
    report: list[tuple[str, float, float]] = []
    bench_loader(report)
    bench_envelope(report)
    bench_hash(report)
    missed = 0
    print(f"{'benchmark':<56} {'ratio':>8} {'target':>8}")
    for name, ratio, target in report:
        ok = ratio <= target
        missed += not ok
        print(f"{name:<56} {ratio:8.3f} {'<=' + format(target, '.2f'):>8}  {'ok' if ok else 'MISSED'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
