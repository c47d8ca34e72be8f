"""Windows: the install folder's grant to the worker's AppContainer, given once at install time, checked at start.

Standard library only. Chromium's installer grants read and execute on its
install folder to named capability SIDs (``chromeInstallFiles``,
``lpacChromeInstallFiles``) and its sandboxed processes carry that capability;
this app does the same with ``INSTALL_CAPABILITY``. The grant is written once by
whoever installs the app, with the rights to do so (an MSI or NSIS custom
action, the producer's install stage for its private prefix, ``icacls`` by hand
for a source checkout): ``grant_command``. A per-machine install under Program
Files gives a standard user (or a UAC-filtered admin) no ``WRITE_DAC`` there, so
the host never writes the folder's ACL; at each start it only reads it
(``missing_grant``) and refuses with ``CC_SKILL_INSTALL_GRANT_MISSING`` before
anything starts when the grant is not there.

A capability SID is derived from its name as Windows' ``DeriveCapabilitySidsFromName``
does: ``S-1-15-3-1024-`` and the SHA-256 of the upper-cased name in UTF-16LE as eight
little-endian sub-authorities (the tests hold Chromium's two published SIDs).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from typing import Protocol

from skillhost.os_sandbox._windows_structs import (
    ACCESS_ALLOWED_ACE_TYPE,
    ACCESS_DENIED_ACE_TYPE,
    DACL_SECURITY_INFORMATION,
    FILE_GENERIC_READ_EXECUTE,
    GENERIC_READ_EXECUTE,
    INHERIT_ONLY_ACE,
    SUB_CONTAINERS_AND_OBJECTS_INHERIT,
)

__all__ = [
    "GRANT_MISSING_CODE", "INSTALL_CAPABILITY", "InstallGrantMissingError", "capability_sid", "grant_command",
    "missing_grant",
]  # fmt: skip

# The capability the worker's AppContainer carries, and the one the install folder grants read and execute.
INSTALL_CAPABILITY = "skillhostInstallFiles"
GRANT_MISSING_CODE = "CC_SKILL_INSTALL_GRANT_MISSING"
_CAPABILITY_PREFIX = "S-1-15-3-1024-"


class InstallGrantMissingError(OSError):
    """A folder the worker reads does not grant the install capability read and execute: nothing started."""

    code = GRANT_MISSING_CODE

    def __init__(self, folder: str, why: str) -> None:
        super().__init__(f"{GRANT_MISSING_CODE}: {folder}: {why}; grant it once: {' '.join(grant_command(folder))}")
        self.folder, self.why = folder, why


def capability_sid(name: str) -> str:
    """The capability SID of ``name`` (module docstring); ASCII names only, so upper-casing is not locale's."""
    if not name.isascii() or not name.isalnum():
        raise ValueError("a capability name is ASCII letters and digits")
    digest = hashlib.sha256(name.upper().encode("utf-16-le")).digest()
    return _CAPABILITY_PREFIX + "-".join(str(n) for n in struct.unpack("<8I", digest))


def grant_command(folder: str, icacls: str = "icacls") -> list[str]:
    """What an installer runs once, with the rights to change ``folder``'s ACL: read and execute, inherited.

    The ``*SID`` form names the SID itself, never a localised account name.
    """
    return [icacls, folder, "/grant", f"*{capability_sid(INSTALL_CAPABILITY)}:(OI)(CI)RX", "/q"]


class _AclReader(Protocol):
    def get_named_security_info(self, path: str, info: int) -> tuple[int, int]: ...
    def acl_entries(self, acl: int) -> Sequence[tuple[int, int, int, int]]: ...
    def equal_sid(self, one: int, other: int) -> bool: ...
    def local_free(self, pointer: int) -> None: ...


def _covers(mask: int) -> bool:
    return mask & FILE_GENERIC_READ_EXECUTE == FILE_GENERIC_READ_EXECUTE or \
        mask & GENERIC_READ_EXECUTE == GENERIC_READ_EXECUTE


def missing_grant(api: _AclReader, capability: int, folder: str) -> str | None:
    """Why ``folder``'s DACL does not give ``capability`` read and execute over the whole tree, or ``None``.

    Read only: ``GetNamedSecurityInfoW``, then each ACE. The grant holds when an allow ACE names the SID with
    read and execute, inherited by files and folders and in force on the folder itself (not inherit-only), and
    no deny ACE names it. A NULL DACL is refused: it is not a grant anyone made on purpose.
    """
    dacl, descriptor = api.get_named_security_info(folder, DACL_SECURITY_INFORMATION)
    try:
        if not dacl:
            return "the folder has no DACL"
        held = False
        for kind, flags, mask, sid in api.acl_entries(dacl):
            if kind not in (ACCESS_ALLOWED_ACE_TYPE, ACCESS_DENIED_ACE_TYPE) or not api.equal_sid(sid, capability):
                continue
            if kind == ACCESS_DENIED_ACE_TYPE:
                return "a deny entry names the install capability"
            inherited = flags & SUB_CONTAINERS_AND_OBJECTS_INHERIT == SUB_CONTAINERS_AND_OBJECTS_INHERIT
            held = held or (_covers(mask) and inherited and not flags & INHERIT_ONLY_ACE)
        return None if held else "no inherited read and execute entry for the install capability"
    finally:
        api.local_free(descriptor)
