"""`qualify keygen`: this machine's local Ed25519 keys, for the keyring a policy names.

Private keys are generated here at run time into the (git-ignored) paths the
policy gives, never committed. An existing key is kept, so that evidence
signed earlier stays verifiable. Keys are written only inside the repository
the policy belongs to (the git work tree holding it, or ``--root``): a policy
copied elsewhere cannot make keygen write into that folder's parent.
"""

from __future__ import annotations

import os
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_trust import Keyring, Role, add_to_keyring, generate_private_key, load_private_key


def _inside_repository(policy: Policy, paths: list[tuple[str, Path]]) -> None:
    root = policy.repository_root()
    if root is None:
        raise QualificationError(Code.USAGE, f"{policy.path}: not inside a git checkout, so keygen does not know where "
                                             "the policy's key paths may be written",
                                 hint="the local chain runs in a git checkout of this repository on branch main, at "
                                      "its head (the source gate refuses anything else): clone it, 'git checkout "
                                      "main', and run keygen with that checkout's policies/local.toml")
    for field, path in paths:
        if not path.is_relative_to(root):
            raise QualificationError(Code.USAGE, f"{policy.path}: {field} resolves to {path}, outside the repository "
                                                 f"{root}; keygen writes only inside it",
                                     hint="pass --root with the checkout the policy belongs to")


def ensure_local_keys(policy: Policy) -> list[str]:
    trust = policy.ed25519
    keyring = policy.resolve(trust.keyring)
    wanted: list[tuple[str, Path, Role]] = [
        ("platform", policy.resolve(trust.platform_key), "platform"),
        ("aggregate", policy.resolve(trust.aggregate_key), "aggregate"),
    ]
    # The release gate's key for its Verification Summary Attestations, where the policy names one.
    if trust.verifier_key is not None:
        wanted.append(("verifier", policy.resolve(trust.verifier_key), "verifier"))
    _inside_repository(policy, [("keyring", keyring), *((f"{name}_key", path) for name, path, _ in wanted)])
    # A damaged keyring is refused before any key is created: no orphan keys.
    if keyring.exists():
        Keyring.load(keyring)
    lines = []
    for name, path, role in wanted:
        created = not path.exists()
        key = generate_private_key(path) if created else load_private_key(path)
        # The key folder is the runner user's alone: another account (macOS's app account) must not list it.
        if os.name == "posix":
            path.parent.chmod(0o700)
        keyid = add_to_keyring(keyring, f"local-{name}", key.public_key(), [role])
        lines.append(f"{'created' if created else 'kept'} {name} key {keyid[:16]} ({path})")
    lines.append(f"keyring {keyring}")
    # Where the keys are, and who reads them: the signing step alone, once no app process of the run is left.
    lines.append(f"private keys in {sorted({str(path.parent) for _, path, _ in wanted})[0]}: read only by the "
                 "signing step, after every app process of a run has ended; app code runs confined and never sees "
                 "this folder (docs/boundaries.md)")
    return lines
