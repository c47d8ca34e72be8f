"""Member names a bundle may use: plain relative paths, none aliasing another on any file system."""

from __future__ import annotations

from desktop_qualify.evidence_schemas import Code, QualificationError

# What evidence_schemas.BundlePath admits, checked here on the raw name before the manifest is trusted.
_ALLOWED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_WINDOWS_RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)),
                               *(f"lpt{i}" for i in range(10))})


def refuse(name: str, why: str) -> QualificationError:
    return QualificationError(Code.BUNDLE_INVALID, f"bundle member {name[:120]!r} {why}")


def check_member_name(name: str) -> None:
    """Refuse a name that is absolute, climbs, names a folder, or a file system would read specially."""
    parts = name.split("/")
    if not name or len(name) > 512 or len(parts) > 8:
        raise refuse(name, "is not a bundle path (empty, too long or too deep)")
    for part in parts:
        if part in ("", ".", ".."):
            raise refuse(name, "is absolute, names a folder, or climbs out with '..'")
        if not set(part) <= _ALLOWED:
            raise refuse(name, "holds a character outside [A-Za-z0-9._-] (a separator, a drive or a control)")
        # Windows strips trailing dots and spaces and maps device names anywhere in a path.
        if part.endswith(".") or part.split(".")[0].lower() in _WINDOWS_RESERVED:
            raise refuse(name, "is a name Windows reads specially")
