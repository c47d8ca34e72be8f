"""The keyring a policy names: which Ed25519 public keys are trusted, for which role.

Roles keep a platform job's key from forging an aggregate, and any job's key
from signing the gate's verdict: a key is trusted only for the roles listed
beside it.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from desktop_qualify.evidence_schemas import (
    MAX_KEYRING_BYTES,
    Code,
    JsonBounds,
    QualificationError,
    Record,
    load_json,
    read_bounded,
    validate_model,
)
from desktop_qualify.qualify_files import write_atomic
from pydantic import Field

from ._keys import keyid_of, raw_public_bytes

# 'verifier': the release gate's key for its Verification Summary Attestations; it signs no evidence.
Role = Literal["platform", "aggregate", "verifier"]


class _KeyEntry(Record):
    keyid: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    name: Annotated[str, Field(min_length=1, max_length=64)]
    public_key: Annotated[str, Field(min_length=44, max_length=44)]
    roles: list[Role] = Field(min_length=1, max_length=3)


class _KeyringFile(Record):
    version: Literal[1]
    keys: list[_KeyEntry] = Field(max_length=64)


@dataclass(frozen=True)
class TrustedKey:
    keyid: str
    name: str
    public_key: Ed25519PublicKey
    roles: frozenset[str]


@dataclass(frozen=True)
class Keyring:
    """The local mode's trusted Ed25519 keys, by key id, each with the roles it may sign for."""

    keys: dict[str, TrustedKey]

    def lookup(self, keyid: str) -> TrustedKey | None:
        """The trusted key with ``keyid``, or None."""
        return self.keys.get(keyid)

    @classmethod
    def load(cls, path: Path) -> Keyring:
        """The keyring file at ``path``, bounded and validated; a bad one is QE_KEY_INVALID."""
        what = f"keyring {path}"
        try:
            data = read_bounded(path, max_bytes=MAX_KEYRING_BYTES, what=what)
        except QualificationError as exc:
            raise QualificationError(
                Code.KEY_INVALID, exc.message, hint="run 'qualify keygen --policy FILE' to create local keys"
            ) from exc
        try:
            value = load_json(data, what=what, bounds=JsonBounds(MAX_KEYRING_BYTES, 8))
            parsed = validate_model(_KeyringFile, value, what=what)
        except QualificationError as exc:
            raise QualificationError(Code.KEY_INVALID, exc.message) from exc
        keys: dict[str, TrustedKey] = {}
        for entry in parsed.keys:
            try:
                public = Ed25519PublicKey.from_public_bytes(base64.b64decode(entry.public_key, validate=True))
            except (ValueError, binascii.Error) as exc:
                raise QualificationError(Code.KEY_INVALID, f"{what}: key {entry.name!r} is not an Ed25519 key") from exc
            # The key id is recomputed: a keyring cannot alias one key under another id.
            if keyid_of(public) != entry.keyid:
                raise QualificationError(Code.KEY_INVALID, f"{what}: key {entry.name!r} has a wrong keyid")
            if entry.keyid in keys:
                raise QualificationError(Code.KEY_INVALID, f"{what}: key {entry.keyid[:16]} listed twice")
            keys[entry.keyid] = TrustedKey(entry.keyid, entry.name, public, frozenset(entry.roles))
        return cls(keys)


def add_to_keyring(path: Path, name: str, public_key: Ed25519PublicKey, roles: list[Role]) -> str:
    """Add (or keep) a public key in the keyring file; returns its key id."""
    entries: list[dict[str, object]] = []
    if path.exists():
        existing = Keyring.load(path)
        entries = [
            {"keyid": k.keyid, "name": k.name, "public_key": base64.b64encode(raw_public_bytes(k.public_key)).decode(),
             "roles": sorted(k.roles)}
            for k in existing.keys.values()
        ]
    keyid = keyid_of(public_key)
    entries = [e for e in entries if e["keyid"] != keyid and e["name"] != name]
    entries.append(
        {"keyid": keyid, "name": name, "public_key": base64.b64encode(raw_public_bytes(public_key)).decode(),
         "roles": sorted(roles)}
    )
    write_atomic(path, (json.dumps({"version": 1, "keys": entries}, indent=2, sort_keys=True) + "\n").encode())
    return keyid
