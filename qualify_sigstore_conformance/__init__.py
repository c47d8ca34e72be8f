"""A sigstore-conformance client (verify-bundle) built on the project's verification layer.

It proves that ``qualify_trust``'s offline Sigstore verification agrees with the
conformance suite's verdicts; it is a test client, not part of the release chain.
"""

from ._cli import build_parser, main

__all__ = ["build_parser", "main"]
