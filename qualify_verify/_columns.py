"""Which reason codes make which cell of the decision table fail.

The table is drawn from the findings through this map alone, so a ``fail``
cell always has a reason with one of its codes beside it, and a run with no
reasons (the only QUALIFIED run) shows no ``fail``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from desktop_qualify.evidence_schemas import Code

COLUMN_CODES: Mapping[str, frozenset[Code]] = MappingProxyType({
    "gate": frozenset({Code.REF_NOT_MAIN, Code.NOT_MAIN_HEAD, Code.MAIN_UNPROTECTED, Code.WORKTREE_DIRTY,
                       Code.CLAIM_UNOBSERVABLE}),
    "build": frozenset({Code.BUILD_FAILED, Code.SOURCE_DIGEST_MISMATCH, Code.BUILD_NOT_REPRODUCED}),
    "signature": frozenset({Code.ARTIFACT_SIGNATURE_FAILED, Code.PLATFORM_SIGNING_UNACCEPTED}),
    "install": frozenset({Code.INSTALL_FAILED, Code.INSTALLER_SIGNATURE_REFUSED}),
    "probe": frozenset({Code.PROBE_FAILED}),
    "journey": frozenset({Code.JOURNEY_INCOMPLETE, Code.STEP_WRONG_LAYER}),
    "candidate": frozenset({Code.ARTIFACT_MISSING, Code.ARTIFACT_DIGEST_MISMATCH}),
})
