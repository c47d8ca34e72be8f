"""Windows code signing: Authenticode with signtool over every PE file of the bundle, then a pinned verify.

``signtool verify /pa`` alone accepts any certificate the machine trusts and a
signature without a timestamp (which stops verifying when the certificate
expires). So the verify also pins the signer (``/sha1``: the thumbprint of the
certificate this job signs with) and asks for a warning on no timestamp
(``/tw``); signtool still exits 0 or 2 on a warning, so its exit code and
words are read here and a warning is refused, never passed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from ._signing_base import PlatformSigner, deepest_first, regular_files
from ._signing_identity import PreinstalledIdentity, SigningIdentity, UserStorePfx, write_secret

_WINDOWS_SIGNABLE = frozenset({".exe", ".dll", ".pyd"})
# signtool's exit codes: 0 success, 1 failure, 2 success with warnings (here: /tw's "not timestamped").
_WARNED = 2
_NO_TIMESTAMP = re.compile(r"not time ?stamped", re.IGNORECASE)


def verify_argv(signtool: str, path: Path, thumbprint: str | None) -> list[str]:
    """`verify /pa /tw`, pinned to one certificate when its thumbprint is known, `/v` to print what it checked."""
    pin = ["/sha1", thumbprint] if thumbprint is not None else []
    return [signtool, "verify", "/pa", "/tw", *pin, "/v", str(path)]


def verify_refusal(code: int, output: bytes) -> str | None:
    """Why signtool's verify does not pass (None: it passes): a failure, a warning, or no timestamp."""
    text = output[-16384:].decode("utf-8", errors="replace")
    if code == 1:
        return "signtool verify failed (not signed, untrusted, or not by the pinned certificate)"
    if code == _WARNED or _NO_TIMESTAMP.search(text):
        return "the signature has no timestamp (signtool /tw warned)"
    if code != 0:
        return f"signtool verify exited {code}"
    return None


class SigntoolSigner(PlatformSigner):
    """Windows: Authenticode SHA-256 with an RFC 3161 timestamp on every PE file, then a pinned verify of each."""

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
        return [verify_argv(self._signtool, path, self._thumbprint) for path in self._signable(bundle, executable)]

    def verified(self, bundle: Path, executable: Path, run: Callable[[list[str]], tuple[int, bytes]]) -> bool:
        # Exit 2 (a warning) would pass an exit-code check; read each answer instead.
        return all(verify_refusal(*run(argv)) is None for argv in self.verify_commands(bundle, executable))
