"""Verifying local qualifications: in process vs the bare library calls, and 1,000 in one process vs processes."""

from __future__ import annotations

import base64
import json
import statistics
import tempfile
import time
from pathlib import Path

from _common import Row, paired_medians, run_process, script
from _evidence import Evidence, evidence
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from desktop_qualify.qualify_files import file_sha256
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_trust._dsse import pae
from desktop_qualify.qualify_trust._envelope import ARTIFACT_DIGEST_TYPE
from desktop_qualify.qualify_verify import verify_release

AUDIT_COUNT = 1000
PROCESS_SAMPLE = 20
# Build distinct folders when that is quick; otherwise repeat the ones built.
BUILD_BUDGET_S = 30.0


def _bare(ev: Evidence) -> None:
    """What verify_release rests on, and nothing else.

    Load the keyring's public keys; for each envelope, Ed25519-verify its PAE and json.loads its payload;
    hash the artifact and Ed25519-verify the platform key's detached signature over that digest.
    """
    keyring = json.loads(ev.keys.keyring.read_bytes())
    keys = {entry["keyid"]: Ed25519PublicKey.from_public_bytes(base64.b64decode(entry["public_key"]))
            for entry in keyring["keys"]}
    payloads = []
    for path in sorted(ev.evidence_dir.glob("*.dsse.json")):
        outer = json.loads(path.read_bytes())
        body = base64.b64decode(outer["payload"])
        signature = outer["signatures"][0]
        keys[signature["keyid"]].verify(base64.b64decode(signature["sig"]), pae(outer["payloadType"], body))
        payloads.append(json.loads(body))
    record = next(p for p in payloads if "signature" in p["predicate"])["predicate"]["signature"]
    for artifact in ev.artifact_paths:
        digest = file_sha256(artifact)
        keys[record["keyid"]].verify(base64.b64decode(record["signature"]),
                                     pae(ARTIFACT_DIGEST_TYPE, digest.encode("ascii")))


def _check(ev: Evidence) -> None:
    verdict = verify_release(ev.policy, [ev.evidence_dir], ev.artifact_paths)
    if not verdict.qualified:
        raise RuntimeError(f"benchmark evidence is not QUALIFIED: {verdict.reasons}")


def bench_in_process(tmp: Path) -> list[Row]:
    """One local qualification verified in process, against the bare library calls it rests on."""
    ev = evidence(tmp / "one")
    _check(ev)
    policy, dirs, artifacts = ev.policy, [ev.evidence_dir], ev.artifact_paths
    ours, base = paired_medians(lambda: verify_release(policy, dirs, artifacts), lambda: _bare(ev), 300)
    ratio = ours / base
    return [Row("verify_release, one local qualification (in process)",
                "bare keyring load, Ed25519 verify x3, json.loads, artifact sha256", ratio, "x", "<= 1.50x",
                ratio <= 1.5,
                f"median of 300: ours {ours * 1e3:.2f} ms, bare {base * 1e3:.3f} ms "
                f"({len(list(ev.evidence_dir.glob('*.dsse.json')))} envelopes; policy loaded once, outside)",
                {"ours_s": ours, "bare_s": base})]


def _build_many(tmp: Path) -> tuple[list[Evidence], str]:
    built: list[Evidence] = []
    started = time.perf_counter()
    for i in range(AUDIT_COUNT):
        built.append(evidence(tmp / f"q{i:04d}"))
        elapsed = time.perf_counter() - started
        if i == 19 and elapsed / 20 * AUDIT_COUNT > BUILD_BUDGET_S:
            break
    if len(built) == AUDIT_COUNT:
        return built, f"{AUDIT_COUNT} distinct evidence folders (own keys, policy each)"
    return ([built[i % len(built)] for i in range(AUDIT_COUNT)],
            f"{len(built)} distinct folders repeated to {AUDIT_COUNT} (building 1,000 was too slow)")


def bench_audit(tmp: Path) -> tuple[list[Row], float]:
    """Many local qualifications in one process against one process each; the rows, the time per process."""
    folders, how = _build_many(tmp / "many")
    started = time.perf_counter()
    for ev in folders:
        # As the CLI does per qualification: load its policy, verify its evidence and artifacts.
        verdict = verify_release(load_policy(ev.policy_path), [ev.evidence_dir], ev.artifact_paths)
        if not verdict.qualified:
            raise RuntimeError("benchmark evidence is not QUALIFIED")
    in_process = time.perf_counter() - started
    qualify = script("qualify")
    times = []
    for ev in folders[:PROCESS_SAMPLE]:
        call = run_process([qualify, *ev.verify_argv()])
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    per_process = statistics.median(times)
    extrapolated = per_process * AUDIT_COUNT
    ratio = extrapolated / in_process
    rows = [Row(f"audit {AUDIT_COUNT:,} local qualifications in one process",
                f"one `qualify verify` process each ({PROCESS_SAMPLE} measured, x{AUDIT_COUNT // PROCESS_SAMPLE})",
                ratio, "x", ">= 50x", ratio >= 50,
                f"{how}; in process {in_process:.2f} s total ({in_process / AUDIT_COUNT * 1e3:.2f} ms each), "
                f"processes {per_process * 1e3:.0f} ms each -> {extrapolated:.0f} s",
                {"in_process_s": in_process, "per_process_s": per_process, "extrapolated_s": extrapolated})]
    return rows, per_process


def bench() -> tuple[list[Row], float]:
    """The rows, and the median time of one local `qualify verify` process (for the start-up table)."""
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as name:
        tmp = Path(name)
        rows = bench_in_process(tmp)
        audit, per_process = bench_audit(tmp)
        return rows + audit, per_process
