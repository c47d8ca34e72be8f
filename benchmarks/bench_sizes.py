"""Bytes of each signed statement against the policy's bound (max_statement_bytes)."""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path

from _common import Row
from _evidence import default_steps, evidence


def bench() -> list[Row]:
    """This module's figures, each a row of the bench table."""
    steps = default_steps()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-sizes-") as name:
        ev = evidence(Path(name), steps=steps)
        bound = ev.policy.file.limits.max_statement_bytes
        for path in sorted(ev.evidence_dir.glob("*.dsse.json")):
            data = path.read_bytes()
            payload = len(base64.b64decode(json.loads(data)["payload"]))
            ratio = len(data) / bound
            rows.append(Row(f"bytes of {path.name} ({len(steps)} journey steps)",
                            f"max_statement_bytes = {bound:,}", ratio, "of bound", "<= 100%", ratio <= 1.0,
                            f"envelope {len(data):,} B, payload {payload:,} B",
                            {"envelope_bytes": len(data), "payload_bytes": payload, "bound_bytes": bound}))
    return rows
