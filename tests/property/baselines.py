"""Valid inputs the mutations start from, built once per process.

The trust keys are derived from fixed seeds, so that an envelope saved in a
corpus case verifies (or not) the same way when it is replayed. Evidence from
the factory uses fresh keys each time; cases over evidence are therefore
saved as recipes (what to change), not as bytes.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from desktop_qualify.qualify_trust import Keyring, add_to_keyring
from desktop_qualify.qualify_trust._envelope import sign_envelope
from desktop_qualify.qualify_trust._keys import keyid_of

REPO = Path(__file__).resolve().parents[2]


def _key(name: str) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(f"qualify property tests: {name}".encode()).digest())


@dataclass(frozen=True)
class Trust:
    keyring: Keyring
    keys: dict[str, Ed25519PrivateKey]  # "platform", "aggregate" (trusted for that role), "stranger" (not)

    def keyid(self, name: str) -> str:
        return keyid_of(self.keys[name].public_key())


@functools.cache
def trust() -> Trust:
    keys = {name: _key(name) for name in ("platform", "aggregate", "stranger")}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "keyring.json"
        add_to_keyring(path, "prop-platform", keys["platform"].public_key(), ["platform"])
        add_to_keyring(path, "prop-aggregate", keys["aggregate"].public_key(), ["aggregate"])
        return Trust(Keyring.load(path), keys)


def envelope_payload(envelope: bytes) -> bytes:
    return base64.b64decode(json.loads(envelope)["payload"])


@dataclass(frozen=True)
class EvidenceBaseline:
    predicate: dict[str, Any]  # a passing platform predicate, as JSON data
    platform_statement: bytes  # the signed payload bytes of a platform statement
    aggregate_statement: bytes
    policy: bytes  # the factory's policy file

    @property
    def aggregate_data(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.aggregate_statement)
        return data

    def envelopes(self) -> list[bytes]:
        """Envelopes signed by each test key over each statement: valid for one role, or by a stranger."""
        keys = trust().keys
        return [sign_envelope(payload, keys[name]) for payload in (self.platform_statement, self.aggregate_statement)
                for name in ("platform", "aggregate", "stranger")]


@functools.cache
def evidence_baseline() -> EvidenceBaseline:
    from support.evidence_factory import make_evidence

    with tempfile.TemporaryDirectory() as tmp:
        evidence = make_evidence(Path(tmp))
        written = evidence.platforms[0]
        assert written.predicate is not None
        assert evidence.aggregate_path is not None
        return EvidenceBaseline(
            predicate=written.predicate.model_dump(mode="json", by_alias=True),
            platform_statement=envelope_payload(written.envelope),
            aggregate_statement=envelope_payload(evidence.aggregate_path.read_bytes()),
            policy=evidence.policy_path.read_bytes(),
        )


def policy_files() -> list[bytes]:
    """The committed policies, read when the strategy is built (their format may be mid-change)."""
    return [path.read_bytes() for path in sorted((REPO / "policies").glob("*.toml"))]
