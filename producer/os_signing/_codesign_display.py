"""What `codesign -dvv` says about one signed Mach-O, read bounded, and the three things a release needs from it.

`codesign --verify` only says a signature is intact; an ad-hoc signature, one
by another team, one without the hardened runtime (which notarization
requires) or one without a secure timestamp (which stops verifying when the
certificate expires) all verify. So the display is read and each refused:

- ``TeamIdentifier=`` must be set, and be the signing identity's team when
  the identity names one (``Developer ID Application: Name (TEAMID)``);
- the CodeDirectory's ``flags=0x...(...)`` must include ``runtime``;
- ``Timestamp=`` must be there (``Signed Time=`` is the machine's clock, not
  a secure timestamp).
"""

from __future__ import annotations

import re

_MAX_DISPLAY = 64 * 1024
_TEAM_IN_IDENTITY = re.compile(r"\(([A-Z0-9]{1,20})\)\s*$")
_TEAM = re.compile(r"^TeamIdentifier=([A-Z0-9]{1,20})\s*$", re.MULTILINE)  # "not set" does not match
_FLAGS = re.compile(r"^CodeDirectory .*\bflags=0x[0-9a-f]+\(([a-z0-9_,-]*)\)", re.MULTILINE)
_TIMESTAMP = re.compile(r"^Timestamp=\S", re.MULTILINE)


def display_argv(path: str) -> list[str]:
    return ["codesign", "-dvv", path]


def identity_team(identity: str) -> str | None:
    """The team in a certificate name's trailing parentheses; None for a SHA-1 or a name without one."""
    found = _TEAM_IN_IDENTITY.search(identity)
    return found.group(1) if found else None


def display_refusal(output: bytes, *, team: str | None) -> str | None:
    """Why the signature `codesign -dvv` displayed is not a release signature (None: it is)."""
    if len(output) > _MAX_DISPLAY:
        return "codesign -dvv printed more than expected"
    text = output.decode("utf-8", errors="replace")
    found = _TEAM.search(text)
    if found is None:
        return "no TeamIdentifier (ad-hoc or unsigned)"
    if team is not None and found.group(1) != team:
        return f"TeamIdentifier {found.group(1)[:20]} is not the signing identity's {team}"
    flags = _FLAGS.search(text)
    if flags is None or "runtime" not in flags.group(1).split(","):
        return "no hardened runtime (flags lack runtime)"
    if _TIMESTAMP.search(text) is None:
        return "no secure timestamp"
    return None
