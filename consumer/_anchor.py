"""What a bundle must match to be judged at all: the auditor's policy and keys, never the bundle's own say.

A bundle carries the policy and trust root of its run, so an old run is judged
under its own rules; but a bundle alone proves nothing, since whoever made it
chose what it carries. The auditor's policy (``--policy``) is the anchor:

- **Policy.** The bundle's policy must be byte-identical either to the
  auditor's ``--policy``, or to the policy file as committed at the commit the
  bundle's verified statements name. That history is read from the repository
  ``--root`` names or, without ``--root``, from the git work tree that holds
  ``--policy`` with the file tracked and unchanged (a policy copied out of its
  checkout has no history: a repository found above the copy proves nothing).
  No other committed version counts: one committed and reverted at once, or one
  that pinned another trusted root, anchors only the runs of its own commit.
- **Keys (local mode).** Every key in the bundle's keyring must be in the
  auditor's keyring, under the same name, with no role the auditor's keyring
  does not give it: one local key cannot promote itself to both roles by
  writing its own keyring into a bundle.
- **Read-back** runs right after publishing, under the policy that gated the
  release: it accepts only the auditor's ``--policy``, byte for byte.

The decision names the commit the policy was anchored at, and says in one line
how the anchored policy differs from the auditor's (trust root, keyring,
signers, journey).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_policy import Policy, PolicyFile
from desktop_qualify.qualify_trust import Keyring

_GIT_TIMEOUT = 60.0
_SHA = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class KeyGrant:
    """What the auditor's keyring says of one key: its name and roles."""

    name: str
    roles: frozenset[str]


@dataclass(frozen=True)
class PolicyFacets:
    """What ``differences`` compares of a policy, as plain JSON text.

    Plain strings cross the process boundary to the audit workers; the policy model itself does not pickle (its
    per-platform app tables are parametrised generic models).
    """

    trust: str
    signers: str
    journey: str


def policy_facets(file: PolicyFile) -> PolicyFacets:
    trust = json.dumps([file.trust.mode, getattr(file.trust, "trusted_root_sha256", None)])
    return PolicyFacets(trust=trust,
                        signers=file.producer.model_dump_json(include={"signers", "repository", "workflow"}),
                        journey=file.journey.model_dump_json())


@dataclass(frozen=True)
class Anchor:
    """What a bundle's policy and keys must match: picklable, so each worker process gets a copy."""

    policy_sha256: str
    facets: PolicyFacets
    # Where the policy's history is read: the repository's work tree and the policy's path in it; None: none.
    repository: str | None
    relative: str | None
    # Local mode: the auditor's keyring, key id -> name and roles; None in GitHub mode.
    keys: dict[str, KeyGrant] | None
    # Read-back: only the auditor's own policy, byte for byte.
    exact_only: bool = False
    # Why no history is read, when none is (said in a refusal).
    no_history: str = ""


def _git(root: Path | str, *args: str) -> bytes | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=_GIT_TIMEOUT,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def git_blob(root: Path, commit: str, relative: str) -> str | None:
    """SHA-256 of the file ``relative`` as committed at ``commit`` in the checkout ``root`` (None: not there)."""
    data = _git(root, "cat-file", "blob", f"{commit}:{relative}")
    return None if data is None else hashlib.sha256(data).hexdigest()


def _work_tree(folder: Path) -> Path | None:
    """The top of the git work tree ``folder`` is in, as git itself finds it (None: not in one)."""
    top = _git(folder, "rev-parse", "--show-toplevel")
    return Path(top.decode("utf-8", "replace").strip()).resolve() if top else None


def _history(policy: Policy) -> tuple[str | None, str | None, str]:
    """(work tree, the policy's path in it, why not) for the repository whose history anchors a bundle's policy."""
    if policy.root is not None:
        root = policy.root.resolve()
        if _work_tree(root) != root:
            return None, None, f"--root {policy.root} is not the top of a git work tree"
        try:
            relative = policy.path.relative_to(root).as_posix()
        except ValueError:
            relative = f"policies/{policy.path.name}"  # a copy taken out of its checkout
        return str(root), relative, ""
    top = _work_tree(policy.path.parent)
    if top is None:
        return None, None, f"{policy.path} is not in a git work tree (pass --root with its checkout)"
    relative = policy.path.relative_to(top).as_posix()
    committed = _git(top, "cat-file", "blob", f"HEAD:{relative}")
    if committed is None or hashlib.sha256(committed).hexdigest() != policy.sha256:
        return None, None, (f"{policy.path} is not tracked, unchanged, in the git work tree {top} (a copy or an edit "
                            "has no history; pass --root with the checkout it belongs to)")
    return str(top), relative, ""


def anchor_for(policy: Policy, *, exact_only: bool = False) -> Anchor:
    keys = None
    if policy.sigstore is None:
        ring = Keyring.load(policy.resolve(policy.ed25519.keyring))
        keys = {k.keyid: KeyGrant(k.name, k.roles) for k in ring.keys.values()}
    repository, relative, why = (None, None, "read-back accepts only the auditor's --policy") if exact_only \
        else _history(policy)
    return Anchor(policy.sha256, policy_facets(policy.file), repository, relative, keys, exact_only, why)


def check_keys(bundled: Policy, anchor: Anchor, source: Path) -> None:
    """Local mode: every bundle key is the auditor's, under the auditor's name, with no role the auditor withholds."""
    if anchor.keys is None:
        return
    if bundled.sigstore is not None:
        raise QualificationError(Code.MODE_MISMATCH, f"bundle {source}: a GitHub-mode bundle audited under a "
                                                     "local-mode policy")
    for key in Keyring.load(bundled.resolve(bundled.ed25519.keyring)).keys.values():
        grant = anchor.keys.get(key.keyid)
        if grant is None:
            raise QualificationError(Code.BUNDLE_UNANCHORED, f"bundle {source}: its keyring holds key "
                                                             f"{key.keyid[:16]}, which the auditor's keyring does not")
        if key.name != grant.name:
            raise QualificationError(Code.BUNDLE_UNANCHORED, f"bundle {source}: its keyring names key "
                                                             f"{key.keyid[:16]} {key.name[:64]!r}, the auditor's "
                                                             f"keyring {grant.name!r}")
        if extra := sorted(key.roles - grant.roles):
            given = ", ".join(sorted(grant.roles))
            raise QualificationError(Code.BUNDLE_UNANCHORED, f"bundle {source}: its keyring gives key {grant.name!r} "
                                                             f"the role {', '.join(extra)}, which the auditor's "
                                                             f"keyring does not (it gives {given})")


def is_auditors(bundled: Policy, anchor: Anchor) -> bool:
    return bundled.sha256 == anchor.policy_sha256


def precheck_policy(bundled: Policy, anchor: Anchor, source: Path) -> None:
    """Before any verification: a policy other than the auditor's with no history to anchor it is refused now."""
    if not is_auditors(bundled, anchor) and (anchor.exact_only or anchor.repository is None):
        raise QualificationError(Code.BUNDLE_UNANCHORED, f"bundle {source}: its policy ({bundled.sha256[:12]}) is "
                                                         f"not the auditor's --policy, and no history can anchor it: "
                                                         f"{anchor.no_history}")


def check_policy_at(bundled: Policy, anchor: Anchor, source: Path, commit: str | None) -> str:
    """The bundle's policy is the policy file as committed at ``commit`` (the run's, from verified statements).

    Returns the line naming the anchor; raises QE_BUNDLE_UNANCHORED otherwise.
    """
    def unanchored(why: str) -> QualificationError:
        return QualificationError(Code.BUNDLE_UNANCHORED, f"bundle {source}: its policy ({bundled.sha256[:12]}) is "
                                                          f"not the auditor's --policy, and {why}")

    if anchor.exact_only or anchor.repository is None or anchor.relative is None:
        raise unanchored(f"no history can anchor it: {anchor.no_history}")
    if commit is None or len(commit) != 40 or not set(commit) <= _SHA:
        raise unanchored("its verified statements name no commit to read the policy at")
    committed = _git(anchor.repository, "cat-file", "blob", f"{commit}:{anchor.relative}")
    if committed is None:
        raise unanchored(f"{anchor.relative} does not exist at commit {commit[:12]} (the commit its verified "
                         f"statements name) in {anchor.repository}")
    if hashlib.sha256(committed).hexdigest() != bundled.sha256:
        raise unanchored(f"differs from {anchor.relative} as committed at {commit[:12]} (the commit its verified "
                         "statements name); no other version of the policy counts")
    return f"policy anchored at commit {commit}: {anchor.relative} as committed there, in {anchor.repository}"


def differences(bundled: Policy, anchor: Anchor, bundle_keyids: frozenset[str] | None) -> str:
    """One line: how the anchored policy differs from the auditor's (trust root, keyring, signers, journey)."""
    mine, theirs = anchor.facets, policy_facets(bundled.file)
    differ = []
    if mine.trust != theirs.trust:
        differ.append("trust root")
    if anchor.keys is not None and bundle_keyids is not None and bundle_keyids != frozenset(anchor.keys):
        differ.append("keyring")
    if mine.signers != theirs.signers:
        differ.append("signers")
    if mine.journey != theirs.journey:
        differ.append("journey")
    if not differ:
        return "the anchored policy's trust root, keyring, signers and journey are the auditor's"
    return f"the anchored policy differs from the auditor's in: {', '.join(differ)}"
