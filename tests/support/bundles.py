"""Qualification bundles for tests: made with `qualify bundle`, rewritten member by member as an attacker would."""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

Members = dict[str, bytes]


def make_bundle(qualify: Any, policy: Path, evidence: Path, out: Path) -> Path:
    done = qualify(["bundle", "--policy", str(policy), "--evidence", str(evidence), "--out", str(out)])
    assert done.status == 0, done.text
    return out


def members_of(bundle: Path) -> Members:
    with zipfile.ZipFile(bundle) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def rewritten(bundle: Path, out: Path, edit: Callable[[Members], Members]) -> Path:
    """``bundle`` with its members edited and a manifest that tells the truth about them (so only anchoring,
    or the opening checks, can refuse it)."""
    members = edit(members_of(bundle))
    manifest = json.loads(members["manifest.json"])
    manifest["files"] = [{"path": k, "sha256": hashlib.sha256(v).hexdigest(), "size": len(v)}
                         for k, v in sorted(members.items()) if k != "manifest.json"]
    members["manifest.json"] = json.dumps(manifest).encode()
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out


def keyring_edit(change: Callable[[dict[str, Any]], None]) -> Callable[[Members], Members]:
    """An edit of the bundle's keyring document (``trust/keyring.json``)."""
    def edit(members: Members) -> Members:
        ring = json.loads(members["trust/keyring.json"])
        change(ring)
        return {**members, "trust/keyring.json": json.dumps(ring).encode()}

    return edit


def one_key_both_roles(role: str) -> Callable[[dict[str, Any]], None]:
    """The keyring reduced to the one key the attacker holds (the one with ``role``), given both roles."""
    def change(ring: dict[str, Any]) -> None:
        kept = next(k for k in ring["keys"] if role in k["roles"])
        kept["roles"] = ["aggregate", "platform"]
        ring["keys"] = [kept]

    return change
