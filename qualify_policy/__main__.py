"""``python -m desktop_qualify.qualify_policy reference [--out docs/policy.md] [--check]``: the policy reference.

Without ``--out`` the reference is printed; with it, the block between the markers of that page is regenerated
(``--check``: nothing is written, exit 1 when the page differs from the models).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._reference import render_policy_reference, replace_generated_block, undocumented_fields


def main(argv: list[str] | None = None) -> int:
    """Render, write or check the policy field reference; the exit status (1: drift or an undocumented field)."""
    parser = argparse.ArgumentParser(prog="python -m desktop_qualify.qualify_policy")
    commands = parser.add_subparsers(dest="command", required=True)
    reference = commands.add_parser("reference", help="the policy file's field reference (docs/policy.md)")
    reference.add_argument("--out", type=Path, help="the page whose generated block to regenerate")
    reference.add_argument("--check", action="store_true", help="with --out: write nothing, fail on a difference")
    args = parser.parse_args(argv)
    missing = undocumented_fields()
    if missing:
        print("policy fields without a docstring: " + ", ".join(missing), file=sys.stderr)
        return 1
    block = render_policy_reference()
    if args.out is None:
        sys.stdout.write(block)
        return 0
    before = args.out.read_text(encoding="utf-8")
    after = replace_generated_block(before, block)
    if args.check:
        if after != before:
            print(f"{args.out} is out of date; run: python -m desktop_qualify.qualify_policy reference "
                  f"--out {args.out}", file=sys.stderr)
            return 1
        return 0
    if after != before:
        args.out.write_text(after, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
