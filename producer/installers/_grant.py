"""Windows: the install stage grants the app's AppContainer capability read and execute on the private prefix.

An app whose sandboxed processes run in an AppContainer cannot read its own
install folder until that folder grants them access, and a per-machine install
leaves the user no right to change its ACL at run time. So the app's installer
grants it once, as Chromium's does: read and execute, inherited, to a named
capability SID its sandboxed processes carry (``icacls DIR /grant
*S-1-15-3-1024-...:(OI)(CI)RX``). The producer's private prefix is installed by
the producer, not by the app's installer (``msiexec /a`` runs no custom action,
an archive has none), so the install stage stands in for it: it grants the
capability named after the policy's app (``<name>InstallFiles``; the reference
app's is ``skillhostInstallFiles``) on the prefix, and nothing else. The grant
names the SID itself, never a localised account name, and opens nothing to any
other process: only a token carrying that capability matches it.

The SID is derived from the name as ``DeriveCapabilitySidsFromName`` does
(``S-1-15-3-1024-`` and the SHA-256 of the upper-cased name in UTF-16LE, as eight
little-endian sub-authorities). Behind ``prefix_grant``, so the install stage
asks the platform, never Windows by name, and the tests hold the exact command.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path, PureWindowsPath
from typing import Protocol

from desktop_qualify.evidence_schemas import Platform

from ._tools import ToolRunner, run_tool, run_tool_process

_TIMEOUT = 300.0


class PrefixGrant(Protocol):
    """What the platform grants on an installed prefix before anything of it runs; raises ``QualificationError``."""

    def __call__(self, prefix: Path) -> None: ...


def capability_name(app_name: str) -> str:
    """The capability an app's installer grants on its folder: ``<app name>InstallFiles``."""
    return f"{app_name}InstallFiles"


def capability_sid(name: str) -> str:
    """The capability SID of ``name``, as Windows derives it (module docstring); ASCII names only."""
    if not name or not name.isascii():
        raise ValueError("a capability name is ASCII")
    digest = hashlib.sha256(name.upper().encode("utf-16-le")).digest()
    return "S-1-15-3-1024-" + "-".join(str(n) for n in struct.unpack("<8I", digest))


def icacls_path(system_root: str | None) -> str:
    # The absolute System32 path, not a PATH lookup: Windows searches the current folder first.
    return str(PureWindowsPath(system_root or r"C:\Windows") / "System32" / "icacls.exe")


class CapabilityGrant:
    """``icacls PREFIX /grant *SID:(OI)(CI)RX /q``: read and execute for the capability, on the whole prefix."""

    def __init__(self, capability: str, runner: ToolRunner = run_tool_process, system_root: str | None = None) -> None:
        self.capability, self.sid = capability, capability_sid(capability)
        self._runner, self._system_root = runner, system_root

    def command(self, prefix: Path) -> list[str]:
        icacls = icacls_path(self._system_root or os.environ.get("SYSTEMROOT"))
        return [icacls, str(prefix), "/grant", f"*{self.sid}:(OI)(CI)RX", "/q"]

    def __call__(self, prefix: Path) -> None:
        run_tool(self._runner, self.command(prefix), cwd=prefix.parent, timeout=_TIMEOUT,
                 what=f"icacls (read and execute for the {self.capability} capability)")


def prefix_grant(platform: Platform, app_name: str, runner: ToolRunner = run_tool_process) -> PrefixGrant | None:
    """The platform's grant on an installed prefix: Windows' capability grant; none elsewhere (no such ACL)."""
    return CapabilityGrant(capability_name(app_name), runner) if platform == "windows" else None


__all__ = ["CapabilityGrant", "PrefixGrant", "capability_name", "capability_sid", "prefix_grant"]
