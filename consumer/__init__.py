"""The consumer: the release gate and the auditor's offline check."""

from ._cli import build_audit_parser, build_verify_parser, main, run_audit, run_verify
from ._decide import decide

__all__ = ["build_audit_parser", "build_verify_parser", "decide", "main", "run_audit", "run_verify"]
