"""The Sigstore trusted root, pinned: the exact committed bytes, never a TUF refresh.

An auditor verifies years later with the root as of the run (docs/design.md
§3.7), so the root is a file the policy names with its SHA-256. The bytes that
were hashed are the bytes sigstore-python parses: no second read of the path,
no cache, no network.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, JsonBounds, QualificationError, load_json, read_bounded
from sigstore.errors import Error as SigstoreError
from sigstore.models import ClientTrustConfig, TrustedRoot
from sigstore.verify import Verifier

# Real trusted roots are under 10 KiB; a generous cap still refuses a hostile file.
MAX_TRUSTED_ROOT_BYTES = 256 * 1024
_ROOT_BOUNDS = JsonBounds(max_bytes=MAX_TRUSTED_ROOT_BYTES, max_depth=12)

# sigstore-python 4.5 builds a TrustedRoot from bytes only inside a
# ClientTrustConfig; verification needs no signing services, so the signing
# config is deliberately empty (this trust config cannot be used to sign).
_CONFIG_HEAD = '{"mediaType":"application/vnd.dev.sigstore.clienttrustconfig.v0.1+json","trustedRoot":'
_CONFIG_TAIL = ',"signingConfig":{"mediaType":"application/vnd.dev.sigstore.signingconfig.v0.2+json"}}'


@dataclass(frozen=True)
class PinnedTrustedRoot:
    """A parsed trusted root, the digest of the bytes it came from, and a verifier over it."""

    trusted_root: TrustedRoot
    sha256: str
    source: str
    verifier: Verifier


def trusted_root_from_bytes(data: bytes, *, what: str) -> PinnedTrustedRoot:
    """Parse trusted-root JSON bytes (bounded, duplicate keys refused) into a verifier."""
    try:
        parsed = load_json(data, what=what, bounds=_ROOT_BOUNDS)
    except QualificationError as exc:
        raise QualificationError(Code.POLICY_INVALID, exc.message) from exc
    if not isinstance(parsed, dict):
        raise QualificationError(Code.POLICY_INVALID, f"{what}: a trusted root must be a JSON object")
    # The checked text is embedded unchanged: what was hashed is what is parsed.
    config_text = _CONFIG_HEAD + data.decode("utf-8") + _CONFIG_TAIL
    try:
        trusted_root = ClientTrustConfig.from_json(config_text).trusted_root
        verifier = Verifier(trusted_root=trusted_root)
    except (SigstoreError, ValueError) as exc:
        # pydantic's ValidationError is a ValueError: a root of the wrong shape.
        raise QualificationError(
            Code.POLICY_INVALID, f"{what}: not a usable Sigstore trusted root ({_first_line(exc)})"
        ) from exc
    return PinnedTrustedRoot(trusted_root, hashlib.sha256(data).hexdigest(), what, verifier)


def load_pinned_trusted_root(path: Path, expected_sha256: str) -> PinnedTrustedRoot:
    """The trusted root at ``path``, refused unless its bytes hash to ``expected_sha256``."""
    what = f"trusted root {path}"
    try:
        data = read_bounded(path, max_bytes=MAX_TRUSTED_ROOT_BYTES, what=what)
    except QualificationError as exc:
        raise QualificationError(Code.POLICY_INVALID, exc.message) from exc
    actual = hashlib.sha256(data).hexdigest()
    if not hmac.compare_digest(actual, expected_sha256.lower()):
        raise QualificationError(
            Code.POLICY_INVALID,
            f"{what}: SHA-256 {actual} is not the pinned {expected_sha256}",
            hint="the policy pins the trusted root's bytes; update trusted_root_sha256 only with a reviewed root",
        )
    return trusted_root_from_bytes(data, what=what)


def load_trusted_root(path: Path) -> PinnedTrustedRoot:
    """A trusted root the caller named explicitly (conformance ``--trusted-root``); no pin."""
    what = f"trusted root {path}"
    try:
        data = read_bounded(path, max_bytes=MAX_TRUSTED_ROOT_BYTES, what=what)
    except QualificationError as exc:
        raise QualificationError(Code.POLICY_INVALID, exc.message) from exc
    return trusted_root_from_bytes(data, what=what)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]
