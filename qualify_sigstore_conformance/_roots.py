"""The default trusted roots: the repository's pinned copies, never a TUF refresh.

sigstore-conformance runs a client against the public-good instances with no
``--trusted-root``; this client then uses the committed production (or, with
``--staging``, staging) root and refuses it unless its bytes hash to the pin.
"""

from __future__ import annotations

import hashlib
import hmac
from importlib.resources import files

from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_trust.sigstore import PinnedTrustedRoot, trusted_root_from_bytes

# Package data: the roots ship inside the wheel, so the client needs no checkout beside it.
_ROOTS = files("desktop_qualify.policies") / "sigstore"
# Copies of sigstore 4.5.1's bundled trusted_root.json files.
_PINS = {
    "production": ("trusted_root.production.json", "6494e21ea73fa7ee769f85f57d5a3e6a08725eae1e38c755fc3517c9e6bc0b66"),
    "staging": ("trusted_root.staging.json", "81f5af777952d2c3955062ad56924c05ca916b5d49f3a0bce945faa475a8b1cc"),
}


def default_trusted_root(*, staging: bool) -> PinnedTrustedRoot:
    name, sha256 = _PINS["staging" if staging else "production"]
    resource = _ROOTS / name
    try:
        data = resource.read_bytes()
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"pinned trusted root {name} is not in the installed package "
                                                   f"({exc.strerror or exc})", hint="pass --trusted-root FILE") from exc
    if not hmac.compare_digest(hashlib.sha256(data).hexdigest(), sha256):
        raise QualificationError(Code.POLICY_INVALID, f"pinned trusted root {name}: its bytes are not the pinned "
                                                      f"SHA-256 {sha256}")
    return trusted_root_from_bytes(data, what=f"trusted root {name}")
