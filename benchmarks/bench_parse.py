"""Bounded JSON loading and local envelope verification of a large statement vs json.loads / raw Ed25519."""

from __future__ import annotations

import base64
import contextlib
import json
import tempfile
from pathlib import Path

from _common import Row, paired_medians
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from desktop_qualify.evidence_schemas import QualificationError, load_json, parse_statement
from desktop_qualify.qualify_trust import Keyring, add_to_keyring
from desktop_qualify.qualify_trust._dsse import pae
from desktop_qualify.qualify_trust._envelope import sign_envelope, verify_envelope


def sample_statement() -> bytes:
    """A large statement in the platform shape, padded with journey steps and files."""
    step = {"id": "external-step", "expected": "reject", "expected_code": "CC_SKILL_DIGEST_DRIFT",
            "observed": "reject", "observed_code": "CC_SKILL_DIGEST_DRIFT", "passed": True, "detail": "x" * 300}
    doc = {"_type": "https://in-toto.io/Statement/v1", "predicateType": "unknown/v1",
           "subject": [{"name": "a.tar.gz", "digest": {"sha256": "0" * 64}}],
           "predicate": {"steps": [dict(step, id=f"step-{i}") for i in range(256)],
                         "files": [{"path": f"lib/file{i}.so", "sha256": "1" * 64, "size": i} for i in
                                   range(2000)]}}
    return json.dumps(doc).encode()


def bench() -> list[Row]:
    """This module's figures, each a row of the bench table."""
    data = sample_statement()
    ours, base = paired_medians(lambda: load_json(data, what="bench"), lambda: json.loads(data), 15)
    rows = [Row(f"bounded load_json ({len(data) // 1024} KiB)", "json.loads", ours / base, "x", "<= 4.00x",
                ours / base <= 4.0, f"median of 15: {ours * 1e3:.2f} ms vs {base * 1e3:.2f} ms")]
    key = Ed25519PrivateKey.generate()
    with tempfile.TemporaryDirectory() as tmp:
        ring = Path(tmp) / "keyring.json"
        add_to_keyring(ring, "bench", key.public_key(), ["platform"])
        keyring = Keyring.load(ring)
    envelope = sign_envelope(data, key)
    public = key.public_key()
    sig = base64.b64decode(json.loads(envelope)["signatures"][0]["sig"])

    def verified() -> None:
        payload = verify_envelope(envelope, keyring, role="platform", what="bench").payload
        # The sample's predicate type is unknown on purpose: parsing runs in full, then refuses.
        with contextlib.suppress(QualificationError):
            parse_statement(payload, what="bench")

    def raw() -> None:
        outer = json.loads(envelope)
        body = base64.b64decode(outer["payload"])
        public.verify(sig, pae(outer["payloadType"], body))
        json.loads(body)

    ours, base = paired_medians(verified, raw, 15)
    rows.append(Row(f"verify_envelope + parse ({len(envelope) // 1024} KiB envelope)", "raw Ed25519 + json.loads",
                    ours / base, "x", "<= 5.00x", ours / base <= 5.0,
                    f"median of 15: {ours * 1e3:.2f} ms vs {base * 1e3:.2f} ms"))
    return rows
