"""The default trusted roots: the repository's pinned copies, never a TUF refresh.

sigstore-conformance runs a client against the public-good instances with no
``--trusted-root``; this client then uses the committed production (or, with
``--staging``, staging) root and refuses it unless its bytes hash to the pin.
"""

from __future__ import annotations

from pathlib import Path

from evidence_schemas import Code, QualificationError
from qualify_trust import PinnedTrustedRoot, load_pinned_trusted_root

_ROOTS = Path(__file__).resolve().parents[1] / "policies" / "sigstore"
# Copies of sigstore 4.5.1's bundled trusted_root.json files.
_PINS = {
    "production": ("trusted_root.production.json", "6494e21ea73fa7ee769f85f57d5a3e6a08725eae1e38c755fc3517c9e6bc0b66"),
    "staging": ("trusted_root.staging.json", "81f5af777952d2c3955062ad56924c05ca916b5d49f3a0bce945faa475a8b1cc"),
}


def default_trusted_root(*, staging: bool) -> PinnedTrustedRoot:
    name, sha256 = _PINS["staging" if staging else "production"]
    path = _ROOTS / name
    if not path.is_file():
        raise QualificationError(
            Code.ENVIRONMENT,
            f"pinned trusted root {path} is not present (this client runs from a source checkout)",
            hint="pass --trusted-root FILE",
        )
    return load_pinned_trusted_root(path, sha256)
