"""`qualify keygen`: this machine's local Ed25519 keys, for the keyring a policy names.

Private keys are generated here at run time into the (git-ignored) paths the
policy gives, never committed. An existing key is kept, so that evidence
signed earlier stays verifiable.
"""

from __future__ import annotations

from pathlib import Path

from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_trust import Keyring, Role, add_to_keyring, generate_private_key, load_private_key


def ensure_local_keys(policy: Policy) -> list[str]:
    trust = policy.ed25519
    keyring = policy.resolve(trust.keyring)
    # A damaged keyring is refused before any key is created: no orphan keys.
    if keyring.exists():
        Keyring.load(keyring)
    lines = []
    wanted: list[tuple[str, Path, Role]] = [
        ("platform", policy.resolve(trust.platform_key), "platform"),
        ("aggregate", policy.resolve(trust.aggregate_key), "aggregate"),
    ]
    for name, path, role in wanted:
        created = not path.exists()
        key = generate_private_key(path) if created else load_private_key(path)
        keyid = add_to_keyring(keyring, f"local-{name}", key.public_key(), [role])
        lines.append(f"{'created' if created else 'kept'} {name} key {keyid[:16]} ({path})")
    lines.append(f"keyring {keyring}")
    return lines

