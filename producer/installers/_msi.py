"""Kind ``msi`` (Windows): an administrative install (``msiexec /a``) into the prefix, with a verbose log.

An administrative install lays the package's files out under TARGETDIR as
an installation would, without registering the product, writing its
registry keys or running the execute sequence's custom actions (only the
rarely used admin sequence runs). ``/qn``: no user interface. msiexec parses
its own command line, so the properties are written as it expects them
(``TARGETDIR="C:\\path with spaces"``), one string, never argv-quoted. The
log is written outside the prefix (not part of what was installed) and its
tail quoted when msiexec fails.

When the job has signtool (``signtool``), the package's own Authenticode
signature is checked first with ``signtool verify /pa /tw`` (pinned with
``/sha1`` to the policy's certificate when one is given), read as the signer
reads it (``os_signing.signtool_verify_refusal``: a failure, a warning or no
timestamp is refused). The outcome is kept (``MsiInstaller.signature``); with
``require_signed`` (the policy accepts only signed Windows builds) anything
but a pass is refused before msiexec runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path, PureWindowsPath

from desktop_qualify.evidence_schemas import Code, InstallerKind, InstallerSignature, QualificationError

from ..os_signing import signtool_verify_argv, signtool_verify_refusal
from ._tools import ToolRunner, run_tool, run_tool_process

_VERIFY_TIMEOUT = 120.0


def msiexec_path(system_root: str | None) -> str:
    # The absolute System32 path, not a PATH lookup: Windows searches the current folder first.
    return str(PureWindowsPath(system_root or r"C:\Windows") / "System32" / "msiexec.exe")


def _quoted(path: Path | str) -> str:
    text = str(path)
    if '"' in text:
        raise QualificationError(Code.INSTALL_FAILED, f"path {text[:120]!r} holds a double quote")
    return f'"{text}"'


def admin_install_command(msiexec: str, copy: Path, prefix: Path, log: Path) -> str:
    return f"{_quoted(msiexec)} /a {_quoted(copy)} /qn TARGETDIR={_quoted(prefix)} /L*v {_quoted(log)}"


def _log_tail(log: Path) -> str:
    try:
        raw = log.read_bytes()[-8192:]
    except OSError:
        return ""
    # msiexec writes its log in UTF-16 LE with a byte-order mark. The mark is not text: left in, a short log's
    # quote would begin with an invisible U+FEFF (strip() keeps it).
    text = raw.decode("utf-16-le", errors="replace") if raw[:2] == b"\xff\xfe" or b"\x00" in raw else \
        raw.decode("utf-8", errors="replace")
    return text[-800:].strip().removeprefix("\ufeff").strip()


class MsiInstaller:
    kind: InstallerKind = "msi"

    def __init__(self, runner: ToolRunner = run_tool_process, system_root: str | None = None, *,
                 signtool: str | None = None, thumbprint: str | None = None, require_signed: bool = False) -> None:
        self._runner = runner
        self._system_root = system_root
        self._signtool = signtool
        self._thumbprint = thumbprint
        self._require_signed = require_signed
        # None: not checked (no signtool); "" : verified; else why it was refused.
        self.signature: str | None = None
        self._ran = False

    def _check(self, copy: Path, cwd: Path) -> str | None:
        if self._signtool is None:
            return None
        argv = signtool_verify_argv(self._signtool, copy, self._thumbprint)
        try:
            result = self._runner(argv, cwd=cwd, timeout=_VERIFY_TIMEOUT, stdout_cap=16384)
        except OSError as exc:
            return f"signtool cannot be run: {exc.strerror or exc}"
        if result.exit_code is None:
            return "signtool verify did not finish"
        return signtool_verify_refusal(result.exit_code, result.output.encode()) or ""

    def checked(self) -> InstallerSignature | None:
        """The signature check's outcome for the install record; None before ``install`` ran.

        signtool does not tell an unsigned package from one whose signature fails: both are ``failed``.
        """
        if not self._ran:
            return None
        if self.signature is None:
            return InstallerSignature(tool="signtool", state="not-checked", detail="signtool is not configured")
        if self.signature == "":
            return InstallerSignature(tool="signtool", state="signed", detail="signtool verify /pa /tw passed")
        return InstallerSignature(tool="signtool", state="failed", detail=self.signature[:300])

    def install(self, copy: Path, prefix: Path) -> None:
        self._ran = True
        self.signature = self._check(copy, prefix.parent)
        if self._require_signed and self.signature != "":
            raise QualificationError(Code.INSTALL_FAILED, "the package's own signature is refused: "
                                                          f"{self.signature or 'signtool is not configured'}")
        logs = Path(tempfile.mkdtemp(prefix="qualify-msi-"))
        log = logs / "msiexec.log"
        msiexec = msiexec_path(self._system_root or os.environ.get("SYSTEMROOT"))
        try:
            run_tool(self._runner, admin_install_command(msiexec, copy, prefix, log), cwd=prefix.parent,
                     what="msiexec /a")
        except QualificationError as exc:
            tail = _log_tail(log)
            raise QualificationError(exc.code, f"{exc.message}; its log ends: {tail}" if tail else exc.message) \
                from exc
        finally:
            shutil.rmtree(logs, ignore_errors=True)
