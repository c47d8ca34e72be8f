"""Verifying one GitHub-mode qualification in process vs the bare sigstore-python calls it rests on.

The evidence is signed by the test Sigstore instance (tests/support), as the
offline GitHub-mode chain signs it; nothing touches the network.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

import _evidence  # noqa: F401 - puts tests/ on sys.path for the support modules
from _common import Row, paired_medians
from corpus.corpus_github import AGGREGATE_IDENTITY, IDENTITY, GitHubSite, github_evidence, make_world
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_trust._sigstore_expected import GITHUB_ISSUER
from desktop_qualify.qualify_verify import verify_release
from sigstore.models import Bundle, TrustedRoot
from sigstore.verify import Verifier
from sigstore.verify.policy import Identity

REPEAT = 30


def _bare(trusted_root: Path, bundles: list[tuple[Path, str]], artifact: Path) -> None:
    """What verify_release rests on: load the root, verify_dsse each bundle and the artifact's, hash the artifact.

    Each bundle under sigstore-python's own identity check (SAN and issuer) for the workflow that signed it;
    ours checks every Fulcio claim the policy names on top.
    """
    verifier = Verifier(trusted_root=TrustedRoot.from_file(str(trusted_root)))
    payloads = []
    for path, san in bundles:
        _, payload = verifier.verify_dsse(Bundle.from_json(path.read_bytes()), Identity(identity=san,
                                                                                         issuer=GITHUB_ISSUER))
        payloads.append(json.loads(payload))
    signature = next(p for p in payloads if "signature" in p["predicate"])["predicate"]["signature"]["signature"]
    verifier.verify_dsse(Bundle.from_json(signature), Identity(identity=IDENTITY.san_uri, issuer=GITHUB_ISSUER))
    hashlib.sha256(artifact.read_bytes()).hexdigest()


def bench() -> list[Row]:
    """This module's figures, each a row of the bench table."""
    with tempfile.TemporaryDirectory(prefix="bench-sigstore-") as name:
        tmp = Path(name)
        world = make_world(tmp / "world")
        try:
            ev = github_evidence(GitHubSite(world, tmp / "site"))
        finally:
            world.emulator.stop()
        policy = load_policy(ev.policy_path)
        root = policy.resolve(policy.sigstore.trusted_root) if policy.sigstore else None
        if root is None:
            raise RuntimeError("the benchmark's GitHub-mode policy names no trusted root")
        verdict = verify_release(policy, [ev.evidence_dir], [ev.artifact])
        if not verdict.qualified:
            raise RuntimeError(f"benchmark GitHub evidence is not QUALIFIED: {verdict.reasons}")
        bundles = [(ev.platform_file, IDENTITY.san_uri), (ev.aggregate_file, AGGREGATE_IDENTITY.san_uri)]
        ours, base = paired_medians(lambda: verify_release(policy, [ev.evidence_dir], [ev.artifact]),
                                    lambda: _bare(root, bundles, ev.artifact), REPEAT)
    ratio = ours / base
    return [Row("verify_release, one GitHub-mode qualification (in process)",
                "sigstore Verifier.verify_dsse x3 with an Identity policy, root loaded each time",
                ratio, "x", "<= 1.50x", ratio <= 1.5,
                f"median of {REPEAT}: ours {ours * 1e3:.1f} ms, bare {base * 1e3:.1f} ms (test Sigstore instance; "
                "policy loaded once, outside)", {"ours_s": ours, "bare_s": base})]


__all__ = ["bench"]
