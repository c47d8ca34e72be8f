"""The gate's Verification Summary Attestations of a factory-made run, as release.yml attaches them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop_qualify.qualify_trust import add_to_keyring, generate_private_key

from support.evidence_factory import Evidence


def gate_summaries(qualify: Any, ev: Evidence, out: Path, *, artifact: Path | None = None) -> bytes:
    """`qualify verify --vsa OUT` of the run, signed by the keyring's verifier key (made and named in the policy on
    first use: call before bundling, since the policy gains its verifier key). The file's bytes."""
    key_path = ev.keys.keyring.parent / "keys" / "verifier.ed25519.pem"
    if not key_path.exists():
        add_to_keyring(ev.keys.keyring, "local-verifier", generate_private_key(key_path).public_key(), ["verifier"])
    # The policy names the key by a path of its own; the bundle's policy must stay the auditor's, byte for byte.
    text = ev.policy_path.read_text(encoding="utf-8")
    if "verifier_key" not in text:
        ev.policy_path.write_text(text.replace("\n[source]", f'verifier_key = "{key_path.as_posix()}"\n\n[source]'),
                                  encoding="utf-8")
        ev.rebind_provenance()
        ev.write_aggregate()
    done = qualify(ev.verify_argv("--vsa", str(out), artifacts=[artifact] if artifact else None))
    assert out.is_file(), done.text
    return out.read_bytes()
