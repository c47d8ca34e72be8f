"""Kind ``pkg`` (macOS): its own signature checked, then expanded by ``pkgutil --expand-full``, never installed.

Expanding reads the payload without Installer.app's signature check, so the
package's own (productsign) signature is checked first, with
``pkgutil --check-signature``: it exits 0 and says ``Status: signed ...`` for
a signature that verifies to a trusted root, and exits 1 for ``Status: no
signature`` and for a broken or untrusted one. The outcome is kept
(``PkgInstaller.signature``, for the install record); when the policy accepts
only signed builds for macOS (``require_signed``) anything but ``signed`` is
refused before a byte is expanded.

``--expand-full`` writes the package's parts and unpacks each component's
payload into ``<component>.pkg/Payload/`` (a component package: ``Payload/``)
without running its scripts or touching /Applications; the policy's
executable is a path in that tree. pkgutil creates the destination itself
and refuses one that exists, so it is handed the prefix's own path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from desktop_qualify.evidence_schemas import Code, InstallerKind, InstallerSignature, QualificationError

from ._tools import ToolRunner, run_tool, run_tool_process

PKGUTIL = "/usr/sbin/pkgutil"
_STATUS = re.compile(r"^\s*Status:\s*(.{1,160}?)\s*$", re.MULTILINE)
_CHECK_TIMEOUT = 120.0


@dataclass(frozen=True)
class PackageSignature:
    state: Literal["signed", "unsigned", "invalid"]
    detail: str  # pkgutil's Status line, bounded


def check_signature_argv(copy: Path) -> list[str]:
    return [PKGUTIL, "--check-signature", str(copy)]


def expand_argv(copy: Path, prefix: Path) -> list[str]:
    return [PKGUTIL, "--expand-full", str(copy), str(prefix)]


def read_signature(exit_code: int | None, stdout: str) -> PackageSignature:
    found = _STATUS.search(stdout[:16384])
    status = found.group(1) if found else "no status"
    if exit_code == 0 and status.startswith("signed"):
        return PackageSignature("signed", status)
    if status == "no signature":
        return PackageSignature("unsigned", status)
    return PackageSignature("invalid", f"{status} (exit {exit_code})")


class PkgInstaller:
    kind: InstallerKind = "pkg"

    def __init__(self, runner: ToolRunner = run_tool_process, *, require_signed: bool = False) -> None:
        self._runner = runner
        self._require_signed = require_signed
        self.signature: PackageSignature | None = None

    def _check(self, copy: Path, cwd: Path) -> PackageSignature:
        # Not run_tool: exit 1 is an answer here ("no signature"), not a failure to report as such.
        try:
            result = self._runner(check_signature_argv(copy), cwd=cwd, timeout=_CHECK_TIMEOUT, stdout_cap=16384)
        except OSError as exc:
            return PackageSignature("invalid", f"pkgutil cannot be run: {exc.strerror or exc}"[:200])
        if result.exit_code is None:
            return PackageSignature("invalid", "pkgutil --check-signature did not finish")
        return read_signature(result.exit_code, result.stdout)

    def checked(self) -> InstallerSignature | None:
        """The signature check's outcome for the install record; None before ``install`` ran it."""
        if self.signature is None:
            return None
        states = {"signed": "signed", "unsigned": "unsigned", "invalid": "failed"}
        return InstallerSignature.model_validate({"tool": "pkgutil", "state": states[self.signature.state],
                                                  "detail": self.signature.detail[:300]})

    def install(self, copy: Path, prefix: Path) -> None:
        self.signature = self._check(copy, prefix.parent)
        if self._require_signed and self.signature.state != "signed":
            raise QualificationError(Code.INSTALL_FAILED, f"the package's own signature is refused: "
                                                          f"{self.signature.detail}")
        prefix.rmdir()  # empty and fresh: pkgutil makes it again
        run_tool(self._runner, expand_argv(copy, prefix), cwd=prefix.parent, what="pkgutil --expand-full")
        if not prefix.is_dir():
            prefix.mkdir()  # a package pkgutil expanded to nothing: the caller finds no executable
