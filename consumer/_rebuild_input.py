"""What ``qualify rebuild`` rebuilds: a run whose evidence verified, and where its app is in the checkout.

The rebuild believes nothing it has not verified: an evidence folder is
verified under the policy as ``qualify audit`` verifies it; a bundle is
opened, anchored to the rebuilder's policy and verified under its own, as
``qualify audit --bundle`` does. Only a run that qualifies is rebuilt, and the
app folder is the one the policy names, in the rebuilder's checkout.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_verify import Verdict, verify_release

from ._bundles import anchor_for, verified_bundle


@dataclass(frozen=True)
class QualifiedRun:
    """A run that verified and may be rebuilt: its policy, its verdict and where its app and artifacts are."""

    policy: Policy
    verdict: Verdict
    # The app folder the policy names, in the rebuilder's checkout.
    app_source: Path
    # The evidence folder (None for a bundle): the local chain keeps the artifacts beside it.
    evidence: Path | None
    notes: list[str] = field(default_factory=list)


@contextlib.contextmanager
def qualified_run(policy: Policy, *, evidence: Path | None, bundle: Path | None) -> Iterator[QualifiedRun]:
    """The run of ``evidence`` (verified under ``policy``) or, without it, of ``bundle`` (anchored to ``policy``)."""
    if evidence is not None or bundle is None:
        folder = evidence or Path()
        verdict = verify_release(policy, [folder], None)
        yield QualifiedRun(policy, verdict, policy.resolve(policy.file.app.source), folder)
        return
    with tempfile.TemporaryDirectory(prefix="qualify-rebuild-bundle-") as workspace, \
            verified_bundle(bundle, anchor_for(policy), Path(workspace)) as (_, own, verdict, notes):
        # The bundle's policy names the app folder relative to its policies/ folder; the checkout's is the
        # rebuilder's policy's.
        yield QualifiedRun(own, verdict, (policy.base / own.file.app.source).resolve(), None, notes)
