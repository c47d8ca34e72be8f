"""Windows code signing: Authenticode with signtool over every PE file of the bundle."""

from __future__ import annotations

from pathlib import Path

from ._signing_base import PlatformSigner, deepest_first, regular_files
from ._signing_identity import PreinstalledIdentity, SigningIdentity, UserStorePfx, write_secret

_WINDOWS_SIGNABLE = frozenset({".exe", ".dll", ".pyd"})


class SigntoolSigner(PlatformSigner):
    """Windows: Authenticode SHA-256 with an RFC 3161 timestamp on every PE file, then a verify of each."""

    tool = "signtool"

    def __init__(self, certificate_sha1: str, timestamp_url: str, *, signtool: str = "signtool",
                 pfx: tuple[str, str] | None = None) -> None:
        self._thumbprint = certificate_sha1
        self._timestamp_url = timestamp_url
        # GitHub's Windows runners keep signtool in the Windows SDK folder, not on PATH.
        self._signtool = signtool
        # (base64 .pfx, its password): imported into the user's store for the signing only.
        self._pfx = pfx

    def make_identity(self, scratch: Path) -> SigningIdentity:
        if self._pfx is None:
            return PreinstalledIdentity()
        pfx = write_secret(scratch, "QUALIFY_SIGNTOOL_PFX_BASE64", self._pfx[0])
        return UserStorePfx(pfx, self._pfx[1], self._thumbprint)

    def _signable(self, bundle: Path, executable: Path) -> list[Path]:
        wanted = [path for path in regular_files(bundle) if path.suffix.lower() in _WINDOWS_SIGNABLE]
        return deepest_first(bundle, wanted, executable)

    def sign_commands(self, bundle: Path, executable: Path) -> list[list[str]]:
        return [[self._signtool, "sign", "/sha1", self._thumbprint, "/fd", "SHA256",
                 "/tr", self._timestamp_url, "/td", "SHA256", str(path)] for path in self._signable(bundle, executable)]

    def verify_commands(self, bundle: Path, executable: Path) -> list[list[str]]:
        return [[self._signtool, "verify", "/pa", "/v", str(path)] for path in self._signable(bundle, executable)]
