"""The consumer: the release gate and the auditor's offline check.

The argument parsers load eagerly (``qualify --help`` needs nothing else); everything that
validates, signs or reaches GitHub loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from desktop_qualify.qualify_lazy import lazy_attributes

from ._args import (
    build_audit_parser,
    build_bundle_parser,
    build_readback_parser,
    build_verify_parser,
    build_verify_vsa_parser,
)

if TYPE_CHECKING:
    from ._cli import main, run_audit, run_bundle, run_verify
    from ._decide import decide
    from ._readback import run_readback
    from ._rebuild_input import QualifiedRun, qualified_run
    from ._rebuilds import required_digest
    from ._verify_vsa import run_verify_vsa
    from ._vsa import SummaryWriter, summary_statements

_LAZY = {
    # The gate's VSAs, for a caller that runs the gate in-process with a signer of its own (the offline chain).
    "SummaryWriter": "._vsa",
    "summary_statements": "._vsa",
    "decide": "._decide",
    "main": "._cli",
    "run_audit": "._cli",
    "run_bundle": "._cli",
    # Read-back reaches GitHub: PyGithub loads for it alone.
    "run_readback": "._readback",
    "run_verify": "._cli",
    "run_verify_vsa": "._verify_vsa",
    # qualify rebuild: the verified run it rebuilds.
    "QualifiedRun": "._rebuild_input",
    "qualified_run": "._rebuild_input",
    # ... and the digest it must give: one rule for the rebuild and for the audit of its attestation.
    "required_digest": "._rebuilds",
}

__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = ["QualifiedRun", "SummaryWriter", "build_audit_parser", "build_bundle_parser", "build_readback_parser",
           "build_verify_parser", "build_verify_vsa_parser", "decide", "main", "qualified_run", "run_audit",
           "required_digest", "run_bundle", "run_readback", "run_verify", "run_verify_vsa", "summary_statements"]
