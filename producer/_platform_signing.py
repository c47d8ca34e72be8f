"""Operating-system code signing, one small interface per platform.

Local mode has no signing identity, so the bundle stays unsigned and says so.
On GitHub runners the macOS and Windows signers run the exact command lines
below (unit-tested as command lines, since only Linux runs here).
"""

from __future__ import annotations

import subprocess
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from evidence_schemas import Code, QualificationError

SigningState = Literal["unsigned", "signed", "notarized", "failed"]


@dataclass(frozen=True)
class SigningOutcome:
    tool: str
    state: SigningState


class PlatformSigner(ABC):
    tool: str

    @abstractmethod
    def sign_commands(self, executable: Path) -> list[list[str]]:
        """The argv lists that sign ``executable`` in place."""

    @abstractmethod
    def verify_commands(self, executable: Path) -> list[list[str]]:
        """The argv lists that verify the signature afterwards (read-back)."""

    signed_state: SigningState = "signed"

    def sign(self, executable: Path) -> SigningOutcome:
        for argv in [*self.sign_commands(executable), *self.verify_commands(executable)]:
            try:
                done = subprocess.run(argv, capture_output=True, timeout=600, check=False, shell=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise QualificationError(Code.BUILD_FAILED, f"{argv[0]} could not run: {exc}") from exc
            if done.returncode != 0:
                return SigningOutcome(self.tool, "failed")
        return SigningOutcome(self.tool, self.signed_state)


class NoPlatformSigner(PlatformSigner):
    """No OS signing identity is configured: the honest state is 'unsigned'."""

    tool = "none"

    def sign_commands(self, executable: Path) -> list[list[str]]:
        return []

    def verify_commands(self, executable: Path) -> list[list[str]]:
        return []

    def sign(self, executable: Path) -> SigningOutcome:
        return SigningOutcome(self.tool, "unsigned")


class CodesignSigner(PlatformSigner):
    """macOS: hardened runtime with explicit entitlements, then a strict verify."""

    tool = "codesign"

    def __init__(self, identity: str, entitlements: Path) -> None:
        self._identity = identity
        self._entitlements = entitlements

    def sign_commands(self, executable: Path) -> list[list[str]]:
        return [["codesign", "--force", "--options", "runtime", "--timestamp", "--entitlements",
                 str(self._entitlements), "--sign", self._identity, str(executable)]]

    def verify_commands(self, executable: Path) -> list[list[str]]:
        return [["codesign", "--verify", "--strict", "--verbose=2", str(executable)]]


class SigntoolSigner(PlatformSigner):
    """Windows: Authenticode SHA-256 with an RFC 3161 timestamp, then a verify."""

    tool = "signtool"

    def __init__(self, certificate_sha1: str, timestamp_url: str) -> None:
        self._thumbprint = certificate_sha1
        self._timestamp_url = timestamp_url

    def sign_commands(self, executable: Path) -> list[list[str]]:
        return [["signtool", "sign", "/sha1", self._thumbprint, "/fd", "SHA256", "/tr", self._timestamp_url,
                 "/td", "SHA256", str(executable)]]

    def verify_commands(self, executable: Path) -> list[list[str]]:
        return [["signtool", "verify", "/pa", "/v", str(executable)]]


def platform_signer_from_env(platform: str, env: Mapping[str, str]) -> PlatformSigner:
    """The OS signer configured for this job by its environment (CI secrets), or none.

    Signing identities are secrets of the job, not trust decisions: what is
    accepted is the policy's `[signing]` section, checked on the outcome.
    """
    entitlements = env.get("QUALIFY_CODESIGN_ENTITLEMENTS")
    if platform == "macos":
        return signer_for(platform, identity=env.get("QUALIFY_CODESIGN_IDENTITY"),
                          entitlements=Path(entitlements) if entitlements else None, timestamp_url=None)
    if platform == "windows":
        return signer_for(platform, identity=env.get("QUALIFY_SIGNTOOL_CERT_SHA1"), entitlements=None,
                          timestamp_url=env.get("QUALIFY_SIGNTOOL_TIMESTAMP_URL"))
    return NoPlatformSigner()


def signer_for(platform: str, *, identity: str | None, entitlements: Path | None,
               timestamp_url: str | None) -> PlatformSigner:
    """The signer a platform uses; without a configured identity, no signer."""
    if platform == "macos" and identity and entitlements:
        return CodesignSigner(identity, entitlements)
    if platform == "windows" and identity and timestamp_url:
        return SigntoolSigner(identity, timestamp_url)
    return NoPlatformSigner()
