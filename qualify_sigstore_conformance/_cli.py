"""``verify-bundle``, the verification half of sigstore-conformance's CLI protocol.

    verify-bundle [--staging] [--trusted-root FILE] --bundle FILE
                  (--certificate-identity ID --certificate-oidc-issuer URL | --key PEM)
                  FILE_OR_sha256:DIGEST

Exit 0 when the bundle verifies, 1 when it does not, 2 on usage errors.
Verification is offline: the trusted root is the one given or a pinned copy.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from desktop_qualify.evidence_schemas import Code, QualificationError, read_bounded
from desktop_qualify.qualify_runtime import EXIT_OK, ArgumentParser, guarded
from desktop_qualify.qualify_trust.sigstore import (
    MAX_BUNDLE_BYTES,
    CertificateIdentity,
    PinnedTrustedRoot,
    load_trusted_root,
    verify_artifact_bundle,
)

from ._roots import default_trusted_root

_DIGEST = re.compile(r"sha256:(?P<hex>[0-9a-fA-F]{64})", re.ASCII)
_MAX_KEY_BYTES = 16 * 1024
_CHUNK = 1024 * 1024


def build_parser() -> ArgumentParser:
    """The `qualify-sigstore-conformance` command line: the conformance suite's verify-bundle subcommand."""
    parser = ArgumentParser(
        prog="qualify-sigstore-conformance",
        description="Offline Sigstore bundle verification (sigstore-conformance protocol).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    verify = sub.add_parser("verify-bundle", help="verify a Sigstore bundle offline")
    verify.add_argument("--bundle", type=Path, required=True, help="the Sigstore bundle to verify")
    verify.add_argument("--certificate-identity",
                        help="the exact certificate SAN required (with --certificate-oidc-issuer)")
    verify.add_argument("--certificate-oidc-issuer",
                        help="the exact OIDC issuer required (with --certificate-identity)")
    verify.add_argument("--key", type=Path, help="a public key PEM instead of an identity (refused: not supported)")
    verify.add_argument("--trusted-root", type=Path, help="the trusted root JSON (default: the pinned production root)")
    verify.add_argument("--staging", action="store_true", help="use the pinned staging root instead of production")
    verify.add_argument("artifact", metavar="FILE_OR_DIGEST", help="the signed file, or sha256:HEX of it")
    return parser


def _file_sha256(path: Path) -> str:
    # Streamed: an artifact may be far larger than any evidence document.
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    except FileNotFoundError as exc:
        raise QualificationError(Code.ARTIFACT_MISSING, f"artifact {path}: file not found") from exc
    except OSError as exc:
        raise QualificationError(Code.ARTIFACT_MISSING, f"artifact {path}: cannot read ({exc.strerror})") from exc
    return digest.hexdigest()


def _artifact_digest(argument: str) -> str:
    match = _DIGEST.fullmatch(argument)
    if match is not None:
        return match["hex"].lower()
    if argument.startswith("sha256:"):
        raise QualificationError(Code.USAGE, f"{argument[:90]!r} is not sha256: followed by 64 hex digits")
    return _file_sha256(Path(argument))


def _trusted_root(args: argparse.Namespace) -> PinnedTrustedRoot:
    if args.trusted_root is not None:
        return load_trusted_root(args.trusted_root)
    return default_trusted_root(staging=args.staging)


def _refuse_key_mode(path: Path) -> NoReturn:
    data = read_bounded(path, max_bytes=_MAX_KEY_BYTES, what=f"key {path}")
    try:
        serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise QualificationError(Code.KEY_INVALID, f"key {path}: not a PEM public key") from exc
    # sigstore-python 4.5's public Verifier accepts only certificate bundles; checking a
    # key bundle's log entry would need its private API, so this client says no.
    raise QualificationError(
        Code.SIGNATURE_INVALID,
        "public-key bundles cannot be verified: sigstore-python 4.5's public API verifies certificate bundles only",
    )


def _verify(args: argparse.Namespace) -> int:
    if args.key is not None:
        if args.certificate_identity is not None or args.certificate_oidc_issuer is not None:
            raise QualificationError(Code.USAGE, "--key excludes --certificate-identity/--certificate-oidc-issuer")
        _refuse_key_mode(args.key)
    if args.certificate_identity is None or args.certificate_oidc_issuer is None:
        raise QualificationError(
            Code.USAGE, "give --certificate-identity and --certificate-oidc-issuer together, or --key"
        )
    digest = _artifact_digest(args.artifact)
    root = _trusted_root(args)
    what = f"bundle {args.bundle}"
    bundle = read_bounded(args.bundle, max_bytes=MAX_BUNDLE_BYTES, what=what)
    verify_artifact_bundle(
        bundle,
        digest,
        root,
        None,
        certificate_identity=CertificateIdentity(args.certificate_identity, args.certificate_oidc_issuer),
        what=what,
    )
    print(f"OK: {args.bundle} covers sha256:{digest}", file=sys.stderr)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """The `qualify-sigstore-conformance` command: parse ``argv`` and verify; the exit status."""
    args = build_parser().parse_args(argv)
    return guarded(lambda: _verify(args))
