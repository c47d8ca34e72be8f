"""Operating-system code signing, one small interface per platform.

Local mode has no signing identity, so the bundle stays unsigned and says so.
On GitHub runners the macOS and Windows signers run the exact command lines
below (unit-tested as command lines, since only Linux runs here) over every
binary in the bundle folder, not only the main executable. They run in the
producer after PyInstaller has exited, so the build never sees the identity.

``PlatformSigner.sign`` is the one interface: put the identity in place
(``_signing_identity``), sign, verify, run the after-sign hook (macOS
notarization, ``_notarize``), and remove the identity whatever happened.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ._codesign import CodesignSigner, is_macho, is_macho_executable
from ._notarize import NoNotarizer, Notarizer, NotaryCredentials, NotarytoolNotarizer
from ._signing_base import NoPlatformSigner, PlatformSigner, SigningOutcome, SigningState
from ._signtool import SigntoolSigner

__all__ = ["CodesignSigner", "NoPlatformSigner", "PlatformSigner", "SigningOutcome", "SigningState",
           "SigntoolSigner", "is_macho", "is_macho_executable", "platform_signer_from_env", "signer_for"]


def _pair(env: Mapping[str, str], data: str, password: str) -> tuple[str, str] | None:
    return (env[data], env.get(password, "")) if env.get(data) else None


def _notarizer_from_env(env: Mapping[str, str]) -> Notarizer:
    key, key_id, issuer = (env.get(f"QUALIFY_NOTARY_{n}") for n in ("KEY_FILE", "KEY_ID", "ISSUER"))
    if key and key_id and issuer:
        return NotarytoolNotarizer(NotaryCredentials(Path(key), key_id, issuer))
    return NoNotarizer()


def platform_signer_from_env(platform: str, env: Mapping[str, str]) -> PlatformSigner:
    """The OS signer configured for this job by its environment (CI secrets and variables), or none.

    Signing identities are secrets of the job, not trust decisions: what is
    accepted is the policy's `[signing]` section, checked on the outcome.
    macOS: QUALIFY_CODESIGN_IDENTITY and QUALIFY_CODESIGN_ENTITLEMENTS (and
    QUALIFY_CODESIGN_INHERIT_ENTITLEMENTS), the identity from
    QUALIFY_CODESIGN_P12_BASE64 / _PASSWORD when given, notarization with
    QUALIFY_NOTARY_KEY_FILE / _KEY_ID / _ISSUER. Windows:
    QUALIFY_SIGNTOOL_CERT_SHA1 and QUALIFY_SIGNTOOL_TIMESTAMP_URL (a variable),
    the certificate from QUALIFY_SIGNTOOL_PFX_BASE64 / _PASSWORD when given.
    """
    entitlements = env.get("QUALIFY_CODESIGN_ENTITLEMENTS")
    if platform == "macos":
        identity, inherit = env.get("QUALIFY_CODESIGN_IDENTITY"), env.get("QUALIFY_CODESIGN_INHERIT_ENTITLEMENTS")
        if identity and entitlements:
            return CodesignSigner(identity, Path(entitlements), inherit_entitlements=Path(inherit) if inherit else None,
                                  keychain=_pair(env, "QUALIFY_CODESIGN_P12_BASE64", "QUALIFY_CODESIGN_P12_PASSWORD"),
                                  notarizer=_notarizer_from_env(env))
    if platform == "windows":
        identity, timestamp_url = env.get("QUALIFY_SIGNTOOL_CERT_SHA1"), env.get("QUALIFY_SIGNTOOL_TIMESTAMP_URL")
        if identity and timestamp_url:
            return SigntoolSigner(identity, timestamp_url, signtool=env.get("QUALIFY_SIGNTOOL_PATH") or "signtool",
                                  pfx=_pair(env, "QUALIFY_SIGNTOOL_PFX_BASE64", "QUALIFY_SIGNTOOL_PFX_PASSWORD"))
    return NoPlatformSigner()


def signer_for(platform: str, *, identity: str | None, entitlements: Path | None,
               timestamp_url: str | None) -> PlatformSigner:
    """The signer a platform uses; without a configured identity, no signer."""
    if platform == "macos" and identity and entitlements:
        return CodesignSigner(identity, entitlements)
    if platform == "windows" and identity and timestamp_url:
        return SigntoolSigner(identity, timestamp_url)
    return NoPlatformSigner()
