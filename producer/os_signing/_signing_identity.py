"""Putting the OS signing identity where the signing tool finds it, for the signing only, then removing it.

macOS: the Developer ID certificate and key (a .p12 from the repository's
secrets) go into a temporary keychain of this job, with a random password,
that only codesign may use; it is deleted afterwards. Windows: the code-signing
certificate (a .pfx from the secrets) goes into the current user's `My` store
and is removed by its thumbprint afterwards. Removal runs whatever happened in
between (`PlatformSigner.sign` holds it in a ``finally``). The secrets are
written to a private scratch folder that is removed with the identity; they
reach no log, error or record, and the PyInstaller build has exited before any
of this runs.
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
import shutil
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, QualificationError


class SigningIdentity(ABC):
    """How the identity gets to the tool: commands before signing, commands after (whatever happens)."""

    @abstractmethod
    def setup_commands(self) -> list[list[str]]: ...

    @abstractmethod
    def teardown_commands(self) -> list[list[str]]: ...

    def codesign_options(self) -> list[str]:
        """Extra codesign options that point it at this identity's keychain."""
        return []


class PreinstalledIdentity(SigningIdentity):
    """The identity is already in the runner's keychain or store (or there is none): nothing to do."""

    def setup_commands(self) -> list[list[str]]:
        return []

    def teardown_commands(self) -> list[list[str]]:
        return []


class TemporaryKeychain(SigningIdentity):
    """macOS: a keychain of this job's own, holding the .p12's identity, usable by codesign only."""

    def __init__(self, p12: Path, p12_password: str, keychain: Path, keychain_password: str) -> None:
        self.p12, self._p12_password = p12, p12_password
        self.keychain, self._password = keychain, keychain_password

    def setup_commands(self) -> list[list[str]]:
        kc, pw = str(self.keychain), self._password
        return [
            ["security", "create-keychain", "-p", pw, kc],
            # Locks again after six hours and on sleep: a job never needs it longer.
            ["security", "set-keychain-settings", "-lut", "21600", kc],
            ["security", "unlock-keychain", "-p", pw, kc],
            ["security", "import", str(self.p12), "-k", kc, "-f", "pkcs12", "-P", self._p12_password,
             "-T", "/usr/bin/codesign"],
            # Lets codesign use the key without a UI prompt (there is no UI on a runner).
            ["security", "set-key-partition-list", "-S", "apple-tool:,apple:,codesign:", "-s", "-k", pw, kc],
        ]

    def teardown_commands(self) -> list[list[str]]:
        return [["security", "delete-keychain", str(self.keychain)]]

    def codesign_options(self) -> list[str]:
        # codesign looks only here, never at the login keychain's identities.
        return ["--keychain", str(self.keychain)]


class UserStorePfx(SigningIdentity):
    """Windows: the .pfx imported into the current user's personal store, removed by thumbprint after."""

    def __init__(self, pfx: Path, pfx_password: str, thumbprint: str) -> None:
        self.pfx, self._password, self.thumbprint = pfx, pfx_password, thumbprint

    def setup_commands(self) -> list[list[str]]:
        # NoExport: the private key cannot be exported again from the store.
        return [["certutil", "-f", "-user", "-p", self._password, "-importPFX", "My", str(self.pfx), "NoExport"]]

    def teardown_commands(self) -> list[list[str]]:
        return [["certutil", "-user", "-delstore", "My", self.thumbprint]]


def write_secret(folder: Path, name: str, encoded: str) -> Path:
    """A base64 secret decoded into ``folder`` (created private), readable by this user only."""
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        # Never echo the secret: say which variable is wrong, not what it holds.
        raise QualificationError(Code.ENVIRONMENT, f"the {name} secret is not valid base64") from exc
    path = folder / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return path


def scratch_folder() -> Path:
    """A private folder for the job's secrets, under the runner's temporary folder when it has one."""
    base = os.environ.get("RUNNER_TEMP") or None
    return Path(tempfile.mkdtemp(prefix="qualify-signing-", dir=base))


def remove_scratch(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def keychain_password() -> str:
    return secrets.token_urlsafe(24)
