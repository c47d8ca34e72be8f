"""`qualify gate --policy FILE --out DIR`: the GitHub-mode source gate on its own.

Writes ``DIR/source-gate.json`` atomically when the gate passes (exit 0); a
refusal prints its stable code and writes nothing (exit 1); a usage or
environment problem, such as no GitHub Actions environment or an unreachable
API, exits 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping

from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_files import write_atomic
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_runtime import EXIT_OK, guarded

from ._args import RECORD_NAME, build_gate_parser
from .source import GitHubGate

__all__ = ["RECORD_NAME", "build_gate_parser", "run_gate"]


def run_gate(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> int:
    """`qualify gate` on parsed arguments: the GitHub-mode source gate alone, its record written to ``--out``."""
    def body() -> int:
        policy = load_policy(args.policy)
        # The sigstore section is what makes a policy GitHub mode; .ed25519 is
        # never consulted here (it refuses sigstore policies by design).
        if policy.sigstore is None:
            raise QualificationError(Code.USAGE, f"policy {policy.file.name!r} is not a GitHub-mode (sigstore) "
                                                 "policy; the local chain gates with git in `qualify produce`")
        checkout = policy.resolve(policy.file.app.source)
        gate = GitHubGate(policy, os.environ if env is None else env, checkout=checkout)
        record = gate.observe()
        target = args.out / RECORD_NAME
        write_atomic(target, record.model_dump_json(indent=2).encode() + b"\n")
        print(f"source gate passed: {record.repository}@{record.sha[:12]} on {record.ref} "
              f"(main {record.protection}); wrote {target}", file=sys.stderr)
        return EXIT_OK

    return guarded(body)
